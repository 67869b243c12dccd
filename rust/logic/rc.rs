// SPDX-License-Identifier: GPL-2.0

//! The reliable connected transport's rules (IB spec chapter 9.7): its
//! opcodes, PSN ordering, AETH syndromes and the timers.

use super::{access, uc::Pos};

/// The requester stops sending with this many PSNs unacknowledged.
pub const MAX_UNACKED: u32 = 128;
/// It asks for an acknowledgement at least this often (and at the end of
/// every message). Frequent ACKs keep a slow responder's progress visible
/// to the retransmit timer, which is restarted by every ACK.
pub const ACK_EVERY: u32 = 16;

/// RC opcodes (the low five bits; the service bits are 0).
pub mod op {
    /// SEND first.
    pub const SEND_FIRST: u8 = 0x00;
    /// SEND middle.
    pub const SEND_MIDDLE: u8 = 0x01;
    /// SEND last.
    pub const SEND_LAST: u8 = 0x02;
    /// SEND last with immediate.
    pub const SEND_LAST_IMM: u8 = 0x03;
    /// SEND only.
    pub const SEND_ONLY: u8 = 0x04;
    /// SEND only with immediate.
    pub const SEND_ONLY_IMM: u8 = 0x05;
    /// RDMA WRITE first.
    pub const WRITE_FIRST: u8 = 0x06;
    /// RDMA WRITE middle.
    pub const WRITE_MIDDLE: u8 = 0x07;
    /// RDMA WRITE last.
    pub const WRITE_LAST: u8 = 0x08;
    /// RDMA WRITE last with immediate.
    pub const WRITE_LAST_IMM: u8 = 0x09;
    /// RDMA WRITE only.
    pub const WRITE_ONLY: u8 = 0x0a;
    /// RDMA WRITE only with immediate.
    pub const WRITE_ONLY_IMM: u8 = 0x0b;
    /// RDMA READ request.
    pub const READ_REQUEST: u8 = 0x0c;
    /// RDMA READ response first.
    pub const READ_RESP_FIRST: u8 = 0x0d;
    /// RDMA READ response middle.
    pub const READ_RESP_MIDDLE: u8 = 0x0e;
    /// RDMA READ response last.
    pub const READ_RESP_LAST: u8 = 0x0f;
    /// RDMA READ response only.
    pub const READ_RESP_ONLY: u8 = 0x10;
    /// Acknowledge.
    pub const ACK: u8 = 0x11;
    /// Atomic acknowledge.
    pub const ATOMIC_ACK: u8 = 0x12;
    /// Compare and swap.
    pub const CMP_SWAP: u8 = 0x13;
    /// Fetch and add.
    pub const FETCH_ADD: u8 = 0x14;
    /// SEND last with invalidate.
    pub const SEND_LAST_INV: u8 = 0x16;
    /// SEND only with invalidate.
    pub const SEND_ONLY_INV: u8 = 0x17;
    /// FLUSH.
    pub const FLUSH: u8 = 0x1c;
    /// ATOMIC WRITE.
    pub const ATOMIC_WRITE: u8 = 0x1d;
}

/// What a request packet asks of the responder.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Req {
    /// A SEND packet: with immediate data, with an invalidate key.
    Send {
        /// Immediate data follows.
        imm: bool,
        /// An IETH follows.
        inv: bool,
    },
    /// An RDMA WRITE packet, with immediate data on its last.
    Write {
        /// Immediate data follows.
        imm: bool,
    },
    /// An RDMA READ request.
    Read,
    /// Compare and swap.
    CmpSwap,
    /// Fetch and add.
    FetchAdd,
    /// Atomic write.
    AtomicWrite,
    /// Flush.
    Flush,
}

/// A request opcode's meaning and position in its message; `None` for
/// responses and anything that is not RC.
pub fn classify_req(opcode: u8) -> Option<(Req, Pos)> {
    use op::*;
    if opcode >> 5 != 0 {
        return None;
    }
    let s = |imm, inv| Req::Send { imm, inv };
    let w = |imm| Req::Write { imm };
    Some(match opcode {
        SEND_FIRST => (s(false, false), Pos::First),
        SEND_MIDDLE => (s(false, false), Pos::Middle),
        SEND_LAST => (s(false, false), Pos::Last),
        SEND_LAST_IMM => (s(true, false), Pos::Last),
        SEND_ONLY => (s(false, false), Pos::Only),
        SEND_ONLY_IMM => (s(true, false), Pos::Only),
        SEND_LAST_INV => (s(false, true), Pos::Last),
        SEND_ONLY_INV => (s(false, true), Pos::Only),
        WRITE_FIRST => (w(false), Pos::First),
        WRITE_MIDDLE => (w(false), Pos::Middle),
        WRITE_LAST => (w(false), Pos::Last),
        WRITE_LAST_IMM => (w(true), Pos::Last),
        WRITE_ONLY => (w(false), Pos::Only),
        WRITE_ONLY_IMM => (w(true), Pos::Only),
        READ_REQUEST => (Req::Read, Pos::Only),
        CMP_SWAP => (Req::CmpSwap, Pos::Only),
        FETCH_ADD => (Req::FetchAdd, Pos::Only),
        ATOMIC_WRITE => (Req::AtomicWrite, Pos::Only),
        FLUSH => (Req::Flush, Pos::Only),
        _ => return None,
    })
}

/// Whether an RC opcode is a response (handled by the requester's
/// completer).
pub const fn is_response(opcode: u8) -> bool {
    matches!(opcode, op::READ_RESP_FIRST..=op::ATOMIC_ACK)
}

/// The opcode of packet `pos` of a SEND.
pub fn send_opcode(pos: Pos, imm: bool, inv: bool) -> u8 {
    use op::*;
    match (pos, imm, inv) {
        (Pos::First, ..) => SEND_FIRST,
        (Pos::Middle, ..) => SEND_MIDDLE,
        (Pos::Last, _, true) => SEND_LAST_INV,
        (Pos::Last, true, _) => SEND_LAST_IMM,
        (Pos::Last, ..) => SEND_LAST,
        (Pos::Only, _, true) => SEND_ONLY_INV,
        (Pos::Only, true, _) => SEND_ONLY_IMM,
        (Pos::Only, ..) => SEND_ONLY,
    }
}

/// The opcode of packet `pos` of an RDMA WRITE.
pub fn write_opcode(pos: Pos, imm: bool) -> u8 {
    use op::*;
    match (pos, imm) {
        (Pos::First, _) => WRITE_FIRST,
        (Pos::Middle, _) => WRITE_MIDDLE,
        (Pos::Last, true) => WRITE_LAST_IMM,
        (Pos::Last, false) => WRITE_LAST,
        (Pos::Only, true) => WRITE_ONLY_IMM,
        (Pos::Only, false) => WRITE_ONLY,
    }
}

/// The opcode of read response packet `pos`.
pub fn read_resp_opcode(pos: Pos) -> u8 {
    match pos {
        Pos::First => op::READ_RESP_FIRST,
        Pos::Middle => op::READ_RESP_MIDDLE,
        Pos::Last => op::READ_RESP_LAST,
        Pos::Only => op::READ_RESP_ONLY,
    }
}

/// The position a read response opcode stands for.
pub fn read_resp_pos(opcode: u8) -> Option<Pos> {
    Some(match opcode {
        op::READ_RESP_FIRST => Pos::First,
        op::READ_RESP_MIDDLE => Pos::Middle,
        op::READ_RESP_LAST => Pos::Last,
        op::READ_RESP_ONLY => Pos::Only,
        _ => return None,
    })
}

/// `a - b` for 24-bit PSNs, as a signed distance.
pub fn psn_diff(a: u32, b: u32) -> i32 {
    (a.wrapping_sub(b) << 8) as i32 >> 8
}

/// NAK codes (IB spec table 43).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Nak {
    /// PSN sequence error.
    Seq,
    /// Invalid request.
    InvReq,
    /// Remote access error.
    RemAccess,
    /// Remote operational error.
    RemOp,
    /// Invalid RD request.
    InvRdReq,
}

/// An AETH syndrome.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Syndrome {
    /// Positive acknowledgement (rxe always reports unlimited credits).
    Ack,
    /// Receiver not ready, with the timer code to wait.
    Rnr(u8),
    /// Negative acknowledgement.
    Nak(Nak),
}

impl Syndrome {
    /// From the AETH's syndrome byte; `None` for reserved encodings.
    pub fn parse(b: u8) -> Option<Self> {
        Some(match b >> 5 {
            0 => Self::Ack,
            1 => Self::Rnr(b & 0x1f),
            3 => Self::Nak(match b & 0x1f {
                0 => Nak::Seq,
                1 => Nak::InvReq,
                2 => Nak::RemAccess,
                3 => Nak::RemOp,
                4 => Nak::InvRdReq,
                _ => return None,
            }),
            _ => return None,
        })
    }

    /// The syndrome byte.
    pub fn byte(self) -> u8 {
        match self {
            Self::Ack => 0x1f,
            Self::Rnr(t) => 0x20 | (t & 0x1f),
            Self::Nak(n) => {
                0x60 | match n {
                    Nak::Seq => 0,
                    Nak::InvReq => 1,
                    Nak::RemAccess => 2,
                    Nak::RemOp => 3,
                    Nak::InvRdReq => 4,
                }
            }
        }
    }
}

/// RNR NAK timer values in microseconds, by 5-bit code (IB spec table 45).
const RNR_US: [u32; 32] = [
    655_360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960, 1_280, 1_920, 2_560, 3_840,
    5_120, 7_680, 10_240, 15_360, 20_480, 30_720, 40_960, 61_440, 81_920, 122_880, 163_840,
    245_760, 327_680, 491_520,
];

/// How long an RNR NAK with timer `code` asks the requester to wait.
pub fn rnr_wait_us(code: u8) -> u32 {
    RNR_US[(code & 0x1f) as usize]
}

/// The local ACK timeout for the QP attribute `timeout`: 4.096 µs ·
/// 2^timeout; `None` for 0, which disables it.
pub fn ack_timeout_us(timeout: u8) -> Option<u64> {
    match timeout {
        0 => None,
        t => Some((4096u64 << t.min(31)) / 1000),
    }
}

/// The retransmit timer's backoff.
///
/// A timer that expires while the responder is merely slow (a loaded or
/// debug kernel, many QPs on few CPUs) sends everything again; the
/// responder then has twice the work, answers later still, and every later
/// message times out too. So each expiry doubles the timer, up to four
/// times the QP's local ACK timeout (a bound chosen so that the timeout a
/// QP asked for keeps its order of magnitude), and it comes back down one
/// step after every [`Backoff::CLEAN`]
/// acknowledgements that made progress without an expiry in between.
/// `retry_cnt` still counts every expiry.
///
/// Invariant: `shift <= Backoff::MAX_SHIFT` and `clean < Backoff::CLEAN`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Backoff {
    shift: u8,
    clean: u8,
    expired: bool,
}

impl Backoff {
    /// The timer grows to at most 2^MAX_SHIFT times the local ACK timeout.
    pub const MAX_SHIFT: u8 = 2;
    /// Progress acknowledgements without an expiry that undo one doubling.
    pub const CLEAN: u8 = 32;

    /// The timer for the QP attribute `timeout` now; `None` when disabled.
    pub fn timeout_us(&self, timeout: u8) -> Option<u64> {
        ack_timeout_us(timeout).map(|us| us << self.shift)
    }

    /// The timer expired.
    pub fn on_expiry(&mut self) {
        if self.shift < Self::MAX_SHIFT {
            self.shift += 1;
        }
        self.clean = 0;
        self.expired = true;
    }

    /// An acknowledgement (or response) made progress.
    pub fn on_progress(&mut self) {
        if self.expired {
            // The first progress after an expiry may answer the
            // retransmission: it says nothing about the timer's length.
            self.expired = false;
            self.clean = 0;
            return;
        }
        if self.shift == 0 {
            return;
        }
        self.clean += 1;
        if self.clean >= Self::CLEAN {
            self.shift -= 1;
            self.clean = 0;
        }
    }

    /// The current multiplier's exponent (0 ..= MAX_SHIFT).
    pub fn shift(&self) -> u8 {
        self.shift
    }
}

/// How the responder takes a request's PSN.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PsnCheck {
    /// The expected PSN.
    Expected,
    /// Behind it: a retransmission of something already done.
    Duplicate,
    /// Ahead of it: packets were lost.
    Ahead,
}

/// Compares a request's PSN with the expected one.
pub fn check_psn(psn: u32, epsn: u32) -> PsnCheck {
    match psn_diff(psn, epsn) {
        0 => PsnCheck::Expected,
        d if d < 0 => PsnCheck::Duplicate,
        _ => PsnCheck::Ahead,
    }
}

/// Whether the responder may take packet `pos` given the message in
/// progress (`Some(kind)` of the SEND or WRITE being received): a message
/// in progress must be continued by its own kind, and nothing else may
/// continue one.
pub fn op_sequence_ok(in_progress: Option<bool>, is_send: bool, pos: Pos) -> bool {
    match in_progress {
        Some(send) => send == is_send && !pos.starts(),
        None => pos.starts(),
    }
}

/// The alignment of an atomic's (and an ATOMIC WRITE's) eight bytes.
pub const ATOMIC_ALIGN: u64 = 8;

/// Whether an atomic at `va` whose target lies at `addr` in memory (any
/// address with the same low bits, such as its offset in its page) may go
/// ahead: the VA must be aligned, as the IB spec requires of atomics, and
/// so must the memory, which a zero-based MR or window need not put at an
/// aligned VA (rxe checks the address in memory too).
pub const fn atomic_aligned(va: u64, addr: u64) -> bool {
    (va | addr) & (ATOMIC_ALIGN - 1) == 0
}

/// The selectivity levels of a FLUSH (bits 4 and 5 of its FETH).
pub mod flush_level {
    /// `IB_FLUSH_RANGE`: the range the RETH gives.
    pub const RANGE: u32 = 0;
    /// `IB_FLUSH_MR`: the whole memory region the rkey names.
    pub const MR: u32 = 1;
}

/// The placement types of a FLUSH (its FETH's low four bits).
pub mod flush_type {
    /// `IB_FLUSH_GLOBAL`.
    pub const GLOBAL: u32 = 1;
    /// `IB_FLUSH_PERSISTENT`.
    pub const PERSISTENT: u32 = 2;
}

/// The access a FLUSH of placement types `ty` (the FETH's low four bits)
/// needs, both in the responder QP's access flags and in its rkey; `None`
/// when it names neither type: such a FLUSH asks for nothing, and it would
/// otherwise check an rkey against no right at all (an rkey oracle), so it
/// is an invalid request.
pub const fn flush_access(ty: u32) -> Option<u32> {
    let mut need = 0;
    if ty & flush_type::GLOBAL != 0 {
        need |= access::FLUSH_GLOBAL;
    }
    if ty & flush_type::PERSISTENT != 0 {
        need |= access::FLUSH_PERSISTENT;
    }
    if need == 0 {
        None
    } else {
        Some(need)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_alignment_of_va_and_memory() {
        assert!(atomic_aligned(0, 0));
        assert!(atomic_aligned(0x1008, 0xff8));
        // An aligned VA of a zero-based region at 4 mod 8 in memory.
        assert!(!atomic_aligned(0, 0x004));
        assert!(!atomic_aligned(8, 0x00c));
        // The other way round.
        assert!(!atomic_aligned(4, 0x008));
        assert!(!atomic_aligned(1, 1));
        assert!(!atomic_aligned(0, 7));
    }

    #[test]
    fn flush_needs_the_rights_of_its_types() {
        assert_eq!(flush_access(0), None);
        // Bits beyond the two types ask for nothing either.
        assert_eq!(flush_access(0xc), None);
        assert_eq!(flush_access(1), Some(access::FLUSH_GLOBAL));
        assert_eq!(flush_access(2), Some(access::FLUSH_PERSISTENT));
        assert_eq!(
            flush_access(3),
            Some(access::FLUSH_GLOBAL | access::FLUSH_PERSISTENT)
        );
        assert_eq!(flush_access(0xd), Some(access::FLUSH_GLOBAL));
    }

    #[test]
    fn backoff_doubles_on_expiry_up_to_four_times() {
        let mut b = Backoff::default();
        assert_eq!(b.timeout_us(14), Some(67_108));
        b.on_expiry();
        assert_eq!(b.timeout_us(14), Some(2 * 67_108));
        b.on_expiry();
        assert_eq!(b.timeout_us(14), Some(4 * 67_108));
        b.on_expiry();
        assert_eq!(b.shift(), Backoff::MAX_SHIFT);
        assert_eq!(b.timeout_us(14), Some(4 * 67_108));
        assert_eq!(b.timeout_us(0), None);
    }

    #[test]
    fn backoff_comes_down_after_clean_progress() {
        let mut b = Backoff::default();
        b.on_expiry();
        b.on_expiry();
        // The progress right after an expiry does not count.
        b.on_progress();
        for _ in 0..Backoff::CLEAN - 1 {
            b.on_progress();
        }
        assert_eq!(b.shift(), 2);
        b.on_progress();
        assert_eq!(b.shift(), 1);
        // An expiry in between starts the count again.
        for _ in 0..Backoff::CLEAN - 1 {
            b.on_progress();
        }
        b.on_expiry();
        assert_eq!(b.shift(), 2);
        b.on_progress();
        for _ in 0..2 * Backoff::CLEAN {
            b.on_progress();
        }
        assert_eq!(b.shift(), 0);
        b.on_progress();
        assert_eq!(b, Backoff::default());
    }

    #[test]
    fn psn_arithmetic_wraps_at_24_bits() {
        assert_eq!(psn_diff(5, 3), 2);
        assert_eq!(psn_diff(3, 5), -2);
        assert_eq!(psn_diff(0, 0x00ff_ffff), 1);
        assert_eq!(psn_diff(0x00ff_ffff, 0), -1);
        assert_eq!(psn_diff(0x0080_0000, 0), -0x0080_0000);
        assert_eq!(check_psn(1, 0x00ff_ffff), PsnCheck::Ahead);
        assert_eq!(check_psn(0x00ff_fff0, 2), PsnCheck::Duplicate);
        assert_eq!(check_psn(7, 7), PsnCheck::Expected);
    }

    #[test]
    fn opcodes_round_trip() {
        for pos in [Pos::First, Pos::Middle, Pos::Last, Pos::Only] {
            for imm in [false, true] {
                let (r, p) = classify_req(write_opcode(pos, imm)).unwrap();
                assert_eq!(p, pos);
                assert_eq!(
                    r,
                    Req::Write {
                        imm: imm && pos.ends()
                    }
                );
                for inv in [false, true] {
                    if imm && inv {
                        continue;
                    }
                    let (r, p) = classify_req(send_opcode(pos, imm, inv)).unwrap();
                    assert_eq!(p, pos);
                    assert_eq!(
                        r,
                        Req::Send {
                            imm: imm && pos.ends(),
                            inv: inv && pos.ends()
                        }
                    );
                }
            }
            assert_eq!(read_resp_pos(read_resp_opcode(pos)), Some(pos));
        }
        assert_eq!(classify_req(op::READ_REQUEST), Some((Req::Read, Pos::Only)));
        assert_eq!(classify_req(op::ACK), None);
        assert_eq!(classify_req(0x15), None);
        assert_eq!(classify_req(0x24), None, "UC opcodes are not RC");
        assert!(
            is_response(op::ACK) && is_response(op::READ_RESP_FIRST) && !is_response(op::CMP_SWAP)
        );
    }

    #[test]
    fn syndromes() {
        assert_eq!(Syndrome::parse(0x1f), Some(Syndrome::Ack));
        assert_eq!(Syndrome::parse(0x2c), Some(Syndrome::Rnr(12)));
        assert_eq!(Syndrome::parse(0x60), Some(Syndrome::Nak(Nak::Seq)));
        assert_eq!(Syndrome::parse(0x62), Some(Syndrome::Nak(Nak::RemAccess)));
        assert_eq!(Syndrome::parse(0x65), None);
        assert_eq!(Syndrome::parse(0x40), None);
        for s in [
            Syndrome::Ack,
            Syndrome::Rnr(31),
            Syndrome::Nak(Nak::RemOp),
            Syndrome::Nak(Nak::InvReq),
        ] {
            assert_eq!(Syndrome::parse(s.byte()), Some(s));
        }
    }

    #[test]
    fn timers() {
        assert_eq!(rnr_wait_us(0), 655_360);
        assert_eq!(rnr_wait_us(1), 10);
        assert_eq!(rnr_wait_us(12), 640);
        assert_eq!(rnr_wait_us(31), 491_520);
        assert_eq!(ack_timeout_us(0), None);
        assert_eq!(ack_timeout_us(14), Some(67_108));
        assert_eq!(ack_timeout_us(1), Some(8));
    }

    #[test]
    fn op_sequence() {
        assert!(op_sequence_ok(None, true, Pos::First));
        assert!(op_sequence_ok(None, false, Pos::Only));
        assert!(!op_sequence_ok(None, true, Pos::Middle));
        assert!(op_sequence_ok(Some(true), true, Pos::Last));
        assert!(!op_sequence_ok(Some(true), false, Pos::Last));
        assert!(!op_sequence_ok(Some(false), false, Pos::First));
    }
}
