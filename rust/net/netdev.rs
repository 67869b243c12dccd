// SPDX-License-Identifier: GPL-2.0

//! Network devices, and the netdev notifier.

use crate::bindings;
use core::ptr::NonNull;
use kernel::{
    prelude::*,
    sync::aref::{ARef, AlwaysRefCounted},
    types::Opaque,
};

/// A network device (`struct net_device`).
///
/// # Invariants
///
/// A `&NetDev` is only formed from a pointer to a live `net_device` that the
/// creator keeps alive (by a reference count or by the caller's context) for
/// the reference's lifetime.
#[repr(transparent)]
pub struct NetDev(Opaque<bindings::net_device>);

// SAFETY: `net_device` is used from any thread; its fields are protected by
// the netdev core's own locking.
unsafe impl Send for NetDev {}
// SAFETY: See above.
unsafe impl Sync for NetDev {}

// SAFETY: `dev_hold`/`dev_put` keep the `net_device` alive.
unsafe impl AlwaysRefCounted for NetDev {
    fn inc_ref(&self) {
        // SAFETY: `self` is live by the type invariant.
        unsafe { bindings::dev_hold(self.as_raw()) };
    }

    /// Drops a reference.
    ///
    /// # Safety
    ///
    /// The caller must own a reference taken with [`inc_ref`](Self::inc_ref)
    /// (the trait's contract).
    unsafe fn dec_ref(obj: NonNull<Self>) {
        // SAFETY: The caller owns a reference taken with `inc_ref`.
        unsafe { bindings::dev_put(obj.cast().as_ptr()) };
    }
}

impl NetDev {
    /// Forms a reference from a raw pointer.
    ///
    /// # Safety
    ///
    /// `ptr` must point to a live `net_device` that stays alive for `'a`.
    pub(crate) unsafe fn from_raw<'a>(ptr: *mut bindings::net_device) -> &'a Self {
        // SAFETY: `NetDev` is a transparent wrapper; liveness is the caller's.
        unsafe { &*ptr.cast() }
    }

    /// Takes ownership of a reference the caller already holds.
    ///
    /// # Safety
    ///
    /// `ptr` must be non-null and carry a `dev_hold` reference owned by the
    /// caller, which passes to the returned `ARef`.
    pub(crate) unsafe fn from_held(ptr: *mut bindings::net_device) -> Option<ARef<Self>> {
        // SAFETY: Ownership of one reference passes to the `ARef`.
        NonNull::new(ptr).map(|p| unsafe { ARef::from_raw(p.cast()) })
    }

    /// The raw pointer.
    pub(crate) fn as_raw(&self) -> *mut bindings::net_device {
        self.0.get()
    }

    /// The device (`dev->dev.parent`) the netdev sits on, or null: for an
    /// RDMA device to name as its own parent.
    pub(crate) fn parent(&self) -> *mut bindings::device {
        // SAFETY: Live by the invariant.
        unsafe { bindings::rrxe_netdev_parent(self.as_raw()) }
    }

    /// The device's MTU.
    pub fn mtu(&self) -> u32 {
        // SAFETY: Live by the invariant.
        unsafe { bindings::rrxe_netdev_mtu(self.as_raw()) }
    }

    /// The hardware address, up to 6 bytes, and how many bytes it has (0 for
    /// devices without one).
    pub fn mac(&self) -> ([u8; 6], usize) {
        let mut out = [0u8; 6];
        // SAFETY: Live by the invariant; `out` has room for 6 bytes.
        let n = unsafe { bindings::rrxe_netdev_addr(self.as_raw(), out.as_mut_ptr(), 6) };
        (out, n as usize)
    }

    /// The interface name.
    pub fn name(&self) -> &CStr {
        // SAFETY: Live by the invariant; the name is NUL-terminated and lives
        // in the device.
        unsafe { CStr::from_char_ptr(bindings::netdev_name(self.as_raw()).cast()) }
    }

    /// Whether this is a VLAN device (rxe refuses those).
    pub fn is_vlan(&self) -> bool {
        // SAFETY: Live by the invariant.
        unsafe { bindings::is_vlan_dev(self.as_raw()) }
    }

    /// Whether the interface is administratively up (`IFF_UP`).
    pub fn is_up(&self) -> bool {
        // SAFETY: Live by the invariant.
        unsafe { bindings::rrxe_netif_is_up(self.as_raw()) }
    }

    /// Whether the interface is running with carrier (`netif_running` and
    /// `netif_carrier_ok`), as the IB core counts a RoCE port active
    /// (`ib_get_curr_port_state`).
    pub fn port_active(&self) -> bool {
        // SAFETY: Live by the invariant.
        unsafe {
            bindings::netif_running(self.as_raw()) && bindings::netif_carrier_ok(self.as_raw())
        }
    }
}

/// Netdev notifier events a driver reacts to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// The device is going away.
    Unregister,
    /// The MTU changed.
    ChangeMtu,
    /// Administratively down.
    Down,
    /// Administratively up.
    Up,
    /// Carrier or other state changed.
    Change,
    /// Anything else.
    Other(u64),
}

impl Event {
    fn from_raw(ev: u64) -> Self {
        match ev as u32 {
            bindings::netdev_cmd_NETDEV_UNREGISTER => Self::Unregister,
            bindings::netdev_cmd_NETDEV_CHANGEMTU => Self::ChangeMtu,
            bindings::netdev_cmd_NETDEV_DOWN => Self::Down,
            bindings::netdev_cmd_NETDEV_UP => Self::Up,
            bindings::netdev_cmd_NETDEV_CHANGE => Self::Change,
            _ => Self::Other(ev),
        }
    }
}

/// Receives netdev notifier events.
pub trait Handler: Sync + 'static {
    /// Called in process context under RTNL for every netdev event.
    fn event(event: Event, ndev: &NetDev);
}

/// A registered netdev notifier.
///
/// # Invariants
///
/// `nb` is registered with `register_netdevice_notifier` for as long as this
/// object lives, and it does not move (it is boxed and pinned).
#[pin_data(PinnedDrop)]
pub struct Notifier<H: Handler> {
    #[pin]
    nb: Opaque<bindings::notifier_block>,
    _h: core::marker::PhantomData<H>,
}

// SAFETY: The notifier block is only touched by the notifier core under its
// own lock after registration.
unsafe impl<H: Handler> Send for Notifier<H> {}
// SAFETY: See above.
unsafe impl<H: Handler> Sync for Notifier<H> {}

impl<H: Handler> Notifier<H> {
    /// Registers a netdev notifier that calls `H::event`.
    pub fn register() -> Result<Pin<KBox<Self>>> {
        let this = KBox::pin_init(
            pin_init!(Self {
                nb <- Opaque::init_zeroed(),
                _h: core::marker::PhantomData,
            }),
            GFP_KERNEL,
        )?;
        let nb = this.nb.get();
        // SAFETY: `nb` is zeroed, pinned and ours; it stays registered until
        // `drop` unregisters it (the type invariant).
        unsafe {
            (*nb).notifier_call = Some(Self::call);
            kernel::error::to_result(bindings::register_netdevice_notifier(nb))?;
        }
        Ok(this)
    }

    /// The notifier callback.
    ///
    /// # Safety
    ///
    /// The arguments of a netdev notifier call: `info` is a
    /// `netdev_notifier_info` whose device is alive for the call.
    unsafe extern "C" fn call(
        _nb: *mut bindings::notifier_block,
        event: kernel::ffi::c_ulong,
        info: *mut kernel::ffi::c_void,
    ) -> kernel::ffi::c_int {
        // SAFETY: The netdev notifier passes a `netdev_notifier_info` whose
        // device is alive for the duration of the call.
        let ndev = unsafe { NetDev::from_raw(bindings::netdev_notifier_info_to_dev(info.cast())) };
        H::event(Event::from_raw(event as u64), ndev);
        bindings::NOTIFY_OK as kernel::ffi::c_int
    }
}

#[pinned_drop]
impl<H: Handler> PinnedDrop for Notifier<H> {
    fn drop(self: Pin<&mut Self>) {
        // SAFETY: Registered in `register` (the type invariant).
        unsafe { bindings::unregister_netdevice_notifier(self.nb.get()) };
    }
}
