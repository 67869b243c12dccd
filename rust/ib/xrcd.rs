// SPDX-License-Identifier: GPL-2.0

//! XRC domains: core-allocated `ib_xrcd` objects with driver data, and the
//! callbacks that allocate and free them.
//!
//! An XRC domain may be shared by processes (uverbs keys it by the inode
//! of a file they open, `ibv_open_xrcd`), and the core frees it when its
//! last user closes it, from whichever process that is: its data must not
//! depend on the context of the process that created it.

use super::{bindings, device::Device, device::Driver, object::Xrcd, udata::Udata};
use kernel::{error::from_result, prelude::*};

/// The operations on an XRC domain, implemented by the driver's domain
/// data ([`Driver::Xrcd`]). The data is dropped when the core frees the
/// domain.
#[vtable]
pub trait XrcdOps<T: Driver>: Sized + Send + Sync {
    /// A new XRC domain.
    fn alloc_xrcd(_dev: &Device<T>, _udata: Option<&Udata>) -> Result<Self> {
        build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// The domain is being freed: called once, with the device alive, just
    /// before its data is dropped.
    fn dealloc_xrcd(_xrcd: &Xrcd<T>) {}
}

/// The `alloc_xrcd` op.
///
/// # Safety
///
/// The arguments of the core's `alloc_xrcd` call on a device of `T`: a
/// zeroed object of `size_ib_xrcd` bytes whose `device` is set, and a
/// valid or null udata, for the call.
pub(super) unsafe extern "C" fn alloc_xrcd_callback<T: Driver>(
    xrcd: *mut bindings::ib_xrcd,
    udata: *mut bindings::ib_udata,
) -> c_int {
    from_result(|| {
        // SAFETY: The core passes a zeroed object of `size_ib_xrcd` bytes
        // whose `device` is ours, and a valid udata.
        let (dev, udata) = unsafe {
            (
                Device::<T>::from_raw((*xrcd).device),
                Udata::from_raw(udata),
            )
        };
        let data = T::Xrcd::alloc_xrcd(dev, udata)?;
        // SAFETY: The object was sized for `Xrcd<T>`; its data part is
        // uninitialised and ours to write.
        unsafe { Xrcd::<T>::init_data(xrcd, data) };
        Ok(0)
    })
}

/// The `dealloc_xrcd` op.
///
/// # Safety
///
/// `xrcd` must be a domain of `T` for which `alloc_xrcd` succeeded, passed
/// by the core once, before it frees the memory.
pub(super) unsafe extern "C" fn dealloc_xrcd_callback<T: Driver>(
    xrcd: *mut bindings::ib_xrcd,
    _udata: *mut bindings::ib_udata,
) -> c_int {
    // SAFETY: `alloc_xrcd` succeeded for this domain, which is alive for
    // the call.
    T::Xrcd::dealloc_xrcd(unsafe { Xrcd::<T>::from_raw(xrcd) });
    // SAFETY: As above; called once, and the data is not used again.
    unsafe { Xrcd::<T>::drop_data(xrcd) };
    0
}
