// SPDX-License-Identifier: GPL-2.0

//! Path MTU arithmetic for RoCEv2 over Ethernet.

/// The InfiniBand MTU enumeration (`enum ib_mtu`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u32)]
pub enum IbMtu {
    /// 256 bytes.
    Mtu256 = 1,
    /// 512 bytes.
    Mtu512 = 2,
    /// 1024 bytes.
    Mtu1024 = 3,
    /// 2048 bytes.
    Mtu2048 = 4,
    /// 4096 bytes.
    Mtu4096 = 5,
}

impl IbMtu {
    /// The payload size in bytes.
    pub const fn bytes(self) -> u32 {
        128 << (self as u32)
    }

    /// Converts from the C enum value, rejecting anything out of range.
    pub const fn from_raw(v: u32) -> Option<Self> {
        match v {
            1 => Some(Self::Mtu256),
            2 => Some(Self::Mtu512),
            3 => Some(Self::Mtu1024),
            4 => Some(Self::Mtu2048),
            5 => Some(Self::Mtu4096),
            _ => None,
        }
    }
}

/// The payload bytes per packet for a path MTU given as `enum ib_mtu`;
/// 256 for a value out of range.
pub const fn mtu_bytes(raw: u32) -> usize {
    match IbMtu::from_raw(raw) {
        Some(m) => m.bytes() as usize,
        None => 256,
    }
}

/// The worst-case RoCEv2 overhead the core subtracts from a netdev MTU:
/// GRH 40, UDP 8, BTH 12, XRC 4, AtomicETH 28 and ICRC 4 bytes.
pub const ROCE_OVERHEAD: u32 = 40 + 8 + 12 + 4 + 28 + 4;

/// The active IB MTU for a netdev MTU: the largest IB MTU that fits after
/// the RoCEv2 overhead, at least 256 and at most 4096 (as rxe does).
pub const fn active_mtu(netdev_mtu: u32) -> IbMtu {
    let avail = netdev_mtu.saturating_sub(ROCE_OVERHEAD);
    if avail >= 4096 {
        IbMtu::Mtu4096
    } else if avail >= 2048 {
        IbMtu::Mtu2048
    } else if avail >= 1024 {
        IbMtu::Mtu1024
    } else if avail >= 512 {
        IbMtu::Mtu512
    } else {
        IbMtu::Mtu256
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn common_netdev_mtus() {
        assert_eq!(active_mtu(1500), IbMtu::Mtu1024);
        assert_eq!(active_mtu(9000), IbMtu::Mtu4096);
        assert_eq!(active_mtu(65536), IbMtu::Mtu4096);
        assert_eq!(active_mtu(4096 + ROCE_OVERHEAD), IbMtu::Mtu4096);
        assert_eq!(active_mtu(4096 + ROCE_OVERHEAD - 1), IbMtu::Mtu2048);
        assert_eq!(active_mtu(1024 + ROCE_OVERHEAD), IbMtu::Mtu1024);
        assert_eq!(active_mtu(1024 + ROCE_OVERHEAD - 1), IbMtu::Mtu512);
    }

    #[test]
    fn tiny_and_zero_mtus_clamp_to_256() {
        assert_eq!(active_mtu(0), IbMtu::Mtu256);
        assert_eq!(active_mtu(68), IbMtu::Mtu256);
        assert_eq!(active_mtu(u32::MAX), IbMtu::Mtu4096);
    }

    #[test]
    fn enum_round_trip() {
        for v in 1..=5 {
            let m = IbMtu::from_raw(v).unwrap();
            assert_eq!(m as u32, v);
        }
        assert_eq!(IbMtu::from_raw(0), None);
        assert_eq!(IbMtu::from_raw(6), None);
        assert_eq!(IbMtu::Mtu256.bytes(), 256);
        assert_eq!(IbMtu::Mtu4096.bytes(), 4096);
    }

    #[test]
    fn bytes_of_raw_values() {
        assert_eq!(mtu_bytes(1), 256);
        assert_eq!(mtu_bytes(3), 1024);
        assert_eq!(mtu_bytes(5), 4096);
        assert_eq!(mtu_bytes(0), 256);
        assert_eq!(mtu_bytes(6), 256);
    }
}
