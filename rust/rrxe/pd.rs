// SPDX-License-Identifier: GPL-2.0

//! User contexts and protection domains: a PD is counted against the
//! device's `max_pd` for as long as it lives.

use crate::ib::{
    device::Device,
    object::Pd,
    pd::{PdOps, UcontextOps},
    udata::Udata,
};
use crate::rrxe::device::Rrxe;
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

/// A protection domain: counted against the device's `max_pd` from
/// `alloc_pd` to `dealloc_pd`.
pub struct RrxePd;

impl PdOps<Rrxe> for RrxePd {
    fn alloc_pd(dev: &Device<Rrxe>, _udata: Option<&Udata>) -> Result<Self> {
        let d = dev.data();
        d.pd_count()
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                (n < d.attrs().max_pd).then_some(n + 1)
            })
            .map_err(|_| ENOMEM)?;
        Ok(RrxePd)
    }

    fn dealloc_pd(pd: &Pd<Rrxe>) {
        pd.device()
            .data()
            .pd_count()
            .fetch_sub(1, Ordering::Relaxed);
    }
}
