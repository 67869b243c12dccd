// SPDX-License-Identifier: GPL-2.0

//! XRC domains: each is counted against the device's `limits::MAX_XRCD`
//! for as long as it lives, and known to its SRQs and target QPs by an
//! identity no later domain shares.

use crate::ib::{device::Device, object::Xrcd, udata::Udata, xrcd::XrcdOps};
use crate::logic::limits;
use crate::rrxe::device::Rrxe;
use core::sync::atomic::{AtomicU64, Ordering};
use kernel::prelude::*;

/// An XRC domain's identity: unique for the module's lifetime (an SRQ or
/// QP that another thread still holds after its domain went keeps the
/// identity, and a later domain must not match it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct XrcdId(u64);

/// The next domain's identity (64 bits: never wraps in practice).
static NEXT_XRCD_ID: AtomicU64 = AtomicU64::new(1);

/// An XRC domain. Processes may share it, and the last of them to close
/// it frees it: nothing here belongs to the process that made it.
pub struct RrxeXrcd {
    id: XrcdId,
}

/// The identity of `xrcd`.
pub fn xrcd_id(xrcd: &Xrcd<Rrxe>) -> XrcdId {
    xrcd.data().id
}

#[vtable]
impl XrcdOps<Rrxe> for RrxeXrcd {
    fn alloc_xrcd(dev: &Device<Rrxe>, _udata: Option<&Udata>) -> Result<Self> {
        dev.data()
            .xrcd_count()
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                (n < limits::MAX_XRCD).then_some(n + 1)
            })
            .map_err(|_| ENOMEM)?;
        Ok(RrxeXrcd {
            id: XrcdId(NEXT_XRCD_ID.fetch_add(1, Ordering::Relaxed)),
        })
    }

    fn dealloc_xrcd(xrcd: &Xrcd<Rrxe>) {
        xrcd.device()
            .data()
            .xrcd_count()
            .fetch_sub(1, Ordering::Relaxed);
    }
}
