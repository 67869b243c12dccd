// SPDX-License-Identifier: GPL-2.0

//! Pinned user memory (`struct ib_umem`) and the pages behind it.

use super::{
    bindings,
    device::{Device, Driver},
};
use core::ptr::NonNull;
use kernel::prelude::*;

/// A page of memory that something else keeps alive (a [`Umem`] or the
/// kernel's own allocation), addressed for copies.
///
/// # Invariants
///
/// Points to a `struct page` that stays valid while its owner lives; the
/// owner is responsible for not using a `PageRef` beyond that.
#[derive(Clone, Copy)]
pub struct PageRef(NonNull<bindings::page>);

// SAFETY: A page pointer is a plain handle; copies map it locally.
unsafe impl Send for PageRef {}
// SAFETY: See above.
unsafe impl Sync for PageRef {}

/// The size of a page.
pub const PAGE_SIZE: usize = kernel::page::PAGE_SIZE;
/// log2 of [`PAGE_SIZE`].
pub const PAGE_SHIFT: u32 = kernel::page::PAGE_SHIFT as u32;

impl PageRef {
    /// Copies `src` into the page at `off`.
    ///
    /// # Safety
    ///
    /// The page must still be alive (see the type invariant).
    pub unsafe fn write(&self, off: usize, src: &[u8]) -> Result {
        if off > PAGE_SIZE || src.len() > PAGE_SIZE - off {
            return Err(EINVAL);
        }
        // SAFETY: The page is alive (caller); the local mapping covers one
        // page and the range was checked above.
        unsafe {
            let va = bindings::rrxe_kmap_local_page(self.0.as_ptr()).cast::<u8>();
            core::ptr::copy_nonoverlapping(src.as_ptr(), va.add(off), src.len());
            bindings::rrxe_kunmap_local(va.cast());
        }
        Ok(())
    }

    /// Copies from the page at `off` into `dst`.
    ///
    /// # Safety
    ///
    /// The page must still be alive (see the type invariant).
    pub unsafe fn read(&self, off: usize, dst: &mut [u8]) -> Result {
        if off > PAGE_SIZE || dst.len() > PAGE_SIZE - off {
            return Err(EINVAL);
        }
        // SAFETY: As in `write`.
        unsafe {
            let va = bindings::rrxe_kmap_local_page(self.0.as_ptr()).cast::<u8>();
            core::ptr::copy_nonoverlapping(va.add(off), dst.as_mut_ptr(), dst.len());
            bindings::rrxe_kunmap_local(va.cast());
        }
        Ok(())
    }
}

/// User memory pinned for RDMA.
///
/// # Invariants
///
/// `umem` came from a successful `ib_umem_get` and is released once, on drop.
pub struct Umem {
    umem: NonNull<bindings::ib_umem>,
}

// SAFETY: The umem is owned by this handle; release may happen on any
// thread in process context.
unsafe impl Send for Umem {}
// SAFETY: Shared access only reads immutable fields.
unsafe impl Sync for Umem {}

impl Umem {
    /// Pins `len` bytes of the calling process's memory at `addr`, with IB
    /// access flags `access` (writable when any write access is asked).
    pub fn get<T: Driver>(dev: &Device<T>, addr: u64, len: u64, access: u32) -> Result<Self> {
        let len = usize::try_from(len).map_err(|_| EINVAL)?;
        let addr = usize::try_from(addr).map_err(|_| EINVAL)?;
        // SAFETY: The device is alive; `ib_umem_get` validates the range and
        // returns a umem or an error pointer (`ib_umem_get_va`
        // without an attribute bundle).
        let p = unsafe {
            bindings::ib_umem_get_attr_or_va(
                dev.as_raw(),
                core::ptr::null(),
                0,
                addr as u64,
                len,
                access as c_int,
            )
        };
        let p = kernel::error::from_err_ptr(p)?;
        // INVARIANT: A valid umem from `ib_umem_get`.
        Ok(Self {
            umem: NonNull::new(p).ok_or(ENOMEM)?,
        })
    }

    /// Offset of the first byte within its first page.
    pub fn first_page_offset(&self) -> usize {
        // SAFETY: Valid by the invariant.
        unsafe { bindings::rrxe_umem_offset(self.umem.as_ptr()) as usize }
    }

    /// The pinned pages, in order. They stay valid while `self` lives.
    pub fn pages(&self) -> Result<KVVec<PageRef>> {
        // SAFETY: Valid by the invariant; the iterator walks the umem's own
        // scatter table, which does not change while we hold the umem.
        unsafe {
            let mut it: bindings::sg_page_iter = core::mem::zeroed();
            let sgl = bindings::rrxe_umem_sgl(self.umem.as_ptr());
            let nents = bindings::rrxe_umem_nents(self.umem.as_ptr());
            let mut v = KVVec::new();
            bindings::__sg_page_iter_start(&mut it, sgl, nents, 0);
            while bindings::__sg_page_iter_next(&mut it) {
                let pg = NonNull::new(bindings::rrxe_sg_page_iter_page(&mut it)).ok_or(EFAULT)?;
                // INVARIANT: The page is pinned by this umem.
                v.push(PageRef(pg), GFP_KERNEL)?;
            }
            Ok(v)
        }
    }
}

impl Drop for Umem {
    fn drop(&mut self) {
        // SAFETY: Released once (the invariant); the pages go back unpinned.
        unsafe { bindings::ib_umem_release(self.umem.as_ptr()) };
    }
}
