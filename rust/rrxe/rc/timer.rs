// SPDX-License-Identifier: GPL-2.0

//! The RC requester's timers: the retransmit deadline and the end of an
//! RNR wait, both served by the QP's one hrtimer, which wakes the send
//! task.

use super::{complete_ready, state::Deadline, ReqState};
use crate::ib::{
    clock::{self, Mono},
    device::Device,
};
use crate::logic::{
    qp::{QpAttrs, QpState},
    rc::Backoff,
    uc::psn_add,
};
use crate::rrxe::stats::Counter;
use crate::rrxe::{debug::Site, device::Rrxe, qp::QpShared};
use crate::rrxe_dbg;
use kernel::{
    sync::Arc,
    time::{hrtimer::HrTimerPointer, Delta},
};

/// Starts the timer for the earliest of the retransmit deadline and the
/// end of an RNR wait, unless it already fires by then.
///
/// Deadlines are set from the coarse clock while the timer runs, from the
/// exact one otherwise, which a deadline set while no timer ran
/// ([`Deadline::After`]) is taken from here (see [`restart`]); the timer is
/// started for the exact time left.
///
/// Every handle stands for the QP's one timer, and dropping a handle
/// cancels the timer, whichever start it came from: an old handle is
/// dropped here, before the new start, under the `req` lock. The caller
/// holds no spinlock (the cancel may wait for a running callback).
pub(super) fn arm(qp: &Arc<QpShared>, rc: &mut ReqState) {
    // A QP being destroyed takes its timer out under this lock after
    // marking itself dead: never start it again.
    if qp.is_dead() {
        return;
    }
    // The exact clock, read once, and only when needed.
    let mut now = None;
    if let Deadline::After(d) = rc.deadline {
        let t = Mono::now();
        now = Some(t);
        rc.deadline = Deadline::At(t.after(d));
    }
    let deadline = match rc.deadline {
        Deadline::At(t) => Some(t),
        Deadline::Off | Deadline::After(_) => None,
    };
    let want = match (deadline, rc.rnr_until) {
        (Some(a), Some(b)) => a.min(b),
        (Some(a), None) | (None, Some(a)) => a,
        (None, None) => return,
    };
    if rc.timer.is_some() && rc.timer_at.is_some_and(|t| t <= want) {
        return;
    }
    drop(rc.take_timer());
    let now = now.unwrap_or_else(Mono::now);
    rc.timer = Some(qp.clone().start(now.until(want)));
    rc.timer_at = Some(want);
}

/// Runs `qp`'s send task in `us` microseconds: a UD or UC send queue that
/// waits for on-demand memory (the QP's one timer is RC's otherwise).
pub(crate) fn kick_later(qp: &Arc<QpShared>, us: u32) {
    let mut rc = qp.rc.req.lock();
    if qp.is_dead() {
        return;
    }
    drop(rc.take_timer());
    rc.timer = Some(qp.clone().start(Delta::from_micros(i64::from(us))));
}

/// The retransmit timer for `attrs`, after `backoff`.
fn ack_timeout(attrs: &QpAttrs, backoff: &Backoff) -> Option<Delta> {
    backoff
        .timeout_us(attrs.timeout)
        .map(|us| Delta::from_micros(us as i64))
}

/// `delta` from now. While the QP's timer runs (a stream, or a ping-pong: every
/// packet sent and every ACK restarts the deadline), from the coarse clock
/// (no clocksource read) plus a tick for its lag: about `delta`, as rxe's
/// timers in jiffies are, and up to the lag beyond a tick shorter when the
/// tick itself runs late. When no timer runs (the first packet after a
/// quiet spell, or a retransmission after an expiry), from the exact clock,
/// so that a timeout that nothing interrupts is never cut short by a late
/// tick ([`restart`] leaves that read to [`arm`], which starts the timer).
fn from_now(rc: &ReqState, delta: Delta) -> Mono {
    let now = if rc.timer.is_some() {
        Mono::coarse().after(clock::tick())
    } else {
        Mono::now()
    };
    now.after(delta)
}

/// Restarts the retransmit deadline from now (after a packet sent, or an
/// acknowledgement that made progress). While the timer runs, from the
/// coarse clock (see [`from_now`]); otherwise from the timer's start in the
/// [`arm`] that follows every restart, which reads the exact clock anyway:
/// the first packet after a quiet spell (each request of a ping-pong) is
/// not held up by a clocksource read, which under an emulator traps.
pub(super) fn restart(rc: &mut ReqState, attrs: &QpAttrs) {
    rc.deadline = match ack_timeout(attrs, &rc.backoff) {
        None => Deadline::Off,
        Some(d) if rc.timer.is_some() => Deadline::At(from_now(rc, d)),
        Some(d) => Deadline::After(d),
    };
}

/// Starts an RNR wait of `us` microseconds.
pub(super) fn rnr_wait(rc: &mut ReqState, us: u32) {
    rc.rnr_until = Some(from_now(rc, Delta::from_micros(i64::from(us))));
}

/// The timers: the end of an RNR wait resumes sending; a passed deadline
/// retransmits from the oldest unfinished WQE, or fails it once
/// `retry_cnt` retries are spent.
pub(super) fn tick(dev: &Device<Rrxe>, qp: &Arc<QpShared>) {
    // Nothing can be due before the timer fires: it is started for the
    // earliest deadline or earlier (see `arm`). The flag is read before the
    // lock, so that a doorbell finds nothing to do without taking it.
    if !qp.take_timer_fired() {
        return;
    }
    let d = dev.data();
    let mut rc = qp.rc.req.lock();
    // Its handle goes, under the lock (see `arm`); the caller's `arm`
    // starts the timer again for what is still ahead.
    drop(rc.take_timer());
    let now = Mono::now();
    let mut g = qp.inner.lock();
    if rc.rnr_until.is_some_and(|t| t <= now) {
        rc.rnr_until = None;
    }
    // A deadline set after the timer fired is not due (see `restart`).
    let due = matches!(rc.deadline, Deadline::At(t) if t <= now);
    if !due || g.attrs.state != QpState::Rts {
        return;
    }
    let cons = g.sq.consumer();
    let Some(k) = rc.win.oldest_outstanding(cons) else {
        rc.deadline = Deadline::Off;
        return;
    };
    // Silence until the timer: the QP's packets or their ACK were lost.
    rc.gate.lost();
    if rc.retry(cons, k, false, g.attrs.retry_cnt) {
        rc.backoff.on_expiry();
        if let Some(x) = rc.win.acked {
            rc.win.resume_at(cons, k, psn_add(x, 1));
        }
        d.count(Counter::CompRetry, 1);
        rrxe_dbg!(
            d,
            Site::Retry,
            "qp {:#x}: retransmit timer, resending",
            qp.qpn
        );
    } else {
        d.count(Counter::RetryExceeded, 1);
        rrxe_dbg!(
            d,
            Site::Retry,
            "qp {:#x}: retransmit timer, retries exhausted",
            qp.qpn
        );
        rc.deadline = Deadline::Off;
        complete_ready(d, qp, &mut rc, &mut g);
    }
}
