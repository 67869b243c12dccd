// SPDX-License-Identifier: GPL-2.0

//! User contexts and protection domains: a PD is counted against the
//! device's `max_pd` for as long as it lives, and objects name their PD by
//! its [`PdId`], which no later PD reuses.

use crate::ib::{
    device::Device,
    object::Pd,
    pd::{PdOps, UcontextOps},
    udata::Udata,
};
use crate::rrxe::device::Rrxe;
use core::sync::atomic::{AtomicU64, Ordering};
use kernel::prelude::*;

/// A user context. The objects of the process (rings, device memory) hold
/// their own mmap entries in it.
pub struct RrxeUcontext;

impl UcontextOps<Rrxe> for RrxeUcontext {
    fn alloc_ucontext(_dev: &Device<Rrxe>, _udata: Option<&Udata>) -> Result<Self> {
        Ok(RrxeUcontext)
    }
}

/// A protection domain's identity: unique for the module's lifetime. A QP
/// that another thread still holds after its destruction keeps its PD's
/// identity, and a PD allocated later at the same address must not share
/// it (an address as identity let such a QP accept the new PD's keys).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PdId(u64);

impl PdId {
    /// No PD's: an XRC target QP's, which has none. No MR, MW or AH
    /// matches it (PDs are numbered from 1).
    pub const NONE: Self = Self(0);

    /// The number behind it, for code that keeps it without the type.
    pub(crate) const fn raw(self) -> u64 {
        self.0
    }

    /// The PD numbered `n` by [`PdId::raw`].
    pub(crate) const fn from_raw(n: u64) -> Self {
        Self(n)
    }
}

/// The next PD's identity (64 bits: never wraps in practice).
static NEXT_PD_ID: AtomicU64 = AtomicU64::new(1);

/// A protection domain: counted against the device's `max_pd` from
/// `alloc_pd` to `dealloc_pd`.
pub struct RrxePd {
    id: PdId,
}

/// The identity of `pd`.
pub fn pd_id(pd: &Pd<Rrxe>) -> PdId {
    pd.data().id
}

impl PdOps<Rrxe> for RrxePd {
    fn alloc_pd(dev: &Device<Rrxe>, _udata: Option<&Udata>) -> Result<Self> {
        let d = dev.data();
        d.pd_count()
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                (n < d.attrs().max_pd).then_some(n + 1)
            })
            .map_err(|_| ENOMEM)?;
        Ok(RrxePd {
            id: PdId(NEXT_PD_ID.fetch_add(1, Ordering::Relaxed)),
        })
    }

    fn dealloc_pd(pd: &Pd<Rrxe>) {
        pd.device()
            .data()
            .pd_count()
            .fetch_sub(1, Ordering::Relaxed);
    }
}
