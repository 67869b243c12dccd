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

/// Takes an ACK, NAK, read response or atomic ACK for QP `qp`.
pub fn completer(dev: &Device<Rrxe>, qp: &Arc<QpShared>, pkt: &RcPkt<'_>) {
    let d = dev.data();
    let refuse = |c, site, why: &str| super::dropped(d, qp, pkt, c, site, why);
    // RC's responses to an RC QP, XRC's to an XRC initiator QP.
    match (qp.ty, pkt.xrc_response) {
        (QpType::Rc, false) | (QpType::XrcIni, true) => {}
        (QpType::Rc | QpType::XrcIni, _) => {
            refuse(
                Counter::RcvdHdrErr,
                Site::DropHdr,
                "response of another transport than the QP's",
            );
            return;
        }
        _ => {
            refuse(
                Counter::RcvdUnknownQp,
                Site::DropQp,
                "not a requester of RC",
            );
            return;
        }
    }
    let kick = {
        let mut rc = qp.rc.req.lock();
        if qp.is_dead() {
            refuse(Counter::RcvdUnknownQp, Site::DropQp, "QP destroyed");
            return;
        }
        // The ring's lock only for the attributes and the consumer index
        // (which only `complete_ready` moves while the QP is not in ERR):
        // the scatter of read data and the atomic result happen under `req`
        // alone.
        let (a, cons) = {
            let g = qp.inner.lock();
            (g.attrs, g.sq.consumer())
        };
        if !matches!(a.state, QpState::Rts | QpState::Sqd | QpState::Sqe) {
            refuse(Counter::RcvdUnknownQp, Site::DropQp, "QP not sending");
            return;
        }
        if pkt.sgid != a.av.dgid || pkt.dgid != a.av.sgid {
            refuse(
                Counter::RcvdUnknownQp,
                Site::DropQp,
                "not from the QP's peer",
            );
            return;
        }
        let syn = pkt
            .aeth
            .map(|x| Syndrome::parse(x.syndrome))
            .unwrap_or(Some(Syndrome::Ack));
        let Some(syn) = syn else {
            refuse(Counter::RcvdHdrErr, Site::DropHdr, "reserved AETH syndrome");
            return;
        };
        if !rc.win.outstanding_psn(cons, pkt.psn) {
            refuse(
                Counter::RcvdPsnErr,
                Site::DropPsn,
                "response to no outstanding request",
            );
        }
        let e = take(dev.data(), qp, &mut rc, &a, cons, pkt, syn);
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
        complete_ready(dev.data(), qp, &mut rc, &mut qp.inner.lock());
        let kick = (e.rewound && rc.rnr_until.is_none())
            || ((e.progressed || e.rewound) && rc.win.stalled);
        if kick {
            rc.win.stalled = false;
        }
        arm(qp, &mut rc);
        kick
    };
    settle(qp);
    // The receive path only moves the window: the requester goes on in the
    // QP's send task, never inside the receive path (which a local
    // response reaches from inside a QP's send processing, maybe this
    // QP's own).
    if kick {
        qp.kick();
    }
}

/// Applies response `pkt`, with syndrome `syn`, to the requester's window
/// (consumer index `cons`).
fn take(
    dev: &RrxeDev,
    qp: &QpShared,
    rc: &mut ReqState,
    attrs: &QpAttrs,
    cons: u32,
    pkt: &RcPkt<'_>,
    syn: Syndrome,
) -> Effect {
    let before = rc.win.acked;
    let t = rc.win.take_response(cons, pkt.opcode, pkt.psn, syn);
    // The packets this acknowledgement newly covers let the gate grow.
    if let (Some(b), Some(now)) = (before, rc.win.acked) {
        if let Ok(n) = u64::try_from(rc::psn_diff(now, b)) {
            rc.gate
                .acked(n.saturating_mul(mtu_bytes(attrs.path_mtu) as u64));
        }
    }
    let mut e = Effect {
        progressed: t.progressed,
        rewound: false,
    };
    let qpn = qp.qpn;
    match t.action {
        Action::None => {}
        Action::Failed { .. } => {
            rrxe_dbg!(
                dev,
                Site::NakRcvd,
                "qp {qpn:#x}: error NAK for psn {:#x}",
                pkt.psn
            );
        }
        Action::Rnr { k, code } => {
            dev.count(Counter::RcvRnr, 1);
            rrxe_dbg!(
                dev,
                Site::NakRcvd,
                "qp {qpn:#x}: RNR NAK for psn {:#x}",
                pkt.psn
            );
            rrxe_dbg!(
                dev,
                Site::Rnr,
                "qp {qpn:#x}: RNR NAK received for psn {:#x}, waiting {} us",
                pkt.psn,
                rc::rnr_wait_us(code)
            );
            if rc.retry(cons, k, true, attrs.rnr_retry) {
                e.rewound = true;
                rnr_wait(rc, rc::rnr_wait_us(code));
            } else {
                dev.count(Counter::RnrRetryExceeded, 1);
            }
        }
        Action::Seq { k } => {
            dev.count(Counter::RcvSeqErr, 1);
            rrxe_dbg!(
                dev,
                Site::NakRcvd,
                "qp {qpn:#x}: sequence NAK for psn {:#x}",
                pkt.psn
            );
            rc.gate.lost();
            if rc.retry(cons, k, false, attrs.retry_cnt) {
                rc.win.resume_at(cons, k, pkt.psn);
                rrxe_dbg!(
                    dev,
                    Site::Retry,
                    "qp {qpn:#x}: sequence NAK, resending from psn {:#x}",
                    pkt.psn
                );
                e.rewound = true;
            } else {
                dev.count(Counter::RetryExceeded, 1);
            }
        }
        Action::Lost { k } => {
            // As rxe counts the retries its completer starts.
            dev.count(Counter::CompRetry, 1);
            if rc.retry(cons, k, false, attrs.retry_cnt) {
                rrxe_dbg!(
                    dev,
                    Site::Retry,
                    "qp {qpn:#x}: response psn {:#x} shows one lost, resending",
                    pkt.psn
                );
                e.rewound = true;
            } else {
                dev.count(Counter::RetryExceeded, 1);
            }
        }
        Action::AtomicAck { i } => {
            if let Some(orig) = pkt.atmack {
                match atomic_ack(dev, qp, rc, i, pkt.psn, orig) {
                    Ok(progressed) => e.progressed |= progressed,
                    Err(_) => e.rewound |= not_resident(dev, qp, rc, cons, i),
                }
            }
        }
        Action::ReadResp { i, pos } => match read_response(dev, qp, rc, i, pkt, pos) {
            Ok(progressed) => e.progressed |= progressed,
            Err(_) => e.rewound |= not_resident(dev, qp, rc, cons, i),
        },
    }
    e
}

/// The flight in slot `index` could not place what its response brought: its
/// on-demand memory is not resident. It is asked for again after a wait
/// (see [`ReqState::wait_for_memory`]). Returns true (the requester was
/// rewound).
fn not_resident(dev: &RrxeDev, qp: &QpShared, rc: &mut ReqState, cons: u32, index: usize) -> bool {
    dev.count(Counter::OdpFaultDeferred, 1);
    rrxe_dbg!(
        dev,
        Site::OdpFault,
        "qp {:#x}: response memory not resident, asking again",
        qp.qpn
    );
    let k = rc.win.index_of(cons, index);
    rc.wait_for_memory(cons, k, None);
    true
}

/// An atomic ACK for the flight in slot `index`: the original value goes to
/// the WQE's first SGE and the WQE finishes. Returns whether it did, or
/// `EAGAIN` when the SGE's on-demand memory is not resident (the receive
/// path does not wait for a page fault).
fn atomic_ack(
    dev: &RrxeDev,
    qp: &QpShared,
    rc: &mut ReqState,
    index: usize,
    psn: u32,
    orig: u64,
) -> Result<bool> {
    let Some(mut f) = rc.win.flights[index] else {
        return Ok(false);
    };
    if f.state != FState::Sent
        || !matches!(f.w.opcode, Opcode::CmpSwap | Opcode::FetchAdd)
        || f.first_psn != psn
    {
        return Ok(false);
    }
    let st = match wqe::sge_at(rc.shadow(index), wqe::SEND_HDR, 0) {
        Some(sge) if sge.length >= 8 => {
            match mr::lookup_mr(dev, sge.lkey, qp.pd, access::LOCAL_WRITE, sge.addr, 8)
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
    rc.win.flights[index] = Some(f);
    Ok(true)
}

/// One read response packet (or the empty one that answers ATOMIC WRITE
/// and FLUSH) for the flight in slot `index`. Out-of-order packets are
/// ignored. Returns whether it made progress, or `EAGAIN` when its data
/// could not be placed (see [`read_data`]).
fn read_response(
    dev: &RrxeDev,
    qp: &QpShared,
    rc: &mut ReqState,
    index: usize,
    pkt: &RcPkt<'_>,
    pos: Pos,
) -> Result<bool> {
    let Some(mut f) = rc.win.flights[index] else {
        return Ok(false);
    };
    if f.state != FState::Sent {
        return Ok(false);
    }
    let st = read_data(dev, qp, rc.shadow(index), &mut f, pkt, pos)?;
    if let Some(st) = st {
        f.finish(st);
        f.wc.byte_len = f.len as u32;
    }
    rc.win.flights[index] = Some(f);
    Ok(st.is_some() || f.got > 0)
}

/// Takes a read response's payload for `flight`, whose WQE is in
/// `slot`: `Some(status)` once the WQE is finished, `None` while more is
/// due, `EAGAIN` (and `flight` unchanged) when the destination's on-demand
/// memory is not resident: the receive path does not wait for a page
/// fault.
fn read_data(
    dev: &RrxeDev,
    qp: &QpShared,
    slot: &[u8],
    flight: &mut Flight,
    pkt: &RcPkt<'_>,
    pos: Pos,
) -> Result<Option<u32>> {
    let n = pkt.payload.len() as u64;
    let last = match flight.check_response(pkt.psn, pos, n) {
        Response::Ignore => return Ok(None),
        Response::Finish(st) => return Ok(Some(st)),
        Response::Data { last } => last,
    };
    let nsge = match flight.w.payload {
        Payload::Sges { n, .. } => n,
        Payload::Inline { .. } => return Ok(Some(status::LOC_PROT_ERR)),
    };
    if n > 0 {
        match scatter_sges(
            dev,
            qp.pd,
            slot,
            wqe::SEND_HDR,
            nsge,
            flight.got,
            pkt.payload,
            Fault::NoWait,
        ) {
            Ok(()) => {}
            Err(e) if e == EAGAIN => return Err(e),
            Err(_) => return Ok(Some(status::LOC_PROT_ERR)),
        }
    }
    flight.got += n;
    Ok(last.then_some(status::SUCCESS))
}
