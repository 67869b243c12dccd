// SPDX-License-Identifier: GPL-2.0

//! Shared receive queues: core-allocated `ib_srq` objects with driver data.

use super::{
    bindings,
    device::Driver,
    object::{Cq, Pd, Srq, Xrcd},
    udata::Udata,
    wr::RecvWr,
};
use kernel::{error::from_result, prelude::*};

/// The operations on a shared receive queue, implemented by the driver's
/// SRQ data ([`Driver::Srq`]). The data is dropped when the SRQ is
/// destroyed.
#[vtable]
pub trait SrqOps<T: Driver>: Sized + Send + Sync {
    /// A new SRQ in `pd`; returns its data and the attributes it has.
    /// `this` is a handle to the SRQ being created, for raising its limit
    /// event later.
    fn create_srq(
        _pd: &Pd<T>,
        _init: &SrqInit,
        _udata: Option<&Udata>,
        _this: SrqRef<T>,
    ) -> Result<(Self, SrqAttr)> {
        build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// Changes the attributes `mask` names.
    fn modify_srq(_srq: &Srq<T>, _attr: SrqAttr, _mask: SrqMask, _udata: Option<&Udata>) -> Result {
        build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// The SRQ's attributes.
    fn query_srq(_srq: &Srq<T>) -> Result<SrqAttr> {
        build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// A kernel receive work request, on a kernel SRQ. Must not sleep.
    fn post_srq_recv(_srq: &Srq<T>, _wr: &RecvWr<'_>) -> Result {
        Err(EOPNOTSUPP)
    }

    /// The SRQ is being destroyed: called once, with the device alive, just
    /// before its data is dropped. No event may reach the C object after
    /// this returns.
    fn destroy_srq(_srq: &Srq<T>) {}

    /// The SRQ's number: for an XRC SRQ, the number an XRCETH names it
    /// by, which uverbs returns to its creator (at most 24 bits).
    fn number(&self) -> u32;
}

/// `struct ib_srq_attr`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SrqAttr {
    /// Capacity in work requests.
    pub max_wr: u32,
    /// Scatter entries per work request.
    pub max_sge: u32,
    /// Limit below which the SRQ raises `IB_EVENT_SRQ_LIMIT_REACHED` (0: off).
    pub srq_limit: u32,
}

impl SrqAttr {
    pub(crate) fn from_raw(attr: &bindings::ib_srq_attr) -> Self {
        Self {
            max_wr: attr.max_wr,
            max_sge: attr.max_sge,
            srq_limit: attr.srq_limit,
        }
    }

    pub(crate) fn to_raw(self, attr: &mut bindings::ib_srq_attr) {
        attr.max_wr = self.max_wr;
        attr.max_sge = self.max_sge;
        attr.srq_limit = self.srq_limit;
    }
}

/// The type of an SRQ asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SrqKind {
    /// A basic SRQ, for the QPs created on it.
    Basic,
    /// An XRC SRQ, in an XRC domain, with a completion queue of its own
    /// ([`SrqInit::xrc`]).
    Xrc,
    /// Another type (tag matching).
    Other,
}

/// What `create_srq` was asked for.
///
/// # Invariants
///
/// For [`SrqKind::Xrc`], `xrcd` and `cq` point to the request's domain and
/// CQ, objects of the device the SRQ is created on, alive while the
/// request is (the core holds a use count on each for the create call,
/// which this request does not outlive: drivers get it by reference, and
/// it cannot be copied).
#[derive(Debug)]
pub struct SrqInit {
    /// Requested attributes.
    pub attr: SrqAttr,
    /// The type.
    pub kind: SrqKind,
    xrcd: *mut bindings::ib_xrcd,
    cq: *mut bindings::ib_cq,
}

impl SrqInit {
    /// An XRC SRQ's domain and completion queue; `None` for other types.
    pub fn xrc<T: Driver>(&self) -> Option<(&Xrcd<T>, &Cq<T>)> {
        if self.kind != SrqKind::Xrc || self.xrcd.is_null() || self.cq.is_null() {
            return None;
        }
        // SAFETY: Objects of this device (of driver `T`), alive while the
        // request is (the type invariant).
        Some(unsafe { (Xrcd::from_raw(self.xrcd), Cq::from_raw(self.cq)) })
    }
}

/// Which attributes a `modify_srq` changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SrqMask {
    /// `IB_SRQ_MAX_WR`: resize.
    pub max_wr: bool,
    /// `IB_SRQ_LIMIT`: arm the limit event.
    pub limit: bool,
    /// Bits this layer does not know.
    pub unknown: bool,
}

impl SrqMask {
    pub(crate) fn from_raw(mask: u32) -> Self {
        let known =
            bindings::ib_srq_attr_mask_IB_SRQ_MAX_WR | bindings::ib_srq_attr_mask_IB_SRQ_LIMIT;
        Self {
            max_wr: mask & bindings::ib_srq_attr_mask_IB_SRQ_MAX_WR != 0,
            limit: mask & bindings::ib_srq_attr_mask_IB_SRQ_LIMIT != 0,
            unknown: mask & !known != 0,
        }
    }
}

/// An SRQ's C object, for code that outlives a borrow of it (the receive
/// path raises the limit event of SRQs it reached through a QP).
///
/// # Invariants
///
/// Points to an SRQ of driver `T` that was alive when the handle was made.
/// Whoever holds a handle must stop using it before the SRQ is destroyed
/// (the driver's SRQ data drops it under its lock in its destructor).
pub struct SrqRef<T: Driver>(
    core::ptr::NonNull<bindings::ib_srq>,
    core::marker::PhantomData<T>,
);

// SAFETY: The pointer is only dereferenced under the rules above, which do
// not depend on the thread.
unsafe impl<T: Driver> Send for SrqRef<T> {}
// SAFETY: See above.
unsafe impl<T: Driver> Sync for SrqRef<T> {}

impl<T: Driver> SrqRef<T> {
    /// # Safety
    ///
    /// `srq` must be an SRQ of driver `T` being created or alive.
    pub(crate) unsafe fn from_raw(srq: *mut bindings::ib_srq) -> Self {
        // SAFETY: Not null by the caller's promise.
        Self(
            unsafe { core::ptr::NonNull::new_unchecked(srq) },
            core::marker::PhantomData,
        )
    }

    /// The C object, for [`super::upcall::Upcalls::attach_srq`].
    pub(crate) fn as_raw(&self) -> *mut bindings::ib_srq {
        self.0.as_ptr()
    }
}

/// Raises `IB_EVENT_SRQ_LIMIT_REACHED` on `srq` (from [`super::upcall`]).
///
/// # Safety
///
/// `srq` must be a live SRQ.
pub(super) unsafe fn deliver_limit(srq: *mut bindings::ib_srq) {
    // SAFETY: Alive by the caller's promise; the core set the handler and
    // context before `create_srq` and they stay while the SRQ lives; the
    // event is read during the call only.
    unsafe {
        if let Some(h) = (*srq).event_handler {
            let mut ev: bindings::ib_event = core::mem::zeroed();
            ev.device = (*srq).device;
            *ev.element.srq.as_mut() = srq;
            ev.event = bindings::ib_event_type_IB_EVENT_SRQ_LIMIT_REACHED;
            h(&mut ev, (*srq).srq_context);
        }
    }
}

/// The `create_srq` op.
///
/// # Safety
///
/// The arguments of the core's `create_srq` call on a device of `T`: a
/// zeroed SRQ of `size_ib_srq` bytes with `device` and `pd` set, the
/// request, and the command's udata (null for kernel SRQs), for the call.
pub(super) unsafe extern "C" fn create_srq_callback<T: Driver>(
    srq: *mut bindings::ib_srq,
    init: *mut bindings::ib_srq_init_attr,
    udata: *mut bindings::ib_udata,
) -> c_int {
    from_result(|| {
        // SAFETY: The core passes a zeroed SRQ of `size_ib_srq` bytes
        // with `device` and `pd` set, the request, and the command's
        // udata (null for kernel SRQs), for the call.
        let (pd, req, udata) = unsafe {
            let i = &*init;
            let kind = match i.srq_type {
                bindings::ib_srq_type_IB_SRQT_BASIC => SrqKind::Basic,
                bindings::ib_srq_type_IB_SRQT_XRC => SrqKind::Xrc,
                _ => SrqKind::Other,
            };
            // INVARIANT: For an XRC SRQ the core takes the domain and the
            // CQ from the request, holds a use count on each for the call,
            // and checks that they are of this device.
            let (xrcd, cq) = if kind == SrqKind::Xrc {
                (i.ext.__bindgen_anon_1.xrc.as_ref().xrcd, i.ext.cq)
            } else {
                (core::ptr::null_mut(), core::ptr::null_mut())
            };
            let req = SrqInit {
                attr: SrqAttr::from_raw(&i.attr),
                kind,
                xrcd,
                cq,
            };
            (Pd::<T>::from_raw((*srq).pd), req, Udata::from_raw(udata))
        };
        // SAFETY: The SRQ being created.
        let this = unsafe { SrqRef::from_raw(srq) };
        let (data, attr) = T::Srq::create_srq(pd, &req, udata, this)?;
        let num = data.number();
        // SAFETY: As above; the data part is uninitialised and ours; the
        // attributes made go back in the request, and an XRC SRQ's number
        // where uverbs reads it once this returns.
        unsafe {
            Srq::<T>::init_data(srq, data);
            attr.to_raw(&mut (*init).attr);
            if req.kind == SrqKind::Xrc {
                (*srq).ext.__bindgen_anon_1.xrc.as_mut().srq_num = num;
            }
        }
        Ok(0)
    })
}

/// The `modify_srq` op.
///
/// # Safety
///
/// The arguments of the core's `modify_srq` call: a live SRQ of `T`, its
/// new attributes and the command's udata (or null), for the call.
pub(super) unsafe extern "C" fn modify_srq_callback<T: Driver>(
    srq: *mut bindings::ib_srq,
    attr: *mut bindings::ib_srq_attr,
    mask: bindings::ib_srq_attr_mask,
    udata: *mut bindings::ib_udata,
) -> c_int {
    from_result(|| {
        // SAFETY: A live SRQ of this device, its new attributes and the
        // command's udata, for the call.
        let (s, a, udata) = unsafe {
            (
                Srq::<T>::from_raw(srq),
                SrqAttr::from_raw(&*attr),
                Udata::from_raw(udata),
            )
        };
        T::Srq::modify_srq(s, a, SrqMask::from_raw(mask), udata)?;
        Ok(0)
    })
}

/// The `query_srq` op.
///
/// # Safety
///
/// The arguments of the core's `query_srq` call: a live SRQ of `T` and the
/// attributes to fill, for the call.
pub(super) unsafe extern "C" fn query_srq_callback<T: Driver>(
    srq: *mut bindings::ib_srq,
    attr: *mut bindings::ib_srq_attr,
) -> c_int {
    from_result(|| {
        // SAFETY: A live SRQ of this device and an output for the call.
        let (s, out) = unsafe { (Srq::<T>::from_raw(srq), &mut *attr) };
        T::Srq::query_srq(s)?.to_raw(out);
        Ok(0)
    })
}

/// The `destroy_srq` op.
///
/// # Safety
///
/// `srq` must be an SRQ of `T` for which `create_srq` succeeded, passed by
/// the core once, before it frees the memory.
pub(super) unsafe extern "C" fn destroy_srq_callback<T: Driver>(
    srq: *mut bindings::ib_srq,
    _udata: *mut bindings::ib_udata,
) -> c_int {
    // SAFETY: `create_srq` succeeded for this SRQ, which is alive for the
    // call.
    T::Srq::destroy_srq(unsafe { Srq::<T>::from_raw(srq) });
    // SAFETY: As above; called once, and the data is not used again.
    unsafe { Srq::<T>::drop_data(srq) };
    0
}

/// The `post_srq_recv` op: each work request of the list in turn, until
/// one fails (it is reported through `bad`).
///
/// # Safety
///
/// The arguments of an `ib_post_srq_recv` call: a live SRQ of `T`, a list
/// of valid work requests and a valid or null `bad`, for the call.
pub(super) unsafe extern "C" fn post_srq_recv_callback<T: Driver>(
    srq: *mut bindings::ib_srq,
    wr: *const bindings::ib_recv_wr,
    bad: *mut *const bindings::ib_recv_wr,
) -> c_int {
    // SAFETY: A live SRQ of this device.
    let s = unsafe { Srq::<T>::from_raw(srq) };
    let mut cur = wr;
    while !cur.is_null() {
        // SAFETY: The poster's list, each entry valid for the call.
        let w = unsafe { RecvWr::from_raw(cur) };
        if let Err(e) = T::Srq::post_srq_recv(s, &w) {
            if !bad.is_null() {
                // SAFETY: The caller's output pointer.
                unsafe { *bad = cur };
            }
            return e.to_errno();
        }
        // SAFETY: As above.
        cur = unsafe { (*cur).next };
    }
    0
}
