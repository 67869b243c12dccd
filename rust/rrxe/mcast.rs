// SPDX-License-Identifier: GPL-2.0

//! Multicast groups: which UD QPs receive a multicast GID, within rxe's
//! limits (8192 groups, 56 QPs per group, 0x70000 attachments). Joining the
//! netdev's link-layer multicast addresses comes with the network layer.

use crate::ib::object::Qp;
use crate::logic::{
    limits,
    mcast::{self, Attach, Limits, McastError},
};
use crate::rrxe::device::{Rrxe, RrxeDev};
use kernel::prelude::*;

/// One group.
pub struct Group {
    /// The multicast GID.
    pub gid: [u8; 16],
    /// Member QP numbers.
    pub qpns: KVec<u32>,
}

/// The device's groups.
#[derive(Default)]
pub struct McastTable {
    /// Groups, in creation order.
    pub groups: KVec<Group>,
    /// Attachments over all groups.
    pub total: usize,
}

const LIMITS: Limits = Limits {
    groups: limits::MAX_MCAST_GRP as usize,
    per_group: limits::MAX_MCAST_QP_ATTACH as usize,
    total: limits::MAX_TOT_MCAST_QP_ATTACH as usize,
};

/// `attach_mcast`: `ENOMEM` when a limit is reached; attaching twice is a
/// no-op.
pub fn attach(ibqp: &Qp<Rrxe>, gid: &[u8; 16]) -> Result {
    let qpn = ibqp.qp_num();
    let mut t = ibqp.device().data().mcast().lock();
    let plan = {
        let groups = &t.groups;
        mcast::plan_attach(
            groups.iter().map(|g| &g.gid),
            |i| &groups[i].qpns,
            gid,
            qpn,
            t.total,
            LIMITS,
        )
    };
    match plan {
        Ok(Attach::Present) => return Ok(()),
        Ok(Attach::AddTo(i)) => t.groups[i].qpns.push(qpn, GFP_KERNEL)?,
        Ok(Attach::NewGroup) => {
            let mut qpns = KVec::new();
            qpns.push(qpn, GFP_KERNEL)?;
            t.groups.push(Group { gid: *gid, qpns }, GFP_KERNEL)?;
        }
        Err(McastError::Full) => return Err(ENOMEM),
        Err(McastError::NotAttached) => return Err(EINVAL),
    }
    t.total += 1;
    Ok(())
}

/// `detach_mcast`: `EINVAL` if the QP is not attached; the group goes with
/// its last member.
pub fn detach(ibqp: &Qp<Rrxe>, gid: &[u8; 16]) -> Result {
    let qpn = ibqp.qp_num();
    let mut t = ibqp.device().data().mcast().lock();
    let gi = t.groups.iter().position(|g| g.gid == *gid).ok_or(EINVAL)?;
    let qi = t.groups[gi]
        .qpns
        .iter()
        .position(|&n| n == qpn)
        .ok_or(EINVAL)?;
    t.groups[gi].qpns.remove(qi)?;
    if t.groups[gi].qpns.is_empty() {
        t.groups.remove(gi)?;
    }
    t.total -= 1;
    Ok(())
}

/// A group's members at one moment, copied out of the table so that
/// delivery runs without its lock. A group holds at most
/// `MAX_MCAST_QP_ATTACH` QPs, so they fit here and no packet allocates.
pub struct Members {
    qpns: [u32; limits::MAX_MCAST_QP_ATTACH as usize],
    len: usize,
}

impl Members {
    /// The member QP numbers.
    pub fn qpns(&self) -> &[u32] {
        &self.qpns[..self.len]
    }
}

/// The QPs of `dev` attached to the multicast group `gid` (none if there is
/// no such group).
pub fn members(dev: &RrxeDev, gid: &[u8; 16]) -> Members {
    let mut out = Members {
        qpns: [0; limits::MAX_MCAST_QP_ATTACH as usize],
        len: 0,
    };
    let t = dev.mcast().lock();
    if let Some(g) = t.groups.iter().find(|g| &g.gid == gid) {
        // `attach` keeps a group within the array's length.
        out.len = g.qpns.len().min(out.qpns.len());
        out.qpns[..out.len].copy_from_slice(&g.qpns[..out.len]);
    }
    out
}
