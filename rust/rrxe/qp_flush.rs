// SPDX-License-Identifier: GPL-2.0

//! The ERR flush: a QP's posted WQEs completed with `IB_WC_WR_FLUSH_ERR`,
//! in batches under the QP's lock.

use crate::logic::{
    cqe::{status, Wc},
    qp::QpState,
    wqe,
};
use crate::rrxe::qp::{QpInner, QpShared};
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
pub(crate) fn flush(s: &QpShared, g: &mut QpInner) {
    let mut slot = [0u8; 8];
    let mut wc = Wc {
        status: status::WR_FLUSH_ERR,
        qp_num: s.qpn,
        qp_cookie: s.handle,
        ..Default::default()
    };
    let mut more = false;
    let mut n = 0;
    while g.sq.pop(&mut slot) {
        wc.wr_id = wqe::wr_id(&slot).unwrap_or(0);
        if !s.send_wc(&wc) {
            break;
        }
        n += 1;
        if n == FLUSH_BATCH {
            more = g.sq.pending() > 0;
            break;
        }
    }
    if let Some(rq) = g.rq.as_mut() {
        n = 0;
        while rq.pop(&mut slot) {
            wc.wr_id = wqe::wr_id(&slot).unwrap_or(0);
            if !s.recv_wc(&wc, false) {
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
        s.flush_pending.store(true, Ordering::Release);
    }
}

/// Finishes a flush that [`flush`] left for later, one batch per hold of
/// the QP's lock, while the QP stays in ERR: at most one ring's worth of
/// each ring, so a process that keeps moving its producer indices cannot
/// keep the caller here. The caller holds neither the QP's lock nor any
/// lock a completion handler takes; any context.
pub(crate) fn flush_rest(s: &QpShared) {
    if !s.flush_pending.load(Ordering::Acquire) || !s.flush_pending.swap(false, Ordering::AcqRel) {
        return;
    }
    let batches = {
        let g = s.inner.lock();
        let rq = g.rq.as_ref().map_or(0, |r| r.geometry().slots());
        (g.sq.geometry().slots().max(rq) / FLUSH_BATCH) + 1
    };
    for _ in 0..batches {
        let mut g = s.inner.lock();
        if g.attrs.state != QpState::Err {
            return;
        }
        flush(s, &mut g);
        drop(g);
        if !s.flush_pending.swap(false, Ordering::AcqRel) {
            return;
        }
    }
}
