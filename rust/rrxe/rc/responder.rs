// SPDX-License-Identifier: GPL-2.0

//! The RC responder: checks a request's PSN, replays duplicates, has the
//! expected request executed (`execute`) and queues the reply (an ACK or
//! NAK, an atomic ACK, or read response packets) for `replies` to send.

use super::{
    enter_err,
    execute::execute,
    replies::{self, RX_BUDGET},
    state::Res,
    RcPkt, RespState,
};
use crate::ib::{device::Device, qp::QpType};
use crate::logic::{
    cqe::Wc,
    qp::QpAttrs,
    rc::{self, Nak, PsnCheck, Req, Syndrome},
    uc::psn_add,
    wqe,
};
use crate::rrxe::stats::Counter;
use crate::rrxe::{
    debug::{self, Site},
    device::{Rrxe, RrxeDev},
    net::Gid,
    pd::PdId,
    qp::QpShared,
    srq::SrqShared,
};
use crate::rrxe_dbg;
use kernel::sync::Arc;

pub(super) use crate::logic::readresp::ReadResp;

/// The responder's answer to a request, queued in order and sent once its
/// lock is dropped.
#[derive(Clone, Copy)]
pub(super) enum Reply {
    /// Nothing.
    None,
    /// An ACK or NAK for `psn`.
    Ack { psn: u32, syn: Syndrome, msn: u32 },
    /// An atomic ACK with the original value.
    Atomic { psn: u32, orig: u64, msn: u32 },
    /// An empty read response (ATOMIC WRITE, FLUSH).
    Empty { psn: u32, msn: u32 },
    /// Read response packets.
    Read(ReadResp),
}

/// Where a request's receive WQE, keys and receive completion come from.
pub(super) enum Target {
    /// The QP's own: its PD, its receive ring or SRQ, its receive CQ.
    Qp,
    /// The XRC SRQ an XRC target QP's request names (its XRCETH): that
    /// SRQ's PD, ring and CQ.
    Xrc(Arc<SrqShared>),
}

impl Target {
    /// The target of a request to `qp` naming XRC SRQ `srqn` (an XRC
    /// request) or none; `Err` with why if the request does not fit the
    /// QP: RC's to an RC QP, XRC's to an XRC target QP, naming an XRC SRQ
    /// of the QP's domain (an XRC initiator QP takes no request).
    fn of(dev: &RrxeDev, qp: &QpShared, srqn: Option<u32>) -> Result<Self, &'static str> {
        match (qp.ty, srqn) {
            (QpType::Rc, None) => Ok(Self::Qp),
            (QpType::XrcTgt, Some(n)) => dev
                .srq_pool()
                .get(n)
                .filter(|srq| matches!((&srq.xrc, qp.xrcd), (Some(x), Some(d)) if x.xrcd == d))
                .map(Self::Xrc)
                .ok_or("XRCETH names no XRC SRQ of the QP's domain"),
            (QpType::XrcTgt, None) => Err("RC request to an XRC target QP"),
            (QpType::Rc, Some(_)) => Err("XRC request to an RC QP"),
            _ => Err("request to an XRC initiator QP"),
        }
    }

    /// The PD the request's keys are looked up in.
    pub(super) fn pd(&self, qp: &QpShared) -> PdId {
        match self {
            Self::Qp => qp.pd,
            Self::Xrc(srq) => srq.pd,
        }
    }
}

/// Takes a request packet for QP `qp`.
pub fn responder(dev: &Device<Rrxe>, qp: &Arc<QpShared>, pkt: &RcPkt<'_>) {
    let d = dev.data();
    let refuse = |c, site, why: &str| super::dropped(d, qp, pkt, c, site, why);
    if !qp.reliable() {
        refuse(Counter::RcvdUnknownQp, Site::DropQp, "not an RC QP");
        return;
    }
    let target = match Target::of(d, qp, pkt.xrc_srqn) {
        Ok(t) => t,
        Err(why) => {
            refuse(Counter::RcvdHdrErr, Site::DropHdr, why);
            return;
        }
    };
    let Some((req, pos)) = rc::classify_req(pkt.opcode) else {
        refuse(Counter::RcvdHdrErr, Site::DropHdr, "not an RC request");
        return;
    };
    let pending = {
        let mut rc = qp.rc.resp.lock();
        if qp.is_dead() {
            refuse(Counter::RcvdUnknownQp, Site::DropQp, "QP destroyed");
            return;
        }
        // Read under `resp`, which a move to RESET holds while it changes the
        // state and clears the transport's: never stale state for a QP
        // being reset.
        let Some(a) = qp.responder_attrs(&pkt.sgid, &pkt.dgid) else {
            refuse(
                Counter::RcvdUnknownQp,
                Site::DropQp,
                "QP not receiving, or not from its peer",
            );
            return;
        };
        let reply = match rc::check_psn(pkt.psn, rc.epsn) {
            PsnCheck::Ahead => {
                let e = rc.epsn;
                debug::dropped(
                    d,
                    Counter::RcvdPsnErr,
                    Site::DropPsn,
                    format_args!(
                        "request psn {:#x} ahead of {e:#x}: qp {:#x} from {}",
                        pkt.psn,
                        qp.qpn,
                        Gid(&pkt.sgid)
                    ),
                );
                ahead(d, &mut rc)
            }
            PsnCheck::Duplicate => {
                d.count(Counter::DupReq, 1);
                duplicate(&mut rc, &a, pkt, req, target.pd(qp))
            }
            PsnCheck::Expected => {
                rc.nak_sent = false;
                match execute(d, qp, &target, &mut rc, &a, pkt, req, pos) {
                    Ok(r) => r,
                    Err((nak, st)) => {
                        rrxe_dbg!(
                            d,
                            Site::NakSent,
                            "qp {:#x}: {nak:?} NAK for psn {:#x}",
                            qp.qpn,
                            pkt.psn
                        );
                        rrxe_dbg!(
                            d,
                            Site::Err,
                            "qp {:#x}: request psn {:#x} failed ({nak:?}), receive status {st}, to ERR",
                            qp.qpn,
                            pkt.psn
                        );
                        fail(qp, &mut rc, pkt, nak, st)
                    }
                }
            }
        };
        // Full: dropped, as a reply lost on the wire (the requester asks
        // again, and duplicates are answered from the resources).
        if !matches!(reply, Reply::None) {
            let _ = replies::queue(&mut rc, reply);
        }
        !rc.replies.is_empty()
    };
    // A few packets now; a long read goes on from the QP's own task.
    if pending && replies::pump(dev, qp, RX_BUDGET) {
        qp.kick();
    }
}

/// A request ahead of the expected PSN: one sequence NAK per gap.
fn ahead(dev: &RrxeDev, rc: &mut RespState) -> Reply {
    if rc.nak_sent {
        return Reply::None;
    }
    rc.nak_sent = true;
    dev.count(Counter::OutOfSeqReq, 1);
    rrxe_dbg!(
        dev,
        Site::NakSent,
        "sequence NAK, expecting psn {:#x}",
        rc.epsn
    );
    Reply::Ack {
        psn: rc.epsn,
        syn: Syndrome::Nak(Nak::Seq),
        msn: rc.msn,
    }
}

/// A class A or C error: completes the receive WQE in hand with `st`, puts
/// the QP in ERR, and NAKs the request with `nak`.
fn fail(qp: &QpShared, rc: &mut RespState, pkt: &RcPkt<'_>, nak: Nak, st: u32) -> Reply {
    if let Some(h) = rc.held.take() {
        let wc = Wc {
            status: st,
            qp_num: qp.qpn,
            qp_cookie: qp.handle,
            wr_id: wqe::wr_id(&h.slot).unwrap_or(0),
            opcode: wqe::WC_RECV,
            ..Default::default()
        };
        qp.msg_wc_on(h.cq(qp), &wc, false);
    }
    let msn = rc.msn;
    to_err(qp, rc);
    Reply::Ack {
        psn: pkt.psn,
        syn: Syndrome::Nak(nak),
        msn,
    }
}

/// The receive CQ was full for the message just completed
/// ([`QpShared::recv_msg_wc`]): the QP goes to ERR and the message is not
/// acknowledged, as rxe's responder does (the requester's retries run
/// out).
pub(super) fn cq_full(dev: &RrxeDev, qp: &QpShared, rc: &mut RespState) -> Reply {
    rrxe_dbg!(
        dev,
        Site::QpState,
        "qp {:#x}: to Err (receive CQ full)",
        qp.qpn
    );
    to_err(qp, rc);
    Reply::None
}

/// Puts the QP in ERR from the responder, flushing both rings.
fn to_err(qp: &QpShared, rc: &mut RespState) {
    enter_err(qp, &mut qp.inner.lock());
    crate::rrxe::qp::flush_rest(qp);
    rc.on_error(qp);
    // The requester's part (`resp` is taken before `req`).
    qp.rc.req.lock().on_error();
}

/// Stores a responder resource, replacing the oldest.
pub(super) fn add_res(rc: &mut RespState, res: Res) {
    if rc.res.is_empty() {
        return;
    }
    let n = rc.res.len();
    rc.res[rc.res_next % n] = Some(res);
    rc.res_next = (rc.res_next + 1) % n;
}

/// A request behind the expected PSN: SENDs and WRITEs are ACKed again,
/// reads and atomics replayed from their resource; anything else dropped.
fn duplicate(rc: &mut RespState, attrs: &QpAttrs, pkt: &RcPkt<'_>, req: Req, pd: PdId) -> Reply {
    let msn = rc.msn;
    match req {
        Req::Send { .. } | Req::Write { .. } => Reply::Ack {
            psn: psn_add(rc.epsn, 0x00ff_ffff),
            syn: Syndrome::Ack,
            msn,
        },
        Req::Read => duplicate_read(rc, attrs, pkt, pd),
        Req::CmpSwap | Req::FetchAdd => {
            for r in rc.res.iter().flatten() {
                if let Res::Atomic { psn, orig } = *r {
                    if psn == pkt.psn {
                        return Reply::Atomic { psn, orig, msn };
                    }
                }
            }
            Reply::None
        }
        Req::AtomicWrite | Req::Flush => {
            for r in rc.res.iter().flatten() {
                if let Res::Empty { psn } = *r {
                    if psn == pkt.psn {
                        return Reply::Empty { psn, msn };
                    }
                }
            }
            Reply::None
        }
    }
}

/// A duplicate READ: replayed when a resource covers its PSN and the
/// memory it asks for (unless a response still queued answers it), in the
/// PD `pd` it names (an XRC request's SRQ's).
fn duplicate_read(rc: &mut RespState, attrs: &QpAttrs, pkt: &RcPkt<'_>, pd: PdId) -> Reply {
    match replay_read(rc, attrs, pkt, pd) {
        Some(r) if !replies::retake(rc, r) => Reply::Read(r),
        _ => Reply::None,
    }
}

/// The read response that replays the duplicate READ `pkt` from a resource.
fn replay_read(rc: &RespState, attrs: &QpAttrs, pkt: &RcPkt<'_>, pd: PdId) -> Option<ReadResp> {
    let reth = pkt.reth?;
    for r in rc.res.iter().flatten() {
        if let Res::Read {
            first_psn,
            last_psn,
            va,
            rkey,
            len,
            pd: res_pd,
        } = *r
        {
            let inside =
                rc::psn_diff(pkt.psn, first_psn) >= 0 && rc::psn_diff(pkt.psn, last_psn) <= 0;
            let end = va.checked_add(u64::from(len));
            let req_end = reth.va.checked_add(u64::from(reth.len));
            if inside
                && res_pd == pd
                && reth.rkey == rkey
                && reth.va >= va
                && matches!((end, req_end), (Some(e), Some(re)) if re <= e)
            {
                return Some(ReadResp {
                    psn: pkt.psn,
                    va: reth.va,
                    rkey,
                    len: reth.len,
                    msn: rc.msn,
                    seg: pkt.seg(attrs),
                    sent: 0,
                    domain: pd.raw(),
                });
            }
        }
    }
    None
}
