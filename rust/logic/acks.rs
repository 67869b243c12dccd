// SPDX-License-Identifier: GPL-2.0

//! How the RC requester's window takes a response (an ACK, NAK, RNR NAK,
//! read response or atomic ACK): what it acknowledges, which WQE it is
//! about, and what the completer still has to do with it.
//!
//! A response counts only at a PSN the requester has sent and not yet seen
//! acknowledged: from the first PSN of the oldest outstanding WQE up to the
//! last PSN sent, before a rewind too (an ACK that answers the first pass
//! of a SEND or WRITE sent again completes it). A NAK or RNR NAK must
//! moreover carry a PSN of the WQE it is about (as rxe's `check_psn` asks):
//! one of that WQE's PSNs that has been sent, after the last one an ACK
//! covered. Anything else (a duplicate, a stale NAK, or a PSN never sent,
//! which only a spoofer sends) is ignored, so a blind spoofer has to hit
//! one of the few PSNs in flight rather than any of half the PSN space.

use super::flights::{nak_status, FState, Flight, Window};
use super::rc::{op, psn_diff, read_resp_pos, Nak, Syndrome};
use super::uc::psn_add;
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
    /// A positive response past the one the `k`-th WQE (a read or atomic)
    /// waits for: the responder answers in PSN order, so that one was
    /// lost. A transport retry, resuming at the response it lacks.
    Lost {
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
        if !self.outstanding_psn(cons, psn) {
            return Taken {
                progressed: false,
                action: Action::None,
            };
        }
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
        if syn == Syndrome::Ack && self.lost_before(i, psn) {
            return Taken {
                progressed,
                action: Action::Lost { k },
            };
        }
        let nak = matches!(syn, Syndrome::Rnr(_) | Syndrome::Nak(_));
        if nak && !self.nak_fits(k, i, psn) {
            return none;
        }
        let action = match (opcode, syn) {
            (op::ACK, Syndrome::Rnr(code)) => Action::Rnr { k, code },
            (op::ACK, Syndrome::Nak(Nak::Seq)) => Action::Seq { k },
            (op::ACK, Syndrome::Nak(n)) => match self.flights[i].as_mut() {
                Some(f) => {
                    f.finish(nak_status(n));
                    Action::Failed { i }
                }
                None => Action::None,
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

    /// Whether `psn` is one the requester has sent (in this pass or one a
    /// rewind took back) from the oldest outstanding WQE on.
    pub fn outstanding_psn(&self, cons: u32, psn: u32) -> bool {
        let Some(o) = self.oldest_outstanding(cons) else {
            return false;
        };
        let Some(f) = self.flights[self.slot_of(cons, o)].as_ref() else {
            return false;
        };
        let sent = psn_sub(self.sent_end(), f.first_psn);
        psn_sub(psn, f.first_psn) < sent
    }

    /// The PSN after the furthest packet sent: `psn`, or further while a
    /// rewind has taken `psn` back. Responses up to there answer packets
    /// that went out; the responder may answer the first pass's after the
    /// retransmit timer fired, and then be gone (its consumer destroys
    /// its QP once its receive completes), as rxe's completer allows.
    pub fn sent_end(&self) -> u32 {
        match self.high {
            Some(h) if psn_diff(h, self.psn) > 0 => h,
            _ => self.psn,
        }
    }

    /// Whether the flight `f`, unfinished, a SEND or WRITE, had packets out
    /// in a pass a rewind took back (a read or atomic waits for the answer
    /// to its retry: see `restart`).
    fn went_out(&self, f: &Flight) -> bool {
        !f.local() && !f.rd_atomic() && psn_diff(f.first_psn, self.sent_end()) < 0
    }

    /// The first unfinished WQE with packets out (sent, being sent, or sent
    /// before a rewind), by index from the consumer.
    pub fn oldest_outstanding(&self, cons: u32) -> Option<u32> {
        let end = if self.off > 0 {
            self.next + 1
        } else {
            self.next
        };
        let k = (0..self.taken).find(|&k| {
            self.flights[self.slot_of(cons, k)]
                .as_ref()
                .is_some_and(|f| f.state != FState::Done)
        })?;
        let f = self.flights[self.slot_of(cons, k)].as_ref()?;
        (k < end || self.went_out(f)).then_some(k)
    }

    /// Whether a positive acknowledgement of `psn` reaches the oldest
    /// outstanding WQE: progress, which restarts the retransmit timer.
    pub fn acks_outstanding(&self, cons: u32, psn: u32) -> bool {
        self.oldest_outstanding(cons).is_some_and(|o| {
            self.flights[self.slot_of(cons, o)]
                .as_ref()
                .is_some_and(|f| psn_diff(psn, f.first_psn) >= 0)
        })
    }

    /// Finishes the SENDs and WRITEs a response with PSN `psn` acknowledges:
    /// everything wholly before it (and, when it is itself a positive ACK,
    /// ending at it), up to the first WQE that needs a response of its own.
    /// A WQE sent whole before a rewind counts as sent; when the response
    /// covers WQEs being sent again, sending goes on after them. Returns
    /// the index of the first WQE not finished, and whether any was.
    pub fn ack_through(&mut self, cons: u32, psn: u32, plain_ack: bool) -> (u32, bool) {
        let mut progressed = false;
        let mut k = 0u32;
        let end = self.sent_end();
        let mut resume = None;
        while k < self.taken {
            let i = self.slot_of(cons, k);
            let Some(mut f) = self.flights[i] else {
                break;
            };
            if f.state == FState::Done {
                k += 1;
                continue;
            }
            let before = psn_diff(f.last_psn(), psn) < 0;
            let this_ack = psn_diff(f.last_psn(), psn) == 0 && plain_ack;
            // Sent whole, in this pass or before a rewind.
            let sent = if k < self.next {
                f.state == FState::Sent
            } else {
                self.went_out(&f) && psn_diff(f.last_psn(), end) < 0
            };
            if f.rd_atomic() || !sent || !(before || this_ack) {
                break;
            }
            f.wc.byte_len = f.len as u32;
            f.state = FState::Done;
            self.flights[i] = Some(f);
            progressed = true;
            resume = Some(psn_add(f.last_psn(), 1));
            k += 1;
        }
        if let (true, Some(p)) = (k > self.next, resume) {
            // Past what was being sent again: the next packet is the first
            // of WQE `k`.
            self.next = k;
            self.off = 0;
            self.psn = p;
            if self.high.is_some_and(|h| psn_diff(h, p) <= 0) {
                self.high = None;
            }
        }
        (k, progressed)
    }

    /// Whether a positive response at `psn` shows that the response the
    /// read or atomic in slot `i` waits for was lost: it is past that one
    /// (the responder answers in order, on a link that keeps order), and
    /// no retry has started at that response yet. Notes the retry.
    fn lost_before(&mut self, i: usize, psn: u32) -> bool {
        let Some(f) = self.flights[i].as_ref() else {
            return false;
        };
        let want = f.next_response_psn();
        if !f.rd_atomic() || f.state != FState::Sent || psn_diff(psn, want) <= 0 {
            return false;
        }
        if self.lost_at == Some(want) {
            return false;
        }
        self.lost_at = Some(want);
        true
    }

    /// Whether a NAK or RNR NAK with PSN `psn` can be about the `k`-th WQE
    /// (in slot `i`), which has packets out: the PSN is one of its own that
    /// has been sent, after the last one an ACK covered.
    fn nak_fits(&self, k: u32, i: usize, psn: u32) -> bool {
        let Some(f) = self.flights[i].as_ref() else {
            return false;
        };
        // Its PSNs sent: all of them once it was sent whole, else those
        // before the next one to send.
        let sent = if k < self.next {
            f.npkts.max(1)
        } else {
            psn_sub(self.psn, f.first_psn)
        };
        let from = match self.acked {
            Some(x) if psn_sub(x, f.first_psn) < sent => psn_sub(psn_add(x, 1), f.first_psn),
            _ => 0,
        };
        let at = psn_sub(psn, f.first_psn);
        from <= at && at < sent
    }
}

/// `a - b` for 24-bit PSNs, as a distance forward from `b` (0 ..= 2^24 - 1).
fn psn_sub(a: u32, b: u32) -> u32 {
    a.wrapping_sub(b) & 0x00ff_ffff
}

#[cfg(test)]
mod tests {
    use super::super::cqe::{status, Wc};
    use super::super::flights::FState;
    use super::super::wqe::{self, Opcode, Payload, SendWqe, WrDetail};
    use super::*;

    type Win = Window<Vec<Option<Flight>>>;

    /// A window of 8 slots whose next PSN is `psn`.
    fn window(psn: u32) -> Win {
        let mut w = Window::new(vec![None; 8]);
        w.psn = psn;
        w
    }

    /// Takes a WQE at the window's next PSN (1024-byte packets) and sends
    /// its first `pkts` packets (all of them for `None`).
    fn post(w: &mut Win, op: Opcode, len: u64, pkts: Option<u32>) -> usize {
        let wqe = SendWqe {
            wr_id: 1,
            opcode: op,
            send_flags: wqe::SEND_SIGNALED,
            ex: 0,
            detail: WrDetail::None,
            payload: Payload::Sges { n: 1, length: len },
            xrc_srqn: None,
        };
        let i = w.slot_of(0, w.taken);
        w.take(i, Flight::new(wqe, Wc::default(), w.psn, 1024));
        let f = w.flights[i].unwrap();
        let n = f.npkts.max(1);
        for j in 0..pkts.unwrap_or(n).min(n) {
            let psn = psn_add(f.first_psn, j);
            w.sent(i, w.flights[i].unwrap(), psn, 1024, j + 1 == n);
        }
        i
    }

    fn nak(n: Nak) -> Syndrome {
        Syndrome::Nak(n)
    }

    fn state(w: &Win, i: usize) -> (FState, u32) {
        let f = w.flights[i].unwrap();
        (f.state, f.wc.status)
    }

    const NONE: Taken = Taken {
        progressed: false,
        action: Action::None,
    };

    #[test]
    fn restart_spends_no_retry() {
        // A SEND, then a READ (PSNs 11..=13) whose answer could not be
        // placed: the READ goes again without spending a retry.
        let mut w = window(10);
        w.retry_left = 1;
        let send = post(&mut w, Opcode::Send, 10, None);
        let read = post(&mut w, Opcode::RdmaRead, 3000, None);
        assert_eq!(w.index_of(0, read), 1);
        assert_eq!(w.rd_atomic, 1);
        w.restart(0, 1);
        let f = w.flights[read].unwrap();
        assert_eq!((w.retry_left, w.next, w.psn), (1, 1, 11));
        assert_eq!((f.state, w.rd_atomic), (FState::Pending, 0));
        // The rest of the old answer starts no retry of its own.
        assert_eq!(w.lost_at, Some(11));
        assert_eq!(state(&w, send).0, FState::Sent);
    }

    #[test]
    fn ack_for_a_psn_sent_before_a_rewind_counts() {
        // A SEND (PSNs 100..=102) sent whole; the retransmit timer rewinds
        // the requester, which has sent the first packet again when the
        // ACK for the last PSN of the first pass comes: it covers the
        // SEND, whose responder may already be gone.
        let mut w = window(100);
        w.retry_left = 7;
        let send = post(&mut w, Opcode::Send, 3000, None);
        assert!(w.retry(0, 0, false, 7));
        assert_eq!(w.psn, 100);
        let f = w.flights[send].unwrap();
        w.sent(send, f, 100, 1024, false);
        let t = w.take_response(0, op::ACK, 102, Syndrome::Ack);
        assert!(t.progressed);
        assert_eq!(state(&w, send), (FState::Done, status::SUCCESS));
        // Before any packet went again, too.
        let mut w = window(100);
        w.retry_left = 7;
        let send = post(&mut w, Opcode::Send, 3000, None);
        assert!(w.retry(0, 0, false, 7));
        let t = w.take_response(0, op::ACK, 102, Syndrome::Ack);
        assert!(t.progressed);
        assert_eq!(state(&w, send), (FState::Done, status::SUCCESS));
        // Still nothing past the highest PSN sent.
        let mut w = window(100);
        w.retry_left = 7;
        post(&mut w, Opcode::Send, 3000, None);
        assert!(w.retry(0, 0, false, 7));
        assert_eq!(w.take_response(0, op::ACK, 103, Syndrome::Ack), NONE);
    }

    #[test]
    fn nak_at_the_request_psn_is_taken() {
        // A SEND (PSNs 100..=102) acknowledged by a NAK for the WRITE after
        // it (103..=104), which fails.
        let mut w = window(100);
        let send = post(&mut w, Opcode::Send, 3000, None);
        let write = post(&mut w, Opcode::RdmaWrite, 2048, None);
        let t = w.take_response(0, op::ACK, 103, nak(Nak::RemAccess));
        assert_eq!(t.action, Action::Failed { i: write });
        assert_eq!(state(&w, send), (FState::Done, status::SUCCESS));
        assert_eq!(state(&w, write), (FState::Done, status::REM_ACCESS_ERR));
        // A READ's NAK carries the READ's PSN.
        let mut w = window(7);
        let read = post(&mut w, Opcode::RdmaRead, 5000, None);
        let t = w.take_response(0, op::ACK, 7, nak(Nak::InvReq));
        assert_eq!(t.action, Action::Failed { i: read });
        assert_eq!(state(&w, read), (FState::Done, status::REM_INV_REQ_ERR));
    }

    #[test]
    fn nak_past_what_was_sent_is_ignored() {
        // PSNs 100..=102 sent: a NAK at 103 (the next PSN), a little or far
        // further, or far behind, is no answer to anything sent.
        for psn in [
            103,
            110,
            100 + 128,
            100 + (1 << 22),
            100 + (1 << 23) - 1,
            50,
            99,
        ] {
            for syn in [
                nak(Nak::RemAccess),
                nak(Nak::InvReq),
                nak(Nak::RemOp),
                nak(Nak::Seq),
                Syndrome::Rnr(3),
            ] {
                let mut w = window(100);
                let send = post(&mut w, Opcode::Send, 3000, None);
                let t = w.take_response(0, op::ACK, psn, syn);
                assert_eq!(t, NONE, "{syn:?} at {psn}");
                assert_eq!(state(&w, send), (FState::Sent, 0), "{syn:?} at {psn}");
            }
        }
    }

    #[test]
    fn nak_far_into_a_read_is_ignored() {
        // A READ of 3 packets at PSN 10 (responses 10..=12), and a SEND at
        // 13: a NAK past the READ's PSNs does not fail it, nor one past
        // what was sent the SEND.
        for psn in [13, 14, 1000, 10 + (1 << 23) - 1] {
            let mut w = window(10);
            let read = post(&mut w, Opcode::RdmaRead, 3000, None);
            let send = post(&mut w, Opcode::Send, 10, None);
            let t = w.take_response(0, op::ACK, psn, nak(Nak::RemAccess));
            if psn == 13 {
                // The SEND's PSN: it is about the SEND, which waits behind
                // the READ's responses; nothing is taken now.
                assert_eq!(t.action, Action::None);
            } else {
                assert_eq!(t, NONE, "at {psn}");
            }
            assert_eq!(state(&w, read), (FState::Sent, 0), "at {psn}");
            assert_eq!(state(&w, send), (FState::Sent, 0), "at {psn}");
        }
    }

    #[test]
    fn nak_within_a_message_only_where_sent() {
        // A WRITE of 10 packets at PSN 0x00ff_fffc (wrapping), 6 sent.
        let first = 0x00ff_fffc;
        for (off, taken) in [(0, true), (5, true), (6, false), (9, false), (200, false)] {
            let mut w = window(first);
            let i = post(&mut w, Opcode::RdmaWrite, 10 * 1024, Some(6));
            let psn = psn_add(first, off);
            let t = w.take_response(0, op::ACK, psn, nak(Nak::RemOp));
            if taken {
                assert_eq!(t.action, Action::Failed { i }, "at +{off}");
                assert_eq!(state(&w, i), (FState::Done, status::REM_OP_ERR));
            } else {
                assert_eq!(t, NONE, "at +{off}");
                assert_eq!(state(&w, i), (FState::Pending, 0), "at +{off}");
            }
            let mut w = window(first);
            post(&mut w, Opcode::RdmaWrite, 10 * 1024, Some(6));
            let t = w.take_response(0, op::ACK, psn, nak(Nak::Seq));
            let want = if taken {
                Action::Seq { k: 0 }
            } else {
                Action::None
            };
            assert_eq!(t.action, want, "sequence NAK at +{off}");
        }
    }

    #[test]
    fn stale_nak_behind_an_ack_is_ignored() {
        // A WRITE of 40 packets at PSN 0, all sent, acknowledged through
        // PSN 15: a sequence NAK or an RNR NAK at or before 15 is stale.
        let mut w = window(0);
        post(&mut w, Opcode::RdmaWrite, 40 * 1024, None);
        let t = w.take_response(0, op::ACK, 15, Syndrome::Ack);
        assert!(t.progressed);
        assert_eq!(w.acked, Some(15));
        for psn in [0, 15] {
            assert_eq!(w.take_response(0, op::ACK, psn, nak(Nak::Seq)), NONE);
            assert_eq!(w.take_response(0, op::ACK, psn, Syndrome::Rnr(1)), NONE);
        }
        let t = w.take_response(0, op::ACK, 16, nak(Nak::Seq));
        assert_eq!(t.action, Action::Seq { k: 0 });
        let t = w.take_response(0, op::ACK, 39, Syndrome::Rnr(1));
        assert_eq!(t.action, Action::Rnr { k: 0, code: 1 });
    }

    #[test]
    fn rnr_nak_at_the_send_is_taken() {
        let mut w = window(5);
        post(&mut w, Opcode::Send, 100, None);
        let t = w.take_response(0, op::ACK, 5, Syndrome::Rnr(12));
        assert_eq!(t.action, Action::Rnr { k: 0, code: 12 });
    }

    #[test]
    fn responses_past_what_was_sent_acknowledge_nothing() {
        // A SEND at 0..=1 and a READ at 2 (responses 2..=3), all sent; a
        // response at 4 or beyond acknowledges neither.
        for psn in [4, 5, 100, 1 << 22, (1 << 23) - 1] {
            for (opcode, syn) in [
                (op::ACK, Syndrome::Ack),
                (op::READ_RESP_ONLY, Syndrome::Ack),
                (op::READ_RESP_FIRST, Syndrome::Ack),
                (op::ATOMIC_ACK, Syndrome::Ack),
                (op::ACK, nak(Nak::RemOp)),
            ] {
                let mut w = window(0);
                let send = post(&mut w, Opcode::Send, 2048, None);
                let read = post(&mut w, Opcode::RdmaRead, 2048, None);
                let t = w.take_response(0, opcode, psn, syn);
                assert_eq!(t, NONE, "{opcode:#x} {syn:?} at {psn}");
                assert_eq!(state(&w, send), (FState::Sent, 0));
                assert_eq!(state(&w, read), (FState::Sent, 0));
                assert_eq!(w.acked, None);
            }
        }
        // At the READ's PSN, a read response acknowledges the SEND and is
        // routed to the READ.
        let mut w = window(0);
        let send = post(&mut w, Opcode::Send, 2048, None);
        let read = post(&mut w, Opcode::RdmaRead, 2048, None);
        let t = w.take_response(0, op::READ_RESP_FIRST, 2, Syndrome::Ack);
        assert_eq!(
            t,
            Taken {
                progressed: true,
                action: Action::ReadResp {
                    i: read,
                    pos: Pos::First
                }
            }
        );
        assert_eq!(state(&w, send), (FState::Done, status::SUCCESS));
    }

    #[test]
    fn duplicate_acks_are_ignored() {
        let mut w = window(50);
        let send = post(&mut w, Opcode::Send, 10, None);
        for psn in [49, 0, 50 + (1 << 23)] {
            assert_eq!(w.take_response(0, op::ACK, psn, Syndrome::Ack), NONE);
        }
        assert_eq!(state(&w, send), (FState::Sent, 0));
        let t = w.take_response(0, op::ACK, 50, Syndrome::Ack);
        assert!(t.progressed);
        assert_eq!(state(&w, send), (FState::Done, status::SUCCESS));
    }

    #[test]
    fn a_response_past_a_lost_one_retries_once() {
        // A READ of 3 packets at PSN 10 (responses 10..=12) and a SEND at
        // 13, all sent. Response 10 came; 11 was lost, so 12 shows it.
        let mut w = window(10);
        let read = post(&mut w, Opcode::RdmaRead, 3000, None);
        let send = post(&mut w, Opcode::Send, 10, None);
        // A First read response at `psn`: the READ takes its 1024 bytes.
        let first = |w: &mut Win, psn: u32| {
            let t = w.take_response(0, op::READ_RESP_FIRST, psn, Syndrome::Ack);
            assert_eq!(
                t.action,
                Action::ReadResp {
                    i: read,
                    pos: Pos::First
                },
                "at {psn}"
            );
            w.flights[read].as_mut().unwrap().got += 1024;
        };
        first(&mut w, 10);
        let t = w.take_response(0, op::READ_RESP_LAST, 12, Syndrome::Ack);
        assert_eq!(t.action, Action::Lost { k: 0 });
        assert_eq!(w.lost_at, Some(11));
        // The rest of the answer being retried, or an ACK of the SEND
        // behind it, starts no second retry.
        for (opcode, psn) in [(op::READ_RESP_LAST, 12), (op::ACK, 13)] {
            let t = w.take_response(0, opcode, psn, Syndrome::Ack);
            assert_ne!(t.action, Action::Lost { k: 0 }, "{opcode:#x} at {psn}");
        }
        // Rewound there, the retry's first packet is the one expected;
        // once the read has moved on, a gap after that retries again.
        w.rewind(0, 0);
        for (i, psn) in [(read, 11), (send, 13)] {
            let f = w.flights[i].unwrap();
            w.sent(i, f, psn, 0, true);
        }
        first(&mut w, 11);
        let t = w.take_response(0, op::ACK, 13, Syndrome::Ack);
        assert_eq!(t.action, Action::Lost { k: 0 });
        assert_eq!(w.lost_at, Some(12));
        assert_eq!(state(&w, read), (FState::Sent, 0));
        assert_eq!(state(&w, send), (FState::Sent, 0));
    }

    #[test]
    fn the_old_answer_after_a_timer_retry_spends_no_second_retry() {
        // A READ of 4 packets at PSN 0, sent, with one transport retry. Its
        // first response came; then the responder was slow and the timer
        // fired: the READ is asked again from PSN 1, spending the retry.
        let mut w = window(0);
        w.retry_left = 1;
        let read = post(&mut w, Opcode::RdmaRead, 4096, None);
        let t = w.take_response(0, op::READ_RESP_FIRST, 0, Syndrome::Ack);
        assert!(t.progressed);
        w.flights[read].as_mut().unwrap().got = 1024;
        assert!(w.retry(0, 0, false, 1));
        let f = w.flights[read].unwrap();
        w.sent(read, f, 1, 0, true);
        // The rest of the first answer (1 was sent before the retry and
        // taken while the READ waited to go again; 2 and 3 come now) shows
        // no loss: the retry already asks for 1. With no retry left, a
        // second one would fail the READ.
        for psn in [2, 3] {
            let t = w.take_response(0, op::READ_RESP_MIDDLE, psn, Syndrome::Ack);
            assert_ne!(t.action, Action::Lost { k: 0 }, "at {psn}");
        }
        assert_eq!(state(&w, read), (FState::Sent, 0));
        // The retry's answer moves the READ on; a gap after that is a
        // loss again.
        let t = w.take_response(0, op::READ_RESP_MIDDLE, 1, Syndrome::Ack);
        assert_eq!(
            t.action,
            Action::ReadResp {
                i: read,
                pos: Pos::Middle
            }
        );
        w.flights[read].as_mut().unwrap().got = 2048;
        let t = w.take_response(0, op::READ_RESP_LAST, 3, Syndrome::Ack);
        assert_eq!(t.action, Action::Lost { k: 0 });
        assert_eq!(w.lost_at, Some(2));
    }

    #[test]
    fn an_atomic_ack_lost_shows_behind_a_later_ack() {
        // An atomic at 20, a SEND at 21: the SEND's ACK means the atomic's
        // ACK was lost. A NAK there does not (it retries nothing itself).
        let mut w = window(20);
        post(&mut w, Opcode::FetchAdd, 8, None);
        post(&mut w, Opcode::Send, 10, None);
        let t = w.take_response(0, op::ACK, 21, nak(Nak::RemAccess));
        assert_ne!(t.action, Action::Lost { k: 0 });
        let t = w.take_response(0, op::ACK, 21, Syndrome::Ack);
        assert_eq!(t.action, Action::Lost { k: 0 });
        // The atomic's own ACK is no gap.
        let mut w = window(20);
        let fa = post(&mut w, Opcode::FetchAdd, 8, None);
        let t = w.take_response(0, op::ATOMIC_ACK, 20, Syndrome::Ack);
        assert_eq!(t.action, Action::AtomicAck { i: fa });
        assert_eq!(w.lost_at, None);
    }

    #[test]
    fn a_read_not_yet_sent_again_sees_no_gap() {
        // Rewound (by a retry) and not yet sent again: the rest of the old
        // answer is ignored, and so is a response past it.
        let mut w = window(0);
        let read = post(&mut w, Opcode::RdmaRead, 4096, None);
        w.flights[read].as_mut().unwrap().got = 1024;
        w.rewind(0, 0);
        let f = w.flights[read].unwrap();
        assert_eq!(
            (f.got, f.restart),
            (1024, Some(1024)),
            "a rewind keeps the data"
        );
        assert_eq!(
            w.take_response(0, op::READ_RESP_LAST, 3, Syndrome::Ack),
            NONE
        );
        assert_eq!(w.lost_at, None);
    }
}
