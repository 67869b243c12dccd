// SPDX-License-Identifier: GPL-2.0

//! RoCEv2 over UDP: the port 4791 sockets of a network namespace, sending
//! an IP packet the driver builds, and receiving packets.
//!
//! Sockets are shared by the devices of a namespace through [`NetTicket`]s.
//! Received packets are first offered to [`Driver::rx_accept`] in softirq,
//! which drops what it refuses there; the rest reach the driver in process
//! context (each device's worker drains the device's queue, which the
//! softirq callback fills), as [`Driver::rx_packet`] calls with the device
//! of the ingress netdev.

use super::bindings;
use super::device::{Device, Driver};
use super::memcg::Charge;
use super::netdev::NetDev;
use core::ptr::NonNull;
use kernel::prelude::*;

/// Starts the receive side for driver `T`. Call once from module init,
/// before any [`NetTicket`] exists.
pub fn init<T: Driver>() -> Result {
    // SAFETY: Registers a pernet subsystem and the callbacks below, which
    // are valid for the module's life (until `fini`).
    kernel::error::to_result(unsafe {
        bindings::rrxe_net_init(
            Some(rx_trampoline::<T>),
            Some(accept_trampoline::<T>),
            Some(rxq_of::<T>),
            Some(full_trampoline::<T>),
        )
    })
}

/// Stops the receive side: closes every socket left, waits for packets in
/// flight and drops queued ones. Call once from module exit, after every
/// device is gone.
pub fn fini() {
    // SAFETY: `init` succeeded (module init failed otherwise).
    unsafe { bindings::rrxe_net_fini() };
}

/// The module's workqueue (unbound, `WQ_MEM_RECLAIM`: kernel ULPs flush it
/// through `destroy_qp` from their reclaim workqueues), for the driver's
/// deferred work. Valid from [`init`] to [`fini`], which drains it.
pub fn queue() -> &'static kernel::workqueue::Queue {
    // SAFETY: Allocated by `init` (module init fails otherwise) and
    // destroyed by `fini` at module exit, after every user is gone.
    unsafe { kernel::workqueue::Queue::from_raw(bindings::rrxe_workqueue()) }
}

/// Waits for everything queued on [`queue`] so far to finish.
pub fn flush_queue() {
    // SAFETY: As in `queue`; flushing may sleep, as callers may.
    unsafe { bindings::rrxe_flush_workqueue() };
}

/// While alive, packets that the caller's sends bring to an idle device of
/// this kernel (another namespace's, over a veth) are received in the
/// caller's context when the guard goes, instead of waking that device's
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
    /// the driver's receive handler here.
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
/// called from inside such a receive (the driver's receive handler may
/// send, and call this): the receive under way takes what comes.
///
/// The caller is in process context and holds no lock that the driver's
/// receive handler takes, nor any it takes in what it runs (the promise
/// made to [`ReceiveInPlace::begin`]).
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
unsafe extern "C" fn rx_trampoline<T: Driver>(
    ib: *mut bindings::ib_device,
    data: *const u8,
    len: u32,
) {
    let Some(dev) = Device::<T>::from_raw_if_ours(ib) else {
        return;
    };
    // SAFETY: `len` readable bytes at `data` for the call (the caller's
    // promise).
    let pkt = unsafe { core::slice::from_raw_parts(data, len as usize) };
    T::rx_packet(dev, pkt);
}

/// The softirq's look at a packet before it is queued, per packet: false
/// drops it.
///
/// # Safety
///
/// As for [`rx_trampoline`]; the caller runs in softirq (or with bottom
/// halves off).
unsafe extern "C" fn accept_trampoline<T: Driver>(
    ib: *mut bindings::ib_device,
    data: *const u8,
    len: u32,
) -> bool {
    let Some(dev) = Device::<T>::from_raw_if_ours(ib) else {
        return false;
    };
    // SAFETY: `len` readable bytes at `data` for the call (the caller's
    // promise).
    let pkt = unsafe { core::slice::from_raw_parts(data, len as usize) };
    T::rx_accept(dev, pkt)
}

/// A packet for a device of `T` that found its receive queue full and was
/// dropped, in softirq.
///
/// # Safety
///
/// `ib` must be null or a device the caller holds a registration reference
/// on.
unsafe extern "C" fn full_trampoline<T: Driver>(ib: *mut bindings::ib_device) {
    if let Some(dev) = Device::<T>::from_raw_if_ours(ib) {
        T::rx_queue_full(dev);
    }
}

/// The receive queue of a device of `T` (each device has its own; see
/// `net_glue.c`), or null for another driver's device (its packets are
/// dropped).
///
/// # Safety
///
/// `ib` must be a device the caller holds a registration reference on.
unsafe extern "C" fn rxq_of<T: Driver>(ib: *mut bindings::ib_device) -> *mut bindings::rrxe_rxq {
    Device::<T>::from_raw_if_ours(ib).map_or(core::ptr::null_mut(), |d| d.rxq)
}

/// A device's share of the UDP sockets of its netdev's namespace.
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
            bindings::rrxe_net_get(bindings::rrxe_dev_net(ndev.as_raw()), &mut ticket)
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

/// A connected QP's route, kept between packets (a `dst_cache`, per CPU).
///
/// The flow it routes (destination, source, TOS, netdev) must stay the
/// same until [`RouteCache::reset`]; the stack's own invalidations (a
/// routing change, the netdev going away) are noticed on the next packet,
/// and so is a packet with another source address.
///
/// # Invariants
///
/// `ptr` came from `rrxe_route_alloc` and is freed once, on drop.
pub struct RouteCache {
    ptr: NonNull<bindings::rrxe_route>,
}

// SAFETY: The cache is per CPU, and the C side disables BH around each use,
// so any number of threads may use one at once; reset is a single store.
unsafe impl Send for RouteCache {}
// SAFETY: See above.
unsafe impl Sync for RouteCache {}

impl RouteCache {
    /// An empty cache (it allocates per-CPU storage; may sleep), charged
    /// as `charge` says.
    pub fn new(charge: &Charge) -> Result<Self> {
        // SAFETY: No preconditions; null on failure.
        let ptr = unsafe { bindings::rrxe_route_alloc(charge.accounts()) };
        // INVARIANT: A fresh route from `rrxe_route_alloc`.
        NonNull::new(ptr).map(|ptr| Self { ptr }).ok_or(ENOMEM)
    }

    /// Forgets the cached route, when the flow changes. Any context.
    pub fn reset(&self) {
        // SAFETY: Live (the invariant); a reset is a single store.
        unsafe { bindings::rrxe_route_reset(self.ptr.as_ptr()) };
    }
}

impl Drop for RouteCache {
    fn drop(&mut self) {
        // SAFETY: Ours (the invariant), and with `&mut self` nobody else
        // uses it.
        unsafe { bindings::rrxe_route_free(self.ptr.as_ptr()) };
    }
}

/// An outgoing IP packet, routed, with its bytes still to be written.
///
/// # Invariants
///
/// `skb` is an skb from `rrxe_tx_skb` that we own; `data` points at its
/// `len` bytes from the network header.
pub struct TxPacket {
    skb: NonNull<bindings::sk_buff>,
    data: NonNull<u8>,
    len: usize,
    v6: bool,
}

impl TxPacket {
    /// Routes a packet from `saddr` to `daddr` (4 or 16 bytes each) in
    /// `ndev`'s namespace, leaving by `ndev`, through `route`'s cache when
    /// there is one, and allocates `len` bytes for it.
    pub fn new(
        ndev: &NetDev,
        route: Option<&RouteCache>,
        saddr: &[u8],
        daddr: &[u8],
        tos: u8,
        len: usize,
    ) -> Result<Self> {
        let v6 = match (saddr.len(), daddr.len()) {
            (4, 4) => false,
            (16, 16) => true,
            _ => return Err(EINVAL),
        };
        let mut data = core::ptr::null_mut();
        let len32 = u32::try_from(len).map_err(|_| EINVAL)?;
        let route = route.map_or(core::ptr::null_mut(), |r| r.ptr.as_ptr());
        // SAFETY: `ndev` is live; `route` is null or a live cache; the
        // addresses are readable for their lengths (4 or 16, matching
        // `v6`); `data` is a valid out-pointer.
        let skb = unsafe {
            bindings::rrxe_tx_skb(
                ndev.as_raw(),
                route,
                v6,
                saddr.as_ptr(),
                daddr.as_ptr(),
                tos,
                len32,
                &mut data,
            )
        };
        let skb = kernel::error::from_err_ptr(skb)?;
        let (Some(skb), Some(data)) = (NonNull::new(skb), NonNull::new(data)) else {
            return Err(ENOMEM);
        };
        // INVARIANT: A fresh skb with `len` bytes put at `data`.
        Ok(Self { skb, data, len, v6 })
    }

    /// The packet's bytes, from the IP header on.
    pub fn data(&mut self) -> &mut [u8] {
        // SAFETY: `len` bytes at `data`, owned with the skb (the invariant).
        unsafe { core::slice::from_raw_parts_mut(self.data.as_ptr(), self.len) }
    }

    /// Lets the stack choose the IPv4 identification of the header written
    /// in [`Self::data`] (before the ICRC is computed over it), reserving
    /// `segs` of them for the head of a [`TxBurst`] of `segs` packets
    /// (which the stack numbers on from the one chosen).
    pub fn ip4_ident(&mut self, segs: u16) {
        if !self.v6 {
            // SAFETY: Our skb, with its IPv4 header written by the caller.
            unsafe { bindings::rrxe_tx_ip4_ident(self.skb.as_ptr(), segs.max(1).into()) };
        }
    }

    /// Hands the packet to the IP layer.
    pub fn send(self) -> Result {
        let this = core::mem::ManuallyDrop::new(self);
        // SAFETY: Our skb; `rrxe_tx_send` consumes it.
        kernel::error::to_result(unsafe { bindings::rrxe_tx_send(this.skb.as_ptr(), this.v6) })
    }
}

impl TxPacket {
    /// Hands the packet to the IP layer through `gate`, which counts it
    /// until the stack frees it.
    pub fn send_gated<T: crate::ib::gate::GateOwner>(
        self,
        gate: &crate::ib::gate::TxGate<T>,
    ) -> Result {
        let this = core::mem::ManuallyDrop::new(self);
        // SAFETY: Our skb, which `rrxe_tx_send_gated` consumes; the gate is
        // live while borrowed.
        kernel::error::to_result(unsafe {
            bindings::rrxe_tx_send_gated(this.skb.as_ptr(), this.v6, gate.as_raw())
        })
    }
}

impl Drop for TxPacket {
    fn drop(&mut self) {
        // SAFETY: Still ours: not sent.
        unsafe { bindings::rrxe_kfree_skb(self.skb.as_ptr()) };
    }
}

/// A burst: an IPv4 packet (the head, a [`TxPacket`] with its IP and UDP
/// headers and its UDP payload) and more packets chained to it, handed to
/// the stack as one UDP GSO packet that it splits back into them without
/// copying (see `net_glue.c`). Each packet has its own IP and UDP headers,
/// which the caller writes; the stack sets each IPv4 header's length,
/// checksum and identification (the head's, then one more per packet).
///
/// # Invariants
///
/// `tail` is null or the last packet chained to `head`'s skb, which owns
/// it; `segs` counts the head and the packets chained.
pub struct TxBurst {
    head: TxPacket,
    tail: *mut bindings::sk_buff,
    segs: u16,
}

impl TxBurst {
    /// A burst of `head` alone, an IPv4 packet.
    pub fn new(head: TxPacket) -> Result<Self> {
        if head.v6 {
            return Err(EINVAL);
        }
        // INVARIANT: No packet chained yet.
        Ok(Self {
            head,
            tail: core::ptr::null_mut(),
            segs: 1,
        })
    }

    /// The head.
    pub fn head(&mut self) -> &mut TxPacket {
        &mut self.head
    }

    /// Chains a packet of `len` bytes (its IP header to the end of its UDP
    /// payload) and returns them, to be written.
    pub fn push(&mut self, len: usize) -> Result<&mut [u8]> {
        let len32 = u32::try_from(len).map_err(|_| EINVAL)?;
        let segs = self.segs.checked_add(1).ok_or(EINVAL)?;
        let mut data = core::ptr::null_mut();
        // SAFETY: The head's skb is ours and `tail` null or its last chained
        // packet (the invariant); `data` is a valid out-pointer.
        let skb = unsafe {
            bindings::rrxe_tx_burst_add(self.head.skb.as_ptr(), self.tail, len32, &mut data)
        };
        if skb.is_null() || data.is_null() {
            return Err(ENOMEM);
        }
        // INVARIANT: The new packet is the last chained, and is counted.
        self.tail = skb;
        self.segs = segs;
        // SAFETY: `len` bytes at `data` in the new packet, which the head
        // owns while `self` is borrowed.
        Ok(unsafe { core::slice::from_raw_parts_mut(data, len) })
    }

    /// Hands the burst to the IP layer (through `gate`, which counts its
    /// packets, when given), its head's UDP payload being `seg` bytes, the
    /// largest. `EINVAL` for a head alone.
    pub fn send<T: crate::ib::gate::GateOwner>(
        self,
        seg: usize,
        gate: Option<&crate::ib::gate::TxGate<T>>,
    ) -> Result {
        let seg = u32::try_from(seg).map_err(|_| EINVAL)?;
        if self.segs < 2 {
            return Err(EINVAL);
        }
        // SAFETY: The head's skb is ours, an IPv4 packet with its headers
        // written and `segs` packets in all (the invariant).
        unsafe { bindings::rrxe_tx_burst_finish(self.head.skb.as_ptr(), seg, self.segs.into()) };
        match gate {
            Some(g) => self.head.send_gated(g),
            None => self.head.send(),
        }
    }
}
