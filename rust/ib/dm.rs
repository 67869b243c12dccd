// SPDX-License-Identifier: GPL-2.0

//! Device memory: driver-allocated `ib_dm` objects with driver data.
//!
//! The core copies the requested length and alignment in, calls the
//! driver's `alloc_dm`, and then fills in the C object's `device`, `length`
//! and `uobject`. A device memory can be registered as a zero-based MR
//! (`reg_dm_mr`); the core counts such MRs and refuses to free the device
//! memory while any exist.
//!
//! Userspace reaches the memory by mmap: `alloc_dm` returns a page offset,
//! which this layer reports through the driver's attribute (u64) of the
//! DM alloc method ([`DmOps::MMAP_OFFSET_ATTR`]), declared in the
//! driver's uverbs tree ([`crate::ib::device::Driver::driver_def`]). The
//! offset stays in the object, right after the core's part
//! ([`Dm::MMAP_OFFSET_AT`]), where a driver's own uverbs method may read
//! it.

use super::{
    bindings,
    device::Driver,
    memcg::Charge,
    mr::MrSlot,
    object::{Pd, Ucontext},
};
use kernel::{prelude::*, types::Opaque};

/// The operations on device memory, implemented by the driver's DM data
/// ([`Driver::Dm`]). Dropping the data frees the device memory.
#[vtable]
pub trait DmOps<T: Driver>: Sized + Send + Sync {
    /// The driver-namespace id of the DM alloc method's attribute that
    /// returns the mmap offset, which the driver's uverbs tree declares
    /// (16 bits, as in `struct ib_uverbs_attr`). Used only when
    /// `alloc_dm` is implemented.
    const MMAP_OFFSET_ATTR: u16;

    /// New device memory for `uc`'s process; returns its data and the
    /// offset at which the process maps it (reported to userspace through
    /// the [`Self::MMAP_OFFSET_ATTR`] attribute).
    fn alloc_dm(_uc: &Ucontext<T>, _req: DmRequest) -> Result<(Self, u64)> {
        build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// Registers part of `dm` as a zero-based MR in `pd`; returns the MR's
    /// data and key. Only called when `alloc_dm` is implemented.
    fn reg_dm_mr(_pd: &Pd<T>, _dm: &Dm<T>, _req: DmMrRequest) -> Result<(T::Mr, u32)> {
        build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }
}

/// What `alloc_dm` was asked for.
#[derive(Clone, Copy, Debug)]
pub struct DmRequest {
    /// Length in bytes, as userspace passed it.
    pub length: u64,
    /// Required alignment of the start, as a power of two (`log_align_req`).
    pub log_align: u32,
}

/// What `reg_dm_mr` was asked for. The core has already checked that
/// `offset` and `length` lie within the device memory and that `access`
/// contains `IB_ACCESS_ZERO_BASED`.
#[derive(Clone, Copy, Debug)]
pub struct DmMrRequest {
    /// Offset of the region in the device memory.
    pub offset: u64,
    /// Length of the region.
    pub length: u64,
    /// IB access flags.
    pub access: u32,
}

/// A device memory allocation.
///
/// # Invariants
///
/// Allocated through [`DmSlot`] as a `KBox`, handed to the core, and freed
/// only by the `dealloc_dm` callback.
#[repr(C)]
pub struct Dm<T: Driver> {
    ib: Opaque<bindings::ib_dm>,
    mmap_offset: u64,
    data: T::Dm,
}

impl<T: Driver> Dm<T> {
    /// Where the mmap offset (a `u64`) lies in the object, which starts
    /// with the core's `struct ib_dm`: for C that reads it.
    pub const MMAP_OFFSET_AT: usize = core::mem::offset_of!(Self, mmap_offset);

    /// The driver's data.
    pub fn data(&self) -> &T::Dm {
        &self.data
    }

    /// # Safety
    ///
    /// `ptr` must come from [`DmSlot::fill`] for this `T` and not be freed.
    pub(crate) unsafe fn from_raw<'a>(ptr: *mut bindings::ib_dm) -> &'a Self {
        // SAFETY: The caller's promise.
        unsafe { &*ptr.cast::<Self>() }
    }

    /// # Safety
    ///
    /// `ptr` must come from [`DmSlot::fill`] for this `T`; it is freed.
    pub(crate) unsafe fn free(ptr: *mut bindings::ib_dm) {
        // SAFETY: The caller's promise; the box is reconstituted once.
        drop(unsafe { KBox::from_raw(ptr.cast::<Self>()) });
    }
}

/// Memory for a DM, allocated before the driver creates its data.
pub(crate) struct DmSlot<T: Driver>(KBox<core::mem::MaybeUninit<Dm<T>>>);

impl<T: Driver> DmSlot<T> {
    /// Charged to the caller's memory cgroup: device memory is a user's.
    pub(crate) fn new() -> Result<Self> {
        let charge = Charge::current();
        charge.room(0)?;
        Ok(Self(KBox::new_uninit(charge.gfp())?))
    }

    /// Stores `data` and returns the box, still owned by the caller until
    /// [`into_raw`](Self::into_raw) hands it to the core.
    pub(crate) fn fill(self, data: T::Dm, mmap_offset: u64) -> KBox<Dm<T>> {
        // The object starts with the core's part (see `MMAP_OFFSET_AT`).
        const { assert!(core::mem::offset_of!(Dm<T>, ib) == 0) };
        KBox::write(
            self.0,
            Dm {
                ib: Opaque::zeroed(),
                mmap_offset,
                data,
            },
        )
    }

    /// The pointer the core expects.
    pub(crate) fn into_raw(dm: KBox<Dm<T>>) -> *mut bindings::ib_dm {
        KBox::into_raw(dm).cast()
    }
}

/// The `alloc_dm` op.
///
/// # Safety
///
/// The arguments of the core's `alloc_dm` call on a device of `T`: a live
/// context of the device, the request the core copied in and the call's
/// attribute bundle, for the call.
pub(super) unsafe extern "C" fn alloc_dm_callback<T: Driver>(
    _ib: *mut bindings::ib_device,
    uc: *mut bindings::ib_ucontext,
    attr: *mut bindings::ib_dm_alloc_attr,
    attrs: *mut bindings::uverbs_attr_bundle,
) -> *mut bindings::ib_dm {
    let r: Result<*mut bindings::ib_dm> = (|| {
        // SAFETY: The core passes a live context of this device, the
        // request it copied in and the call's attribute bundle.
        let (uc, req) = unsafe {
            (
                Ucontext::<T>::from_raw(uc),
                DmRequest {
                    length: (*attr).length,
                    log_align: (*attr).alignment,
                },
            )
        };
        let slot = DmSlot::<T>::new()?;
        let (data, offset) = T::Dm::alloc_dm(uc, req)?;
        // Owned here until the core has it: dropping it frees the DM.
        let dm = slot.fill(data, offset);
        // SAFETY: `attrs` is the bundle of this DM_ALLOC call, whose
        // method carries the attribute (declared with the ops).
        let r = unsafe {
            bindings::uverbs_copy_to(
                attrs,
                <T::Dm as DmOps<T>>::MMAP_OFFSET_ATTR.into(),
                (&raw const offset).cast(),
                core::mem::size_of::<u64>(),
            )
        };
        kernel::error::to_result(r)?;
        Ok(DmSlot::into_raw(dm))
    })();
    r.unwrap_or_else(Error::to_ptr)
}

/// The `dealloc_dm` op.
///
/// # Safety
///
/// `dm` must be a DM of `T` (every one comes from [`DmSlot`]), passed by
/// the core once, with no MR left on it.
pub(super) unsafe extern "C" fn dealloc_dm_callback<T: Driver>(
    dm: *mut bindings::ib_dm,
    _attrs: *mut bindings::uverbs_attr_bundle,
) -> c_int {
    // SAFETY: Every DM of this device came from `DmSlot`; the core calls
    // this once, with no MR left on it.
    unsafe { Dm::<T>::free(dm) };
    0
}

/// The `reg_dm_mr` op.
///
/// # Safety
///
/// The arguments of the core's `reg_dm_mr` call: a live PD and DM of `T`
/// and the request the core checked, for the call.
pub(super) unsafe extern "C" fn reg_dm_mr_callback<T: Driver>(
    pd: *mut bindings::ib_pd,
    dm: *mut bindings::ib_dm,
    attr: *mut bindings::ib_dm_mr_attr,
    _attrs: *mut bindings::uverbs_attr_bundle,
) -> *mut bindings::ib_mr {
    let r: Result<*mut bindings::ib_mr> = (|| {
        // SAFETY: The core passes a live PD and DM of this device and the
        // request it checked, for the call.
        let (pd, dm, req) = unsafe {
            (
                Pd::<T>::from_raw(pd),
                Dm::<T>::from_raw(dm),
                DmMrRequest {
                    offset: (*attr).offset,
                    length: (*attr).length,
                    access: (*attr).access_flags,
                },
            )
        };
        let slot = MrSlot::<T>::new(true)?;
        let (data, key) = T::Dm::reg_dm_mr(pd, dm, req)?;
        // Zero-based: the region's addresses run from 0.
        Ok(slot.fill(data, key, 0, req.length))
    })();
    r.unwrap_or_else(Error::to_ptr)
}
