// SPDX-License-Identifier: GPL-2.0

//! `modify_qp`'s checks of a transition and its attributes, and the move
//! to RESET that drops what the QP had posted or in flight.

use crate::ib::qp::transition_ok;
use crate::logic::{
    limits,
    mtu::IbMtu,
    qp::{self, QpAttrs, QpState},
};
use crate::rrxe::qp::{attr_err, QpInner, QpShared};
use crate::rrxe::rc;
use kernel::prelude::*;

/// The checks of `modify_qp` on a QP whose locked state is `inner`: the
/// transition must be one the IB spec allows with exactly these
/// attributes, and every value named must be in range.
pub(crate) fn check(
    shared: &QpShared,
    inner: &QpInner,
    new: &QpAttrs,
    cur: Option<QpState>,
    mask: u32,
) -> Result {
    // A modify without a state is a transition to the same state (RTS to
    // RTS, say), with only that transition's attributes, as rxe checks it.
    let from = if mask & qp::mask::CUR_STATE != 0 {
        cur.ok_or(EINVAL)?
    } else {
        inner.attrs.state
    };
    let to = if mask & qp::mask::STATE != 0 {
        new.state
    } else {
        from
    };
    if !transition_ok(from, to, shared.ty, mask) {
        return Err(EINVAL);
    }
    qp::check_modify(new, mask, IbMtu::Mtu4096 as u32).map_err(attr_err)?;
    if mask & qp::mask::AV != 0
        && (new.av.port_num != 1 || i32::from(new.av.sgid_index) >= limits::PORT_GID_TBL_LEN)
    {
        return Err(EINVAL);
    }
    Ok(())
}

/// `modify_qp` to RESET, from any state. As rxe, what the QP had posted or
/// in flight is dropped without a completion: the send and receive rings
/// are emptied (an SRQ keeps its WQEs), and the transport forgets its
/// state: the RC requester's window, PSN and timer, the responder's
/// expected PSN, message in progress, held receive WQE and resources, or
/// the UC responder's (and a UD QP's held receive WQE). Then the QP starts afresh from INIT, with new PSNs.
///
/// No send queue run is under way meanwhile (the send lock), and the
/// responders, which look at the state under their transport's lock, see
/// either the old state with the old transport state or RESET.
pub(crate) fn reset(shared: &QpShared, new: &QpAttrs, cur: Option<QpState>, mask: u32) -> Result {
    let _serial = shared.send_lock.lock();
    // Only the locks of the QP's own transport: RC's and UC's are never
    // nested. RC's responder lock is taken before its requester's.
    let mut resp = shared.reliable().then(|| shared.rc.resp.lock());
    let mut req = shared.reliable().then(|| shared.rc.req.lock());
    let mut rx = (!shared.reliable()).then(|| shared.uc_rx.lock());
    {
        let mut g = shared.inner.lock();
        check(shared, &g, new, cur, mask)?;
        qp::apply(&mut g.attrs, new, mask);
        g.sq.drain();
        if let Some(rq) = g.rq.as_mut() {
            rq.drain();
        }
    }
    // Freed (the held WQEs) and stopped (the timer) outside the spinlock.
    let dropped = match (req.as_mut(), resp.as_mut()) {
        (Some(req), Some(resp)) => Some(rc::reset(req, resp)),
        _ => None,
    };
    let uc_held = rx.as_mut().and_then(|rx| core::mem::take(&mut **rx).held);
    drop((dropped, uc_held));
    Ok(())
}
