// SPDX-License-Identifier: GPL-2.0

//! XRC domains: each is counted against the device's `limits::MAX_XRCD`
//! for as long as it lives.

use crate::ib::{device::Device, object::Xrcd, udata::Udata, xrcd::XrcdOps};
use crate::logic::limits;
use crate::rrxe::device::Rrxe;
use core::sync::atomic::Ordering;
use kernel::prelude::*;

/// An XRC domain. Processes may share it, and the last of them to close
/// it frees it: nothing here belongs to the process that made it.
pub struct RrxeXrcd;

#[vtable]
impl XrcdOps<Rrxe> for RrxeXrcd {
    fn alloc_xrcd(dev: &Device<Rrxe>, _udata: Option<&Udata>) -> Result<Self> {
        dev.data()
            .xrcd_count()
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                (n < limits::MAX_XRCD).then_some(n + 1)
            })
            .map_err(|_| ENOMEM)?;
        Ok(RrxeXrcd)
    }

    fn dealloc_xrcd(xrcd: &Xrcd<Rrxe>) {
        xrcd.device()
            .data()
            .xrcd_count()
            .fetch_sub(1, Ordering::Relaxed);
    }
}
