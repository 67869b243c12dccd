// SPDX-License-Identifier: GPL-2.0

//! Safe abstractions over the kernel's networking that a RoCEv2 driver
//! needs: network devices and their notifier, the UDP port 4791 tunnel,
//! routes, outgoing skbs, transmit gates and the kernel's CRC-32.
//!
//! This layer is driver-agnostic: it knows nothing of RDMA verbs, and a
//! second driver that sends its own IP packets and receives them from the
//! tunnel can use it as it stands. Its shape is that of the kernel crate's
//! `kernel::net`: typed wrappers that own what they point at
//! ([`netdev::NetDev`], [`route::RouteCache`], [`skb::TxPacket`],
//! [`gate::TxGate`], [`tunnel::NetTicket`]) and a trait per kind of
//! callback ([`netdev::Handler`], [`tunnel::Receiver`],
//! [`gate::GateOwner`]). The C side is `rust/bindings/net_glue.c` (the
//! tunnel sockets, the receive queues, routing and sending) and
//! `rust/bindings/tx_gate.c` (the gates). The only RDMA type here is the
//! endpoint a received packet is for: the RDMA device bound to its ingress
//! netdev, which the C side looks up through ib_core
//! ([`tunnel::Receiver`]).

use crate::bindings;

pub mod crc;
pub mod gate;
pub mod netdev;
pub mod route;
pub mod skb;
pub mod tunnel;

/// The module's workqueue (unbound, `WQ_MEM_RECLAIM`: kernel ULPs flush it
/// through `destroy_qp` from their reclaim workqueues), for the driver's
/// deferred work. Valid from [`tunnel::init`] to [`tunnel::fini`], which
/// drains it.
pub fn queue() -> &'static kernel::workqueue::Queue {
    // SAFETY: Allocated by `tunnel::init` (module init fails otherwise) and
    // destroyed by `tunnel::fini` at module exit, after every user is gone.
    unsafe { kernel::workqueue::Queue::from_raw(bindings::rrxe_workqueue()) }
}

/// Waits for everything queued on [`queue`] so far to finish.
pub fn flush_queue() {
    // SAFETY: As in `queue`; flushing may sleep, as callers may.
    unsafe { bindings::rrxe_flush_workqueue() };
}
