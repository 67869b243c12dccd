// SPDX-License-Identifier: GPL-2.0

//! An RC QP's transport state, under two locks: the requester's (its
//! window and shadow copies of its WQEs, the timers' deadlines), which
//! the completer shares, and the responder's (its expected PSN, message
//! in progress, resources and replies). The two sides of a QP run in
//! different contexts at once (a doorbell's requester, and the responder
//! taking the peer's request in the peer's context) and never wait for
//! each other, but in a move to RESET, which holds both, `resp` first.

use super::responder::Reply;
use crate::ib::clock::Mono;
use crate::logic::{
    fifo::Fifo,
    flights::{Flight, Window},
    gate::GateBound,
    rc::Backoff,
};
use crate::rrxe::{cq::CqShared, pd::PdId, qp::QpShared, srq::SrqShared};
use core::sync::atomic::{AtomicBool, Ordering};
use kernel::{
    new_mutex,
    prelude::*,
    sync::{Arc, Mutex},
    time::{hrtimer::ArcHrTimerHandle, Delta},
};

/// A responder resource: what a read or atomic did, to replay it.
#[derive(Clone, Copy)]
pub(super) enum Res {
    /// An RDMA READ: its PSNs and what it read.
    Read {
        first_psn: u32,
        last_psn: u32,
        va: u64,
        rkey: u32,
        len: u32,
        /// The PD its key was checked in.
        pd: PdId,
    },
    /// A compare-and-swap or fetch-and-add, with the value it found.
    Atomic { psn: u32, orig: u64 },
    /// ATOMIC WRITE and FLUSH: answered by an empty read response.
    Empty { psn: u32 },
}

/// The RC state's locks (see the module's text). Each is taken before
/// `inner`.
#[pin_data]
pub struct RcLocks {
    /// The responder's state.
    #[pin]
    pub resp: Mutex<RespState>,
    /// The requester's and completer's state.
    #[pin]
    pub req: Mutex<ReqState>,
    /// The requester or completer put the QP in ERR: the responder's part
    /// of that is still to do (see `rc::settle`).
    resp_err: AtomicBool,
}

impl RcLocks {
    /// The locks over `req` and `resp`.
    pub fn new(req: ReqState, resp: RespState) -> impl PinInit<Self> {
        pin_init!(Self {
            resp <- new_mutex!(resp, "rrxe::RcLocks::resp"),
            req <- new_mutex!(req, "rrxe::RcLocks::req"),
            resp_err: AtomicBool::new(false),
        })
    }

    /// Notes that the responder's part of a move to ERR is to do.
    pub(super) fn set_resp_err(&self) {
        self.resp_err.store(true, Ordering::Release);
    }

    /// Whether the responder's part of a move to ERR is to do (which
    /// clears it).
    pub(super) fn take_resp_err(&self) -> bool {
        self.resp_err.swap(false, Ordering::AcqRel)
    }
}

/// The receive WQE of the message in progress, copied out of its ring.
pub struct Held {
    /// The WQE.
    pub(super) slot: KVec<u8>,
    /// The scatter entries it may hold.
    pub(super) max_sge: u32,
    /// The XRC SRQ it came from (an XRC target QP's): the message
    /// completes on that SRQ's CQ, and its other packets must name it.
    pub(super) srq: Option<Arc<SrqShared>>,
}

impl Held {
    /// Where the message completes: the XRC SRQ's CQ, or the QP's own.
    pub(super) fn cq<'a>(&'a self, qp: &'a QpShared) -> Option<&'a Arc<CqShared>> {
        match &self.srq {
            Some(srq) => srq.xrc.as_ref().map(|x| &x.cq),
            None => qp.recv_cq.as_ref(),
        }
    }
}

/// What a move to RESET took out: dropping it stops the timer (see
/// [`ReqState::take_timer`]) and frees the held receive WQE.
pub struct ResetOut {
    _held: Option<Held>,
    _timer: Option<ArcHrTimerHandle<QpShared>>,
}

/// When the oldest outstanding packet is retransmitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Deadline {
    /// Never: nothing is outstanding, or a retransmission is under way.
    Off,
    /// At this time.
    At(Mono),
    /// This long after the next start of the timer (`timer::arm`), which
    /// reads the exact clock anyway: set while no timer runs, so that the
    /// packet that sets it leaves without a clocksource read.
    After(Delta),
}

/// The first wait for on-demand memory (see [`ReqState::wait_for_memory`]).
const FAULT_WAIT_FIRST_US: u32 = 1000;
/// The longest.
const FAULT_WAIT_MAX_US: u32 = 256_000;

/// An RC QP's requester (and completer) state, under its `req` lock.
pub struct ReqState {
    /// The WQEs taken, one entry per ring slot.
    pub(super) win: Window<KVVec<Option<Flight>>>,
    /// One shadow copy per ring slot, of `elem` bytes each.
    shadow: KVVec<u8>,
    pub(super) elem: usize,
    /// The retransmit timer's backoff after expiries.
    pub(super) backoff: Backoff,
    /// How much of its traffic the stack may hold (see `logic::gate`).
    pub(super) gate: GateBound,
    /// When the oldest outstanding packet is retransmitted.
    pub(super) deadline: Deadline,
    /// The end of an RNR wait, or of a wait for on-demand memory.
    pub(super) rnr_until: Option<Mono>,
    /// The next wait for on-demand memory that was not resident, in
    /// microseconds (see [`Self::wait_for_memory`]).
    fault_wait_us: u32,
    /// The timer, while started, and when it fires.
    pub(super) timer: Option<ArcHrTimerHandle<QpShared>>,
    pub(super) timer_at: Option<Mono>,
}

/// An RC QP's responder state, under its `resp` lock.
pub struct RespState {
    /// The PSN expected next.
    pub(super) epsn: u32,
    /// Messages completed.
    pub(super) msn: u32,
    /// A sequence NAK was sent for the current gap.
    pub(super) nak_sent: bool,
    /// The SEND (`true`) or WRITE message in progress.
    pub(super) msg: Option<bool>,
    /// The receive WQE of the message in progress, copied out.
    pub(super) held: Option<Held>,
    /// The buffer of the last receive WQE, reused for the next one (no
    /// allocation per message once it has its size).
    pub(super) spare: KVec<u8>,
    /// Bytes of the message in progress received.
    pub(super) offset: u64,
    /// The WRITE in progress: address, rkey, length.
    pub(super) write: Option<(u64, u32, u64)>,
    /// The responder resources, a ring replacing the oldest.
    pub(super) res: KVec<Option<Res>>,
    pub(super) res_next: usize,
    /// Replies waiting to be sent, in order (see `replies`): room for a
    /// read or atomic per resource and an acknowledgement between each.
    pub(super) replies: Fifo<KVec<Option<Reply>>>,
}

/// Reply slots for `resources` responder resources.
fn reply_slots(resources: usize, gfp: kernel::alloc::Flags) -> Result<KVec<Option<Reply>>> {
    let mut v = KVec::new();
    v.resize(2 * resources.max(1) + 2, None, gfp)?;
    Ok(v)
}

impl ReqState {
    /// What [`Self::new`] allocates for `slots` slots of `elem` bytes.
    pub fn bytes(slots: usize, elem: usize) -> usize {
        slots.saturating_mul(elem.saturating_add(core::mem::size_of::<Option<Flight>>()))
    }

    /// State for a QP whose send ring has `slots` slots of `elem` bytes
    /// (none for other transports), allocated with `gfp`.
    pub fn new(slots: usize, elem: usize, gfp: kernel::alloc::Flags) -> Result<Self> {
        let mut flights = KVVec::new();
        let mut shadow = KVVec::new();
        if slots > 0 {
            flights.resize(slots, None, gfp)?;
            shadow.resize(slots.checked_mul(elem).ok_or(EINVAL)?, 0u8, gfp)?;
        }
        Ok(Self {
            win: Window::new(flights),
            shadow,
            elem,
            backoff: Backoff::default(),
            gate: GateBound::default(),
            deadline: Deadline::Off,
            rnr_until: None,
            fault_wait_us: FAULT_WAIT_FIRST_US,
            timer: None,
            timer_at: None,
        })
    }

    /// Forgets everything the requester had taken (the ring was flushed or
    /// the QP reset).
    fn forget(&mut self) {
        self.win.reset();
        self.backoff = Backoff::default();
        self.gate = GateBound::default();
        self.deadline = Deadline::Off;
        self.rnr_until = None;
        self.fault_wait_us = FAULT_WAIT_FIRST_US;
    }

    /// Takes the timer's handle out; dropping it stops the timer (under the
    /// `req` lock and outside spinlocks: see `timer::arm`).
    pub fn take_timer(&mut self) -> Option<ArcHrTimerHandle<QpShared>> {
        self.timer_at = None;
        self.timer.take()
    }

    /// The QP moved to RESET: as rxe, what it had in flight is dropped
    /// without a completion (its send ring was emptied). The requester
    /// forgets its WQEs, PSN, timers and backoff. Returns the timer's
    /// handle, to be dropped outside spinlocks.
    fn reset(&mut self) -> Option<ArcHrTimerHandle<QpShared>> {
        self.forget();
        self.win.psn = 0;
        self.take_timer()
    }

    /// The shadow copy of the WQE in slot `index`.
    pub(super) fn shadow(&self, index: usize) -> &[u8] {
        &self.shadow[index * self.elem..(index + 1) * self.elem]
    }

    /// Keeps a copy of the WQE in slot `index`.
    pub(super) fn set_shadow(&mut self, index: usize, slot: &[u8]) {
        self.shadow[index * self.elem..(index + 1) * self.elem].copy_from_slice(slot);
    }

    /// Spends a retry on the `nth` WQE (see `Window::retry`); a rewind
    /// clears the retransmit deadline.
    pub(super) fn retry(&mut self, cons: u32, nth: u32, rnr: bool, limit: u8) -> bool {
        let rewound = self.win.retry(cons, nth, rnr, limit);
        if rewound {
            self.deadline = Deadline::Off;
        }
        rewound
    }

    /// The `nth` WQE from consumer index `cons` met on-demand memory of
    /// its own that was not resident (a read response or an atomic result
    /// to place, a payload to gather). Its fault was started, but the
    /// requester does not wait for it: it may run in the receive path,
    /// which serves every QP, or in a task that destruction waits for, and
    /// a fault on a stalled file system may never end. The WQE goes again
    /// (from `psn` if that is one of its later packets) after a wait, as
    /// after an RNR NAK and without spending a retry; the wait doubles from
    /// 1 ms up to 256 ms while the memory stays out, and starts again at
    /// 1 ms once the requester makes progress.
    pub(super) fn wait_for_memory(&mut self, cons: u32, nth: u32, psn: Option<u32>) {
        self.win.restart(cons, nth);
        if let Some(psn) = psn {
            self.win.resume_at(cons, nth, psn);
        }
        self.deadline = Deadline::Off;
        let us = self.fault_wait_us;
        super::timer::rnr_wait(self, us);
        self.fault_wait_us = us.saturating_mul(2).min(FAULT_WAIT_MAX_US);
    }

    /// The requester made progress: the next wait for memory is short.
    pub(super) fn memory_came(&mut self) {
        self.fault_wait_us = FAULT_WAIT_FIRST_US;
    }

    /// Sets the requester's next PSN (`modify_qp` with SQ_PSN).
    pub fn set_sq_psn(&mut self, psn: u32) {
        self.win.psn = psn & 0x00ff_ffff;
        self.win.high = None;
    }

    /// Takes the retry counters (`modify_qp` with RETRY_CNT/RNR_RETRY).
    pub fn set_retries(&mut self, retry: u8, rnr: u8) {
        self.win.retry_left = retry;
        self.win.rnr_left = rnr;
    }

    /// The QP entered ERR: the requester forgets its WQEs (the ring's
    /// flush completes them).
    pub fn on_error(&mut self) {
        self.forget();
    }
}

impl RespState {
    /// A responder's state, allocated with `gfp`, its buffer for receive
    /// WQEs `recv` bytes long (allocated now, not by the receive path).
    pub fn new(gfp: kernel::alloc::Flags, recv: usize) -> Result<Self> {
        Ok(Self {
            epsn: 0,
            msn: 0,
            nak_sent: false,
            msg: None,
            held: None,
            spare: KVec::from_elem(0u8, recv, gfp)?,
            offset: 0,
            write: None,
            res: KVec::new(),
            res_next: 0,
            replies: Fifo::new(reply_slots(1, gfp)?),
        })
    }

    /// The QP's destruction: drops the message in progress and returns the
    /// receive WQE it held (to be freed outside spinlocks). The replies
    /// stay: the context that queued them sends what the QP owes for the
    /// requests it completed (see `replies::pump`).
    pub fn release(&mut self) -> Option<Held> {
        self.msg = None;
        self.write = None;
        self.held.take()
    }

    /// The QP moved to RESET: the responder forgets its expected PSN,
    /// message in progress, held receive WQE and read and atomic
    /// resources. Returns the held WQE, to be freed outside spinlocks.
    fn reset(&mut self) -> Option<Held> {
        self.epsn = 0;
        self.msn = 0;
        self.nak_sent = false;
        self.offset = 0;
        for r in self.res.iter_mut() {
            *r = None;
        }
        self.res_next = 0;
        self.replies.clear();
        self.release()
    }

    /// Sets the responder's expectations (`modify_qp` with RQ_PSN).
    pub fn set_rq_psn(&mut self, psn: u32) {
        self.epsn = psn & 0x00ff_ffff;
        self.nak_sent = false;
        self.msg = None;
        self.offset = 0;
        self.write = None;
    }

    /// Sizes the responder resources for `max_dest_rd_atomic` (rounded up to
    /// a power of two, at least one).
    pub fn set_dest_rd_atomic(
        &mut self,
        max_dest_rd_atomic: u8,
        gfp: kernel::alloc::Flags,
    ) -> Result {
        let n = (max_dest_rd_atomic as usize).max(1).next_power_of_two();
        if self.res.len() != n {
            let mut v = KVec::new();
            v.resize(n, None, gfp)?;
            self.replies = Fifo::new(reply_slots(n, gfp)?);
            self.res = v;
            self.res_next = 0;
        }
        Ok(())
    }

    /// The QP entered ERR: the receive WQE held for a message in progress
    /// is flushed; the responder's replies stop but for what it owes.
    pub fn on_error(&mut self, qp: &QpShared) {
        if let Some(h) = self.held.take() {
            qp.flush_held(h.cq(qp), &h.slot);
        }
        self.msg = None;
        self.write = None;
        self.offset = 0;
        // What the QP owes for the requests it completed (an ACK, a NAK,
        // an atomic's or an empty response: one packet each) still goes
        // out from the context that queued it (see `replies::pump`), as
        // rxe's responder finishes the request it is on. A consumer may
        // move the QP to ERR the moment a receive completes
        // (rdma_disconnect does, and rdma_client calls it so): the peer's
        // SEND would retry without its ACK. Read responses stop.
        self.replies.retain(|r| !matches!(r, Reply::Read(_)));
    }
}

/// A move to RESET, under both locks: both sides forget their state.
/// Returns what they took out, to be dropped outside spinlocks.
pub fn reset(req: &mut ReqState, resp: &mut RespState) -> ResetOut {
    ResetOut {
        _held: resp.reset(),
        _timer: req.reset(),
    }
}
