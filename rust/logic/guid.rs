// SPDX-License-Identifier: GPL-2.0

//! EUI-64 identifiers derived from Ethernet addresses.

/// Builds the modified EUI-64 of a 48-bit MAC (RFC 4291, appendix A).
///
/// `ff:fe` goes in the middle and the universal/local bit is inverted. This is
/// what rxe uses for the node GUID, the port GUID and the system image GUID,
/// and what the link-local RoCE GID carries as its interface identifier. The
/// result is in network byte order, ready to store in a `__be64`.
pub fn eui64_from_mac(mac: &[u8; 6]) -> [u8; 8] {
    [
        mac[0] ^ 0x02,
        mac[1],
        mac[2],
        0xff,
        0xfe,
        mac[3],
        mac[4],
        mac[5],
    ]
}

/// Picks the address a device's identifiers derive from.
///
/// A netdev may have no hardware address (`addr_len == 0`, for example a TUN
/// device in L3 mode). rxe then uses a random one; so do we, with the random
/// bytes given by the caller, marked locally administered and unicast.
pub fn device_mac(dev_addr: &[u8], random: [u8; 6]) -> [u8; 6] {
    if dev_addr.len() >= 6 {
        let mut mac = [0u8; 6];
        mac.copy_from_slice(&dev_addr[..6]);
        mac
    } else {
        let mut mac = random;
        mac[0] = (mac[0] & 0xfe) | 0x02;
        mac
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eui64_flips_ul_bit_and_inserts_fffe() {
        let mac = [0x52, 0x54, 0x00, 0x12, 0x34, 0x56];
        assert_eq!(
            eui64_from_mac(&mac),
            [0x50, 0x54, 0x00, 0xff, 0xfe, 0x12, 0x34, 0x56]
        );
        // A locally administered address gets the bit cleared.
        let mac = [0x02, 0, 0, 0, 0, 1];
        assert_eq!(eui64_from_mac(&mac), [0, 0, 0, 0xff, 0xfe, 0, 0, 1]);
    }

    #[test]
    fn short_addresses_use_random_local_unicast() {
        let m = device_mac(&[], [0xff; 6]);
        assert_eq!(m[0] & 0x01, 0, "must be unicast");
        assert_eq!(m[0] & 0x02, 0x02, "must be locally administered");
        assert_eq!(&m[1..], &[0xff; 5]);
        let real = [1, 2, 3, 4, 5, 6, 7, 8];
        assert_eq!(device_mac(&real, [0; 6]), [1, 2, 3, 4, 5, 6]);
    }
}
