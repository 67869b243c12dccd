// SPDX-License-Identifier: GPL-2.0

//! The performance management agent (IB spec 16.1): the answers a device
//! gives to Get(ClassPortInfo), Get(PortCounters) and
//! Get(PortCountersExtended) MADs. ib_core asks through `process_mad` to
//! fill `/sys/class/infiniband/DEV/ports/N/counters/`, and MADs of the
//! performance class that arrive on QP1 get the same answers.

/// A MAD's size, header included.
pub const MAD_SIZE: usize = 256;
/// Where the MAD's data starts (after the common header).
const DATA: usize = 24;
/// Where a PMA attribute starts: after the data's 40 reserved bytes.
const ATTR: usize = DATA + 40;

const CLASS_PERF_MGMT: u8 = 0x04;
const METHOD_GET: u8 = 0x01;
const METHOD_SET: u8 = 0x02;
const METHOD_GET_RESP: u8 = 0x81;
const ATTR_CLASS_PORT_INFO: u16 = 0x0001;
const ATTR_PORT_COUNTERS: u16 = 0x0012;
const ATTR_PORT_COUNTERS_EXT: u16 = 0x001d;
/// ClassPortInfo capability: PortCountersExtended has 64-bit data counters.
pub const CAP_EXT_WIDTH: u16 = 1 << 9;
/// MAD status: the method/attribute combination is not supported.
const STATUS_UNSUPPORTED_METHOD_ATTR: u16 = 0x000c;
/// MAD status: the method is not supported.
const STATUS_UNSUPPORTED_METHOD: u16 = 0x0008;

/// A port's counters as the PMA reports them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PortCounters {
    /// Payload bytes sent.
    pub xmit_bytes: u64,
    /// Payload bytes received.
    pub rcv_bytes: u64,
    /// Packets sent.
    pub xmit_packets: u64,
    /// Packets received.
    pub rcv_packets: u64,
    /// Times the link went down.
    pub link_downed: u64,
}

/// What to do with a MAD.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// Not for the PMA: leave it to the MAD layer's other agents.
    NotMine,
    /// `out` holds the reply.
    Reply,
}

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

fn put16(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_be_bytes());
}

fn put64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_be_bytes());
}

/// Answers the MAD `inp` for port `port` with counters `c` into `out`. The
/// reply keeps the request's header (transaction id included) with the
/// GetResp method and a status; counters saturate as the spec asks (16.1.3.5),
/// and data counters are in units of four bytes.
///
/// Only Get and Set are answered (Set with a status saying it is not
/// supported). Any other method, a response above all, is left to the MAD
/// layer, which never answers a response: a device that answered one
/// would answer another device's answer, and two such devices would send
/// each other MADs for as long as they exist.
pub fn answer(inp: &[u8; MAD_SIZE], c: &PortCounters, out: &mut [u8; MAD_SIZE]) -> Answer {
    if inp[1] != CLASS_PERF_MGMT || !matches!(inp[3], METHOD_GET | METHOD_SET) {
        return Answer::NotMine;
    }
    out.fill(0);
    out[..DATA].copy_from_slice(&inp[..DATA]);
    out[3] = METHOD_GET_RESP;
    put16(out, 4, 0);
    if inp[3] != METHOD_GET {
        put16(out, 4, STATUS_UNSUPPORTED_METHOD);
        return Answer::Reply;
    }
    match be16(inp, 16) {
        ATTR_CLASS_PORT_INFO => {
            // BaseVersion 1, ClassVersion 1, then the capability mask.
            out[ATTR] = 1;
            out[ATTR + 1] = 1;
            put16(out, ATTR + 2, CAP_EXT_WIDTH);
        }
        ATTR_PORT_COUNTERS => {
            out[ATTR + 1] = inp[ATTR + 1];
            // LinkDownedCounter is 8 bits wide; the 32-bit data and packet
            // counters (data in four-byte units) follow the error counters.
            out[ATTR + 7] = c.link_downed.min(0xff) as u8;
            let sat32 = |v: u64| v.min(u64::from(u32::MAX)) as u32;
            out[ATTR + 24..ATTR + 28].copy_from_slice(&sat32(c.xmit_bytes >> 2).to_be_bytes());
            out[ATTR + 28..ATTR + 32].copy_from_slice(&sat32(c.rcv_bytes >> 2).to_be_bytes());
            out[ATTR + 32..ATTR + 36].copy_from_slice(&sat32(c.xmit_packets).to_be_bytes());
            out[ATTR + 36..ATTR + 40].copy_from_slice(&sat32(c.rcv_packets).to_be_bytes());
        }
        ATTR_PORT_COUNTERS_EXT => {
            out[ATTR + 1] = inp[ATTR + 1];
            put64(out, ATTR + 8, c.xmit_bytes >> 2);
            put64(out, ATTR + 16, c.rcv_bytes >> 2);
            put64(out, ATTR + 24, c.xmit_packets);
            put64(out, ATTR + 32, c.rcv_packets);
        }
        _ => put16(out, 4, STATUS_UNSUPPORTED_METHOD_ATTR),
    }
    Answer::Reply
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(attr: u16, port: u8) -> [u8; MAD_SIZE] {
        let mut m = [0u8; MAD_SIZE];
        m[0] = 1;
        m[1] = CLASS_PERF_MGMT;
        m[2] = 1;
        m[3] = METHOD_GET;
        m[8..16].copy_from_slice(&0x1122_3344_5566_7788u64.to_be_bytes());
        put16(&mut m, 16, attr);
        m[ATTR + 1] = port;
        m
    }

    const C: PortCounters = PortCounters {
        xmit_bytes: 4000,
        rcv_bytes: 8004,
        xmit_packets: 7,
        rcv_packets: 9,
        link_downed: 300,
    };

    #[test]
    fn other_classes_are_left_alone() {
        let mut m = get(ATTR_PORT_COUNTERS, 1);
        m[1] = 0x07; // the CM class
        let mut out = [0xaau8; MAD_SIZE];
        assert_eq!(answer(&m, &C, &mut out), Answer::NotMine);
        assert!(out.iter().all(|&b| b == 0xaa));
    }

    #[test]
    fn class_port_info_has_extended_width() {
        let mut out = [0u8; MAD_SIZE];
        assert_eq!(
            answer(&get(ATTR_CLASS_PORT_INFO, 0), &C, &mut out),
            Answer::Reply
        );
        assert_eq!(out[3], METHOD_GET_RESP);
        assert_eq!(be16(&out, 4), 0);
        assert_eq!(&out[8..16], &0x1122_3344_5566_7788u64.to_be_bytes());
        assert_eq!(be16(&out, ATTR + 2), CAP_EXT_WIDTH);
    }

    #[test]
    fn extended_counters() {
        let mut out = [0u8; MAD_SIZE];
        assert_eq!(
            answer(&get(ATTR_PORT_COUNTERS_EXT, 1), &C, &mut out),
            Answer::Reply
        );
        assert_eq!(out[ATTR + 1], 1);
        assert_eq!(&out[ATTR + 8..ATTR + 16], &1000u64.to_be_bytes());
        assert_eq!(&out[ATTR + 16..ATTR + 24], &2001u64.to_be_bytes());
        assert_eq!(&out[ATTR + 24..ATTR + 32], &7u64.to_be_bytes());
        assert_eq!(&out[ATTR + 32..ATTR + 40], &9u64.to_be_bytes());
    }

    #[test]
    fn basic_counters_saturate() {
        let big = PortCounters {
            xmit_bytes: u64::MAX,
            ..C
        };
        let mut out = [0u8; MAD_SIZE];
        assert_eq!(
            answer(&get(ATTR_PORT_COUNTERS, 1), &big, &mut out),
            Answer::Reply
        );
        assert_eq!(out[ATTR + 7], 0xff);
        assert_eq!(&out[ATTR + 24..ATTR + 28], &u32::MAX.to_be_bytes());
        assert_eq!(&out[ATTR + 32..ATTR + 36], &7u32.to_be_bytes());
    }

    #[test]
    fn responses_and_other_methods_are_left_alone() {
        // GetResp, another response, Send, Trap, TrapRepress, GetTable.
        for method in [METHOD_GET_RESP, 0x82, 0x80, 0xff, 0x03, 0x05, 0x07, 0x12] {
            let mut m = get(ATTR_PORT_COUNTERS, 1);
            m[3] = method;
            let mut out = [0xaau8; MAD_SIZE];
            assert_eq!(answer(&m, &C, &mut out), Answer::NotMine, "{method:#x}");
            assert!(out.iter().all(|&b| b == 0xaa));
        }
    }

    #[test]
    fn unsupported_method_and_attribute() {
        let mut out = [0u8; MAD_SIZE];
        let mut set = get(ATTR_PORT_COUNTERS, 1);
        set[3] = 0x02;
        assert_eq!(answer(&set, &C, &mut out), Answer::Reply);
        assert_eq!(be16(&out, 4), STATUS_UNSUPPORTED_METHOD);
        assert_eq!(answer(&get(0x0010, 1), &C, &mut out), Answer::Reply);
        assert_eq!(be16(&out, 4), STATUS_UNSUPPORTED_METHOD_ATTR);
    }
}
