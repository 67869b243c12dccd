// SPDX-License-Identifier: GPL-2.0

//! The RC responder's replies on their way out: a bounded queue per QP,
//! sent in order a few packets at a time, so that no request (a READ of up
//! to 2 GiB, or a duplicate of one) holds the module's receive work. The
//! receive path sends up to [`RX_BUDGET`] packets itself; the rest goes out
//! from the QP's own task, [`TASK_BUDGET`] packets per run, which queues
//! itself again while replies remain.
//!
//! The queue keeps the replies' order (an ACK behind a read response must
//! not overtake it); a newer ACK or NAK replaces a positive ACK waiting at
//! its tail, as it acknowledges everything that one did. When it is full a reply is
//! dropped, as one lost on the wire: the requester asks again.

use super::responder::{ReadResp, Reply};
use super::{emit, RespState};
use crate::ib::{device::Device, qp::QpType};
use crate::logic::{
    hdr::{Aeth, Bth, Headers, XRC_SERVICE},
    qp::QpAttrs,
    rc::{self, op, Nak, Syndrome},
    uc::{psn_add, Pos},
};
use crate::rrxe::stats::Counter;
use crate::rrxe::{
    device::Rrxe,
    gso,
    net::{self, Egress},
    pd::PdId,
    qp::QpShared,
    tx::{self, Packet, Src},
};
use kernel::{prelude::*, sync::Arc};

/// Packets the receive path sends for one request before leaving the rest
/// to the QP's task.
pub(super) const RX_BUDGET: u32 = 16;

/// Packets the QP's task sends per run.
pub(super) const TASK_BUDGET: u32 = 64;

/// Queues `reply` behind the replies waiting. `false` if the queue is full.
pub(super) fn queue(rc: &mut RespState, reply: Reply) -> bool {
    rc.replies.push(reply, |last, new| {
        // A positive ACK says no more than the ACK or NAK after it.
        let merge = matches!(
            (&*last, new),
            (
                Reply::Ack {
                    syn: Syndrome::Ack,
                    ..
                },
                Reply::Ack { .. }
            )
        );
        if merge {
            *last = *new;
        }
        merge
    })
}

/// Places `resp`, the answer to a duplicate READ (checked against the
/// responder's resources): `true` if that is done, `false` if it is to be
/// queued behind everything as usual.
///
/// A requester goes back to the duplicate's PSN (it saw a gap in the
/// responses, or its timer fired) and asks again for every request after
/// it, ignoring any response for those until this read is done. So:
/// - a read response still queued with a packet at that PSN answers it:
///   as it is if it has not sent that packet yet; else, when the duplicate
///   asks for exactly the rest of it, it goes on as `resp` from the packet
///   asked for (else the requester would ignore the rest of the first
///   answer, past its gap, and wait for its timer);
/// - otherwise `resp` goes ahead of the read responses queued for later
///   PSNs, which reach the requester after it, when it takes them again.
///
/// Nothing queued is dropped or shortened: a duplicate that is not what a
/// requester sends (spoofed, or a stray copy) costs its own answer only.
pub(super) fn retake(rc: &mut RespState, resp: ReadResp) -> bool {
    if let Some(Reply::Read(q)) = rc
        .replies
        .find_mut(|x| matches!(x, Reply::Read(q) if q.covers(resp.psn)))
    {
        if q.resumes_as(&resp) {
            *q = resp;
        }
        return true;
    }
    // Full: dropped, as a reply lost on the wire.
    rc.replies
        .insert_before(
            Reply::Read(resp),
            |x| matches!(x, Reply::Read(q) if rc::psn_diff(q.psn, resp.psn) > 0),
        )
        .is_some()
}

/// A reply packet of `opcode` for `psn`, to the QP's peer, with an AETH of
/// `syn` and `msn` (unless `aeth` is None).
fn reply_pkt(attrs: &QpAttrs, opcode: u8, psn: u32, aeth: Option<(Syndrome, u32)>) -> Packet {
    let bth = Bth {
        opcode,
        pkey: 0xffff,
        dqpn: attrs.dest_qp_num,
        psn,
        ..Default::default()
    };
    let mut tx = Packet::new(Headers::new(bth));
    tx.hdrs.aeth = aeth.map(|(syn, msn)| Aeth {
        syndrome: syn.byte(),
        msn,
    });
    tx
}

/// The next packet of read response `resp`, which it counts as sent. `None`
/// if its address wraps.
fn read_pkt(attrs: &QpAttrs, resp: &mut ReadResp) -> Option<(Packet, bool)> {
    let n = resp.packets();
    let j = resp.sent;
    let off = u64::from(j) * resp.seg as u64;
    let plen = (u64::from(resp.len) - off).min(resp.seg as u64);
    let pos = Pos::of(j, n);
    let aeth = (pos != Pos::Middle).then_some((Syndrome::Ack, resp.msn));
    let mut tx = reply_pkt(attrs, rc::read_resp_opcode(pos), psn_add(resp.psn, j), aeth);
    tx.len = plen as usize;
    tx.src = Src::Key {
        rkey: resp.rkey,
        pd: PdId::from_raw(resp.domain),
        va: resp.va.checked_add(off)?,
    };
    resp.sent += 1;
    Some((tx, resp.sent == n))
}

/// The read a response packet belongs to: its first PSN, the packet's PSN
/// and the MSN it carries.
#[derive(Clone, Copy)]
struct ReadAt {
    first: u32,
    psn: u32,
    msn: u32,
}

/// The packet to send next, taken off the queue (a read response's packets
/// one by one), with the read it belongs to.
fn next(rc: &mut RespState, attrs: &QpAttrs) -> Option<(Packet, Option<ReadAt>)> {
    loop {
        let front = rc.replies.front_mut()?;
        let (tx, read, done) = match front {
            Reply::None => (None, None, true),
            Reply::Ack { psn, syn, msn } => {
                let tx = reply_pkt(attrs, op::ACK, *psn, Some((*syn, *msn)));
                (Some(tx), None, true)
            }
            Reply::Atomic { psn, orig, msn } => {
                let mut tx = reply_pkt(attrs, op::ATOMIC_ACK, *psn, Some((Syndrome::Ack, *msn)));
                tx.hdrs.atmack = Some(*orig);
                (Some(tx), None, true)
            }
            Reply::Empty { psn, msn } => {
                let aeth = Some((Syndrome::Ack, *msn));
                (
                    Some(reply_pkt(attrs, op::READ_RESP_ONLY, *psn, aeth)),
                    None,
                    true,
                )
            }
            Reply::Read(r) => {
                let at = ReadAt {
                    first: r.psn,
                    psn: psn_add(r.psn, r.sent),
                    msn: r.msn,
                };
                match read_pkt(attrs, r) {
                    Some((tx, done)) => (Some(tx), Some(at), done),
                    // Its address wraps (its checks refuse that already).
                    None => (None, None, true),
                }
            }
        };
        if done {
            rc.replies.pop();
        }
        if let Some(tx) = tx {
            return Some((tx, read));
        }
    }
}

/// Drops the read response for the read at `first` (its memory failed or
/// is not ready, or its packets are too big for the route), if it is still
/// queued first.
fn abandon(rc: &mut RespState, first: u32) {
    if let Some(Reply::Read(r)) = rc.replies.front_mut() {
        if r.psn == first {
            rc.replies.pop();
        }
    }
}

/// Takes the next packets of the read response queued first into a burst
/// (`gso`), if at least two of them are middle packets (all one size, no
/// AETH) and `max` allows: the response as it was, and how many.
fn burst_next(rc: &mut RespState, attrs: &QpAttrs, max: usize) -> Option<(ReadResp, u32)> {
    let Some(Reply::Read(r)) = rc.replies.front_mut() else {
        return None;
    };
    let start = *r;
    let (mid, _) = read_pkt(attrs, &mut ReadResp { sent: 1, ..start })?;
    let fit = gso::MAX_BYTES / mid.hdrs.udp_len(mid.len).max(1);
    let n = (r.middles_next() as usize).min(max).min(fit);
    // Its last packet's address must not wrap (its checks refuse that).
    let last = ReadResp {
        sent: start.sent + n.saturating_sub(1) as u32,
        ..start
    };
    if n < 2 || read_pkt(attrs, &mut { last }).is_none() {
        return None;
    }
    r.sent += n as u32;
    Some((start, n as u32))
}

/// Packet `nth` of the burst of read response `resp` (as it was when the burst
/// began).
fn burst_pkt(attrs: &QpAttrs, resp: &ReadResp, nth: usize) -> Packet {
    let mut c = ReadResp {
        sent: resp.sent + nth as u32,
        ..*resp
    };
    // `burst_next` checked that no address of the burst wraps.
    read_pkt(attrs, &mut c).map_or(Packet::new(Headers::default()), |(tx, _)| tx)
}

/// What [`pump`] sends next.
enum Out {
    /// A packet, and the read it belongs to.
    One(Packet, Option<ReadAt>),
    /// A burst of a read response: the response as it was when the burst
    /// began, and its packets.
    Burst(ReadResp, u32),
}

/// Sends up to `budget` packets of the QP's queued replies, in order (one
/// sender at a time: the reply buffer's lock). `true` if some remain.
pub(super) fn pump(dev: &Device<Rrxe>, qp: &Arc<QpShared>, budget: u32) -> bool {
    let mut buf = qp.reply_buf.lock();
    let a = qp.inner.lock().attrs;
    let out = net::connected_out(&a, qp.qpn);
    // Bursts go over IPv4 on the wire (a QP of this device takes its
    // packets in place).
    let bursts = out.v4() && !dev.has_gid(1, &a.av.dgid);
    // An XRC target QP answers with XRC's opcodes (RC's with the XRC
    // service bits; no XRCETH).
    let service = if qp.ty == QpType::XrcTgt {
        XRC_SERVICE
    } else {
        0
    };
    let mut left = budget;
    while left > 0 {
        crate::ib::cond_resched();
        let step = {
            let mut rc = qp.rc.resp.lock();
            // A responder destroyed mid-read (its process killed, say)
            // sends no more of its read responses. What it owes for the
            // requests it completed (an ACK, a NAK, an atomic's or an
            // empty response: one packet each) still goes out: its
            // consumer may destroy the QP the moment a receive completes,
            // before this context sends that SEND's ACK, and the peer's
            // requester would retry it until its retries ran out, and fail
            // a SEND that arrived. rxe's destroy waits for its responder,
            // which sends it.
            if qp.is_dead() {
                while matches!(rc.replies.front_mut(), Some(Reply::Read(_))) {
                    rc.replies.pop();
                }
            }
            let max = (left as usize).min(gso::MAX_PKTS);
            match bursts.then(|| burst_next(&mut rc, &a, max)).flatten() {
                Some((r, n)) => Out::Burst(r, n),
                None => match next(&mut rc, &a) {
                    Some((mut tx, read)) => {
                        tx.hdrs.bth.opcode |= service;
                        Out::One(tx, read)
                    }
                    None => return false,
                },
            }
        };
        let (res, read) = match step {
            Out::One(tx, read) => {
                left -= 1;
                (emit(dev, qp, &a, &tx, &[], &mut buf), read)
            }
            Out::Burst(r, n) => {
                left = left.saturating_sub(n);
                let d = dev.data();
                let egress = Egress {
                    dev,
                    out: &out,
                    route: qp.route.as_ref(),
                    gate: qp.gate.as_ref(),
                };
                let res = tx::send_burst(
                    &egress,
                    n as usize,
                    |k| {
                        let p = burst_pkt(&a, &r, k);
                        (p.hdrs, p.len)
                    },
                    |k, o| burst_pkt(&a, &r, k).fill(d, qp.pd, qp.qpn, &[], o),
                );
                let at = ReadAt {
                    first: r.psn,
                    psn: psn_add(r.psn, r.sent),
                    msn: r.msn,
                };
                (res, Some(at))
            }
        };
        match (res, read) {
            (Ok(()), _) | (Err(_), None) => {}
            // Too big for the route (the responder's path MTU above its
            // netdev's): lost, as a packet dropped on the way; the
            // requester's retransmit timer asks again.
            (Err(e), Some(r)) if e == EMSGSIZE => abandon(&mut qp.rc.resp.lock(), r.first),
            // On-demand memory whose page is not ready: its fault was
            // started, and the requester's retransmit timer asks again,
            // by when it is done (a stalled fault holds up no more than
            // this read).
            (Err(e), Some(r)) if e == EAGAIN => {
                dev.data().count(Counter::OdpFaultDeferred, 1);
                abandon(&mut qp.rc.resp.lock(), r.first);
            }
            (Err(e), Some(r)) => {
                // The memory went away (a window invalidated, say), or the
                // responder's owner has no memory left for the packet (its
                // cgroup is full): the requester learns it from a NAK.
                abandon(&mut qp.rc.resp.lock(), r.first);
                let nak = if e == ENOMEM {
                    Nak::RemOp
                } else {
                    Nak::RemAccess
                };
                let syn = Syndrome::Nak(nak);
                let mut nak = reply_pkt(&a, op::ACK, r.psn, Some((syn, r.msn)));
                nak.hdrs.bth.opcode |= service;
                let _ = emit(dev, qp, &a, &nak, &[], &mut buf);
            }
        }
    }
    !qp.rc.resp.lock().replies.is_empty()
}

/// The QP's task: sends a batch of queued replies, and queues the task
/// again if more remain.
pub fn run(dev: &Device<Rrxe>, qp: &Arc<QpShared>) {
    if pump(dev, qp, TASK_BUDGET) {
        qp.kick();
    }
}
