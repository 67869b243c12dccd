// SPDX-License-Identifier: GPL-2.0

//! Bursts: consecutive packets of one connected QP's message sent to the
//! stack as one UDP GSO packet, which the device (a veth, a NIC that
//! segments UDP) or the stack splits. Each segment is an ordinary RoCEv2
//! packet, its ICRC computed here over the IP and UDP headers the stack
//! will give it (its lengths, and the identification the stack numbers
//! segments with); only the UDP checksum, which the ICRC leaves out, is
//! the stack's. One trip through IP, the qdisc and the device carries the
//! whole burst, where each packet took its own.
//!
//! The stack splits a UDP GSO packet into equal segments, the last perhaps
//! shorter, so a burst is such a run of packets: the middle of a message,
//! or its middle and last packets. IPv4 only; IPv6 packets go one by one.

use crate::ib::{
    device::Device,
    gate::TxGate,
    net::{self as ibnet, RouteCache, TxPacket},
    stats::Counter,
};
use crate::logic::{
    hdr::{Headers, ICRC_SIZE, MAX_HDRS},
    icrc::{IPV4_HDR, UDP_HDR},
    pkt::{self, IpOut},
};
use crate::rrxe::{device::Rrxe, net, qp::QpShared};
use kernel::prelude::*;

/// The most UDP payload bytes a burst carries: with its headers and the
/// skb's shared info it stays within 32 KiB (an order-3 allocation, which
/// the page allocator serves from its per-CPU lists).
pub const MAX_BYTES: usize = 30 * 1024;

/// The most packets in a burst.
pub const MAX_PKTS: usize = 32;

/// Whether this device's packets to `out` may go in bursts: IPv4, and a
/// netdev that takes UDP GSO packets whole.
pub fn ok(dev: &Device<Rrxe>, out: &IpOut) -> bool {
    out.v4() && dev.netdev(1).is_some_and(|n| ibnet::udp_gso_ok(&n))
}

/// Sends `n` packets (2 or more) as one burst: packet `k` has the headers
/// and payload length `packet(k)` gives, and `fill(k, ..)` writes its payload.
/// `EINVAL` if they do not make a burst (see `pkt::gso_fits`, [`MAX_BYTES`]);
/// otherwise as [`net::xmit`].
pub fn xmit(
    dev: &Device<Rrxe>,
    out: &IpOut,
    route: Option<&RouteCache>,
    gate: Option<&TxGate<QpShared>>,
    n: usize,
    packet: impl Fn(usize) -> (Headers, usize),
    mut fill: impl FnMut(usize, &mut [u8]) -> Result,
) -> Result {
    let segs = u16::try_from(n).map_err(|_| EINVAL)?;
    let (h0, l0) = packet(0);
    let seg = h0.udp_len(l0);
    let mut udp_total = 0;
    for k in 0..n {
        let (h, l) = packet(k);
        let u = h.udp_len(l);
        if k > 0 && !pkt::gso_fits(seg, u, k + 1 == n) {
            return Err(EINVAL);
        }
        udp_total += u;
    }
    if !out.v4() || n < 2 || udp_total > MAX_BYTES {
        return Err(EINVAL);
    }
    let ndev = dev.netdev(1).ok_or(ENODEV)?;
    let hl = out.hdr_len();
    let (s, d) = (&out.sgid[12..], &out.dgid[12..]);
    let mut tx = TxPacket::new(&ndev, route, s, d, out.traffic_class, hl + udp_total)?;
    out.write(tx.data(), udp_total).ok_or(EINVAL)?;
    tx.ip4_ident(segs);
    let p = tx.data();
    let id = u16::from_be_bytes([p[4], p[5]]);
    let mut rest = &mut p[hl..];
    let mut bytes = 0u64;
    for k in 0..n {
        let (h, len) = packet(k);
        let u = h.udp_len(len);
        let (sp, r) = core::mem::take(&mut rest).split_at_mut(u);
        rest = r;
        let mut hb = [0u8; MAX_HDRS];
        let hn = h.write(&mut hb);
        let pad = u - hn - len - ICRC_SIZE;
        sp[..hn].copy_from_slice(&hb[..hn]);
        sp[1] = (sp[1] & !0x30) | ((pad as u8) << 4);
        fill(k, &mut sp[hn..hn + len])?;
        sp[hn + len..u - ICRC_SIZE].fill(0);
        // The headers this segment leaves with.
        let mut sh = [0u8; IPV4_HDR + UDP_HDR];
        out.write(&mut sh, u).ok_or(EINVAL)?;
        sh[4..6].copy_from_slice(&id.wrapping_add(k as u16).to_be_bytes());
        let sum = net::icrc_split(&sh, &sp[..u - ICRC_SIZE]).map_err(|_| EINVAL)?;
        sp[u - ICRC_SIZE..].copy_from_slice(&sum.to_le_bytes());
        bytes += len as u64;
    }
    tx.set_gso(seg, segs)?;
    match gate {
        Some(g) => tx.send_gated(g)?,
        None => tx.send()?,
    }
    let d = dev.data();
    d.count(Counter::SentPkts, n as u64);
    d.count(Counter::SentBytes, bytes);
    Ok(())
}
