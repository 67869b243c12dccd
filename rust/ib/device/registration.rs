// SPDX-License-Identifier: GPL-2.0

//! Device registration: [`Device`] and [`NewDevice`], the registry of the
//! devices this layer created, unregistration, and the `enable_driver` and
//! `dealloc_driver` callbacks that open and close a device's life.
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h)

use super::{gid::GidCache, ops, Driver};
use crate::{
    bindings,
    net::{
        netdev::NetDev,
        tunnel::{Receiver, RxQueue},
    },
};
use core::ptr::NonNull;
use kernel::{error::from_result, prelude::*, sync::aref::ARef, types::Opaque};
use pin_init::PinInit;

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
    /// The device's receive queue, from registration until
    /// `dealloc_driver`; `None` before.
    pub(crate) rxq: Option<RxQueue>,
    /// The device's own GIDs (`add_gid`/`del_gid`), from allocation on.
    pub(crate) gids: GidCache,
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

    /// The device whose driver data `data` is.
    ///
    /// # Safety
    ///
    /// `data` must be the data of a `Device<T>` (a reference [`Self::data`]
    /// gave, or one derived from it), not a `T::Data` made elsewhere.
    pub unsafe fn from_data(data: &T::Data) -> &Self {
        let off = core::mem::offset_of!(Self, data);
        // CAST: `data` is the `data` field of a `Device<T>`, `off` bytes in.
        let dev = core::ptr::from_ref(data)
            .cast::<u8>()
            .wrapping_sub(off)
            .cast::<Self>();
        // SAFETY: By the caller's promise `data` is the `data` field of a
        // `Device<T>`, so `dev` is that device, alive as long as `data` is
        // borrowed.
        unsafe { &*dev }
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
        unsafe { CStr::from_char_ptr(bindings::dev_name(device_of(self.as_raw())).cast()) }
    }

    /// The netdev bound to `port`, with a reference held.
    pub fn netdev(&self, port: u32) -> Option<ARef<NetDev>> {
        // SAFETY: The device is alive; `ib_device_get_netdev` returns a held
        // netdev or null.
        unsafe { NetDev::from_held(bindings::ib_device_get_netdev(self.as_raw(), port)) }
    }

    /// Schedules unregistration on the core's workqueue (safe under RTNL).
    ///
    /// The device, and with it `self`, may be freed at any time after this.
    pub fn unregister_queued(&self) {
        // SAFETY: The device is registered (we are called from a callback
        // holding a registration reference); the core queues the work.
        unsafe { bindings::ib_unregister_device_queued(self.as_raw()) };
    }

    /// Whether the live device `ib` is one of `T`'s: its `dealloc_driver`
    /// op is ours for `T` (other RXE drivers share the driver id).
    ///
    /// # Safety
    ///
    /// `ib` must point to a live `ib_device` whose ops are installed.
    unsafe fn is_ours(ib: *mut bindings::ib_device) -> bool {
        // SAFETY: The caller's promise.
        let f = unsafe { (*ib).ops.dealloc_driver };
        let ours: unsafe extern "C" fn(*mut bindings::ib_device) = dealloc_driver_callback::<T>;
        f.map(|f| f as usize) == Some(ours as usize)
    }

    /// Runs `op` on the device of type `T` bound to `ndev`, if any.
    ///
    /// Returns `None` when no device of `T`'s driver id
    /// ([`Driver::DRIVER_ID`]) is bound to `ndev`, and `Some(None)` when
    /// one is, but it belongs to another driver (such as the in-tree
    /// `rdma_rxe`, for the RXE id).
    pub fn with_netdev<R>(ndev: &NetDev, op: impl FnOnce(&Self) -> R) -> Option<Option<R>> {
        // SAFETY: `ndev` is live; the result carries a registration
        // reference (`ib_device_try_get`) or is null.
        let ib = unsafe { bindings::ib_device_get_by_netdev(ndev.as_raw(), T::DRIVER_ID) };
        if ib.is_null() {
            return None;
        }
        // SAFETY: `ib` is a live registered device.
        let r = if unsafe { Self::is_ours(ib) } {
            // SAFETY: Ours, and registered: data alive while the reference is
            // held (the type invariant).
            Some(op(unsafe { Self::from_raw(ib) }))
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
        let net = unsafe { bindings::dev_net(ndev.as_raw()) };
        // SAFETY: The size covers the `ib_device` and the driver data.
        let ib = unsafe { bindings::_ib_alloc_device(core::mem::size_of::<Device<T>>(), net) };
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

        // SAFETY: Inside the fresh allocation, not yet initialised.
        unsafe { (&raw mut (*ptr.as_ptr()).rxq).write(None) };
        // SAFETY: Inside the fresh allocation, not yet initialised, and
        // never moved (the device is freed where it lies); the lock needs
        // no drop.
        let Ok(()) = unsafe { GidCache::new().__init(&raw mut (*ptr.as_ptr()).gids) };

        let ops = ops::ops::<T>(module);
        // SAFETY: The device is ours; `ib_set_device_ops` copies the table.
        unsafe {
            bindings::ib_set_device_ops(ib, &ops);
            (*ib).node_type = bindings::RDMA_NODE_IB_CA as u8;
            (*ib).phys_port_cnt = 1;
            (*ib).local_dma_lkey = 0;
            if let Some(defs) = T::driver_def() {
                // The driver's own methods and attributes.
                (*ib).driver_def = defs.as_ptr();
            }
            (*ib).uverbs_cmd_mask |= (1u64
                << bindings::ib_uverbs_write_cmds_IB_USER_VERBS_CMD_POST_SEND)
                | (1u64 << bindings::ib_uverbs_write_cmds_IB_USER_VERBS_CMD_REQ_NOTIFY_CQ);
        }
        // INVARIANT: Allocated, data initialised, ops installed, unregistered.
        let this = Self { dev: ptr };
        // On failure `this` is dropped: dealloc frees all.
        // SAFETY: The device is ours and unregistered: no packet can reach
        // it before the queue is set; `dealloc_driver` drops the queue
        // before the driver data.
        let rxq = unsafe { RxQueue::new(ib) }?;
        // SAFETY: As above.
        unsafe { (*ptr.as_ptr()).rxq = Some(rxq) };
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
            *d = *s;
        }
        nd[n] = 0;
    }

    /// Sets how many completion vectors the device offers.
    pub fn set_num_comp_vectors(&mut self, vectors: u32) {
        // SAFETY: Unregistered and owned by us.
        unsafe { (*self.raw()).num_comp_vectors = vectors as c_int };
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
                (*device_of(ib)).parent = ndev.parent();
                (*ib).name_assign_type =
                    bindings::rdma_nl_name_assign_type_RDMA_NAME_ASSIGN_TYPE_USER;
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

/// Initialises the registry of devices.
///
/// # Safety
///
/// Called once, before any use of the registry.
pub(in crate::ib) unsafe fn init_registry() {
    // SAFETY: The caller guarantees single, early initialisation.
    unsafe { REGISTRY.init() };
}

/// Frees the registry's storage (a static is never dropped). For module
/// exit, after [`unregister_all`].
pub(in crate::ib) fn release_registry() {
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
                // SAFETY: Registry entries are live, with ops installed,
                // until `dealloc_driver`, which removes them under this lock.
                unsafe { Device::<T>::is_ours(p as *mut bindings::ib_device) }
            });
            match found {
                None => return,
                Some(p) => {
                    let ib = p as *mut bindings::ib_device;
                    // SAFETY: Live (see above); pins the memory past the
                    // unregistration so the pointer stays valid to compare.
                    unsafe { bindings::get_device(device_of(ib)) };
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
        unsafe { bindings::put_device(device_of(ib)) };
    }
}

/// The `enable_driver` op: the device is registered and visible.
///
/// # Safety
///
/// `ib` must be the live device of `T` the core passes to `enable_driver`.
pub(super) unsafe extern "C" fn enable_driver_callback<T: Driver>(
    ib: *mut bindings::ib_device,
) -> c_int {
    from_result(|| {
        // SAFETY: A live device of ours for the call (the caller's promise).
        T::enable(unsafe { Device::<T>::from_raw(ib) })?;
        Ok(0)
    })
}

/// The `struct device` of `ib` (`&ib->dev`, which bindgen puts in an
/// anonymous union with the core's own view of it).
///
/// # Safety
///
/// `ib` must point to a live `ib_device`.
pub(super) unsafe fn device_of(ib: *mut bindings::ib_device) -> *mut bindings::device {
    // SAFETY: The union's fields start where it does; `ib` is live.
    unsafe { (&raw mut (*ib).__bindgen_anon_1.dev).cast() }
}

/// The tunnel's packets for a device reach its driver's `rx_*` methods.
impl<T: Driver> Receiver for Device<T> {
    /// The device behind a core pointer the caller holds a registration
    /// reference on, if it is one of `T`'s (not another RXE driver's).
    unsafe fn from_ib_device<'a>(ib: *mut bindings::ib_device) -> Option<&'a Self> {
        // SAFETY: A live registered device (the caller's reference).
        let ours = unsafe { Self::is_ours(ib) };
        // SAFETY: Ours and registered: data alive while the reference is
        // held (the type invariant); `'a` is bounded by the caller's use.
        ours.then(|| unsafe { Self::from_raw(ib) })
    }

    fn rx_queue(&self) -> Option<&RxQueue> {
        self.rxq.as_ref()
    }

    fn accept(&self, pkt: &[u8]) -> bool {
        T::rx_accept(self, pkt)
    }

    fn receive(&self, pkt: &[u8]) {
        T::rx_packet(self, pkt);
    }

    fn queue_full(&self) {
        T::rx_queue_full(self);
    }
}

/// The `dealloc_driver` op: the last step of a device's life, which drops
/// the driver data. Its address also identifies `T`'s devices.
///
/// # Safety
///
/// `ib` must be a device of `T` created by [`NewDevice::new`], passed by
/// `ib_dealloc_device`, which calls this once, last.
pub(super) unsafe extern "C" fn dealloc_driver_callback<T: Driver>(ib: *mut bindings::ib_device) {
    registry_remove(ib);
    // Unregistered (or never registered): no packet can be queued any
    // more; the queue's work, which uses the driver data, ends here,
    // before the data is dropped below.
    // SAFETY: A device of ours (the caller's promise).
    drop(unsafe { (*ib.cast::<Device<T>>()).rxq.take() });
    // SAFETY: Called once, last (the caller's promise); the data was
    // initialised before the ops (and with them this callback) were
    // installed.
    unsafe { core::ptr::drop_in_place(&raw mut (*ib.cast::<Device<T>>()).data) };
}
