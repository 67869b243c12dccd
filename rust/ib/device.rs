// SPDX-License-Identifier: GPL-2.0

//! RDMA devices: allocation, the ops table, registration and unregistration.
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

use super::{
    ah::AhInit,
    attr::{DeviceAttrs, PortAttrs, PortImmutable},
    bindings,
    cq::{CqAttr, CqRef, NotifyFlags, WcOut},
    dm::{self, Dm, DmMrRequest, DmRequest, DmSlot},
    mmap,
    mr::{FastRegType, Mr, MrSlot, ReregFlags, UserMrRequest},
    netdev::NetDev,
    object::{Ah, Cq, Mw, Pd, Qp, Srq, Ucontext},
    qp::{self, QpInit},
    srq::{SrqAttr, SrqInit, SrqMask, SrqRef},
    stats,
    udata::Udata,
    wr::{RecvWr, SendWr},
};
use crate::logic::{
    access::MwType,
    pma,
    qp::{Av, QpAttrs, QpCap, QpState},
};
use core::{marker::PhantomData, ptr::NonNull};
use kernel::{error::from_result, prelude::*, types::Opaque};
use pin_init::PinInit;

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
    /// the [`dm::ALLOC_DM_RESP_MMAP_OFFSET`] attribute). Dropping the data
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

/// Link layer of every port: Ethernet (RoCE).
const LINK_LAYER_ETHERNET: bindings::rdma_link_layer =
    bindings::rdma_link_layer_IB_LINK_LAYER_ETHERNET;

/// An RDMA device created by this layer, with driver data `T::Data`.
///
/// # Invariants
///
/// - `ibdev` was allocated by `_ib_alloc_device` with the size of `Self`, so
///   `data` lies in the same allocation.
/// - `data` is initialised from the time the ops are installed until
///   `dealloc_driver` drops it; a `&Device<T>` is only formed in that window
///   (inside callbacks the core makes while the device is alive, or while
///   holding a registration reference).
#[repr(C)]
pub struct Device<T: Driver> {
    ibdev: Opaque<bindings::ib_device>,
    data: T::Data,
}

// SAFETY: The IB core calls into a device from any thread; `T::Data` is
// `Send + Sync` and the `ib_device` is protected by the core's locking.
unsafe impl<T: Driver> Send for Device<T> {}
// SAFETY: See above.
unsafe impl<T: Driver> Sync for Device<T> {}

impl<T: Driver> Device<T> {
    /// Forms a reference from the `ib_device` pointer the core passes.
    ///
    /// # Safety
    ///
    /// `ptr` must be a device created by this layer for `T`, with its data
    /// alive for `'a` (see the type invariants).
    pub(crate) unsafe fn from_raw<'a>(ptr: *mut bindings::ib_device) -> &'a Self {
        // CAST: `ibdev` is the first field of a `#[repr(C)]` struct.
        // SAFETY: The caller guarantees validity for `'a`.
        unsafe { &*ptr.cast::<Self>() }
    }

    /// The raw `ib_device`.
    pub(crate) fn as_raw(&self) -> *mut bindings::ib_device {
        self.ibdev.get()
    }

    /// The driver's per-device data.
    pub fn data(&self) -> &T::Data {
        &self.data
    }

    /// The device name (`rdma link` name).
    pub fn name(&self) -> &CStr {
        // SAFETY: `dev.kobj.name` is set by `assign_name` before any callback
        // and is NUL-terminated.
        unsafe { CStr::from_ptr(bindings::rrxe_ib_device_name(self.as_raw()).cast()) }
    }

    /// The netdev bound to `port`, with a reference held.
    pub fn netdev(&self, port: u32) -> Option<ARef<NetDev>> {
        // SAFETY: The device is alive; `ib_device_get_netdev` returns a held
        // netdev or null.
        unsafe { NetDev::from_held(bindings::ib_device_get_netdev(self.as_raw(), port)) }
    }

    /// Active speed and width of an Ethernet port, as the core derives them
    /// from the netdev's link settings.
    pub fn eth_speed(&self, port: u32) -> Result<(u16, u8)> {
        let mut speed: u16 = 0;
        let mut width: u8 = 0;
        // SAFETY: The device is alive; both out-pointers are valid.
        kernel::error::to_result(unsafe {
            bindings::ib_get_eth_speed(self.as_raw(), port, &mut speed, &mut width)
        })?;
        Ok((speed, width))
    }

    /// Schedules unregistration on the core's workqueue (safe under RTNL).
    ///
    /// The device, and with it `self`, may be freed at any time after this.
    pub fn unregister_queued(&self) {
        // SAFETY: The device is registered (we are called from a callback
        // holding a registration reference); the core queues the work.
        unsafe { bindings::ib_unregister_device_queued(self.as_raw()) };
    }

    /// Whether `gid` is one of port `port`'s RoCEv2 GIDs (a destination on
    /// this device).
    pub fn has_gid(&self, port: u32, gid: &[u8; 16]) -> bool {
        // SAFETY: All-zero is a valid GID union.
        let mut g: bindings::ib_gid = unsafe { core::mem::zeroed() };
        // SAFETY: Writing the raw member of a plain-data union.
        unsafe { *g.raw.as_mut() = *gid };
        // SAFETY: A live device; the lookup takes a reference on a match,
        // dropped at once.
        unsafe {
            let a = bindings::rdma_find_gid_by_port(
                self.as_raw(),
                &g,
                bindings::ib_gid_type_IB_GID_TYPE_ROCE_UDP_ENCAP,
                port,
                core::ptr::null_mut(),
            );
            if bindings::rrxe_is_err(a.cast()) || a.is_null() {
                return false;
            }
            bindings::rdma_put_gid_attr(a);
            true
        }
    }

    /// The device behind a core pointer the caller holds a registration
    /// reference on, if it is one of `T`'s (not another RXE driver's).
    pub(crate) fn from_raw_if_ours<'a>(ib: *mut bindings::ib_device) -> Option<&'a Self> {
        if ib.is_null() {
            return None;
        }
        // SAFETY: A live registered device (the caller's reference).
        let ours = unsafe { (*ib).ops.dealloc_driver }.map(|f| f as usize)
            == Some(Adapter::<T>::DEALLOC as usize);
        // SAFETY: Ours and registered: data alive while the reference is
        // held (the type invariant); `'a` is bounded by the caller's use.
        ours.then(|| unsafe { Self::from_raw(ib) })
    }

    /// Runs `f` on the device of type `T` bound to `ndev`, if any.
    ///
    /// Returns `None` when no RXE-driver device is bound to `ndev`, and
    /// `Some(None)` when one is, but it belongs to another driver (such as
    /// the in-tree `rdma_rxe`).
    pub fn with_netdev<R>(ndev: &NetDev, f: impl FnOnce(&Self) -> R) -> Option<Option<R>> {
        // SAFETY: `ndev` is live; the result carries a registration
        // reference (`ib_device_try_get`) or is null.
        let ib = unsafe { bindings::rrxe_ib_device_get_by_netdev(ndev.as_raw()) };
        if ib.is_null() {
            return None;
        }
        // SAFETY: `ib` is a live registered device.
        let ours = unsafe { (*ib).ops.dealloc_driver }.map(|f| f as usize)
            == Some(Adapter::<T>::DEALLOC as usize);
        let r = if ours {
            // SAFETY: Ours, and registered: data alive while the reference is
            // held (the type invariant).
            Some(f(unsafe { Self::from_raw(ib) }))
        } else {
            None
        };
        // SAFETY: Drops the reference taken above.
        unsafe { bindings::ib_device_put(ib) };
        Some(r)
    }
}

/// A device that is allocated but not yet registered.
///
/// # Invariants
///
/// `dev` points to a device allocated by `_ib_alloc_device`, with data
/// initialised and ops installed, owned by this object and not registered.
pub struct NewDevice<T: Driver> {
    dev: NonNull<Device<T>>,
}

impl<T: Driver> NewDevice<T> {
    /// Allocates a device in `ndev`'s network namespace with driver data
    /// `data`, and installs `T`'s ops.
    pub fn new(
        module: &ThisModule,
        ndev: &NetDev,
        data: impl PinInit<T::Data, Error>,
    ) -> Result<Self> {
        const { assert!(core::mem::offset_of!(Device<T>, ibdev) == 0) };
        // SAFETY: `ndev` is live; `dev_net` reads its namespace.
        let net = unsafe { bindings::rrxe_dev_net(ndev.as_raw()) };
        // SAFETY: The size covers the `ib_device` and the driver data.
        let ib = unsafe { bindings::rrxe_ib_alloc_device(core::mem::size_of::<Device<T>>(), net) };
        let ptr = NonNull::new(ib.cast::<Device<T>>()).ok_or(ENOMEM)?;
        // kzalloc's alignment must satisfy the driver data's.
        const { assert!(core::mem::align_of::<Device<T>>() <= 8) };

        // SAFETY: `data` lies inside the fresh allocation and is not yet
        // initialised; on failure nothing was written.
        let r = unsafe { PinInit::__init(data, &raw mut (*ptr.as_ptr()).data) };
        if let Err(e) = r {
            // SAFETY: No ops installed yet, so this only frees the device.
            unsafe { bindings::ib_dealloc_device(ib) };
            return Err(e);
        }

        let ops = Adapter::<T>::ops(module);
        // SAFETY: The device is ours; `ib_set_device_ops` copies the table.
        unsafe {
            bindings::ib_set_device_ops(ib, &ops);
            (*ib).node_type = bindings::RDMA_NODE_IB_CA as _;
            (*ib).phys_port_cnt = 1;
            (*ib).local_dma_lkey = 0;
            if T::HAS_ALLOC_DM {
                // Declares the DM alloc method's mmap-offset attribute.
                bindings::rrxe_ib_set_dm_uapi(ib);
            }
            (*ib).uverbs_cmd_mask |= (1u64
                << bindings::ib_uverbs_write_cmds_IB_USER_VERBS_CMD_POST_SEND)
                | (1u64 << bindings::ib_uverbs_write_cmds_IB_USER_VERBS_CMD_REQ_NOTIFY_CQ);
        }
        // INVARIANT: Allocated, data initialised, ops installed, unregistered.
        let this = Self { dev: ptr };
        registry_add(ib)?; // On failure `this` is dropped: dealloc frees all.
        Ok(this)
    }

    fn raw(&self) -> *mut bindings::ib_device {
        self.dev.as_ptr().cast()
    }

    /// The device, for reading driver data before registration.
    pub fn device(&self) -> &Device<T> {
        // SAFETY: Data is initialised (the type invariant).
        unsafe { self.dev.as_ref() }
    }

    /// Sets the node GUID (network byte order).
    pub fn set_node_guid(&mut self, guid: [u8; 8]) {
        // SAFETY: Unregistered and owned by us.
        unsafe { (*self.raw()).node_guid = u64::from_ne_bytes(guid) };
    }

    /// Sets the node description (truncated to 63 bytes).
    pub fn set_node_desc(&mut self, desc: &[u8]) {
        // SAFETY: Unregistered and owned by us.
        let nd = unsafe { &mut (*self.raw()).node_desc };
        let n = desc.len().min(nd.len() - 1);
        for (d, s) in nd.iter_mut().zip(desc[..n].iter()) {
            *d = *s as _;
        }
        nd[n] = 0;
    }

    /// Sets how many completion vectors the device offers.
    pub fn set_num_comp_vectors(&mut self, n: u32) {
        // SAFETY: Unregistered and owned by us.
        unsafe { (*self.raw()).num_comp_vectors = n as _ };
    }

    /// Registers the device as `name`, bound to `ndev` on port 1, with the
    /// netdev's parent as its sysfs parent where there is one.
    ///
    /// Ownership passes to the IB core whether or not this succeeds.
    pub fn register(self, name: &CStr, ndev: &NetDev) -> Result {
        let ib = self.raw();
        // From here on the core (or the error path below) frees the device.
        core::mem::forget(self);
        // SAFETY: `ib` is our unregistered device; `ndev` is live.
        let r = unsafe {
            let r = bindings::ib_device_set_netdev(ib, ndev.as_raw(), 1);
            if r == 0 {
                bindings::rrxe_ib_set_parent(ib, ndev.as_raw());
                (*ib).name_assign_type =
                    bindings::rdma_nl_name_assign_type_RDMA_NAME_ASSIGN_TYPE_USER as _;
                bindings::ib_register_device(ib, name.as_char_ptr(), core::ptr::null_mut())
            } else {
                r
            }
        };
        if r != 0 {
            // SAFETY: Registration failed, so the device is still ours to
            // free; this calls `dealloc_driver`.
            unsafe { bindings::ib_dealloc_device(ib) };
        }
        kernel::error::to_result(r)
    }
}

impl<T: Driver> Drop for NewDevice<T> {
    fn drop(&mut self) {
        // SAFETY: Never registered; this calls `dealloc_driver` and frees.
        unsafe { bindings::ib_dealloc_device(self.raw()) };
    }
}

kernel::sync::global_lock! {
    // SAFETY: Initialised by `init_registry`, called from `ib::init` in
    // module init before any device exists.
    unsafe(uninit) static REGISTRY: Mutex<KVec<usize>> = KVec::new();
}

/// # Safety
///
/// Called once, before any use of the registry.
pub(super) unsafe fn init_registry() {
    // SAFETY: The caller guarantees single, early initialisation.
    unsafe { REGISTRY.init() };
}

/// Frees the registry's storage (a static is never dropped). For module
/// exit, after [`unregister_all`].
pub(super) fn release_registry() {
    let mut list = REGISTRY.lock();
    if !list.is_empty() {
        pr_warn!("{} devices still registered at exit\n", list.len());
    }
    *list = KVec::new();
}

fn registry_add(ib: *mut bindings::ib_device) -> Result {
    REGISTRY.lock().push(ib as usize, GFP_KERNEL)?;
    Ok(())
}

fn registry_remove(ib: *mut bindings::ib_device) -> bool {
    let mut list = REGISTRY.lock();
    if let Some(i) = list.iter().position(|&p| p == ib as usize) {
        let _ = list.remove(i);
        true
    } else {
        false
    }
}

/// Unregisters every device of type `T` this layer created and waits for
/// each to be freed. For module exit, after link ops and notifiers are gone
/// so that no new devices appear.
pub fn unregister_all<T: Driver>() {
    loop {
        let ib = {
            let list = REGISTRY.lock();
            let found = list.iter().copied().find(|&p| {
                // SAFETY: Registry entries are live until `dealloc_driver`,
                // which removes them under this lock.
                let f = unsafe { (*(p as *mut bindings::ib_device)).ops.dealloc_driver };
                f.map(|f| f as usize) == Some(Adapter::<T>::DEALLOC as usize)
            });
            match found {
                None => return,
                Some(p) => {
                    let ib = p as *mut bindings::ib_device;
                    // SAFETY: Live (see above); pins the memory past the
                    // unregistration so the pointer stays valid to compare.
                    unsafe { bindings::rrxe_get_device(ib) };
                    ib
                }
            }
        };
        // SAFETY: We hold a device reference; unregistration is idempotent
        // and fenced by the core's unregistration lock.
        unsafe { bindings::ib_unregister_device(ib) };
        if registry_remove(ib) {
            // Still listed means it was never freed: it had no registration
            // left to undo. Do not loop on it.
            pr_warn!("device {:p} was not released on unregister\n", ib);
        }
        // SAFETY: Drops the reference taken above.
        unsafe { bindings::rrxe_put_device(ib) };
    }
}

/// The C callbacks for driver `T`.
pub(crate) struct Adapter<T: Driver>(PhantomData<T>);

impl<T: Driver> Adapter<T> {
    fn ops(module: &ThisModule) -> bindings::ib_device_ops {
        // SAFETY: All-zero is a valid ops table (all callbacks `None`).
        let mut o: bindings::ib_device_ops = unsafe { core::mem::zeroed() };
        o.owner = module.as_ptr();
        o.driver_id = T::DRIVER_ID;
        o.uverbs_abi_ver = T::UVERBS_ABI_VER;
        o.query_device = Some(Self::query_device);
        o.query_port = Some(Self::query_port);
        o.query_pkey = Some(Self::query_pkey);
        o.query_gid = Some(Self::query_gid);
        o.get_port_immutable = Some(Self::get_port_immutable);
        o.get_link_layer = Some(Self::get_link_layer);
        o.alloc_ucontext = Some(Self::alloc_ucontext);
        o.dealloc_ucontext = Some(Self::dealloc_ucontext);
        o.disassociate_ucontext = Some(Self::disassociate_ucontext);
        o.alloc_pd = Some(Self::alloc_pd);
        o.dealloc_pd = Some(Self::dealloc_pd);
        o.mmap = Some(mmap::mmap_callback);
        o.mmap_free = Some(mmap::mmap_free_callback);
        o.dealloc_driver = Some(Self::dealloc_driver);
        if T::HAS_ENABLE {
            o.enable_driver = Some(Self::enable_driver);
        }
        if T::HAS_REG_USER_MR {
            o.reg_user_mr = Some(Self::reg_user_mr);
        }
        if T::HAS_REREG_USER_MR {
            o.rereg_user_mr = Some(Self::rereg_user_mr);
        }
        if T::HAS_GET_DMA_MR {
            o.get_dma_mr = Some(Self::get_dma_mr);
        }
        if T::HAS_ALLOC_DM {
            o.alloc_dm = Some(Self::alloc_dm);
            o.dealloc_dm = Some(Self::dealloc_dm);
            if T::HAS_REG_DM_MR {
                o.reg_dm_mr = Some(Self::reg_dm_mr);
            }
        }
        if T::HAS_CREATE_CQ {
            o.create_cq = Some(Self::create_cq);
            o.destroy_cq = Some(Self::destroy_cq);
            o.size_ib_cq = core::mem::size_of::<Cq<T>>();
        }
        if T::HAS_RESIZE_CQ {
            o.resize_user_cq = Some(Self::resize_cq);
        }
        if T::HAS_REQ_NOTIFY_CQ {
            o.req_notify_cq = Some(Self::req_notify_cq);
        }
        if T::HAS_POLL_CQ {
            o.poll_cq = Some(Self::poll_cq);
        }
        if T::HAS_PEEK_CQ {
            o.peek_cq = Some(Self::peek_cq);
        }
        if T::HAS_CREATE_AH {
            o.create_ah = Some(Self::create_ah);
            o.create_user_ah = Some(Self::create_user_ah);
            o.destroy_ah = Some(Self::destroy_ah);
            o.size_ib_ah = core::mem::size_of::<Ah<T>>();
            if T::HAS_QUERY_AH {
                o.query_ah = Some(Self::query_ah);
            }
        }
        if T::HAS_CREATE_SRQ {
            o.create_srq = Some(Self::create_srq);
            o.modify_srq = Some(Self::modify_srq);
            o.query_srq = Some(Self::query_srq);
            o.destroy_srq = Some(Self::destroy_srq);
            o.size_ib_srq = core::mem::size_of::<Srq<T>>();
        }
        if T::HAS_CREATE_QP {
            o.create_qp = Some(Self::create_qp);
            o.modify_qp = Some(Self::modify_qp);
            o.query_qp = Some(Self::query_qp);
            o.destroy_qp = Some(Self::destroy_qp);
            o.size_ib_qp = core::mem::size_of::<Qp<T>>();
        }
        if T::HAS_POST_SEND_USER {
            o.post_send = Some(Self::post_send);
        }
        if T::HAS_POST_RECV {
            o.post_recv = Some(Self::post_recv);
        }
        if T::HAS_POST_SRQ_RECV {
            o.post_srq_recv = Some(Self::post_srq_recv);
        }
        if T::HAS_HW_COUNTERS {
            // The performance management agent answers from the same
            // counters (sysfs `ports/N/counters/`, and PMA MADs on QP1).
            o.process_mad = Some(Self::process_mad);
            o.alloc_hw_port_stats = Some(Self::alloc_hw_port_stats);
            o.get_hw_stats = Some(Self::get_hw_stats);
        }
        if T::HAS_ATTACH_MCAST {
            o.attach_mcast = Some(Self::attach_mcast);
            o.detach_mcast = Some(Self::detach_mcast);
        }
        if T::HAS_ALLOC_MR {
            o.alloc_mr = Some(Self::alloc_mr);
            o.map_mr_sg = Some(Self::map_mr_sg);
        }
        if T::HAS_REG_USER_MR || T::HAS_GET_DMA_MR || T::HAS_REG_DM_MR || T::HAS_ALLOC_MR {
            o.dereg_mr = Some(Self::dereg_mr);
        }
        if T::HAS_ALLOC_MW {
            o.alloc_mw = Some(Self::alloc_mw);
            o.dealloc_mw = Some(Self::dealloc_mw);
            o.size_ib_mw = core::mem::size_of::<Mw<T>>();
        }
        o.size_ib_ucontext = core::mem::size_of::<Ucontext<T>>();
        o.size_ib_pd = core::mem::size_of::<Pd<T>>();
        o
    }

    unsafe extern "C" fn query_device(
        ib: *mut bindings::ib_device,
        attr: *mut bindings::ib_device_attr,
        udata: *mut bindings::ib_udata,
    ) -> c_int {
        from_result(|| {
            // SAFETY: The core passes a live device of ours and a valid
            // (possibly null) udata for the duration of the call.
            let (dev, udata) = unsafe { (Device::<T>::from_raw(ib), Udata::from_raw(udata)) };
            Udata::no_io(udata)?;
            let a = T::query_device(dev)?;
            // SAFETY: `attr` is valid for writes during the call.
            unsafe { a.write_to(attr) };
            Ok(0)
        })
    }

    unsafe extern "C" fn query_port(
        ib: *mut bindings::ib_device,
        port: u32,
        attr: *mut bindings::ib_port_attr,
    ) -> c_int {
        from_result(|| {
            if port != 1 {
                return Err(EINVAL);
            }
            // SAFETY: Live device of ours for the call.
            let dev = unsafe { Device::<T>::from_raw(ib) };
            let a = T::query_port(dev, port)?;
            // SAFETY: `attr` is valid during the call.
            unsafe { a.write_to(attr) };
            Ok(0)
        })
    }

    unsafe extern "C" fn query_pkey(
        ib: *mut bindings::ib_device,
        port: u32,
        index: u16,
        pkey: *mut u16,
    ) -> c_int {
        from_result(|| {
            if port != 1 {
                return Err(EINVAL);
            }
            // SAFETY: Live device of ours for the call.
            let dev = unsafe { Device::<T>::from_raw(ib) };
            let v = T::query_pkey(dev, port, index)?;
            // SAFETY: `pkey` is valid for writes during the call.
            unsafe { pkey.write(v) };
            Ok(0)
        })
    }

    /// GIDs of a RoCE port live in the core's GID cache, which ib_core fills
    /// from the netdev's addresses; this op answers from that table.
    unsafe extern "C" fn query_gid(
        ib: *mut bindings::ib_device,
        port: u32,
        index: c_int,
        gid: *mut bindings::ib_gid,
    ) -> c_int {
        if port != 1 {
            return EINVAL.to_errno();
        }
        // SAFETY: Live device and a valid out-pointer for the call;
        // `rdma_query_gid` only reads the cache under its own lock.
        unsafe { bindings::rdma_query_gid(ib, port, index, gid) }
    }

    unsafe extern "C" fn get_port_immutable(
        ib: *mut bindings::ib_device,
        port: u32,
        out: *mut bindings::ib_port_immutable,
    ) -> c_int {
        from_result(|| {
            if port != 1 {
                return Err(EINVAL);
            }
            // SAFETY: Live device of ours for the call.
            let dev = unsafe { Device::<T>::from_raw(ib) };
            let p = T::port_immutable(dev, port)?;
            // SAFETY: `out` is valid for writes during the call.
            unsafe {
                (*out).pkey_tbl_len = p.pkey_tbl_len;
                (*out).gid_tbl_len = p.gid_tbl_len;
                (*out).core_cap_flags = if p.roce_udp_encap {
                    bindings::RDMA_CORE_PORT_IBA_ROCE_UDP_ENCAP
                } else {
                    0
                } as _;
                (*out).max_mad_size = p.max_mad_size;
            }
            Ok(0)
        })
    }

    unsafe extern "C" fn get_link_layer(
        _ib: *mut bindings::ib_device,
        _port: u32,
    ) -> bindings::rdma_link_layer {
        LINK_LAYER_ETHERNET
    }

    unsafe extern "C" fn alloc_ucontext(
        uc: *mut bindings::ib_ucontext,
        udata: *mut bindings::ib_udata,
    ) -> c_int {
        from_result(|| {
            // SAFETY: The core passes a zeroed object of `size_ib_ucontext`
            // bytes whose `device` is ours, and a valid udata.
            let (dev, udata) =
                unsafe { (Device::<T>::from_raw((*uc).device), Udata::from_raw(udata)) };
            let data = T::alloc_ucontext(dev, udata)?;
            // SAFETY: The object was sized for `Ucontext<T>`; its data part is
            // uninitialised and ours to write.
            unsafe { Ucontext::<T>::init_data(uc, data) };
            Ok(0)
        })
    }

    unsafe extern "C" fn dealloc_ucontext(uc: *mut bindings::ib_ucontext) {
        // SAFETY: `alloc_ucontext` succeeded for this object; the core calls
        // this once, after which it frees the memory.
        unsafe { Ucontext::<T>::drop_data(uc) };
    }

    /// Hot unplug with open contexts: the core zaps user mappings and
    /// destroys the context's objects through the usual callbacks, so there is
    /// nothing device-specific left to do. Having this op lets devices go
    /// away (and the module unload) while processes still hold contexts.
    unsafe extern "C" fn disassociate_ucontext(_uc: *mut bindings::ib_ucontext) {}

    unsafe extern "C" fn alloc_pd(
        pd: *mut bindings::ib_pd,
        udata: *mut bindings::ib_udata,
    ) -> c_int {
        from_result(|| {
            // SAFETY: As for `alloc_ucontext`.
            let (dev, udata) =
                unsafe { (Device::<T>::from_raw((*pd).device), Udata::from_raw(udata)) };
            let data = T::alloc_pd(dev, udata)?;
            // SAFETY: As for `alloc_ucontext`.
            unsafe { Pd::<T>::init_data(pd, data) };
            Ok(0)
        })
    }

    unsafe extern "C" fn dealloc_pd(
        pd: *mut bindings::ib_pd,
        _udata: *mut bindings::ib_udata,
    ) -> c_int {
        // SAFETY: `alloc_pd` succeeded for this object; called once.
        unsafe { Pd::<T>::drop_data(pd) };
        0
    }

    fn mr_result(r: Result<*mut bindings::ib_mr>) -> *mut bindings::ib_mr {
        match r {
            Ok(p) => p,
            // SAFETY: Encodes an errno as an error pointer.
            Err(e) => unsafe { bindings::rrxe_err_ptr(e.to_errno() as _) }.cast(),
        }
    }

    unsafe extern "C" fn reg_user_mr(
        pd: *mut bindings::ib_pd,
        start: u64,
        length: u64,
        iova: u64,
        access: c_int,
        dmah: *mut bindings::ib_dmah,
        udata: *mut bindings::ib_udata,
    ) -> *mut bindings::ib_mr {
        Self::mr_result((|| {
            if !dmah.is_null() {
                return Err(EOPNOTSUPP);
            }
            // SAFETY: The core passes a live PD of this device and a valid
            // udata for the call.
            let (pd, udata) = unsafe { (Pd::<T>::from_raw(pd), Udata::from_raw(udata)) };
            let req = UserMrRequest {
                start,
                length,
                iova,
                access: access as u32,
            };
            let slot = MrSlot::<T>::new()?;
            let (data, key) = T::reg_user_mr(pd, req, udata)?;
            Ok(slot.fill(data, key, 0, 0))
        })())
    }

    #[allow(clippy::too_many_arguments)]
    unsafe extern "C" fn rereg_user_mr(
        mr: *mut bindings::ib_mr,
        flags: c_int,
        start: u64,
        length: u64,
        iova: u64,
        access: c_int,
        pd: *mut bindings::ib_pd,
        udata: *mut bindings::ib_udata,
    ) -> *mut bindings::ib_mr {
        Self::mr_result((|| {
            let (mr, pd, udata) =
                // SAFETY: The core passes a live MR of this device (from
                // `MrSlot::fill`), the PD to use (the old one when unchanged)
                // and a valid udata, for the call.
                unsafe { (Mr::<T>::from_raw(mr), Pd::<T>::from_raw(pd), Udata::from_raw(udata)) };
            let req = UserMrRequest {
                start,
                length,
                iova,
                access: access as u32,
            };
            let flags = ReregFlags::from_raw(flags as u32);
            // The core fills in the range only for new registrations.
            let (iova, length) = if flags.translation {
                (iova, length)
            } else {
                mr.iova_length()
            };
            let slot = MrSlot::<T>::new()?;
            let (data, key) = T::rereg_user_mr(mr, flags, req, pd, udata)?;
            Ok(slot.fill(data, key, iova, length))
        })())
    }

    unsafe extern "C" fn get_dma_mr(
        pd: *mut bindings::ib_pd,
        access: c_int,
    ) -> *mut bindings::ib_mr {
        Self::mr_result((|| {
            // SAFETY: The core passes a live PD of this device.
            let pd = unsafe { Pd::<T>::from_raw(pd) };
            let slot = MrSlot::<T>::new()?;
            let (data, key) = T::get_dma_mr(pd, access as u32)?;
            Ok(slot.fill(data, key, 0, u64::MAX))
        })())
    }

    unsafe extern "C" fn alloc_mr(
        pd: *mut bindings::ib_pd,
        ty: bindings::ib_mr_type,
        max_num_sg: u32,
    ) -> *mut bindings::ib_mr {
        Self::mr_result((|| {
            let ty = match ty {
                bindings::ib_mr_type_IB_MR_TYPE_MEM_REG => FastRegType::MemReg,
                bindings::ib_mr_type_IB_MR_TYPE_SG_GAPS => FastRegType::SgGaps,
                _ => return Err(EINVAL),
            };
            // SAFETY: The core passes a live PD of this device.
            let pd = unsafe { Pd::<T>::from_raw(pd) };
            let slot = MrSlot::<T>::new()?;
            let (data, key) = T::alloc_mr(pd, ty, max_num_sg)?;
            Ok(slot.fill(data, key, 0, 0))
        })())
    }

    unsafe extern "C" fn map_mr_sg(
        ibmr: *mut bindings::ib_mr,
        sg: *mut bindings::scatterlist,
        nents: c_int,
        sg_offset: *mut c_uint,
    ) -> c_int {
        // SAFETY: The core passes an MR of this device from `alloc_mr` (only
        // those reach `map_mr_sg`), which lives for the call.
        let mr = unsafe { Mr::<T>::from_raw(ibmr) };
        // SAFETY: As above; `page_size` was set by `ib_map_mr_sg`.
        let page_size = unsafe { (*ibmr).page_size };
        if let Err(e) = T::map_mr_sg_start(mr, page_size) {
            return e.to_errno();
        }
        // SAFETY: The scatterlist and offset come from the caller of
        // `ib_map_mr_sg`; `set_page` is called back with this MR only.
        let n =
            unsafe { bindings::ib_sg_to_pages(ibmr, sg, nents, sg_offset, Some(Self::set_page)) };
        if n >= 0 {
            // SAFETY: `ib_sg_to_pages` set the range; the MR is live.
            let (iova, length) = unsafe { ((*ibmr).iova, (*ibmr).length) };
            T::map_mr_sg_done(mr, n as u32, iova, length);
        }
        n
    }

    unsafe extern "C" fn set_page(ibmr: *mut bindings::ib_mr, addr: u64) -> c_int {
        from_result(|| {
            // SAFETY: Called from `map_mr_sg` above with its MR.
            T::map_mr_sg_page(unsafe { Mr::<T>::from_raw(ibmr) }, addr)?;
            Ok(0)
        })
    }

    unsafe extern "C" fn dereg_mr(
        mr: *mut bindings::ib_mr,
        _udata: *mut bindings::ib_udata,
    ) -> c_int {
        from_result(|| {
            // SAFETY: Every MR of this device came from `MrSlot::fill`.
            T::dereg_mr(unsafe { Mr::<T>::from_raw(mr) })?;
            // SAFETY: As above; the core does not use the MR after success.
            unsafe { Mr::<T>::free(mr) };
            Ok(0)
        })
    }

    unsafe extern "C" fn alloc_mw(
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
            let (data, rkey) = T::alloc_mw(pd, ty, udata)?;
            // SAFETY: As above; the data part is uninitialised and ours.
            unsafe {
                Mw::<T>::init_data(mw, data);
                (*mw).rkey = rkey;
            }
            Ok(0)
        })
    }

    unsafe extern "C" fn dealloc_mw(mw: *mut bindings::ib_mw) -> c_int {
        // SAFETY: `alloc_mw` succeeded for this object; called once.
        unsafe { Mw::<T>::drop_data(mw) };
        0
    }

    /// # Safety
    ///
    /// The arguments of a `create_ah` or `create_user_ah` call.
    unsafe fn create_ah_common(
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
            let data = T::create_ah(pd, &init, udata)?;
            // SAFETY: As above; the data part is uninitialised and ours.
            unsafe { Ah::<T>::init_data(ah, data) };
            Ok(0)
        })
    }

    unsafe extern "C" fn create_ah(
        ah: *mut bindings::ib_ah,
        attr: *mut bindings::rdma_ah_init_attr,
        udata: *mut bindings::ib_udata,
    ) -> c_int {
        // SAFETY: The core's arguments, passed on.
        unsafe { Self::create_ah_common(ah, attr, udata) }
    }

    unsafe extern "C" fn create_user_ah(
        ah: *mut bindings::ib_ah,
        attr: *mut bindings::rdma_ah_init_attr,
        udata: *mut bindings::ib_udata,
    ) -> c_int {
        // SAFETY: The core's arguments, passed on.
        unsafe { Self::create_ah_common(ah, attr, udata) }
    }

    unsafe extern "C" fn query_ah(
        ah: *mut bindings::ib_ah,
        attr: *mut bindings::rdma_ah_attr,
    ) -> c_int {
        from_result(|| {
            // SAFETY: A live AH of this device and an output for the call.
            let (a, out) = unsafe { (Ah::<T>::from_raw(ah), &mut *attr) };
            let av = T::query_ah(a)?;
            crate::ib::ah::av_to_raw(&av, out);
            Ok(0)
        })
    }

    unsafe extern "C" fn destroy_ah(ah: *mut bindings::ib_ah, _flags: u32) -> c_int {
        // SAFETY: `create_ah` succeeded for this AH; called once.
        unsafe { Ah::<T>::drop_data(ah) };
        0
    }

    unsafe extern "C" fn create_srq(
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
                let req = SrqInit {
                    attr: SrqAttr::from_raw(&i.attr),
                    basic: i.srq_type == bindings::ib_srq_type_IB_SRQT_BASIC,
                };
                (Pd::<T>::from_raw((*srq).pd), req, Udata::from_raw(udata))
            };
            // SAFETY: The SRQ being created.
            let this = unsafe { SrqRef::from_raw(srq) };
            let (data, attr) = T::create_srq(pd, &req, udata, this)?;
            // SAFETY: As above; the data part is uninitialised and ours; the
            // attributes made go back in the request.
            unsafe {
                Srq::<T>::init_data(srq, data);
                attr.to_raw(&mut (*init).attr);
            }
            Ok(0)
        })
    }

    unsafe extern "C" fn modify_srq(
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
            T::modify_srq(s, a, SrqMask::from_raw(mask as u32), udata)?;
            Ok(0)
        })
    }

    unsafe extern "C" fn query_srq(
        srq: *mut bindings::ib_srq,
        attr: *mut bindings::ib_srq_attr,
    ) -> c_int {
        from_result(|| {
            // SAFETY: A live SRQ of this device and an output for the call.
            let (s, out) = unsafe { (Srq::<T>::from_raw(srq), &mut *attr) };
            T::query_srq(s)?.to_raw(out);
            Ok(0)
        })
    }

    unsafe extern "C" fn destroy_srq(
        srq: *mut bindings::ib_srq,
        _udata: *mut bindings::ib_udata,
    ) -> c_int {
        // SAFETY: `create_srq` succeeded for this SRQ; called once.
        unsafe { Srq::<T>::drop_data(srq) };
        0
    }

    unsafe extern "C" fn create_qp(
        qp: *mut bindings::ib_qp,
        init: *mut bindings::ib_qp_init_attr,
        udata: *mut bindings::ib_udata,
    ) -> c_int {
        from_result(|| {
            // SAFETY: The core passes a zeroed QP of `size_ib_qp` bytes with
            // `device`, `pd` and `qp_type` set, the request, and the
            // command's udata (null for kernel QPs), valid for the call.
            let (pd, mut req, udata) = unsafe {
                (
                    Pd::<T>::from_raw((*qp).pd),
                    QpInit::from_raw(init),
                    Udata::from_raw(udata),
                )
            };
            req.handle = qp as usize;
            let (data, qpn, cap) = T::create_qp(pd, &req, udata)?;
            // SAFETY: As above; the data part is uninitialised and ours, and
            // the request's capacities are reported back to the caller.
            unsafe {
                Qp::<T>::init_data(qp, data);
                (*qp).qp_num = qpn;
                qp::cap_to_raw(&cap, &mut (*init).cap);
            }
            Ok(0)
        })
    }

    unsafe extern "C" fn modify_qp(
        qp: *mut bindings::ib_qp,
        attr: *mut bindings::ib_qp_attr,
        mask: c_int,
        udata: *mut bindings::ib_udata,
    ) -> c_int {
        from_result(|| {
            // SAFETY: A live QP of this device, the attributes and the udata
            // of the call.
            let (q, a, udata) = unsafe { (Qp::<T>::from_raw(qp), &*attr, Udata::from_raw(udata)) };
            let (attrs, cur, _cap) = qp::attrs_from_raw(a, mask as u32).ok_or(EINVAL)?;
            T::modify_qp(q, &attrs, cur, mask as u32, udata)?;
            Ok(0)
        })
    }

    unsafe extern "C" fn query_qp(
        qp: *mut bindings::ib_qp,
        attr: *mut bindings::ib_qp_attr,
        _mask: c_int,
        init: *mut bindings::ib_qp_init_attr,
    ) -> c_int {
        from_result(|| {
            // SAFETY: A live QP of this device.
            let q = unsafe { Qp::<T>::from_raw(qp) };
            let (attrs, cap, sig_all) = T::query_qp(q)?;
            // SAFETY: The core passes output structures for the call; the
            // QP's C fields are fixed after creation.
            unsafe {
                qp::attrs_to_raw(&attrs, &cap, &mut *attr);
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
                qp::cap_to_raw(&cap, &mut i.cap);
            }
            Ok(0)
        })
    }

    unsafe extern "C" fn post_send(
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
                if let Err(e) = T::post_send_kernel(q, &w) {
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
            T::post_send_user(unsafe { Qp::<T>::from_raw(qp) })?;
            Ok(0)
        })
    }

    unsafe extern "C" fn post_recv(
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
            if let Err(e) = T::post_recv(q, &w) {
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

    unsafe extern "C" fn post_srq_recv(
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
            if let Err(e) = T::post_srq_recv(s, &w) {
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

    unsafe extern "C" fn destroy_qp(
        qp: *mut bindings::ib_qp,
        _udata: *mut bindings::ib_udata,
    ) -> c_int {
        from_result(|| {
            // SAFETY: A live QP of this device, created by `create_qp`.
            T::destroy_qp(unsafe { Qp::<T>::from_raw(qp) })?;
            // SAFETY: As above; the core frees the QP after success and
            // the data is not used again.
            unsafe { Qp::<T>::drop_data(qp) };
            Ok(0)
        })
    }

    unsafe extern "C" fn alloc_hw_port_stats(
        _ib: *mut bindings::ib_device,
        _port: u32,
    ) -> *mut bindings::rdma_hw_stats {
        // SAFETY: Allocates a stats structure over the static name table.
        unsafe { bindings::rrxe_alloc_hw_port_stats() }
    }

    unsafe extern "C" fn get_hw_stats(
        ib: *mut bindings::ib_device,
        stats: *mut bindings::rdma_hw_stats,
        port: u32,
        _index: c_int,
    ) -> c_int {
        if port == 0 || stats.is_null() {
            return EINVAL.to_errno();
        }
        // SAFETY: A live device of ours.
        let values = T::hw_counters(unsafe { Device::<T>::from_raw(ib) }, port);
        // SAFETY: `stats` came from `alloc_hw_port_stats`, so `value` has
        // `NUM_COUNTERS` entries; the core holds its lock for the call.
        unsafe {
            let v = (*stats).value.as_mut_ptr();
            for (i, x) in values.iter().enumerate() {
                v.add(i).write(*x);
            }
        }
        stats::NUM_COUNTERS as c_int
    }

    #[allow(clippy::too_many_arguments)]
    unsafe extern "C" fn process_mad(
        ib: *mut bindings::ib_device,
        _flags: c_int,
        port: u32,
        _wc: *const bindings::ib_wc,
        _grh: *const bindings::ib_grh,
        inp: *const bindings::ib_mad,
        out: *mut bindings::ib_mad,
        _out_size: *mut usize,
        _out_pkey_index: *mut u16,
    ) -> c_int {
        const _: () = assert!(core::mem::size_of::<bindings::ib_mad>() == pma::MAD_SIZE);
        if port != 1 || inp.is_null() || out.is_null() {
            return bindings::ib_mad_result_IB_MAD_RESULT_FAILURE as c_int;
        }
        // SAFETY: A live device of ours.
        let v = T::hw_counters(unsafe { Device::<T>::from_raw(ib) }, port);
        let c = pma::PortCounters {
            xmit_bytes: v[stats::Counter::SentBytes as usize],
            rcv_bytes: v[stats::Counter::RcvdBytes as usize],
            xmit_packets: v[stats::Counter::SentPkts as usize],
            rcv_packets: v[stats::Counter::RcvdPkts as usize],
            link_downed: v[stats::Counter::LinkDowned as usize],
        };
        // SAFETY: The MAD layer and sysfs pass two distinct `ib_mad`s
        // (256 bytes, checked above), valid for the call; bytes have no
        // alignment or validity requirements.
        let (i, o) = unsafe {
            (
                &*inp.cast::<[u8; pma::MAD_SIZE]>(),
                &mut *out.cast::<[u8; pma::MAD_SIZE]>(),
            )
        };
        match pma::answer(i, &c, o) {
            pma::Answer::NotMine => bindings::ib_mad_result_IB_MAD_RESULT_SUCCESS as c_int,
            pma::Answer::Reply => {
                (bindings::ib_mad_result_IB_MAD_RESULT_SUCCESS
                    | bindings::ib_mad_result_IB_MAD_RESULT_REPLY) as c_int
            }
        }
    }

    unsafe extern "C" fn attach_mcast(
        qp: *mut bindings::ib_qp,
        gid: *mut bindings::ib_gid,
        _lid: u16,
    ) -> c_int {
        from_result(|| {
            // SAFETY: A live QP of this device and the group's GID, for the
            // call; `raw` covers the whole GID union.
            let (q, g) = unsafe { (Qp::<T>::from_raw(qp), *(*gid).raw.as_ref()) };
            T::attach_mcast(q, &g)?;
            Ok(0)
        })
    }

    unsafe extern "C" fn detach_mcast(
        qp: *mut bindings::ib_qp,
        gid: *mut bindings::ib_gid,
        _lid: u16,
    ) -> c_int {
        from_result(|| {
            // SAFETY: As in `attach_mcast`.
            let (q, g) = unsafe { (Qp::<T>::from_raw(qp), *(*gid).raw.as_ref()) };
            T::detach_mcast(q, &g)?;
            Ok(0)
        })
    }

    unsafe extern "C" fn create_cq(
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
                    {
                        let b = &raw mut (*attrs).__bindgen_anon_1.__bindgen_anon_1;
                        Some((
                            Ucontext::<T>::from_raw((*b).context),
                            Udata::from_raw(&raw mut (*b).driver_udata),
                        ))
                    }
                };
                (Device::<T>::from_raw((*cq).device), a, user)
            };
            // SAFETY: `cq` is the object being created, not null.
            let this = unsafe { CqRef::from_raw(cq) };
            let (data, cqe) = T::create_cq(dev, attr, user, this)?;
            // SAFETY: As above; the data part is uninitialised and ours.
            unsafe {
                Cq::<T>::init_data(cq, data);
                (*cq).cqe = cqe as _;
            }
            Ok(0)
        })
    }

    unsafe extern "C" fn destroy_cq(
        cq: *mut bindings::ib_cq,
        _udata: *mut bindings::ib_udata,
    ) -> c_int {
        // SAFETY: `create_cq` succeeded for this CQ; called once.
        unsafe { Cq::<T>::drop_data(cq) };
        0
    }

    unsafe extern "C" fn resize_cq(
        cq: *mut bindings::ib_cq,
        cqe: c_uint,
        udata: *mut bindings::ib_udata,
    ) -> c_int {
        from_result(|| {
            // SAFETY: A live CQ of this device and the command's udata.
            let (c, udata) = unsafe { (Cq::<T>::from_raw(cq), Udata::from_raw(udata)) };
            let n = T::resize_cq(c, cqe, udata)?;
            // SAFETY: As above; the core serialises resizes of a CQ.
            unsafe { (*cq).cqe = n as _ };
            Ok(0)
        })
    }

    unsafe extern "C" fn req_notify_cq(
        cq: *mut bindings::ib_cq,
        flags: bindings::ib_cq_notify_flags,
    ) -> c_int {
        // SAFETY: A live CQ of this device.
        let c = unsafe { Cq::<T>::from_raw(cq) };
        match T::req_notify_cq(c, NotifyFlags::from_raw(flags as u32)) {
            Ok(missed) => missed as c_int,
            Err(e) => e.to_errno(),
        }
    }

    unsafe extern "C" fn poll_cq(
        cq: *mut bindings::ib_cq,
        n: c_int,
        wc: *mut bindings::ib_wc,
    ) -> c_int {
        if n <= 0 || wc.is_null() {
            return 0;
        }
        // SAFETY: A live CQ of this device; `wc` has room for `n` entries
        // (the caller's promise to `ib_poll_cq`).
        let (c, wc) = unsafe {
            (
                Cq::<T>::from_raw(cq),
                core::slice::from_raw_parts_mut(wc, n as usize),
            )
        };
        let mut out = WcOut::new(wc);
        T::poll_cq(c, &mut out);
        out.len() as c_int
    }

    unsafe extern "C" fn peek_cq(cq: *mut bindings::ib_cq, n: c_int) -> c_int {
        if n <= 0 {
            return 0;
        }
        // SAFETY: A live CQ of this device.
        T::peek_cq(unsafe { Cq::<T>::from_raw(cq) }, n as u32) as c_int
    }

    unsafe extern "C" fn alloc_dm(
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
            let (data, offset) = T::alloc_dm(uc, req)?;
            // Owned here until the core has it: dropping it frees the DM.
            let dm = slot.fill(data);
            // SAFETY: `attrs` is the bundle of this DM_ALLOC call, whose
            // method carries the attribute (declared with the ops).
            let r = unsafe {
                bindings::rrxe_uverbs_copy_to_u64(attrs, dm::ALLOC_DM_RESP_MMAP_OFFSET, offset)
            };
            kernel::error::to_result(r)?;
            Ok(DmSlot::into_raw(dm))
        })();
        match r {
            Ok(p) => p,
            // SAFETY: Encodes an errno as an error pointer.
            Err(e) => unsafe { bindings::rrxe_err_ptr(e.to_errno() as _) }.cast(),
        }
    }

    unsafe extern "C" fn dealloc_dm(
        dm: *mut bindings::ib_dm,
        _attrs: *mut bindings::uverbs_attr_bundle,
    ) -> c_int {
        // SAFETY: Every DM of this device came from `DmSlot`; the core calls
        // this once, with no MR left on it.
        unsafe { Dm::<T>::free(dm) };
        0
    }

    unsafe extern "C" fn reg_dm_mr(
        pd: *mut bindings::ib_pd,
        dm: *mut bindings::ib_dm,
        attr: *mut bindings::ib_dm_mr_attr,
        _attrs: *mut bindings::uverbs_attr_bundle,
    ) -> *mut bindings::ib_mr {
        Self::mr_result((|| {
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
            let slot = MrSlot::<T>::new()?;
            let (data, key) = T::reg_dm_mr(pd, dm, req)?;
            // Zero-based: the region's addresses run from 0.
            Ok(slot.fill(data, key, 0, req.length))
        })())
    }

    unsafe extern "C" fn enable_driver(ib: *mut bindings::ib_device) -> c_int {
        from_result(|| {
            // SAFETY: Live device of ours for the call.
            T::enable(unsafe { Device::<T>::from_raw(ib) })?;
            Ok(0)
        })
    }

    /// `dealloc_driver` as a function pointer: it identifies our devices.
    const DEALLOC: unsafe extern "C" fn(*mut bindings::ib_device) = Self::dealloc_driver;

    pub(crate) unsafe extern "C" fn dealloc_driver(ib: *mut bindings::ib_device) {
        registry_remove(ib);
        // SAFETY: The core calls this exactly once, last, from
        // `ib_dealloc_device`; the data was initialised before the ops (and
        // with them this callback) were installed.
        unsafe { core::ptr::drop_in_place(&raw mut (*ib.cast::<Device<T>>()).data) };
    }
}

use kernel::sync::aref::ARef;
