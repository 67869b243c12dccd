// SPDX-License-Identifier: GPL-2.0

//! Pinned user memory (`struct ib_umem`) and the pages behind it, and user
//! memory reached on demand (ODP), pinned only for the time of an access.

use super::{
    bindings,
    device::{Device, Driver},
};
use core::ptr::NonNull;
use kernel::{
    mm::{Mm, MmWithUser},
    prelude::*,
    sync::aref::ARef,
};

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
            let va = bindings::kmap_local_page(self.0.as_ptr()).cast::<u8>();
            core::ptr::copy_nonoverlapping(src.as_ptr(), va.add(off), src.len());
            bindings::kunmap_local(va.cast());
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
            let va = bindings::kmap_local_page(self.0.as_ptr()).cast::<u8>();
            core::ptr::copy_nonoverlapping(va.add(off), dst.as_mut_ptr(), dst.len());
            bindings::kunmap_local(va.cast());
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
        unsafe { bindings::ib_umem_offset(self.umem.as_ptr()) as usize }
    }

    /// The pinned pages, in order. They stay valid while `self` lives. The
    /// array is charged to the caller's memory cgroup, whose memory it maps.
    pub fn pages(&self) -> Result<KVVec<PageRef>> {
        // SAFETY: Valid by the invariant; the iterator walks the umem's own
        // scatter table, which does not change while we hold the umem.
        unsafe {
            let mut it: bindings::sg_page_iter = core::mem::zeroed();
            let sgt = &raw const (*self.umem.as_ptr()).sgt_append.sgt;
            let (sgl, nents) = ((*sgt).sgl, (*sgt).orig_nents);
            let mut v = KVVec::new();
            bindings::__sg_page_iter_start(&mut it, sgl, nents, 0);
            while bindings::__sg_page_iter_next(&mut it) {
                let pg = NonNull::new(bindings::sg_page_iter_page(&mut it)).ok_or(EFAULT)?;
                // INVARIANT: The page is pinned by this umem.
                v.push(PageRef(pg), GFP_KERNEL_ACCOUNT)?;
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

/// User memory of a process that is not pinned (on-demand paging): every
/// access resolves the addresses to the process's pages at that moment,
/// faulting them in, pins just those pages for the copy, and unpins them.
/// Pages the process dropped (`madvise(MADV_DONTNEED)`) or replaced
/// (`mmap` over them) are seen as the process sees them. Accesses sleep:
/// they run in process context only.
///
/// # Invariants
///
/// `mm` is the address space of the process that registered the memory;
/// `addr + len` does not overflow.
pub struct OdpUmem {
    mm: ARef<Mm>,
    addr: u64,
    len: u64,
}

/// Whether an access to on-demand memory may wait for a page fault.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Fault {
    /// It may: the caller can sleep for as long as the fault takes (a
    /// prefetch, or work that holds up nothing but its own QP).
    Wait,
    /// It may not: a page that is not ready (on a file whose read has to
    /// wait, or swapped out) or an address space whose lock is taken makes
    /// the access fail with `EAGAIN` instead. The fault is started, as a
    /// file system starts its read, and the caller tries again later. For
    /// work that would otherwise hold up other users of the device.
    NoWait,
}

/// How many pages one access pins at a time (an array on the stack).
const ODP_BATCH: usize = 16;

impl OdpUmem {
    /// `len` bytes at `addr` in the calling process's address space. The
    /// range need not be mapped yet. `EINVAL` for a kernel caller (no
    /// address space) or a range that wraps.
    pub fn current(addr: u64, len: u64) -> Result<Self> {
        if addr.checked_add(len).is_none() || usize::try_from(addr.wrapping_add(len)).is_err() {
            return Err(EINVAL);
        }
        let task = kernel::current!();
        let mm: &Mm = task.mm().ok_or(EINVAL)?;
        // INVARIANT: The caller's own address space; the range was checked.
        Ok(Self {
            mm: ARef::from(mm),
            addr,
            len,
        })
    }

    /// The first user address.
    pub fn addr(&self) -> u64 {
        self.addr
    }

    /// Copies `src` into the memory `off` bytes in, faulting pages in for
    /// writing. `EFAULT` if the range is outside, not mapped writable, or
    /// the process's address space is gone; `EAGAIN` if a page is not
    /// ready and `fault` says not to wait (some bytes may have been copied).
    pub fn write(&self, off: u64, src: &[u8], fault: Fault) -> Result {
        self.each_page(off, src.len(), true, fault, |page, at, pos| {
            // SAFETY: `each_page` holds a pin on `page` during the call.
            unsafe { page.write(at, &src[pos]) }
        })
    }

    /// Copies from the memory `off` bytes in into `dst` (see [`Self::write`]).
    pub fn read(&self, off: u64, dst: &mut [u8], fault: Fault) -> Result {
        self.each_page(off, dst.len(), false, fault, |page, at, pos| {
            // SAFETY: `each_page` holds a pin on `page` during the call.
            unsafe { page.read(at, &mut dst[pos]) }
        })
    }

    /// Faults in the `len` bytes at `off` (for writing if `write`), as a
    /// prefetch: nothing stays pinned. With [`Fault::NoWait`], `EAGAIN` if
    /// a page is not resident and its fault would wait (the fault is
    /// started).
    pub fn fault(&self, off: u64, len: u64, write: bool, fault: Fault) -> Result {
        let len = usize::try_from(len).map_err(|_| EFAULT)?;
        self.each_page(off, len, write, fault, |_, _, _| Ok(()))
    }

    /// Calls `visit(page, offset in page, range in the buffer)` for each piece
    /// of the `len` bytes at `off`, in order, with the page pinned for the
    /// call. The address space's lock is held only while pages are looked
    /// up and pinned, never during `visit`. With [`Fault::NoWait`] the lock is
    /// only tried, and a fault that would wait fails with `EAGAIN`.
    fn each_page(
        &self,
        off: u64,
        len: usize,
        write: bool,
        fault: Fault,
        mut visit: impl FnMut(PageRef, usize, core::ops::Range<usize>) -> Result,
    ) -> Result {
        let end = off.checked_add(len as u64).ok_or(EFAULT)?;
        if end > self.len {
            return Err(EFAULT);
        }
        if len == 0 {
            return Ok(());
        }
        // The process may have exited: its pages are gone with it.
        let mm = MmWithUser::into_mmput_async(self.mm.mmget_not_zero().ok_or(EFAULT)?);
        let nowait = fault == Fault::NoWait;
        let flags = if write { bindings::FOLL_WRITE } else { 0 }
            | if nowait { bindings::FOLL_NOWAIT } else { 0 };
        let psize = PAGE_SIZE as u64;
        let mut done = 0usize;
        while done < len {
            // By the invariant, `self.addr + end` does not overflow.
            let at = self.addr + off + done as u64;
            let first = at & !(psize - 1);
            let mut in_page = (at - first) as usize;
            let want = (in_page + (len - done)).div_ceil(PAGE_SIZE).min(ODP_BATCH);
            let mut pages = [core::ptr::null_mut::<bindings::page>(); ODP_BATCH];
            let got = {
                let _lock = if nowait {
                    mm.mmap_read_trylock().ok_or(EAGAIN)?
                } else {
                    mm.mmap_read_lock()
                };
                // SAFETY: `mm` has users (`mmget_not_zero`) and its mmap
                // lock is held, as `pin_user_pages_remote` needs without a
                // `locked` argument; `pages` has room for `want` pointers.
                unsafe {
                    bindings::pin_user_pages_remote(
                        mm.as_raw(),
                        first as c_ulong,
                        want as c_ulong,
                        flags as c_uint,
                        pages.as_mut_ptr(),
                        core::ptr::null_mut(),
                    )
                }
            };
            if got <= 0 {
                // A fault that would have waited: GUP pins nothing and
                // says so with 0 (or `-EBUSY`, `-EAGAIN`).
                // CAST: An errno fits any signed integer type.
                let busy =
                    [0, EBUSY.to_errno() as c_long, EAGAIN.to_errno() as c_long].contains(&got);
                return Err(if nowait && busy { EAGAIN } else { EFAULT });
            }
            let got = (got as usize).min(want);
            let mut r = Ok(());
            for p in &pages[..got] {
                let Some(page) = NonNull::new(*p) else {
                    r = Err(EFAULT);
                    break;
                };
                let k = (PAGE_SIZE - in_page).min(len - done);
                // INVARIANT: Pinned until the unpin below.
                r = visit(PageRef(page), in_page, done..done + k);
                if r.is_err() {
                    break;
                }
                done += k;
                in_page = 0;
            }
            // SAFETY: The first `got` entries were pinned by the call above
            // and are released once; written pages are marked dirty.
            unsafe {
                bindings::unpin_user_pages_dirty_lock(pages.as_mut_ptr(), got as c_ulong, write)
            };
            r?;
            // A prefetch may cover gigabytes.
            super::cond_resched();
        }
        Ok(())
    }
}
