// SPDX-License-Identifier: GPL-2.0

//! XRC target QPs: the receiving end of an XRC connection. Such a QP
//! belongs to an XRC domain, not to a PD; it has no queues and no CQs of
//! its own (each request names the XRC SRQ that takes it, whose PD and CQ
//! are used). The core asks for one with no udata, even for a user, and
//! shares it between the processes that open it in its domain: it is
//! destroyed when the last of them closes it, whichever that is, so it
//! holds nothing of the process that made it.

use crate::ib::{memcg::Charge, object::Xrcd, qp::QpInit};
use crate::logic::{qp::QpCap, ring};
use crate::rrxe::{
    device::Rrxe,
    pd::PdId,
    qp::RrxeQp,
    qp_new::{QpLinks, QpParts},
    queue::UserRing,
    xrcd::xrcd_id,
};
use kernel::prelude::*;

/// `create_qp` of an XRC target QP in `xrcd`.
pub(crate) fn create_tgt(xrcd: &Xrcd<Rrxe>, init: &QpInit) -> Result<(RrxeQp, u32, QpCap)> {
    if init.create_flags != 0 {
        return Err(EOPNOTSUPP);
    }
    let device = xrcd.device();
    // No send queue: a ring of no entries, into which nothing is posted
    // (the doorbell and `ib_post_send` refuse the QP).
    let sq = UserRing::new_kernel(0, 0, ring::HDR_SIZE + ring::MIN_ELEM as usize)?;
    let links = QpLinks {
        pd: PdId::NONE,
        send_cq: None,
        recv_cq: None,
        srq: None,
        xrcd: Some(xrcd_id(xrcd)),
    };
    let cap = QpCap::default();
    // Made in the command of the user who asked for it: charged to that
    // user's memory cgroup, as its other objects are.
    let parts = QpParts::new(
        init,
        device,
        links,
        (sq, None),
        cap,
        Charge::current(),
        false,
    )?;
    let (qpn, shared) = parts.install(device)?;
    Ok((RrxeQp { shared }, qpn, cap))
}
