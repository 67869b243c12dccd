// SPDX-License-Identifier: GPL-2.0

//! Device memory: kernel pages a process maps and registers as zero-based
//! MRs. Each device has `dm_size` bytes of it (module parameter, read when
//! the device is created), charged in whole pages.
//!
//! After `dealloc_dm`, the process's existing mapping keeps its pages (the
//! core frees them when the mapping goes) but they belong to nothing: no MR
//! can name them and the offset can no longer be mapped.

use crate::ib::{
    dm::{Dm, DmMrRequest, DmOps, DmRequest},
    memcg::Charge,
    mmap::UserMmapEntry,
    object::{Pd, Ucontext},
};
use crate::logic::{access, bounds::Range, dm};
use crate::rrxe::{
    device::Rrxe,
    mr::{self, MrMem, RrxeMr},
};
use core::sync::atomic::{AtomicU64, Ordering};
use kernel::{page::PAGE_SHIFT, prelude::*, sync::Arc};

/// The memory of one DM allocation.
///
/// # Invariants
///
/// `charged` bytes are counted in `used` (the device's `dm_used`) while
/// this exists; the mmap entry's buffer is at least `len` bytes.
pub struct DmMem {
    entry: UserMmapEntry,
    len: u64,
    charged: u64,
    used: Arc<AtomicU64>,
}

impl DmMem {
    /// The allocation's length as requested.
    pub fn length(&self) -> u64 {
        self.len
    }

    /// The kernel address of byte `off`, for `len` bytes within the memory.
    /// Userspace may write the memory at any time, so the bytes are only
    /// ever copied, never referenced.
    pub fn ptr(&self, off: u64, len: usize) -> Result<*mut u8> {
        let end = off.checked_add(len as u64).ok_or(EFAULT)?;
        if end > self.len {
            return Err(EFAULT);
        }
        // CAST: `off < len <= buffer length`, which fits in `usize`.
        // SAFETY: In bounds of the buffer (the type invariant).
        Ok(unsafe { self.entry.as_ptr().add(off as usize) })
    }
}

impl Drop for DmMem {
    fn drop(&mut self) {
        self.used.fetch_sub(self.charged, Ordering::Relaxed);
    }
}

/// A device memory allocation as the core holds it.
pub struct RrxeDm {
    /// Shared with the MRs registered on it.
    pub mem: Arc<DmMem>,
}

#[vtable]
impl DmOps<Rrxe> for RrxeDm {
    const MMAP_OFFSET_ATTR: u16 = crate::rrxe::glue::ALLOC_DM_RESP_MMAP_OFFSET;

    /// `alloc_dm`: reserves `req.length` bytes (rounded up to pages) of the
    /// device's memory and makes them mappable by the calling process. Returns
    /// the mmap offset.
    fn alloc_dm(uc: &Ucontext<Rrxe>, req: DmRequest) -> Result<(RrxeDm, u64)> {
        let dev = uc.device().data();
        let max = dev.max_dm_size();
        let charged =
            dm::charge(req.length, req.log_align, max, PAGE_SHIFT as u32).map_err(|e| match e {
                dm::DmError::Off => EOPNOTSUPP,
                dm::DmError::Invalid => EINVAL,
            })?;
        dev.dm_used()
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |used| {
                dm::reserve(used, charged, max)
            })
            .map_err(|_| ENOMEM)?;
        // CAST: `charged <= max <= MAX_DM_SIZE`, which fits in `usize`.
        let entry = match UserMmapEntry::new(uc, charged as usize) {
            Ok(e) => e,
            Err(e) => {
                dev.dm_used().fetch_sub(charged, Ordering::Relaxed);
                return Err(e);
            }
        };
        let offset = entry.offset();
        if let Err(e) = Charge::current().room(0) {
            dev.dm_used().fetch_sub(charged, Ordering::Relaxed);
            return Err(e);
        }
        // INVARIANT: `charged` was reserved above; the buffer holds `charged`
        // bytes, at least `length`.
        let mem = DmMem {
            entry,
            len: req.length,
            charged,
            used: dev.dm_used().clone(),
        };
        Ok((
            RrxeDm {
                mem: Arc::new(mem, GFP_KERNEL_ACCOUNT)?,
            },
            offset,
        ))
    }

    /// `reg_dm_mr`: a zero-based MR over `[offset, offset + length)` of `dm`.
    /// A zero length is allowed (the core allows it; the region then answers
    /// to no address).
    fn reg_dm_mr(pd: &Pd<Rrxe>, dm: &Dm<Rrxe>, req: DmMrRequest) -> Result<(Arc<RrxeMr>, u32)> {
        access::check_kernel_mr_access(req.access).map_err(mr::access_err)?;
        if req.access & access::ZERO_BASED == 0 {
            return Err(EINVAL);
        }
        let mem = &dm.data().mem;
        // The core checked this; the copies below rely on it, so check again.
        let end = req.offset.checked_add(req.length).ok_or(EINVAL)?;
        if end > mem.length() {
            return Err(EINVAL);
        }
        let range = Range::new(0, req.length).ok_or(EINVAL)?;
        let backing = MrMem::Dm {
            mem: mem.clone(),
            offset: req.offset,
        };
        let backing = Arc::new(backing, GFP_KERNEL_ACCOUNT)?;
        mr::insert_mr(pd, req.access, range, backing, GFP_KERNEL_ACCOUNT)
    }
}
