// SPDX-License-Identifier: GPL-2.0

//! The RC responder's execution of a request at the expected PSN: SENDs
//! into receive WQEs, WRITEs, READs, atomics, ATOMIC WRITE and FLUSH, each
//! checked against the QP's rights, the rkey, the PD and the bounds.

use super::{
    responder::{add_res, cq_full, ReadResp, Reply, Target},
    state::{Held, Res},
    RcPkt, RespState,
};
use crate::ib::umem::Fault;
use crate::logic::{
    access,
    cqe::{flags, status, Wc},
    qp::QpAttrs,
    rc::{self, Nak, Req, Syndrome},
    uc::{packets, psn_add, Pos},
    wqe,
};
use crate::rrxe::debug::Site;
use crate::rrxe::stats::Counter;
use crate::rrxe::{
    device::RrxeDev,
    mr::{self, Copy},
    pd::PdId,
    qp::QpShared,
    sge::scatter_at,
};
use crate::rrxe_dbg;
use kernel::{prelude::*, sync::Arc};

/// Why a request fails: the NAK to send and the status of the receive WQE
/// in hand.
type Fail = (Nak, u32);
const INV_REQ: Fail = (Nak::InvReq, status::REM_INV_REQ_ERR);
const REM_ACCESS: Fail = (Nak::RemAccess, status::REM_ACCESS_ERR);

fn key_fail(err: Error) -> Fail {
    let _ = err;
    REM_ACCESS
}

/// A request at the expected PSN, and where it goes.
struct Ctx<'a, 'p> {
    dev: &'a RrxeDev,
    qp: &'a QpShared,
    /// Where its receive WQE, keys and completion come from.
    target: &'a Target,
    /// The PD its keys are looked up in: the QP's, or the XRC SRQ's.
    pd: PdId,
    attrs: &'a QpAttrs,
    pkt: &'a RcPkt<'p>,
    /// The payload bytes every packet but a message's last carries.
    mtu: usize,
}

impl Ctx<'_, '_> {
    /// The ACK this packet asks for, if it asks.
    fn ack(&self, rc: &RespState) -> Reply {
        if self.pkt.ack_req {
            Reply::Ack {
                psn: self.pkt.psn,
                syn: Syndrome::Ack,
                msn: rc.msn,
            }
        } else {
            Reply::None
        }
    }

    /// Every packet but a message's last carries exactly one segment.
    fn bad_len(&self, pos: Pos) -> bool {
        if pos.ends() {
            self.pkt.payload.len() > self.mtu
        } else {
            self.pkt.payload.len() != self.mtu
        }
    }

    /// Checks that `rkey` grants `need` on `len` bytes at `va` in the QP's
    /// PD (a zero-length request needs no valid key).
    fn check_key(&self, rkey: u32, need: u32, va: u64, len: u32) -> core::result::Result<(), Fail> {
        if len > 0 {
            mr::lookup_key(
                self.dev,
                rkey,
                self.pd,
                self.qp.qpn,
                need,
                va,
                u64::from(len),
            )
            .map_err(key_fail)?;
        }
        Ok(())
    }

    /// The RNR NAK for a packet whose on-demand memory is not ready: the
    /// page's fault was started, and the requester sends the packet again
    /// after its RNR timer, by when it is done. Waiting for the fault here
    /// would hold up the device's other QPs (a fault on a stalled file
    /// system may never end), so every access of the responder is made
    /// with [`Fault::NoWait`]. Nothing of the request is kept.
    fn not_ready(&self, rc: &RespState) -> Reply {
        self.dev.count(Counter::SndRnr, 1);
        self.dev.count(Counter::OdpFaultDeferred, 1);
        Reply::Ack {
            psn: self.pkt.psn,
            syn: Syndrome::Rnr(self.attrs.min_rnr_timer),
            msn: rc.msn,
        }
    }

    /// A single-packet request done: the expected PSN and the MSN move on.
    fn done_one(&self, rc: &mut RespState) {
        rc.epsn = psn_add(self.pkt.psn, 1);
        rc.msn = psn_add(rc.msn, 1);
    }
}

/// Carries out the request at the expected PSN.
#[expect(clippy::too_many_arguments)]
pub(super) fn execute(
    dev: &RrxeDev,
    qp: &QpShared,
    target: &Target,
    rc: &mut RespState,
    attrs: &QpAttrs,
    pkt: &RcPkt<'_>,
    req: Req,
    pos: Pos,
) -> core::result::Result<Reply, Fail> {
    let c = Ctx {
        dev,
        qp,
        target,
        pd: target.pd(qp),
        attrs,
        pkt,
        mtu: pkt.seg(attrs),
    };
    // The packets of a message all name the XRC SRQ its receive WQE came
    // from.
    if let (Some(Held { srq: Some(h), .. }), Target::Xrc(t)) = (&rc.held, target) {
        if !Arc::ptr_eq(h, t) {
            return Err(INV_REQ);
        }
    }
    // Reads and atomics need responder resources: with none granted
    // (max_dest_rd_atomic 0) they are invalid requests, as in rxe.
    if matches!(
        req,
        Req::Read | Req::CmpSwap | Req::FetchAdd | Req::AtomicWrite | Req::Flush
    ) && attrs.max_dest_rd_atomic == 0
    {
        return Err(INV_REQ);
    }
    match req {
        Req::Send { imm, inv } => send(&c, rc, pos, imm, inv),
        Req::Write { imm } => write(&c, rc, pos, imm),
        Req::Read => read(&c, rc),
        Req::CmpSwap | Req::FetchAdd => atomic(&c, rc, req == Req::CmpSwap),
        Req::AtomicWrite => atomic_write(&c, rc),
        Req::Flush => flush(&c, rc),
    }
}

/// Takes a receive WQE for the message (into the reused buffer) from the
/// request's target; without one, the RNR NAK to send.
fn hold_recv(ctx: &Ctx<'_, '_>, rc: &mut RespState, psn: u32) -> Option<Reply> {
    let (dev, qp, attrs) = (ctx.dev, ctx.qp, ctx.attrs);
    let mut slot = core::mem::take(&mut rc.spare);
    let popped = match ctx.target {
        Target::Qp => qp.pop_recv(&mut slot).map(|max| (max, None)),
        Target::Xrc(srq) => {
            let mut g = srq.inner.lock();
            let max = g.max_sge;
            g.pop(&mut slot, &srq.upcalls)
                .then(|| (max, Some(srq.clone())))
        }
    };
    match popped {
        Some((max_sge, srq)) => {
            rc.held = Some(Held { slot, max_sge, srq });
            None
        }
        None => {
            rc.spare = slot;
            dev.count(Counter::SndRnr, 1);
            rrxe_dbg!(
                dev,
                Site::Rnr,
                "qp {:#x}: no receive WQE, RNR NAK for psn {psn:#x}",
                qp.qpn
            );
            rrxe_dbg!(
                dev,
                Site::NakSent,
                "qp {:#x}: RNR NAK for psn {psn:#x}",
                qp.qpn
            );
            Some(Reply::Ack {
                psn,
                syn: Syndrome::Rnr(attrs.min_rnr_timer),
                msn: rc.msn,
            })
        }
    }
}

/// A SEND packet: its payload goes into the held receive WQE, which
/// completes with the message's last packet.
fn send(
    ctx: &Ctx<'_, '_>,
    rc: &mut RespState,
    pos: Pos,
    imm: bool,
    inv: bool,
) -> core::result::Result<Reply, Fail> {
    let (d, s, p) = (ctx.dev, ctx.qp, ctx.pkt);
    if !rc::op_sequence_ok(rc.msg, true, pos) || ctx.bad_len(pos) {
        return Err(INV_REQ);
    }
    if pos.starts() && rc.held.is_none() {
        if let Some(rnr) = hold_recv(ctx, rc, p.psn) {
            return Ok(rnr);
        }
        rc.offset = 0;
    }
    let Some(h) = rc.held.as_ref() else {
        return Err(INV_REQ);
    };
    let slot = &h.slot;
    let r = wqe::parse_recv(slot, h.max_sge).map_err(|_| (Nak::RemOp, status::LOC_QP_OP_ERR))?;
    let n = p.payload.len() as u64;
    if rc.offset + n > r.length {
        return Err((Nak::InvReq, status::LOC_LEN_ERR));
    }
    if n > 0 {
        match scatter_at(
            d,
            ctx.pd,
            slot,
            r.num_sge,
            rc.offset,
            p.payload,
            Fault::NoWait,
        ) {
            Ok(()) => {}
            Err(e) if e == EAGAIN => return Ok(ctx.not_ready(rc)),
            Err(_) => return Err((Nak::RemOp, status::LOC_PROT_ERR)),
        }
    }
    rc.offset += n;
    rc.epsn = psn_add(p.psn, 1);
    if !pos.ends() {
        rc.msg = Some(true);
        return Ok(ctx.ack(rc));
    }
    let mut wc = Wc {
        opcode: wqe::WC_RECV,
        byte_len: rc.offset as u32,
        qp_num: s.qpn,
        qp_cookie: s.handle,
        port_num: 1,
        ..Default::default()
    };
    if imm {
        wc.wc_flags |= flags::WITH_IMM;
        wc.ex = p.imm.unwrap_or(0);
    }
    if inv {
        let key = p.ieth.unwrap_or(0);
        if mr::invalidate(d, key, ctx.pd).is_err() {
            return Err(INV_REQ);
        }
        wc.wc_flags |= flags::WITH_INVALIDATE;
        wc.ex = key;
    }
    if let Some(h) = rc.held.take() {
        wc.wr_id = wqe::wr_id(&h.slot).unwrap_or(0);
        d.count_recv_done(&wc);
        let full = s.msg_wc_on(h.cq(s), &wc, p.se);
        rc.spare = h.slot;
        if full {
            return Ok(cq_full(d, s, rc));
        }
    }
    rc.msg = None;
    rc.offset = 0;
    rc.msn = psn_add(rc.msn, 1);
    Ok(ctx.ack(rc))
}

/// An RDMA WRITE packet: its payload goes to the memory the first
/// packet's RETH named; the immediate data of the last takes a receive WQE.
fn write(
    ctx: &Ctx<'_, '_>,
    rc: &mut RespState,
    pos: Pos,
    imm: bool,
) -> core::result::Result<Reply, Fail> {
    let (d, s, p) = (ctx.dev, ctx.qp, ctx.pkt);
    if !rc::op_sequence_ok(rc.msg, false, pos) {
        return Err(INV_REQ);
    }
    if ctx.attrs.qp_access_flags & access::REMOTE_WRITE == 0 || ctx.bad_len(pos) {
        return Err(INV_REQ);
    }
    if pos.starts() {
        let reth = p.reth.ok_or(INV_REQ)?;
        ctx.check_key(reth.rkey, access::REMOTE_WRITE, reth.va, reth.len)?;
        rc.write = Some((reth.va, reth.rkey, u64::from(reth.len)));
        rc.offset = 0;
    }
    let (va, rkey, len) = rc.write.ok_or(INV_REQ)?;
    let n = p.payload.len() as u64;
    if rc.offset + n > len || (pos.ends() && rc.offset + n != len) {
        return Err(INV_REQ);
    }
    // The immediate data needs a receive WQE before anything is written by
    // this packet (an RNR NAK has it sent again).
    if imm && rc.held.is_none() {
        if let Some(rnr) = hold_recv(ctx, rc, p.psn) {
            return Ok(rnr);
        }
    }
    if n > 0 {
        let at = va.checked_add(rc.offset).ok_or(REM_ACCESS)?;
        let r = mr::copy_by_key(
            d,
            rkey,
            ctx.pd,
            s.qpn,
            access::REMOTE_WRITE,
            at,
            Copy::Into(p.payload),
            Fault::NoWait,
        );
        match r {
            Ok(()) => {}
            Err(e) if e == EAGAIN => return Ok(ctx.not_ready(rc)),
            Err(e) => return Err(key_fail(e)),
        }
    }
    rc.offset += n;
    rc.epsn = psn_add(p.psn, 1);
    if !pos.ends() {
        rc.msg = Some(false);
        return Ok(ctx.ack(rc));
    }
    rc.msg = None;
    rc.write = None;
    rc.offset = 0;
    rc.msn = psn_add(rc.msn, 1);
    if imm {
        if let Some(h) = rc.held.take() {
            let wc = Wc {
                opcode: wqe::WC_RECV_RDMA_WITH_IMM,
                byte_len: len as u32,
                wc_flags: flags::WITH_IMM,
                ex: p.imm.unwrap_or(0),
                qp_num: s.qpn,
                qp_cookie: s.handle,
                port_num: 1,
                wr_id: wqe::wr_id(&h.slot).unwrap_or(0),
                ..Default::default()
            };
            d.count_recv_done(&wc);
            let full = s.msg_wc_on(h.cq(s), &wc, p.se);
            rc.spare = h.slot;
            if full {
                return Ok(cq_full(d, s, rc));
            }
        }
    }
    Ok(ctx.ack(rc))
}

/// An RDMA READ request: checked, kept as a resource, answered by read
/// responses.
fn read(ctx: &Ctx<'_, '_>, rc: &mut RespState) -> core::result::Result<Reply, Fail> {
    if rc.msg.is_some() || ctx.attrs.qp_access_flags & access::REMOTE_READ == 0 {
        return Err(INV_REQ);
    }
    let p = ctx.pkt;
    let reth = p.reth.ok_or(INV_REQ)?;
    ctx.check_key(reth.rkey, access::REMOTE_READ, reth.va, reth.len)?;
    let n = packets(u64::from(reth.len), ctx.mtu as u32) as u32;
    add_res(
        rc,
        Res::Read {
            first_psn: p.psn,
            last_psn: psn_add(p.psn, n - 1),
            va: reth.va,
            rkey: reth.rkey,
            len: reth.len,
            pd: ctx.pd,
        },
    );
    rc.epsn = psn_add(p.psn, n);
    rc.msn = psn_add(rc.msn, 1);
    Ok(Reply::Read(ReadResp {
        psn: p.psn,
        va: reth.va,
        rkey: reth.rkey,
        len: reth.len,
        msn: rc.msn,
        seg: ctx.mtu,
        sent: 0,
        domain: ctx.pd.raw(),
    }))
}

/// A compare-and-swap (`cas`) or fetch-and-add, under the device's atomics
/// lock.
fn atomic(ctx: &Ctx<'_, '_>, rc: &mut RespState, cas: bool) -> core::result::Result<Reply, Fail> {
    if rc.msg.is_some() || ctx.attrs.qp_access_flags & access::REMOTE_ATOMIC == 0 {
        return Err(INV_REQ);
    }
    let (d, s, p) = (ctx.dev, ctx.qp, ctx.pkt);
    let atm = p.atm.ok_or(INV_REQ)?;
    if atm.va % rc::ATOMIC_ALIGN != 0 {
        return Err(INV_REQ);
    }
    let (m, at) = mr::lookup_key(d, atm.rkey, ctx.pd, s.qpn, access::REMOTE_ATOMIC, atm.va, 8)
        .map_err(key_fail)?;
    if !rc::atomic_aligned(atm.va, m.page_offset_of(at).map_err(key_fail)?) {
        return Err(INV_REQ);
    }
    let orig = {
        let _g = d.atomics().lock();
        let mut b = [0u8; 8];
        // Nothing is written unless both the read and the write go through.
        match m.read(at, &mut b, Fault::NoWait) {
            Ok(()) => {}
            Err(e) if e == EAGAIN => return Ok(ctx.not_ready(rc)),
            Err(e) => return Err(key_fail(e)),
        }
        let orig = u64::from_ne_bytes(b);
        let new = if cas {
            if orig == atm.compare {
                atm.swap_add
            } else {
                orig
            }
        } else {
            orig.wrapping_add(atm.swap_add)
        };
        match m.write(at, &new.to_ne_bytes(), Fault::NoWait) {
            Ok(()) => {}
            Err(e) if e == EAGAIN => return Ok(ctx.not_ready(rc)),
            Err(e) => return Err(key_fail(e)),
        }
        orig
    };
    add_res(rc, Res::Atomic { psn: p.psn, orig });
    ctx.done_one(rc);
    Ok(Reply::Atomic {
        psn: p.psn,
        orig,
        msn: rc.msn,
    })
}

/// An ATOMIC WRITE of eight aligned bytes.
fn atomic_write(ctx: &Ctx<'_, '_>, rc: &mut RespState) -> core::result::Result<Reply, Fail> {
    if rc.msg.is_some() || ctx.attrs.qp_access_flags & access::REMOTE_WRITE == 0 {
        return Err(INV_REQ);
    }
    let (d, s, p) = (ctx.dev, ctx.qp, ctx.pkt);
    let reth = p.reth.ok_or(INV_REQ)?;
    if reth.va % rc::ATOMIC_ALIGN != 0 || p.payload.len() != 8 || reth.len != 8 {
        return Err(INV_REQ);
    }
    let (m, at) = mr::lookup_key(
        d,
        reth.rkey,
        ctx.pd,
        s.qpn,
        access::REMOTE_WRITE,
        reth.va,
        8,
    )
    .map_err(key_fail)?;
    if !rc::atomic_aligned(reth.va, m.page_offset_of(at).map_err(key_fail)?) {
        return Err(INV_REQ);
    }
    {
        let _g = d.atomics().lock();
        match m.write(at, p.payload, Fault::NoWait) {
            Ok(()) => {}
            Err(e) if e == EAGAIN => return Ok(ctx.not_ready(rc)),
            Err(e) => return Err(key_fail(e)),
        }
    }
    add_res(rc, Res::Empty { psn: p.psn });
    ctx.done_one(rc);
    Ok(Reply::Empty {
        psn: p.psn,
        msn: rc.msn,
    })
}

/// A FLUSH: the QP and the rkey must grant the flush types asked for.
fn flush(ctx: &Ctx<'_, '_>, rc: &mut RespState) -> core::result::Result<Reply, Fail> {
    if rc.msg.is_some() {
        return Err(INV_REQ);
    }
    let p = ctx.pkt;
    let reth = p.reth.ok_or(INV_REQ)?;
    let feth = p.feth.ok_or(INV_REQ)?;
    // A FLUSH of no placement type asks for no right: an invalid request,
    // before any rkey is looked at. The QP must allow the types asked for,
    // as must the rkey.
    let need = rc::flush_access(feth & 0xf).ok_or(INV_REQ)?;
    if ctx.attrs.qp_access_flags & need != need {
        return Err(INV_REQ);
    }
    // Unlike a zero-length READ or WRITE, a FLUSH always names memory: its
    // rkey and rights are checked whatever its length (rxe's check_rkey),
    // and its range too unless it flushes the whole MR.
    let whole_mr = (feth >> 4) & 3 == rc::flush_level::MR;
    match mr::lookup_key(
        ctx.dev,
        reth.rkey,
        ctx.pd,
        ctx.qp.qpn,
        need,
        reth.va,
        u64::from(reth.len),
    ) {
        Err(e) if whole_mr && e == EFAULT => {}
        r => {
            r.map_err(key_fail)?;
        }
    }
    // Memory here is ordinary RAM written by the CPU: once the copies are
    // done, the data is globally visible.
    add_res(rc, Res::Empty { psn: p.psn });
    ctx.done_one(rc);
    Ok(Reply::Empty {
        psn: p.psn,
        msn: rc.msn,
    })
}
