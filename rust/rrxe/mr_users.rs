// SPDX-License-Identifier: GPL-2.0

//! Who holds an MR besides its owner: the memory windows bound to it, and
//! the accesses to its memory under way. Deregistration is refused while
//! windows are bound and waits for the accesses.

use crate::pr_err_ratelimited;
use crate::rrxe::mr::RrxeMr;
use core::sync::atomic::{AtomicU32, Ordering};
use kernel::sync::Arc;

/// How many memory windows are bound to an MR, and whether the MR is
/// retired (deregistered, or replaced by a rereg), in one atomic: a bind
/// that counts a window and a deregistration that finds none cannot both
/// succeed, so no window is ever bound to a deregistered MR. The default:
/// none bound, not retired.
#[derive(Default)]
pub struct BoundMws(AtomicU32);

impl BoundMws {
    /// Set once the MR is retired; the count is in the other bits (never
    /// more than `MAX_MW` windows, far below it).
    const RETIRED: u32 = 1 << 31;

    /// Counts one more bound window; false, counting nothing, once the MR
    /// is retired.
    pub fn bind(&self) -> bool {
        self.0
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |v| {
                (v & Self::RETIRED == 0).then_some(v + 1)
            })
            .is_ok()
    }

    /// A window counted by [`Self::bind`] is unbound.
    pub fn unbind(&self) {
        self.0.fetch_sub(1, Ordering::Release);
    }

    /// Retires the MR (no bind counts a window from now on), unless windows
    /// are bound: then false, and nothing changes. A retired MR stays so.
    pub fn retire(&self) -> bool {
        self.0
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |v| {
                (v & !Self::RETIRED == 0).then_some(Self::RETIRED)
            })
            .is_ok()
    }

    /// Undoes [`Self::retire`] (a rereg that failed): binds count again.
    pub fn unretire(&self) {
        self.0.fetch_and(!Self::RETIRED, Ordering::Release);
    }

    /// Whether any window is bound.
    pub fn any(&self) -> bool {
        self.0.load(Ordering::Acquire) & !Self::RETIRED != 0
    }
}

/// The accesses under way to an MR's memory, and whether it takes new
/// ones, in one atomic: an access counted by [`Self::enter`] before the MR
/// was retired is waited for by [`Self::retire_and_wait`], one that comes
/// after is refused. So no copy reaches an MR's memory once
/// `ibv_dereg_mr` has returned (as rxe's deregistration waits for its
/// references), and the MR's memory (pinned pages, device memory and its
/// mmap entry) is released by the deregistration, in its owner's context,
/// never by the access that happened to be last.
pub struct Users(AtomicU32);

impl Users {
    /// Set while the MR takes new accesses; their count is in the other bits.
    const LIVE: u32 = 1 << 31;

    pub(crate) fn new() -> Self {
        Self(AtomicU32::new(Self::LIVE))
    }

    /// Counts one more access; false, counting nothing, once retired.
    pub(crate) fn enter(&self) -> bool {
        self.0
            .fetch_update(Ordering::Acquire, Ordering::Relaxed, |v| {
                (v & Self::LIVE != 0).then_some(v + 1)
            })
            .is_ok()
    }

    /// An access counted by [`Self::enter`] is over.
    pub(crate) fn leave(&self) {
        self.0.fetch_sub(1, Ordering::Release);
    }

    /// Takes no new access, and sleeps until those under way are over.
    /// Accesses are copies of at most a packet, or one page fault of an
    /// on-demand MR: the wait is short unless such a fault is stuck, which
    /// the log then says every ten seconds.
    pub(crate) fn retire_and_wait(&self, key: u32) {
        self.0.fetch_and(!Self::LIVE, Ordering::AcqRel);
        let mut naps = 0u32;
        while self.0.load(Ordering::Acquire) != 0 {
            naps = naps.wrapping_add(1);
            if naps % 50_000 == 0 {
                pr_err_ratelimited!(
                    "rrxe: deregistering MR {:#x}: waiting for an access under way\n",
                    key
                );
            }
            kernel::time::delay::fsleep(kernel::time::Delta::from_micros(200));
        }
    }
}

/// An MR found for one access of its memory: until this is dropped, the
/// MR's deregistration waits and its memory stays registered.
pub struct MrRef(core::mem::ManuallyDrop<Arc<RrxeMr>>);

impl MrRef {
    /// `mr` for an access, unless it is being deregistered.
    pub(crate) fn enter(mr: Arc<RrxeMr>) -> Option<Self> {
        mr.users
            .enter()
            .then(|| Self(core::mem::ManuallyDrop::new(mr)))
    }

    /// A reference to the MR that outlives the access (a window's binding:
    /// the MR's deregistration is refused while it exists).
    pub fn arc(&self) -> Arc<RrxeMr> {
        (*self.0).clone()
    }
}

impl core::ops::Deref for MrRef {
    type Target = RrxeMr;

    fn deref(&self) -> &RrxeMr {
        &self.0
    }
}

impl Drop for MrRef {
    fn drop(&mut self) {
        let users: *const Users = &self.0.users;
        // SAFETY: Dropped once, here; not used again.
        unsafe { core::mem::ManuallyDrop::drop(&mut self.0) };
        // The access is still counted: the deregistration has not returned,
        // so the core's reference (dropped after it) keeps the MR alive.
        // SAFETY: `users` is in that live MR; the dropped reference was not the last.
        unsafe { (*users).leave() };
    }
}
