// SPDX-License-Identifier: GPL-2.0

//! The RoCEv2 invariant CRC (IB spec annex A17): CRC-32 (the Ethernet
//! polynomial, reflected, initial value and final complement all ones)
//! over 64 bits of ones standing in for the LRH, then the IP and UDP
//! headers and the transport headers and payload, with the fields that may
//! change in flight replaced by ones: IPv4 TOS, TTL and checksum, IPv6
//! traffic class, flow label and hop limit, the UDP checksum, and the BTH
//! byte that holds FECN, BECN and the reserved bits. It is sent
//! little-endian after the payload.

const fn make_table() -> [u32; 256] {
    let mut t = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 {
                0xedb8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
            k += 1;
        }
        t[i] = c;
        i += 1;
    }
    t
}

static TABLE: [u32; 256] = make_table();

/// A running CRC-32 (without the final complement).
#[derive(Clone, Copy, Debug)]
pub struct Crc32(u32);

impl Default for Crc32 {
    fn default() -> Self {
        Self::new()
    }
}

impl Crc32 {
    /// A CRC over nothing.
    pub const fn new() -> Self {
        Self(0xffff_ffff)
    }

    /// Adds `data`.
    pub fn update(&mut self, data: &[u8]) {
        let mut c = self.0;
        for &b in data {
            c = TABLE[((c ^ u32::from(b)) & 0xff) as usize] ^ (c >> 8);
        }
        self.0 = c;
    }

    /// The CRC of everything added.
    pub const fn finish(&self) -> u32 {
        !self.0
    }
}

/// Size of the IPv4 header rrxe sends and accepts (no options).
pub const IPV4_HDR: usize = 20;
/// Size of the IPv6 header.
pub const IPV6_HDR: usize = 40;
/// Size of the UDP header.
pub const UDP_HDR: usize = 8;
/// Offset of the FECN/BECN/reserved byte in the BTH.
pub const BTH_RESV8A: usize = 4;

/// Why an ICRC cannot be computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IcrcError {
    /// Shorter than its headers.
    Short,
    /// Not IPv4 without options or IPv6.
    BadIp,
}

/// The ICRC of a packet that starts at its IP header and ends before its
/// ICRC (`ip.len()` covers IP, UDP, transport headers and payload).
pub fn icrc(ip: &[u8]) -> Result<u32, IcrcError> {
    let version = ip.first().ok_or(IcrcError::Short)? >> 4;
    let ip_len = match version {
        4 if ip[0] & 0x0f == 5 => IPV4_HDR,
        6 => IPV6_HDR,
        _ => return Err(IcrcError::BadIp),
    };
    if ip.len() < ip_len + UDP_HDR + BTH_RESV8A + 1 {
        return Err(IcrcError::Short);
    }
    let mut c = Crc32::new();
    c.update(&[0xff; 8]);
    let mut h = [0u8; IPV6_HDR];
    h[..ip_len].copy_from_slice(&ip[..ip_len]);
    if version == 4 {
        h[1] = 0xff; // TOS
        h[8] = 0xff; // TTL
        h[10] = 0xff; // header checksum
        h[11] = 0xff;
    } else {
        h[0] |= 0x0f; // traffic class (low nibble of byte 0) ...
        h[1] = 0xff; // ... and flow label
        h[2] = 0xff;
        h[3] = 0xff;
        h[7] = 0xff; // hop limit
    }
    c.update(&h[..ip_len]);
    let mut u = [0u8; UDP_HDR];
    u.copy_from_slice(&ip[ip_len..ip_len + UDP_HDR]);
    u[6] = 0xff; // checksum
    u[7] = 0xff;
    c.update(&u);
    let bth = ip_len + UDP_HDR;
    c.update(&ip[bth..bth + BTH_RESV8A]);
    c.update(&[0xff]);
    c.update(&ip[bth + BTH_RESV8A + 1..]);
    Ok(c.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32_check_value() {
        // The CRC-32 check value of "123456789".
        let mut c = Crc32::new();
        c.update(b"123456789");
        assert_eq!(c.finish(), 0xcbf4_3926);
        let mut e = Crc32::new();
        e.update(b"");
        assert_eq!(e.finish(), 0);
    }

    #[test]
    fn rejects_short_and_odd_ip() {
        assert_eq!(icrc(&[]), Err(IcrcError::Short));
        assert_eq!(icrc(&[0x45; 30]), Err(IcrcError::Short));
        assert_eq!(icrc(&[0x46; 80]), Err(IcrcError::BadIp));
        assert_eq!(icrc(&[0x55; 80]), Err(IcrcError::BadIp));
    }

    #[test]
    fn masked_fields_do_not_matter() {
        let mut p = [0u8; 20 + 8 + 12 + 16];
        p[0] = 0x45;
        for (i, b) in p.iter_mut().enumerate().skip(1) {
            *b = i as u8;
        }
        let base = icrc(&p).unwrap();
        let mut q = p;
        q[1] ^= 0x5a; // TOS
        q[8] ^= 1; // TTL
        q[10] ^= 0xff; // IP checksum
        q[26] ^= 0x11; // UDP checksum
        q[28 + 4] ^= 0xc0; // FECN/BECN
        assert_eq!(icrc(&q).unwrap(), base);
        let mut r = p;
        r[28 + 5] ^= 1; // destination QP
        assert_ne!(icrc(&r).unwrap(), base);
    }
}
