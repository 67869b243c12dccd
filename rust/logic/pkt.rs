// SPDX-License-Identifier: GPL-2.0

//! The IP and UDP headers of RoCEv2 packets: parsing what arrives (with
//! every length checked against the buffer) and writing what leaves.
//!
//! GIDs stand for addresses: an IPv4 address is the IPv4-mapped GID
//! `::ffff:a.b.c.d`, as the RoCEv2 GID table holds it.

use super::hdr::ROCE_V2_PORT;
use super::icrc::{IPV4_HDR, IPV6_HDR, UDP_HDR};

/// Whether a GID is an IPv4-mapped address.
pub fn is_v4_mapped(gid: &[u8; 16]) -> bool {
    gid[..10] == [0; 10] && gid[10..12] == [0xff, 0xff]
}

/// The IPv4-mapped GID of an IPv4 address.
pub fn v4_mapped(addr: [u8; 4]) -> [u8; 16] {
    let mut g = [0u8; 16];
    g[10] = 0xff;
    g[11] = 0xff;
    g[12..].copy_from_slice(&addr);
    g
}

/// What the IP and UDP headers of a received packet say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IpInfo {
    /// IPv6 (otherwise IPv4).
    pub v6: bool,
    /// Source address as a GID.
    pub sgid: [u8; 16],
    /// Destination address as a GID.
    pub dgid: [u8; 16],
    /// TTL or hop limit.
    pub hop_limit: u8,
    /// TOS or traffic class.
    pub traffic_class: u8,
    /// IPv6 flow label (0 for IPv4).
    pub flow_label: u32,
    /// UDP source port.
    pub sport: u16,
    /// Length of the IP header.
    pub ip_len: usize,
    /// Length of the whole IP packet (the buffer may carry link padding
    /// beyond it).
    pub total: usize,
}

/// Why a packet is dropped before its transport headers are read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PktError {
    /// Shorter than its headers say.
    Short,
    /// Not IPv4 without options or IPv6, or not UDP.
    BadIp,
    /// A fragment.
    Fragment,
    /// Not to UDP port 4791, or the UDP length disagrees with IP's.
    BadUdp,
}

/// Parses the IP and UDP headers at the start of `p` (the network header
/// onwards). On success, `p[ip_len + 8..total]` is the UDP payload (BTH to
/// ICRC).
pub fn parse(p: &[u8]) -> Result<IpInfo, PktError> {
    let first = *p.first().ok_or(PktError::Short)?;
    let (mut info, udp_len_from_ip) = match first >> 4 {
        4 => {
            if first & 0x0f != 5 {
                return Err(PktError::BadIp);
            }
            let h = p.get(..IPV4_HDR).ok_or(PktError::Short)?;
            if h[9] != 17 {
                return Err(PktError::BadIp);
            }
            // More fragments, or a fragment offset.
            if u16::from_be_bytes([h[6], h[7]]) & 0x3fff != 0 {
                return Err(PktError::Fragment);
            }
            let total = usize::from(u16::from_be_bytes([h[2], h[3]]));
            let udp = total.checked_sub(IPV4_HDR).ok_or(PktError::Short)?;
            let info = IpInfo {
                v6: false,
                sgid: v4_mapped([h[12], h[13], h[14], h[15]]),
                dgid: v4_mapped([h[16], h[17], h[18], h[19]]),
                hop_limit: h[8],
                traffic_class: h[1],
                flow_label: 0,
                sport: 0,
                ip_len: IPV4_HDR,
                total,
            };
            (info, udp)
        }
        6 => {
            let h = p.get(..IPV6_HDR).ok_or(PktError::Short)?;
            // No extension headers: the next header must be UDP.
            if h[6] != 17 {
                return Err(PktError::BadIp);
            }
            let plen = usize::from(u16::from_be_bytes([h[4], h[5]]));
            let vtf = u32::from_be_bytes([h[0], h[1], h[2], h[3]]);
            let mut sgid = [0u8; 16];
            let mut dgid = [0u8; 16];
            sgid.copy_from_slice(&h[8..24]);
            dgid.copy_from_slice(&h[24..40]);
            let info = IpInfo {
                v6: true,
                sgid,
                dgid,
                hop_limit: h[7],
                traffic_class: (vtf >> 20) as u8,
                flow_label: vtf & 0xf_ffff,
                sport: 0,
                ip_len: IPV6_HDR,
                total: IPV6_HDR + plen,
            };
            (info, plen)
        }
        _ => return Err(PktError::BadIp),
    };
    if info.total > p.len() || udp_len_from_ip < UDP_HDR {
        return Err(PktError::Short);
    }
    let u = &p[info.ip_len..info.ip_len + UDP_HDR];
    let dport = u16::from_be_bytes([u[2], u[3]]);
    let ulen = usize::from(u16::from_be_bytes([u[4], u[5]]));
    if dport != ROCE_V2_PORT || ulen != udp_len_from_ip {
        return Err(PktError::BadUdp);
    }
    info.sport = u16::from_be_bytes([u[0], u[1]]);
    Ok(info)
}

/// What `write` puts in front of a RoCEv2 UDP payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IpOut {
    /// Source GID (IPv4-mapped for IPv4).
    pub sgid: [u8; 16],
    /// Destination GID.
    pub dgid: [u8; 16],
    /// TTL or hop limit.
    pub hop_limit: u8,
    /// TOS or traffic class.
    pub traffic_class: u8,
    /// IPv6 flow label.
    pub flow_label: u32,
    /// UDP source port.
    pub sport: u16,
}

impl IpOut {
    /// IPv4 when both GIDs are IPv4-mapped.
    pub fn v4(&self) -> bool {
        is_v4_mapped(&self.sgid) && is_v4_mapped(&self.dgid)
    }

    /// Length of the IP and UDP headers.
    pub fn hdr_len(&self) -> usize {
        UDP_HDR + if self.v4() { IPV4_HDR } else { IPV6_HDR }
    }

    /// Writes the IP and UDP headers for a UDP payload of `payload`
    /// bytes at the start of `p`. IPv4 gets DF, identification 0 (the
    /// caller lets the stack choose one before computing the ICRC) and its
    /// header checksum; UDP's checksum is 0, as RoCEv2 sends it.
    pub fn write(&self, p: &mut [u8], payload: usize) -> Option<()> {
        let udp_len = u16::try_from(UDP_HDR + payload).ok()?;
        let ip_len = if self.v4() { IPV4_HDR } else { IPV6_HDR };
        let h = p.get_mut(..ip_len + UDP_HDR)?;
        if self.v4() {
            let total = u16::try_from(IPV4_HDR + usize::from(udp_len)).ok()?;
            h[..IPV4_HDR].fill(0);
            h[0] = 0x45;
            h[1] = self.traffic_class;
            h[2..4].copy_from_slice(&total.to_be_bytes());
            h[6] = 0x40;
            h[8] = self.hop_limit;
            h[9] = 17;
            h[12..16].copy_from_slice(&self.sgid[12..]);
            h[16..20].copy_from_slice(&self.dgid[12..]);
            set_ipv4_checksum(&mut h[..IPV4_HDR]);
        } else {
            let vtf =
                (6u32 << 28) | (u32::from(self.traffic_class) << 20) | (self.flow_label & 0xf_ffff);
            h[0..4].copy_from_slice(&vtf.to_be_bytes());
            h[4..6].copy_from_slice(&udp_len.to_be_bytes());
            h[6] = 17;
            h[7] = self.hop_limit;
            h[8..24].copy_from_slice(&self.sgid);
            h[24..40].copy_from_slice(&self.dgid);
        }
        let u = &mut h[ip_len..];
        u[0..2].copy_from_slice(&self.sport.to_be_bytes());
        u[2..4].copy_from_slice(&ROCE_V2_PORT.to_be_bytes());
        u[4..6].copy_from_slice(&udp_len.to_be_bytes());
        u[6] = 0;
        u[7] = 0;
        Some(())
    }
}

/// Whether a packet whose UDP payload is `next` bytes, a message's last
/// when `last`, may follow packets of `first` bytes in one UDP GSO packet:
/// the stack splits one into equal segments, but for a shorter last one.
pub fn gso_fits(first: usize, next: usize, last: bool) -> bool {
    next == first || (last && next < first)
}

/// Recomputes an IPv4 header's checksum in place.
pub fn set_ipv4_checksum(h: &mut [u8]) {
    h[10] = 0;
    h[11] = 0;
    let mut sum = 0u32;
    for c in h.chunks(2) {
        sum += u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]));
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    h[10..12].copy_from_slice(&(!(sum as u16)).to_be_bytes());
}

/// The UDP source port for a QP pair, as the RoCEv2 annex suggests and
/// ib_core computes it: a flow label from the two QPNs (unless the AV has
/// one), folded into the range 0xC000..=0xFFFF.
pub fn udp_sport(flow_label: u32, lqpn: u32, rqpn: u32) -> u16 {
    let fl = if flow_label & 0xf_ffff != 0 {
        flow_label & 0xf_ffff
    } else {
        let mut v = u64::from(lqpn) * u64::from(rqpn);
        v ^= v >> 20;
        v ^= v >> 40;
        (v & 0xf_ffff) as u32
    };
    let low = (fl & 0x3fff) ^ ((fl & 0xf_c000) >> 14);
    (low as u16) | 0xc000
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gso_segments_are_equal_but_a_shorter_last() {
        assert!(gso_fits(4112, 4112, false));
        assert!(gso_fits(4112, 4112, true));
        assert!(gso_fits(4112, 20, true));
        assert!(!gso_fits(4112, 20, false));
        assert!(!gso_fits(4112, 4128, true));
        assert!(!gso_fits(4112, 4128, false));
    }

    fn out(v4: bool) -> IpOut {
        let (s, d) = if v4 {
            (v4_mapped([10, 0, 0, 1]), v4_mapped([10, 0, 0, 2]))
        } else {
            let mut s = [0u8; 16];
            s[0] = 0x20;
            s[15] = 1;
            let mut d = s;
            d[15] = 2;
            (s, d)
        };
        IpOut {
            sgid: s,
            dgid: d,
            hop_limit: 64,
            traffic_class: 0x10,
            flow_label: 0x12345,
            sport: 0xc123,
        }
    }

    #[test]
    fn write_then_parse() {
        for v4 in [true, false] {
            let o = out(v4);
            let mut p = vec![0u8; o.hdr_len() + 40];
            o.write(&mut p, 40).unwrap();
            let i = parse(&p).unwrap();
            assert_eq!(
                (i.v6, i.sgid, i.dgid, i.hop_limit, i.traffic_class),
                (!v4, o.sgid, o.dgid, 64, 0x10)
            );
            assert_eq!(i.sport, 0xc123);
            assert_eq!(i.flow_label, if v4 { 0 } else { 0x12345 });
            assert_eq!(i.total, p.len());
            // Link padding after the packet is ignored.
            p.extend_from_slice(&[0; 6]);
            assert_eq!(parse(&p).unwrap().total, p.len() - 6);
        }
    }

    #[test]
    fn rejects_bad_lengths_and_headers() {
        let o = out(true);
        let mut p = vec![0u8; o.hdr_len() + 40];
        o.write(&mut p, 40).unwrap();
        assert_eq!(parse(&p[..p.len() - 1]), Err(PktError::Short));
        assert_eq!(parse(&[]), Err(PktError::Short));
        let mut q = p.clone();
        q[6] = 0x20; // more fragments
        assert_eq!(parse(&q), Err(PktError::Fragment));
        let mut q = p.clone();
        q[9] = 6;
        assert_eq!(parse(&q), Err(PktError::BadIp));
        let mut q = p.clone();
        q[0] = 0x46;
        assert_eq!(parse(&q), Err(PktError::BadIp));
        let mut q = p.clone();
        q[23] ^= 1; // other destination port
        assert_eq!(parse(&q), Err(PktError::BadUdp));
        let mut q = p.clone();
        q[25] ^= 1; // UDP length disagrees
        assert_eq!(parse(&q), Err(PktError::BadUdp));
        let mut q = p.clone();
        q[2] = 0;
        q[3] = 10; // IP total below its header
        assert_eq!(parse(&q), Err(PktError::Short));
        let o6 = out(false);
        let mut p6 = vec![0u8; o6.hdr_len() + 8];
        o6.write(&mut p6, 8).unwrap();
        p6[5] = 200; // payload length past the buffer
        assert_eq!(parse(&p6), Err(PktError::Short));
        // An oversized payload cannot be written.
        assert_eq!(o.write(&mut p, 70000), None);
    }

    #[test]
    fn sport_in_range_and_stable() {
        assert_eq!(udp_sport(0, 0x11, 0x12), udp_sport(0, 0x12, 0x11));
        for (f, a, b) in [
            (0, 1, 1),
            (0x12345, 5, 6),
            (0, 0xff_ffff, 0xff_ffff),
            (0xf_ffff, 0, 0),
        ] {
            assert!(udp_sport(f, a, b) >= 0xc000);
        }
        // A flow label picks the port without the QPNs.
        assert_eq!(udp_sport(0x4001, 1, 2), udp_sport(0x4001, 3, 4));
        assert_eq!(udp_sport(0x4001, 1, 2), 0xc000);
    }
}
