// SPDX-License-Identifier: GPL-2.0

//! The RC requester: takes send WQEs into its window, builds their packets
//! and sends them, and runs binds, registrations and invalidations in
//! place.

use super::{
    complete_ready, emit, settle,
    timer::{arm, restart, tick},
    ReqState, LOCAL_SEG,
};
use crate::ib::device::Device;
use crate::logic::{
    cqe::status,
    flights::{FState, Flight},
    hdr::{AtmEth, Bth, Headers, Reth},
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
    gso, mr, mw, net,
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

/// Packets `0..n` of a burst: those of flight `f` from `off` bytes on.
#[derive(Clone, Copy)]
struct Burst {
    f: Flight,
    off: u64,
    n: usize,
}

impl Burst {
    /// Packet `k`.
    fn packet(&self, a: &QpAttrs, k: usize) -> Packet {
        let off = self.off + k as u64 * u64::from(self.f.seg.max(1));
        segment(&self.f, off, base_bth(a)).0
    }
}

/// Runs the requester (the doorbell, and the QP's task): timers first,
/// then packets until the send queue is empty or the requester must wait.
pub fn run(dev: &Device<Rrxe>, s: &Arc<QpShared>, time: &mut RunBudget) -> Result {
    let r = drive(dev, s, time);
    settle(s);
    r
}

/// [`run`], up to the responder's part of a move to ERR.
fn drive(dev: &Device<Rrxe>, s: &Arc<QpShared>, time: &mut RunBudget) -> Result {
    let mut bufs = s.send_lock.lock();
    if s.is_dead() {
        return Ok(());
    }
    tick(dev, s);
    let mut buf = s.req_buf.lock();
    // At most one ring's worth of new WQEs per run, so that a process that
    // keeps moving its producer index cannot keep the kernel here; every
    // WQE posted before a doorbell is within that many.
    let (elem, mut budget) = {
        let rc = s.rc.req.lock();
        (rc.elem, rc.win.mask + 1)
    };
    let slot = &mut bufs.wqe;
    size_slot(s, slot, elem)?;
    let mut receive = false;
    loop {
        crate::ib::cond_resched();
        // Out of time (or the doorbell's process is being killed): the
        // send task goes on from here.
        if time.spent() {
            s.kick();
            break;
        }
        let (step, a) = {
            let mut rc = s.rc.req.lock();
            let mut g = s.inner.lock();
            let step = prepare(dev, s, &mut rc, &mut g, slot, &mut budget);
            (step, g.attrs)
        };
        match step {
            Step::Idle => break,
            Step::Yield => {
                s.kick();
                break;
            }
            Step::Again => continue,
            Step::Local(i) => run_local(dev.data(), s, i),
            Step::Send(tx, i, fin) => {
                if let Err(e) = emit(dev, s, &a, &tx, slot, &mut buf) {
                    if e == EAGAIN {
                        not_resident(dev.data(), s, i, Some(tx.hdrs.bth.psn));
                        break;
                    }
                    fail(dev.data(), s, i, e);
                }
                // Nothing more to send for now: see below.
                if fin {
                    receive = true;
                    break;
                }
            }
            Step::Burst(b, i) => {
                if let Err(e) = burst(dev, s, &a, &b, slot, &mut buf) {
                    if e == EAGAIN {
                        let psn = b.packet(&a, 0).hdrs.bth.psn;
                        not_resident(dev.data(), s, i, Some(psn));
                        break;
                    }
                    fail(dev.data(), s, i, e);
                }
            }
        }
    }
    // The last packet posted is out: a doorbell receiving in place lets
    // its receiver (a WRITE's target memory, in a ping-pong the next thing
    // anyone waits for) run now, before the timer and the completions. Not
    // under this QP's locks: what comes back may be a NAK for this QP,
    // and the receive path runs the requester it rewinds at once (which
    // takes `send_lock`). The timer starts after, from what is left
    // unacknowledged.
    drop(buf);
    drop(bufs);
    if receive {
        crate::net::tunnel::receive_now();
    }
    arm(s, &mut s.rc.req.lock());
    Ok(())
}

/// The payload of the WQE in slot `i`, from the packet with PSN `psn` on,
/// is in on-demand memory that is not resident: it goes again after a
/// wait (see `ReqState::wait_for_memory`), and nothing waits for the
/// page fault meanwhile.
fn not_resident(d: &RrxeDev, s: &QpShared, i: usize, psn: Option<u32>) {
    d.count(Counter::OdpFaultDeferred, 1);
    rrxe_dbg!(
        d,
        Site::OdpFault,
        "qp {:#x}: payload memory not resident, sending later",
        s.qpn
    );
    let mut rc = s.rc.req.lock();
    let cons = s.inner.lock().sq.consumer();
    let k = rc.win.index_of(cons, i);
    rc.wait_for_memory(cons, k, psn);
}

/// The WQE in slot `i` could not be sent: its memory keys failed, or its
/// packets are too big for the route. It completes in error.
fn fail(d: &RrxeDev, s: &QpShared, i: usize, e: Error) {
    let mut rc = s.rc.req.lock();
    let mut g = s.inner.lock();
    rc.win.finish(i, tx::fail_status(e));
    complete_ready(d, s, &mut rc, &mut g);
}

/// Sends burst `b` as one UDP GSO packet, or packet by packet when its
/// peer has become local or its path IPv6 (the requester made it for an
/// IPv4 wire path).
fn burst(
    dev: &Device<Rrxe>,
    s: &QpShared,
    a: &QpAttrs,
    b: &Burst,
    slot: &[u8],
    buf: &mut KVVec<u8>,
) -> Result {
    let out = net::connected_out(a, s.qpn);
    if dev.has_gid(1, &a.av.dgid) || !out.v4() {
        for k in 0..b.n {
            emit(dev, s, a, &b.packet(a, k), slot, buf)?;
        }
        return Ok(());
    }
    let d = dev.data();
    tx::send_burst(
        dev,
        &out,
        s.route.as_ref(),
        s.gate.as_ref(),
        b.n,
        |k| {
            let p = b.packet(a, k);
            (p.hdrs, p.len)
        },
        |k, o| b.packet(a, k).fill(d, s.pd, s.qpn, slot, o),
    )
}

/// Runs the local operation of the oldest WQE, in slot `i`, and completes
/// it.
fn run_local(d: &RrxeDev, s: &QpShared, i: usize) {
    let mut rc = s.rc.req.lock();
    let Some(f) = rc.win.flights[i] else { return };
    if f.state == FState::Done {
        return;
    }
    rc.win.finish(i, local_op(d, s, &f.w));
    rc.win.next += 1;
    complete_ready(d, s, &mut rc, &mut s.inner.lock());
}

/// Picks the next packet (or local operation) under the QP's locks.
fn prepare(
    dev: &Device<Rrxe>,
    s: &QpShared,
    rc: &mut ReqState,
    g: &mut QpInner,
    slot: &mut [u8],
    budget: &mut u32,
) -> Step {
    let a = g.attrs;
    if a.state != QpState::Rts || rc.rnr_until.is_some() {
        return Step::Idle;
    }
    let cons = g.sq.consumer();
    let k = rc.win.next;
    let i = rc.win.slot_of(cons, k);
    if k == rc.win.taken {
        if rc.win.full() || !g.sq.peek(k, slot) {
            return Step::Idle;
        }
        if *budget == 0 {
            return Step::Yield;
        }
        *budget -= 1;
        take_new(dev, s, rc, &a, i, slot);
    } else {
        slot.copy_from_slice(rc.shadow(i));
    }
    let Some(mut f) = rc.win.flights[i] else {
        return Step::Idle;
    };
    if f.state == FState::Done {
        // Finished early (invalid, or failed locally): completes in order.
        rc.win.pass_finished(&f);
        complete_ready(dev.data(), s, rc, g);
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
    if s.gate.as_ref().is_some_and(|g| g.must_wait(high, low)) {
        return Step::Idle;
    }
    let off = rc.win.off;
    let Some((tx, last)) = build(&f, off, &a, slot) else {
        f.finish(status::LOC_QP_OP_ERR);
        rc.win.flights[i] = Some(f);
        return Step::Again;
    };
    rc.win.sent(i, f, tx.hdrs.bth.psn, tx.len as u64, last);
    let fin = last && rc.win.next >= g.sq.pending();
    // As rxe does, every packet sent restarts the retransmit timer: it
    // measures silence after the last packet, so a slow responder still
    // working through a burst is not taken for a lost one.
    restart(rc, &a);
    if last || !f.segmented() || f.seg as usize == LOCAL_SEG {
        return Step::Send(tx, i, fin);
    }
    // Bursts are IPv4 only.
    if !net::connected_out(&a, s.qpn).v4() {
        return Step::Send(tx, i, false);
    }
    // A burst counts in the gate as its packets: it keeps within the
    // gate's bound.
    let room = s
        .gate
        .as_ref()
        .map_or(high, |g| high.saturating_sub(g.out()));
    let max = (room as usize).min(gso::MAX_PKTS);
    let n = extend(rc, &a, cons, i, slot, &tx, max);
    if n == 1 {
        return Step::Send(tx, i, false);
    }
    Step::Burst(Burst { f, off, n }, i)
}

/// Takes more packets of the WQE in slot `i`, whose packet `first` was just
/// taken, into a burst while they fit one (`pkt::gso_fits`, [`gso::MAX_BYTES`])
/// and the window has room, up to `max` in all; returns how many the burst
/// has.
fn extend(
    rc: &mut ReqState,
    a: &QpAttrs,
    cons: u32,
    i: usize,
    slot: &[u8],
    first: &Packet,
    max: usize,
) -> usize {
    let seg = first.hdrs.udp_len(first.len);
    let (mut n, mut bytes) = (1, seg);
    while n < max && !rc.win.window_full(cons) {
        let Some(f) = rc.win.flights[i] else { break };
        let Some((tx, last)) = build(&f, rc.win.off, a, slot) else {
            break;
        };
        let u = tx.hdrs.udp_len(tx.len);
        if !pkt::gso_fits(seg, u, last) || bytes + u > gso::MAX_BYTES {
            break;
        }
        rc.win.sent(i, f, tx.hdrs.bth.psn, tx.len as u64, last);
        n += 1;
        bytes += u;
        if last {
            break;
        }
    }
    n
}

/// Takes the WQE just copied into `slot` into the window: into its shadow
/// slot `i`, validated, given its PSNs.
fn take_new(
    dev: &Device<Rrxe>,
    s: &QpShared,
    rc: &mut ReqState,
    a: &QpAttrs,
    i: usize,
    slot: &[u8],
) {
    rc.set_shadow(i, slot);
    let seg = if dev.has_gid(1, &a.av.dgid) {
        LOCAL_SEG
    } else {
        mtu_bytes(a.path_mtu)
    } as u32;
    let f = match take_send(s, slot, Transport::Rc) {
        Ok((w, wc)) => Flight::new(w, wc, rc.win.psn, seg),
        Err(wc) => Flight::failed(wc, rc.win.psn, seg),
    };
    rc.win.take(i, f);
}

/// The next packet of flight `f`, `off` bytes of which are sent, and
/// whether it is the WQE's last; `None` for an operation RC cannot send.
fn build(f: &Flight, off: u64, a: &QpAttrs, slot: &[u8]) -> Option<(Packet, bool)> {
    let bth = base_bth(a);
    if f.segmented() {
        return Some(segment(f, off, bth));
    }
    request(f, bth, slot).map(|tx| (tx, true))
}

/// The BTH fields every request of the QP has.
fn base_bth(a: &QpAttrs) -> Bth {
    Bth {
        pkey: 0xffff,
        dqpn: a.dest_qp_num,
        ..Default::default()
    }
}

/// The packet of a SEND or WRITE that starts `off` bytes in, and whether
/// it is the last.
fn segment(f: &Flight, off: u64, mut bth: Bth) -> (Packet, bool) {
    let mtu = u64::from(f.seg.max(1));
    let idx = (off / mtu) as u32;
    let pos = Pos::of(idx, f.npkts);
    let imm = matches!(f.w.opcode, Opcode::SendImm | Opcode::RdmaWriteImm);
    let mut h = Headers::default();
    bth.psn = psn_add(f.first_psn, idx);
    if matches!(f.w.opcode, Opcode::RdmaWrite | Opcode::RdmaWriteImm) {
        bth.opcode = rc::write_opcode(pos, imm);
        if pos.starts() {
            if let WrDetail::Rdma { remote_addr, rkey } = f.w.detail {
                h.reth = Some(Reth {
                    va: remote_addr,
                    rkey,
                    len: f.len as u32,
                });
            }
        }
    } else {
        bth.opcode = rc::send_opcode(pos, imm, f.w.opcode == Opcode::SendInv);
        if pos.ends() && f.w.opcode == Opcode::SendInv {
            h.ieth = Some(f.w.ex);
        }
    }
    if pos.ends() && imm {
        h.imm = Some(f.w.ex);
    }
    bth.se = pos.ends() && f.w.send_flags & wqe::SEND_SOLICITED != 0;
    bth.ack_req = pos.ends() || (idx + 1) % rc::ACK_EVERY == 0;
    h.bth = bth;
    let tx = Packet {
        hdrs: h,
        len: (f.len - off).min(mtu) as usize,
        src: Src::Wqe {
            payload: f.w.payload,
            off,
        },
    };
    (tx, pos.ends())
}

/// The one packet of a READ (of what it still lacks), an atomic, ATOMIC
/// WRITE or FLUSH.
fn request(f: &Flight, mut bth: Bth, slot: &[u8]) -> Option<Packet> {
    bth.psn = f.first_psn;
    bth.ack_req = true;
    let mut tx = Packet::new(Headers::default());
    match (f.w.opcode, f.w.detail) {
        (Opcode::RdmaRead, WrDetail::Rdma { remote_addr, rkey }) => {
            // Retried after part of its data came: a read of the rest, at
            // the PSN of the first response it lacks (as rxe retries).
            bth.opcode = op::READ_REQUEST;
            bth.psn = f.next_response_psn();
            tx.hdrs.reth = Some(Reth {
                va: remote_addr.wrapping_add(f.got),
                rkey,
                len: (f.len - f.got) as u32,
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
            let cas = f.w.opcode == Opcode::CmpSwap;
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
    Some(tx)
}

/// A memory-window bind or a local invalidation; returns the status.
fn local_op(d: &RrxeDev, s: &QpShared, w: &SendWqe) -> u32 {
    match w.detail {
        WrDetail::Mw {
            addr,
            length,
            mr_lkey,
            mw_rkey,
            rkey,
            access,
        } => match mw::bind_mw(d, s.pd, s.qpn, mw_rkey, rkey, mr_lkey, addr, length, access) {
            Ok(()) => status::SUCCESS,
            Err(_) => status::MW_BIND_ERR,
        },
        WrDetail::Reg {
            mr_key,
            key,
            access,
            iova,
        } => match mr::reg_fast(d, s.pd, mr_key, key, access, iova) {
            Ok(()) => status::SUCCESS,
            Err(_) => status::MW_BIND_ERR,
        },
        WrDetail::Inv { rkey } => match mr::invalidate(d, rkey, s.pd) {
            Ok(()) => status::SUCCESS,
            Err(_) => status::LOC_QP_OP_ERR,
        },
        _ => status::LOC_QP_OP_ERR,
    }
}
