// SPDX-License-Identifier: GPL-2.0

//! User contexts and protection domains: a PD is counted against the
//! device's `max_pd` for as long as it lives.

use crate::ib::{
    device::Device,
    pd::{PdOps, UcontextOps},
    udata::Udata,
};
use crate::rrxe::device::{Rrxe, RrxeDev};
use core::sync::atomic::Ordering;
use kernel::prelude::*;

/// A user context. The objects of the process (rings, device memory) hold
/// their own mmap entries in it.
pub struct RrxeUcontext;

impl UcontextOps<Rrxe> for RrxeUcontext {
    fn alloc_ucontext(_dev: &Device<Rrxe>, _udata: Option<&Udata>) -> Result<Self> {
        Ok(RrxeUcontext)
    }
}

/// Counts a PD against the device's `max_pd` for as long as it lives.
pub struct PdGuard {
    dev: *const RrxeDev,
}

// SAFETY: `dev` points to device data that outlives every PD (the core
// destroys all objects before `dealloc_driver`), and is only read atomically.
unsafe impl Send for PdGuard {}
// SAFETY: See above.
unsafe impl Sync for PdGuard {}

impl PdOps<Rrxe> for PdGuard {
    fn alloc_pd(dev: &Device<Rrxe>, _udata: Option<&Udata>) -> Result<Self> {
        let d = dev.data();
        d.pd_count()
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                (n < d.attrs().max_pd).then_some(n + 1)
            })
            .map_err(|_| ENOMEM)?;
        Ok(Self { dev: d })
    }
}

impl Drop for PdGuard {
    fn drop(&mut self) {
        // SAFETY: The device data outlives its PDs (see the `Send` impl).
        unsafe { (*self.dev).pd_count().fetch_sub(1, Ordering::Relaxed) };
    }
}
