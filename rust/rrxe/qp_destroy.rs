// SPDX-License-Identifier: GPL-2.0

//! A QP's destruction: what `destroy_qp` ties off at once, and what goes
//! with the core's last reference.

use crate::logic::qp::QpState;
use crate::rrxe::{
    cq,
    device::RrxeDev,
    qp::{RrxeQp, GSI_QPN},
    queue::UserRing,
};

impl Drop for RrxeQp {
    /// The gate's reference to the QP goes with the core's (`destroy`
    /// has closed it already, unless the QP never got that far).
    fn drop(&mut self) {
        if let Some(g) = &self.shared.gate {
            g.close();
        }
    }
}

impl RrxeQp {
    /// `destroy_qp`: everything tied to the user context or the device
    /// goes here, not with the last reference. A peer's transport may hold
    /// the QP a while longer (a local sender for the rest of a message); it
    /// then finds a dead QP with empty, inert rings.
    pub(crate) fn destroy(&self, dev: &RrxeDev) {
        let s = &self.shared;
        // Unlinked first, so that no lookup (the receive work, a local
        // sender) finds it again; the table's reference is dropped here,
        // outside the table's lock.
        let unlinked = if s.qpn == GSI_QPN {
            dev.gsi().lock().take()
        } else {
            dev.qp_live().set(s.qpn, false);
            dev.qp_pool().remove(s.qpn)
        };
        drop(unlinked);
        s.mark_dead();
        // Every completion is posted under its CQ's lock after a look at
        // `dead` (`cq::post`): once both locks were taken here, none of this
        // QP's is posted, whoever holds the QP (a datagram delivered from
        // another QP's doorbell holds none of the locks waited on below),
        // and the core may free the handle its completions carry.
        for cq in s.send_cq.iter().chain(&s.recv_cq) {
            cq::fence(cq);
        }
        // Transport work already under way on this QP holds one of these
        // locks and looks at `dead` under it: wait it out. The timer holds
        // a reference to the QP and is never started again once it is dead.
        drop(s.send_lock.lock());
        // No wake from the stack after this; packets still out keep the
        // gate, not the QP.
        if let Some(g) = &s.gate {
            g.close();
        }
        let held = s.uc_rx.lock().held.take();
        let rc_held = s.rc.resp.lock().release();
        let timer = s.rc.req.lock().take_timer();
        drop(timer);
        // The rings go back to the user context now, under the lock that
        // every access takes, and are freed outside it.
        let (sq, rq) = {
            let mut g = s.inner.lock();
            g.attrs.state = QpState::Reset;
            (g.sq.release(), g.rq.as_mut().map(UserRing::release))
        };
        drop((sq, rq, held, rc_held));
        // Queued send tasks run out before the device may go.
        crate::net::flush_queue();
    }
}
