// SPDX-License-Identifier: GPL-2.0

//! Instants of the monotonic clock, read exactly (`ktime_get`, from the
//! clocksource) or coarsely (`ktime_get_coarse`: the time of the last
//! tick, read from memory). Deadlines that are restarted with every packet
//! (a retransmit timer) need no better than a tick, and reading the
//! clocksource for each packet costs: under a hypervisor that falls back
//! to an emulated HPET, a read is a trap into the emulator.
//!
//! The coarse reading lags the exact one by about a tick, but by more when
//! the tick itself is late (a busy host under an emulator): it is not a
//! bound to rely on. Decide that a deadline has passed with an exact
//! reading.

use super::bindings;
use kernel::time::Delta;

/// An instant of the monotonic clock, in nanoseconds since boot.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Mono(i64);

/// The clock's tick (`TICK_NSEC`).
pub fn tick() -> Delta {
    Delta::from_nanos(bindings::TICK_NSEC.into())
}

impl Mono {
    /// Now, exactly (a clocksource read).
    pub fn now() -> Self {
        // SAFETY: Reads the monotonic clock, in any context.
        Self(unsafe { bindings::ktime_get() })
    }

    /// Now, to the last tick (never later than [`Mono::now`]).
    pub fn coarse() -> Self {
        // SAFETY: Reads the timekeeper's last update, in any context.
        Self(unsafe { bindings::ktime_get_coarse() })
    }

    /// `delay` after `self` (saturating).
    pub fn after(self, delay: Delta) -> Self {
        Self(self.0.saturating_add(delay.as_nanos()))
    }

    /// How long from `self` until `later` (zero if it is not later).
    pub fn until(self, later: Self) -> Delta {
        Delta::from_nanos(later.0.saturating_sub(self.0).max(0))
    }
}
