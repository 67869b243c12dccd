// SPDX-License-Identifier: GPL-2.0

//! The unreliable connected transport's packet sequencing (IB spec 9.7.5
//! and 9.8): which opcode each packet of a message carries, and the
//! responder's rule of dropping everything up to the next FIRST or ONLY
//! packet after a lost packet or an opcode out of sequence.

/// The kind of message a UC packet belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// SEND, consuming a receive WQE.
    Send,
    /// RDMA WRITE, into the memory its RETH names.
    Write,
}

/// Where a packet sits in its message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pos {
    /// The first of several.
    First,
    /// Neither first nor last.
    Middle,
    /// The last of several.
    Last,
    /// The whole message.
    Only,
}

impl Pos {
    /// Opens a message.
    pub fn starts(self) -> bool {
        matches!(self, Pos::First | Pos::Only)
    }

    /// Ends a message.
    pub fn ends(self) -> bool {
        matches!(self, Pos::Last | Pos::Only)
    }

    /// The position of packet `i` of `n`.
    pub fn of(i: u32, n: u32) -> Self {
        match (i == 0, i + 1 >= n) {
            (true, true) => Pos::Only,
            (true, false) => Pos::First,
            (false, true) => Pos::Last,
            (false, false) => Pos::Middle,
        }
    }
}

/// A UC opcode's meaning: kind, position and whether immediate data
/// follows. `None` for anything that is not a UC opcode.
pub fn classify(opcode: u8) -> Option<(Kind, Pos, bool)> {
    if opcode >> 5 != 1 {
        return None;
    }
    Some(match opcode & 0x1f {
        0x00 => (Kind::Send, Pos::First, false),
        0x01 => (Kind::Send, Pos::Middle, false),
        0x02 => (Kind::Send, Pos::Last, false),
        0x03 => (Kind::Send, Pos::Last, true),
        0x04 => (Kind::Send, Pos::Only, false),
        0x05 => (Kind::Send, Pos::Only, true),
        0x06 => (Kind::Write, Pos::First, false),
        0x07 => (Kind::Write, Pos::Middle, false),
        0x08 => (Kind::Write, Pos::Last, false),
        0x09 => (Kind::Write, Pos::Last, true),
        0x0a => (Kind::Write, Pos::Only, false),
        0x0b => (Kind::Write, Pos::Only, true),
        _ => return None,
    })
}

/// The UC opcode of a packet (the inverse of [`classify`]); immediate data
/// rides only on a message's last packet.
pub fn opcode(kind: Kind, pos: Pos, imm: bool) -> u8 {
    let imm = imm && pos.ends();
    let low = match (kind, pos, imm) {
        (Kind::Send, Pos::First, _) => 0x00,
        (Kind::Send, Pos::Middle, _) => 0x01,
        (Kind::Send, Pos::Last, false) => 0x02,
        (Kind::Send, Pos::Last, true) => 0x03,
        (Kind::Send, Pos::Only, false) => 0x04,
        (Kind::Send, Pos::Only, true) => 0x05,
        (Kind::Write, Pos::First, _) => 0x06,
        (Kind::Write, Pos::Middle, _) => 0x07,
        (Kind::Write, Pos::Last, false) => 0x08,
        (Kind::Write, Pos::Last, true) => 0x09,
        (Kind::Write, Pos::Only, false) => 0x0a,
        (Kind::Write, Pos::Only, true) => 0x0b,
    };
    0x20 | low
}

/// Packets a message of `len` bytes takes at an MTU of `mtu` bytes (one
/// for an empty message).
pub fn packets(len: u64, mtu: u32) -> u64 {
    let mtu = u64::from(mtu.max(1));
    len.div_ceil(mtu).max(1)
}

/// Adds to a 24-bit PSN.
pub fn psn_add(psn: u32, n: u32) -> u32 {
    psn.wrapping_add(n) & 0x00ff_ffff
}

/// The responder's sequencing state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RxSeq {
    /// The PSN expected next.
    pub epsn: u32,
    /// The message in progress, if any.
    pub msg: Option<Kind>,
}

/// What to do with an arriving packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Accept it; it opens a new message (any message in progress is
    /// abandoned).
    Start,
    /// Accept it as the next packet of the message in progress.
    Continue,
    /// Drop it; any message in progress is abandoned.
    Drop,
}

impl RxSeq {
    /// Judges a packet and advances the state. A FIRST or ONLY packet is
    /// always taken (whatever its PSN: it resynchronises); a MIDDLE or LAST
    /// one only with the expected PSN, inside a message of its kind.
    pub fn judge(&mut self, psn: u32, kind: Kind, pos: Pos) -> Verdict {
        let v = if pos.starts() {
            Verdict::Start
        } else if psn == self.epsn && self.msg == Some(kind) {
            Verdict::Continue
        } else {
            Verdict::Drop
        };
        match v {
            Verdict::Drop => self.msg = None,
            _ => {
                self.epsn = psn_add(psn, 1);
                self.msg = if pos.ends() { None } else { Some(kind) };
            }
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opcodes_round_trip() {
        for op in 0x20u8..=0x2b {
            let (k, p, i) = classify(op).unwrap();
            assert_eq!(opcode(k, p, i), op);
        }
        assert_eq!(classify(0x2c), None);
        assert_eq!(classify(0x04), None, "RC send only");
        assert_eq!(classify(0x64), None, "UD");
        // Immediate data is only on the last packet.
        assert_eq!(opcode(Kind::Send, Pos::First, true), 0x20);
        assert_eq!(opcode(Kind::Write, Pos::Middle, true), 0x27);
    }

    #[test]
    fn segmentation() {
        assert_eq!(packets(0, 1024), 1);
        assert_eq!(packets(1024, 1024), 1);
        assert_eq!(packets(1025, 1024), 2);
        assert_eq!(packets(1 << 31, 256), 1 << 23);
        assert_eq!(Pos::of(0, 1), Pos::Only);
        assert_eq!(Pos::of(0, 3), Pos::First);
        assert_eq!(Pos::of(1, 3), Pos::Middle);
        assert_eq!(Pos::of(2, 3), Pos::Last);
        assert_eq!(psn_add(0xff_ffff, 1), 0);
        assert_eq!(psn_add(5, 3), 8);
    }

    #[test]
    fn drops_to_the_next_first() {
        let mut s = RxSeq {
            epsn: 10,
            msg: None,
        };
        assert_eq!(s.judge(10, Kind::Send, Pos::First), Verdict::Start);
        assert_eq!(s.judge(11, Kind::Send, Pos::Middle), Verdict::Continue);
        // Packet 12 is lost: 13 and everything after it up to a FIRST go.
        assert_eq!(s.judge(13, Kind::Send, Pos::Middle), Verdict::Drop);
        assert_eq!(s.msg, None);
        assert_eq!(s.judge(14, Kind::Send, Pos::Last), Verdict::Drop);
        assert_eq!(s.judge(15, Kind::Write, Pos::Only), Verdict::Start);
        assert_eq!((s.epsn, s.msg), (16, None));
        // A LAST outside a message, even with the right PSN.
        assert_eq!(s.judge(16, Kind::Send, Pos::Last), Verdict::Drop);
        // A FIRST inside a message abandons the old one.
        assert_eq!(s.judge(17, Kind::Write, Pos::First), Verdict::Start);
        assert_eq!(s.judge(18, Kind::Send, Pos::First), Verdict::Start);
        // A MIDDLE of the wrong kind.
        assert_eq!(s.judge(19, Kind::Write, Pos::Middle), Verdict::Drop);
        // PSNs wrap.
        let mut w = RxSeq {
            epsn: 0xff_ffff,
            msg: None,
        };
        assert_eq!(w.judge(0xff_ffff, Kind::Send, Pos::First), Verdict::Start);
        assert_eq!(w.judge(0, Kind::Send, Pos::Last), Verdict::Continue);
    }
}
