// SPDX-License-Identifier: GPL-2.0

//! Memory windows: core-allocated `ib_mw` objects with driver data, and
//! the callbacks that allocate and free them.

use super::{
    bindings,
    device::Driver,
    object::{Mw, Pd},
    udata::Udata,
};
use crate::logic::access::MwType;
use kernel::{error::from_result, prelude::*};

/// The operations on a memory window, implemented by the driver's window
/// data ([`Driver::Mw`]). The data is dropped when the core frees the
/// window.
#[vtable]
pub trait MwOps<T: Driver>: Sized + Send + Sync {
    /// A new memory window of type `ty` in `pd`; returns its data and rkey.
    fn alloc_mw(_pd: &Pd<T>, _ty: MwType, _udata: Option<&Udata>) -> Result<(Self, u32)> {
        build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// The window is being freed: called once, with the device alive, just
    /// before its data is dropped.
    fn dealloc_mw(_mw: &Mw<T>) {}
}

impl<T: Driver> Mw<T> {
    /// The window's rkey.
    pub fn rkey(&self) -> u32 {
        // SAFETY: Set at allocation; changed only by binds, which the driver
        // serialises.
        unsafe { (*self.as_raw()).rkey }
    }
}

/// The `alloc_mw` op.
///
/// # Safety
///
/// The arguments of the core's `alloc_mw` call on a device of `T`: a
/// zeroed object of `size_ib_mw` bytes with `device`, `pd` and `type` set,
/// and the command's udata (or null), for the call.
pub(super) unsafe extern "C" fn alloc_mw_callback<T: Driver>(
    mw: *mut bindings::ib_mw,
    udata: *mut bindings::ib_udata,
) -> c_int {
    from_result(|| {
        // SAFETY: The core passes a zeroed object of `size_ib_mw` bytes
        // with `device`, `pd` and `type` set, and a valid udata. Only the
        // C fields are read here: the data part is not initialised yet.
        let (pd, ty, udata) = unsafe {
            let ty = if (*mw).type_ == bindings::ib_mw_type_IB_MW_TYPE_1 {
                MwType::Type1
            } else {
                MwType::Type2
            };
            (Pd::<T>::from_raw((*mw).pd), ty, Udata::from_raw(udata))
        };
        let (data, rkey) = T::Mw::alloc_mw(pd, ty, udata)?;
        // SAFETY: As above; the data part is uninitialised and ours.
        unsafe {
            Mw::<T>::init_data(mw, data);
            (*mw).rkey = rkey;
        }
        Ok(0)
    })
}

/// The `dealloc_mw` op.
///
/// # Safety
///
/// `mw` must be a window of `T` for which `alloc_mw` succeeded, passed by
/// the core once, before it frees the memory.
pub(super) unsafe extern "C" fn dealloc_mw_callback<T: Driver>(mw: *mut bindings::ib_mw) -> c_int {
    // SAFETY: `alloc_mw` succeeded for this window, which is alive for the
    // call.
    T::Mw::dealloc_mw(unsafe { Mw::<T>::from_raw(mw) });
    // SAFETY: As above; called once, and the data is not used again.
    unsafe { Mw::<T>::drop_data(mw) };
    0
}
