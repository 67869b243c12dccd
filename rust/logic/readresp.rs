// SPDX-License-Identifier: GPL-2.0

//! A read response on its way out: the RC responder's answer to an RDMA
//! READ, sent a few packets at a time. Which PSNs it has, and whether a
//! duplicate READ asks for exactly the rest of it.

use super::rc::psn_diff;
use super::uc::{packets, psn_add};

/// Read response packets from `psn` on: `len` bytes at `va` of `rkey`,
/// `seg` bytes per packet, with `msn`; the first `sent` are sent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReadResp {
    /// The PSN of its first packet.
    pub psn: u32,
    /// The address of its first byte.
    pub va: u64,
    /// The memory key it reads through.
    pub rkey: u32,
    /// Bytes in all.
    pub len: u32,
    /// The MSN its AETHs carry.
    pub msn: u32,
    /// Payload bytes per packet (the path MTU).
    pub seg: usize,
    /// Packets sent so far.
    pub sent: u32,
    /// The protection domain its key is looked up in, as the caller
    /// numbers domains (an XRC target QP's reads each name theirs).
    pub domain: u64,
}

impl ReadResp {
    /// Its packets (one for a zero-length read).
    pub fn packets(&self) -> u32 {
        packets(u64::from(self.len), self.seg as u32) as u32
    }

    /// Whether it has a packet at `psn`.
    pub fn covers(&self, psn: u32) -> bool {
        let k = psn_diff(psn, self.psn);
        k >= 0 && (k as u32) < self.packets()
    }

    /// Whether `r`, at one of its PSNs, asks for exactly the rest of it
    /// from there: the same key and packet size, the same end, its start
    /// as many packets in.
    pub fn rest_is(&self, r: &ReadResp) -> bool {
        let k = psn_diff(r.psn, self.psn);
        if k < 0 {
            return false;
        }
        let skip = k as u64 * self.seg as u64;
        r.rkey == self.rkey
            && r.domain == self.domain
            && r.seg == self.seg
            && u64::from(self.len) > skip
            && self.va.checked_add(skip) == Some(r.va)
            && u64::from(self.len) - skip == u64::from(r.len)
    }

    /// How many packets from the next to send on are middle packets (not
    /// its first, which carries an AETH, nor its last): all the same size,
    /// without extension headers.
    pub fn middles_next(&self) -> u32 {
        let n = self.packets();
        if self.sent == 0 || self.sent + 1 >= n {
            0
        } else {
            n - 1 - self.sent
        }
    }

    /// Whether the duplicate READ answered by `r` asks again for a packet
    /// it has sent, and for exactly the rest of it from there: then it
    /// goes on as `r`.
    pub fn resumes_as(&self, r: &ReadResp) -> bool {
        psn_diff(r.psn, psn_add(self.psn, self.sent)) < 0 && self.rest_is(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn middles_are_between_first_and_last() {
        // Three packets: only the second is a middle one.
        assert_eq!(q(0).middles_next(), 0);
        assert_eq!(q(1).middles_next(), 1);
        assert_eq!(q(2).middles_next(), 0);
        assert_eq!(q(3).middles_next(), 0);
        let mut r = q(0);
        r.len = 10 * 4096;
        assert_eq!(r.middles_next(), 0);
        r.sent = 1;
        assert_eq!(r.middles_next(), 8);
        r.sent = 8;
        assert_eq!(r.middles_next(), 1);
        r.sent = 9;
        assert_eq!(r.middles_next(), 0);
        // One packet, or none: no middle.
        r.len = 0;
        r.sent = 0;
        assert_eq!(r.middles_next(), 0);
    }

    /// 10000 bytes at 0x1000 in packets of 4096: PSNs 100, 101, 102.
    fn q(sent: u32) -> ReadResp {
        ReadResp {
            psn: 100,
            va: 0x1000,
            rkey: 7,
            len: 10000,
            msn: 3,
            seg: 4096,
            sent,
            domain: 1,
        }
    }

    /// The rest of `q` from its packet `k`.
    fn rest(k: u32) -> ReadResp {
        ReadResp {
            psn: 100 + k,
            va: 0x1000 + u64::from(k) * 4096,
            len: 10000 - k * 4096,
            sent: 0,
            ..q(0)
        }
    }

    #[test]
    fn covers_its_psns_only() {
        let r = q(0);
        assert_eq!(r.packets(), 3);
        assert!(!r.covers(99));
        assert!(r.covers(100) && r.covers(101) && r.covers(102));
        assert!(!r.covers(103));
        let empty = ReadResp { len: 0, ..q(0) };
        assert_eq!(empty.packets(), 1);
        assert!(empty.covers(100) && !empty.covers(101));
    }

    #[test]
    fn covers_across_the_psn_wrap() {
        let r = ReadResp {
            psn: 0xff_ffff,
            ..q(0)
        };
        assert!(r.covers(0xff_ffff) && r.covers(0) && r.covers(1));
        assert!(!r.covers(2) && !r.covers(0xff_fffe));
    }

    #[test]
    fn the_exact_rest_from_any_of_its_packets() {
        for k in 0..3 {
            assert!(q(0).rest_is(&rest(k)), "packet {k}");
        }
        // Past its end, or before its start.
        let past = ReadResp {
            psn: 103,
            va: 0x1000 + 3 * 4096,
            len: 1,
            ..q(0)
        };
        assert!(!q(0).rest_is(&past));
        let before = ReadResp {
            psn: 99,
            va: 0x1000 - 4096,
            len: 10000 + 4096,
            ..q(0)
        };
        assert!(!q(0).rest_is(&before));
    }

    #[test]
    fn anything_else_is_not_the_rest() {
        let r = rest(1);
        let other = [
            ReadResp { rkey: 8, ..r },
            // The same key through another PD (an XRC SRQ's).
            ReadResp { domain: 2, ..r },
            ReadResp { seg: 1024, ..r },
            ReadResp { va: r.va + 1, ..r },
            ReadResp {
                len: r.len - 1,
                ..r
            },
            ReadResp {
                len: r.len + 1,
                ..r
            },
            // The start of the whole read, at the PSN of its second packet.
            ReadResp { psn: 101, ..q(0) },
        ];
        for o in other {
            assert!(!q(0).rest_is(&o), "{o:?}");
        }
    }

    #[test]
    fn no_rest_when_the_address_wraps() {
        let q = ReadResp {
            va: u64::MAX - 4095,
            ..q(0)
        };
        let r = ReadResp {
            psn: 101,
            va: 0,
            len: 10000 - 4096,
            ..q
        };
        assert!(!q.rest_is(&r));
    }

    #[test]
    fn resumes_only_from_a_packet_already_sent() {
        // Two packets sent: a duplicate at either restarts it.
        assert!(q(2).resumes_as(&rest(0)));
        assert!(q(2).resumes_as(&rest(1)));
        // The third is not sent yet: it answers that duplicate as it is.
        assert!(!q(2).resumes_as(&rest(2)));
        // Nothing sent: nothing to resume.
        assert!(!q(0).resumes_as(&rest(0)));
        // Sent, but not asked for exactly the rest.
        assert!(!q(2).resumes_as(&ReadResp {
            len: 100,
            ..rest(1)
        }));
    }
}
