// SPDX-License-Identifier: GPL-2.0

//! The coarse monotonic clock (`ktime_get_coarse`): the time of the last
//! tick, read from memory without touching the clocksource. Deadlines that
//! are restarted with every packet (a retransmit timer) need no better
//! than a tick, and reading the clocksource for each packet costs: under a
//! hypervisor that falls back to an emulated HPET, a read is a trap into
//! the emulator (5% of a doorbell's time in rrxe's ping-pong, measured).

use super::bindings;
use kernel::time::Delta;

/// An instant of the coarse monotonic clock. It lags the monotonic clock
/// (`Instant<Monotonic>`) by less than [`tick`], and both count from boot.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Coarse(i64);

/// How far the coarse clock can lag: one tick (`TICK_NSEC`).
pub fn tick() -> Delta {
    // SAFETY: Returns a constant.
    Delta::from_nanos(unsafe { bindings::rrxe_tick_nsec() })
}

impl Coarse {
    /// Now, to the last tick.
    pub fn now() -> Self {
        // SAFETY: Reads the timekeeper's last update, in any context.
        Self(unsafe { bindings::rrxe_ktime_get_coarse() })
    }

    /// `d` after `self` (saturating).
    pub fn after(self, d: Delta) -> Self {
        Self(self.0.saturating_add(d.as_nanos()))
    }

    /// A deadline at least `d` from now on the monotonic clock: the coarse
    /// reading may be a tick behind it, so a tick is added.
    pub fn deadline(d: Delta) -> Self {
        Self::now().after(d).after(tick())
    }

    /// How long from `self` until `later` (zero if it is not later).
    pub fn until(self, later: Self) -> Delta {
        Delta::from_nanos(later.0.saturating_sub(self.0).max(0))
    }
}
