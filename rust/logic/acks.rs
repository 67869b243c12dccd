// SPDX-License-Identifier: GPL-2.0

//! How the RC requester's window takes a response (an ACK, NAK, RNR NAK,
//! read response or atomic ACK): what it acknowledges, which WQE it is
//! about, and what the completer still has to do with it.

use super::flights::{nak_status, Flight, Window};
use super::rc::{op, read_resp_pos, Nak, Syndrome};
use super::uc::Pos;
use core::ops::DerefMut;

/// What the completer has left to do with a response the window took.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Nothing: it was ignored, or acknowledging was all it did.
    None,
    /// An RNR NAK about the `k`-th WQE: an RNR retry, then a wait of timer
    /// `code`.
    Rnr {
        /// The WQE, by index from the consumer.
        k: u32,
        /// The RNR timer code.
        code: u8,
    },
    /// A sequence NAK about the `k`-th WQE: a transport retry, resuming
    /// at the NAK's PSN.
    Seq {
        /// The WQE, by index from the consumer.
        k: u32,
    },
    /// Another NAK: the flight in slot `i` has finished with its error.
    Failed {
        /// The flight's slot.
        i: usize,
    },
    /// An atomic ACK for the flight in slot `i`.
    AtomicAck {
        /// The flight's slot.
        i: usize,
    },
    /// A read response packet at position `pos` for the flight in slot
    /// `i`.
    ReadResp {
        /// The flight's slot.
        i: usize,
        /// Its position in the response.
        pos: Pos,
    },
}

/// What taking a response did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Taken {
    /// It acknowledged something outstanding: the retransmit timer and the
    /// retry count restart.
    pub progressed: bool,
    /// What is left to do.
    pub action: Action,
}

impl<S: DerefMut<Target = [Option<Flight>]>> Window<S> {
    /// Takes a response with opcode `opcode`, PSN `psn` and syndrome `syn`
    /// (consumer index `cons`): acknowledges what it covers and says what
    /// else it asks for.
    pub fn take_response(&mut self, cons: u32, opcode: u8, psn: u32, syn: Syndrome) -> Taken {
        // Any acknowledgement at or past the oldest outstanding PSN is
        // progress: it restarts the retransmit timer and the retry count.
        let mut progressed = syn == Syndrome::Ack && self.acks_outstanding(cons, psn);
        if progressed {
            self.acked = Some(psn);
        }
        // Everything wholly before this PSN is acknowledged by it, up to
        // the first WQE that needs a response of its own.
        let plain_ack = opcode == op::ACK && syn == Syndrome::Ack;
        let (k, acked) = self.ack_through(cons, psn, plain_ack);
        progressed |= acked;
        let none = Taken {
            progressed,
            action: Action::None,
        };
        let Some((k, i)) = self.target(cons, k) else {
            return none;
        };
        let action = match (opcode, syn) {
            (op::ACK, Syndrome::Rnr(code)) => Action::Rnr { k, code },
            (op::ACK, Syndrome::Nak(Nak::Seq)) => Action::Seq { k },
            (op::ACK, Syndrome::Nak(n)) => match self.flights[i].as_mut() {
                Some(f) if super::rc::psn_diff(psn, f.first_psn) >= 0 => {
                    f.finish(nak_status(n));
                    Action::Failed { i }
                }
                _ => Action::None,
            },
            (op::ATOMIC_ACK, Syndrome::Ack) => Action::AtomicAck { i },
            (o, Syndrome::Ack) => match read_resp_pos(o) {
                Some(pos) => Action::ReadResp { i, pos },
                None => Action::None,
            },
            _ => Action::None,
        };
        Taken { progressed, action }
    }
}
