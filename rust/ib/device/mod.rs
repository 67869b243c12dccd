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
//! unregistration), `held` ([`DeviceRef`], a driver object's hold on its
//! device), `ops` (the `ib_device_ops` table), `port` (device,
//! port and GID queries) and `gid` (the device's own GIDs, kept as the core
//! adds and deletes them). The callbacks of each object family live next to
//! its abstraction: [`super::cq`], [`super::qp`], [`super::srq`],
//! [`super::mr`], [`super::mw`], [`super::dm`], [`super::ah`] and
//! [`super::pd`].

mod gid;
mod held;
mod ops;
mod port;
mod registration;

pub use held::DeviceRef;
pub(super) use registration::{init_registry, release_registry};
pub use registration::{unregister_all, Device, NewDevice};

use super::{
    ah::AhOps,
    attr::{DeviceAttrs, PortAttrs, PortImmutable},
    cq::CqOps,
    dm::DmOps,
    mr::MrOps,
    mw::MwOps,
    pd::{PdOps, UcontextOps},
    qp::QpOps,
    srq::SrqOps,
    stats,
    xrcd::XrcdOps,
};
use core::ptr::NonNull;
use kernel::prelude::*;

/// A driver's uverbs tree (`const struct uapi_definition *`), built in C
/// with the `uverbs_named_ioctl.h` macros, which Rust cannot expand.
///
/// # Invariants
///
/// Points to a static, terminated `uapi_definition` array.
#[derive(Clone, Copy)]
pub struct UapiDefinitions(NonNull<super::bindings::uapi_definition>);

impl UapiDefinitions {
    /// Wraps the tree at `defs`; `None` for null.
    ///
    /// # Safety
    ///
    /// `defs` must be null or point to a static `uapi_definition` array,
    /// terminated by an empty entry, that lives as long as the module.
    pub unsafe fn from_raw(defs: *const super::bindings::uapi_definition) -> Option<Self> {
        // INVARIANT: The caller's promise.
        NonNull::new(defs.cast_mut()).map(Self)
    }

    /// The raw tree.
    pub(crate) fn as_ptr(self) -> *const super::bindings::uapi_definition {
        self.0.as_ptr()
    }
}

/// A provider: its device, and the types of its objects, each of which
/// implements the operations of its family.
///
/// Callbacks are called by the IB core in process context unless a method
/// says otherwise. Optional ones are only installed in the ops table when
/// the driver implements them (`HAS_*`), here and in the family traits:
/// [`UcontextOps`], [`PdOps`], [`MrOps`], [`MwOps`], [`DmOps`], [`CqOps`],
/// [`QpOps`], [`AhOps`], [`SrqOps`] and [`XrcdOps`].
#[vtable]
pub trait Driver: Sized + Send + Sync + 'static {
    /// Per-device driver state, embedded after the `ib_device`.
    type Data: Send + Sync;
    /// Per-process context state.
    type Ucontext: UcontextOps<Self>;
    /// Protection domain state.
    type Pd: PdOps<Self>;
    /// Memory region state.
    type Mr: MrOps<Self>;
    /// Memory window state.
    type Mw: MwOps<Self>;
    /// Device memory state.
    type Dm: DmOps<Self>;
    /// Completion queue state.
    type Cq: CqOps<Self>;
    /// Queue pair state.
    type Qp: QpOps<Self>;
    /// Address handle state.
    type Ah: AhOps<Self>;
    /// Shared receive queue state.
    type Srq: SrqOps<Self>;
    /// XRC domain state.
    type Xrcd: XrcdOps<Self>;

    /// `enum rdma_driver_id` the device reports (selects the user provider).
    const DRIVER_ID: u32;
    /// uverbs ABI version the user provider expects.
    const UVERBS_ABI_VER: u32;
    /// The names of the port's hardware counters, in the order of the
    /// values [`Self::hw_counters`] writes; none by default.
    const HW_COUNTERS: &'static [stats::StatDesc] = &[];

    /// Device attributes.
    fn query_device(dev: &Device<Self>) -> Result<DeviceAttrs>;
    /// Port attributes; the layer has already checked `port == 1`.
    fn query_port(dev: &Device<Self>, port: u32) -> Result<PortAttrs>;
    /// The P_Key at `index`.
    fn query_pkey(dev: &Device<Self>, port: u32, index: u16) -> Result<u16>;
    /// Immutable port data.
    fn port_immutable(dev: &Device<Self>, port: u32) -> Result<PortImmutable>;

    /// The driver's own uverbs methods and attributes
    /// (`ib_device.driver_def`), if it has any; none by default.
    fn driver_def() -> Option<UapiDefinitions> {
        None
    }

    /// Called once the device is registered and visible.
    fn enable(_dev: &Device<Self>) -> Result {
        build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// Writes the port's counter values into `values`, one for each of
    /// [`Self::HW_COUNTERS`], in their order. A driver that implements it
    /// implements [`Self::pma_counters`] too.
    fn hw_counters(_dev: &Device<Self>, _port: u32, _values: &mut [u64]) {
        build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// The port's counters that the performance management agent reports
    /// (PMA MADs, sysfs `ports/N/counters/`).
    fn pma_counters(_dev: &Device<Self>, _port: u32) -> crate::logic::pma::PortCounters {
        build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// Whether a RoCEv2 packet that arrived for `dev` (the IP packet with
    /// its UDP header, maybe followed by link padding) is queued for
    /// [`Self::rx_packet`]; false drops it at once. Runs in softirq: it
    /// must not sleep, and takes only locks that are safe there. The
    /// place for the checks that need no transport state (headers,
    /// checksums, addresses), so that a flood of bad packets costs what
    /// the network stack's own receive work costs. Accepts by default.
    fn rx_accept(_dev: &Device<Self>, _pkt: &[u8]) -> bool {
        true
    }

    /// A RoCEv2 packet that [`Self::rx_accept`] accepted for `dev`, in
    /// process context. Set up by [`crate::net::tunnel::init`]; packets are
    /// dropped by default.
    fn rx_packet(_dev: &Device<Self>, _pkt: &[u8]) {}

    /// A packet that [`Self::rx_accept`] accepted for `dev` found the
    /// device's receive queue full and was dropped. Runs in softirq.
    fn rx_queue_full(_dev: &Device<Self>) {}
}
