// SPDX-License-Identifier: GPL-2.0

//! The RC requester's window of WQEs in flight: the WQEs it has taken from
//! the send queue, in ring order, with their PSN ranges, and the arithmetic
//! of sending, acknowledging, retrying and retiring them.
//!
//! WQEs are counted from the ring's consumer index (`cons`): the `k`-th
//! taken WQE sits in slot `(cons + k) & mask`. `taken` WQEs are held,
//! `next` is the one to send next, and `off` bytes of it are already sent.
//! The storage is generic (a kernel vector in the module, a `Vec` in the
//! host tests): one entry per ring slot.

use super::cqe::{status, Wc};
use super::rc::{psn_diff, Nak, MAX_UNACKED};
use super::uc::{packets, psn_add, Pos};
use super::wqe::{self, Opcode, Payload, SendWqe, WrDetail};
use core::ops::DerefMut;

/// Where a WQE is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FState {
    /// Taken, not (completely) sent.
    Pending,
    /// Sent; waiting for its acknowledgement or response.
    Sent,
    /// Finished, successfully or not; completes in order.
    Done,
}

/// A WQE the requester has taken.
#[derive(Clone, Copy, Debug)]
pub struct Flight {
    /// The validated WQE.
    pub w: SendWqe,
    /// Its first PSN.
    pub first_psn: u32,
    /// How many PSNs it takes (0 for local operations).
    pub npkts: u32,
    /// Message length.
    pub len: u64,
    /// Bytes per packet: the path MTU, or more when the peer is a QP of
    /// this device.
    pub seg: u32,
    /// Where it is.
    pub state: FState,
    /// Counted in the window's `rd_atomic`.
    pub counted: bool,
    /// Read response bytes received.
    pub got: u64,
    /// A read rewound with `got` bytes received asks for the rest, and its
    /// new answer starts with a First or an Only packet at that point:
    /// the bytes it had then. Nowhere else may a packet that starts an
    /// answer continue one.
    pub restart: Option<u64>,
    /// The completion so far.
    pub wc: Wc,
    /// It asked for a completion.
    pub signaled: bool,
}

impl Flight {
    /// A WQE taken at PSN `first_psn`, sent in segments of `seg` bytes,
    /// with its completion so far; a message too long finishes at once,
    /// taking no PSNs.
    pub fn new(w: SendWqe, wc: Wc, first_psn: u32, seg: u32) -> Self {
        let len = w.payload.bytes();
        let npkts = match w.opcode {
            Opcode::Send
            | Opcode::SendImm
            | Opcode::SendInv
            | Opcode::RdmaWrite
            | Opcode::RdmaWriteImm
            | Opcode::RdmaRead => packets(len, seg) as u32,
            Opcode::LocalInv | Opcode::BindMw | Opcode::RegMr => 0,
            _ => 1,
        };
        let mut f = Self {
            w,
            first_psn,
            npkts,
            len,
            seg,
            state: FState::Pending,
            counted: false,
            got: 0,
            restart: None,
            wc,
            signaled: w.send_flags & wqe::SEND_SIGNALED != 0,
        };
        if len > wqe::MAX_MSG {
            // Never sent: it takes no PSNs.
            f.npkts = 0;
            f.finish(status::LOC_LEN_ERR);
        }
        f
    }

    /// A WQE that failed validation: it completes, in order, with `wc`.
    pub fn failed(wc: Wc, first_psn: u32, seg: u32) -> Self {
        Self {
            w: SendWqe {
                wr_id: wc.wr_id,
                opcode: Opcode::Send,
                send_flags: 0,
                ex: 0,
                detail: WrDetail::None,
                payload: Payload::Sges { n: 0, length: 0 },
                xrc_srqn: None,
            },
            first_psn,
            npkts: 0,
            len: 0,
            seg,
            state: FState::Done,
            counted: false,
            got: 0,
            restart: None,
            wc,
            signaled: true,
        }
    }

    /// Its last PSN.
    pub fn last_psn(&self) -> u32 {
        psn_add(self.first_psn, self.npkts.max(1) - 1)
    }

    /// Needs a response rather than an ACK, and counts against
    /// `max_rd_atomic`.
    pub fn rd_atomic(&self) -> bool {
        matches!(
            self.w.opcode,
            Opcode::RdmaRead
                | Opcode::CmpSwap
                | Opcode::FetchAdd
                | Opcode::AtomicWrite
                | Opcode::Flush
        )
    }

    /// Runs in place, sending nothing.
    pub fn local(&self) -> bool {
        matches!(
            self.w.opcode,
            Opcode::LocalInv | Opcode::BindMw | Opcode::RegMr
        )
    }

    /// A SEND or WRITE: segmented, acknowledged by ACKs.
    pub fn segmented(&self) -> bool {
        matches!(
            self.w.opcode,
            Opcode::Send
                | Opcode::SendImm
                | Opcode::SendInv
                | Opcode::RdmaWrite
                | Opcode::RdmaWriteImm
        )
    }

    /// The PSN of the response a read, atomic, ATOMIC WRITE or FLUSH waits
    /// for next: the one after the read data received so far.
    pub fn next_response_psn(&self) -> u32 {
        psn_add(
            self.first_psn,
            (self.got / u64::from(self.seg.max(1))) as u32,
        )
    }

    /// Finishes it with status `st`.
    pub fn finish(&mut self, st: u32) {
        self.state = FState::Done;
        self.wc.status = st;
    }

    /// How a read response packet (PSN `psn`, position `pos`, `n` payload
    /// bytes) applies to this flight, which has been sent. ATOMIC WRITE and
    /// FLUSH are answered by one empty response.
    pub fn check_response(&self, psn: u32, pos: Pos, n: u64) -> Response {
        let mtu = u64::from(self.seg.max(1));
        match self.w.opcode {
            Opcode::AtomicWrite | Opcode::Flush => {
                return if pos == Pos::Only && psn == self.first_psn && n == 0 {
                    Response::Finish(status::SUCCESS)
                } else {
                    Response::Ignore
                };
            }
            Opcode::RdmaRead => {}
            _ => return Response::Ignore,
        }
        // A read retried part-way is answered again from the first packet
        // it lacks, as a read of the rest (a First or an Only packet); the
        // first answer's packet at that PSN (a Middle or a Last) is as good.
        let at_start = self.got == 0 || self.restart == Some(self.got);
        if psn != self.next_response_psn()
            || (pos.starts() && !at_start)
            || (self.got == 0 && !pos.starts())
        {
            return Response::Ignore;
        }
        let last = pos.ends();
        if (!last && n != mtu) || self.got + n > self.len || (last && self.got + n != self.len) {
            return Response::Finish(status::BAD_RESP_ERR);
        }
        Response::Data { last }
    }
}

/// What a read response packet does to the flight it answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Response {
    /// Out of order or not for it: ignored.
    Ignore,
    /// The flight finishes with this status, without taking the payload.
    Finish(u32),
    /// Its payload is the next part of the read's data; `last` ends it.
    Data {
        /// The read's last packet.
        last: bool,
    },
}

/// The completion status of a WQE that a NAK answered.
pub fn nak_status(n: Nak) -> u32 {
    match n {
        Nak::InvReq => status::REM_INV_REQ_ERR,
        Nak::RemAccess => status::REM_ACCESS_ERR,
        Nak::RemOp | Nak::Seq => status::REM_OP_ERR,
        Nak::InvRdReq => status::REM_INV_RD_REQ_ERR,
    }
}

/// The requester's window: the taken WQEs and where sending stands.
pub struct Window<S> {
    /// One entry per ring slot.
    pub flights: S,
    /// Slots minus one; at most this many WQEs are taken.
    pub mask: u32,
    /// WQEs taken, from the ring's consumer on.
    pub taken: u32,
    /// The WQE to send next, from the ring's consumer on.
    pub next: u32,
    /// Bytes of WQE `next` already sent.
    pub off: u64,
    /// The PSN of the next new packet.
    pub psn: u32,
    /// Reads and atomics outstanding.
    pub rd_atomic: u32,
    /// The last PSN a positive acknowledgement covered.
    pub acked: Option<u32>,
    /// The PSN after the furthest packet sent, while a rewind has taken
    /// `psn` back behind it (see `sent_end`).
    pub high: Option<u32>,
    /// Transport retries left (`retry_cnt`).
    pub retry_left: u8,
    /// RNR retries left (`rnr_retry`).
    pub rnr_left: u8,
    /// The requester stopped for a window, a fence or `max_rd_atomic`.
    pub stalled: bool,
    /// The response PSN at which the last retry of a read or atomic started
    /// (for lost responses, see `take_response`, or any other retry): a
    /// later response past the same PSN is the rest of the answer that was
    /// retried, and starts no second retry.
    pub lost_at: Option<u32>,
}

impl<S: DerefMut<Target = [Option<Flight>]>> Window<S> {
    /// A window over `flights`, one entry per ring slot (a power of two,
    /// or none).
    pub fn new(flights: S) -> Self {
        let mask = flights.len().saturating_sub(1) as u32;
        Self {
            flights,
            mask,
            taken: 0,
            next: 0,
            off: 0,
            psn: 0,
            rd_atomic: 0,
            acked: None,
            high: None,
            retry_left: 0,
            rnr_left: 0,
            stalled: false,
            lost_at: None,
        }
    }

    /// Forgets every WQE taken (the ring was flushed or the QP reset); the
    /// next PSN and the retry budgets stay.
    pub fn reset(&mut self) {
        for f in self.flights.iter_mut() {
            *f = None;
        }
        self.taken = 0;
        self.next = 0;
        self.off = 0;
        self.rd_atomic = 0;
        self.acked = None;
        self.high = None;
        self.stalled = false;
        self.lost_at = None;
    }

    /// The slot of the `k`-th WQE from consumer index `cons`.
    pub fn slot_of(&self, cons: u32, k: u32) -> usize {
        (cons.wrapping_add(k) & self.mask) as usize
    }

    /// Which WQE from consumer index `cons` slot `i` holds (the inverse of
    /// [`Self::slot_of`]).
    pub fn index_of(&self, cons: u32, i: usize) -> u32 {
        (i as u32).wrapping_sub(cons) & self.mask
    }

    /// Whether no more WQEs may be taken.
    pub fn full(&self) -> bool {
        self.taken >= self.mask
    }

    /// Holds a newly taken WQE in slot `i`.
    pub fn take(&mut self, i: usize, f: Flight) {
        self.flights[i] = Some(f);
        self.taken += 1;
    }

    /// Moves past WQE `next`, which finished before it was (completely)
    /// sent: sending goes on after its PSNs.
    pub fn pass_finished(&mut self, f: &Flight) {
        self.next += 1;
        self.off = 0;
        self.psn = psn_add(f.first_psn, f.npkts);
    }

    /// Finishes the flight in slot `i` with `st`, unless it has finished.
    pub fn finish(&mut self, i: usize, st: u32) {
        if let Some(f) = self.flights[i].as_mut() {
            if f.state != FState::Done {
                f.finish(st);
            }
        }
    }

    /// Whether flight `f`, to be sent next, must wait: for `max_rd_atomic`
    /// (a read or atomic with the limit reached), or for a fence (earlier
    /// reads and atomics outstanding). A message partly sent goes on.
    pub fn must_wait(&self, f: &Flight, max_rd_atomic: u8) -> bool {
        let fenced = f.w.send_flags & wqe::SEND_FENCE != 0 && self.rd_atomic > 0;
        let limit = u32::from(max_rd_atomic).max(1);
        (f.rd_atomic() && self.off == 0 && self.rd_atomic >= limit) || (fenced && self.off == 0)
    }

    /// Whether the window is full: the oldest unacknowledged PSN bounds how
    /// far ahead to go (within a long message, the last PSN an ACK covered
    /// moves it).
    pub fn window_full(&self, cons: u32) -> bool {
        let Some(o) = self.oldest_outstanding(cons) else {
            return false;
        };
        let Some(of) = self.flights[self.slot_of(cons, o)].as_ref() else {
            return false;
        };
        let mut base = of.first_psn;
        if let Some(x) = self.acked {
            if psn_diff(x, base) >= 0 && psn_diff(x, of.last_psn()) <= 0 {
                base = psn_add(x, 1);
            }
        }
        psn_diff(self.psn, base) >= MAX_UNACKED as i32
    }

    /// Records a packet of flight `f` (in slot `i`, WQE `next`) sent with
    /// PSN `psn` and `plen` payload bytes; `last` when it was the WQE's
    /// last packet.
    pub fn sent(&mut self, i: usize, mut f: Flight, psn: u32, plen: u64, last: bool) {
        if last {
            f.state = FState::Sent;
            if f.rd_atomic() {
                f.counted = true;
                self.rd_atomic += 1;
            }
            self.next += 1;
            self.off = 0;
            self.psn = psn_add(f.first_psn, f.npkts.max(1));
        } else {
            self.off += plen;
            self.psn = psn_add(psn, 1);
        }
        if self.high.is_some_and(|h| psn_diff(h, self.psn) <= 0) {
            self.high = None;
        }
        self.flights[i] = Some(f);
    }

    /// Takes the oldest WQE out of the window if it has finished (it is
    /// then consumed from the ring, so `cons` moves on by one).
    pub fn retire(&mut self, cons: u32) -> Option<Flight> {
        if self.taken == 0 {
            return None;
        }
        let i = self.slot_of(cons, 0);
        let f = self.flights[i].filter(|f| f.state == FState::Done)?;
        self.flights[i] = None;
        self.taken -= 1;
        self.next = self.next.saturating_sub(1);
        if f.counted {
            self.rd_atomic = self.rd_atomic.saturating_sub(1);
        }
        Some(f)
    }

    /// Sends again from the `k`-th WQE on (its first packet included). A
    /// read keeps the data it has received: it asks again for the rest.
    pub fn rewind(&mut self, cons: u32, k: u32) {
        for j in k..self.taken {
            let i = self.slot_of(cons, j);
            if let Some(f) = self.flights[i].as_mut() {
                if f.state != FState::Done {
                    f.state = FState::Pending;
                    f.restart = (f.got > 0).then_some(f.got);
                    if f.counted {
                        f.counted = false;
                        self.rd_atomic = self.rd_atomic.saturating_sub(1);
                    }
                }
            }
        }
        if k <= self.next && k < self.taken {
            if let Some(f) = self.flights[self.slot_of(cons, k)].as_ref() {
                self.high = Some(self.sent_end());
                self.psn = f.first_psn;
            }
            self.next = k;
            self.off = 0;
        }
    }

    /// Within a SEND or WRITE, the `k`-th WQE (just rewound) goes on from
    /// `psn` rather than its first packet, when `psn` is one of its later
    /// packets: the responder has everything before it (an ACK covered it,
    /// or a sequence NAK asked for it).
    pub fn resume_at(&mut self, cons: u32, k: u32, psn: u32) {
        if k != self.next || self.off != 0 {
            return;
        }
        let Some(f) = self.flights[self.slot_of(cons, k)].as_ref() else {
            return;
        };
        let resumable = f.segmented() && f.state == FState::Pending;
        let d = psn_diff(psn, f.first_psn);
        if resumable && d > 0 && (d as u32) < f.npkts {
            self.off = u64::from(d as u32) * u64::from(f.seg.max(1));
            self.psn = psn;
        }
    }

    /// Spends a retry on the `k`-th WQE: a transport retry, or with `rnr`
    /// an RNR retry, from a budget of `limit`. Rewinds to the WQE and
    /// returns true, or, with none left, finishes it with the matching
    /// error and returns false.
    ///
    /// An RNR retry count of 7 means without limit; a transport retry
    /// count of 7 is seven retries, as the IB spec has it and hardware
    /// does (rdma_rxe retries for ever there: a requester whose peer went
    /// away before its last ACK was out would send until destroyed).
    pub fn retry(&mut self, cons: u32, k: u32, rnr: bool, limit: u8) -> bool {
        let left = if rnr {
            &mut self.rnr_left
        } else {
            &mut self.retry_left
        };
        if !(rnr && limit == 7) {
            if *left == 0 {
                let i = self.slot_of(cons, k);
                if let Some(f) = self.flights[i].as_mut() {
                    f.finish(if rnr {
                        status::RNR_RETRY_EXC_ERR
                    } else {
                        status::RETRY_EXC_ERR
                    });
                }
                return false;
            }
            *left -= 1;
        }
        self.restart(cons, k);
        true
    }

    /// Sends the `k`-th WQE from consumer index `cons` again, and those
    /// after it, without spending a retry: what the requester itself could
    /// not place or gather (on-demand memory not resident) was not the
    /// peer's or the network's failing.
    pub fn restart(&mut self, cons: u32, k: u32) {
        self.rewind(cons, k);
        // A read or atomic now waits for the answer to its retry: the rest
        // of the old answer, still on its way, starts no second retry (as
        // rxe's completer starts none while one has started).
        if let Some(f) = self.flights[self.slot_of(cons, k)].as_ref() {
            if f.rd_atomic() && f.state != FState::Done {
                self.lost_at = Some(f.next_response_psn());
            }
        }
    }

    /// The `k`-th WQE and its slot, if it has packets out: what a NAK or a
    /// response after the acknowledged ones is about.
    pub fn target(&self, cons: u32, k: u32) -> Option<(u32, usize)> {
        let in_flight = k < self.next || (k == self.next && self.off > 0 && k < self.taken);
        in_flight.then(|| (k, self.slot_of(cons, k)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wqe(opcode: Opcode, len: u64) -> SendWqe {
        SendWqe {
            wr_id: 1,
            opcode,
            send_flags: wqe::SEND_SIGNALED,
            ex: 0,
            detail: WrDetail::None,
            payload: Payload::Sges { n: 1, length: len },
            xrc_srqn: None,
        }
    }

    fn window(slots: usize) -> Window<Vec<Option<Flight>>> {
        Window::new(vec![None; slots])
    }

    /// Takes a WQE as the requester does, at the window's next PSN.
    fn take(w: &mut Window<Vec<Option<Flight>>>, cons: u32, op: Opcode, len: u64) -> usize {
        let i = w.slot_of(cons, w.taken);
        let f = Flight::new(wqe(op, len), Wc::default(), w.psn, 1024);
        w.take(i, f);
        i
    }

    /// Sends every packet of WQE `next`.
    fn send_all(w: &mut Window<Vec<Option<Flight>>>, cons: u32) {
        let i = w.slot_of(cons, w.next);
        let f = w.flights[i].unwrap();
        for j in 0..f.npkts.max(1) {
            let last = j + 1 >= f.npkts.max(1);
            w.sent(
                i,
                w.flights[i].unwrap(),
                psn_add(f.first_psn, j),
                1024,
                last,
            );
        }
    }

    #[test]
    fn flights_take_psns_by_packets() {
        let mut w = window(8);
        w.psn = 0x00ff_fffe;
        take(&mut w, 0, Opcode::RdmaWrite, 3000);
        send_all(&mut w, 0);
        let f = w.flights[0].unwrap();
        assert_eq!((f.first_psn, f.npkts, f.last_psn()), (0x00ff_fffe, 3, 0));
        assert_eq!(f.state, FState::Sent);
        assert_eq!((w.next, w.off, w.psn), (1, 0, 1));
        // Reads count against max_rd_atomic once sent.
        take(&mut w, 0, Opcode::RdmaRead, 10);
        send_all(&mut w, 0);
        assert_eq!((w.rd_atomic, w.psn), (1, 2));
        let read = Flight::new(wqe(Opcode::RdmaRead, 1), Wc::default(), 0, 1024);
        assert!(w.must_wait(&read, 1));
        assert!(!w.must_wait(&read, 2));
        let local = Flight::new(wqe(Opcode::LocalInv, 0), Wc::default(), 0, 1024);
        assert!(local.local() && local.npkts == 0);
        let huge = Flight::new(wqe(Opcode::Send, wqe::MAX_MSG + 1), Wc::default(), 0, 1024);
        assert_eq!(
            (huge.state, huge.wc.status),
            (FState::Done, status::LOC_LEN_ERR)
        );
    }

    #[test]
    fn acks_finish_in_order_and_retire() {
        let mut w = window(8);
        take(&mut w, 0, Opcode::Send, 2048);
        send_all(&mut w, 0);
        take(&mut w, 0, Opcode::RdmaRead, 100);
        send_all(&mut w, 0);
        take(&mut w, 0, Opcode::Send, 10);
        send_all(&mut w, 0);
        assert!(w.acks_outstanding(0, 0));
        // An ACK of the SEND's last PSN finishes it; the read stops the walk.
        let (k, progressed) = w.ack_through(0, 1, true);
        assert_eq!((k, progressed), (1, true));
        assert_eq!(w.target(0, k), Some((1, 1)));
        assert_eq!(w.flights[0].unwrap().wc.byte_len, 2048);
        let f = w.retire(0).unwrap();
        assert_eq!(f.state, FState::Done);
        assert!(w.retire(1).is_none(), "the read has not finished");
        assert_eq!((w.taken, w.next), (2, 2));
        // An implied ACK past the read does not finish it either.
        let (k, _) = w.ack_through(1, 3, true);
        assert_eq!(k, 0);
        w.finish(w.slot_of(1, 0), status::SUCCESS);
        let (k, progressed) = w.ack_through(1, 3, true);
        assert_eq!((k, progressed), (2, true));
        assert!(w.retire(1).unwrap().counted);
        assert_eq!(w.rd_atomic, 0);
        assert!(w.retire(2).is_some());
        assert_eq!((w.taken, w.next), (0, 0));
        assert_eq!(w.oldest_outstanding(3), None);
        assert_eq!(w.target(3, 0), None);
    }

    #[test]
    fn window_bounds_unacked_psns() {
        let mut w = window(512);
        for _ in 0..MAX_UNACKED {
            assert!(!w.window_full(0));
            take(&mut w, 0, Opcode::Send, 0);
            send_all(&mut w, 0);
        }
        assert!(w.window_full(0));
        w.ack_through(0, 0, true);
        w.retire(0);
        assert!(!w.window_full(1));
        // Within one long message, the PSN an ACK covered moves the base.
        let mut w = window(8);
        take(&mut w, 0, Opcode::RdmaWrite, 1024 * 200);
        let i = w.slot_of(0, 0);
        for j in 0..MAX_UNACKED {
            w.sent(i, w.flights[i].unwrap(), j, 1024, false);
        }
        assert!(w.window_full(0));
        w.acked = Some(15);
        assert!(!w.window_full(0));
    }

    #[test]
    fn rewind_resume_and_retries() {
        let mut w = window(8);
        take(&mut w, 0, Opcode::RdmaWrite, 4096);
        send_all(&mut w, 0);
        take(&mut w, 0, Opcode::RdmaRead, 8);
        send_all(&mut w, 0);
        assert_eq!((w.psn, w.rd_atomic), (5, 1));
        w.retry_left = 1;
        assert!(w.retry(0, 0, false, 3));
        assert_eq!((w.next, w.off, w.psn, w.rd_atomic), (0, 0, 0, 0));
        assert!(w
            .flights
            .iter()
            .flatten()
            .all(|f| f.state == FState::Pending));
        // A sequence NAK for the write's third packet resumes there.
        w.resume_at(0, 0, 2);
        assert_eq!((w.off, w.psn), (2048, 2));
        // No retry left: the WQE finishes with the error.
        assert!(!w.retry(0, 0, false, 3));
        let f = w.flights[0].unwrap();
        assert_eq!(
            (f.state, f.wc.status),
            (FState::Done, status::RETRY_EXC_ERR)
        );
        // 7 RNR retries: without limit.
        assert!(w.retry(0, 1, true, 7));
        assert_eq!(w.rnr_left, 0);
        // 7 transport retries: seven.
        w.retry_left = 7;
        for left in (0..7).rev() {
            assert!(w.retry(0, 1, false, 7));
            assert_eq!(w.retry_left, left);
        }
        assert!(!w.retry(0, 1, false, 7));
        let f = w.flights[w.slot_of(0, 1)].unwrap();
        assert_eq!(
            (f.state, f.wc.status),
            (FState::Done, status::RETRY_EXC_ERR)
        );
        w.reset();
        assert_eq!((w.taken, w.next, w.off), (0, 0, 0));
        assert!(w.flights.iter().all(|f| f.is_none()));
    }

    #[test]
    fn a_message_too_long_takes_no_psns() {
        // It finishes at once and is passed without being sent: the next
        // WQE goes on at its PSN, not 2^23 PSNs later (past half the PSN
        // space, where every comparison with the WQEs before it turns).
        let mut w = window(8);
        w.psn = 100;
        take(&mut w, 0, Opcode::RdmaWrite, 10);
        send_all(&mut w, 0);
        let i = take(&mut w, 0, Opcode::Send, wqe::MAX_MSG + 1);
        let f = w.flights[i].unwrap();
        assert_eq!((f.state, f.wc.status), (FState::Done, status::LOC_LEN_ERR));
        w.pass_finished(&f);
        assert_eq!((w.next, w.psn), (2, 101));
        assert_eq!(f.npkts, 0);
    }

    #[test]
    fn read_responses_in_order() {
        let mut f = Flight::new(wqe(Opcode::RdmaRead, 2500), Wc::default(), 10, 1024);
        f.state = FState::Sent;
        assert_eq!(f.check_response(11, Pos::Middle, 1024), Response::Ignore);
        assert_eq!(
            f.check_response(10, Pos::First, 1024),
            Response::Data { last: false }
        );
        f.got = 1024;
        assert_eq!(
            f.check_response(11, Pos::Middle, 1000),
            Response::Finish(status::BAD_RESP_ERR)
        );
        f.got = 2048;
        assert_eq!(
            f.check_response(12, Pos::Last, 452),
            Response::Data { last: true }
        );
        assert_eq!(
            f.check_response(12, Pos::Last, 400),
            Response::Finish(status::BAD_RESP_ERR)
        );
        // Not retried, a First or an Only never continues an answer.
        f.got = 1024;
        assert_eq!(f.next_response_psn(), 11);
        assert_eq!(f.check_response(11, Pos::First, 1024), Response::Ignore);
        assert_eq!(f.check_response(11, Pos::Only, 1476), Response::Ignore);
        // Retried from 11 after 1024 bytes: the new answer starts with a
        // First (or an Only for one packet), and the old one's Middle at
        // the same PSN is as good; past that point, only a Middle or Last.
        f.restart = Some(1024);
        for pos in [Pos::First, Pos::Middle] {
            assert_eq!(
                f.check_response(11, pos, 1024),
                Response::Data { last: false }
            );
        }
        assert_eq!(f.check_response(12, Pos::Middle, 1024), Response::Ignore);
        f.got = 2048;
        assert_eq!(f.check_response(12, Pos::Only, 452), Response::Ignore);
        f.restart = Some(2048);
        assert_eq!(
            f.check_response(12, Pos::Only, 452),
            Response::Data { last: true }
        );
        let aw = Flight::new(wqe(Opcode::AtomicWrite, 8), Wc::default(), 3, 1024);
        assert_eq!(
            aw.check_response(3, Pos::Only, 0),
            Response::Finish(status::SUCCESS)
        );
        assert_eq!(aw.check_response(3, Pos::Only, 8), Response::Ignore);
        assert_eq!(nak_status(Nak::Seq), status::REM_OP_ERR);
    }
}
