// SPDX-License-Identifier: GPL-2.0

//! User contexts and protection domains: the callbacks that allocate and
//! free them.
//!
//! The core allocates both objects itself, zeroed, at the sizes the ops
//! table declares, and calls the driver to fill in its data (see
//! [`super::object`]).

use super::{
    bindings,
    device::{Device, Driver},
    object::{Pd, Ucontext},
    udata::Udata,
};
use kernel::{error::from_result, prelude::*};

/// The operations on a user context, implemented by the driver's context
/// data ([`Driver::Ucontext`]). The data is dropped when the core frees
/// the context.
pub trait UcontextOps<T: Driver>: Sized + Send + Sync {
    /// A new user context.
    fn alloc_ucontext(dev: &Device<T>, udata: Option<&Udata>) -> Result<Self>;
}

/// The operations on a protection domain, implemented by the driver's PD
/// data ([`Driver::Pd`]). The data is dropped when the core frees the PD.
pub trait PdOps<T: Driver>: Sized + Send + Sync {
    /// A new protection domain.
    fn alloc_pd(dev: &Device<T>, udata: Option<&Udata>) -> Result<Self>;

    /// The PD is being freed: called once, with the device alive, just
    /// before its data is dropped.
    fn dealloc_pd(_pd: &Pd<T>) {}
}

/// The `alloc_ucontext` op.
///
/// # Safety
///
/// The arguments of the core's `alloc_ucontext` call on a device of `T`: a
/// zeroed object of `size_ib_ucontext` bytes whose `device` is set, and a
/// valid or null udata, for the call.
pub(super) unsafe extern "C" fn alloc_ucontext_callback<T: Driver>(
    uc: *mut bindings::ib_ucontext,
    udata: *mut bindings::ib_udata,
) -> c_int {
    from_result(|| {
        // SAFETY: The core passes a zeroed object of `size_ib_ucontext`
        // bytes whose `device` is ours, and a valid udata.
        let (dev, udata) = unsafe { (Device::<T>::from_raw((*uc).device), Udata::from_raw(udata)) };
        let data = T::Ucontext::alloc_ucontext(dev, udata)?;
        // SAFETY: The object was sized for `Ucontext<T>`; its data part is
        // uninitialised and ours to write.
        unsafe { Ucontext::<T>::init_data(uc, data) };
        Ok(0)
    })
}

/// The `dealloc_ucontext` op.
///
/// # Safety
///
/// `uc` must be a context of `T` for which `alloc_ucontext` succeeded,
/// passed by the core once, before it frees the memory.
pub(super) unsafe extern "C" fn dealloc_ucontext_callback<T: Driver>(
    uc: *mut bindings::ib_ucontext,
) {
    // SAFETY: `alloc_ucontext` succeeded for this object; the core calls
    // this once, after which it frees the memory.
    unsafe { Ucontext::<T>::drop_data(uc) };
}

/// The `disassociate_ucontext` op: hot unplug with open contexts. The core
/// zaps user mappings and destroys the context's objects through the usual
/// callbacks, so there is nothing device-specific left to do. Having this
/// op lets devices go away (and the module unload) while processes still
/// hold contexts.
///
/// # Safety
///
/// None beyond the C signature: the context is not used.
pub(super) unsafe extern "C" fn disassociate_ucontext_callback(_uc: *mut bindings::ib_ucontext) {}

/// The `query_ucontext` op, behind `UVERBS_METHOD_QUERY_CONTEXT`, which a
/// process calls to import a context from a duplicate of its command fd
/// (`ibv_import_device`). The core reports the common attributes; the
/// driver's part is what `alloc_ucontext` returns in its udata, and the
/// rxe ABI returns nothing there, so there is nothing to add.
///
/// # Safety
///
/// None beyond the C signature: neither argument is used.
pub(super) unsafe extern "C" fn query_ucontext_callback(
    _uc: *mut bindings::ib_ucontext,
    _attrs: *mut bindings::uverbs_attr_bundle,
) -> c_int {
    0
}

/// The `alloc_pd` op.
///
/// # Safety
///
/// The arguments of the core's `alloc_pd` call on a device of `T`: a
/// zeroed object of `size_ib_pd` bytes whose `device` is set, and a valid
/// or null udata, for the call.
pub(super) unsafe extern "C" fn alloc_pd_callback<T: Driver>(
    pd: *mut bindings::ib_pd,
    udata: *mut bindings::ib_udata,
) -> c_int {
    from_result(|| {
        // SAFETY: As for `alloc_ucontext`.
        let (dev, udata) = unsafe { (Device::<T>::from_raw((*pd).device), Udata::from_raw(udata)) };
        let data = T::Pd::alloc_pd(dev, udata)?;
        // SAFETY: As for `alloc_ucontext`.
        unsafe { Pd::<T>::init_data(pd, data) };
        Ok(0)
    })
}

/// The `dealloc_pd` op.
///
/// # Safety
///
/// `pd` must be a PD of `T` for which `alloc_pd` succeeded, passed by the
/// core once, before it frees the memory.
pub(super) unsafe extern "C" fn dealloc_pd_callback<T: Driver>(
    pd: *mut bindings::ib_pd,
    _udata: *mut bindings::ib_udata,
) -> c_int {
    // SAFETY: `alloc_pd` succeeded for this object, which is alive for the
    // call.
    T::Pd::dealloc_pd(unsafe { Pd::<T>::from_raw(pd) });
    // SAFETY: As above; called once, and the data is not used again.
    unsafe { Pd::<T>::drop_data(pd) };
    0
}
