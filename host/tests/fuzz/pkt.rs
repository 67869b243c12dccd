// SPDX-License-Identifier: GPL-2.0

//! IP and UDP headers, and the ICRC over them: what `IpOut::write` builds
//! parses back to the same addresses and fields; a packet cut short, or
//! arbitrary bytes, never parses to lengths beyond the buffer; the ICRC
//! ignores exactly the fields that may change in flight, and its slice-by-8
//! CRC-32 agrees with the bytewise reference.

use crate::rng::Rng;
use rrxe_logic::hdr::ROCE_V2_PORT;
use rrxe_logic::icrc::{
    icrc, icrc_with, Backend, Bytewise, IcrcError, Slice8, BTH_RESV8A, IPV4_HDR, IPV6_HDR, UDP_HDR,
};
use rrxe_logic::pkt::*;

/// One case: a round trip with its truncations, a hostile buffer, or the
/// ICRC's masking.
pub fn case(r: &mut Rng) {
    match r.below(5) {
        0 | 1 => round_trip(r),
        2 => hostile(r),
        3 => icrc_masks(r),
        _ => crc_engines(r),
    }
    r.count();
}

fn gid(r: &mut Rng, v4: bool) -> [u8; 16] {
    if v4 {
        v4_mapped(r.u32().to_be_bytes())
    } else {
        let mut g = [0u8; 16];
        r.fill(&mut g);
        // Now and then a GID that only just is not IPv4-mapped.
        if r.chance(1, 8) {
            g = v4_mapped([g[0], g[1], g[2], g[3]]);
            g[r.below(12) as usize] ^= 1;
        }
        g
    }
}

fn out(r: &mut Rng) -> IpOut {
    let (sv4, dv4) = match r.below(4) {
        0 => (true, true),
        1 => (false, false),
        2 => (true, false),
        _ => (false, true),
    };
    IpOut {
        sgid: gid(r, sv4),
        dgid: gid(r, dv4),
        hop_limit: r.u8(),
        traffic_class: r.u8(),
        flow_label: r.u32(),
        sport: r.u16(),
    }
}

/// Builds IP and UDP headers for a payload and parses them back, with
/// link padding after the packet; then every truncation is refused.
fn round_trip(r: &mut Rng) {
    let o = out(r);
    let payload = match r.below(16) {
        0 if r.chance(1, 2) => 0xffff - 64 + r.below(64) as usize,
        0..=3 => 1000 + r.below(4200) as usize,
        _ => r.below(300) as usize,
    };
    let hl = o.hdr_len();
    let pad = if r.bool() { r.below(64) as usize } else { 0 };
    let mut p = vec![0u8; hl + payload + pad];
    r.fill(&mut p);
    // Too long for the 16-bit lengths: refused, nothing claimed.
    let ip_total = payload + UDP_HDR + if o.v4() { IPV4_HDR } else { 0 };
    if ip_total > 0xffff {
        assert_eq!(o.write(&mut p, payload), None);
        return;
    }
    assert_eq!(o.write(&mut p[..hl - 1], payload), None);
    o.write(&mut p, payload).unwrap();
    let info = parse(&p).unwrap();
    let v4 = o.v4();
    assert_eq!(info.v6, !v4);
    assert_eq!(info.ip_len, if v4 { IPV4_HDR } else { IPV6_HDR });
    assert_eq!(info.ip_len + UDP_HDR, hl);
    assert_eq!(info.total, hl + payload);
    assert_eq!((info.sgid, info.dgid), (o.sgid, o.dgid));
    assert_eq!(info.hop_limit, o.hop_limit);
    assert_eq!(info.traffic_class, o.traffic_class);
    assert_eq!(
        info.flow_label,
        if v4 { 0 } else { o.flow_label & 0xf_ffff }
    );
    assert_eq!(info.sport, o.sport);
    if v4 {
        // The header checksum verifies: the one's complement sum is all ones.
        let mut sum = 0u32;
        for c in p[..IPV4_HDR].chunks(2) {
            sum += u32::from(u16::from_be_bytes([c[0], c[1]]));
        }
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        assert_eq!(sum, 0xffff);
    }
    // Cut anywhere before its end, the packet is short.
    for _ in 0..4 {
        let cut = r.below((hl + payload) as u64) as usize;
        assert_eq!(parse(&p[..cut]), Err(PktError::Short), "cut at {cut}");
    }
    // Fragments, other protocols and ports are refused.
    let mut q = p.clone();
    if v4 {
        q[6] |= 0x20; // more fragments
        assert_eq!(parse(&q), Err(PktError::Fragment));
        q = p.clone();
        q[9] = 6;
    } else {
        q[6] = 6;
    }
    assert_eq!(parse(&q), Err(PktError::BadIp));
    let mut q = p.clone();
    let dport = info.ip_len + 2;
    q[dport..dport + 2].copy_from_slice(&(ROCE_V2_PORT + 1).to_be_bytes());
    assert_eq!(parse(&q), Err(PktError::BadUdp));
}

/// Arbitrary bytes, mostly with a plausible version, protocol and port:
/// parsing never panics and what it accepts fits the buffer.
fn hostile(r: &mut Rng) {
    let len = match r.below(16) {
        0..=4 => r.below(64) as usize,
        5..=13 => r.below(300) as usize,
        14 => r.below(4200) as usize,
        _ => 0xffff - 64 + r.below(128) as usize,
    };
    let mut p = vec![0u8; len];
    r.fill(&mut p);
    let v6 = r.bool();
    if len > 0 && r.chance(7, 8) {
        p[0] = if v6 { 0x60 | (p[0] & 0x0f) } else { 0x45 };
    }
    let (proto, plen_at) = if v6 { (6, 4) } else { (9, 2) };
    if len > proto && r.chance(7, 8) {
        p[proto] = 17;
        if !v6 {
            p[6] &= 0xc0;
            p[7] = 0;
        }
    }
    let ip_len = if v6 { IPV6_HDR } else { IPV4_HDR };
    if len >= ip_len + UDP_HDR && r.chance(3, 4) {
        p[ip_len + 2..ip_len + 4].copy_from_slice(&ROCE_V2_PORT.to_be_bytes());
        // Lengths that agree, mostly with the buffer too.
        let udp = (len - ip_len).min(0xffff - IPV4_HDR) - r.below(3) as usize;
        let udp = udp.max(r.below(UDP_HDR as u64 + 2) as usize);
        let ip = if v6 { udp } else { udp + IPV4_HDR };
        p[plen_at..plen_at + 2].copy_from_slice(&(ip as u16).to_be_bytes());
        if r.chance(7, 8) {
            p[ip_len + 4..ip_len + 6].copy_from_slice(&(udp as u16).to_be_bytes());
        }
    }
    if let Ok(info) = parse(&p) {
        assert!(info.total <= p.len(), "total {} of {}", info.total, p.len());
        assert_eq!(info.ip_len, if info.v6 { IPV6_HDR } else { IPV4_HDR });
        assert!(info.ip_len + UDP_HDR <= info.total);
        assert_eq!(info.v6, p[0] >> 4 == 6);
        let u = &p[info.ip_len..info.ip_len + UDP_HDR];
        assert_eq!(u16::from_be_bytes([u[2], u[3]]), ROCE_V2_PORT);
        assert_eq!(
            usize::from(u16::from_be_bytes([u[4], u[5]])),
            info.total - info.ip_len
        );
        let _udp_payload = &p[info.ip_len + UDP_HDR..info.total];
    }
    assert_eq!(icrc(&p), icrc_with::<Bytewise>(&p));
}

/// The ICRC of a built packet ignores its TOS/traffic class, TTL/hop
/// limit, flow label, checksums and FECN/BECN byte; any other single byte
/// changed changes it.
fn icrc_masks(r: &mut Rng) {
    let o = out(r);
    let payload = 12 + r.below(300) as usize;
    let hl = o.hdr_len();
    let mut p = vec![0u8; hl + payload];
    r.fill(&mut p);
    o.write(&mut p, payload).unwrap();
    let base = icrc(&p).unwrap();
    assert_eq!(icrc_with::<Bytewise>(&p), Ok(base));
    let masked: &[usize] = if o.v4() {
        &[1, 8, 10, 11, IPV4_HDR + 6, IPV4_HDR + 7]
    } else {
        &[1, 2, 3, 7, IPV6_HDR + 6, IPV6_HDR + 7]
    };
    let resv = hl + BTH_RESV8A;
    let mut q = p.clone();
    for &i in masked.iter().chain([&resv]) {
        q[i] = r.u8();
    }
    if !o.v4() {
        q[0] = 0x60 | (r.u8() & 0x0f);
    }
    assert_eq!(icrc(&q), Ok(base));
    // Any other byte (the version nibble aside) is covered.
    let i = loop {
        let i = r.below(p.len() as u64) as usize;
        if i != 0 && i != resv && !masked.contains(&i) {
            break i;
        }
    };
    let mut q = p.clone();
    q[i] ^= 1 + r.below(255) as u8;
    assert_ne!(icrc(&q), Ok(base), "byte {i}");
    assert_eq!(icrc(&p[..hl + BTH_RESV8A]), Err(IcrcError::Short));
}

/// Slice-by-8 against the bytewise CRC-32: any data at any alignment, from
/// any running CRC, in one update or split in two.
fn crc_engines(r: &mut Rng) {
    let len = match r.below(8) {
        0 => r.below(16) as usize,
        1..=6 => r.below(300) as usize,
        _ => r.below(4200) as usize,
    };
    let off = r.below(8) as usize;
    let mut d = vec![0u8; off + len];
    r.fill(&mut d);
    let d = &d[off..];
    let seed = if r.bool() { !0 } else { r.u32() };
    let want = Bytewise::crc32_le(seed, d);
    assert_eq!(Slice8::crc32_le(seed, d), want, "len {len} offset {off}");
    let cut = r.below(len as u64 + 1) as usize;
    let split = Slice8::crc32_le(Slice8::crc32_le(seed, &d[..cut]), &d[cut..]);
    assert_eq!(split, want, "len {len} offset {off} cut {cut}");
}
