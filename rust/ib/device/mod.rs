// SPDX-License-Identifier: GPL-2.0

//! RDMA devices: the driver trait, registration and the ops table.
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h)
//!
//! Lifecycle. [`NewDevice::new`] allocates an `ib_device` with the driver's
//! data embedded after it and installs the ops. [`NewDevice::register`]
//! hands the device to the IB core, which owns it from then on: it ends with
//! `ib_dealloc_device`, which calls our `dealloc_driver` op, which drops the
//! driver data. That happens on `rdma link delete`, on
//! [`Device::unregister_queued`] (netdev unregister), on
//! [`unregister_all`] (module exit), or when registration fails. Every
//! device this layer created is kept in a registry until `dealloc_driver`,
//! so module exit finds them all without touching other drivers' devices
//! that share the driver id.
//!
//! Files: `registration` ([`Device`], [`NewDevice`], the registry and
//! unregistration), `ops` (the `ib_device_ops` table) and `port` (device,
//! port and GID queries). The callbacks of each object family live next to
//! its abstraction: [`super::cq`], [`super::qp`], [`super::srq`],
//! [`super::mr`], [`super::mw`], [`super::dm`], [`super::ah`] and
//! [`super::pd`].

mod ops;
mod port;
mod registration;

pub(super) use registration::{init_registry, release_registry};
pub use registration::{unregister_all, Device, NewDevice};

use super::{
    ah::AhInit,
    attr::{DeviceAttrs, PortAttrs, PortImmutable},
    cq::{CqAttr, CqRef, NotifyFlags, WcOut},
    dm::{Dm, DmMrRequest, DmRequest},
    mr::{FastRegType, Mr, ReregFlags, UserMrRequest},
    object::{Ah, Cq, Pd, Qp, Srq, Ucontext},
    qp::QpInit,
    srq::{SrqAttr, SrqInit, SrqMask, SrqRef},
    stats,
    udata::Udata,
    wr::{RecvWr, SendWr},
};
use crate::logic::{
    access::MwType,
    qp::{Av, QpAttrs, QpCap, QpState},
};
use kernel::prelude::*;

/// The operations a provider implements.
///
/// Callbacks are called by the IB core in process context. Optional ones are
/// only installed in the ops table when the driver implements them
/// (`HAS_*`).
#[vtable]
pub trait Driver: Sized + Send + Sync + 'static {
    /// Per-device driver state, embedded after the `ib_device`.
    type Data: Send + Sync;
    /// Per-process context state.
    type Ucontext: Send + Sync;
    /// Protection domain state.
    type Pd: Send + Sync;
    /// Memory region state.
    type Mr: Send + Sync;
    /// Memory window state.
    type Mw: Send + Sync;
    /// Device memory state.
    type Dm: Send + Sync;
    /// Completion queue state.
    type Cq: Send + Sync;
    /// Queue pair state.
    type Qp: Send + Sync;
    /// Address handle state.
    type Ah: Send + Sync;
    /// Shared receive queue state.
    type Srq: Send + Sync;

    /// `enum rdma_driver_id` the device reports (selects the user provider).
    const DRIVER_ID: u32;
    /// uverbs ABI version the user provider expects.
    const UVERBS_ABI_VER: u32;

    /// Device attributes.
    fn query_device(dev: &Device<Self>) -> Result<DeviceAttrs>;
    /// Port attributes; the layer has already checked `port == 1`.
    fn query_port(dev: &Device<Self>, port: u32) -> Result<PortAttrs>;
    /// The P_Key at `index`.
    fn query_pkey(dev: &Device<Self>, port: u32, index: u16) -> Result<u16>;
    /// Immutable port data.
    fn port_immutable(dev: &Device<Self>, port: u32) -> Result<PortImmutable>;
    /// A new user context.
    fn alloc_ucontext(dev: &Device<Self>, udata: Option<&Udata>) -> Result<Self::Ucontext>;
    /// A new protection domain.
    fn alloc_pd(dev: &Device<Self>, udata: Option<&Udata>) -> Result<Self::Pd>;

    /// Called once the device is registered and visible.
    fn enable(_dev: &Device<Self>) -> Result {
        build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// Registers user memory; returns the MR's data and its key (used as
    /// both lkey and rkey).
    fn reg_user_mr(
        _pd: &Pd<Self>,
        _req: UserMrRequest,
        _udata: Option<&Udata>,
    ) -> Result<(Self::Mr, u32)> {
        build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// Re-registers `mr` with the parts `flags` names changed. Returns the
    /// data and key of a replacement MR, which the core puts in the old
    /// one's place before deregistering the old one.
    fn rereg_user_mr(
        _mr: &Mr<Self>,
        _flags: ReregFlags,
        _req: UserMrRequest,
        _new_pd: &Pd<Self>,
        _udata: Option<&Udata>,
    ) -> Result<(Self::Mr, u32)> {
        build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// An MR covering all kernel memory, for kernel users.
    fn get_dma_mr(_pd: &Pd<Self>, _access: u32) -> Result<(Self::Mr, u32)> {
        build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// A fast-registration MR of type `ty` for kernel users, able to hold
    /// `max_num_sg` pages; returns its data and key. It starts unusable
    /// until a registration work request makes it valid.
    fn alloc_mr(_pd: &Pd<Self>, _ty: FastRegType, _max_num_sg: u32) -> Result<(Self::Mr, u32)> {
        build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// `ib_map_mr_sg` begins on `mr` (from `alloc_mr`): forget the pages of
    /// any earlier mapping. Pages are `page_size` bytes.
    fn map_mr_sg_start(_mr: &Mr<Self>, _page_size: u32) -> Result {
        build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// The next page of the mapping, by DMA address (a kernel virtual
    /// address: rrxe's devices have no DMA device). An error ends the
    /// mapping there (the MR is full).
    fn map_mr_sg_page(_mr: &Mr<Self>, _addr: u64) -> Result {
        build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// The mapping ended with `n` scatterlist entries mapped; the core set
    /// the MR's address range to `(iova, length)`.
    fn map_mr_sg_done(_mr: &Mr<Self>, _n: u32, _iova: u64, _length: u64) {
        build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// A new CQ: for a user context (with the command's udata) or, with
    /// `user` `None`, for a kernel consumer. Returns the data and the
    /// capacity made (at least `attr.cqe`). `this` is a handle to the CQ
    /// being created, valid (for notifications) once this returns `Ok`.
    fn create_cq(
        _dev: &Device<Self>,
        _attr: CqAttr,
        _user: Option<(&Ucontext<Self>, Option<&Udata>)>,
        _this: CqRef<Self>,
    ) -> Result<(Self::Cq, u32)> {
        build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// Resizes a user CQ to at least `cqe` entries; returns the capacity.
    fn resize_cq(_cq: &Cq<Self>, _cqe: u32, _udata: Option<&Udata>) -> Result<u32> {
        build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// Arms a CQ; returns whether completions are waiting, when asked to
    /// report missed events.
    fn req_notify_cq(_cq: &Cq<Self>, _flags: NotifyFlags) -> Result<bool> {
        build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// Moves completions of a kernel CQ into `out`, oldest first.
    fn poll_cq(_cq: &Cq<Self>, _out: &mut WcOut<'_>) {
        build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// How many completions a kernel CQ holds, up to `n`.
    fn peek_cq(_cq: &Cq<Self>, _n: u32) -> u32 {
        build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// A new address handle in `pd`; `udata` is the user command's (the
    /// driver writes its response there).
    fn create_ah(_pd: &Pd<Self>, _init: &AhInit, _udata: Option<&Udata>) -> Result<Self::Ah> {
        build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// The address vector of an AH.
    fn query_ah(_ah: &Ah<Self>) -> Result<Av> {
        build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// A new SRQ in `pd`; returns its data and the attributes it has.
    /// `this` is a handle to the SRQ being created, for raising its limit
    /// event later.
    fn create_srq(
        _pd: &Pd<Self>,
        _init: &SrqInit,
        _udata: Option<&Udata>,
        _this: SrqRef<Self>,
    ) -> Result<(Self::Srq, SrqAttr)> {
        build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// Changes the attributes `mask` names.
    fn modify_srq(
        _srq: &Srq<Self>,
        _attr: SrqAttr,
        _mask: SrqMask,
        _udata: Option<&Udata>,
    ) -> Result {
        build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// The SRQ's attributes.
    fn query_srq(_srq: &Srq<Self>) -> Result<SrqAttr> {
        build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// Attaches a UD QP to the multicast group `gid` (the core checked the
    /// QP type and the address).
    fn attach_mcast(_qp: &Qp<Self>, _gid: &[u8; 16]) -> Result {
        build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// Detaches a QP from a multicast group.
    fn detach_mcast(_qp: &Qp<Self>, _gid: &[u8; 16]) -> Result {
        build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// The port's counter values, indexed by [`stats::Counter`].
    fn hw_counters(_dev: &Device<Self>, _port: u32) -> [u64; stats::NUM_COUNTERS] {
        build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// A new QP in `pd`. Returns its data, its number and the capacities
    /// it has (at least those asked for), which go back to the caller.
    fn create_qp(
        _pd: &Pd<Self>,
        _init: &QpInit,
        _udata: Option<&Udata>,
    ) -> Result<(Self::Qp, u32, QpCap)> {
        build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// Changes the attributes `mask` names to the values in `attrs`;
    /// `cur` is the current state the caller claims (`IB_QP_CUR_STATE`).
    fn modify_qp(
        _qp: &Qp<Self>,
        _attrs: &QpAttrs,
        _cur: Option<QpState>,
        _mask: u32,
        _udata: Option<&Udata>,
    ) -> Result {
        build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// The QP's attributes, capacities and whether all sends signal.
    fn query_qp(_qp: &Qp<Self>) -> Result<(QpAttrs, QpCap, bool)> {
        build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// A RoCEv2 packet arrived for `dev` (the IP packet with its UDP
    /// header, maybe followed by link padding), in process context. Set
    /// up by [`super::net::init`]; packets are dropped by default.
    fn rx_packet(_dev: &Device<Self>, _pkt: &[u8]) {}

    /// A kernel send work request (one of a posted list), on a kernel QP.
    /// May be called in atomic context: must not sleep.
    fn post_send_kernel(_qp: &Qp<Self>, _wr: &SendWr<'_, Self>) -> Result {
        Err(EOPNOTSUPP)
    }

    /// A kernel receive work request, on a kernel QP. Must not sleep.
    fn post_recv(_qp: &Qp<Self>, _wr: &RecvWr<'_>) -> Result {
        Err(EOPNOTSUPP)
    }

    /// A kernel receive work request, on a kernel SRQ. Must not sleep.
    fn post_srq_recv(_srq: &Srq<Self>, _wr: &RecvWr<'_>) -> Result {
        Err(EOPNOTSUPP)
    }

    /// The user doorbell (`post_send` with no work requests): process the
    /// send queue up to the producer index.
    fn post_send_user(_qp: &Qp<Self>) -> Result {
        build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// Asked before a QP is destroyed; an error keeps it. Its data is
    /// dropped after `Ok`.
    fn destroy_qp(_qp: &Qp<Self>) -> Result {
        Ok(())
    }

    /// Asked before an MR is deregistered; an error keeps the MR (rxe refuses
    /// while memory windows are bound). The MR's data is dropped after `Ok`.
    fn dereg_mr(_mr: &Mr<Self>) -> Result {
        Ok(())
    }

    /// A new memory window of type `ty` in `pd`; returns its data and rkey.
    fn alloc_mw(_pd: &Pd<Self>, _ty: MwType, _udata: Option<&Udata>) -> Result<(Self::Mw, u32)> {
        build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// New device memory for `uc`'s process; returns its data and the
    /// offset at which the process maps it (reported to userspace through
    /// the [`super::dm::ALLOC_DM_RESP_MMAP_OFFSET`] attribute). Dropping the data
    /// frees the device memory.
    fn alloc_dm(_uc: &Ucontext<Self>, _req: DmRequest) -> Result<(Self::Dm, u64)> {
        build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// Registers part of `dm` as a zero-based MR in `pd`; returns the MR's
    /// data and key. Only called when `alloc_dm` is implemented.
    fn reg_dm_mr(_pd: &Pd<Self>, _dm: &Dm<Self>, _req: DmMrRequest) -> Result<(Self::Mr, u32)> {
        build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }
}
