// SPDX-License-Identifier: GPL-2.0

//! Memory regions: driver-allocated `ib_mr` objects with driver data.
//!
//! Unlike PDs and contexts, the core does not allocate MRs: the driver
//! returns a pointer to an `ib_mr` it allocated, and frees it in `dereg_mr`.
//! Here an MR is a `KBox<Mr<T>>` whose first field is the `ib_mr`.

use super::{bindings, device::Driver, object::Pd};
use kernel::{prelude::*, types::Opaque};

/// A memory region.
///
/// # Invariants
///
/// Allocated through an [`MrSlot`] as a `KBox`, handed to the core, and
/// freed only by the `dereg_mr` callback.
#[repr(C)]
pub struct Mr<T: Driver> {
    ib: Opaque<bindings::ib_mr>,
    data: T::Mr,
}

impl<T: Driver> Mr<T> {
    /// The driver's data.
    pub fn data(&self) -> &T::Mr {
        &self.data
    }

    /// # Safety
    ///
    /// `ptr` must come from [`MrSlot::fill`] for this `T` and not be freed.
    pub(crate) unsafe fn from_raw<'a>(ptr: *mut bindings::ib_mr) -> &'a Self {
        // SAFETY: The caller's promise.
        unsafe { &*ptr.cast::<Self>() }
    }

    /// # Safety
    ///
    /// `ptr` must come from [`MrSlot::fill`] for this `T`; it is freed.
    pub(crate) unsafe fn free(ptr: *mut bindings::ib_mr) {
        // SAFETY: The caller's promise; the box is reconstituted once.
        drop(unsafe { KBox::from_raw(ptr.cast::<Self>()) });
    }

    /// The address range the core recorded: `(iova, length)`.
    pub fn iova_length(&self) -> (u64, u64) {
        // SAFETY: Plain fields, set before the MR is visible.
        unsafe { ((*self.ib.get()).iova, (*self.ib.get()).length) }
    }

    /// The PD the core associated with the MR.
    pub fn pd(&self) -> &Pd<T> {
        // SAFETY: The core sets `pd` after creation and keeps it alive while
        // the MR exists.
        unsafe { Pd::from_raw((*self.ib.get()).pd) }
    }
}

/// Memory for an MR, allocated before the driver creates its data, so that
/// nothing can fail between the driver's success and the core owning the MR.
pub(crate) struct MrSlot<T: Driver>(KBox<core::mem::MaybeUninit<Mr<T>>>);

impl<T: Driver> MrSlot<T> {
    pub(crate) fn new() -> Result<Self> {
        Ok(Self(KBox::new_uninit(GFP_KERNEL)?))
    }

    /// Stores `data` with `key` as lkey and rkey and the address range
    /// (which the core overwrites for new user registrations), and returns
    /// the pointer the core expects.
    pub(crate) fn fill(
        self,
        data: T::Mr,
        key: u32,
        iova: u64,
        length: u64,
    ) -> *mut bindings::ib_mr {
        const { assert!(core::mem::offset_of!(Mr<T>, ib) == 0) };
        let mr = KBox::write(
            self.0,
            Mr {
                ib: Opaque::zeroed(),
                data,
            },
        );
        // SAFETY: Freshly initialised and ours.
        unsafe {
            let ib = mr.ib.get();
            (*ib).lkey = key;
            (*ib).rkey = key;
            (*ib).iova = iova;
            (*ib).length = length;
        }
        KBox::into_raw(mr).cast()
    }
}

/// What `reg_user_mr` was asked for.
#[derive(Clone, Copy, Debug)]
pub struct UserMrRequest {
    /// Start of the user buffer.
    pub start: u64,
    /// Length in bytes.
    pub length: u64,
    /// The address the region is known by (equal to `start` unless the
    /// application asks otherwise; 0 for zero-based regions).
    pub iova: u64,
    /// IB access flags.
    pub access: u32,
}

/// Which parts of an MR a rereg changes (`IB_MR_REREG_*`).
#[derive(Clone, Copy, Debug)]
pub struct ReregFlags {
    /// New address range and pages.
    pub translation: bool,
    /// New PD.
    pub pd: bool,
    /// New access flags.
    pub access: bool,
}

impl ReregFlags {
    pub(crate) fn from_raw(flags: u32) -> Self {
        Self {
            translation: flags & bindings::ib_mr_rereg_flags_IB_MR_REREG_TRANS != 0,
            pd: flags & bindings::ib_mr_rereg_flags_IB_MR_REREG_PD != 0,
            access: flags & bindings::ib_mr_rereg_flags_IB_MR_REREG_ACCESS != 0,
        }
    }
}

/// Kinds of fast-registration MR (`ib_alloc_mr`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FastRegType {
    /// `IB_MR_TYPE_MEM_REG`: pages of one size, no gaps.
    MemReg,
    /// `IB_MR_TYPE_SG_GAPS`: arbitrary scatterlists.
    SgGaps,
}

/// Reads `out.len()` bytes at a kernel consumer's DMA address. rrxe has no
/// DMA device (virtual DMA): `ib_dma_map_*` hands consumers CPU addresses,
/// which is what DMA MRs (`get_dma_mr`, kernel PDs only) are used with.
/// A bad address gives `EFAULT`, never a fault.
pub fn read_dma_addr(addr: u64, out: &mut [u8]) -> Result {
    // SAFETY: `out` is writable for its length; the source is probed
    // without faulting.
    let r = unsafe { bindings::rrxe_copy_from_kernel(out.as_mut_ptr().cast(), addr, out.len()) };
    if r != 0 {
        return Err(EFAULT);
    }
    Ok(())
}

/// Writes `src` at a kernel consumer's DMA address (see [`read_dma_addr`]).
///
/// # Safety
///
/// `addr..addr + src.len()` must be memory the kernel consumer mapped for
/// the device (`ib_dma_map_*`) and may be written: the kernel has no
/// exported non-faulting store to check it with.
pub unsafe fn write_dma_addr(addr: u64, src: &[u8]) -> Result {
    if addr.checked_add(src.len() as u64).is_none() {
        return Err(EFAULT);
    }
    // SAFETY: The caller's promise; `src` is readable for its length.
    unsafe { bindings::rrxe_copy_to_kernel(addr, src.as_ptr().cast(), src.len()) };
    Ok(())
}
