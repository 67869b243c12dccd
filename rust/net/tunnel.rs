// SPDX-License-Identifier: GPL-2.0

//! The RoCEv2 UDP tunnel: the port 4791 sockets of a network namespace,
//! and the packets they receive.
//!
//! Sockets are shared by the endpoints of a namespace through
//! [`NetTicket`]s. A received packet is for the endpoint bound to its
//! ingress netdev, which the C side finds through ib_core
//! (`ib_device_get_by_netdev` with the RXE driver id) and holds a
//! registration reference on while the packet is handled. It is first
//! offered to [`Receiver::accept`] in softirq, which drops what it refuses
//! there; the rest reach the receiver in process context (each endpoint's
//! [`RxQueue`] is drained by its own worker, which the softirq callback
//! wakes), as [`Receiver::receive`] calls.

use super::netdev::NetDev;
use crate::bindings;
use core::ptr::NonNull;
use kernel::prelude::*;

/// The endpoints one driver receives tunnel packets for.
///
/// An endpoint is an RDMA device (`struct ib_device`) bound to the ingress
/// netdev: the C side looks it up, and [`Receiver::from_ib_device`] says
/// whether it is one of this receiver's.
pub trait Receiver: Sync + Sized + 'static {
    /// The endpoint `ib`, if it is one of this receiver's; `None` drops
    /// its packets.
    ///
    /// # Safety
    ///
    /// `ib` must be a live RDMA device the caller holds a registration
    /// reference on for `'a`.
    unsafe fn from_ib_device<'a>(ib: *mut bindings::ib_device) -> Option<&'a Self>;

    /// The endpoint's receive queue, `None` while it has none (its
    /// packets are then dropped).
    fn rx_queue(&self) -> Option<&RxQueue>;

    /// Whether a packet (the IP packet with its UDP header, maybe followed
    /// by link padding) is queued for [`Self::receive`]; false drops it.
    /// Runs in softirq: it must not sleep.
    fn accept(&self, pkt: &[u8]) -> bool;

    /// A packet that [`Self::accept`] accepted, in process context.
    fn receive(&self, pkt: &[u8]);

    /// A packet that [`Self::accept`] accepted found the endpoint's queue
    /// full and was dropped. Runs in softirq.
    fn queue_full(&self);
}

/// Starts the receive side for the endpoints of `R`. Call once from module
/// init, before any [`NetTicket`] exists.
pub fn init<R: Receiver>() -> Result {
    // SAFETY: Registers a pernet subsystem and the callbacks below, which
    // are valid for the module's life (until `fini`).
    kernel::error::to_result(unsafe {
        bindings::rrxe_net_init(
            Some(rx_trampoline::<R>),
            Some(accept_trampoline::<R>),
            Some(rxq_of::<R>),
            Some(full_trampoline::<R>),
        )
    })
}

/// Stops the receive side: closes every socket left, waits for packets in
/// flight and drops queued ones. Call once from module exit, after every
/// endpoint is gone.
pub fn fini() {
    // SAFETY: `init` succeeded (module init failed otherwise).
    unsafe { bindings::rrxe_net_fini() };
}

/// An endpoint's receive queue, drained in process context by a worker of
/// its own.
///
/// # Invariants
///
/// `ptr` came from `rrxe_rxq_create` and is destroyed once, on drop.
pub struct RxQueue {
    ptr: NonNull<bindings::rrxe_rxq>,
}

// SAFETY: The C side guards the queue with its own lock; creation and
// destruction need no particular thread.
unsafe impl Send for RxQueue {}
// SAFETY: See above.
unsafe impl Sync for RxQueue {}

impl RxQueue {
    /// A queue for the endpoint `ib` (it allocates; may sleep).
    ///
    /// # Safety
    ///
    /// `ib` must be a live RDMA device that no packet can reach yet
    /// (unregistered), and the queue must be dropped before the endpoint's
    /// receiver state is: dropping it waits for its worker.
    pub unsafe fn new(ib: *mut bindings::ib_device) -> Result<Self> {
        // SAFETY: The caller's promise.
        let ptr = unsafe { bindings::rrxe_rxq_create(ib) };
        // INVARIANT: A fresh queue from `rrxe_rxq_create`.
        NonNull::new(ptr).map(|ptr| Self { ptr }).ok_or(ENOMEM)
    }
}

impl Drop for RxQueue {
    fn drop(&mut self) {
        // SAFETY: Ours (the invariant); no packet is queued any more (the
        // promise made to `new`), and the worker ends here.
        unsafe { bindings::rrxe_rxq_destroy(self.ptr.as_ptr()) };
    }
}

/// While alive, packets that the caller's sends bring to an idle endpoint
/// of this kernel (another namespace's, over a veth) are received in the
/// caller's context when the guard goes, instead of waking that endpoint's
/// receive worker: a context switch fewer each way (see `net_glue.c`).
///
/// # Invariants
///
/// `active` is whether `rrxe_rx_inline_begin` returned true; the guard is
/// not `Send` (the begin pinned the task to its CPU).
pub struct ReceiveInPlace {
    active: bool,
    _not_send: core::marker::PhantomData<*mut ()>,
}

impl ReceiveInPlace {
    /// Begins. The caller is in process context and holds, for the guard's
    /// life, no lock that the receive path takes: dropping the guard runs
    /// the receiver here.
    pub fn begin() -> Self {
        // SAFETY: Process context, by the caller's promise.
        let active = unsafe { bindings::rrxe_rx_inline_begin() };
        Self {
            active,
            _not_send: core::marker::PhantomData,
        }
    }
}

impl Drop for ReceiveInPlace {
    fn drop(&mut self) {
        if self.active {
            // SAFETY: Ends the begin that returned true, on the same task
            // (the guard is not `Send`), holding no receive-path lock (the
            // promise made to `begin`).
            unsafe { bindings::rrxe_rx_inline_end() };
        }
    }
}

/// Receives now, in the caller's context, what its sends brought so far
/// while a [`ReceiveInPlace`] of the caller is alive, which goes on; does
/// nothing otherwise. For a sender that has handed the stack the last
/// packet it will send for now: that packet's receiver runs before the
/// sender's remaining bookkeeping instead of after it. Nothing either when
/// called from inside such a receive (the receiver may send, and call
/// this): the receive under way takes what comes.
///
/// The caller is in process context and holds no lock that the receiver
/// takes, nor any it takes in what it runs (the promise made to
/// [`ReceiveInPlace::begin`]).
pub fn receive_now() {
    // SAFETY: Process context, holding no receive-path lock (the caller's
    // promise); the C side checks that the caller owns this CPU's slot.
    unsafe { bindings::rrxe_rx_inline_flush() };
}

/// The receive handler the C side calls from its work item, per packet.
///
/// # Safety
///
/// `ib` must be null or a device the caller holds a registration reference
/// on, and `data` the packet's `len` bytes (from its network header),
/// readable and unchanged for the call.
unsafe extern "C" fn rx_trampoline<R: Receiver>(
    ib: *mut bindings::ib_device,
    data: *const u8,
    len: u32,
) {
    if ib.is_null() {
        return;
    }
    // SAFETY: A device the caller holds a reference on, for the call.
    let Some(ep) = (unsafe { R::from_ib_device(ib) }) else {
        return;
    };
    // SAFETY: `len` readable bytes at `data` for the call (the caller's
    // promise).
    let pkt = unsafe { core::slice::from_raw_parts(data, len as usize) };
    ep.receive(pkt);
}

/// The softirq's look at a packet before it is queued, per packet: false
/// drops it.
///
/// # Safety
///
/// As for [`rx_trampoline`]; the caller runs in softirq (or with bottom
/// halves off).
unsafe extern "C" fn accept_trampoline<R: Receiver>(
    ib: *mut bindings::ib_device,
    data: *const u8,
    len: u32,
) -> bool {
    if ib.is_null() {
        return false;
    }
    // SAFETY: A device the caller holds a reference on, for the call.
    let Some(ep) = (unsafe { R::from_ib_device(ib) }) else {
        return false;
    };
    // SAFETY: `len` readable bytes at `data` for the call (the caller's
    // promise).
    let pkt = unsafe { core::slice::from_raw_parts(data, len as usize) };
    ep.accept(pkt)
}

/// A packet for an endpoint of `R` that found its receive queue full and
/// was dropped, in softirq.
///
/// # Safety
///
/// `ib` must be null or a device the caller holds a registration reference
/// on.
unsafe extern "C" fn full_trampoline<R: Receiver>(ib: *mut bindings::ib_device) {
    if ib.is_null() {
        return;
    }
    // SAFETY: A device the caller holds a reference on, for the call.
    if let Some(ep) = unsafe { R::from_ib_device(ib) } {
        ep.queue_full();
    }
}

/// The receive queue of an endpoint of `R` (each has its own; see
/// `net_glue.c`), or null for another driver's endpoint (its packets are
/// dropped).
///
/// # Safety
///
/// `ib` must be a device the caller holds a registration reference on.
unsafe extern "C" fn rxq_of<R: Receiver>(ib: *mut bindings::ib_device) -> *mut bindings::rrxe_rxq {
    if ib.is_null() {
        return core::ptr::null_mut();
    }
    // SAFETY: A device the caller holds a reference on, for the call.
    let ep = unsafe { R::from_ib_device(ib) };
    ep.and_then(Receiver::rx_queue)
        .map_or(core::ptr::null_mut(), |q| q.ptr.as_ptr())
}

/// A share of the tunnel sockets of a network device's namespace.
///
/// # Invariants
///
/// `ticket` came from a successful `rrxe_net_get` and is put once, on drop.
pub struct NetTicket {
    ticket: u64,
}

impl NetTicket {
    /// Opens the namespace's sockets, or takes another reference on them.
    pub fn get(ndev: &NetDev) -> Result<Self> {
        let mut ticket = 0u64;
        // SAFETY: `ndev` is live, so is its namespace; the out-pointer is valid.
        kernel::error::to_result(unsafe {
            bindings::rrxe_net_get(bindings::dev_net(ndev.as_raw()), &mut ticket)
        })?;
        // INVARIANT: A successful get.
        Ok(Self { ticket })
    }
}

impl Drop for NetTicket {
    fn drop(&mut self) {
        // SAFETY: Our reference (the type invariant); a no-op if the
        // namespace has closed the sockets already.
        unsafe { bindings::rrxe_net_put(self.ticket) };
    }
}
