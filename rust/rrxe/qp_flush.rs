// SPDX-License-Identifier: GPL-2.0

//! The ERR flush: a QP's posted WQEs completed with `IB_WC_WR_FLUSH_ERR`,
//! in batches under the QP's lock.

use crate::logic::{
    cqe::{status, Wc},
    qp::QpState,
    wqe,
};
use crate::rrxe::debug::Site;
use crate::rrxe::device::RrxeDev;
use crate::rrxe::qp::{QpInner, QpShared};
use crate::rrxe::uc::UcRx;
use crate::rrxe_dbg;
use core::sync::atomic::Ordering;

/// How many WQEs of each ring one hold of a QP's lock flushes: the lock
/// is irq-safe, so this bounds how long a flush keeps interrupts off.
const FLUSH_BATCH: usize = 64;

/// Completes posted WQEs with `IB_WC_WR_FLUSH_ERR` (wr_id, status and QP
/// number, as rxe), send WQEs on the send CQ and receive WQEs on the
/// receive CQ, at most [`FLUSH_BATCH`] of each ring: a ring may hold 2^20.
/// If more are left, `flush_pending` is set, and the caller finishes with
/// [`flush_rest`] once it has let the lock go. A full CQ loses the rest
/// (and raises its error event). Runs under the QP's lock: allocates
/// nothing (only the wr_id, the first 8 bytes of each slot, is copied
/// out).
pub(crate) fn flush(qp: &QpShared, inner: &mut QpInner) {
    let mut slot = [0u8; 8];
    let mut wc = Wc {
        status: status::WR_FLUSH_ERR,
        qp_num: qp.qpn,
        qp_cookie: qp.handle,
        ..Default::default()
    };
    let mut more = false;
    let mut n = 0;
    while inner.sq.pop(&mut slot) {
        wc.wr_id = wqe::wr_id(&slot).unwrap_or(0);
        if !qp.send_wc(&wc) {
            break;
        }
        n += 1;
        if n == FLUSH_BATCH {
            more = inner.sq.pending() > 0;
            break;
        }
    }
    if let Some(rq) = inner.rq.as_mut() {
        n = 0;
        while rq.pop(&mut slot) {
            wc.wr_id = wqe::wr_id(&slot).unwrap_or(0);
            if !qp.recv_wc(&wc, false) {
                break;
            }
            n += 1;
            if n == FLUSH_BATCH {
                more |= rq.pending() > 0;
                break;
            }
        }
    }
    if more {
        qp.flush_pending.store(true, Ordering::Release);
    }
}

/// Finishes a flush that [`flush`] left for later, one batch per hold of
/// the QP's lock, while the QP stays in ERR: at most one ring's worth of
/// each ring, so a process that keeps moving its producer indices cannot
/// keep the caller here. The caller holds neither the QP's lock nor any
/// lock a completion handler takes; any context.
pub(crate) fn flush_rest(qp: &QpShared) {
    if !qp.flush_pending.load(Ordering::Acquire) || !qp.flush_pending.swap(false, Ordering::AcqRel)
    {
        return;
    }
    let batches = {
        let g = qp.inner.lock();
        let rq = g.rq.as_ref().map_or(0, |r| r.geometry().slots());
        (g.sq.geometry().slots().max(rq) / FLUSH_BATCH) + 1
    };
    for _ in 0..batches {
        let mut g = qp.inner.lock();
        if g.attrs.state != QpState::Err {
            return;
        }
        flush(qp, &mut g);
        drop(g);
        if !qp.flush_pending.swap(false, Ordering::AcqRel) {
            return;
        }
    }
}

/// Puts a UD or UC QP in ERR once its receive CQ was full for a message's
/// completion ([`QpShared::recv_msg_wc`]): both rings are flushed, and the
/// receive state `rx` (the QP's `uc_rx`, which the caller holds) drops
/// its kept WQE and its message in progress, as a move to ERR by
/// `modify_qp` does. Nothing for a QP another thread has moved out of the
/// receiving states meanwhile. The caller does not hold the QP's lock.
pub(crate) fn overflow_to_err(dev: &RrxeDev, qp: &QpShared, rx: &mut UcRx) {
    let mut g = qp.inner.lock();
    if !matches!(
        g.attrs.state,
        QpState::Rtr | QpState::Rts | QpState::Sqd | QpState::Sqe
    ) {
        return;
    }
    let was = g.attrs.state;
    g.attrs.state = QpState::Err;
    flush(qp, &mut g);
    drop(g);
    rrxe_dbg!(
        dev,
        Site::QpState,
        "qp {:#x}: {was:?} -> Err (receive CQ full)",
        qp.qpn
    );
    flush_rest(qp);
    if let Some((slot, _)) = rx.held.take() {
        qp.flush_held(qp.recv_cq.as_ref(), &slot);
    }
    rx.seq.msg = None;
    rx.write = None;
}
