// SPDX-License-Identifier: GPL-2.0

//! Routes kept between the packets of a flow.

use crate::bindings;
use core::ptr::NonNull;
use kernel::prelude::*;

/// A flow's route, kept between packets (a `dst_cache`, per CPU).
///
/// The flow it routes (destination, source, TOS, netdev) must stay the
/// same until [`RouteCache::reset`]; the stack's own invalidations (a
/// routing change, the netdev going away) are noticed on the next packet,
/// and so is a packet with another source address.
///
/// # Invariants
///
/// `ptr` came from `rrxe_route_alloc` and is freed once, on drop.
pub struct RouteCache {
    ptr: NonNull<bindings::rrxe_route>,
}

// SAFETY: The cache is per CPU, and the C side disables BH around each use,
// so any number of threads may use one at once; reset is a single store.
unsafe impl Send for RouteCache {}
// SAFETY: See above.
unsafe impl Sync for RouteCache {}

impl RouteCache {
    /// An empty cache (it allocates per-CPU storage; may sleep), charged
    /// to the current memory cgroup (`__GFP_ACCOUNT`) when `account`.
    pub fn new(account: bool) -> Result<Self> {
        // SAFETY: No preconditions; null on failure.
        let ptr = unsafe { bindings::rrxe_route_alloc(account) };
        // INVARIANT: A fresh route from `rrxe_route_alloc`.
        NonNull::new(ptr).map(|ptr| Self { ptr }).ok_or(ENOMEM)
    }

    /// Forgets the cached route, when the flow changes. Any context.
    pub fn reset(&self) {
        // SAFETY: Live (the invariant); a reset is a single store.
        unsafe { bindings::rrxe_route_reset(self.ptr.as_ptr()) };
    }
}

impl Drop for RouteCache {
    fn drop(&mut self) {
        // SAFETY: Ours (the invariant), and with `&mut self` nobody else
        // uses it.
        unsafe { bindings::rrxe_route_free(self.ptr.as_ptr()) };
    }
}

impl RouteCache {
    /// The C cache, for [`super::skb::TxPacket::new`].
    pub(super) fn as_raw(&self) -> *mut bindings::rrxe_route {
        self.ptr.as_ptr()
    }
}
