// SPDX-License-Identifier: GPL-2.0

//! A model RC responder for the window simulation, answering as rxe's
//! does: the expected PSN is taken (ACKed when asked, read responses,
//! atomic ACKs), a duplicate is re-ACKed or its response replayed, a gap
//! gets one sequence NAK; a SEND may meet an RNR NAK, and a WQE marked bad
//! a NAK at its request's PSN.

use crate::rng::Rng;
use rrxe_logic::rc::{check_psn, op, Nak, PsnCheck, Syndrome};
use rrxe_logic::uc::{psn_add, Pos};
use rrxe_logic::wqe::Opcode;

/// A request packet as the model link carries it.
#[derive(Clone, Copy, Debug)]
pub struct Req {
    /// The WQE's number (its wr_id).
    pub wr: u64,
    /// PSN.
    pub psn: u32,
    /// The WQE's operation.
    pub op: Opcode,
    /// Position in its message.
    pub pos: Pos,
    /// AckReq.
    pub ack_req: bool,
    /// The message length (a READ's response length).
    pub len: u64,
    /// The WQE's PSN count.
    pub npkts: u32,
}

/// A response packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Resp {
    /// Opcode.
    pub opcode: u8,
    /// PSN.
    pub psn: u32,
    /// AETH syndrome (`Ack` for a read response middle, which has none).
    pub syn: Syndrome,
    /// Payload bytes.
    pub n: u64,
}

impl Resp {
    /// An ACK or NAK.
    pub fn ack(psn: u32, syn: Syndrome) -> Self {
        Self {
            opcode: op::ACK,
            psn,
            syn,
            n: 0,
        }
    }
}

/// The responder's state.
pub struct Peer {
    /// The PSN expected next.
    pub epsn: u32,
    /// A sequence NAK went out for the current gap.
    nak_sent: bool,
    /// Bytes per packet.
    seg: u64,
    /// An RNR NAK meets a SEND's first packet with this chance in 16.
    pub rnr: u64,
}

impl Peer {
    /// A responder expecting `epsn`, with packets of `seg` bytes.
    pub fn new(epsn: u32, seg: u32, rnr: u64) -> Self {
        Self {
            epsn,
            nak_sent: false,
            seg: u64::from(seg),
            rnr,
        }
    }

    /// Takes request `p` (of a WQE marked `bad` or not) and queues what it
    /// answers on `out`.
    pub fn receive(&mut self, r: &mut Rng, p: Req, bad: Option<Nak>, out: &mut Vec<Resp>) {
        let sendwrite = matches!(
            p.op,
            Opcode::Send
                | Opcode::SendImm
                | Opcode::SendInv
                | Opcode::RdmaWrite
                | Opcode::RdmaWriteImm
        );
        match check_psn(p.psn, self.epsn) {
            PsnCheck::Expected => {
                self.nak_sent = false;
                if let (Some(n), true) = (bad, p.pos.starts()) {
                    out.push(Resp::ack(p.psn, Syndrome::Nak(n)));
                    return;
                }
                let send = matches!(p.op, Opcode::Send | Opcode::SendImm | Opcode::SendInv);
                if send && p.pos.starts() && r.chance(self.rnr, 16) {
                    out.push(Resp::ack(p.psn, Syndrome::Rnr(r.u8() & 0x1f)));
                    return;
                }
                if sendwrite {
                    self.epsn = psn_add(self.epsn, 1);
                    if p.ack_req {
                        out.push(Resp::ack(p.psn, Syndrome::Ack));
                    }
                } else {
                    self.respond(p, out);
                    self.epsn = psn_add(self.epsn, p.npkts.max(1));
                }
            }
            PsnCheck::Duplicate => {
                if sendwrite {
                    out.push(Resp::ack(psn_add(self.epsn, 0x00ff_ffff), Syndrome::Ack));
                } else {
                    self.respond(p, out);
                }
            }
            PsnCheck::Ahead => {
                if !self.nak_sent {
                    self.nak_sent = true;
                    out.push(Resp::ack(self.epsn, Syndrome::Nak(Nak::Seq)));
                }
            }
        }
    }

    /// The responses to a READ, atomic, ATOMIC WRITE or FLUSH.
    fn respond(&self, p: Req, out: &mut Vec<Resp>) {
        let resp = |opcode, psn, n| Resp {
            opcode,
            psn,
            syn: Syndrome::Ack,
            n,
        };
        match p.op {
            Opcode::RdmaRead => {
                let mut left = p.len;
                for i in 0..p.npkts {
                    let pos = Pos::of(i, p.npkts);
                    let n = if pos.ends() { left } else { self.seg };
                    left -= n;
                    let opcode = rrxe_logic::rc::read_resp_opcode(pos);
                    out.push(resp(opcode, psn_add(p.psn, i), n));
                }
            }
            Opcode::CmpSwap | Opcode::FetchAdd => out.push(resp(op::ATOMIC_ACK, p.psn, 0)),
            _ => out.push(resp(op::READ_RESP_ONLY, p.psn, 0)),
        }
    }
}
