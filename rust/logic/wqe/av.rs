// SPDX-License-Identifier: GPL-2.0

//! The address vector older providers embed in a UD send WQE (`struct
//! rxe_av`, used when `ah_num` is 0): parsed from user WQEs, and written
//! into the kernel's own WQEs, whose AHs have no number.

use super::super::wqe_layout::*;

/// The address vector an older provider embeds in a UD WQE (`struct
/// rxe_av`, used when `ah_num` is 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LegacyAv {
    /// Source address as a GID (IPv4-mapped for IPv4).
    pub sgid: [u8; 16],
    /// Destination address as a GID.
    pub dgid: [u8; 16],
    /// IPv6 flow label.
    pub flow_label: u32,
    /// Hop limit.
    pub hop_limit: u8,
    /// Traffic class.
    pub traffic_class: u8,
}

/// Offset of `wr.ud.av` in a send WQE.
const UD_AV: usize = WR + WR_UD_AV;

/// Writes a GID as a `sockaddr_in` (IPv4-mapped) or `sockaddr_in6`.
fn put_sockaddr(b: &mut [u8], off: usize, gid: &[u8; 16], v6: bool) {
    let fam = off + SA_FAMILY;
    if v6 {
        b[fam..fam + 2].copy_from_slice(&AF_INET6.to_ne_bytes());
        b[off + SIN6_ADDR..off + SIN6_ADDR + 16].copy_from_slice(gid);
    } else {
        b[fam..fam + 2].copy_from_slice(&AF_INET.to_ne_bytes());
        b[off + SIN_ADDR..off + SIN_ADDR + 4].copy_from_slice(&gid[12..]);
    }
}

/// Embeds an address vector in a UD send WQE (as older providers did), for
/// kernel work requests, whose AHs have no number: the inverse of
/// [`legacy_av`]. IPv4 when both GIDs are IPv4-mapped.
pub fn encode_legacy_av(slot: &mut [u8], av: &LegacyAv) -> Option<()> {
    let b = slot.get_mut(UD_AV..UD_AV + AV_SIZE)?;
    let v4 = |g: &[u8; 16]| g[..10] == [0; 10] && g[10..12] == [0xff, 0xff];
    let v6 = !(v4(&av.sgid) && v4(&av.dgid));
    b.fill(0);
    b[AV_PORT_NUM] = 1;
    b[AV_NETWORK_TYPE] = if v6 {
        NETWORK_TYPE_IPV6
    } else {
        NETWORK_TYPE_IPV4
    };
    b[AV_DGID..AV_DGID + 16].copy_from_slice(&av.dgid);
    b[AV_FLOW_LABEL..AV_FLOW_LABEL + 4].copy_from_slice(&av.flow_label.to_ne_bytes());
    b[AV_HOP_LIMIT] = av.hop_limit;
    b[AV_TRAFFIC_CLASS] = av.traffic_class;
    put_sockaddr(b, AV_SGID_ADDR, &av.sgid, v6);
    put_sockaddr(b, AV_DGID_ADDR, &av.dgid, v6);
    Some(())
}

/// Reads a `sockaddr_in` or `sockaddr_in6` as a GID.
fn sockaddr_gid(b: &[u8], off: usize, v6: bool) -> Option<[u8; 16]> {
    let fam = off + SA_FAMILY;
    let family = u16::from_ne_bytes([*b.get(fam)?, *b.get(fam + 1)?]);
    let mut g = [0u8; 16];
    match (family, v6) {
        (AF_INET, false) => {
            g[10] = 0xff;
            g[11] = 0xff;
            g[12..].copy_from_slice(b.get(off + SIN_ADDR..off + SIN_ADDR + 4)?);
        }
        (AF_INET6, true) => g.copy_from_slice(b.get(off + SIN6_ADDR..off + SIN6_ADDR + 16)?),
        _ => return None,
    }
    Some(g)
}

/// The embedded address vector of a UD WQE: its network type must be
/// IPv4 (1) or IPv6 (2) and both socket addresses of that family.
pub fn legacy_av(slot: &[u8]) -> Option<LegacyAv> {
    let av = slot.get(UD_AV..UD_AV + AV_SIZE)?;
    let v6 = match av[AV_NETWORK_TYPE] {
        NETWORK_TYPE_IPV4 => false,
        NETWORK_TYPE_IPV6 => true,
        _ => return None,
    };
    let fl = AV_FLOW_LABEL;
    Some(LegacyAv {
        sgid: sockaddr_gid(av, AV_SGID_ADDR, v6)?,
        dgid: sockaddr_gid(av, AV_DGID_ADDR, v6)?,
        flow_label: u32::from_ne_bytes([av[fl], av[fl + 1], av[fl + 2], av[fl + 3]]) & 0xf_ffff,
        hop_limit: av[AV_HOP_LIMIT],
        traffic_class: av[AV_TRAFFIC_CLASS],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn legacy_av_parses_both_families() {
        let mut u = [0u8; 512];
        assert_eq!(legacy_av(&u), None, "network type 0");
        u[UD_AV + 1] = 1;
        assert_eq!(legacy_av(&u), None, "no socket addresses");
        u[UD_AV + 32..UD_AV + 34].copy_from_slice(&2u16.to_ne_bytes());
        u[UD_AV + 36..UD_AV + 40].copy_from_slice(&[10, 0, 0, 1]);
        u[UD_AV + 60..UD_AV + 62].copy_from_slice(&2u16.to_ne_bytes());
        u[UD_AV + 64..UD_AV + 68].copy_from_slice(&[10, 0, 0, 2]);
        u[UD_AV + 29] = 64;
        let a = legacy_av(&u).unwrap();
        assert_eq!(&a.sgid[10..], &[0xff, 0xff, 10, 0, 0, 1]);
        assert_eq!(&a.dgid[12..], &[10, 0, 0, 2]);
        assert_eq!(a.hop_limit, 64);
        // IPv6 type with IPv4 addresses.
        u[UD_AV + 1] = 2;
        assert_eq!(legacy_av(&u), None);
        u[UD_AV + 32..UD_AV + 34].copy_from_slice(&10u16.to_ne_bytes());
        u[UD_AV + 60..UD_AV + 62].copy_from_slice(&10u16.to_ne_bytes());
        u[UD_AV + 40] = 0xfe;
        u[UD_AV + 68] = 0xfd;
        let b = legacy_av(&u).unwrap();
        assert_eq!((b.sgid[0], b.dgid[0]), (0xfe, 0xfd));
        // A truncated slot.
        assert_eq!(legacy_av(&u[..UD_AV + 80]), None);
        // What the kernel embeds reads back.
        for av in [a, b] {
            let mut s = [0u8; 512];
            encode_legacy_av(&mut s, &av).unwrap();
            assert_eq!(legacy_av(&s), Some(av));
        }
    }
}
