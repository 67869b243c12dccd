// SPDX-License-Identifier: GPL-2.0

//! The reliable connected transport: requester, responder and completer.
//!
//! **Requester.** Send WQEs stay in the ring until they complete, so that a
//! process cannot post more than the ring holds. The requester copies each
//! WQE into a kernel shadow slot when it first takes it (retransmissions
//! use that copy, never the ring again), validates it, gives it its PSNs
//! and sends its packets: SENDs and WRITEs segmented at the path MTU, one
//! request for READs, atomics, ATOMIC WRITE and FLUSH. Memory-window binds
//! and local invalidations run in place, in order, once every earlier WQE
//! has completed. At most [`rc::MAX_UNACKED`] PSNs are outstanding, reads
//! and atomics are bounded by `max_rd_atomic`, and a fenced WQE waits for
//! earlier reads and atomics. One runner at a time: the QP's send lock.
//!
//! **Completer.** ACKs (also implied by later responses), read responses
//! and atomic ACKs retire WQEs in order. A sequence NAK or the retransmit
//! timer (4.096 µs · 2^timeout) rewinds the requester to the first
//! unfinished WQE, within `retry_cnt`; an RNR NAK waits the time its code
//! gives, within `rnr_retry` (7: without limit). Other NAKs complete the
//! WQE with the error rxe reports, and the QP enters ERR, flushing the rest.
//!
//! **Responder.** Checks the PSN (duplicates are re-ACKed, or replayed from
//! the ring of responder resources for reads and atomics; one sequence NAK
//! per gap), the opcode sequence, the QP's rights and, on every packet, the
//! rkey (MR or window), PD and bounds. SENDs take a receive WQE or are
//! refused with an RNR NAK. Class A and C errors NAK and put the QP in ERR.
//!
//! Packets to a GID of this device go straight to the peer QP's responder or
//! completer; the others go on the wire as RoCEv2. No RC lock is held while
//! a packet is delivered or sent, so two QPs may talk to each other.

use crate::ib::{device::Device, qp::QpType, stats::Counter};
use crate::logic::{
    access,
    cqe::{flags, status, Wc},
    hdr::{self, Aeth, AtmEth, Bth, Headers, Reth},
    mtu::mtu_bytes,
    qp::{QpAttrs, QpState},
    rc::{self, op, Nak, PsnCheck, Req, Syndrome},
    uc::{packets, psn_add, Pos},
    wqe::{self, Opcode, Payload, SendWqe, WrDetail},
};
use crate::rrxe::{
    device::{Rrxe, RrxeDev},
    mr::{self, Copy},
    net::{self, RxPkt},
    qp::{self as qpm, QpInner, QpShared},
    sge::{scatter_at, scatter_sges},
    sq::take_send,
    tx::{self, Packet, Src},
};
use kernel::{
    prelude::*,
    sync::Arc,
    time::{
        hrtimer::{ArcHrTimerHandle, HrTimerPointer},
        Delta, Instant, Monotonic,
    },
};

/// Where a WQE is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum FState {
    /// Taken, not (completely) sent.
    Pending,
    /// Sent; waiting for its acknowledgement or response.
    Sent,
    /// Finished, successfully or not; completes in order.
    Done,
}

/// A WQE the requester has taken.
#[derive(Clone, Copy)]
struct Flight {
    w: SendWqe,
    /// Its first PSN, and how many it takes.
    first_psn: u32,
    npkts: u32,
    /// Message length.
    len: u64,
    /// Bytes per packet: the path MTU, or [`LOCAL_SEG`] when the peer is a
    /// QP of this device.
    seg: u32,
    state: FState,
    /// Counted in `rd_atomic`.
    counted: bool,
    /// Read response bytes received.
    got: u64,
    /// The completion so far.
    wc: Wc,
    signaled: bool,
}

impl Flight {
    fn last_psn(&self) -> u32 {
        psn_add(self.first_psn, self.npkts.max(1) - 1)
    }

    /// Needs a response rather than an ACK, and counts against
    /// `max_rd_atomic`.
    fn rd_atomic(&self) -> bool {
        matches!(
            self.w.opcode,
            Opcode::RdmaRead
                | Opcode::CmpSwap
                | Opcode::FetchAdd
                | Opcode::AtomicWrite
                | Opcode::Flush
        )
    }

    /// Runs in place, sending nothing.
    fn local(&self) -> bool {
        matches!(
            self.w.opcode,
            Opcode::LocalInv | Opcode::BindMw | Opcode::RegMr
        )
    }

    fn finish(&mut self, st: u32) {
        self.state = FState::Done;
        self.wc.status = st;
    }
}

/// A responder resource: what a read or atomic did, to replay it.
#[derive(Clone, Copy)]
enum Res {
    Read {
        first_psn: u32,
        last_psn: u32,
        va: u64,
        rkey: u32,
        len: u32,
    },
    Atomic {
        psn: u32,
        orig: u64,
    },
    /// ATOMIC WRITE and FLUSH: answered by an empty read response.
    Empty {
        psn: u32,
    },
}

/// A QP's RC state, under its `rc` lock (taken before `inner`).
pub struct RcState {
    // Requester.
    /// One entry and one shadow slot per ring slot.
    flights: KVVec<Option<Flight>>,
    shadow: KVVec<u8>,
    elem: usize,
    mask: u32,
    /// WQEs taken (and shadowed), from the ring's consumer on.
    taken: u32,
    /// The WQE to send next, from the ring's consumer on.
    next: u32,
    /// Bytes of WQE `next` already sent.
    off: u64,
    /// The PSN of the next new packet.
    psn: u32,
    /// Reads and atomics outstanding.
    rd_atomic: u32,
    /// The last PSN a positive acknowledgement covered.
    acked: Option<u32>,
    retry_left: u8,
    rnr_left: u8,
    /// The retransmit timer's backoff after expiries.
    backoff: rc::Backoff,
    /// When the oldest outstanding packet is retransmitted.
    deadline: Option<Instant<Monotonic>>,
    /// The end of an RNR wait.
    rnr_until: Option<Instant<Monotonic>>,
    /// The timer, while started, and when it fires.
    timer: Option<ArcHrTimerHandle<QpShared>>,
    timer_at: Option<Instant<Monotonic>>,
    /// The requester stopped for a window, a fence or `max_rd_atomic`.
    stalled: bool,
    // Responder.
    epsn: u32,
    msn: u32,
    nak_sent: bool,
    /// The SEND (`true`) or WRITE message in progress.
    msg: Option<bool>,
    /// The receive WQE of the message in progress, copied out.
    held: Option<(KVec<u8>, u32)>,
    /// The buffer of the last receive WQE, reused for the next one (no
    /// allocation per message once it has its size).
    spare: KVec<u8>,
    offset: u64,
    /// The WRITE in progress: address, rkey, length.
    write: Option<(u64, u32, u64)>,
    res: KVec<Option<Res>>,
    res_next: usize,
}

impl RcState {
    /// State for a QP whose send ring has `slots` slots of `elem` bytes
    /// (none for other transports).
    pub fn new(slots: usize, elem: usize) -> Result<Self> {
        let mut flights = KVVec::new();
        let mut shadow = KVVec::new();
        if slots > 0 {
            flights.resize(slots, None, GFP_KERNEL)?;
            shadow.resize(slots.checked_mul(elem).ok_or(EINVAL)?, 0u8, GFP_KERNEL)?;
        }
        Ok(Self {
            flights,
            shadow,
            elem,
            mask: slots.saturating_sub(1) as u32,
            taken: 0,
            next: 0,
            off: 0,
            psn: 0,
            rd_atomic: 0,
            acked: None,
            retry_left: 0,
            rnr_left: 0,
            backoff: rc::Backoff::default(),
            deadline: None,
            rnr_until: None,
            timer: None,
            timer_at: None,
            stalled: false,
            epsn: 0,
            msn: 0,
            nak_sent: false,
            msg: None,
            held: None,
            spare: KVec::new(),
            offset: 0,
            write: None,
            res: KVec::new(),
            res_next: 0,
        })
    }

    /// Forgets everything the requester had taken (the ring was flushed or
    /// the QP reset).
    fn reset_requester(&mut self) {
        for f in self.flights.iter_mut() {
            *f = None;
        }
        self.taken = 0;
        self.next = 0;
        self.off = 0;
        self.rd_atomic = 0;
        self.acked = None;
        self.backoff = rc::Backoff::default();
        self.deadline = None;
        self.rnr_until = None;
        self.stalled = false;
    }

    /// Takes the timer's handle out; dropping it stops the timer (under the
    /// `rc` lock and outside spinlocks: see `arm`).
    pub fn take_timer(&mut self) -> Option<ArcHrTimerHandle<QpShared>> {
        self.timer_at = None;
        self.timer.take()
    }

    /// The QP's destruction: drops the message in progress and returns the
    /// receive WQE it held (to be freed outside spinlocks).
    pub fn release(&mut self) -> Option<(KVec<u8>, u32)> {
        self.msg = None;
        self.write = None;
        self.held.take()
    }

    fn slot_of(&self, cons: u32, k: u32) -> usize {
        (cons.wrapping_add(k) & self.mask) as usize
    }

    fn shadow(&self, i: usize) -> &[u8] {
        &self.shadow[i * self.elem..(i + 1) * self.elem]
    }

    /// Sends again from the `k`-th WQE on (its first packet included).
    fn rewind(&mut self, cons: u32, k: u32) {
        for j in k..self.taken {
            let i = self.slot_of(cons, j);
            if let Some(f) = self.flights[i].as_mut() {
                if f.state != FState::Done {
                    f.state = FState::Pending;
                    f.got = 0;
                    if f.counted {
                        f.counted = false;
                        self.rd_atomic = self.rd_atomic.saturating_sub(1);
                    }
                }
            }
        }
        if k <= self.next && k < self.taken {
            if let Some(f) = self.flights[self.slot_of(cons, k)].as_ref() {
                self.psn = f.first_psn;
            }
            self.next = k;
            self.off = 0;
        }
        self.deadline = None;
    }

    /// Within a SEND or WRITE, the `k`-th WQE (just rewound) goes on from
    /// `psn` rather than its first packet, when `psn` is one of its later
    /// packets: the responder has everything before it (an ACK covered it,
    /// or a sequence NAK asked for it).
    fn resume_at(&mut self, cons: u32, k: u32, psn: u32) {
        if k != self.next || self.off != 0 {
            return;
        }
        let Some(f) = self.flights[self.slot_of(cons, k)].as_ref() else {
            return;
        };
        let resumable = matches!(
            f.w.opcode,
            Opcode::Send
                | Opcode::SendImm
                | Opcode::SendInv
                | Opcode::RdmaWrite
                | Opcode::RdmaWriteImm
        ) && f.state == FState::Pending;
        let d = rc::psn_diff(psn, f.first_psn);
        if resumable && d > 0 && (d as u32) < f.npkts {
            self.off = u64::from(d as u32) * u64::from(f.seg.max(1));
            self.psn = psn;
        }
    }

    /// Spends a retry on the `k`-th WQE: a transport retry, or with `rnr`
    /// an RNR retry, from a budget of `limit` (7: without limit). Rewinds
    /// to the WQE and returns true, or, with none left, finishes it with
    /// the matching error and returns false.
    fn retry(&mut self, cons: u32, k: u32, rnr: bool, limit: u8) -> bool {
        let left = if rnr {
            &mut self.rnr_left
        } else {
            &mut self.retry_left
        };
        if limit != 7 {
            if *left == 0 {
                let i = self.slot_of(cons, k);
                if let Some(f) = self.flights[i].as_mut() {
                    f.finish(if rnr {
                        status::RNR_RETRY_EXC_ERR
                    } else {
                        status::RETRY_EXC_ERR
                    });
                }
                return false;
            }
            *left -= 1;
        }
        self.rewind(cons, k);
        true
    }

    /// The first unfinished WQE with packets out (sent, or being sent), by
    /// index from the consumer.
    fn oldest_outstanding(&self, cons: u32) -> Option<u32> {
        let end = if self.off > 0 {
            self.next + 1
        } else {
            self.next
        };
        (0..end.min(self.taken)).find(|&k| {
            self.flights[self.slot_of(cons, k)]
                .as_ref()
                .is_some_and(|f| f.state != FState::Done)
        })
    }

    /// Sets the responder's expectations (`modify_qp` with RQ_PSN).
    pub fn set_rq_psn(&mut self, psn: u32) {
        self.epsn = psn & 0x00ff_ffff;
        self.nak_sent = false;
        self.msg = None;
        self.offset = 0;
        self.write = None;
    }

    /// Sets the requester's next PSN (`modify_qp` with SQ_PSN).
    pub fn set_sq_psn(&mut self, psn: u32) {
        self.psn = psn & 0x00ff_ffff;
    }

    /// Sizes the responder resources (`max_dest_rd_atomic`).
    pub fn set_dest_rd_atomic(&mut self, n: u8) -> Result {
        let n = (n as usize).max(1).next_power_of_two();
        if self.res.len() != n {
            let mut v = KVec::new();
            v.resize(n, None, GFP_KERNEL)?;
            self.res = v;
            self.res_next = 0;
        }
        Ok(())
    }

    /// Takes the retry counters (`modify_qp` with RETRY_CNT/RNR_RETRY).
    pub fn set_retries(&mut self, retry: u8, rnr: u8) {
        self.retry_left = retry;
        self.rnr_left = rnr;
    }

    /// The QP entered ERR: the receive WQE held for a message in progress
    /// is flushed and the requester forgets its WQEs (the ring's flush
    /// completes them).
    pub fn on_error(&mut self, s: &QpShared) {
        if let Some((slot, _)) = self.held.take() {
            let wc = Wc {
                status: status::WR_FLUSH_ERR,
                qp_num: s.qpn,
                qp_cookie: s.handle,
                wr_id: wqe::wr_id(&slot).unwrap_or(0),
                ..Default::default()
            };
            let _ = s.recv_wc(&wc, false);
        }
        self.msg = None;
        self.write = None;
        self.offset = 0;
        self.reset_requester();
    }
}

/// The segment size between QPs of one device: packets that never reach a
/// wire carry up to 64 KiB each (a lever DESIGN.md names: fewer, larger
/// steps for the same message; PSNs count these segments).
pub const LOCAL_SEG: usize = 64 * 1024;

/// Puts the QP in ERR from inside the transport, flushing both queues.
fn to_err(s: &QpShared, rc: &mut RcState, g: &mut QpInner) {
    if g.attrs.state != QpState::Err {
        g.attrs.state = QpState::Err;
    }
    qpm::flush(s, g);
    rc.on_error(s);
}

/// Retires finished WQEs from the head of the send queue, in order. In ERR
/// the flush has completed the ring's WQEs already: nothing to do.
fn complete_ready(s: &QpShared, rc: &mut RcState, g: &mut QpInner) {
    if g.attrs.state == QpState::Err {
        return;
    }
    while rc.taken > 0 {
        let i = rc.slot_of(g.sq.consumer(), 0);
        let Some(f) = rc.flights[i] else { break };
        if f.state != FState::Done {
            break;
        }
        rc.flights[i] = None;
        rc.taken -= 1;
        rc.next = rc.next.saturating_sub(1);
        if f.counted {
            rc.rd_atomic = rc.rd_atomic.saturating_sub(1);
        }
        let _ = g.sq.consume();
        if f.signaled || s.sig_all || f.wc.status != status::SUCCESS {
            let _ = s.send_wc(&f.wc);
        }
        if f.wc.status != status::SUCCESS {
            to_err(s, rc, g);
            return;
        }
    }
    if rc.oldest_outstanding(g.sq.consumer()).is_none() {
        rc.deadline = None;
    }
}

/// Starts the timer for the earliest of the retransmit deadline and the
/// end of an RNR wait, unless it already fires by then.
///
/// Every handle stands for the QP's one timer, and dropping a handle
/// cancels the timer, whichever start it came from: an old handle is
/// dropped here, before the new start, under the `rc` lock. The caller
/// holds no spinlock (the cancel may wait for a running callback).
fn arm(s: &Arc<QpShared>, rc: &mut RcState) {
    // A QP being destroyed takes its timer out under this lock after
    // marking itself dead: never start it again.
    if s.is_dead() {
        return;
    }
    let want = match (rc.deadline, rc.rnr_until) {
        (Some(a), Some(b)) => {
            if not_after(a, b) {
                a
            } else {
                b
            }
        }
        (Some(a), None) | (None, Some(a)) => a,
        (None, None) => return,
    };
    if rc.timer.is_some() && rc.timer_at.is_some_and(|t| not_after(t, want)) {
        return;
    }
    drop(rc.take_timer());
    let now = Instant::<Monotonic>::now();
    let delta = if not_after(want, now) {
        Delta::from_micros(0)
    } else {
        want - now
    };
    rc.timer = Some(s.clone().start(delta));
    rc.timer_at = Some(want);
}

/// `a` is not after `b` (instants of one clock; `Instant` has no order for
/// this clock type).
fn not_after(a: Instant<Monotonic>, b: Instant<Monotonic>) -> bool {
    (a - b).as_nanos() <= 0
}

/// The retransmit timer for QP attributes `a`, after the backoff `b`.
fn ack_timeout(a: &QpAttrs, b: &rc::Backoff) -> Option<Delta> {
    b.timeout_us(a.timeout)
        .map(|us| Delta::from_micros(us as i64))
}

/// One packet, from the wire or from a local peer.
pub struct RcPkt<'a> {
    /// Opcode.
    pub opcode: u8,
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
    fn seg(&self, a: &QpAttrs) -> usize {
        if self.local {
            LOCAL_SEG
        } else {
            mtu_bytes(a.path_mtu)
        }
    }
}

impl RcPkt<'_> {
    /// A packet for a QP of this device, with the headers `h` and the
    /// addresses of attributes `a`.
    fn local<'a>(h: &Headers, payload: &'a [u8], a: &QpAttrs) -> RcPkt<'a> {
        RcPkt {
            opcode: h.bth.opcode,
            se: h.bth.se,
            ack_req: h.bth.ack_req,
            psn: h.bth.psn,
            reth: h.reth,
            atm: h.atm,
            aeth: h.aeth,
            atmack: h.atmack,
            imm: h.imm,
            ieth: h.ieth,
            feth: h.feth,
            payload,
            sgid: a.av.sgid,
            dgid: a.av.dgid,
            local: true,
        }
    }
}

/// Sends a packet to the QP's peer: delivered in place when the peer's GID
/// is this device's, otherwise on the wire. `Err` if its payload could not
/// be gathered (nothing was sent).
fn emit(
    dev: &Device<Rrxe>,
    s: &QpShared,
    a: &QpAttrs,
    tx: &Packet,
    slot: &[u8],
    buf: &mut KVVec<u8>,
) -> Result {
    let d = dev.data();
    let fill = |b: &mut [u8]| tx.fill(d, s.pd, s.qpn, slot, b);
    if !dev.has_gid(1, &a.av.dgid) {
        return tx::send(dev, &net::connected_out(a, s.qpn), &tx.hdrs, tx.len, fill);
    }
    if buf.len() < tx.len {
        buf.resize(tx.len, 0u8, GFP_KERNEL)?;
    }
    let b = tx::local(d, &mut buf[..tx.len], fill)?;
    // A packet for a QP that is gone is lost, as on the wire.
    if let Some(peer) = d.qp(a.dest_qp_num) {
        tx::received(d, b.len());
        let p = RcPkt::local(&tx.hdrs, b, a);
        if rc::is_response(p.opcode) {
            completer(dev, &peer, &p);
        } else {
            responder(dev, &peer, &p);
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Requester.

/// What the requester does next.
enum Step {
    /// Nothing to do now.
    Idle,
    /// Something changed without sending; look again.
    Again,
    /// Send this packet of the WQE in shadow slot `slot`.
    Packet(Packet, usize),
    /// Run the local operation (bind, invalidate, registration) of the
    /// oldest WQE, in shadow slot `slot`.
    Local(usize),
}

/// Runs the requester (the doorbell, and the QP's task): timers first,
/// then packets until the send queue is empty or the requester must wait.
pub fn run(dev: &Device<Rrxe>, s: &Arc<QpShared>) -> Result {
    let _serial = s.send_lock.lock();
    if s.is_dead() {
        return Ok(());
    }
    tick(dev, s);
    let mut slot = KVec::new();
    let mut buf = s.req_buf.lock();
    {
        let rc = s.rc.lock();
        slot.resize(rc.elem, 0u8, GFP_KERNEL)?;
    }
    loop {
        let (step, a) = {
            let mut rc = s.rc.lock();
            let mut g = s.inner.lock();
            let step = prepare(dev, s, &mut rc, &mut g, &mut slot);
            (step, g.attrs)
        };
        match step {
            Step::Idle => break,
            Step::Again => continue,
            Step::Local(i) => {
                let mut rc = s.rc.lock();
                let Some(mut f) = rc.flights[i] else { continue };
                if f.state == FState::Done {
                    continue;
                }
                f.finish(local_op(dev.data(), s, &f.w));
                rc.flights[i] = Some(f);
                rc.next += 1;
                complete_ready(s, &mut rc, &mut s.inner.lock());
            }
            Step::Packet(tx, i) => {
                if emit(dev, s, &a, &tx, &slot, &mut buf).is_err() {
                    // The WQE's memory keys failed: it completes in error.
                    let mut rc = s.rc.lock();
                    let mut g = s.inner.lock();
                    if let Some(f) = rc.flights[i].as_mut() {
                        if f.state != FState::Done {
                            f.finish(status::LOC_PROT_ERR);
                        }
                    }
                    complete_ready(s, &mut rc, &mut g);
                }
            }
        }
    }
    arm(s, &mut s.rc.lock());
    Ok(())
}

/// Picks the next packet (or local operation) under the QP's locks.
fn prepare(
    dev: &Device<Rrxe>,
    s: &QpShared,
    rc: &mut RcState,
    g: &mut QpInner,
    slot: &mut [u8],
) -> Step {
    let a = g.attrs;
    if a.state != QpState::Rts || rc.rnr_until.is_some() {
        return Step::Idle;
    }
    let cons = g.sq.consumer();
    let k = rc.next;
    let i = rc.slot_of(cons, k);
    if k == rc.taken {
        // A new WQE: into its shadow slot, validated, given its PSNs.
        if k >= rc.mask || !g.sq.peek(k, slot) {
            return Step::Idle;
        }
        rc.shadow[i * rc.elem..(i + 1) * rc.elem].copy_from_slice(slot);
        let seg = if dev.has_gid(1, &a.av.dgid) {
            LOCAL_SEG
        } else {
            mtu_bytes(a.path_mtu)
        } as u32;
        let f = match take_send(s, slot, wqe::Transport::Rc) {
            Ok((w, wc)) => {
                let len = w.payload.bytes();
                let npkts = match w.opcode {
                    Opcode::Send
                    | Opcode::SendImm
                    | Opcode::SendInv
                    | Opcode::RdmaWrite
                    | Opcode::RdmaWriteImm
                    | Opcode::RdmaRead => packets(len, seg) as u32,
                    Opcode::LocalInv | Opcode::BindMw | Opcode::RegMr => 0,
                    _ => 1,
                };
                let mut f = Flight {
                    w,
                    first_psn: rc.psn,
                    npkts,
                    len,
                    seg,
                    state: FState::Pending,
                    counted: false,
                    got: 0,
                    wc,
                    signaled: w.send_flags & wqe::SEND_SIGNALED != 0,
                };
                if len > wqe::MAX_MSG {
                    f.finish(status::LOC_LEN_ERR);
                }
                f
            }
            Err(wc) => Flight {
                w: SendWqe {
                    wr_id: wc.wr_id,
                    opcode: Opcode::Send,
                    send_flags: 0,
                    ex: 0,
                    detail: WrDetail::None,
                    payload: Payload::Sges { n: 0, length: 0 },
                },
                first_psn: rc.psn,
                npkts: 0,
                len: 0,
                seg,
                state: FState::Done,
                counted: false,
                got: 0,
                wc,
                signaled: true,
            },
        };
        rc.flights[i] = Some(f);
        rc.taken += 1;
    } else {
        slot.copy_from_slice(rc.shadow(i));
    }
    let Some(mut f) = rc.flights[i] else {
        return Step::Idle;
    };
    if f.state == FState::Done {
        // Finished early (invalid, or failed locally): completes in order.
        rc.next += 1;
        rc.off = 0;
        rc.psn = psn_add(f.first_psn, f.npkts);
        complete_ready(s, rc, g);
        return Step::Again;
    }
    if f.local() {
        // In place, once everything before it has completed; run by the
        // caller without the ring's lock (it looks up and may release MRs).
        if k != 0 {
            rc.stalled = true;
            return Step::Idle;
        }
        return Step::Local(i);
    }
    let fenced = f.w.send_flags & wqe::SEND_FENCE != 0 && rc.rd_atomic > 0;
    let limit = u32::from(a.max_rd_atomic).max(1);
    if (f.rd_atomic() && rc.off == 0 && rc.rd_atomic >= limit) || (fenced && rc.off == 0) {
        rc.stalled = true;
        return Step::Idle;
    }
    // The window: the oldest unacknowledged PSN bounds how far ahead to go
    // (within a long message, the last PSN an ACK covered moves it).
    if let Some(o) = rc.oldest_outstanding(cons) {
        if let Some(of) = rc.flights[rc.slot_of(cons, o)].as_ref() {
            let mut base = of.first_psn;
            if let Some(x) = rc.acked {
                if rc::psn_diff(x, base) >= 0 && rc::psn_diff(x, of.last_psn()) <= 0 {
                    base = psn_add(x, 1);
                }
            }
            if rc::psn_diff(rc.psn, base) >= rc::MAX_UNACKED as i32 {
                rc.stalled = true;
                return Step::Idle;
            }
        }
    }
    let mtu = u64::from(f.seg.max(1));
    let mut bth = Bth {
        pkey: 0xffff,
        dqpn: a.dest_qp_num,
        ..Default::default()
    };
    let mut tx = Packet::new(Headers::new(bth));
    let mut done_sending = true;
    let solicited = f.w.send_flags & wqe::SEND_SOLICITED != 0;
    match (f.w.opcode, f.w.detail) {
        (
            Opcode::Send
            | Opcode::SendImm
            | Opcode::SendInv
            | Opcode::RdmaWrite
            | Opcode::RdmaWriteImm,
            _,
        ) => {
            let n = f.npkts;
            let idx = (rc.off / mtu) as u32;
            let pos = Pos::of(idx, n);
            let plen = (f.len - rc.off).min(mtu);
            let imm = matches!(f.w.opcode, Opcode::SendImm | Opcode::RdmaWriteImm);
            bth.psn = psn_add(f.first_psn, idx);
            if matches!(f.w.opcode, Opcode::RdmaWrite | Opcode::RdmaWriteImm) {
                bth.opcode = rc::write_opcode(pos, imm);
                if pos.starts() {
                    if let WrDetail::Rdma { remote_addr, rkey } = f.w.detail {
                        tx.hdrs.reth = Some(Reth {
                            va: remote_addr,
                            rkey,
                            len: f.len as u32,
                        });
                    }
                }
            } else {
                bth.opcode = rc::send_opcode(pos, imm, f.w.opcode == Opcode::SendInv);
                if pos.ends() && f.w.opcode == Opcode::SendInv {
                    tx.hdrs.ieth = Some(f.w.ex);
                }
            }
            if pos.ends() && imm {
                tx.hdrs.imm = Some(f.w.ex);
            }
            bth.se = pos.ends() && solicited;
            bth.ack_req = pos.ends() || (idx + 1) % rc::ACK_EVERY == 0;
            tx.len = plen as usize;
            tx.src = Src::Wqe {
                payload: f.w.payload,
                off: rc.off,
            };
            done_sending = pos.ends();
            rc.off += plen;
        }
        (Opcode::RdmaRead, WrDetail::Rdma { remote_addr, rkey }) => {
            bth.opcode = op::READ_REQUEST;
            bth.psn = f.first_psn;
            bth.ack_req = true;
            tx.hdrs.reth = Some(Reth {
                va: remote_addr,
                rkey,
                len: f.len as u32,
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
            bth.psn = f.first_psn;
            bth.ack_req = true;
            tx.hdrs.atm = Some(AtmEth {
                va: remote_addr,
                rkey,
                swap_add: if cas { swap } else { compare_add },
                compare: if cas { compare_add } else { 0 },
            });
        }
        (Opcode::AtomicWrite, WrDetail::Rdma { remote_addr, rkey }) => {
            bth.opcode = op::ATOMIC_WRITE;
            bth.psn = f.first_psn;
            bth.ack_req = true;
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
            bth.psn = f.first_psn;
            bth.ack_req = true;
            tx.hdrs.feth = Some(u32::from(ty & 0xf) | (u32::from(level & 3) << 4));
            tx.hdrs.reth = Some(Reth {
                va: remote_addr,
                rkey,
                len: length,
            });
        }
        _ => {
            f.finish(status::LOC_QP_OP_ERR);
            rc.flights[i] = Some(f);
            return Step::Again;
        }
    }
    tx.hdrs.bth = bth;
    if done_sending {
        f.state = FState::Sent;
        if f.rd_atomic() {
            f.counted = true;
            rc.rd_atomic += 1;
        }
        rc.next += 1;
        rc.off = 0;
        rc.psn = psn_add(f.first_psn, f.npkts.max(1));
    } else {
        rc.psn = psn_add(bth.psn, 1);
    }
    rc.flights[i] = Some(f);
    // As rxe does, every packet sent restarts the retransmit timer: it
    // measures silence after the last packet, so a slow responder still
    // working through a burst is not taken for a lost one.
    rc.deadline = ack_timeout(&a, &rc.backoff).map(|t| Instant::<Monotonic>::now() + t);
    Step::Packet(tx, i)
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
        } => match mr::bind_mw(d, s.pd, s.qpn, mw_rkey, rkey, mr_lkey, addr, length, access) {
            Ok(()) => status::SUCCESS,
            Err(_) => status::MW_BIND_ERR,
        },
        WrDetail::Reg {
            mr_key,
            key,
            access,
        } => match mr::reg_fast(d, s.pd, mr_key, key, access) {
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

/// The timers: the end of an RNR wait resumes sending; a passed deadline
/// retransmits from the oldest unfinished WQE, or fails it once
/// `retry_cnt` retries are spent.
fn tick(dev: &Device<Rrxe>, s: &Arc<QpShared>) {
    let d = dev.data();
    let mut rc = s.rc.lock();
    let now = Instant::<Monotonic>::now();
    if rc.timer_at.is_some_and(|t| not_after(t, now)) {
        // Fired: its handle goes, under the lock (see `arm`).
        drop(rc.take_timer());
    }
    {
        let mut g = s.inner.lock();
        if rc.rnr_until.is_some_and(|t| not_after(t, now)) {
            rc.rnr_until = None;
        }
        if rc.deadline.is_some_and(|t| not_after(t, now)) && g.attrs.state == QpState::Rts {
            let cons = g.sq.consumer();
            if let Some(k) = rc.oldest_outstanding(cons) {
                if rc.retry(cons, k, false, g.attrs.retry_cnt) {
                    rc.backoff.on_expiry();
                    if let Some(x) = rc.acked {
                        rc.resume_at(cons, k, psn_add(x, 1));
                    }
                    d.count(Counter::CompRetry, 1);
                } else {
                    d.count(Counter::RetryExceeded, 1);
                    rc.deadline = None;
                    complete_ready(s, &mut rc, &mut g);
                }
            } else {
                rc.deadline = None;
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Completer.

fn nak_status(n: Nak) -> u32 {
    match n {
        Nak::InvReq => status::REM_INV_REQ_ERR,
        Nak::RemAccess => status::REM_ACCESS_ERR,
        Nak::RemOp | Nak::Seq => status::REM_OP_ERR,
        Nak::InvRdReq => status::REM_INV_RD_REQ_ERR,
    }
}

/// Takes an ACK, NAK, read response or atomic ACK for QP `s`.
pub fn completer(dev: &Device<Rrxe>, s: &Arc<QpShared>, p: &RcPkt<'_>) {
    if s.ty != QpType::Rc {
        return;
    }
    let d = dev.data();
    let kick = {
        let mut rc = s.rc.lock();
        if s.is_dead() {
            return;
        }
        // The ring's lock only for the attributes and the consumer index
        // (which only `complete_ready` moves while the QP is not in ERR):
        // the scatter of read data and the atomic result happen under `rc`
        // alone.
        let (a, cons) = {
            let g = s.inner.lock();
            (g.attrs, g.sq.consumer())
        };
        if !matches!(a.state, QpState::Rts | QpState::Sqd | QpState::Sqe) {
            return;
        }
        if p.sgid != a.av.dgid || p.dgid != a.av.sgid {
            return;
        }
        let syn = p
            .aeth
            .map(|x| Syndrome::parse(x.syndrome))
            .unwrap_or(Some(Syndrome::Ack));
        let Some(syn) = syn else { return };
        // Any acknowledgement at or past the oldest outstanding PSN is
        // progress: it restarts the retransmit timer and the retry count.
        let mut progressed = syn == Syndrome::Ack
            && rc.oldest_outstanding(cons).is_some_and(|o| {
                rc.flights[rc.slot_of(cons, o)]
                    .as_ref()
                    .is_some_and(|f| rc::psn_diff(p.psn, f.first_psn) >= 0)
            });
        if progressed {
            rc.acked = Some(p.psn);
        }
        let mut rewound = false;
        // Everything wholly before this PSN is acknowledged by it, up to
        // the first WQE that needs a response of its own.
        let mut k = 0u32;
        while k < rc.next {
            let i = rc.slot_of(cons, k);
            let Some(f) = rc.flights[i].as_mut() else {
                break;
            };
            if f.state == FState::Done {
                k += 1;
                continue;
            }
            let before = rc::psn_diff(f.last_psn(), p.psn) < 0;
            let this_ack = rc::psn_diff(f.last_psn(), p.psn) == 0
                && p.opcode == op::ACK
                && syn == Syndrome::Ack;
            if f.rd_atomic() || f.state != FState::Sent || !(before || this_ack) {
                break;
            }
            f.wc.byte_len = f.len as u32;
            f.state = FState::Done;
            progressed = true;
            k += 1;
        }
        let in_flight = k < rc.next || (k == rc.next && rc.off > 0 && k < rc.taken);
        let target = if in_flight {
            Some((k, rc.slot_of(cons, k)))
        } else {
            None
        };
        match (p.opcode, syn) {
            (op::ACK, Syndrome::Ack) => {}
            (op::ACK, Syndrome::Rnr(code)) => {
                if let Some((k, _)) = target {
                    d.count(Counter::RcvRnr, 1);
                    if rc.retry(cons, k, true, a.rnr_retry) {
                        rewound = true;
                        rc.rnr_until = Some(
                            Instant::<Monotonic>::now()
                                + Delta::from_micros(rc::rnr_wait_us(code) as i64),
                        );
                    } else {
                        d.count(Counter::RnrRetryExceeded, 1);
                    }
                }
            }
            (op::ACK, Syndrome::Nak(Nak::Seq)) => {
                if let Some((k, _)) = target {
                    d.count(Counter::RcvSeqErr, 1);
                    if rc.retry(cons, k, false, a.retry_cnt) {
                        rc.resume_at(cons, k, p.psn);
                        rewound = true;
                    } else {
                        d.count(Counter::RetryExceeded, 1);
                    }
                }
            }
            (op::ACK, Syndrome::Nak(n)) => {
                if let Some((_, i)) = target {
                    if let Some(f) = rc.flights[i].as_mut() {
                        if rc::psn_diff(p.psn, f.first_psn) >= 0 {
                            f.finish(nak_status(n));
                        }
                    }
                }
            }
            (op::ATOMIC_ACK, Syndrome::Ack) => {
                if let (Some((_, i)), Some(orig)) = (target, p.atmack) {
                    let slot_copy = rc.flights[i];
                    if let Some(mut f) = slot_copy {
                        if f.state == FState::Sent
                            && matches!(f.w.opcode, Opcode::CmpSwap | Opcode::FetchAdd)
                            && f.first_psn == p.psn
                        {
                            let st = match wqe::sge_at(rc.shadow(i), wqe::SEND_HDR, 0) {
                                Some(sge) if sge.length >= 8 => {
                                    match mr::lookup_mr(
                                        d,
                                        sge.lkey,
                                        s.pd,
                                        access::LOCAL_WRITE,
                                        sge.addr,
                                        8,
                                    ) {
                                        Ok(m) if m.write(sge.addr, &orig.to_ne_bytes()).is_ok() => {
                                            status::SUCCESS
                                        }
                                        _ => status::LOC_PROT_ERR,
                                    }
                                }
                                _ => status::LOC_PROT_ERR,
                            };
                            f.wc.byte_len = 8;
                            f.finish(st);
                            rc.flights[i] = Some(f);
                            progressed = true;
                        }
                    }
                }
            }
            (o, Syndrome::Ack) if rc::read_resp_pos(o).is_some() => {
                if let (Some((_, i)), Some(pos)) = (target, rc::read_resp_pos(o)) {
                    if let Some(mut f) = rc.flights[i] {
                        if f.state == FState::Sent {
                            let st = read_response(d, s, &rc, i, &mut f, p, pos);
                            if let Some(st) = st {
                                f.finish(st);
                                f.wc.byte_len = f.len as u32;
                            }
                            if st.is_some() || f.got > 0 {
                                progressed = true;
                            }
                            rc.flights[i] = Some(f);
                        }
                    }
                }
            }
            _ => {}
        }
        if progressed {
            rc.retry_left = a.retry_cnt;
            rc.backoff.on_progress();
            rc.deadline = ack_timeout(&a, &rc.backoff).map(|t| Instant::<Monotonic>::now() + t);
        }
        complete_ready(s, &mut rc, &mut s.inner.lock());
        let kick = (rewound && rc.rnr_until.is_none()) || ((progressed || rewound) && rc.stalled);
        if kick {
            rc.stalled = false;
        }
        arm(s, &mut rc);
        kick
    };
    if kick {
        s.kick();
    }
}

/// One read response packet (or the empty one that answers ATOMIC WRITE
/// and FLUSH) for the flight in slot `i`: `Some(status)` once the WQE is
/// finished, `None` while more is due. Out-of-order packets are ignored.
#[allow(clippy::too_many_arguments)]
fn read_response(
    d: &RrxeDev,
    s: &QpShared,
    rc: &RcState,
    i: usize,
    f: &mut Flight,
    p: &RcPkt<'_>,
    pos: Pos,
) -> Option<u32> {
    let mtu = u64::from(f.seg.max(1));
    match f.w.opcode {
        Opcode::AtomicWrite | Opcode::Flush => {
            return (pos == Pos::Only && p.psn == f.first_psn && p.payload.is_empty())
                .then_some(status::SUCCESS);
        }
        Opcode::RdmaRead => {}
        _ => return None,
    }
    let idx = (f.got / mtu) as u32;
    if p.psn != psn_add(f.first_psn, idx) || pos.starts() != (f.got == 0) {
        return None;
    }
    let n = p.payload.len() as u64;
    let last = pos.ends();
    if (!last && n != mtu) || f.got + n > f.len || (last && f.got + n != f.len) {
        return Some(status::BAD_RESP_ERR);
    }
    let slot = rc.shadow(i);
    let nsge = match f.w.payload {
        Payload::Sges { n, .. } => n,
        Payload::Inline { .. } => return Some(status::LOC_PROT_ERR),
    };
    if n > 0 && scatter_sges(d, s.pd, slot, wqe::SEND_HDR, nsge, f.got, p.payload).is_err() {
        return Some(status::LOC_PROT_ERR);
    }
    f.got += n;
    last.then_some(status::SUCCESS)
}

// ---------------------------------------------------------------------------
// Responder.

/// The responder's answer to a request, sent once its lock is dropped.
enum Reply {
    None,
    /// An ACK or NAK for `psn`.
    Ack {
        psn: u32,
        syn: Syndrome,
        msn: u32,
    },
    /// An atomic ACK with the original value.
    Atomic {
        psn: u32,
        orig: u64,
        msn: u32,
    },
    /// An empty read response (ATOMIC WRITE, FLUSH).
    Empty {
        psn: u32,
        msn: u32,
    },
    /// Read response packets from `psn` on: `len` bytes at `va`, `seg`
    /// bytes per packet.
    Read {
        psn: u32,
        va: u64,
        rkey: u32,
        len: u32,
        msn: u32,
        seg: usize,
    },
}

/// Takes a request packet for QP `s`.
pub fn responder(dev: &Device<Rrxe>, s: &Arc<QpShared>, p: &RcPkt<'_>) {
    if s.ty != QpType::Rc {
        return;
    }
    let Some((req, pos)) = rc::classify_req(p.opcode) else {
        return;
    };
    let a = s.inner.lock().attrs;
    if !matches!(
        a.state,
        QpState::Rtr | QpState::Rts | QpState::Sqd | QpState::Sqe
    ) {
        return;
    }
    if p.sgid != a.av.dgid || p.dgid != a.av.sgid {
        return;
    }
    let d = dev.data();
    let reply = {
        let mut rc = s.rc.lock();
        if s.is_dead() {
            return;
        }
        match rc::check_psn(p.psn, rc.epsn) {
            PsnCheck::Ahead => {
                if rc.nak_sent {
                    Reply::None
                } else {
                    rc.nak_sent = true;
                    d.count(Counter::OutOfSeqReq, 1);
                    Reply::Ack {
                        psn: rc.epsn,
                        syn: Syndrome::Nak(Nak::Seq),
                        msn: rc.msn,
                    }
                }
            }
            PsnCheck::Duplicate => {
                d.count(Counter::DupReq, 1);
                duplicate(&rc, &a, p, req)
            }
            PsnCheck::Expected => {
                rc.nak_sent = false;
                match execute(d, s, &mut rc, &a, p, req, pos) {
                    Ok(r) => r,
                    Err((nak, st)) => {
                        // Class A/C: complete the WQE in hand, NAK, and
                        // enter ERR.
                        if let Some((slot, _)) = rc.held.take() {
                            let wc = Wc {
                                status: st,
                                qp_num: s.qpn,
                                qp_cookie: s.handle,
                                wr_id: wqe::wr_id(&slot).unwrap_or(0),
                                opcode: wqe::WC_RECV,
                                ..Default::default()
                            };
                            let _ = s.recv_wc(&wc, false);
                        }
                        let msn = rc.msn;
                        let mut g = s.inner.lock();
                        to_err(s, &mut rc, &mut g);
                        Reply::Ack {
                            psn: p.psn,
                            syn: Syndrome::Nak(nak),
                            msn,
                        }
                    }
                }
            }
        }
    };
    send_reply(dev, s, &a, reply);
}

/// Stores a responder resource, replacing the oldest.
fn add_res(rc: &mut RcState, r: Res) {
    if rc.res.is_empty() {
        return;
    }
    let n = rc.res.len();
    rc.res[rc.res_next % n] = Some(r);
    rc.res_next = (rc.res_next + 1) % n;
}

/// A request behind the expected PSN: SENDs and WRITEs are ACKed again,
/// reads and atomics replayed from their resource; anything else dropped.
fn duplicate(rc: &RcState, a: &QpAttrs, p: &RcPkt<'_>, req: Req) -> Reply {
    let msn = rc.msn;
    match req {
        Req::Send { .. } | Req::Write { .. } => Reply::Ack {
            psn: psn_add(rc.epsn, 0x00ff_ffff),
            syn: Syndrome::Ack,
            msn,
        },
        Req::Read => {
            let Some(reth) = p.reth else {
                return Reply::None;
            };
            for r in rc.res.iter().flatten() {
                if let Res::Read {
                    first_psn,
                    last_psn,
                    va,
                    rkey,
                    len,
                } = *r
                {
                    let inside =
                        rc::psn_diff(p.psn, first_psn) >= 0 && rc::psn_diff(p.psn, last_psn) <= 0;
                    let end = va.checked_add(u64::from(len));
                    let req_end = reth.va.checked_add(u64::from(reth.len));
                    if inside
                        && reth.rkey == rkey
                        && reth.va >= va
                        && matches!((end, req_end), (Some(e), Some(re)) if re <= e)
                    {
                        return Reply::Read {
                            psn: p.psn,
                            va: reth.va,
                            rkey,
                            len: reth.len,
                            msn,
                            seg: p.seg(a),
                        };
                    }
                }
            }
            Reply::None
        }
        Req::CmpSwap | Req::FetchAdd => {
            for r in rc.res.iter().flatten() {
                if let Res::Atomic { psn, orig } = *r {
                    if psn == p.psn {
                        return Reply::Atomic { psn, orig, msn };
                    }
                }
            }
            Reply::None
        }
        Req::AtomicWrite | Req::Flush => {
            for r in rc.res.iter().flatten() {
                if let Res::Empty { psn } = *r {
                    if psn == p.psn {
                        return Reply::Empty { psn, msn };
                    }
                }
            }
            Reply::None
        }
    }
}

type Fail = (Nak, u32);
const INV_REQ: Fail = (Nak::InvReq, status::REM_INV_REQ_ERR);
const REM_ACCESS: Fail = (Nak::RemAccess, status::REM_ACCESS_ERR);

fn key_fail(e: Error) -> Fail {
    let _ = e;
    REM_ACCESS
}

/// Takes a receive WQE for the message (into the reused buffer); without
/// one, the RNR NAK to send.
fn hold_recv(d: &RrxeDev, s: &QpShared, rc: &mut RcState, a: &QpAttrs, psn: u32) -> Option<Reply> {
    let mut slot = core::mem::take(&mut rc.spare);
    match s.pop_recv(&mut slot) {
        Some(max) => {
            rc.held = Some((slot, max));
            None
        }
        None => {
            rc.spare = slot;
            d.count(Counter::SndRnr, 1);
            Some(Reply::Ack {
                psn,
                syn: Syndrome::Rnr(a.min_rnr_timer),
                msn: rc.msn,
            })
        }
    }
}

/// Carries out the request at the expected PSN.
#[allow(clippy::too_many_arguments)]
fn execute(
    d: &RrxeDev,
    s: &QpShared,
    rc: &mut RcState,
    a: &QpAttrs,
    p: &RcPkt<'_>,
    req: Req,
    pos: Pos,
) -> core::result::Result<Reply, Fail> {
    let mtu = p.seg(a);
    let qp_access = a.qp_access_flags;
    let ack = |rc: &RcState| {
        if p.ack_req {
            Reply::Ack {
                psn: p.psn,
                syn: Syndrome::Ack,
                msn: rc.msn,
            }
        } else {
            Reply::None
        }
    };
    // Reads and atomics need responder resources: with none granted
    // (max_dest_rd_atomic 0) they are invalid requests, as in rxe.
    if matches!(
        req,
        Req::Read | Req::CmpSwap | Req::FetchAdd | Req::AtomicWrite | Req::Flush
    ) && a.max_dest_rd_atomic == 0
    {
        return Err(INV_REQ);
    }
    match req {
        Req::Send { imm, inv } => {
            if !rc::op_sequence_ok(rc.msg, true, pos) {
                return Err(INV_REQ);
            }
            if if pos.ends() {
                p.payload.len() > mtu
            } else {
                p.payload.len() != mtu
            } {
                return Err(INV_REQ);
            }
            if pos.starts() && rc.held.is_none() {
                if let Some(rnr) = hold_recv(d, s, rc, a, p.psn) {
                    return Ok(rnr);
                }
                rc.offset = 0;
            }
            let Some((slot, max)) = rc.held.as_ref() else {
                return Err(INV_REQ);
            };
            let r = wqe::parse_recv(slot, *max).map_err(|_| (Nak::RemOp, status::LOC_QP_OP_ERR))?;
            let n = p.payload.len() as u64;
            if rc.offset + n > r.length {
                return Err((Nak::InvReq, status::LOC_LEN_ERR));
            }
            if n > 0 && scatter_at(d, s.pd, slot, r.num_sge, rc.offset, p.payload).is_err() {
                return Err((Nak::RemOp, status::LOC_PROT_ERR));
            }
            rc.offset += n;
            rc.epsn = psn_add(p.psn, 1);
            if !pos.ends() {
                rc.msg = Some(true);
                return Ok(ack(rc));
            }
            let mut wc = Wc {
                opcode: wqe::WC_RECV,
                byte_len: rc.offset as u32,
                qp_num: s.qpn,
                qp_cookie: s.handle,
                port_num: 1,
                ..Default::default()
            };
            if imm {
                wc.wc_flags |= flags::WITH_IMM;
                wc.ex = p.imm.unwrap_or(0);
            }
            if inv {
                let key = p.ieth.unwrap_or(0);
                if mr::invalidate(d, key, s.pd).is_err() {
                    return Err(INV_REQ);
                }
                wc.wc_flags |= flags::WITH_INVALIDATE;
                wc.ex = key;
            }
            if let Some((slot, _)) = rc.held.take() {
                wc.wr_id = wqe::wr_id(&slot).unwrap_or(0);
                let _ = s.recv_wc(&wc, p.se);
                rc.spare = slot;
            }
            rc.msg = None;
            rc.offset = 0;
            rc.msn = psn_add(rc.msn, 1);
            Ok(ack(rc))
        }
        Req::Write { imm } => {
            if !rc::op_sequence_ok(rc.msg, false, pos) {
                return Err(INV_REQ);
            }
            if qp_access & access::REMOTE_WRITE == 0 {
                return Err(INV_REQ);
            }
            if if pos.ends() {
                p.payload.len() > mtu
            } else {
                p.payload.len() != mtu
            } {
                return Err(INV_REQ);
            }
            if pos.starts() {
                let reth = p.reth.ok_or(INV_REQ)?;
                if reth.len > 0 {
                    mr::lookup_key(
                        d,
                        reth.rkey,
                        s.pd,
                        s.qpn,
                        access::REMOTE_WRITE,
                        reth.va,
                        u64::from(reth.len),
                    )
                    .map_err(key_fail)?;
                }
                rc.write = Some((reth.va, reth.rkey, u64::from(reth.len)));
                rc.offset = 0;
            }
            let (va, rkey, len) = rc.write.ok_or(INV_REQ)?;
            let n = p.payload.len() as u64;
            if rc.offset + n > len || (pos.ends() && rc.offset + n != len) {
                return Err(INV_REQ);
            }
            // The immediate data needs a receive WQE before anything is
            // written by this packet (an RNR NAK has it sent again).
            if imm && rc.held.is_none() {
                if let Some(rnr) = hold_recv(d, s, rc, a, p.psn) {
                    return Ok(rnr);
                }
            }
            if n > 0 {
                let at = va.checked_add(rc.offset).ok_or(REM_ACCESS)?;
                mr::copy_by_key(
                    d,
                    rkey,
                    s.pd,
                    s.qpn,
                    access::REMOTE_WRITE,
                    at,
                    Copy::Into(p.payload),
                )
                .map_err(key_fail)?;
            }
            rc.offset += n;
            rc.epsn = psn_add(p.psn, 1);
            if !pos.ends() {
                rc.msg = Some(false);
                return Ok(ack(rc));
            }
            rc.msg = None;
            rc.write = None;
            rc.offset = 0;
            rc.msn = psn_add(rc.msn, 1);
            if imm {
                if let Some((slot, _)) = rc.held.take() {
                    let wc = Wc {
                        opcode: wqe::WC_RECV_RDMA_WITH_IMM,
                        byte_len: len as u32,
                        wc_flags: flags::WITH_IMM,
                        ex: p.imm.unwrap_or(0),
                        qp_num: s.qpn,
                        qp_cookie: s.handle,
                        port_num: 1,
                        wr_id: wqe::wr_id(&slot).unwrap_or(0),
                        ..Default::default()
                    };
                    let _ = s.recv_wc(&wc, p.se);
                    rc.spare = slot;
                }
            }
            Ok(ack(rc))
        }
        Req::Read => {
            if rc.msg.is_some() || qp_access & access::REMOTE_READ == 0 {
                return Err(INV_REQ);
            }
            let reth = p.reth.ok_or(INV_REQ)?;
            if reth.len > 0 {
                mr::lookup_key(
                    d,
                    reth.rkey,
                    s.pd,
                    s.qpn,
                    access::REMOTE_READ,
                    reth.va,
                    u64::from(reth.len),
                )
                .map_err(key_fail)?;
            }
            let n = packets(u64::from(reth.len), mtu as u32) as u32;
            add_res(
                rc,
                Res::Read {
                    first_psn: p.psn,
                    last_psn: psn_add(p.psn, n - 1),
                    va: reth.va,
                    rkey: reth.rkey,
                    len: reth.len,
                },
            );
            rc.epsn = psn_add(p.psn, n);
            rc.msn = psn_add(rc.msn, 1);
            Ok(Reply::Read {
                psn: p.psn,
                va: reth.va,
                rkey: reth.rkey,
                len: reth.len,
                msn: rc.msn,
                seg: mtu,
            })
        }
        Req::CmpSwap | Req::FetchAdd => {
            if rc.msg.is_some() || qp_access & access::REMOTE_ATOMIC == 0 {
                return Err(INV_REQ);
            }
            let atm = p.atm.ok_or(INV_REQ)?;
            if atm.va & 7 != 0 {
                return Err(INV_REQ);
            }
            let (m, at) =
                mr::lookup_key(d, atm.rkey, s.pd, s.qpn, access::REMOTE_ATOMIC, atm.va, 8)
                    .map_err(key_fail)?;
            let orig = {
                let _g = d.atomics().lock();
                let mut b = [0u8; 8];
                m.read(at, &mut b).map_err(key_fail)?;
                let orig = u64::from_ne_bytes(b);
                let new = if req == Req::CmpSwap {
                    if orig == atm.compare {
                        atm.swap_add
                    } else {
                        orig
                    }
                } else {
                    orig.wrapping_add(atm.swap_add)
                };
                m.write(at, &new.to_ne_bytes()).map_err(key_fail)?;
                orig
            };
            add_res(rc, Res::Atomic { psn: p.psn, orig });
            rc.epsn = psn_add(p.psn, 1);
            rc.msn = psn_add(rc.msn, 1);
            Ok(Reply::Atomic {
                psn: p.psn,
                orig,
                msn: rc.msn,
            })
        }
        Req::AtomicWrite => {
            if rc.msg.is_some() || qp_access & access::REMOTE_WRITE == 0 {
                return Err(INV_REQ);
            }
            let reth = p.reth.ok_or(INV_REQ)?;
            if reth.va & 7 != 0 || p.payload.len() != 8 || reth.len != 8 {
                return Err(INV_REQ);
            }
            let (m, at) =
                mr::lookup_key(d, reth.rkey, s.pd, s.qpn, access::REMOTE_WRITE, reth.va, 8)
                    .map_err(key_fail)?;
            {
                let _g = d.atomics().lock();
                m.write(at, p.payload).map_err(key_fail)?;
            }
            add_res(rc, Res::Empty { psn: p.psn });
            rc.epsn = psn_add(p.psn, 1);
            rc.msn = psn_add(rc.msn, 1);
            Ok(Reply::Empty {
                psn: p.psn,
                msn: rc.msn,
            })
        }
        Req::Flush => {
            if rc.msg.is_some() {
                return Err(INV_REQ);
            }
            let reth = p.reth.ok_or(INV_REQ)?;
            let feth = p.feth.ok_or(INV_REQ)?;
            let ty = feth & 0xf;
            let mut need = 0;
            if ty & 1 != 0 {
                need |= access::FLUSH_GLOBAL;
            }
            if ty & 2 != 0 {
                need |= access::FLUSH_PERSISTENT;
            }
            if reth.len > 0 {
                mr::lookup_key(
                    d,
                    reth.rkey,
                    s.pd,
                    s.qpn,
                    need,
                    reth.va,
                    u64::from(reth.len),
                )
                .map_err(key_fail)?;
            }
            // Memory here is ordinary RAM written by the CPU: once the
            // copies are done, the data is globally visible.
            add_res(rc, Res::Empty { psn: p.psn });
            rc.epsn = psn_add(p.psn, 1);
            rc.msn = psn_add(rc.msn, 1);
            Ok(Reply::Empty {
                psn: p.psn,
                msn: rc.msn,
            })
        }
    }
}

/// Sends the responder's reply to the QP's peer.
fn send_reply(dev: &Device<Rrxe>, s: &QpShared, a: &QpAttrs, r: Reply) {
    let base = |opcode: u8, psn: u32| Bth {
        opcode,
        pkey: 0xffff,
        dqpn: a.dest_qp_num,
        psn,
        ..Default::default()
    };
    let none = |bth: Bth| Packet::new(Headers::new(bth));
    let mut buf = s.reply_buf.lock();
    match r {
        Reply::None => {}
        Reply::Ack { psn, syn, msn } => {
            let mut tx = none(base(op::ACK, psn));
            tx.hdrs.aeth = Some(Aeth {
                syndrome: syn.byte(),
                msn,
            });
            let _ = emit(dev, s, a, &tx, &[], &mut buf);
        }
        Reply::Atomic { psn, orig, msn } => {
            let mut tx = none(base(op::ATOMIC_ACK, psn));
            tx.hdrs.aeth = Some(Aeth {
                syndrome: Syndrome::Ack.byte(),
                msn,
            });
            tx.hdrs.atmack = Some(orig);
            let _ = emit(dev, s, a, &tx, &[], &mut buf);
        }
        Reply::Empty { psn, msn } => {
            let mut tx = none(base(op::READ_RESP_ONLY, psn));
            tx.hdrs.aeth = Some(Aeth {
                syndrome: Syndrome::Ack.byte(),
                msn,
            });
            let _ = emit(dev, s, a, &tx, &[], &mut buf);
        }
        Reply::Read {
            psn,
            va,
            rkey,
            len,
            msn,
            seg,
        } => {
            let mtu = seg as u64;
            let n = packets(u64::from(len), mtu as u32) as u32;
            let mut off = 0u64;
            for j in 0..n {
                // A responder destroyed mid-read (its process killed, say)
                // sends nothing more.
                if s.is_dead() {
                    break;
                }
                let pos = Pos::of(j, n);
                let plen = (u64::from(len) - off).min(mtu);
                let mut tx = none(base(rc::read_resp_opcode(pos), psn_add(psn, j)));
                if pos != Pos::Middle {
                    tx.hdrs.aeth = Some(Aeth {
                        syndrome: Syndrome::Ack.byte(),
                        msn,
                    });
                }
                tx.len = plen as usize;
                let Some(at) = va.checked_add(off) else { break };
                tx.src = Src::Key { rkey, va: at };
                if emit(dev, s, a, &tx, &[], &mut buf).is_err() {
                    // The memory went away (a window invalidated, say):
                    // the requester learns it from a NAK.
                    let mut nak = none(base(op::ACK, psn_add(psn, j)));
                    nak.hdrs.aeth = Some(Aeth {
                        syndrome: Syndrome::Nak(Nak::RemAccess).byte(),
                        msn,
                    });
                    let _ = emit(dev, s, a, &nak, &[], &mut buf);
                    break;
                }
                off += plen;
            }
        }
    }
}

/// An RC packet from the wire (checked by `net::rx`).
pub fn rx(dev: &Device<Rrxe>, p: &RxPkt<'_>) {
    let d = dev.data();
    let Some(qp) = d.qp(p.bth.dqpn) else { return };
    let be32 = |o: Option<usize>, n: usize| {
        o.and_then(|o| p.udp.get(o..o + n))
            .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    };
    let atmack = p.layout.atmack.and_then(|o| p.udp.get(o..o + 8)).map(|b| {
        let mut x = [0u8; 8];
        x.copy_from_slice(b);
        u64::from_be_bytes(x)
    });
    let pkt = RcPkt {
        opcode: p.bth.opcode,
        se: p.bth.se,
        ack_req: p.bth.ack_req,
        psn: p.bth.psn,
        reth: p.layout.reth.and_then(|o| Reth::parse(&p.udp[o..])),
        atm: p.layout.atmeth.and_then(|o| AtmEth::parse(&p.udp[o..])),
        aeth: p.layout.aeth.and_then(|o| Aeth::parse(&p.udp[o..])),
        atmack,
        imm: p.imm(),
        ieth: be32(p.layout.ieth, hdr::IETH),
        feth: be32(p.layout.feth, hdr::FETH),
        payload: p.payload,
        sgid: p.ip.sgid,
        dgid: p.ip.dgid,
        local: false,
    };
    if rc::is_response(pkt.opcode) {
        completer(dev, &qp, &pkt);
    } else {
        responder(dev, &qp, &pkt);
    }
}
