// SPDX-License-Identifier: GPL-2.0

//! Queue pairs: core-allocated `ib_qp` objects with driver data, and the
//! conversion of the core's attribute structures to the pure `logic::qp`
//! forms the driver works with.

use super::{
    bindings,
    device::Driver,
    object::{Cq, Pd, Qp, Srq, Xrcd},
    udata::Udata,
    wr::{RecvWr, SendWr},
};
use crate::logic::qp::{Av, QpAttrs, QpCap, QpState};
use kernel::{error::from_result, prelude::*};

/// The operations on a queue pair, implemented by the driver's QP data
/// ([`Driver::Qp`]). The data is dropped when the QP is destroyed.
#[vtable]
pub trait QpOps<T: Driver>: Sized + Send + Sync {
    /// A new QP in `pd`. Returns its data, its number and the capacities
    /// it has (at least those asked for), which go back to the caller.
    fn create_qp(
        _pd: &Pd<T>,
        _init: &QpInit,
        _udata: Option<&Udata>,
    ) -> Result<(Self, u32, QpCap)> {
        build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// A new XRC target QP in `xrcd`: it has no PD, no CQs and no queues
    /// of its own (its receives come from the XRC SRQ each packet names),
    /// and the core asks for it with no udata, even for a user. The core
    /// shares it between the processes that open it in the domain and
    /// destroys it when the last closes it. Returns as
    /// [`Self::create_qp`] does.
    fn create_xrc_tgt(_xrcd: &Xrcd<T>, _init: &QpInit) -> Result<(Self, u32, QpCap)> {
        Err(EOPNOTSUPP)
    }

    /// Changes the attributes `mask` names to the values in `attrs`;
    /// `cur` is the current state the caller claims (`IB_QP_CUR_STATE`).
    fn modify_qp(
        _qp: &Qp<T>,
        _attrs: &QpAttrs,
        _cur: Option<QpState>,
        _mask: u32,
        _udata: Option<&Udata>,
    ) -> Result {
        build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// The QP's attributes, capacities and whether all sends signal.
    fn query_qp(_qp: &Qp<T>) -> Result<(QpAttrs, QpCap, bool)> {
        build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// Asked before a QP is destroyed; an error keeps it. Its data is
    /// dropped after `Ok`.
    fn destroy_qp(_qp: &Qp<T>) -> Result {
        Ok(())
    }

    /// A kernel send work request (one of a posted list), on a kernel QP.
    /// May be called in atomic context: must not sleep.
    fn post_send_kernel(_qp: &Qp<T>, _wr: &SendWr<'_, T>) -> Result {
        Err(EOPNOTSUPP)
    }

    /// The user doorbell (`post_send` with no work requests): process the
    /// send queue up to the producer index.
    fn post_send_user(_qp: &Qp<T>) -> Result {
        build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// A kernel receive work request, on a kernel QP. Must not sleep.
    fn post_recv(_qp: &Qp<T>, _wr: &RecvWr<'_>) -> Result {
        Err(EOPNOTSUPP)
    }

    /// Attaches a UD QP to the multicast group `gid` (the core checked the
    /// QP type and the address).
    fn attach_mcast(_qp: &Qp<T>, _gid: &[u8; 16]) -> Result {
        build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// Detaches a QP from a multicast group.
    fn detach_mcast(_qp: &Qp<T>, _gid: &[u8; 16]) -> Result {
        build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }
}

/// `enum ib_qp_type`, the kinds rrxe knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QpType {
    /// QP0, subnet management (not on RoCE).
    Smi,
    /// QP1, general services (MADs).
    Gsi,
    /// Reliable connected.
    Rc,
    /// Unreliable connected.
    Uc,
    /// Unreliable datagram.
    Ud,
    /// XRC initiator: an RC requester whose messages name an XRC SRQ.
    XrcIni,
    /// XRC target: an RC responder of an XRC domain.
    XrcTgt,
    /// Anything else (raw packet, driver types).
    Other(u32),
}

impl QpType {
    pub(crate) fn from_raw(ty: bindings::ib_qp_type) -> Self {
        match ty {
            bindings::ib_qp_type_IB_QPT_SMI => Self::Smi,
            bindings::ib_qp_type_IB_QPT_GSI => Self::Gsi,
            bindings::ib_qp_type_IB_QPT_RC => Self::Rc,
            bindings::ib_qp_type_IB_QPT_UC => Self::Uc,
            bindings::ib_qp_type_IB_QPT_UD => Self::Ud,
            bindings::ib_qp_type_IB_QPT_XRC_INI => Self::XrcIni,
            bindings::ib_qp_type_IB_QPT_XRC_TGT => Self::XrcTgt,
            ty => Self::Other(ty),
        }
    }

    pub(crate) fn to_raw(self) -> bindings::ib_qp_type {
        match self {
            Self::Smi => bindings::ib_qp_type_IB_QPT_SMI,
            Self::Gsi => bindings::ib_qp_type_IB_QPT_GSI,
            Self::Rc => bindings::ib_qp_type_IB_QPT_RC,
            Self::Uc => bindings::ib_qp_type_IB_QPT_UC,
            Self::Ud => bindings::ib_qp_type_IB_QPT_UD,
            Self::XrcIni => bindings::ib_qp_type_IB_QPT_XRC_INI,
            Self::XrcTgt => bindings::ib_qp_type_IB_QPT_XRC_TGT,
            Self::Other(t) => t as bindings::ib_qp_type,
        }
    }
}

/// What `create_qp` was asked for. It holds the core's CQ, SRQ and XRC
/// domain pointers of the create call, which the driver reaches through
/// [`Self::cqs`], [`Self::srq`] and [`Self::xrcd`]: drivers get it by
/// reference, and it cannot be copied out of the call.
#[derive(Debug)]
pub struct QpInit {
    /// Transport.
    pub ty: QpType,
    /// Requested capacities.
    pub cap: QpCap,
    /// Every send work request completes (`IB_SIGNAL_ALL_WR`).
    pub sig_all: bool,
    /// `create_flags`.
    pub create_flags: u32,
    /// Port, for GSI/SMI QPs.
    pub port_num: u32,
    /// Receives come from an SRQ.
    pub has_srq: bool,
    /// Both CQs were given.
    pub has_cqs: bool,
    send_cq: *mut bindings::ib_cq,
    recv_cq: *mut bindings::ib_cq,
    srq: *mut bindings::ib_srq,
    xrcd: *mut bindings::ib_xrcd,
    /// The address of the QP's C object: an opaque handle that kernel
    /// completions carry back (`Wc::qp_cookie`).
    pub handle: usize,
}

impl QpInit {
    /// # Safety
    ///
    /// `raw` must point to a valid `ib_qp_init_attr` for the call.
    pub(crate) unsafe fn from_raw(raw: *const bindings::ib_qp_init_attr) -> Self {
        // SAFETY: The caller's promise.
        let raw = unsafe { &*raw };
        Self {
            ty: QpType::from_raw(raw.qp_type),
            cap: cap_from_raw(&raw.cap),
            sig_all: raw.sq_sig_type == bindings::ib_sig_type_IB_SIGNAL_ALL_WR,
            create_flags: raw.create_flags,
            port_num: raw.port_num,
            has_srq: !raw.srq.is_null(),
            has_cqs: !raw.send_cq.is_null() && !raw.recv_cq.is_null(),
            send_cq: raw.send_cq,
            recv_cq: raw.recv_cq,
            srq: raw.srq,
            xrcd: raw.xrcd,
            handle: 0,
        }
    }

    /// The SRQ receives come from, if any.
    pub fn srq<T: Driver>(&self) -> Option<&Srq<T>> {
        if self.srq.is_null() {
            return None;
        }
        // SAFETY: The core holds the SRQ (of this device, so of `T`) for
        // the call and, once the QP exists, for its life.
        Some(unsafe { Srq::from_raw(self.srq) })
    }

    /// The XRC domain of an XRC target QP.
    pub fn xrcd<T: Driver>(&self) -> Option<&Xrcd<T>> {
        if self.xrcd.is_null() {
            return None;
        }
        // SAFETY: The core holds the domain (of this device, so of `T`)
        // for the call and, once the QP exists, for its life.
        Some(unsafe { Xrcd::from_raw(self.xrcd) })
    }

    /// The send CQ, if given (an XRC initiator QP has no receive CQ).
    pub fn send_cq<T: Driver>(&self) -> Option<&Cq<T>> {
        if self.send_cq.is_null() {
            return None;
        }
        // SAFETY: The core holds the CQ (of this device, so of `T`) for
        // the call and, once the QP exists, for its life.
        Some(unsafe { Cq::from_raw(self.send_cq) })
    }

    /// The send and receive CQs, when both were given.
    pub fn cqs<T: Driver>(&self) -> Option<(&Cq<T>, &Cq<T>)> {
        if !self.has_cqs {
            return None;
        }
        // SAFETY: The core holds the CQs (of this device, so of `T`) for
        // the call and, once the QP exists, for its life.
        unsafe { Some((Cq::from_raw(self.send_cq), Cq::from_raw(self.recv_cq))) }
    }
}

fn cap_from_raw(cap: &bindings::ib_qp_cap) -> QpCap {
    QpCap {
        max_send_wr: cap.max_send_wr,
        max_recv_wr: cap.max_recv_wr,
        max_send_sge: cap.max_send_sge,
        max_recv_sge: cap.max_recv_sge,
        max_inline_data: cap.max_inline_data,
    }
}

pub(crate) fn cap_to_raw(cap: &QpCap, out: &mut bindings::ib_qp_cap) {
    out.max_send_wr = cap.max_send_wr;
    out.max_recv_wr = cap.max_recv_wr;
    out.max_send_sge = cap.max_send_sge;
    out.max_recv_sge = cap.max_recv_sge;
    out.max_inline_data = cap.max_inline_data;
}

/// Reads an AV; its source GID only if `with_sgid` (the caller knows the
/// core filled `grh.sgid_attr`: other fields may be uninitialised when the
/// mask does not name the AV).
pub(crate) fn av_from_raw(ah_attr: &bindings::rdma_ah_attr, with_sgid: bool) -> Av {
    // SAFETY: `raw` covers the whole GID union; `roce` is the member the
    // core fills for RoCE address handles (and zero otherwise).
    let (dgid, dmac) = unsafe {
        (
            *ah_attr.grh.dgid.raw.as_ref(),
            ah_attr.__bindgen_anon_1.roce.as_ref().dmac,
        )
    };
    let sgid = if with_sgid {
        // SAFETY: The core resolves and references the source GID attribute
        // for the call (or leaves it null).
        let attr = unsafe { ah_attr.grh.sgid_attr.as_ref() };
        // SAFETY: `raw` covers the whole GID union.
        attr.map_or([0; 16], |g| unsafe { *g.gid.raw.as_ref() })
    } else {
        [0; 16]
    };
    Av {
        sgid,
        dgid,
        sgid_index: ah_attr.grh.sgid_index,
        flow_label: ah_attr.grh.flow_label,
        hop_limit: ah_attr.grh.hop_limit,
        traffic_class: ah_attr.grh.traffic_class,
        sl: ah_attr.sl,
        static_rate: ah_attr.static_rate,
        dmac,
        port_num: ah_attr.port_num,
    }
}

pub(crate) fn av_to_raw(av: &Av, out: &mut bindings::rdma_ah_attr) {
    // SAFETY: All-zero is a valid `rdma_ah_attr` (a null GID attribute).
    *out = unsafe { core::mem::zeroed() };
    out.type_ = bindings::rdma_ah_attr_type_RDMA_AH_ATTR_TYPE_ROCE;
    out.ah_flags = bindings::ib_ah_flags_IB_AH_GRH as u8;
    out.port_num = av.port_num;
    out.sl = av.sl;
    out.static_rate = av.static_rate;
    out.grh.flow_label = av.flow_label;
    out.grh.sgid_index = av.sgid_index;
    out.grh.hop_limit = av.hop_limit;
    out.grh.traffic_class = av.traffic_class;
    // SAFETY: Writing plain-data union members.
    unsafe {
        *out.grh.dgid.raw.as_mut() = av.dgid;
        out.__bindgen_anon_1.roce.as_mut().dmac = av.dmac;
    }
}

/// Reads the attributes of a `modify_qp` call. Invalid state values map
/// to `None`.
pub(crate) fn attrs_from_raw(
    attr: &bindings::ib_qp_attr,
    mask: u32,
) -> Option<(QpAttrs, Option<QpState>, QpCap)> {
    Some((
        QpAttrs {
            state: QpState::from_raw(attr.qp_state).unwrap_or_default(),
            path_mtu: attr.path_mtu,
            path_mig_state: attr.path_mig_state,
            qkey: attr.qkey,
            rq_psn: attr.rq_psn,
            sq_psn: attr.sq_psn,
            dest_qp_num: attr.dest_qp_num,
            qp_access_flags: attr.qp_access_flags as u32,
            av: av_from_raw(
                &attr.ah_attr,
                mask & bindings::ib_qp_attr_mask_IB_QP_AV != 0,
            ),
            alt_av: av_from_raw(&attr.alt_ah_attr, false),
            pkey_index: attr.pkey_index,
            alt_pkey_index: attr.alt_pkey_index,
            en_sqd_async_notify: attr.en_sqd_async_notify,
            sq_draining: attr.sq_draining,
            max_rd_atomic: attr.max_rd_atomic,
            max_dest_rd_atomic: attr.max_dest_rd_atomic,
            min_rnr_timer: attr.min_rnr_timer,
            port_num: attr.port_num,
            timeout: attr.timeout,
            retry_cnt: attr.retry_cnt,
            rnr_retry: attr.rnr_retry,
            alt_port_num: attr.alt_port_num,
            alt_timeout: attr.alt_timeout,
        },
        QpState::from_raw(attr.cur_qp_state),
        cap_from_raw(&attr.cap),
    ))
    .filter(|_| QpState::from_raw(attr.qp_state).is_some())
}

/// Writes a QP's attributes for `query_qp`.
pub(crate) fn attrs_to_raw(attrs: &QpAttrs, cap: &QpCap, out: &mut bindings::ib_qp_attr) {
    out.qp_state = attrs.state as u32;
    out.cur_qp_state = attrs.state as u32;
    out.path_mtu = attrs.path_mtu;
    out.path_mig_state = attrs.path_mig_state;
    out.qkey = attrs.qkey;
    out.rq_psn = attrs.rq_psn;
    out.sq_psn = attrs.sq_psn;
    out.dest_qp_num = attrs.dest_qp_num;
    out.qp_access_flags = attrs.qp_access_flags as c_int;
    cap_to_raw(cap, &mut out.cap);
    av_to_raw(&attrs.av, &mut out.ah_attr);
    av_to_raw(&attrs.alt_av, &mut out.alt_ah_attr);
    out.pkey_index = attrs.pkey_index;
    out.alt_pkey_index = attrs.alt_pkey_index;
    out.en_sqd_async_notify = attrs.en_sqd_async_notify;
    out.sq_draining = attrs.sq_draining;
    out.max_rd_atomic = attrs.max_rd_atomic;
    out.max_dest_rd_atomic = attrs.max_dest_rd_atomic;
    out.min_rnr_timer = attrs.min_rnr_timer;
    out.port_num = attrs.port_num;
    out.timeout = attrs.timeout;
    out.retry_cnt = attrs.retry_cnt;
    out.rnr_retry = attrs.rnr_retry;
    out.alt_port_num = attrs.alt_port_num;
    out.alt_timeout = attrs.alt_timeout;
}

/// Whether the IB spec allows moving a QP of type `ty` from `cur` to
/// `next` with the attributes `mask` names (the core's table).
pub fn transition_ok(cur: QpState, next: QpState, ty: QpType, mask: u32) -> bool {
    let t = ty.to_raw();
    // SAFETY: A pure table lookup.
    unsafe {
        bindings::ib_modify_qp_is_ok(
            cur as u32,
            next as u32,
            t,
            mask as bindings::ib_qp_attr_mask,
        )
    }
}

impl<T: Driver> Qp<T> {
    /// The QP's number.
    pub fn qp_num(&self) -> u32 {
        // SAFETY: Set at creation, then fixed.
        unsafe { (*self.as_raw()).qp_num }
    }

    /// The PD the QP belongs to (none for an XRC target QP).
    pub fn pd(&self) -> Option<&Pd<T>> {
        // SAFETY: Set by the core before creation (null for an XRC target
        // QP); the PD outlives the QP.
        let pd = unsafe { (*self.as_raw()).pd };
        // SAFETY: Not null, so a PD of this device, alive (above).
        (!pd.is_null()).then(|| unsafe { Pd::from_raw(pd) })
    }

    /// The send CQ (set by the core once the QP is created).
    pub fn send_cq(&self) -> Option<&Cq<T>> {
        // SAFETY: The core holds a reference on the CQ while the QP uses
        // it; CQs of this device carry `T`'s data.
        unsafe {
            (*self.as_raw())
                .send_cq
                .as_ref()
                .map(|c| Cq::from_raw(core::ptr::from_ref(c).cast_mut()))
        }
    }

    /// The receive CQ.
    pub fn recv_cq(&self) -> Option<&Cq<T>> {
        // SAFETY: As for `send_cq`.
        unsafe {
            (*self.as_raw())
                .recv_cq
                .as_ref()
                .map(|c| Cq::from_raw(core::ptr::from_ref(c).cast_mut()))
        }
    }
}

/// The `create_qp` op.
///
/// # Safety
///
/// The arguments of the core's `create_qp` call on a device of `T`: a
/// zeroed QP of `size_ib_qp` bytes with `device`, `pd` and `qp_type` set
/// (`pd` null for an XRC target QP, whose request names its domain), the
/// request, and the command's udata (null for kernel and XRC target QPs),
/// for the call.
pub(super) unsafe extern "C" fn create_qp_callback<T: Driver>(
    qp: *mut bindings::ib_qp,
    init: *mut bindings::ib_qp_init_attr,
    udata: *mut bindings::ib_udata,
) -> c_int {
    from_result(|| {
        // SAFETY: The core passes a valid request and udata (or null) for
        // the call.
        let (mut req, udata) = unsafe { (QpInit::from_raw(init), Udata::from_raw(udata)) };
        req.handle = qp as usize;
        // SAFETY: The core passes a QP with `pd` set or null.
        let pd = unsafe { (*qp).pd };
        let (data, qpn, cap) = if pd.is_null() {
            // Only an XRC target QP comes without a PD: it belongs to the
            // domain its request names instead.
            match (req.ty, req.xrcd::<T>()) {
                (QpType::XrcTgt, Some(xrcd)) if udata.is_none() => {
                    T::Qp::create_xrc_tgt(xrcd, &req)?
                }
                _ => return Err(EINVAL),
            }
        } else {
            // SAFETY: Not null: the PD of this device the QP is made in,
            // which the core holds for the call.
            T::Qp::create_qp(unsafe { Pd::<T>::from_raw(pd) }, &req, udata)?
        };
        // SAFETY: As above; the data part is uninitialised and ours, and
        // the request's capacities are reported back to the caller.
        unsafe {
            Qp::<T>::init_data(qp, data);
            (*qp).qp_num = qpn;
            cap_to_raw(&cap, &mut (*init).cap);
        }
        Ok(0)
    })
}

/// The `modify_qp` op.
///
/// # Safety
///
/// The arguments of the core's `modify_qp` call: a live QP of `T`, the
/// attributes and the command's udata (or null), for the call.
pub(super) unsafe extern "C" fn modify_qp_callback<T: Driver>(
    qp: *mut bindings::ib_qp,
    attr: *mut bindings::ib_qp_attr,
    mask: c_int,
    udata: *mut bindings::ib_udata,
) -> c_int {
    from_result(|| {
        // SAFETY: A live QP of this device, the attributes and the udata
        // of the call.
        let (q, a, udata) = unsafe { (Qp::<T>::from_raw(qp), &*attr, Udata::from_raw(udata)) };
        let (attrs, cur, _cap) = attrs_from_raw(a, mask as u32).ok_or(EINVAL)?;
        T::Qp::modify_qp(q, &attrs, cur, mask as u32, udata)?;
        Ok(0)
    })
}

/// The `query_qp` op.
///
/// # Safety
///
/// The arguments of the core's `query_qp` call: a live QP of `T` and the
/// two structures to fill, for the call.
pub(super) unsafe extern "C" fn query_qp_callback<T: Driver>(
    qp: *mut bindings::ib_qp,
    attr: *mut bindings::ib_qp_attr,
    _mask: c_int,
    init: *mut bindings::ib_qp_init_attr,
) -> c_int {
    from_result(|| {
        // SAFETY: A live QP of this device.
        let q = unsafe { Qp::<T>::from_raw(qp) };
        let (attrs, cap, sig_all) = T::Qp::query_qp(q)?;
        // SAFETY: The core passes output structures for the call; the
        // QP's C fields are fixed after creation.
        unsafe {
            attrs_to_raw(&attrs, &cap, &mut *attr);
            let i = &mut *init;
            i.qp_type = (*qp).qp_type;
            i.send_cq = (*qp).send_cq;
            i.recv_cq = (*qp).recv_cq;
            i.srq = (*qp).srq;
            i.event_handler = (*qp).event_handler;
            i.qp_context = (*qp).qp_context;
            i.port_num = (*qp).port;
            i.sq_sig_type = if sig_all {
                bindings::ib_sig_type_IB_SIGNAL_ALL_WR
            } else {
                bindings::ib_sig_type_IB_SIGNAL_REQ_WR
            };
            cap_to_raw(&cap, &mut i.cap);
        }
        Ok(0)
    })
}

/// The `destroy_qp` op: the driver may refuse; its data is dropped after
/// it agrees.
///
/// # Safety
///
/// `qp` must be a QP of `T` for which `create_qp` succeeded and that has
/// not been destroyed, passed by the core's `destroy_qp` call.
pub(super) unsafe extern "C" fn destroy_qp_callback<T: Driver>(
    qp: *mut bindings::ib_qp,
    _udata: *mut bindings::ib_udata,
) -> c_int {
    from_result(|| {
        // SAFETY: A live QP of this device, created by `create_qp`.
        T::Qp::destroy_qp(unsafe { Qp::<T>::from_raw(qp) })?;
        // SAFETY: As above; the core frees the QP after success and
        // the data is not used again.
        unsafe { Qp::<T>::drop_data(qp) };
        Ok(0)
    })
}

/// The `post_send` op: a list of kernel work requests, each in turn until
/// one fails (reported through `bad`), or with no list the user doorbell.
///
/// # Safety
///
/// The arguments of an `ib_post_send` call (or of the uverbs doorbell,
/// with a null `wr`): a live QP of `T`, a list of valid work requests of
/// the types the QP type and their opcodes imply, with AHs of `T`, and a
/// valid or null `bad`, for the call.
pub(super) unsafe extern "C" fn post_send_callback<T: Driver>(
    qp: *mut bindings::ib_qp,
    wr: *const bindings::ib_send_wr,
    bad: *mut *const bindings::ib_send_wr,
) -> c_int {
    if !wr.is_null() {
        // SAFETY: A live QP of this device.
        let (q, ud) = unsafe {
            let t = (*qp).qp_type;
            (
                Qp::<T>::from_raw(qp),
                t == bindings::ib_qp_type_IB_QPT_UD || t == bindings::ib_qp_type_IB_QPT_GSI,
            )
        };
        let mut cur = wr;
        while !cur.is_null() {
            // SAFETY: The poster's list: each entry valid for the call,
            // embedded in the type its QP type and opcode imply; AHs
            // of UD requests belong to this device.
            let w = unsafe { SendWr::<T>::from_raw(cur, ud) };
            if let Err(e) = T::Qp::post_send_kernel(q, &w) {
                if !bad.is_null() {
                    // SAFETY: The caller's output pointer.
                    unsafe { *bad = cur };
                }
                return e.to_errno();
            }
            // SAFETY: As above.
            cur = unsafe { (*cur).next };
        }
        return 0;
    }
    from_result(|| {
        // SAFETY: A live QP of this device.
        T::Qp::post_send_user(unsafe { Qp::<T>::from_raw(qp) })?;
        Ok(0)
    })
}

/// The `post_recv` op: each work request of the list in turn, until one
/// fails (it is reported through `bad`).
///
/// # Safety
///
/// The arguments of an `ib_post_recv` call: a live QP of `T`, a list of
/// valid work requests and a valid or null `bad`, for the call.
pub(super) unsafe extern "C" fn post_recv_callback<T: Driver>(
    qp: *mut bindings::ib_qp,
    wr: *const bindings::ib_recv_wr,
    bad: *mut *const bindings::ib_recv_wr,
) -> c_int {
    // SAFETY: A live QP of this device.
    let q = unsafe { Qp::<T>::from_raw(qp) };
    let mut cur = wr;
    while !cur.is_null() {
        // SAFETY: The poster's list, each entry valid for the call.
        let w = unsafe { RecvWr::from_raw(cur) };
        if let Err(e) = T::Qp::post_recv(q, &w) {
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

/// The `attach_mcast` op.
///
/// # Safety
///
/// The arguments of the core's `attach_mcast` call: a live QP of `T` and
/// the group's GID, for the call.
pub(super) unsafe extern "C" fn attach_mcast_callback<T: Driver>(
    qp: *mut bindings::ib_qp,
    gid: *mut bindings::ib_gid,
    _lid: u16,
) -> c_int {
    from_result(|| {
        // SAFETY: A live QP of this device and the group's GID, for the
        // call; `raw` covers the whole GID union.
        let (q, g) = unsafe { (Qp::<T>::from_raw(qp), *(*gid).raw.as_ref()) };
        T::Qp::attach_mcast(q, &g)?;
        Ok(0)
    })
}

/// The `detach_mcast` op.
///
/// # Safety
///
/// As for [`attach_mcast_callback`].
pub(super) unsafe extern "C" fn detach_mcast_callback<T: Driver>(
    qp: *mut bindings::ib_qp,
    gid: *mut bindings::ib_gid,
    _lid: u16,
) -> c_int {
    from_result(|| {
        // SAFETY: As in `attach_mcast_callback`.
        let (q, g) = unsafe { (Qp::<T>::from_raw(qp), *(*gid).raw.as_ref()) };
        T::Qp::detach_mcast(q, &g)?;
        Ok(0)
    })
}
