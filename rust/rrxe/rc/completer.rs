// SPDX-License-Identifier: GPL-2.0

//! The RC completer: takes ACKs, NAKs, read responses and atomic ACKs for
//! the requester's WQEs, finishes them, and rewinds or waits on sequence
//! NAKs and RNR NAKs, and on a response that shows an earlier one lost.

use super::{
    complete_ready, settle,
    timer::{arm, restart, rnr_wait},
    RcPkt, ReqState,
};
use crate::ib::{device::Device, qp::QpType, umem::Fault};
use crate::logic::{
    access,
    acks::Action,
    cqe::status,
    flights::{FState, Flight, Response},
    mtu::mtu_bytes,
    qp::{QpAttrs, QpState},
    rc::{self, Syndrome},
    uc::Pos,
    wqe::{self, Opcode, Payload},
};
use crate::rrxe::stats::Counter;
use crate::rrxe::{
    debug::Site,
    device::{Rrxe, RrxeDev},
    mr,
    qp::QpShared,
    sge::scatter_sges,
};
use crate::rrxe_dbg;
use kernel::{prelude::*, sync::Arc};

/// What a response did to the requester.
#[derive(Default)]
struct Effect {
    /// A WQE finished or moved on: the retransmit timer restarts.
    progressed: bool,
    /// The requester was rewound to send again.
    rewound: bool,
}

/// Takes an ACK, NAK, read response or atomic ACK for QP `s`.
pub fn completer(dev: &Device<Rrxe>, s: &Arc<QpShared>, p: &RcPkt<'_>) {
    let d = dev.data();
    let refuse = |c, site, why: &str| super::dropped(d, s, p, c, site, why);
    if s.ty != QpType::Rc {
        refuse(Counter::RcvdUnknownQp, Site::DropQp, "not an RC QP");
        return;
    }
    let kick = {
        let mut rc = s.rc.req.lock();
        if s.is_dead() {
            refuse(Counter::RcvdUnknownQp, Site::DropQp, "QP destroyed");
            return;
        }
        // The ring's lock only for the attributes and the consumer index
        // (which only `complete_ready` moves while the QP is not in ERR):
        // the scatter of read data and the atomic result happen under `req`
        // alone.
        let (a, cons) = {
            let g = s.inner.lock();
            (g.attrs, g.sq.consumer())
        };
        if !matches!(a.state, QpState::Rts | QpState::Sqd | QpState::Sqe) {
            refuse(Counter::RcvdUnknownQp, Site::DropQp, "QP not sending");
            return;
        }
        if p.sgid != a.av.dgid || p.dgid != a.av.sgid {
            refuse(
                Counter::RcvdUnknownQp,
                Site::DropQp,
                "not from the QP's peer",
            );
            return;
        }
        let syn = p
            .aeth
            .map(|x| Syndrome::parse(x.syndrome))
            .unwrap_or(Some(Syndrome::Ack));
        let Some(syn) = syn else {
            refuse(Counter::RcvdHdrErr, Site::DropHdr, "reserved AETH syndrome");
            return;
        };
        if !rc.win.outstanding_psn(cons, p.psn) {
            refuse(
                Counter::RcvdPsnErr,
                Site::DropPsn,
                "response to no outstanding request",
            );
        }
        let e = take(dev.data(), s, &mut rc, &a, cons, p, syn);
        if e.progressed {
            rc.win.retry_left = a.retry_cnt;
            rc.backoff.on_progress();
            // Not what was under way while it waits for memory (the rest
            // of an answer it could not place).
            if !e.rewound && rc.rnr_until.is_none() {
                rc.memory_came();
            }
            restart(&mut rc, &a);
        }
        complete_ready(dev.data(), s, &mut rc, &mut s.inner.lock());
        let kick = (e.rewound && rc.rnr_until.is_none())
            || ((e.progressed || e.rewound) && rc.win.stalled);
        if kick {
            rc.win.stalled = false;
        }
        arm(s, &mut rc);
        kick
    };
    settle(s);
    // A response from the wire is handled in the receive worker, which
    // runs the requester at once; a local one comes from inside a QP's
    // send processing (maybe this QP's own), which must not be reentered.
    if kick && p.local {
        s.kick();
    } else if kick {
        s.run_task(dev);
    }
}

/// Applies response `p`, with syndrome `syn`, to the requester's window
/// (consumer index `cons`).
fn take(
    d: &RrxeDev,
    s: &QpShared,
    rc: &mut ReqState,
    a: &QpAttrs,
    cons: u32,
    p: &RcPkt<'_>,
    syn: Syndrome,
) -> Effect {
    let before = rc.win.acked;
    let t = rc.win.take_response(cons, p.opcode, p.psn, syn);
    // The packets this acknowledgement newly covers let the gate grow.
    if let (Some(b), Some(now)) = (before, rc.win.acked) {
        if let Ok(n) = u64::try_from(rc::psn_diff(now, b)) {
            rc.gate
                .acked(n.saturating_mul(mtu_bytes(a.path_mtu) as u64));
        }
    }
    let mut e = Effect {
        progressed: t.progressed,
        rewound: false,
    };
    let qpn = s.qpn;
    match t.action {
        Action::None => {}
        Action::Failed { .. } => {
            rrxe_dbg!(
                d,
                Site::NakRcvd,
                "qp {qpn:#x}: error NAK for psn {:#x}",
                p.psn
            );
        }
        Action::Rnr { k, code } => {
            d.count(Counter::RcvRnr, 1);
            rrxe_dbg!(
                d,
                Site::NakRcvd,
                "qp {qpn:#x}: RNR NAK for psn {:#x}",
                p.psn
            );
            rrxe_dbg!(
                d,
                Site::Rnr,
                "qp {qpn:#x}: RNR NAK received for psn {:#x}, waiting {} us",
                p.psn,
                rc::rnr_wait_us(code)
            );
            if rc.retry(cons, k, true, a.rnr_retry) {
                e.rewound = true;
                rnr_wait(rc, rc::rnr_wait_us(code));
            } else {
                d.count(Counter::RnrRetryExceeded, 1);
            }
        }
        Action::Seq { k } => {
            d.count(Counter::RcvSeqErr, 1);
            rrxe_dbg!(
                d,
                Site::NakRcvd,
                "qp {qpn:#x}: sequence NAK for psn {:#x}",
                p.psn
            );
            rc.gate.lost();
            if rc.retry(cons, k, false, a.retry_cnt) {
                rc.win.resume_at(cons, k, p.psn);
                rrxe_dbg!(
                    d,
                    Site::Retry,
                    "qp {qpn:#x}: sequence NAK, resending from psn {:#x}",
                    p.psn
                );
                e.rewound = true;
            } else {
                d.count(Counter::RetryExceeded, 1);
            }
        }
        Action::Lost { k } => {
            // As rxe counts the retries its completer starts.
            d.count(Counter::CompRetry, 1);
            if rc.retry(cons, k, false, a.retry_cnt) {
                rrxe_dbg!(
                    d,
                    Site::Retry,
                    "qp {qpn:#x}: response psn {:#x} shows one lost, resending",
                    p.psn
                );
                e.rewound = true;
            } else {
                d.count(Counter::RetryExceeded, 1);
            }
        }
        Action::AtomicAck { i } => {
            if let Some(orig) = p.atmack {
                match atomic_ack(d, s, rc, i, p.psn, orig) {
                    Ok(progressed) => e.progressed |= progressed,
                    Err(_) => e.rewound |= not_resident(d, s, rc, cons, i),
                }
            }
        }
        Action::ReadResp { i, pos } => match read_response(d, s, rc, i, p, pos) {
            Ok(progressed) => e.progressed |= progressed,
            Err(_) => e.rewound |= not_resident(d, s, rc, cons, i),
        },
    }
    e
}

/// The flight in slot `i` could not place what its response brought: its
/// on-demand memory is not resident. It is asked for again after a wait
/// (see [`ReqState::wait_for_memory`]). Returns true (the requester was
/// rewound).
fn not_resident(d: &RrxeDev, s: &QpShared, rc: &mut ReqState, cons: u32, i: usize) -> bool {
    d.count(Counter::OdpFaultDeferred, 1);
    rrxe_dbg!(
        d,
        Site::OdpFault,
        "qp {:#x}: response memory not resident, asking again",
        s.qpn
    );
    let k = rc.win.index_of(cons, i);
    rc.wait_for_memory(cons, k, None);
    true
}

/// An atomic ACK for the flight in slot `i`: the original value goes to
/// the WQE's first SGE and the WQE finishes. Returns whether it did, or
/// `EAGAIN` when the SGE's on-demand memory is not resident (the receive
/// path does not wait for a page fault).
fn atomic_ack(
    d: &RrxeDev,
    s: &QpShared,
    rc: &mut ReqState,
    i: usize,
    psn: u32,
    orig: u64,
) -> Result<bool> {
    let Some(mut f) = rc.win.flights[i] else {
        return Ok(false);
    };
    if f.state != FState::Sent
        || !matches!(f.w.opcode, Opcode::CmpSwap | Opcode::FetchAdd)
        || f.first_psn != psn
    {
        return Ok(false);
    }
    let st = match wqe::sge_at(rc.shadow(i), wqe::SEND_HDR, 0) {
        Some(sge) if sge.length >= 8 => {
            match mr::lookup_mr(d, sge.lkey, s.pd, access::LOCAL_WRITE, sge.addr, 8)
                .and_then(|m| m.write(sge.addr, &orig.to_ne_bytes(), Fault::NoWait))
            {
                Ok(()) => status::SUCCESS,
                Err(e) if e == EAGAIN => return Err(e),
                Err(_) => status::LOC_PROT_ERR,
            }
        }
        _ => status::LOC_PROT_ERR,
    };
    f.wc.byte_len = 8;
    f.finish(st);
    rc.win.flights[i] = Some(f);
    Ok(true)
}

/// One read response packet (or the empty one that answers ATOMIC WRITE
/// and FLUSH) for the flight in slot `i`. Out-of-order packets are
/// ignored. Returns whether it made progress, or `EAGAIN` when its data
/// could not be placed (see [`read_data`]).
fn read_response(
    d: &RrxeDev,
    s: &QpShared,
    rc: &mut ReqState,
    i: usize,
    p: &RcPkt<'_>,
    pos: Pos,
) -> Result<bool> {
    let Some(mut f) = rc.win.flights[i] else {
        return Ok(false);
    };
    if f.state != FState::Sent {
        return Ok(false);
    }
    let st = read_data(d, s, rc.shadow(i), &mut f, p, pos)?;
    if let Some(st) = st {
        f.finish(st);
        f.wc.byte_len = f.len as u32;
    }
    rc.win.flights[i] = Some(f);
    Ok(st.is_some() || f.got > 0)
}

/// Takes a read response's payload for flight `f`, whose WQE is in
/// `slot`: `Some(status)` once the WQE is finished, `None` while more is
/// due, `EAGAIN` (and `f` unchanged) when the destination's on-demand
/// memory is not resident: the receive path does not wait for a page
/// fault.
fn read_data(
    d: &RrxeDev,
    s: &QpShared,
    slot: &[u8],
    f: &mut Flight,
    p: &RcPkt<'_>,
    pos: Pos,
) -> Result<Option<u32>> {
    let n = p.payload.len() as u64;
    let last = match f.check_response(p.psn, pos, n) {
        Response::Ignore => return Ok(None),
        Response::Finish(st) => return Ok(Some(st)),
        Response::Data { last } => last,
    };
    let nsge = match f.w.payload {
        Payload::Sges { n, .. } => n,
        Payload::Inline { .. } => return Ok(Some(status::LOC_PROT_ERR)),
    };
    if n > 0 {
        match scatter_sges(
            d,
            s.pd,
            slot,
            wqe::SEND_HDR,
            nsge,
            f.got,
            p.payload,
            Fault::NoWait,
        ) {
            Ok(()) => {}
            Err(e) if e == EAGAIN => return Err(e),
            Err(_) => return Ok(Some(status::LOC_PROT_ERR)),
        }
    }
    f.got += n;
    Ok(last.then_some(status::SUCCESS))
}
