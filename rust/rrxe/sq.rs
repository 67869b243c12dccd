// SPDX-License-Identifier: GPL-2.0

//! The send queue's doorbell: takes the WQEs a process (or the kernel's
//! post_send) put in the ring and hands each to its transport.
//!
//! The user doorbell (`post_send` without work requests) and the QP's send
//! task take the send queue's WQEs one by one, under the QP's send lock:
//! each is copied out of the ring and validated (`logic::wqe`), then sent by
//! `ud` or `uc`, and completed. RC QPs have their own engine (`rc`), which
//! keeps WQEs in the ring until they are acknowledged.

use crate::ib::{device::Device, object::Qp, qp::QpType};
use crate::logic::{
    cqe::{status, Wc},
    qp::QpState,
    wqe::{self, Transport},
};
use crate::rrxe::{
    device::Rrxe,
    qp::{self as qpm, QpShared},
    rc, uc, ud,
};
use kernel::{prelude::*, sync::Arc};

/// The user doorbell: processes the send queue up to the producer index.
/// `EINVAL` below RTS (as rxe); in ERR, posted WQEs are flushed. What its
/// packets bring to an idle device of this kernel is received here, after
/// it (and the replies to that too): a WRITE to another namespace and its
/// ACK take no context switch.
pub fn post_send_user(q: &Qp<Rrxe>) -> Result {
    let _in_place = crate::ib::net::ReceiveInPlace::begin();
    process_sq(q.device(), &q.data().shared)
}

/// Works through a QP's send queue (the user doorbell, and the QP's send
/// task). RC QPs have their own engine (`rc`).
pub fn process_sq(dev: &Device<Rrxe>, s: &Arc<QpShared>) -> Result {
    {
        let mut g = s.inner.lock();
        match g.attrs.state {
            QpState::Rts => {}
            QpState::Err => {
                qpm::flush(s, &mut g);
                drop(g);
                qpm::flush_rest(s);
                return Ok(());
            }
            _ => return Err(EINVAL),
        }
    }
    let ty = s.ty;
    if ty == QpType::Rc {
        return rc::run(dev, s);
    }
    // One doorbell at a time works through a QP's send queue.
    let mut bufs = s.send_lock.lock();
    if s.is_dead() {
        return Ok(());
    }
    let SendBufs { wqe: slot, payload } = &mut *bufs;
    let geo = s.inner.lock().sq.geometry();
    size_slot(slot, geo.elem_size())?;
    // At most one ring's worth per doorbell: every WQE posted before it is
    // within that many, and a process that keeps moving its producer index
    // cannot keep the kernel here. Later WQEs have their own doorbell.
    for _ in 0..geo.slots() {
        crate::ib::cond_resched();
        let (attrs, signaled) = {
            let mut g = s.inner.lock();
            if g.attrs.state != QpState::Rts || !g.sq.pop(slot) {
                break;
            }
            (g.attrs, s.sig_all)
        };
        let (wc, sig) = if ty != QpType::Uc {
            ud::send_one(dev, s, slot, payload, attrs.qkey)
        } else {
            uc::send_one(dev, s, slot, &attrs)
        };
        dev.data().count_send_done(&wc);
        if sig || signaled || wc.status != status::SUCCESS {
            let _ = s.send_wc(&wc);
        }
        if wc.status != status::SUCCESS {
            // A failed WQE puts the QP in the error state and flushes the
            // rest, as rxe does.
            let mut g = s.inner.lock();
            g.attrs.state = QpState::Err;
            qpm::flush(s, &mut g);
            drop(g);
            qpm::flush_rest(s);
            break;
        }
    }
    Ok(())
}

/// What a doorbell works in, under a QP's `send_lock`: the WQE copied out
/// of the ring, and (UD) a datagram's gathered payload. Both grow at first
/// use and are reused: no allocation per doorbell or per datagram.
#[derive(Default)]
pub struct SendBufs {
    /// The WQE.
    pub wqe: KVec<u8>,
    /// The payload of a UD datagram.
    pub payload: KVec<u8>,
}

/// Makes `slot`, a buffer under a QP's `send_lock`, `n` bytes long:
/// allocated at the first doorbell, then reused.
pub(crate) fn size_slot(slot: &mut KVec<u8>, n: usize) -> Result {
    if slot.len() != n {
        slot.clear();
        slot.resize(n, 0u8, GFP_KERNEL)?;
    }
    Ok(())
}

/// Validates a send WQE copied out of `s`'s send queue: the WQE with its
/// completion so far (id, QP, opcode), or the error completion to post.
pub(crate) fn take_send(s: &QpShared, slot: &[u8], t: Transport) -> Result<(wqe::SendWqe, Wc), Wc> {
    let mut wc = Wc {
        wr_id: wqe::wr_id(slot).unwrap_or(0),
        qp_num: s.qpn,
        qp_cookie: s.handle,
        ..Default::default()
    };
    match wqe::parse_send(slot, t, s.cap.max_send_sge, s.cap.max_inline_data) {
        // Fast registration is for kernel consumers only.
        Ok(w) if w.opcode == wqe::Opcode::RegMr && !s.kernel => Err(Wc {
            status: status::LOC_QP_OP_ERR,
            ..wc
        }),
        Ok(w) => {
            wc.opcode = w.opcode.wc_opcode();
            Ok((w, wc))
        }
        Err(wqe::WqeError::TooLong | wqe::WqeError::InlineTooLong) => Err(Wc {
            status: status::LOC_LEN_ERR,
            ..wc
        }),
        Err(_) => Err(Wc {
            status: status::LOC_QP_OP_ERR,
            ..wc
        }),
    }
}
