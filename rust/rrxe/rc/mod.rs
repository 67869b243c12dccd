// SPDX-License-Identifier: GPL-2.0

//! The reliable connected transport: requester, completer and responder,
//! and the delivery of their packets.
//!
//! **Requester** (`requester`). Send WQEs stay in the ring until they
//! complete, so that a process cannot post more than the ring holds. The
//! requester copies each WQE into a kernel shadow slot when it first takes
//! it (retransmissions use that copy, never the ring again), validates it,
//! gives it its PSNs and sends its packets: SENDs and WRITEs segmented at
//! the path MTU, one request for READs, atomics, ATOMIC WRITE and FLUSH.
//! Memory-window binds and local invalidations run in place, in order, once
//! every earlier WQE has completed. At most [`rc::MAX_UNACKED`] PSNs are
//! outstanding, reads and atomics are bounded by `max_rd_atomic`, and a
//! fenced WQE waits for earlier reads and atomics (the window's arithmetic
//! is `logic::flights`). One runner at a time: the QP's send lock.
//!
//! **Completer** (`completer`, `timer`). ACKs (also implied by later
//! responses), read responses and atomic ACKs retire WQEs in order. A
//! sequence NAK, a response past one that a read or atomic still waits for
//! (responses come in PSN order, so that one was lost), or the retransmit
//! timer (4.096 µs · 2^timeout) rewinds the requester to the first
//! unfinished WQE, within `retry_cnt` (7 is seven retries, as the IB spec
//! has it; rxe's are then without limit); a read asks again only for the
//! data it lacks. An RNR NAK waits the time its code gives, within
//! `rnr_retry` (7: without limit). Other NAKs complete the WQE with the
//! error rxe reports, and the QP enters ERR, flushing the rest.
//!
//! **Responder** (`responder`, `execute`). Checks the PSN (duplicates are
//! re-ACKed, or replayed from the ring of responder resources for reads and
//! atomics, a read from the packet asked for, ahead of read responses
//! queued for later PSNs; one sequence NAK per gap), the opcode sequence,
//! the QP's rights and, on every packet, the rkey (MR or window), PD and
//! bounds. SENDs take a receive WQE or are refused with an RNR NAK. Class
//! A and C errors NAK and put the QP in ERR.
//!
//! **Replies** (`replies`). The responder's ACKs, NAKs and responses wait
//! in a bounded queue per QP and leave in order, a few packets from the
//! receive path and the rest in batches from the QP's own task, so that a
//! long READ (or a flood of duplicates of one) cannot hold the receive
//! work that every device shares.
//!
//! **Locks** (`state`). The requester and completer share the QP's `req`
//! lock; the responder and its replies have `resp`, so that a doorbell's
//! requester and the QP's responder, answering the peer's request in the
//! peer's context, do not wait for each other.
//!
//! Packets to a GID of this device go straight to the peer QP's responder or
//! completer; the others go on the wire as RoCEv2. No RC lock is held while
//! a packet is delivered or sent, so two QPs may talk to each other.

mod completer;
mod execute;
mod replies;
mod requester;
mod responder;
mod state;
mod timer;

pub use completer::completer;
pub use replies::run as run_replies;
pub use requester::run;
pub use responder::responder;
pub use state::{reset, RcLocks, ReqState, RespState};
pub(crate) use timer::kick_later;

use crate::ib::device::Device;
use crate::logic::{
    cqe::status,
    hdr::{self, Aeth, AtmEth, Headers, Reth},
    mtu::mtu_bytes,
    qp::{QpAttrs, QpState},
    rc,
};
use crate::rrxe::stats::Counter;
use crate::rrxe::{
    debug::{self, Site},
    device::{Rrxe, RrxeDev},
    net::{self, Egress, Gid, RxPkt},
    qp::{self, QpInner, QpShared},
    tx::{self, Packet},
};
use crate::rrxe_dbg;
use kernel::prelude::*;
use state::Deadline;

/// The segment size between QPs of one device: packets that never reach a
/// wire carry up to 64 KiB each (a lever DESIGN.md names: fewer, larger
/// steps for the same message; PSNs count these segments).
pub const LOCAL_SEG: usize = 64 * 1024;

/// One packet, from the wire or from a local peer.
pub struct RcPkt<'a> {
    /// Opcode: RC's (an XRC request's is given as RC's same request).
    pub opcode: u8,
    /// An XRC request's XRC SRQ number (its XRCETH).
    pub xrc_srqn: Option<u32>,
    /// An XRC response (its opcode given as RC's).
    pub xrc_response: bool,
    /// Solicited event.
    pub se: bool,
    /// AckReq.
    pub ack_req: bool,
    /// PSN.
    pub psn: u32,
    /// RETH.
    pub reth: Option<Reth>,
    /// AtomicETH.
    pub atm: Option<AtmEth>,
    /// AETH.
    pub aeth: Option<Aeth>,
    /// AtomicAckETH: the original value.
    pub atmack: Option<u64>,
    /// Immediate data (as stored, network order).
    pub imm: Option<u32>,
    /// IETH: the rkey to invalidate.
    pub ieth: Option<u32>,
    /// FETH.
    pub feth: Option<u32>,
    /// Payload.
    pub payload: &'a [u8],
    /// Source GID.
    pub sgid: [u8; 16],
    /// Destination GID.
    pub dgid: [u8; 16],
    /// Delivered in place from a QP of this device (segments of up to
    /// [`LOCAL_SEG`] bytes instead of the path MTU).
    pub local: bool,
}

impl RcPkt<'_> {
    /// The payload bytes every packet but a message's last carries.
    fn seg(&self, attrs: &QpAttrs) -> usize {
        if self.local {
            LOCAL_SEG
        } else {
            mtu_bytes(attrs.path_mtu)
        }
    }

    /// A packet for a QP of this device, with the headers `hdrs` and the
    /// addresses in `attrs`.
    fn local<'a>(hdrs: &Headers, payload: &'a [u8], attrs: &QpAttrs) -> RcPkt<'a> {
        let (opcode, xrc) = rc_opcode(hdrs.bth.opcode);
        RcPkt {
            opcode,
            xrc_srqn: hdrs.xrceth,
            xrc_response: xrc && rc::is_response(opcode),
            se: hdrs.bth.se,
            ack_req: hdrs.bth.ack_req,
            psn: hdrs.bth.psn,
            reth: hdrs.reth,
            atm: hdrs.atm,
            aeth: hdrs.aeth,
            atmack: hdrs.atmack,
            imm: hdrs.imm,
            ieth: hdrs.ieth,
            feth: hdrs.feth,
            payload,
            sgid: attrs.av.sgid,
            dgid: attrs.av.dgid,
            local: true,
        }
    }
}

/// Sends a packet to the QP's peer: delivered in place when the peer's GID
/// is this device's, otherwise on the wire. `Err` if its payload could not
/// be gathered (nothing was sent), or `EMSGSIZE` if it is too big for the
/// route (see [`tx::send`]).
fn emit(
    dev: &Device<Rrxe>,
    qp: &QpShared,
    attrs: &QpAttrs,
    tx: &Packet,
    slot: &[u8],
    buf: &mut KVVec<u8>,
) -> Result {
    let d = dev.data();
    let fill = |b: &mut [u8]| tx.fill(d, qp.pd, qp.qpn, slot, b);
    if !dev.has_gid(1, &attrs.av.dgid) {
        let egress = Egress {
            dev,
            out: &net::connected_out(attrs, qp.qpn),
            route: qp.route.as_ref(),
            gate: qp.gate.as_ref(),
        };
        return tx::send(&egress, &tx.hdrs, tx.len, fill);
    }
    if buf.len() < tx.len {
        qp.charge
            .run(tx.len, |gfp| Ok(buf.resize(tx.len, 0u8, gfp)?))?;
    }
    let b = tx::local(d, &mut buf[..tx.len], fill)?;
    // A packet for a QP that is gone is lost, as on the wire.
    if let Some(peer) = d.qp(attrs.dest_qp_num) {
        tx::received(d, b.len());
        let p = RcPkt::local(&tx.hdrs, b, attrs);
        if rc::is_response(p.opcode) {
            completer(dev, &peer, &p);
        } else {
            responder(dev, &peer, &p);
        }
    }
    Ok(())
}

/// Puts the QP in ERR and flushes both queues (the transport's state is
/// the caller's).
fn enter_err(qp: &QpShared, inner: &mut QpInner) {
    if inner.attrs.state != QpState::Err {
        inner.attrs.state = QpState::Err;
    }
    qp::flush(qp, inner);
}

/// Puts the QP in ERR from the requester or completer. The responder's
/// part waits for [`settle`], once `req` is dropped (`resp` is taken
/// first).
fn to_err(qp: &QpShared, rc: &mut ReqState, inner: &mut QpInner) {
    enter_err(qp, inner);
    rc.on_error();
    qp.rc.set_resp_err();
}

/// The responder's part of a move to ERR that the requester or completer
/// made, and the rest of its flush, run by them once they have dropped
/// `req`.
fn settle(qp: &QpShared) {
    qp::flush_rest(qp);
    if !qp.rc.take_resp_err() {
        return;
    }
    let mut resp = qp.rc.resp.lock();
    // Not for a QP reset and brought up again meanwhile.
    if qp.inner.lock().attrs.state == QpState::Err {
        resp.on_error(qp);
    }
}

/// Retires finished WQEs from the head of the send queue, in order. In ERR
/// the flush has completed the ring's WQEs already: nothing to do.
fn complete_ready(dev: &RrxeDev, qp: &QpShared, rc: &mut ReqState, inner: &mut QpInner) {
    if inner.attrs.state == QpState::Err {
        return;
    }
    while let Some(f) = rc.win.retire(inner.sq.consumer()) {
        let _ = inner.sq.consume();
        dev.count_send_done(&f.wc);
        if f.signaled || qp.sig_all || f.wc.status != status::SUCCESS {
            qp.send_wc(&f.wc);
        }
        if f.wc.status != status::SUCCESS {
            rrxe_dbg!(
                dev,
                Site::Err,
                "qp {:#x}: wr_id {:#x} failed with status {}, to ERR",
                qp.qpn,
                f.wc.wr_id,
                f.wc.status
            );
            to_err(qp, rc, inner);
            return;
        }
    }
    if rc.win.oldest_outstanding(inner.sq.consumer()).is_none() {
        rc.deadline = Deadline::Off;
    }
}

/// Counts packet `pkt` for QP `qp`, dropped for the reason `counter`
/// (`why`), and prints the debug line of `site`.
fn dropped(dev: &RrxeDev, qp: &QpShared, pkt: &RcPkt<'_>, counter: Counter, site: Site, why: &str) {
    debug::dropped(
        dev,
        counter,
        site,
        format_args!(
            "{why}: opcode {:#x} psn {:#x} to qp {:#x} from {}",
            pkt.opcode,
            pkt.psn,
            qp.qpn,
            Gid(&pkt.sgid)
        ),
    );
}

/// The RC opcode of an RC or XRC packet's `opcode`, and whether it is
/// XRC's: an XRC request is RC's with an XRCETH, and its opcode RC's with
/// the XRC service bits; an XRC response is RC's.
fn rc_opcode(opcode: u8) -> (u8, bool) {
    if hdr::service(opcode) == Some(hdr::Service::Xrc) {
        (opcode & 0x1f, true)
    } else {
        (opcode, false)
    }
}

/// An RC or XRC packet from the wire (checked by `net::rx`).
pub fn rx(dev: &Device<Rrxe>, rx: &RxPkt<'_>) {
    let d = dev.data();
    let Some(qp) = d.qp(rx.bth.dqpn) else {
        net::no_qp(d, rx);
        return;
    };
    let be32 = |o: Option<usize>, n: usize| {
        o.and_then(|o| rx.udp.get(o..o + n))
            .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    };
    let atmack = rx
        .layout
        .atmack
        .and_then(|o| rx.udp.get(o..o + 8))
        .map(|b| {
            let mut x = [0u8; 8];
            x.copy_from_slice(b);
            u64::from_be_bytes(x)
        });
    let (opcode, xrc) = rc_opcode(rx.bth.opcode);
    let pkt = RcPkt {
        opcode,
        xrc_response: xrc && rc::is_response(opcode),
        xrc_srqn: rx
            .layout
            .xrceth
            .and_then(|o| rx.udp.get(o..))
            .and_then(hdr::xrc_srqn),
        se: rx.bth.se,
        ack_req: rx.bth.ack_req,
        psn: rx.bth.psn,
        reth: rx.layout.reth.and_then(|o| Reth::parse(&rx.udp[o..])),
        atm: rx.layout.atmeth.and_then(|o| AtmEth::parse(&rx.udp[o..])),
        aeth: rx.layout.aeth.and_then(|o| Aeth::parse(&rx.udp[o..])),
        atmack,
        imm: rx.imm(),
        ieth: be32(rx.layout.ieth, hdr::IETH),
        feth: be32(rx.layout.feth, hdr::FETH),
        payload: rx.payload,
        sgid: rx.ip.sgid,
        dgid: rx.ip.dgid,
        local: false,
    };
    if rc::is_response(pkt.opcode) {
        completer(dev, &qp, &pkt);
    } else {
        responder(dev, &qp, &pkt);
    }
}
