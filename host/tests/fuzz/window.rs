// SPDX-License-Identifier: GPL-2.0

//! The RC requester's window through random lives: WQEs posted, taken and
//! sent as the requester does, answered by a model responder over a link
//! that loses packets, with retransmit timers, RNR waits, spoofed
//! responses and, in chaos runs, arbitrary ones.
//!
//! After every step the window's invariants hold (slots, counters, PSN
//! contiguity, where sending stands); a spoofed response at a PSN not
//! outstanding changes nothing; WQEs complete in order, and with an honest
//! responder every WQE completes successfully once the link stops losing,
//! or the first one the responder refuses fails with its NAK's status.

use crate::peer::{Peer, Req, Resp};
use crate::rng::Rng;
use rrxe_logic::acks::{Action, Taken};
use rrxe_logic::cqe::{status, Wc};
use rrxe_logic::flights::{nak_status, FState, Flight, Response, Window};
use rrxe_logic::rc::{op, psn_diff, Nak, Syndrome, ACK_EVERY, MAX_UNACKED};
use rrxe_logic::uc::{psn_add, Pos};
use rrxe_logic::wqe::{self, Opcode, Payload, SendWqe, WrDetail};
use std::collections::VecDeque;

type Win = Window<Vec<Option<Flight>>>;

/// A WQE to post, and how it is to end.
#[derive(Clone, Copy, Debug)]
struct Posted {
    op: Opcode,
    len: u64,
    flags: u32,
    /// The responder refuses it with this NAK.
    bad: Option<Nak>,
    /// It fails validation (completes with this status, sending nothing).
    failed: Option<u32>,
}

struct Sim {
    w: Win,
    /// The ring's consumer index.
    cons: u32,
    wqes: Vec<Posted>,
    posted: usize,
    completed: usize,
    to_peer: VecDeque<Req>,
    to_req: VecDeque<Resp>,
    peer: Peer,
    seg: u32,
    /// Packets lost, in 64.
    loss: u64,
    retry_cnt: u8,
    rnr_retry: u8,
    max_rd_atomic: u8,
    rnr_wait: bool,
    /// Arbitrary responses are injected; only invariants are checked.
    chaos: bool,
    /// An error completed: the QP is in ERR.
    ended: bool,
    out: Vec<Resp>,
}

/// One run: a window's life. Every step is a case.
pub fn case(r: &mut Rng) {
    let chaos = r.chance(1, 4);
    let mut s = Sim::new(r, chaos);
    let main_steps = r.range(50, 600);
    for _ in 0..main_steps {
        s.step(r);
        s.check();
        r.count();
        if s.ended || s.completed == s.wqes.len() {
            break;
        }
    }
    if chaos || s.ended {
        return;
    }
    // The link stops losing and the responder stops refusing receives:
    // everything completes.
    s.loss = 0;
    s.peer.rnr = 0;
    let mut budget = 100_000;
    while !s.ended && s.completed < s.wqes.len() {
        if !s.settle(r) {
            s.timer();
        }
        s.check();
        r.count();
        budget -= 1;
        assert!(
            budget > 0,
            "no progress: {} of {} completed",
            s.completed,
            s.wqes.len()
        );
    }
    if s.ended {
        return;
    }
    assert!(s.wqes.iter().all(|p| p.bad.is_none() && p.failed.is_none()));
}

fn psn_sub(a: u32, b: u32) -> u32 {
    a.wrapping_sub(b) & 0x00ff_ffff
}

impl Sim {
    fn new(r: &mut Rng, chaos: bool) -> Self {
        let slots = r.pick(&[2usize, 4, 8, 16, 64]);
        let mut w = Window::new(vec![None; slots]);
        let seg = r.pick(&[256u32, 1024, 4096]);
        w.psn = r.psn();
        let (retry_cnt, rnr_retry) = if chaos {
            (r.below(8) as u8, r.below(8) as u8)
        } else {
            // Retries that do not run out within a run: RNR retry count 7
            // is without limit; a transport count of 7 is only seven, so
            // the window gets more than any QP attribute can ask for.
            (u8::MAX, 7)
        };
        w.retry_left = retry_cnt;
        w.rnr_left = rnr_retry;
        let n = r.range(1, 40) as usize;
        let wqes = (0..n).map(|_| posted(r, seg, chaos)).collect();
        let epsn = w.psn;
        Self {
            w,
            cons: r.u32(),
            wqes,
            posted: 0,
            completed: 0,
            to_peer: VecDeque::new(),
            to_req: VecDeque::new(),
            peer: Peer::new(epsn, seg, r.pick(&[0, 0, 1, 4])),
            seg,
            loss: r.pick(&[0, 1, 4, 12]),
            retry_cnt,
            rnr_retry,
            max_rd_atomic: r.pick(&[0, 1, 2, 16]),
            rnr_wait: false,
            chaos,
            ended: false,
            out: Vec::new(),
        }
    }

    /// One random event.
    fn step(&mut self, r: &mut Rng) {
        match r.below(20) {
            0..=2 if self.posted < self.wqes.len() => self.posted += 1,
            3..=7 => {
                self.requester();
            }
            8..=11 => self.deliver_request(r),
            12..=15 => self.deliver_response(r),
            16 if r.chance(1, 4) => self.timer(),
            17 if self.rnr_wait => self.rnr_wait = false,
            18 => self.spoof(r),
            19 if self.chaos => self.inject(r),
            _ => {}
        }
    }

    /// Without loss: posts, sends and delivers what there is; false when
    /// nothing moved (a timer is due).
    fn settle(&mut self, r: &mut Rng) -> bool {
        self.rnr_wait = false;
        if self.posted < self.wqes.len() {
            self.posted += 1;
            return true;
        }
        if !self.to_req.is_empty() {
            self.deliver_response(r);
            return true;
        }
        if !self.to_peer.is_empty() {
            self.deliver_request(r);
            return true;
        }
        self.requester()
    }

    fn lost(&self, r: &mut Rng) -> bool {
        self.loss > 0 && r.chance(self.loss, 64)
    }

    fn deliver_request(&mut self, r: &mut Rng) {
        let Some(p) = self.to_peer.pop_front() else {
            return;
        };
        if self.lost(r) {
            return;
        }
        let bad = self.wqes[p.wr as usize].bad;
        self.out.clear();
        self.peer.receive(r, p, bad, &mut self.out);
        self.to_req.extend(self.out.iter().copied());
    }

    fn deliver_response(&mut self, r: &mut Rng) {
        let Some(p) = self.to_req.pop_front() else {
            return;
        };
        if self.lost(r) {
            return;
        }
        self.completer(p);
    }

    /// The requester's next move (`requester::prepare`): take a WQE, pass
    /// a finished one, run a local one, or send a packet. False when it
    /// waits.
    fn requester(&mut self) -> bool {
        if self.rnr_wait || self.ended {
            return false;
        }
        let k = self.w.next;
        let i = self.w.slot_of(self.cons, k);
        if k == self.w.taken {
            let idx = self.completed + k as usize;
            if self.w.full() || idx >= self.posted {
                return false;
            }
            let f = flight(&self.wqes[idx], idx as u64, self.w.psn, self.seg);
            self.w.take(i, f);
        }
        let f = self.w.flights[i].unwrap();
        if f.state == FState::Done {
            self.w.pass_finished(&f);
            self.complete();
            return true;
        }
        if f.local() {
            if k != 0 {
                self.w.stalled = true;
                return false;
            }
            self.w.finish(i, status::SUCCESS);
            self.w.next += 1;
            self.complete();
            return true;
        }
        if self.w.must_wait(&f, self.max_rd_atomic) || self.w.window_full(self.cons) {
            self.w.stalled = true;
            return false;
        }
        let (psn, plen, pos, ack_req) = if f.segmented() {
            let mtu = u64::from(f.seg.max(1));
            let idx = (self.w.off / mtu) as u32;
            let pos = Pos::of(idx, f.npkts);
            let ack_req = pos.ends() || (idx + 1).is_multiple_of(ACK_EVERY);
            let plen = (f.len - self.w.off).min(mtu);
            (psn_add(f.first_psn, idx), plen, pos, ack_req)
        } else {
            // A READ asks for what it still lacks (`requester::request`).
            (f.next_response_psn(), 0, Pos::Only, true)
        };
        self.w.sent(i, f, psn, plen, pos.ends());
        let done = (f.got / u64::from(f.seg.max(1))) as u32;
        self.to_peer.push_back(Req {
            wr: f.w.wr_id,
            psn,
            op: f.w.opcode,
            pos,
            ack_req,
            len: f.len - f.got,
            npkts: f.npkts - done,
        });
        true
    }

    /// The completer (`completer::take`) on response `p`.
    fn completer(&mut self, p: Resp) {
        if self.ended {
            return;
        }
        let t = self.w.take_response(self.cons, p.opcode, p.psn, p.syn);
        let mut progressed = t.progressed;
        match t.action {
            Action::None | Action::Failed { .. } => {}
            Action::Rnr { k, .. } => {
                if self.w.retry(self.cons, k, true, self.rnr_retry) {
                    self.rnr_wait = true;
                }
            }
            Action::Seq { k } => {
                if self.w.retry(self.cons, k, false, self.retry_cnt) {
                    self.w.resume_at(self.cons, k, p.psn);
                }
            }
            Action::Lost { k } => {
                self.w.retry(self.cons, k, false, self.retry_cnt);
            }
            Action::AtomicAck { i } => {
                let mut f = self.w.flights[i].unwrap();
                if f.state == FState::Sent
                    && matches!(f.w.opcode, Opcode::CmpSwap | Opcode::FetchAdd)
                    && f.first_psn == p.psn
                {
                    f.wc.byte_len = 8;
                    f.finish(status::SUCCESS);
                    self.w.flights[i] = Some(f);
                    progressed = true;
                }
            }
            Action::ReadResp { i, pos } => {
                let mut f = self.w.flights[i].unwrap();
                if f.state == FState::Sent {
                    let st = match f.check_response(p.psn, pos, p.n) {
                        Response::Ignore => None,
                        Response::Finish(st) => Some(st),
                        Response::Data { last } => {
                            f.got += p.n;
                            last.then_some(status::SUCCESS)
                        }
                    };
                    if let Some(st) = st {
                        f.finish(st);
                        f.wc.byte_len = f.len as u32;
                    }
                    self.w.flights[i] = Some(f);
                    progressed |= st.is_some() || f.got > 0;
                }
            }
        }
        if progressed {
            self.w.retry_left = self.retry_cnt;
        }
        self.complete();
    }

    /// The retransmit timer fires (`timer::tick`).
    fn timer(&mut self) {
        if self.ended {
            return;
        }
        let Some(k) = self.w.oldest_outstanding(self.cons) else {
            return;
        };
        if self.w.retry(self.cons, k, false, self.retry_cnt) {
            if let Some(x) = self.w.acked {
                self.w.resume_at(self.cons, k, psn_add(x, 1));
            }
        } else {
            self.complete();
        }
    }

    /// Retires finished WQEs in order (`complete_ready`); an error ends
    /// the QP.
    fn complete(&mut self) {
        while let Some(f) = self.w.retire(self.cons) {
            self.cons = self.cons.wrapping_add(1);
            let idx = self.completed;
            self.completed += 1;
            assert_eq!(f.wc.wr_id, idx as u64, "completions in order");
            let p = self.wqes[idx];
            if f.wc.status != status::SUCCESS {
                if !self.chaos {
                    let want = p.failed.or(p.bad.map(nak_status));
                    assert_eq!(Some(f.wc.status), want, "WQE {idx} {p:?}");
                    assert!(self.wqes[..idx]
                        .iter()
                        .all(|q| q.bad.is_none() && q.failed.is_none()));
                }
                self.ended = true;
                self.w.reset();
                return;
            }
            assert!(
                self.chaos || (p.bad.is_none() && p.failed.is_none()),
                "WQE {idx} {p:?}"
            );
            match p.op {
                Opcode::LocalInv => {}
                Opcode::CmpSwap | Opcode::FetchAdd => assert_eq!(f.wc.byte_len, 8),
                Opcode::RdmaRead if !self.chaos => {
                    assert_eq!((f.got, f.wc.byte_len), (p.len, p.len as u32));
                }
                _ => assert_eq!(f.wc.byte_len, p.len as u32),
            }
        }
    }

    /// A response at a PSN not outstanding, of any kind: nothing changes.
    fn spoof(&mut self, r: &mut Rng) {
        if self.ended {
            return;
        }
        let span = match self.w.oldest_outstanding(self.cons) {
            Some(o) => {
                let f = self.w.flights[self.w.slot_of(self.cons, o)].unwrap();
                psn_sub(self.w.psn, f.first_psn)
            }
            None => 0,
        };
        let outside = r.below((1 << 24) - u64::from(span)) as u32;
        let psn = psn_add(self.w.psn, outside);
        let p = random_resp(r, psn);
        let before = snapshot(&self.w);
        let t = self.w.take_response(self.cons, p.opcode, p.psn, p.syn);
        let none = Taken {
            progressed: false,
            action: Action::None,
        };
        assert_eq!(
            t, none,
            "{p:?} outside {span} PSNs from the oldest outstanding"
        );
        assert!(snapshot(&self.w) == before, "{p:?} changed the window");
    }

    /// Chaos: any response, often at a PSN in flight.
    fn inject(&mut self, r: &mut Rng) {
        let psn = if r.chance(3, 4) {
            psn_add(
                self.w.psn,
                (r.below(MAX_UNACKED as u64 + 4) as u32).wrapping_neg(),
            )
        } else {
            r.psn()
        };
        let p = random_resp(r, psn);
        self.completer(p);
    }

    /// The window's invariants.
    fn check(&self) {
        let w = &self.w;
        assert!(w.taken <= w.mask && w.next <= w.taken);
        assert!(w.off == 0 || w.next < w.taken);
        if self.ended {
            assert!(w.taken == 0 && w.flights.iter().all(Option::is_none));
            return;
        }
        for k in 0..=w.mask {
            let i = w.slot_of(self.cons, k);
            assert_eq!(w.flights[i].is_some(), k < w.taken, "slot of WQE {k}");
        }
        let mut counted = 0;
        let mut prev: Option<Flight> = None;
        for k in 0..w.taken {
            let f = w.flights[w.slot_of(self.cons, k)].unwrap();
            assert_eq!(f.wc.wr_id, (self.completed + k as usize) as u64);
            if f.counted {
                counted += 1;
                assert!(f.rd_atomic() && f.state != FState::Pending);
            }
            match f.state {
                FState::Sent => assert!(k < w.next, "WQE {k} sent, next {}", w.next),
                FState::Pending => assert!(k >= w.next, "WQE {k} pending, next {}", w.next),
                FState::Done => {}
            }
            assert!(f.got <= f.len);
            if let Some(p) = prev {
                assert_eq!(f.first_psn, psn_add(p.first_psn, p.npkts), "WQE {k}'s PSNs");
            }
            prev = Some(f);
        }
        assert_eq!(counted, w.rd_atomic);
        // Where sending stands.
        if w.next < w.taken {
            let f = w.flights[w.slot_of(self.cons, w.next)].unwrap();
            let at = (w.off / u64::from(f.seg.max(1))) as u32;
            assert!(w.off == 0 || (f.segmented() && w.off < f.len));
            assert_eq!(w.psn, psn_add(f.first_psn, at));
        } else if let Some(p) = prev {
            assert_eq!(w.psn, psn_add(p.first_psn, p.npkts));
        }
        // The next PSN is never behind the oldest outstanding WQE (at it
        // only when a rewind took it back there), nor (bar a READ's
        // responses, which it reserves at once) more than MAX_UNACKED PSNs
        // past the window's base.
        if let Some(o) = w.oldest_outstanding(self.cons) {
            let f = w.flights[w.slot_of(self.cons, o)].unwrap();
            let ahead = psn_diff(w.psn, f.first_psn);
            assert!(
                ahead > 0 || (ahead == 0 && w.high.is_some()),
                "psn {:#x}, oldest outstanding {f:?}",
                w.psn
            );
            let reads = (o..w.next.min(w.taken))
                .map(|k| w.flights[w.slot_of(self.cons, k)].unwrap())
                .filter(|f| f.w.opcode == Opcode::RdmaRead)
                .map(|f| f.npkts as i32)
                .sum::<i32>();
            let mut base = f.first_psn;
            if let Some(x) = w.acked {
                if psn_diff(x, base) >= 0 && psn_diff(x, f.last_psn()) <= 0 {
                    base = psn_add(x, 1);
                }
            }
            let out = psn_diff(w.psn, base);
            if !self.chaos {
                assert!(out <= MAX_UNACKED as i32 + reads, "{out} PSNs out");
            }
        }
    }
}

/// What a window holds, to compare.
fn snapshot(w: &Win) -> Vec<u64> {
    let mut v = vec![
        u64::from(w.taken),
        u64::from(w.next),
        w.off,
        u64::from(w.psn),
        u64::from(w.rd_atomic),
        w.acked.map_or(u64::MAX, u64::from),
        u64::from(w.retry_left),
        u64::from(w.rnr_left),
    ];
    for f in w.flights.iter() {
        match f {
            None => v.push(u64::MAX),
            Some(f) => v.extend([
                f.state as u64,
                u64::from(f.wc.status),
                u64::from(f.wc.byte_len),
                f.got,
                u64::from(f.counted),
                u64::from(f.first_psn),
            ]),
        }
    }
    v
}

fn random_resp(r: &mut Rng, psn: u32) -> Resp {
    let opcode = r.pick(&[
        op::ACK,
        op::ACK,
        op::ACK,
        op::ATOMIC_ACK,
        op::READ_RESP_FIRST,
        op::READ_RESP_MIDDLE,
        op::READ_RESP_LAST,
        op::READ_RESP_ONLY,
    ]);
    let syn = match r.below(4) {
        0 => Syndrome::Rnr(r.u8() & 0x1f),
        1 => Syndrome::Nak(r.pick(&[
            Nak::Seq,
            Nak::InvReq,
            Nak::RemAccess,
            Nak::RemOp,
            Nak::InvRdReq,
        ])),
        _ => Syndrome::Ack,
    };
    Resp {
        opcode,
        psn,
        syn,
        n: r.pick(&[0, 1, 256, 1024, 4096, 5000]),
    }
}

/// A WQE to post.
fn posted(r: &mut Rng, seg: u32, chaos: bool) -> Posted {
    let seg = u64::from(seg);
    let op = r.pick(&[
        Opcode::Send,
        Opcode::Send,
        Opcode::SendImm,
        Opcode::RdmaWrite,
        Opcode::RdmaWrite,
        Opcode::RdmaRead,
        Opcode::RdmaRead,
        Opcode::CmpSwap,
        Opcode::FetchAdd,
        Opcode::AtomicWrite,
        Opcode::Flush,
        Opcode::LocalInv,
    ]);
    let len = match op {
        Opcode::Send | Opcode::SendImm | Opcode::RdmaWrite | Opcode::RdmaRead => {
            match r.below(16) {
                0 => 0,
                1 => seg * r.range(1, 3),
                2 => r.below(seg * 200),
                _ => r.below(seg * 4),
            }
        }
        _ => 0,
    };
    let rare = if chaos { 8 } else { 256 };
    let bad = (op != Opcode::LocalInv && r.chance(1, rare))
        .then(|| r.pick(&[Nak::InvReq, Nak::RemAccess, Nak::RemOp]));
    let failed = match r.below(rare * 2) {
        0 => Some(status::LOC_QP_OP_ERR),
        // A message over the maximum finishes at once.
        1 if op == Opcode::Send => Some(status::LOC_LEN_ERR),
        _ => None,
    };
    let len = if failed == Some(status::LOC_LEN_ERR) {
        wqe::MAX_MSG + 1 + r.below(1 << 20)
    } else {
        len
    };
    Posted {
        op,
        len,
        flags: r.u32() & (wqe::SEND_FENCE | wqe::SEND_SIGNALED),
        bad: if failed.is_some() { None } else { bad },
        failed,
    }
}

/// The flight the requester takes for WQE number `wr` at PSN `psn`.
fn flight(p: &Posted, wr: u64, psn: u32, seg: u32) -> Flight {
    let wc = Wc {
        wr_id: wr,
        ..Default::default()
    };
    if p.failed == Some(status::LOC_QP_OP_ERR) {
        return Flight::failed(
            Wc {
                status: status::LOC_QP_OP_ERR,
                ..wc
            },
            psn,
            seg,
        );
    }
    let w = SendWqe {
        wr_id: wr,
        opcode: p.op,
        send_flags: p.flags,
        ex: 0,
        detail: WrDetail::None,
        payload: Payload::Sges {
            n: u32::from(p.len > 0),
            length: p.len,
        },
        xrc_srqn: None,
    };
    Flight::new(w, wc, psn, seg)
}
