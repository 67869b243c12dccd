// SPDX-License-Identifier: GPL-2.0

//! The RC requester: takes send WQEs into its window, builds their packets
//! and sends them, and runs binds, registrations and invalidations in
//! place.

use super::{
    complete_ready, emit, settle,
    timer::{arm, restart, tick},
    ReqState, LOCAL_SEG,
};
use crate::ib::{device::Device, qp::QpType};
use crate::logic::{
    cqe::status,
    flights::{FState, Flight},
    hdr::{AtmEth, Bth, Headers, Reth, XRC_SERVICE},
    mtu::mtu_bytes,
    pkt,
    qp::{QpAttrs, QpState},
    rc::{self, op},
    uc::{psn_add, Pos},
    wqe::{self, Opcode, SendWqe, Transport, WrDetail},
};
use crate::rrxe::stats::Counter;
use crate::rrxe::{
    debug::Site,
    device::{Rrxe, RrxeDev},
    gso, mr, mw,
    net::{self, Egress},
    qp::{QpInner, QpShared},
    sq::{size_slot, take_send, RunBudget},
    tx::{self, Packet, Src},
};
use crate::rrxe_dbg;
use kernel::{prelude::*, sync::Arc};

/// What the requester does next.
enum Step {
    /// Nothing to do now.
    Idle,
    /// Something changed without sending; look again.
    Again,
    /// Send this packet of the WQE in shadow slot `slot`; with `true`, it
    /// is the last packet of the last WQE posted so far.
    Send(Packet, usize, bool),
    /// Send a burst of the WQE in shadow slot `slot` (see `gso`).
    Burst(Burst, usize),
    /// Run the local operation (bind, invalidate, registration) of the
    /// oldest WQE, in shadow slot `slot`.
    Local(usize),
    /// This run has taken as many new WQEs as the ring holds: the rest
    /// wait for the QP's task.
    Yield,
}

/// Packets `0..packets` of a burst: those of `flight` from `off` bytes on.
#[derive(Clone, Copy)]
struct Burst {
    flight: Flight,
    off: u64,
    packets: usize,
}

impl Burst {
    /// Packet `nth`.
    fn packet(&self, attrs: &QpAttrs, nth: usize) -> Packet {
        let off = self.off + nth as u64 * u64::from(self.flight.seg.max(1));
        segment(&self.flight, off, base_bth(attrs)).0
    }
}

/// Runs the requester (the doorbell, and the QP's task): timers first,
/// then packets until the send queue is empty or the requester must wait.
pub fn run(dev: &Device<Rrxe>, qp: &Arc<QpShared>, time: &mut RunBudget) -> Result {
    let r = drive(dev, qp, time);
    settle(qp);
    r
}

/// [`run`], up to the responder's part of a move to ERR.
fn drive(dev: &Device<Rrxe>, qp: &Arc<QpShared>, time: &mut RunBudget) -> Result {
    let mut bufs = qp.send_lock.lock();
    if qp.is_dead() {
        return Ok(());
    }
    tick(dev, qp);
    let mut buf = qp.req_buf.lock();
    // At most one ring's worth of new WQEs per run, so that a process that
    // keeps moving its producer index cannot keep the kernel here; every
    // WQE posted before a doorbell is within that many.
    let (elem, mut budget) = {
        let rc = qp.rc.req.lock();
        (rc.elem, rc.win.mask + 1)
    };
    let slot = &mut bufs.wqe;
    size_slot(qp, slot, elem)?;
    let mut receive = false;
    loop {
        crate::ib::cond_resched();
        // Out of time (or the doorbell's process is being killed): the
        // send task goes on from here.
        if time.spent() {
            qp.kick();
            break;
        }
        let (step, a) = {
            let mut rc = qp.rc.req.lock();
            let mut g = qp.inner.lock();
            let step = prepare(dev, qp, &mut rc, &mut g, slot, &mut budget);
            (step, g.attrs)
        };
        match step {
            Step::Idle => break,
            Step::Yield => {
                qp.kick();
                break;
            }
            Step::Again => continue,
            Step::Local(i) => run_local(dev.data(), qp, i),
            Step::Send(tx, i, fin) => {
                if let Err(e) = emit(dev, qp, &a, &tx, slot, &mut buf) {
                    if e == EAGAIN {
                        not_resident(dev.data(), qp, i, Some(tx.hdrs.bth.psn));
                        break;
                    }
                    fail(dev.data(), qp, i, e);
                }
                // Nothing more to send for now: see below.
                if fin {
                    receive = true;
                    break;
                }
            }
            Step::Burst(b, i) => {
                if let Err(e) = burst(dev, qp, &a, &b, slot, &mut buf) {
                    if e == EAGAIN {
                        let psn = b.packet(&a, 0).hdrs.bth.psn;
                        not_resident(dev.data(), qp, i, Some(psn));
                        break;
                    }
                    fail(dev.data(), qp, i, e);
                }
            }
        }
    }
    // The last packet posted is out: a doorbell receiving in place lets
    // its receiver (a WRITE's target memory, in a ping-pong the next thing
    // anyone waits for) run now, before the timer and the completions. Not
    // under this QP's locks: what comes back may be a NAK for this QP,
    // which the receive path applies under them. The timer starts after,
    // from what is left unacknowledged.
    drop(buf);
    drop(bufs);
    if receive {
        crate::net::tunnel::receive_now();
    }
    arm(qp, &mut qp.rc.req.lock());
    Ok(())
}

/// The payload of the WQE in slot `index`, from the packet with PSN `psn` on,
/// is in on-demand memory that is not resident: it goes again after a
/// wait (see `ReqState::wait_for_memory`), and nothing waits for the
/// page fault meanwhile.
fn not_resident(dev: &RrxeDev, qp: &QpShared, index: usize, psn: Option<u32>) {
    dev.count(Counter::OdpFaultDeferred, 1);
    rrxe_dbg!(
        dev,
        Site::OdpFault,
        "qp {:#x}: payload memory not resident, sending later",
        qp.qpn
    );
    let mut rc = qp.rc.req.lock();
    let cons = qp.inner.lock().sq.consumer();
    let k = rc.win.index_of(cons, index);
    rc.wait_for_memory(cons, k, psn);
}

/// The WQE in slot `index` could not be sent: its memory keys failed, or its
/// packets are too big for the route. It completes in error.
fn fail(dev: &RrxeDev, qp: &QpShared, index: usize, err: Error) {
    let mut rc = qp.rc.req.lock();
    let mut g = qp.inner.lock();
    rc.win.finish(index, tx::fail_status(err));
    complete_ready(dev, qp, &mut rc, &mut g);
}

/// Sends `burst` as one UDP GSO packet, or packet by packet when its
/// peer has become local or its path IPv6 (the requester made it for an
/// IPv4 wire path).
fn burst(
    dev: &Device<Rrxe>,
    qp: &QpShared,
    attrs: &QpAttrs,
    burst: &Burst,
    slot: &[u8],
    buf: &mut KVVec<u8>,
) -> Result {
    let out = net::connected_out(attrs, qp.qpn);
    if dev.has_gid(1, &attrs.av.dgid) || !out.v4() {
        for k in 0..burst.packets {
            emit(dev, qp, attrs, &burst.packet(attrs, k), slot, buf)?;
        }
        return Ok(());
    }
    let d = dev.data();
    let egress = Egress {
        dev,
        out: &out,
        route: qp.route.as_ref(),
        gate: qp.gate.as_ref(),
    };
    tx::send_burst(
        &egress,
        burst.packets,
        |k| {
            let p = burst.packet(attrs, k);
            (p.hdrs, p.len)
        },
        |k, o| burst.packet(attrs, k).fill(d, qp.pd, qp.qpn, slot, o),
    )
}

/// Runs the local operation of the oldest WQE, in slot `index`, and completes
/// it.
fn run_local(dev: &RrxeDev, qp: &QpShared, index: usize) {
    let mut rc = qp.rc.req.lock();
    let Some(f) = rc.win.flights[index] else {
        return;
    };
    if f.state == FState::Done {
        return;
    }
    rc.win.finish(index, local_op(dev, qp, &f.w));
    rc.win.next += 1;
    complete_ready(dev, qp, &mut rc, &mut qp.inner.lock());
}

/// Picks the next packet (or local operation) under the QP's locks.
fn prepare(
    dev: &Device<Rrxe>,
    qp: &QpShared,
    rc: &mut ReqState,
    inner: &mut QpInner,
    slot: &mut [u8],
    budget: &mut u32,
) -> Step {
    let a = inner.attrs;
    if a.state != QpState::Rts || rc.rnr_until.is_some() {
        return Step::Idle;
    }
    let cons = inner.sq.consumer();
    let k = rc.win.next;
    let i = rc.win.slot_of(cons, k);
    if k == rc.win.taken {
        if rc.win.full() || !inner.sq.peek(k, slot) {
            return Step::Idle;
        }
        if *budget == 0 {
            return Step::Yield;
        }
        *budget -= 1;
        take_new(dev, qp, rc, &a, i, slot);
    } else {
        slot.copy_from_slice(rc.shadow(i));
    }
    let Some(mut f) = rc.win.flights[i] else {
        return Step::Idle;
    };
    if f.state == FState::Done {
        // Finished early (invalid, or failed locally): completes in order.
        rc.win.pass_finished(&f);
        complete_ready(dev.data(), qp, rc, inner);
        return Step::Again;
    }
    if f.local() {
        // In place, once everything before it has completed; run by the
        // caller without the ring's lock (it looks up and may release MRs).
        if k != 0 {
            rc.win.stalled = true;
            return Step::Idle;
        }
        return Step::Local(i);
    }
    if rc.win.must_wait(&f, a.max_rd_atomic) || rc.win.window_full(cons) {
        rc.win.stalled = true;
        return Step::Idle;
    }
    // Too many of the QP's packets still in the stack: the gate wakes the
    // send task once most of them are gone.
    let (high, low) = rc.gate.marks(f.seg);
    if qp
        .gate
        .as_ref()
        .is_some_and(|gate| gate.must_wait(high, low))
    {
        return Step::Idle;
    }
    let off = rc.win.off;
    let Some((tx, last)) = build(&f, off, &a, slot) else {
        f.finish(status::LOC_QP_OP_ERR);
        rc.win.flights[i] = Some(f);
        return Step::Again;
    };
    rc.win.sent(i, f, tx.hdrs.bth.psn, tx.len as u64, last);
    let fin = last && rc.win.next >= inner.sq.pending();
    // As rxe does, every packet sent restarts the retransmit timer: it
    // measures silence after the last packet, so a slow responder still
    // working through a burst is not taken for a lost one.
    restart(rc, &a);
    if last || !f.segmented() || f.seg as usize == LOCAL_SEG {
        return Step::Send(tx, i, fin);
    }
    // Bursts are IPv4 only.
    if !net::connected_out(&a, qp.qpn).v4() {
        return Step::Send(tx, i, false);
    }
    // A burst counts in the gate as its packets: it keeps within the
    // gate's bound.
    let room = qp
        .gate
        .as_ref()
        .map_or(high, |gate| high.saturating_sub(gate.out()));
    let max = (room as usize).min(gso::MAX_PKTS);
    let n = extend(rc, &a, cons, i, slot, &tx, max);
    if n == 1 {
        return Step::Send(tx, i, false);
    }
    Step::Burst(
        Burst {
            flight: f,
            off,
            packets: n,
        },
        i,
    )
}

/// Takes more packets of the WQE in slot `index`, whose packet `first` was just
/// taken, into a burst while they fit one (`pkt::gso_fits`, [`gso::MAX_BYTES`])
/// and the window has room, up to `max` in all; returns how many the burst
/// has.
fn extend(
    rc: &mut ReqState,
    attrs: &QpAttrs,
    cons: u32,
    index: usize,
    slot: &[u8],
    first: &Packet,
    max: usize,
) -> usize {
    let seg = first.hdrs.udp_len(first.len);
    let (mut n, mut bytes) = (1, seg);
    while n < max && !rc.win.window_full(cons) {
        let Some(f) = rc.win.flights[index] else {
            break;
        };
        let Some((tx, last)) = build(&f, rc.win.off, attrs, slot) else {
            break;
        };
        let u = tx.hdrs.udp_len(tx.len);
        if !pkt::gso_fits(seg, u, last) || bytes + u > gso::MAX_BYTES {
            break;
        }
        rc.win.sent(index, f, tx.hdrs.bth.psn, tx.len as u64, last);
        n += 1;
        bytes += u;
        if last {
            break;
        }
    }
    n
}

/// Takes the WQE just copied into `slot` into the window: into its shadow
/// slot `index`, validated, given its PSNs.
fn take_new(
    dev: &Device<Rrxe>,
    qp: &QpShared,
    rc: &mut ReqState,
    attrs: &QpAttrs,
    index: usize,
    slot: &[u8],
) {
    rc.set_shadow(index, slot);
    let seg = if dev.has_gid(1, &attrs.av.dgid) {
        LOCAL_SEG
    } else {
        mtu_bytes(attrs.path_mtu)
    } as u32;
    // An XRC initiator QP's WQEs name the XRC SRQ they are for.
    let t = if qp.ty == QpType::XrcIni {
        Transport::Xrc
    } else {
        Transport::Rc
    };
    let f = match take_send(qp, slot, t) {
        Ok((w, wc)) => Flight::new(w, wc, rc.win.psn, seg),
        Err(wc) => Flight::failed(wc, rc.win.psn, seg),
    };
    rc.win.take(index, f);
}

/// The next packet of flight `flight`, `off` bytes of which are sent, and
/// whether it is the WQE's last; `None` for an operation RC cannot send.
fn build(flight: &Flight, off: u64, attrs: &QpAttrs, slot: &[u8]) -> Option<(Packet, bool)> {
    let bth = base_bth(attrs);
    if flight.segmented() {
        return Some(segment(flight, off, bth));
    }
    request(flight, bth, slot).map(|tx| (tx, true))
}

/// The BTH fields every request of the QP has.
fn base_bth(attrs: &QpAttrs) -> Bth {
    Bth {
        pkey: 0xffff,
        dqpn: attrs.dest_qp_num,
        ..Default::default()
    }
}

/// The packet of a SEND or WRITE that starts `off` bytes in, and whether
/// it is the last.
fn segment(flight: &Flight, off: u64, mut bth: Bth) -> (Packet, bool) {
    let mtu = u64::from(flight.seg.max(1));
    let idx = (off / mtu) as u32;
    let pos = Pos::of(idx, flight.npkts);
    let imm = matches!(flight.w.opcode, Opcode::SendImm | Opcode::RdmaWriteImm);
    let mut h = Headers::default();
    bth.psn = psn_add(flight.first_psn, idx);
    if matches!(flight.w.opcode, Opcode::RdmaWrite | Opcode::RdmaWriteImm) {
        bth.opcode = rc::write_opcode(pos, imm);
        if pos.starts() {
            if let WrDetail::Rdma { remote_addr, rkey } = flight.w.detail {
                h.reth = Some(Reth {
                    va: remote_addr,
                    rkey,
                    len: flight.len as u32,
                });
            }
        }
    } else {
        bth.opcode = rc::send_opcode(pos, imm, flight.w.opcode == Opcode::SendInv);
        if pos.ends() && flight.w.opcode == Opcode::SendInv {
            h.ieth = Some(flight.w.ex);
        }
    }
    if pos.ends() && imm {
        h.imm = Some(flight.w.ex);
    }
    bth.se = pos.ends() && flight.w.send_flags & wqe::SEND_SOLICITED != 0;
    bth.ack_req = pos.ends() || (idx + 1) % rc::ACK_EVERY == 0;
    h.bth = bth;
    let mut tx = Packet {
        hdrs: h,
        len: (flight.len - off).min(mtu) as usize,
        src: Src::Wqe {
            payload: flight.w.payload,
            off,
        },
    };
    xrc(&mut tx, flight);
    (tx, pos.ends())
}

/// An XRC initiator QP's request packet: XRC's opcode (RC's with the XRC
/// service bits) and an XRCETH naming the XRC SRQ of its WQE.
fn xrc(tx: &mut Packet, flight: &Flight) {
    if let Some(srqn) = flight.w.xrc_srqn {
        tx.hdrs.bth.opcode |= XRC_SERVICE;
        tx.hdrs.xrceth = Some(srqn);
    }
}

/// The one packet of a READ (of what it still lacks), an atomic, ATOMIC
/// WRITE or FLUSH.
fn request(flight: &Flight, mut bth: Bth, slot: &[u8]) -> Option<Packet> {
    bth.psn = flight.first_psn;
    bth.ack_req = true;
    let mut tx = Packet::new(Headers::default());
    match (flight.w.opcode, flight.w.detail) {
        (Opcode::RdmaRead, WrDetail::Rdma { remote_addr, rkey }) => {
            // Retried after part of its data came: a read of the rest, at
            // the PSN of the first response it lacks (as rxe retries).
            bth.opcode = op::READ_REQUEST;
            bth.psn = flight.next_response_psn();
            tx.hdrs.reth = Some(Reth {
                va: remote_addr.wrapping_add(flight.got),
                rkey,
                len: (flight.len - flight.got) as u32,
            });
        }
        (
            Opcode::CmpSwap | Opcode::FetchAdd,
            WrDetail::Atomic {
                remote_addr,
                compare_add,
                swap,
                rkey,
            },
        ) => {
            let cas = flight.w.opcode == Opcode::CmpSwap;
            bth.opcode = if cas { op::CMP_SWAP } else { op::FETCH_ADD };
            tx.hdrs.atm = Some(AtmEth {
                va: remote_addr,
                rkey,
                swap_add: if cas { swap } else { compare_add },
                compare: if cas { compare_add } else { 0 },
            });
        }
        (Opcode::AtomicWrite, WrDetail::Rdma { remote_addr, rkey }) => {
            bth.opcode = op::ATOMIC_WRITE;
            tx.hdrs.reth = Some(Reth {
                va: remote_addr,
                rkey,
                len: 8,
            });
            tx.len = 8;
            tx.src = Src::Bytes(wqe::atomic_write_value(slot).unwrap_or([0; 8]));
        }
        (
            Opcode::Flush,
            WrDetail::Flush {
                remote_addr,
                length,
                rkey,
                ty,
                level,
            },
        ) => {
            bth.opcode = op::FLUSH;
            tx.hdrs.feth = Some(u32::from(ty & 0xf) | (u32::from(level & 3) << 4));
            tx.hdrs.reth = Some(Reth {
                va: remote_addr,
                rkey,
                len: length,
            });
        }
        _ => return None,
    }
    tx.hdrs.bth = bth;
    xrc(&mut tx, flight);
    Some(tx)
}

/// A memory-window bind or a local invalidation; returns the status.
fn local_op(dev: &RrxeDev, qp: &QpShared, wqe: &SendWqe) -> u32 {
    match wqe.detail {
        WrDetail::Mw {
            addr,
            length,
            mr_lkey,
            mw_rkey,
            rkey,
            access,
        } => match mw::bind_mw(
            dev, qp.pd, qp.qpn, mw_rkey, rkey, mr_lkey, addr, length, access,
        ) {
            Ok(()) => status::SUCCESS,
            Err(_) => status::MW_BIND_ERR,
        },
        WrDetail::Reg {
            mr_key,
            key,
            access,
            iova,
        } => match mr::reg_fast(dev, qp.pd, mr_key, key, access, iova) {
            Ok(()) => status::SUCCESS,
            Err(_) => status::MW_BIND_ERR,
        },
        WrDetail::Inv { rkey } => match mr::invalidate(dev, rkey, qp.pd) {
            Ok(()) => status::SUCCESS,
            Err(_) => status::LOC_QP_OP_ERR,
        },
        _ => status::LOC_QP_OP_ERR,
    }
}
