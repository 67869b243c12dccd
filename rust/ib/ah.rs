// SPDX-License-Identifier: GPL-2.0

//! Address handles: core-allocated `ib_ah` objects with driver data.
//!
//! The core allocates the AH, takes a reference on the source GID's
//! attribute (`ah->sgid_attr`, held for the AH's life) and resolves the
//! destination MAC, then calls `create_ah` (kernel) or `create_user_ah`.

use super::{bindings, device::Driver, object::Ah, qp};
use crate::logic::qp::Av;

/// What an AH or a QP path is created from.
#[derive(Clone, Copy, Debug)]
pub struct AhInit {
    /// The address vector.
    pub av: Av,
    /// A GRH was given (required on RoCE).
    pub grh: bool,
    /// The attribute type is RoCE.
    pub roce: bool,
    /// The caller may sleep (user AHs, and kernel ones created sleepable).
    pub sleepable: bool,
    /// The source GID, if the core resolved one.
    pub sgid: Option<Sgid>,
}

/// A source GID and its type.
#[derive(Clone, Copy, Debug)]
pub struct Sgid {
    /// The GID.
    pub gid: [u8; 16],
    /// RoCEv2 (UDP encapsulation), as opposed to RoCEv1 or IB.
    pub roce_v2: bool,
}

impl AhInit {
    /// # Safety
    ///
    /// `a` must point to a valid `rdma_ah_init_attr` whose `ah_attr` holds a
    /// referenced (or null) `sgid_attr`, for the call.
    pub(crate) unsafe fn from_raw(a: *const bindings::rdma_ah_init_attr, user: bool) -> Self {
        // SAFETY: The caller's promise.
        let (attr, flags) = unsafe { (&*(*a).ah_attr, (*a).flags) };
        // SAFETY: As above: a held GID attribute, or null.
        let sgid = unsafe { attr.grh.sgid_attr.as_ref() }.map(|g| Sgid {
            // SAFETY: `raw` covers the whole GID union.
            gid: unsafe { *g.gid.raw.as_ref() },
            roce_v2: g.gid_type == bindings::ib_gid_type_IB_GID_TYPE_ROCE_UDP_ENCAP,
        });
        Self {
            av: qp::av_from_raw(attr, true),
            grh: u32::from(attr.ah_flags) & bindings::ib_ah_flags_IB_AH_GRH != 0,
            roce: attr.type_ == bindings::rdma_ah_attr_type_RDMA_AH_ATTR_TYPE_ROCE,
            sleepable: user || flags & bindings::rdma_create_ah_flags_RDMA_CREATE_AH_SLEEPABLE != 0,
            sgid,
        }
    }
}

impl<T: Driver> Ah<T> {
    /// The source GID the AH was created with, held by the core for the
    /// AH's life.
    pub fn sgid(&self) -> Option<Sgid> {
        // SAFETY: `sgid_attr` is set at creation and referenced until the
        // AH is destroyed.
        unsafe { (*self.as_raw()).sgid_attr.as_ref() }.map(|g| Sgid {
            // SAFETY: `raw` covers the whole GID union.
            gid: unsafe { *g.gid.raw.as_ref() },
            roce_v2: g.gid_type == bindings::ib_gid_type_IB_GID_TYPE_ROCE_UDP_ENCAP,
        })
    }
}

pub(crate) fn av_to_raw(v: &Av, out: &mut bindings::rdma_ah_attr) {
    qp::av_to_raw(v, out)
}
