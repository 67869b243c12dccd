// SPDX-License-Identifier: GPL-2.0

//! Bursts: consecutive packets of one RC message (a request, or a read
//! response) handed to the stack as one UDP GSO packet
//! (`net::skb::TxBurst`), which it splits back into them without copying
//! them, in the receiving namespace when a veth passes it whole, or before
//! a device that cannot take it. Each is an ordinary RoCEv2 packet, built
//! as one sent alone would be, its ICRC computed over the IP and UDP
//! headers the stack will leave it with (its lengths, and the
//! identification the stack numbers the packets with). One trip through
//! IP, the qdisc and the device, and one through the receiving IP and UDP
//! layers, carries the whole burst, where each packet took its own.
//!
//! A burst is a run of packets of equal size, the last perhaps shorter
//! (`pkt::gso_fits`): the middle of a message, or its middle and last
//! packets (a read response's last carries an AETH, and goes alone), which
//! the stack could also split by size alone. IPv4 only; IPv6 packets go
//! one by one.

use crate::logic::{
    hdr::{Headers, ICRC_SIZE, MAX_HDRS},
    icrc::{IPV4_HDR, UDP_HDR},
    pkt,
};
use crate::net::skb::{TxBurst, TxPacket};
use crate::rrxe::net::{self, Egress};
use crate::rrxe::stats::Counter;
use kernel::prelude::*;

/// The most UDP payload bytes a burst carries: its UDP and IPv4 lengths
/// count them all, and must fit in 16 bits.
pub const MAX_BYTES: usize = 60 * 1024;

/// The most packets in a burst.
pub const MAX_PKTS: usize = 64;

/// Writes a packet's UDP payload into `sp` (exactly its length): headers
/// `hdrs`, `len` payload bytes from `fill`, the pad, and the ICRC over the IP
/// and UDP headers `ipudp` it leaves with and the rest.
fn build(
    sp: &mut [u8],
    ipudp: &[u8],
    hdrs: &Headers,
    len: usize,
    fill: impl FnOnce(&mut [u8]) -> Result,
) -> Result {
    let u = sp.len();
    let mut hb = [0u8; MAX_HDRS];
    let hn = hdrs.write(&mut hb);
    let pad = u.checked_sub(hn + len + ICRC_SIZE).ok_or(EINVAL)?;
    sp[..hn].copy_from_slice(&hb[..hn]);
    sp[1] = (sp[1] & !0x30) | ((pad as u8) << 4);
    fill(&mut sp[hn..hn + len])?;
    sp[hn + len..u - ICRC_SIZE].fill(0);
    let sum = net::icrc_split(ipudp, &sp[..u - ICRC_SIZE]).map_err(|_| EINVAL)?;
    sp[u - ICRC_SIZE..].copy_from_slice(&sum.to_le_bytes());
    Ok(())
}

/// Sends `segments` packets (2 or more) to `egress` as one burst: packet
/// `k` has the headers and payload length `packet(k)` gives, and
/// `fill(k, ..)` writes its payload.
/// `EINVAL` if they do not make a burst (see `pkt::gso_fits`, [`MAX_BYTES`]);
/// otherwise as [`net::xmit`].
pub fn xmit(
    egress: &Egress<'_>,
    segments: usize,
    packet: impl Fn(usize) -> (Headers, usize),
    mut fill: impl FnMut(usize, &mut [u8]) -> Result,
) -> Result {
    let Egress {
        dev,
        out,
        route,
        gate,
    } = *egress;
    let segs = u16::try_from(segments).map_err(|_| EINVAL)?;
    let (h0, l0) = packet(0);
    let seg = h0.udp_len(l0);
    let mut udp_total = 0;
    for k in 0..segments {
        let (h, l) = packet(k);
        let u = h.udp_len(l);
        if k > 0 && !pkt::gso_fits(seg, u, k + 1 == segments) {
            return Err(EINVAL);
        }
        udp_total += u;
    }
    if !out.v4() || segments < 2 || udp_total > MAX_BYTES {
        return Err(EINVAL);
    }
    let ndev = dev.netdev(1).ok_or(ENODEV)?;
    const HL: usize = IPV4_HDR + UDP_HDR;
    let (s, d) = (&out.sgid[12..], &out.dgid[12..]);
    let head = TxPacket::new(&ndev, route, s, d, out.traffic_class, HL + seg)
        .inspect_err(|e| net::route_failed(dev.data(), *e, out, segments))?;
    let mut b = TxBurst::new(head)?;
    // The head's headers count the whole burst; the stack gives it its own
    // lengths when it splits the burst.
    out.write(b.head().data(), udp_total).ok_or(EINVAL)?;
    b.head().ip4_ident(segs);
    let id = {
        let p = b.head().data();
        u16::from_be_bytes([p[4], p[5]])
    };
    let mut bytes = 0u64;
    for k in 0..segments {
        let (h, len) = packet(k);
        let u = h.udp_len(len);
        // This packet's own headers, as it leaves.
        let mut ipudp = [0u8; HL];
        out.write(&mut ipudp, u).ok_or(EINVAL)?;
        ipudp[4..6].copy_from_slice(&id.wrapping_add(k as u16).to_be_bytes());
        let p = if k == 0 {
            b.head().data()
        } else {
            let p = b.push(HL + u)?;
            p[..HL].copy_from_slice(&ipudp);
            p
        };
        build(&mut p[HL..HL + u], &ipudp, &h, len, |o| fill(k, o))?;
        bytes += len as u64;
    }
    b.send(seg, gate)?;
    let d = dev.data();
    d.count(Counter::SentPkts, segments as u64);
    d.count(Counter::SentBytes, bytes);
    Ok(())
}
