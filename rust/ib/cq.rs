// SPDX-License-Identifier: GPL-2.0

//! Completion queues: core-allocated `ib_cq` objects with driver data.
//!
//! The core allocates the CQ (`size_ib_cq`), sets the device, handlers and
//! context, and calls `create_cq`: with a uverbs bundle for user CQs, with
//! none for kernel CQs. The driver reports the capacity it made, which the
//! layer stores in `cq->cqe` (the core returns it to userspace).

use super::{
    bindings,
    device::{Device, Driver},
    object::{Cq, Ucontext},
    udata::Udata,
};
use crate::logic::cqe::Wc;
use kernel::{error::from_result, prelude::*};

/// The operations on a completion queue, implemented by the driver's CQ
/// data ([`Driver::Cq`]). The data is dropped when the CQ is destroyed.
#[vtable]
pub trait CqOps<T: Driver>: Sized + Send + Sync {
    /// A new CQ: for a user context (with the command's udata) or, with
    /// `user` `None`, for a kernel consumer. Returns the data and the
    /// capacity made (at least `attr.cqe`). `this` is a handle to the CQ
    /// being created, valid (for notifications) once this returns `Ok`.
    fn create_cq(
        _dev: &Device<T>,
        _attr: CqAttr,
        _user: Option<(&Ucontext<T>, Option<&Udata>)>,
        _this: CqRef<T>,
    ) -> Result<(Self, u32)> {
        build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// Resizes a user CQ to at least `cqe` entries; returns the capacity.
    fn resize_cq(_cq: &Cq<T>, _cqe: u32, _udata: Option<&Udata>) -> Result<u32> {
        build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// Arms a CQ; returns whether completions are waiting, when asked to
    /// report missed events.
    fn req_notify_cq(_cq: &Cq<T>, _flags: NotifyFlags) -> Result<bool> {
        build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// Moves completions of a kernel CQ into `out`, oldest first.
    fn poll_cq(_cq: &Cq<T>, _out: &mut WcOut<'_>) {
        build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// How many completions a kernel CQ holds, up to `wc_cnt`.
    fn peek_cq(_cq: &Cq<T>, _wc_cnt: u32) -> u32 {
        build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// The CQ is being destroyed: called once, with the device alive, just
    /// before its data is dropped. No notification may reach the C object
    /// after this returns.
    fn destroy_cq(_cq: &Cq<T>) {}
}

/// What `create_cq` was asked for.
#[derive(Clone, Copy, Debug)]
pub struct CqAttr {
    /// Requested capacity.
    pub cqe: u32,
    /// Completion vector (the core checked it against the device's count).
    pub comp_vector: u32,
    /// `IB_UVERBS_CQ_FLAGS_*`.
    pub flags: u32,
}

/// `ib_req_notify_cq` flags.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NotifyFlags {
    /// Arm for the next completion (otherwise only the next solicited one),
    /// if any arming bit was given.
    pub arm: Option<NotifyArm>,
    /// Report whether completions are already waiting.
    pub report_missed: bool,
}

/// What a CQ is armed for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NotifyArm {
    /// The next solicited (or error) completion.
    Solicited,
    /// The next completion.
    Next,
}

impl NotifyFlags {
    pub(crate) fn from_raw(flags: u32) -> Self {
        let arm = if flags & bindings::ib_cq_notify_flags_IB_CQ_NEXT_COMP != 0 {
            Some(NotifyArm::Next)
        } else if flags & bindings::ib_cq_notify_flags_IB_CQ_SOLICITED != 0 {
            Some(NotifyArm::Solicited)
        } else {
            None
        };
        Self {
            arm,
            report_missed: flags & bindings::ib_cq_notify_flags_IB_CQ_REPORT_MISSED_EVENTS != 0,
        }
    }
}

/// The caller's array of `ib_wc` that a kernel poll fills.
pub struct WcOut<'a> {
    wc: &'a mut [bindings::ib_wc],
    n: usize,
}

impl<'a> WcOut<'a> {
    pub(crate) fn new(wc: &'a mut [bindings::ib_wc]) -> Self {
        Self { wc, n: 0 }
    }

    /// Room left.
    pub fn room(&self) -> usize {
        self.wc.len() - self.n
    }

    /// Entries written.
    pub fn len(&self) -> usize {
        self.n
    }

    /// Whether nothing was written.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Appends a completion; returns `false` (and writes nothing) when full.
    pub fn push(&mut self, wc: &Wc) -> bool {
        let Some(w) = self.wc.get_mut(self.n) else {
            return false;
        };
        // SAFETY: All-zero is a valid `ib_wc` (plain integers, a null QP).
        *w = unsafe { core::mem::zeroed() };
        // SAFETY: Writing a union member of plain integer type.
        unsafe {
            *w.__bindgen_anon_1.wr_id.as_mut() = wc.wr_id;
            *w.ex.invalidate_rkey.as_mut() = wc.ex;
        }
        w.status = wc.status;
        w.opcode = wc.opcode;
        w.vendor_err = wc.vendor_err;
        w.byte_len = wc.byte_len;
        w.src_qp = wc.src_qp;
        w.slid = wc.slid.into();
        w.wc_flags = wc.wc_flags as c_int;
        w.pkey_index = wc.pkey_index;
        w.sl = wc.sl;
        w.dlid_path_bits = wc.dlid_path_bits;
        w.port_num = wc.port_num.into();
        w.network_hdr_type = wc.network_hdr_type;
        // The handle the driver was given for the QP at its creation.
        w.qp = wc.qp_cookie as *mut bindings::ib_qp;
        self.n += 1;
        true
    }
}

/// A CQ's C object, for code that outlives a borrow of it (the data path
/// posts completions to the CQs of QPs it found by number).
///
/// # Invariants
///
/// Points to a CQ of driver `T` that was alive when the handle was made.
/// Whoever holds a handle must stop using it before the CQ is destroyed
/// (the driver's CQ data keeps a "destroyed" flag under its lock for that).
pub struct CqRef<T: Driver>(
    core::ptr::NonNull<bindings::ib_cq>,
    core::marker::PhantomData<T>,
);

// SAFETY: The pointer is only dereferenced under the rules above, which do
// not depend on the thread.
unsafe impl<T: Driver> Send for CqRef<T> {}
// SAFETY: See above.
unsafe impl<T: Driver> Sync for CqRef<T> {}

impl<T: Driver> CqRef<T> {
    /// # Safety
    ///
    /// `cq` must be a CQ of driver `T` being created or alive.
    pub(crate) unsafe fn from_raw(cq: *mut bindings::ib_cq) -> Self {
        // SAFETY: Not null by the caller's promise.
        Self(
            unsafe { core::ptr::NonNull::new_unchecked(cq) },
            core::marker::PhantomData,
        )
    }

    /// The C object, for [`super::upcall::Upcalls::attach_cq`].
    pub(crate) fn as_raw(&self) -> *mut bindings::ib_cq {
        self.0.as_ptr()
    }
}

/// Calls the consumer's completion handler of `cq` (from
/// [`super::upcall`]).
///
/// # Safety
///
/// `cq` must be a live CQ.
pub(super) unsafe fn deliver_completion(cq: *mut bindings::ib_cq) {
    // SAFETY: Alive by the caller's promise; the core set the handler and
    // context before `create_cq`.
    unsafe {
        if let Some(h) = (*cq).comp_handler {
            h(cq, (*cq).cq_context);
        }
    }
}

/// Raises `IB_EVENT_CQ_ERR` (the CQ overflowed) on `cq` (from
/// [`super::upcall`]).
///
/// # Safety
///
/// As for [`deliver_completion`].
pub(super) unsafe fn deliver_error(cq: *mut bindings::ib_cq) {
    // SAFETY: As in `deliver_completion`; the event is read during the
    // call only.
    unsafe {
        if let Some(h) = (*cq).event_handler {
            let mut ev: bindings::ib_event = core::mem::zeroed();
            ev.device = (*cq).device;
            *ev.element.cq.as_mut() = cq;
            ev.event = bindings::ib_event_type_IB_EVENT_CQ_ERR;
            h(&mut ev, (*cq).cq_context);
        }
    }
}

/// The `create_cq` op.
///
/// # Safety
///
/// The arguments of the core's `create_cq` call on a device of `T`: a
/// zeroed CQ of `size_ib_cq` bytes with `device` set, its attributes, and
/// for user CQs the command's bundle (null for kernel CQs), for the call.
pub(super) unsafe extern "C" fn create_cq_callback<T: Driver>(
    cq: *mut bindings::ib_cq,
    attr: *const bindings::ib_cq_init_attr,
    attrs: *mut bindings::uverbs_attr_bundle,
) -> c_int {
    from_result(|| {
        // SAFETY: The core passes a zeroed CQ of `size_ib_cq` bytes with
        // `device` set, its attributes, and for user CQs the command's
        // bundle (null for kernel CQs), all valid for the call.
        let (dev, attr, user) = unsafe {
            let a = CqAttr {
                cqe: (*attr).cqe,
                comp_vector: (*attr).comp_vector,
                flags: (*attr).flags,
            };
            let user = if attrs.is_null() {
                None
            } else {
                let b = &raw mut (*attrs).__bindgen_anon_1.__bindgen_anon_1;
                Some((
                    Ucontext::<T>::from_raw((*b).context),
                    Udata::from_raw(&raw mut (*b).driver_udata),
                ))
            };
            (Device::<T>::from_raw((*cq).device), a, user)
        };
        // SAFETY: `cq` is the object being created, not null.
        let this = unsafe { CqRef::from_raw(cq) };
        let (data, cqe) = T::Cq::create_cq(dev, attr, user, this)?;
        // SAFETY: As above; the data part is uninitialised and ours.
        unsafe {
            Cq::<T>::init_data(cq, data);
            (*cq).cqe = cqe as c_int;
        }
        Ok(0)
    })
}

/// The `destroy_cq` op.
///
/// # Safety
///
/// `cq` must be a CQ of `T` for which `create_cq` succeeded, passed by the
/// core once, before it frees the memory.
pub(super) unsafe extern "C" fn destroy_cq_callback<T: Driver>(
    cq: *mut bindings::ib_cq,
    _udata: *mut bindings::ib_udata,
) -> c_int {
    // SAFETY: `create_cq` succeeded for this CQ, which is alive for the
    // call.
    T::Cq::destroy_cq(unsafe { Cq::<T>::from_raw(cq) });
    // SAFETY: As above; called once, and the data is not used again.
    unsafe { Cq::<T>::drop_data(cq) };
    0
}

/// The `resize_user_cq` op.
///
/// # Safety
///
/// The arguments of the core's `resize_user_cq` call: a live CQ of `T` and
/// the command's udata, for the call.
pub(super) unsafe extern "C" fn resize_cq_callback<T: Driver>(
    cq: *mut bindings::ib_cq,
    cqe: c_uint,
    udata: *mut bindings::ib_udata,
) -> c_int {
    from_result(|| {
        // SAFETY: A live CQ of this device and the command's udata.
        let (c, udata) = unsafe { (Cq::<T>::from_raw(cq), Udata::from_raw(udata)) };
        let n = T::Cq::resize_cq(c, cqe, udata)?;
        // SAFETY: As above; the core serialises resizes of a CQ.
        unsafe { (*cq).cqe = n as c_int };
        Ok(0)
    })
}

/// The `req_notify_cq` op.
///
/// # Safety
///
/// `cq` must be a live CQ of `T`, for the call.
pub(super) unsafe extern "C" fn req_notify_cq_callback<T: Driver>(
    cq: *mut bindings::ib_cq,
    flags: bindings::ib_cq_notify_flags,
) -> c_int {
    // SAFETY: A live CQ of this device.
    let c = unsafe { Cq::<T>::from_raw(cq) };
    match T::Cq::req_notify_cq(c, NotifyFlags::from_raw(flags)) {
        Ok(missed) => c_int::from(missed),
        Err(e) => e.to_errno(),
    }
}

/// The `poll_cq` op.
///
/// # Safety
///
/// `cq` must be a live CQ of `T` and `wc` must have room for `num_entries`
/// entries (or be null), for the call.
pub(super) unsafe extern "C" fn poll_cq_callback<T: Driver>(
    cq: *mut bindings::ib_cq,
    num_entries: c_int,
    wc: *mut bindings::ib_wc,
) -> c_int {
    if num_entries <= 0 || wc.is_null() {
        return 0;
    }
    // SAFETY: A live CQ of this device; `wc` has room for `num_entries`
    // entries (the caller's promise to `ib_poll_cq`).
    let (c, wc) = unsafe {
        (
            Cq::<T>::from_raw(cq),
            core::slice::from_raw_parts_mut(wc, num_entries as usize),
        )
    };
    let mut out = WcOut::new(wc);
    T::Cq::poll_cq(c, &mut out);
    out.len() as c_int
}

/// The `peek_cq` op.
///
/// # Safety
///
/// `cq` must be a live CQ of `T`, for the call.
pub(super) unsafe extern "C" fn peek_cq_callback<T: Driver>(
    cq: *mut bindings::ib_cq,
    wc_cnt: c_int,
) -> c_int {
    if wc_cnt <= 0 {
        return 0;
    }
    // SAFETY: A live CQ of this device.
    T::Cq::peek_cq(unsafe { Cq::<T>::from_raw(cq) }, wc_cnt as u32) as c_int
}
