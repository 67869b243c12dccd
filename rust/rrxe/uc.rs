// SPDX-License-Identifier: GPL-2.0

//! The unreliable connected transport: SEND and RDMA WRITE, with or
//! without immediate data, segmented at the path MTU.
//!
//! The requester sends each WQE's packets (to the wire, or straight to the
//! destination QP when its GID is this device's) and completes the WQE once
//! they are out: UC has no acknowledgements. The responder follows the
//! packet sequence (`logic::uc`): a lost packet or an opcode out of order
//! abandons the message in progress, and nothing is taken until the next
//! FIRST or ONLY packet. A SEND consumes a receive WQE (kept across an
//! abandoned message, as the IB spec's class D1 errors have it); a WRITE
//! goes to the memory its RETH names, with the rkey, the PD, the rights
//! and the bounds checked, and the key resolved again on every packet.

use crate::ib::{device::Device, qp::QpType, umem::Fault};
use crate::logic::{
    access,
    cqe::{flags, status, Wc},
    hdr::{Bth, Headers, Reth},
    mtu::mtu_bytes,
    qp::QpAttrs,
    uc::{self, Kind, Pos, RxSeq, Verdict},
    wqe::{self, Opcode, Payload, SendWqe, Transport, WrDetail},
};
use crate::rrxe::stats::Counter;
use crate::rrxe::{
    debug::{self, Site},
    device::{Rrxe, RrxeDev},
    mr::{self, Copy},
    net::{self, Egress, Gid, RxPkt},
    qp::{overflow_to_err, QpShared},
    sge::{scatter_at, Gather},
    sq::take_send,
    tx,
};
use kernel::prelude::*;

/// The UC responder's state between packets.
#[derive(Default)]
pub struct UcRx {
    /// PSN and message sequencing.
    pub seq: RxSeq,
    /// The receive WQE of the SEND in progress (or kept from an abandoned
    /// one for the next), copied out of its ring.
    pub held: Option<(KVec<u8>, u32)>,
    /// The buffer of the last receive WQE completed, for the next.
    pub spare: KVec<u8>,
    /// Bytes of the message in progress taken so far.
    pub offset: u64,
    /// The RDMA WRITE in progress: address, rkey, length.
    pub write: Option<(u64, u32, u64)>,
}

/// One UC packet, from the wire or from a local requester.
pub struct UcPkt<'a> {
    /// Its PSN.
    pub psn: u32,
    /// Its opcode.
    pub opcode: u8,
    /// Solicited event.
    pub se: bool,
    /// The RETH of a WRITE's first packet.
    pub reth: Option<Reth>,
    /// Immediate data (as stored, network order).
    pub imm: Option<u32>,
    /// Payload.
    pub payload: &'a [u8],
    /// Source GID (the sender's address).
    pub sgid: [u8; 16],
    /// Destination GID.
    pub dgid: [u8; 16],
}

/// What a UC WQE sends.
struct Msg {
    kind: Kind,
    /// The immediate data its last packet carries.
    imm: Option<u32>,
    /// A WRITE's target: address and rkey.
    target: Option<(u64, u32)>,
    len: u64,
    solicited: bool,
}

impl Msg {
    /// What `wqe` sends, or the status it completes with.
    fn of(wqe: &SendWqe) -> core::result::Result<Self, u32> {
        let (kind, imm, target) = match (wqe.opcode, wqe.detail) {
            (Opcode::Send, _) => (Kind::Send, false, None),
            (Opcode::SendImm, _) => (Kind::Send, true, None),
            (Opcode::RdmaWrite, WrDetail::Rdma { remote_addr, rkey }) => {
                (Kind::Write, false, Some((remote_addr, rkey)))
            }
            (Opcode::RdmaWriteImm, WrDetail::Rdma { remote_addr, rkey }) => {
                (Kind::Write, true, Some((remote_addr, rkey)))
            }
            _ => return Err(status::LOC_QP_OP_ERR),
        };
        let len = wqe.payload.bytes();
        if len > wqe::MAX_MSG {
            return Err(status::LOC_LEN_ERR);
        }
        Ok(Self {
            kind,
            imm: imm.then_some(wqe.ex),
            target,
            len,
            solicited: wqe.send_flags & wqe::SEND_SOLICITED != 0,
        })
    }

    /// The headers of packet `pos` with PSN `psn`, to QP `dqpn`.
    fn headers(&self, pos: Pos, psn: u32, dqpn: u32) -> Headers {
        let bth = Bth {
            opcode: uc::opcode(self.kind, pos, self.imm.is_some()),
            se: pos.ends() && self.solicited,
            pkey: 0xffff,
            dqpn,
            psn,
            ..Default::default()
        };
        Headers {
            reth: self.target.filter(|_| pos.starts()).map(|(va, rkey)| Reth {
                va,
                rkey,
                len: self.len as u32,
            }),
            imm: self.imm.filter(|_| pos.ends()),
            ..Headers::new(bth)
        }
    }
}

/// Sends one UC WQE; returns its completion and whether it asked for one.
/// Called with the QP's send lock held, on a QP in RTS.
pub fn send_one(dev: &Device<Rrxe>, qp: &QpShared, slot: &[u8], attrs: &QpAttrs) -> (Wc, bool) {
    let (w, mut wc) = match take_send(qp, slot, Transport::Uc) {
        Ok(x) => x,
        Err(wc) => return (wc, true),
    };
    let signaled = w.send_flags & wqe::SEND_SIGNALED != 0;
    let st = match Msg::of(&w) {
        Ok(m) => send_packets(dev, qp, slot, attrs, w.payload, &m),
        Err(st) => st,
    };
    if st != status::SUCCESS {
        wc.status = st;
        return (wc, true);
    }
    wc.byte_len = w.payload.bytes() as u32;
    (wc, signaled)
}

/// Sends `msg`'s packets, its payload gathered from `payload` in
/// `slot`, and records the next PSN; returns the WQE's status.
fn send_packets(
    dev: &Device<Rrxe>,
    qp: &QpShared,
    slot: &[u8],
    attrs: &QpAttrs,
    payload: Payload,
    msg: &Msg,
) -> u32 {
    let d = dev.data();
    let mtu = mtu_bytes(attrs.path_mtu);
    let n = uc::packets(msg.len, mtu as u32);
    let local = dev.has_gid(1, &attrs.av.dgid);
    let out = net::connected_out(attrs, qp.qpn);
    let egress = Egress {
        dev,
        out: &out,
        route: qp.route.as_ref(),
        gate: None,
    };
    let mut buf = KVec::new();
    if local
        && buf
            .resize(mtu.min(msg.len as usize), 0u8, GFP_KERNEL)
            .is_err()
    {
        return status::LOC_QP_OP_ERR;
    }
    let dst = if local { d.qp(attrs.dest_qp_num) } else { None };
    let mut cur = Gather::new(slot, payload);
    let mut psn = attrs.sq_psn & 0x00ff_ffff;
    let mut sent = 0u64;
    let mut st = status::SUCCESS;
    for i in 0..n {
        // A message may be a million packets: let others run between them.
        crate::ib::cond_resched();
        // This QP destroyed mid-message (its process killed, its device
        // deleted): the rest is not sent, and the destruction, which waits
        // for this run, goes on at once.
        if qp.is_dead() {
            st = status::WR_FLUSH_ERR;
            break;
        }
        // A local peer destroyed mid-message (its process killed, say)
        // takes nothing more: the rest of the message is lost, as it would
        // be on the wire, and the QP is let go at once.
        if dst.as_ref().is_some_and(|q| q.is_dead()) {
            psn = uc::psn_add(psn, (n - i) as u32);
            break;
        }
        let pos = Pos::of(i as u32, n as u32);
        let plen = (msg.len - sent).min(mtu as u64) as usize;
        let h = msg.headers(pos, psn, attrs.dest_qp_num);
        // Never waits for a page fault: the send queue saw the memory
        // resident (see `sq::resident`).
        let fill = |b: &mut [u8]| cur.read(d, qp.pd, b, Fault::NoWait);
        let r = if local {
            tx::local(d, &mut buf[..plen], fill).map(|b| {
                if let Some(dq) = dst.as_ref() {
                    tx::received(d, b.len());
                    let p = UcPkt {
                        psn,
                        opcode: h.bth.opcode,
                        se: h.bth.se,
                        reth: h.reth,
                        imm: h.imm,
                        payload: b,
                        sgid: out.sgid,
                        dgid: out.dgid,
                    };
                    receive(d, dq, &p);
                }
            })
        } else {
            tx::send(&egress, &h, plen, fill)
        };
        if let Err(e) = r {
            st = tx::fail_status(e);
            break;
        }
        sent += plen as u64;
        psn = uc::psn_add(psn, 1);
    }
    qp.inner.lock().attrs.sq_psn = psn;
    st
}

/// A UC packet from the wire (checked by `net::rx`).
pub fn rx(dev: &Device<Rrxe>, rx: &RxPkt<'_>) {
    let d = dev.data();
    let Some(qp) = d.qp(rx.bth.dqpn) else {
        net::no_qp(d, rx);
        return;
    };
    let pkt = UcPkt {
        psn: rx.bth.psn,
        opcode: rx.bth.opcode,
        se: rx.bth.se,
        reth: rx.layout.reth.and_then(|o| Reth::parse(&rx.udp[o..])),
        imm: rx.imm(),
        payload: rx.payload,
        sgid: rx.ip.sgid,
        dgid: rx.ip.dgid,
    };
    receive(d, &qp, &pkt);
}

fn abandon(rx: &mut UcRx) {
    rx.seq.msg = None;
    rx.offset = 0;
    rx.write = None;
}

/// The UC responder: takes one packet for `qp`.
pub fn receive(dev: &RrxeDev, qp: &QpShared, pkt: &UcPkt<'_>) {
    let refuse = |c, site, why: &str| {
        debug::dropped(
            dev,
            c,
            site,
            format_args!(
                "{why}: opcode {:#x} psn {:#x} to qp {:#x} from {}",
                pkt.opcode,
                pkt.psn,
                qp.qpn,
                Gid(&pkt.sgid)
            ),
        )
    };
    if qp.ty != QpType::Uc {
        refuse(Counter::RcvdUnknownQp, Site::DropQp, "not a UC QP");
        return;
    }
    let Some((kind, pos, _)) = uc::classify(pkt.opcode) else {
        refuse(Counter::RcvdHdrErr, Site::DropHdr, "not a UC request");
        return;
    };
    let mut rx = qp.uc_rx.lock();
    // A destroyed QP that a local sender still holds takes nothing.
    if qp.is_dead() {
        refuse(Counter::RcvdUnknownQp, Site::DropQp, "QP destroyed");
        return;
    }
    // Connected: only the peer the QP was connected to may send to it.
    // Read under `uc_rx`, which a move to RESET holds while it changes the
    // state and clears this state.
    let Some(a) = qp.responder_attrs(&pkt.sgid, &pkt.dgid) else {
        refuse(
            Counter::RcvdUnknownQp,
            Site::DropQp,
            "QP not receiving, or not from its peer",
        );
        return;
    };
    let mtu = mtu_bytes(a.path_mtu);
    // Every packet but a message's last carries exactly one MTU.
    let bad_len = if pos.ends() {
        pkt.payload.len() > mtu
    } else {
        pkt.payload.len() != mtu
    };
    match rx.seq.judge(pkt.psn, kind, pos) {
        Verdict::Drop => {
            abandon(&mut rx);
            refuse(Counter::RcvdPsnErr, Site::DropPsn, "out of sequence");
            return;
        }
        Verdict::Start => {
            rx.offset = 0;
            rx.write = None;
        }
        Verdict::Continue => {}
    }
    if bad_len {
        refuse(
            Counter::RcvdHdrErr,
            Site::DropHdr,
            "payload not the path MTU",
        );
    }
    let ok = !bad_len
        && match kind {
            Kind::Send => recv_send(dev, qp, &mut rx, pkt, pos),
            Kind::Write => recv_write(dev, qp, &mut rx, pkt, pos, &a),
        };
    if !ok {
        abandon(&mut rx);
    }
}

/// Counts packet `pkt`, dropped because the on-demand memory it goes to is
/// not resident and the receive path does not wait for a page fault (one
/// that never completes would hold up every QP the path serves).
fn not_resident(dev: &RrxeDev, qp: &QpShared, pkt: &UcPkt<'_>) {
    debug::dropped(
        dev,
        Counter::OdpFaultDeferred,
        Site::OdpFault,
        format_args!(
            "memory not resident: psn {:#x} to qp {:#x} from {} dropped",
            pkt.psn,
            qp.qpn,
            Gid(&pkt.sgid)
        ),
    );
}

/// Completes the held receive WQE (taking it) with `st`.
fn complete_held(dev: &RrxeDev, qp: &QpShared, rx: &mut UcRx, mut wc: Wc, solicited: bool) {
    if let Some((slot, _)) = rx.held.take() {
        wc.wr_id = wqe::wr_id(&slot).unwrap_or(0);
        wc.qp_num = qp.qpn;
        wc.qp_cookie = qp.handle;
        wc.port_num = 1;
        dev.count_recv_done(&wc);
        let full = qp.recv_msg_wc(&wc, solicited);
        rx.spare = slot;
        if full {
            overflow_to_err(dev, qp, rx);
        }
    }
}

/// Makes sure a receive WQE is held; false when the queue is empty.
fn hold_recv(qp: &QpShared, rx: &mut UcRx) -> bool {
    if rx.held.is_some() {
        return true;
    }
    let mut slot = core::mem::take(&mut rx.spare);
    match qp.pop_recv(&mut slot) {
        Some(max) => {
            rx.held = Some((slot, max));
            true
        }
        None => {
            rx.spare = slot;
            false
        }
    }
}

fn recv_send(dev: &RrxeDev, qp: &QpShared, rx: &mut UcRx, pkt: &UcPkt<'_>, pos: Pos) -> bool {
    // No receive WQE: the message is dropped (UC has no RNR).
    if pos.starts() && !hold_recv(qp, rx) {
        debug::dropped(
            dev,
            Counter::OutOfBuffer,
            Site::DropNoBuffer,
            format_args!("no receive WQE: qp {:#x} from {}", qp.qpn, Gid(&pkt.sgid)),
        );
        return false;
    }
    let Some((slot, max)) = rx.held.as_ref() else {
        return false;
    };
    let r = match wqe::parse_recv(slot, *max) {
        Ok(r) => r,
        Err(_) => {
            complete_held(
                dev,
                qp,
                rx,
                Wc {
                    status: status::LOC_QP_OP_ERR,
                    opcode: wqe::WC_RECV,
                    ..Default::default()
                },
                false,
            );
            return false;
        }
    };
    let len = pkt.payload.len() as u64;
    if rx.offset + len > r.length {
        // Too long for the WQE: with an SRQ the WQE completes in error
        // (class E); without, it stays for the next message (class D1).
        if qp.srq.is_some() {
            complete_held(
                dev,
                qp,
                rx,
                Wc {
                    status: status::REM_INV_REQ_ERR,
                    opcode: wqe::WC_RECV,
                    ..Default::default()
                },
                false,
            );
        }
        return false;
    }
    // Never waits for an on-demand page: the message is dropped, as a
    // lost packet would drop it, and the WQE kept for the next.
    let placed = scatter_at(
        dev,
        qp.pd,
        slot,
        r.num_sge,
        rx.offset,
        pkt.payload,
        Fault::NoWait,
    );
    if placed == Err(EAGAIN) {
        not_resident(dev, qp, pkt);
        return false;
    }
    if placed.is_err() {
        complete_held(
            dev,
            qp,
            rx,
            Wc {
                status: status::LOC_PROT_ERR,
                opcode: wqe::WC_RECV,
                ..Default::default()
            },
            false,
        );
        return false;
    }
    rx.offset += len;
    if pos.ends() {
        let mut wc = Wc {
            opcode: wqe::WC_RECV,
            byte_len: rx.offset as u32,
            ..Default::default()
        };
        if let Some(imm) = pkt.imm {
            wc.wc_flags = flags::WITH_IMM;
            wc.ex = imm;
        }
        complete_held(dev, qp, rx, wc, pkt.se);
        rx.offset = 0;
    }
    true
}

fn recv_write(
    dev: &RrxeDev,
    qp: &QpShared,
    rx: &mut UcRx,
    pkt: &UcPkt<'_>,
    pos: Pos,
    attrs: &QpAttrs,
) -> bool {
    if pos.starts() {
        let Some(reth) = pkt.reth else { return false };
        if attrs.qp_access_flags & access::REMOTE_WRITE == 0 {
            return false;
        }
        // A zero-length write needs no valid key.
        if reth.len > 0
            && mr::lookup_key(
                dev,
                reth.rkey,
                qp.pd,
                qp.qpn,
                access::REMOTE_WRITE,
                reth.va,
                u64::from(reth.len),
            )
            .is_err()
        {
            return false;
        }
        rx.write = Some((reth.va, reth.rkey, u64::from(reth.len)));
    }
    let Some((va, rkey, len)) = rx.write else {
        return false;
    };
    let n = pkt.payload.len() as u64;
    if rx.offset + n > len {
        return false;
    }
    if n > 0 {
        let Some(at) = va.checked_add(rx.offset) else {
            return false;
        };
        match mr::copy_by_key(
            dev,
            rkey,
            qp.pd,
            qp.qpn,
            access::REMOTE_WRITE,
            at,
            Copy::Into(pkt.payload),
            Fault::NoWait,
        ) {
            Ok(()) => {}
            Err(e) => {
                if e == EAGAIN {
                    not_resident(dev, qp, pkt);
                }
                return false;
            }
        }
    }
    rx.offset += n;
    if pos.ends() {
        rx.write = None;
        rx.offset = 0;
        if let Some(imm) = pkt.imm {
            // The immediate data takes a receive WQE; without one it is lost.
            if hold_recv(qp, rx) {
                let wc = Wc {
                    opcode: wqe::WC_RECV_RDMA_WITH_IMM,
                    byte_len: len as u32,
                    wc_flags: flags::WITH_IMM,
                    ex: imm,
                    ..Default::default()
                };
                complete_held(dev, qp, rx, wc, pkt.se);
            }
        }
    }
    true
}
