// SPDX-License-Identifier: GPL-2.0

//! Kernel memory mapped into a user context through the core's mmap entries.
//!
//! A [`UserMmapEntry`] owns a zeroed vmalloc buffer, charged to the memory
//! cgroup of the process that asked for it (`GFP_KERNEL_ACCOUNT`: rings
//! of up to a gigabyte each are the user's memory, not the host's), and
//! registers it
//! with the core (`rdma_user_mmap_entry_insert`), which hands out a unique
//! page offset per entry. The provider reports that offset to userspace,
//! which mmaps it. The buffer lives until the last of the owning object and
//! every mapping is gone: dropping the entry removes it from the context's
//! table, and the core calls `mmap_free` once the last mapping closes.

use super::{bindings, device::Driver, memcg::Charge, object::Ucontext};
use core::ptr::NonNull;
use kernel::{error::from_result, prelude::*};

/// The C entry plus what we need to free it.
#[repr(C)]
struct Entry {
    core: bindings::rdma_user_mmap_entry,
    buf: *mut c_void,
    len: usize,
}

/// Kernel memory that a user context may map.
///
/// # Invariants
///
/// `entry` points to an `Entry` inserted in a context's mmap table, with
/// `buf` a zeroed vmalloc buffer of `len` bytes. This object holds the
/// table's reference; the memory is freed by `mmap_free_callback` when the
/// last reference (ours or a mapping's) is dropped.
pub struct UserMmapEntry {
    entry: NonNull<Entry>,
}

// SAFETY: The entry is reference-counted by the core and the buffer is
// plain memory; the handle can move between threads.
unsafe impl Send for UserMmapEntry {}
// SAFETY: Shared access only reads immutable fields.
unsafe impl Sync for UserMmapEntry {}

impl UserMmapEntry {
    /// Allocates `len` bytes (rounded up to pages) mappable by `uc`'s process.
    pub fn new<T: Driver>(uc: &Ucontext<T>, len: usize) -> Result<Self> {
        let len = len
            .checked_next_multiple_of(kernel::page::PAGE_SIZE)
            .ok_or(EINVAL)?;
        if len == 0 {
            return Err(EINVAL);
        }
        // SAFETY: Allocates zeroed memory charged to the caller's memory
        // cgroup, or returns null (past the cgroup's limit, or when memory
        // is short: never the OOM killer).
        let buf = unsafe {
            bindings::__vmalloc(
                len as c_ulong,
                bindings::GFP_KERNEL_ACCOUNT
                    | bindings::__GFP_ZERO
                    | bindings::__GFP_RETRY_MAYFAIL
                    | bindings::__GFP_NOWARN,
            )
        };
        if buf.is_null() {
            return Err(ENOMEM);
        }
        // The entry is charged too, once the cgroup has room for it.
        let charge = Charge::current();
        if let Err(e) = charge.room(0) {
            // SAFETY: `buf` came from vmalloc and is unused.
            unsafe { bindings::vfree(buf) };
            return Err(e);
        }
        let e = match KBox::new(
            Entry {
                // SAFETY: All-zero is the expected initial state.
                core: unsafe { core::mem::zeroed() },
                buf,
                len,
            },
            charge.gfp(),
        ) {
            Ok(e) => KBox::into_raw(e),
            Err(_) => {
                // SAFETY: `buf` came from vmalloc and is unused.
                unsafe { bindings::vfree(buf) };
                return Err(ENOMEM);
            }
        };
        // SAFETY: `e` is a valid boxed entry; `uc` is a live context.
        let r =
            unsafe { bindings::rdma_user_mmap_entry_insert(uc.as_raw(), &raw mut (*e).core, len) };
        if r != 0 {
            // SAFETY: Not inserted, so still solely ours.
            unsafe {
                bindings::vfree(buf);
                drop(KBox::from_raw(e));
            }
            return Err(Error::from_errno(r));
        }
        // INVARIANT: Inserted, holding the table reference.
        // SAFETY: `e` is non-null (from `KBox::into_raw`).
        let entry = unsafe { NonNull::new_unchecked(e) };
        Ok(Self { entry })
    }

    /// The offset userspace passes to `mmap`.
    pub fn offset(&self) -> u64 {
        // SAFETY: Inserted by the invariant; `start_pgoff` is fixed then.
        unsafe { ((*self.entry.as_ptr()).core.start_pgoff as u64) << kernel::page::PAGE_SHIFT }
    }

    /// The mapping's length in bytes.
    pub fn len(&self) -> usize {
        // SAFETY: Fixed at creation.
        unsafe { (*self.entry.as_ptr()).len }
    }

    /// Whether the mapping is empty (never: entries have at least a page).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The kernel address of the buffer. Userspace may write to it at any
    /// time: access it only through volatile or atomic operations.
    pub fn as_ptr(&self) -> *mut u8 {
        // SAFETY: Fixed at creation.
        unsafe { (*self.entry.as_ptr()).buf.cast() }
    }
}

impl Drop for UserMmapEntry {
    fn drop(&mut self) {
        // SAFETY: Removes our table reference; the core frees through
        // `mmap_free_callback` when no mapping is left.
        unsafe { bindings::rdma_user_mmap_entry_remove(&raw mut (*self.entry.as_ptr()).core) };
    }
}

/// The `mmap` op: maps the entry whose offset userspace passed.
///
/// # Safety
///
/// The arguments of the core's `mmap` call: a live context and the VMA
/// being set up, for the call.
pub(crate) unsafe extern "C" fn mmap_callback(
    uc: *mut bindings::ib_ucontext,
    vma: *mut bindings::vm_area_struct,
) -> c_int {
    from_result(|| {
        // SAFETY: The core passes a live context and VMA; the lookup checks
        // that the VMA's size matches the entry and takes a reference.
        let core = unsafe { bindings::rdma_user_mmap_entry_get(uc, vma) };
        if core.is_null() {
            return Err(EINVAL);
        }
        let e = core.cast::<Entry>();
        // SAFETY: Entries in the table are ours (`Entry` starts with the C
        // entry), and the lookup's reference keeps this one alive.
        let r = unsafe { map_pages(vma, (*e).buf, (*e).len) };
        // SAFETY: Drops the lookup's reference; the mapping keeps its own.
        unsafe { bindings::rdma_user_mmap_entry_put(core) };
        r?;
        Ok(0)
    })
}

/// Inserts the pages of vmalloc buffer `buf` (`len` bytes) into `vma`, as
/// `remap_vmalloc_range` does for `vmalloc_user` memory: each page holds a
/// reference of the mapping's, and the VMA can neither grow nor be dumped.
///
/// # Safety
///
/// `vma` is a VMA being set up by an `mmap` call, and `buf` a live vmalloc
/// buffer of `len` bytes (a multiple of the page size).
unsafe fn map_pages(vma: *mut bindings::vm_area_struct, buf: *mut c_void, len: usize) -> Result {
    // SAFETY: `vma` is valid for the call, and the mmap lock held, by the
    // caller's promise.
    let area = unsafe { kernel::mm::virt::VmaRef::from_raw(vma) };
    let (start, end) = (area.start(), area.end());
    let size = end.checked_sub(start).ok_or(EINVAL)?;
    if size > len {
        return Err(EINVAL);
    }
    // SAFETY: As above; the mmap lock is held by the caller.
    unsafe { bindings::vm_flags_set(vma, bindings::VM_DONTEXPAND | bindings::VM_DONTDUMP) };
    let mut off = 0;
    while off < size {
        // SAFETY: `off < len`: the address is within the vmalloc buffer.
        let page = unsafe { bindings::vmalloc_to_page(buf.cast::<u8>().add(off).cast()) };
        // SAFETY: `page` is a page of the buffer, which the mapping's
        // reference keeps; the address is within the VMA.
        let r = unsafe { bindings::vm_insert_page(vma, start + off as c_ulong, page) };
        kernel::error::to_result(r)?;
        off += kernel::page::PAGE_SIZE;
    }
    Ok(())
}

/// The `mmap_free` op: the last reference to an entry is gone.
///
/// # Safety
///
/// `core` must be an entry of a [`UserMmapEntry`], passed by the core once,
/// after its last reference is dropped.
pub(crate) unsafe extern "C" fn mmap_free_callback(core: *mut bindings::rdma_user_mmap_entry) {
    let e = core.cast::<Entry>();
    // SAFETY: Called once per entry, after every reference dropped; the
    // entry and its buffer came from `UserMmapEntry::new`.
    unsafe {
        bindings::vfree((*e).buf);
        drop(KBox::from_raw(e));
    }
}
