// SPDX-License-Identifier: GPL-2.0

//! Outgoing IP packets a driver builds whole (its IP and UDP headers
//! included), one at a time or as a burst the stack splits.

use super::{
    gate::{GateOwner, TxGate},
    netdev::NetDev,
    route::RouteCache,
};
use crate::bindings;
use core::ptr::NonNull;
use kernel::prelude::*;

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
        let route = route.map_or(core::ptr::null_mut(), |r| r.as_raw());
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
    pub fn send_gated<T: GateOwner>(self, gate: &TxGate<T>) -> Result {
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
    pub fn send<T: GateOwner>(self, seg: usize, gate: Option<&TxGate<T>>) -> Result {
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
