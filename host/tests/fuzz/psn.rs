// SPDX-License-Identifier: GPL-2.0

//! The reliable transport's arithmetic and tables: 24-bit PSN distances,
//! AETH syndromes, the opcode tables against the header layouts, the
//! responder's sequencing (RC and UC), the retransmit backoff, and which
//! read response packets a READ takes.

use crate::rng::Rng;
use rrxe_logic::cqe::{status, Wc};
use rrxe_logic::flights::{Flight, Response};
use rrxe_logic::hdr::layout;
use rrxe_logic::rc::*;
use rrxe_logic::uc::{self, packets, psn_add, Kind, Pos, RxSeq, Verdict};
use rrxe_logic::wqe::{Opcode, Payload, SendWqe, WrDetail};

const HALF: i32 = 1 << 23;

/// One case.
pub fn case(r: &mut Rng) {
    match r.below(6) {
        0 | 1 => distances(r),
        2 => syndromes_and_opcodes(r),
        3 => rx_sequences(r),
        4 => backoff(r),
        _ => read_responses(r),
    }
    r.count();
}

/// `psn_diff` is a signed 24-bit distance: in range, inverse of
/// `psn_add`, antisymmetric (but at exactly half the space), blind to the
/// high byte, and `check_psn` follows its sign.
fn distances(r: &mut Rng) {
    let (a, b) = (r.psn(), r.psn());
    let d = psn_diff(a, b);
    assert!((-HALF..HALF).contains(&d), "{a:#x} - {b:#x} = {d}");
    assert_eq!(psn_add(b, d as u32), a);
    if d != -HALF {
        assert_eq!(psn_diff(b, a), -d);
    } else {
        assert_eq!(psn_diff(b, a), -HALF);
    }
    assert_eq!(psn_diff(a | (r.u32() << 24), b | (r.u32() << 24)), d);
    assert_eq!(psn_diff(a, a), 0);
    let want = match d {
        0 => PsnCheck::Expected,
        d if d < 0 => PsnCheck::Duplicate,
        _ => PsnCheck::Ahead,
    };
    assert_eq!(check_psn(a, b), want);
    let n = r.below(HALF as u64) as u32;
    assert_eq!(psn_diff(psn_add(a, n), a), n as i32);
    assert!(psn_add(a, r.u32()) <= 0x00ff_ffff);
    // Segmentation: packets cover the message, the last one not empty.
    let len = r.below(1 << 32);
    let mtu = r.pick(&[1, 256, 512, 1024, 2048, 4096, 1 << 20]);
    let p = packets(len, mtu);
    let mtu64 = u64::from(mtu);
    assert!(p >= 1 && p * mtu64 >= len);
    assert!(
        len == 0 || (p - 1) * mtu64 < len,
        "{len} bytes in {p} packets of {mtu}"
    );
    let i = r.below(p) as u32;
    let pos = Pos::of(i, p as u32);
    assert_eq!((pos.starts(), pos.ends()), (i == 0, u64::from(i) + 1 == p));
}

/// Every syndrome byte parses to what it encodes; the RC opcode tables
/// agree with the header layouts and with the opcode builders.
fn syndromes_and_opcodes(r: &mut Rng) {
    let b = r.u8();
    match Syndrome::parse(b) {
        Some(Syndrome::Ack) => assert_eq!(b >> 5, 0),
        Some(s) => {
            assert_eq!(s.byte(), b);
            assert_eq!(Syndrome::parse(s.byte()), Some(s));
        }
        None => assert!(matches!(b >> 5, 2 | 4..=7) || (b >> 5 == 3 && b & 0x1f > 4)),
    }
    let code = r.u8();
    assert_eq!(
        Syndrome::parse(Syndrome::Rnr(code).byte()),
        Some(Syndrome::Rnr(code & 0x1f))
    );
    let us = rnr_wait_us(code);
    match code & 0x1f {
        0 => assert_eq!(us, 655_360),
        31 => assert!(us < rnr_wait_us(0)),
        c => assert!(us < rnr_wait_us(c + 1)),
    }
    let t = r.u8();
    match ack_timeout_us(t) {
        None => assert_eq!(t, 0),
        Some(us) => assert!(t > 0 && us >= 8 && ack_timeout_us(t.saturating_add(1)) >= Some(us)),
    }

    let op = r.u8();
    let l = layout(op);
    if let Some((req, pos)) = classify_req(op) {
        let l = l.expect("every RC request has a layout");
        assert!(!is_response(op));
        let opens = pos.starts();
        match req {
            Req::Send { imm, inv } => {
                assert_eq!(send_opcode(pos, imm, inv), op);
                assert_eq!((l.immdt.is_some(), l.ieth.is_some()), (imm, inv));
                assert!(l.reth.is_none() && l.payload);
            }
            Req::Write { imm } => {
                assert_eq!(write_opcode(pos, imm), op);
                assert_eq!((l.reth.is_some(), l.immdt.is_some()), (opens, imm));
                assert!(l.payload);
            }
            Req::Read => assert!(l.reth.is_some() && !l.payload),
            Req::CmpSwap | Req::FetchAdd => assert!(l.atmeth.is_some() && !l.payload),
            Req::AtomicWrite => assert!(l.reth.is_some() && l.payload),
            Req::Flush => assert!(l.feth.is_some() && l.reth.is_some()),
        }
        assert!(l.aeth.is_none());
    }
    if is_response(op) {
        let l = l.expect("every response has a layout");
        assert!(classify_req(op).is_none());
        assert_eq!(l.aeth.is_none(), op == op::READ_RESP_MIDDLE);
        assert_eq!(l.atmack.is_some(), op == op::ATOMIC_ACK);
        if let Some(pos) = read_resp_pos(op) {
            assert_eq!(read_resp_opcode(pos), op);
        }
    }
    if let Some((k, pos, imm)) = uc::classify(op) {
        assert_eq!(uc::opcode(k, pos, imm), op);
        assert!(l.is_some() && classify_req(op).is_none());
    }
}

fn kind(r: &mut Rng) -> Kind {
    r.pick(&[Kind::Send, Kind::Write])
}

fn pos(r: &mut Rng) -> Pos {
    r.pick(&[Pos::First, Pos::Middle, Pos::Last, Pos::Only])
}

/// The UC responder over a random packet stream: it starts on every FIRST
/// and ONLY, continues only with the expected PSN inside a message of the
/// same kind, and otherwise drops and forgets the message; the RC rule of
/// `op_sequence_ok` agrees with it on what continues a message.
fn rx_sequences(r: &mut Rng) {
    let mut s = RxSeq {
        epsn: r.psn(),
        msg: None,
    };
    for _ in 0..r.range(1, 24) {
        let psn = if r.chance(3, 4) {
            s.epsn
        } else {
            psn_add(s.epsn, r.u32())
        };
        let (k, p) = (kind(r), pos(r));
        let before = s;
        let v = s.judge(psn, k, p);
        let cont = psn == before.epsn && before.msg == Some(k);
        let want = if p.starts() {
            Verdict::Start
        } else if cont {
            Verdict::Continue
        } else {
            Verdict::Drop
        };
        assert_eq!(v, want);
        if v == Verdict::Drop {
            assert_eq!(
                s,
                RxSeq {
                    msg: None,
                    ..before
                }
            );
        } else {
            assert_eq!(s.epsn, psn_add(psn, 1));
            assert_eq!(s.msg, (!p.ends()).then_some(k));
        }
        let rc_in = before.msg.map(|m| m == Kind::Send);
        assert_eq!(
            op_sequence_ok(rc_in, k == Kind::Send, p),
            match before.msg {
                Some(m) => m == k && !p.starts(),
                None => p.starts(),
            }
        );
    }
}

/// The backoff stays within its bounds under any run of expiries and
/// progress, and enough clean progress brings it back to the QP's timeout.
fn backoff(r: &mut Rng) {
    let mut b = Backoff::default();
    let t = r.range(1, 31) as u8;
    for _ in 0..r.below(200) {
        if r.chance(1, 6) {
            b.on_expiry();
        } else {
            b.on_progress();
        }
        assert!(b.shift() <= Backoff::MAX_SHIFT);
        assert_eq!(b.timeout_us(t), ack_timeout_us(t).map(|us| us << b.shift()));
    }
    for _ in 0..=(u32::from(Backoff::CLEAN) * u32::from(Backoff::MAX_SHIFT) + 1) {
        b.on_progress();
    }
    assert_eq!(b.shift(), 0);
}

/// A READ takes its response packets in order only, each of a full MTU
/// but the last, which ends it exactly; the one empty response of an
/// ATOMIC WRITE or FLUSH only at its PSN.
fn read_responses(r: &mut Rng) {
    let seg = r.pick(&[256u32, 1024, 4096]);
    let len = match r.below(3) {
        0 => r.below(u64::from(seg) * 3 + 2),
        _ => r.below(1 << 20),
    };
    let opcode = r.pick(&[
        Opcode::RdmaRead,
        Opcode::RdmaRead,
        Opcode::AtomicWrite,
        Opcode::Send,
    ]);
    let w = SendWqe {
        wr_id: 1,
        opcode,
        send_flags: 0,
        ex: 0,
        detail: WrDetail::Rdma {
            remote_addr: 0,
            rkey: 0,
        },
        payload: Payload::Sges { n: 1, length: len },
        xrc_srqn: None,
    };
    let first = r.psn();
    let mut f = Flight::new(w, Wc::default(), first, seg);
    let npkts = f.npkts;
    match opcode {
        Opcode::AtomicWrite => {
            let ok = f.check_response(first, Pos::Only, 0);
            assert_eq!(ok, Response::Finish(status::SUCCESS));
            let p = pos(r);
            let psn = psn_add(first, r.below(3) as u32);
            let n = r.below(2);
            let want = if p == Pos::Only && psn == first && n == 0 {
                Response::Finish(status::SUCCESS)
            } else {
                Response::Ignore
            };
            assert_eq!(f.check_response(psn, p, n), want);
            return;
        }
        Opcode::Send => {
            assert_eq!(
                f.check_response(first, pos(r), r.below(9000)),
                Response::Ignore
            );
            return;
        }
        _ => {}
    }
    // The responses in order, with a stray one now and then: only the
    // expected packet moves it on.
    let mut i = 0u32;
    while i < npkts {
        let expect_psn = psn_add(first, i);
        let p = Pos::of(i, npkts);
        let n = if p.ends() {
            len - u64::from(i) * u64::from(seg)
        } else {
            u64::from(seg)
        };
        if r.chance(1, 4) {
            // A stray: another PSN, position or size; the rule says what
            // it does, and it is not taken.
            let (sp, spos, sn) = match r.below(3) {
                0 => (psn_add(expect_psn, r.range(1, 0xff_fffe) as u32), p, n),
                1 => (expect_psn, pos(r), n),
                _ => (expect_psn, p, r.below(u64::from(seg) * 2)),
            };
            let last = spos.ends();
            let want = if sp != expect_psn || spos.starts() != (i == 0) {
                Response::Ignore
            } else if (!last && sn != u64::from(seg))
                || f.got + sn > len
                || (last && f.got + sn != len)
            {
                Response::Finish(status::BAD_RESP_ERR)
            } else {
                Response::Data { last }
            };
            assert_eq!(f.check_response(sp, spos, sn), want);
            continue;
        }
        assert_eq!(
            f.check_response(expect_psn, p, n),
            Response::Data { last: p.ends() }
        );
        f.got += n;
        i += 1;
    }
    assert_eq!(f.got, len);
    assert_eq!(u64::from(npkts), packets(len, seg));
}
