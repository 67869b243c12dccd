// SPDX-License-Identifier: GPL-2.0

//! Address handles: core-allocated `ib_ah` objects with driver data.
//!
//! The core allocates the AH, takes a reference on the source GID's
//! attribute (`ah->sgid_attr`, held for the AH's life) and resolves the
//! destination MAC, then calls `create_ah` (kernel) or `create_user_ah`.

use super::{
    bindings,
    device::Driver,
    object::{Ah, Pd},
    qp,
    udata::Udata,
};
use crate::logic::qp::Av;
use kernel::{error::from_result, prelude::*};

/// The operations on an address handle, implemented by the driver's AH
/// data ([`Driver::Ah`]). The data is dropped when the AH is destroyed.
#[vtable]
pub trait AhOps<T: Driver>: Sized + Send + Sync {
    /// A new address handle in `pd`; `udata` is the user command's (the
    /// driver writes its response there).
    fn create_ah(_pd: &Pd<T>, _init: &AhInit, _udata: Option<&Udata>) -> Result<Self> {
        build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// The address vector of an AH.
    fn query_ah(_ah: &Ah<T>) -> Result<Av> {
        build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// The AH is being destroyed: called once, with the device alive, just
    /// before its data is dropped.
    fn destroy_ah(_ah: &Ah<T>) {}
}

/// What an AH or a QP path is created from.
#[derive(Clone, Copy, Debug)]
pub struct AhInit {
    /// The address vector.
    pub av: Av,
    /// A GRH was given (required on RoCE).
    pub grh: bool,
    /// The attribute type is RoCE.
    pub roce: bool,
    /// The caller may sleep (user AHs, and kernel ones created sleepable).
    pub sleepable: bool,
    /// The source GID, if the core resolved one.
    pub sgid: Option<Sgid>,
}

/// A source GID and its type.
#[derive(Clone, Copy, Debug)]
pub struct Sgid {
    /// The GID.
    pub gid: [u8; 16],
    /// RoCEv2 (UDP encapsulation), as opposed to RoCEv1 or IB.
    pub roce_v2: bool,
}

impl AhInit {
    /// # Safety
    ///
    /// `raw` must point to a valid `rdma_ah_init_attr` whose `ah_attr` holds a
    /// referenced (or null) `sgid_attr`, for the call.
    pub(crate) unsafe fn from_raw(raw: *const bindings::rdma_ah_init_attr, user: bool) -> Self {
        // SAFETY: The caller's promise.
        let (attr, flags) = unsafe { (&*(*raw).ah_attr, (*raw).flags) };
        // SAFETY: As above: a held GID attribute, or null.
        let sgid = unsafe { attr.grh.sgid_attr.as_ref() }.map(|g| Sgid {
            // SAFETY: `raw` covers the whole GID union.
            gid: unsafe { *g.gid.raw.as_ref() },
            roce_v2: g.gid_type == bindings::ib_gid_type_IB_GID_TYPE_ROCE_UDP_ENCAP,
        });
        Self {
            av: qp::av_from_raw(attr, true),
            grh: u32::from(attr.ah_flags) & bindings::ib_ah_flags_IB_AH_GRH != 0,
            roce: attr.type_ == bindings::rdma_ah_attr_type_RDMA_AH_ATTR_TYPE_ROCE,
            sleepable: user || flags & bindings::rdma_create_ah_flags_RDMA_CREATE_AH_SLEEPABLE != 0,
            sgid,
        }
    }
}

impl<T: Driver> Ah<T> {
    /// The source GID the AH was created with, held by the core for the
    /// AH's life.
    pub fn sgid(&self) -> Option<Sgid> {
        // SAFETY: `sgid_attr` is set at creation and referenced until the
        // AH is destroyed.
        unsafe { (*self.as_raw()).sgid_attr.as_ref() }.map(|g| Sgid {
            // SAFETY: `raw` covers the whole GID union.
            gid: unsafe { *g.gid.raw.as_ref() },
            roce_v2: g.gid_type == bindings::ib_gid_type_IB_GID_TYPE_ROCE_UDP_ENCAP,
        })
    }
}

/// `create_ah` and `create_user_ah` alike.
///
/// # Safety
///
/// The arguments of a `create_ah` or `create_user_ah` call on a device of
/// `T`: a zeroed AH of `size_ib_ah` bytes with `device`, `pd` and
/// `sgid_attr` set, the request (its GID attribute held) and the udata
/// (null for kernel AHs), for the call.
unsafe fn create_ah_common<T: Driver>(
    ah: *mut bindings::ib_ah,
    attr: *mut bindings::rdma_ah_init_attr,
    udata: *mut bindings::ib_udata,
) -> c_int {
    from_result(|| {
        // SAFETY: A zeroed AH of `size_ib_ah` bytes with `device`, `pd`,
        // `sgid_attr` set; the request (GID attribute held); the udata
        // (null for kernel AHs). All valid for the call.
        let (pd, init, udata) = unsafe {
            (
                Pd::<T>::from_raw((*ah).pd),
                AhInit::from_raw(attr, !udata.is_null()),
                Udata::from_raw(udata),
            )
        };
        let data = T::Ah::create_ah(pd, &init, udata)?;
        // SAFETY: As above; the data part is uninitialised and ours.
        unsafe { Ah::<T>::init_data(ah, data) };
        Ok(0)
    })
}

/// The `create_ah` op (kernel AHs).
///
/// # Safety
///
/// As for [`create_ah_common`].
pub(super) unsafe extern "C" fn create_ah_callback<T: Driver>(
    ah: *mut bindings::ib_ah,
    attr: *mut bindings::rdma_ah_init_attr,
    udata: *mut bindings::ib_udata,
) -> c_int {
    // SAFETY: The core's arguments, passed on.
    unsafe { create_ah_common::<T>(ah, attr, udata) }
}

/// The `create_user_ah` op.
///
/// # Safety
///
/// As for [`create_ah_common`].
pub(super) unsafe extern "C" fn create_user_ah_callback<T: Driver>(
    ah: *mut bindings::ib_ah,
    attr: *mut bindings::rdma_ah_init_attr,
    udata: *mut bindings::ib_udata,
) -> c_int {
    // SAFETY: The core's arguments, passed on.
    unsafe { create_ah_common::<T>(ah, attr, udata) }
}

/// The `query_ah` op.
///
/// # Safety
///
/// The arguments of the core's `query_ah` call: a live AH of `T` and the
/// attributes to fill, for the call.
pub(super) unsafe extern "C" fn query_ah_callback<T: Driver>(
    ah: *mut bindings::ib_ah,
    attr: *mut bindings::rdma_ah_attr,
) -> c_int {
    from_result(|| {
        // SAFETY: A live AH of this device and an output for the call.
        let (a, out) = unsafe { (Ah::<T>::from_raw(ah), &mut *attr) };
        let av = T::Ah::query_ah(a)?;
        qp::av_to_raw(&av, out);
        Ok(0)
    })
}

/// The `destroy_ah` op.
///
/// # Safety
///
/// `ah` must be an AH of `T` for which `create_ah` or `create_user_ah`
/// succeeded, passed by the core once, before it frees the memory.
pub(super) unsafe extern "C" fn destroy_ah_callback<T: Driver>(
    ah: *mut bindings::ib_ah,
    _flags: u32,
) -> c_int {
    // SAFETY: `create_ah` succeeded for this AH, which is alive for the
    // call.
    T::Ah::destroy_ah(unsafe { Ah::<T>::from_raw(ah) });
    // SAFETY: As above; called once, and the data is not used again.
    unsafe { Ah::<T>::drop_data(ah) };
    0
}
