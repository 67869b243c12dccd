// SPDX-License-Identifier: GPL-2.0

//! The send queue's doorbell: takes the WQEs a process (or the kernel's
//! post_send) put in the ring and hands each to its transport.
//!
//! The user doorbell (`post_send` without work requests) and the QP's send
//! task take the send queue's WQEs one by one, under the QP's send lock:
//! each is copied out of the ring and validated (`logic::wqe`), then sent by
//! `ud` or `uc`, and completed. RC QPs have their own engine (`rc`), which
//! keeps WQEs in the ring until they are acknowledged.

use crate::ib::{device::Device, object::Qp, qp::QpType};
use crate::logic::{
    cqe::{status, Wc},
    qp::QpState,
    wqe::{self, Transport},
};
use crate::rrxe::stats::Counter;
use crate::rrxe::{
    debug::Site,
    device::Rrxe,
    qp::{self, QpShared},
    rc, sge, uc, ud,
};
use crate::rrxe_dbg;
use kernel::{
    prelude::*,
    sync::Arc,
    time::{Delta, Instant, Monotonic},
    workqueue::WorkItem,
};

/// Who works through a send queue.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Runner {
    /// A doorbell: a process's `ibv_post_send`, inside its system call.
    Doorbell,
    /// The QP's send task (a kworker), or the receive path running it.
    Task,
}

/// The QP's send task, on the module's workqueue (`QpShared::kick` queues
/// it): the RC responder's queued replies, then the send queue. The
/// transports queue it; nothing runs it inline, so the receive path never
/// re-enters a QP's send processing.
impl WorkItem for QpShared {
    type Pointer = Arc<QpShared>;

    fn run(this: Arc<QpShared>) {
        if this.is_dead() {
            return;
        }
        // Nothing to do for a device being unregistered: its QPs are being
        // destroyed.
        this.with_device(|dev| {
            if this.reliable() {
                rc::run_replies(dev, &this);
            }
            // Its errors (the QP is below RTS, or its WQE buffer could
            // not be had) have no caller here; the next doorbell meets
            // them and returns them.
            let _ = process_sq(dev, &this, Runner::Task);
        });
    }
}

/// How long one run of a send queue works before it leaves the rest to the
/// QP's send task: a doorbell returns to its caller within about this
/// (whatever it was asked to send), and the task, run again, lets others
/// have its worker between runs.
const RUN_TIME: Delta = Delta::from_micros(1000);

/// A UC message longer than this is never started in a doorbell: its
/// packets go out one after another without a stop, so the send task
/// sends it.
pub const DOORBELL_MSG_BYTES: u64 = 64 << 10;

/// The time one run of a send queue has (see [`RUN_TIME`]).
pub struct RunBudget {
    start: Instant<Monotonic>,
    spent: bool,
}

impl RunBudget {
    /// A run's budget, from now.
    pub fn begin() -> Self {
        Self {
            start: Instant::<Monotonic>::now(),
            spent: false,
        }
    }

    /// Whether the run should stop here and leave the rest to the send
    /// task: its time is up, or the process it runs in has a signal
    /// pending (a doorbell must not keep a killed process in the kernel).
    /// Called before each packet, burst or WQE, each of which may copy
    /// 64 KiB.
    pub fn spent(&mut self) -> bool {
        if !self.spent {
            self.spent = self.start.elapsed() > RUN_TIME || kernel::current!().signal_pending();
        }
        self.spent
    }
}

/// The user doorbell: processes the send queue up to the producer index.
/// `EINVAL` below RTS (as rxe); in ERR, posted WQEs are flushed. What its
/// packets bring to an idle device of this kernel is received here, after
/// it (and the replies to that too): a WRITE to another namespace and its
/// ACK take no context switch.
pub fn post_send_user(ibqp: &Qp<Rrxe>) -> Result {
    let _in_place = crate::net::tunnel::ReceiveInPlace::begin();
    process_sq(ibqp.device(), &ibqp.data().shared, Runner::Doorbell)
}

/// Works through a QP's send queue (the user doorbell, and the QP's send
/// task) for at most one [`RunBudget`], then leaves the rest to the send
/// task. RC QPs have their own engine (`rc`).
pub fn process_sq(dev: &Device<Rrxe>, qp: &Arc<QpShared>, runner: Runner) -> Result {
    // An XRC target QP has no send queue.
    if qp.ty == QpType::XrcTgt {
        return Err(EINVAL);
    }
    {
        let mut g = qp.inner.lock();
        match g.attrs.state {
            QpState::Rts => {}
            QpState::Err => {
                qp::flush(qp, &mut g);
                drop(g);
                qp::flush_rest(qp);
                return Ok(());
            }
            _ => return Err(EINVAL),
        }
    }
    let ty = qp.ty;
    let mut budget = RunBudget::begin();
    if qp.requester() {
        return rc::run(dev, qp, &mut budget);
    }
    // One doorbell at a time works through a QP's send queue.
    let mut bufs = qp.send_lock.lock();
    if qp.is_dead() {
        return Ok(());
    }
    let SendBufs {
        wqe: slot,
        payload,
        fault_wait_us,
    } = &mut *bufs;
    let geo = qp.inner.lock().sq.geometry();
    size_slot(qp, slot, geo.elem_size())?;
    // At most one ring's worth per doorbell: every WQE posted before it is
    // within that many, and a process that keeps moving its producer index
    // cannot keep the kernel here. Later WQEs have their own doorbell.
    for _ in 0..geo.slots() {
        crate::ib::cond_resched();
        if budget.spent() {
            qp.kick();
            break;
        }
        let (attrs, signaled, cons) = {
            let g = qp.inner.lock();
            if g.attrs.state != QpState::Rts || !g.sq.peek(0, slot) {
                break;
            }
            if runner == Runner::Doorbell && ty == QpType::Uc && long_uc(qp, slot) {
                drop(g);
                qp.kick();
                break;
            }
            (g.attrs, qp.sig_all, g.sq.consumer())
        };
        // Neither a doorbell nor the send task waits for a page fault: one
        // on a stalled file system may never end, and would keep the
        // process in the kernel, or hold the task that the destruction of
        // every QP waits for. The WQE stays in the ring until its memory is
        // in (see [`not_resident`]).
        if resident(dev, qp, slot, ty) == Err(EAGAIN) {
            not_resident(dev, qp, fault_wait_us);
            break;
        }
        {
            let mut g = qp.inner.lock();
            // Flushed meanwhile (the QP moved to ERR): done with.
            if g.sq.consumer() != cons || !g.sq.consume() {
                break;
            }
        }
        *fault_wait_us = FAULT_WAIT_FIRST_US;
        let (wc, sig) = if ty != QpType::Uc {
            ud::send_one(dev, qp, slot, payload, attrs.qkey)
        } else {
            uc::send_one(dev, qp, slot, &attrs)
        };
        dev.data().count_send_done(&wc);
        if wc.status != status::SUCCESS {
            // A failed WQE puts the QP in the error state and flushes the
            // rest, as rxe does. Its completion is posted under the QP's
            // lock with the move: a consumer that polls it and then queries
            // the QP finds it in ERR (as on hardware), since the query takes
            // that lock too.
            let mut g = qp.inner.lock();
            g.attrs.state = QpState::Err;
            qp.send_wc(&wc);
            qp::flush(qp, &mut g);
            drop(g);
            crate::rrxe::glue::test_hold(crate::rrxe::glue::Site::SendFailed);
            qp::flush_rest(qp);
            break;
        }
        if sig || signaled {
            qp.send_wc(&wc);
        }
    }
    Ok(())
}

/// The first wait of a send queue for on-demand memory; it doubles up to
/// [`FAULT_WAIT_MAX_US`] while the memory stays out.
const FAULT_WAIT_FIRST_US: u32 = 1000;
const FAULT_WAIT_MAX_US: u32 = 256_000;

/// Whether the payload of the UD or UC WQE in `slot` can be gathered now
/// (see [`sge::resident`]). Its pages could still go before the gather,
/// which does not wait either: the WQE then fails (`LOC_PROT_ERR`), as a
/// race its owner's memory pressure or its own unmapping loses.
fn resident(dev: &Device<Rrxe>, qp: &QpShared, slot: &[u8], ty: QpType) -> Result {
    let t = if ty == QpType::Uc {
        Transport::Uc
    } else {
        Transport::Ud
    };
    match wqe::parse_send(slot, t, qp.cap.max_send_sge, qp.cap.max_inline_data) {
        Ok(w) => sge::resident(dev.data(), qp.pd, slot, w.payload),
        // The send reports it.
        Err(_) => Ok(()),
    }
}

/// The WQE at the head of `qp`'s send queue names on-demand memory that
/// is not resident (its fault was started): the send task tries again
/// after `wait` microseconds, which doubles for the next time.
fn not_resident(dev: &Device<Rrxe>, qp: &Arc<QpShared>, wait: &mut u32) {
    let d = dev.data();
    d.count(Counter::OdpFaultDeferred, 1);
    rrxe_dbg!(
        d,
        Site::OdpFault,
        "qp {:#x}: payload memory not resident, sending in {} us",
        qp.qpn,
        *wait
    );
    rc::kick_later(qp, *wait);
    *wait = wait.saturating_mul(2).min(FAULT_WAIT_MAX_US);
}

/// Whether the UC WQE in `slot` carries more than [`DOORBELL_MSG_BYTES`].
fn long_uc(qp: &QpShared, slot: &[u8]) -> bool {
    wqe::parse_send(
        slot,
        Transport::Uc,
        qp.cap.max_send_sge,
        qp.cap.max_inline_data,
    )
    .is_ok_and(|w| w.payload.bytes() > DOORBELL_MSG_BYTES)
}

/// What a doorbell works in, under a QP's `send_lock`: the WQE copied out
/// of the ring, and (UD) a datagram's gathered payload. Both grow at first
/// use and are reused: no allocation per doorbell or per datagram.
pub struct SendBufs {
    /// The WQE.
    pub wqe: KVec<u8>,
    /// The payload of a UD datagram.
    pub payload: KVec<u8>,
    /// The next wait for on-demand memory, in microseconds (UD and UC).
    pub fault_wait_us: u32,
}

impl Default for SendBufs {
    fn default() -> Self {
        Self {
            wqe: KVec::new(),
            payload: KVec::new(),
            fault_wait_us: FAULT_WAIT_FIRST_US,
        }
    }
}

/// Makes `slot`, a buffer under `qp`'s `send_lock`, `len` bytes long:
/// allocated at the first doorbell (charged to `qp`'s owner), then reused.
pub(crate) fn size_slot(qp: &QpShared, slot: &mut KVec<u8>, len: usize) -> Result {
    if slot.len() != len {
        slot.clear();
        qp.charge.run(len, |gfp| Ok(slot.resize(len, 0u8, gfp)?))?;
    }
    Ok(())
}

/// Validates a send WQE copied out of `qp`'s send queue: the WQE with its
/// completion so far (id, QP, opcode), or the error completion to post.
pub(crate) fn take_send(
    qp: &QpShared,
    slot: &[u8],
    transport: Transport,
) -> Result<(wqe::SendWqe, Wc), Wc> {
    let mut wc = Wc {
        wr_id: wqe::wr_id(slot).unwrap_or(0),
        qp_num: qp.qpn,
        qp_cookie: qp.handle,
        ..Default::default()
    };
    match wqe::parse_send(slot, transport, qp.cap.max_send_sge, qp.cap.max_inline_data) {
        // Fast registration is for kernel consumers only.
        Ok(w) if w.opcode == wqe::Opcode::RegMr && !qp.kernel => Err(Wc {
            status: status::LOC_QP_OP_ERR,
            ..wc
        }),
        Ok(w) => {
            wc.opcode = w.opcode.wc_opcode();
            Ok((w, wc))
        }
        Err(wqe::WqeError::TooLong | wqe::WqeError::InlineTooLong) => Err(Wc {
            status: status::LOC_LEN_ERR,
            ..wc
        }),
        Err(_) => Err(Wc {
            status: status::LOC_QP_OP_ERR,
            ..wc
        }),
    }
}
