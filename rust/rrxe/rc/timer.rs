// SPDX-License-Identifier: GPL-2.0

//! The RC requester's timers: the retransmit deadline and the end of an
//! RNR wait, both served by the QP's one hrtimer, which wakes the send
//! task.

use super::{complete_ready, ReqState};
use crate::ib::{
    clock::{self, Mono},
    device::Device,
    stats::Counter,
};
use crate::logic::{
    qp::{QpAttrs, QpState},
    rc::Backoff,
    uc::psn_add,
};
use crate::rrxe::{device::Rrxe, qp::QpShared};
use kernel::{
    sync::Arc,
    time::{hrtimer::HrTimerPointer, Delta},
};

/// Starts the timer for the earliest of the retransmit deadline and the
/// end of an RNR wait, unless it already fires by then.
///
/// Deadlines are set from the coarse clock while the timer runs, from the
/// exact one otherwise (see [`from_now`]); the timer is started for the
/// exact time left.
///
/// Every handle stands for the QP's one timer, and dropping a handle
/// cancels the timer, whichever start it came from: an old handle is
/// dropped here, before the new start, under the `req` lock. The caller
/// holds no spinlock (the cancel may wait for a running callback).
pub(super) fn arm(s: &Arc<QpShared>, rc: &mut ReqState) {
    // A QP being destroyed takes its timer out under this lock after
    // marking itself dead: never start it again.
    if s.is_dead() {
        return;
    }
    let want = match (rc.deadline, rc.rnr_until) {
        (Some(a), Some(b)) => a.min(b),
        (Some(a), None) | (None, Some(a)) => a,
        (None, None) => return,
    };
    if rc.timer.is_some() && rc.timer_at.is_some_and(|t| t <= want) {
        return;
    }
    drop(rc.take_timer());
    rc.timer = Some(s.clone().start(Mono::now().until(want)));
    rc.timer_at = Some(want);
}

/// The retransmit timer for QP attributes `a`, after the backoff `b`.
fn ack_timeout(a: &QpAttrs, b: &Backoff) -> Option<Delta> {
    b.timeout_us(a.timeout)
        .map(|us| Delta::from_micros(us as i64))
}

/// `d` from now. While the QP's timer runs (a stream, or a ping-pong: every
/// packet sent and every ACK restarts the deadline), from the coarse clock
/// (no clocksource read) plus a tick for its lag: about `d`, as rxe's
/// timers in jiffies are, and up to the lag beyond a tick shorter when the
/// tick itself runs late. When no timer runs (the first packet after a
/// quiet spell, or a retransmission after an expiry), from the exact clock:
/// [`arm`] reads it to start the timer anyway, and a timeout that nothing
/// interrupts is then never cut short by a late tick.
fn from_now(rc: &ReqState, d: Delta) -> Mono {
    let now = if rc.timer.is_some() {
        Mono::coarse().after(clock::tick())
    } else {
        Mono::now()
    };
    now.after(d)
}

/// Restarts the retransmit deadline from now (after a packet sent, or an
/// acknowledgement that made progress).
pub(super) fn restart(rc: &mut ReqState, a: &QpAttrs) {
    rc.deadline = ack_timeout(a, &rc.backoff).map(|d| from_now(rc, d));
}

/// Starts an RNR wait of `us` microseconds.
pub(super) fn rnr_wait(rc: &mut ReqState, us: u32) {
    rc.rnr_until = Some(from_now(rc, Delta::from_micros(i64::from(us))));
}

/// The timers: the end of an RNR wait resumes sending; a passed deadline
/// retransmits from the oldest unfinished WQE, or fails it once
/// `retry_cnt` retries are spent.
pub(super) fn tick(dev: &Device<Rrxe>, s: &Arc<QpShared>) {
    let d = dev.data();
    let mut rc = s.rc.req.lock();
    // Nothing can be due before the timer fires: it is started for the
    // earliest deadline or earlier (see `arm`).
    if !s.take_timer_fired() {
        return;
    }
    // Its handle goes, under the lock (see `arm`); the caller's `arm`
    // starts the timer again for what is still ahead.
    drop(rc.take_timer());
    let now = Mono::now();
    let mut g = s.inner.lock();
    if rc.rnr_until.is_some_and(|t| t <= now) {
        rc.rnr_until = None;
    }
    if rc.deadline.is_none_or(|t| t > now) || g.attrs.state != QpState::Rts {
        return;
    }
    let cons = g.sq.consumer();
    let Some(k) = rc.win.oldest_outstanding(cons) else {
        rc.deadline = None;
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
    } else {
        d.count(Counter::RetryExceeded, 1);
        rc.deadline = None;
        complete_ready(d, s, &mut rc, &mut g);
    }
}
