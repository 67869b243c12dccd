// SPDX-License-Identifier: GPL-2.0

//! Shared receive queues: core-allocated `ib_srq` objects with driver data.

use super::{bindings, device::Driver};

/// `struct ib_srq_attr`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SrqAttr {
    /// Capacity in work requests.
    pub max_wr: u32,
    /// Scatter entries per work request.
    pub max_sge: u32,
    /// Limit below which the SRQ raises `IB_EVENT_SRQ_LIMIT_REACHED` (0: off).
    pub srq_limit: u32,
}

impl SrqAttr {
    pub(crate) fn from_raw(a: &bindings::ib_srq_attr) -> Self {
        Self {
            max_wr: a.max_wr,
            max_sge: a.max_sge,
            srq_limit: a.srq_limit,
        }
    }

    pub(crate) fn to_raw(self, a: &mut bindings::ib_srq_attr) {
        a.max_wr = self.max_wr;
        a.max_sge = self.max_sge;
        a.srq_limit = self.srq_limit;
    }
}

/// What `create_srq` was asked for.
#[derive(Clone, Copy, Debug)]
pub struct SrqInit {
    /// Requested attributes.
    pub attr: SrqAttr,
    /// A basic SRQ (not XRC or tag matching).
    pub basic: bool,
}

/// Which attributes a `modify_srq` changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SrqMask {
    /// `IB_SRQ_MAX_WR`: resize.
    pub max_wr: bool,
    /// `IB_SRQ_LIMIT`: arm the limit event.
    pub limit: bool,
    /// Bits this layer does not know.
    pub unknown: bool,
}

impl SrqMask {
    pub(crate) fn from_raw(m: u32) -> Self {
        let known =
            bindings::ib_srq_attr_mask_IB_SRQ_MAX_WR | bindings::ib_srq_attr_mask_IB_SRQ_LIMIT;
        Self {
            max_wr: m & bindings::ib_srq_attr_mask_IB_SRQ_MAX_WR != 0,
            limit: m & bindings::ib_srq_attr_mask_IB_SRQ_LIMIT != 0,
            unknown: m & !known != 0,
        }
    }
}

/// An SRQ's C object, for code that outlives a borrow of it (the receive
/// path raises the limit event of SRQs it reached through a QP).
///
/// # Invariants
///
/// Points to an SRQ of driver `T` that was alive when the handle was made.
/// Whoever holds a handle must stop using it before the SRQ is destroyed
/// (the driver's SRQ data drops it under its lock in its destructor).
pub struct SrqRef<T: Driver>(
    core::ptr::NonNull<bindings::ib_srq>,
    core::marker::PhantomData<T>,
);

// SAFETY: The pointer is only dereferenced under the rules above, which do
// not depend on the thread.
unsafe impl<T: Driver> Send for SrqRef<T> {}
// SAFETY: See above.
unsafe impl<T: Driver> Sync for SrqRef<T> {}

impl<T: Driver> SrqRef<T> {
    /// # Safety
    ///
    /// `srq` must be an SRQ of driver `T` being created or alive.
    pub(crate) unsafe fn from_raw(srq: *mut bindings::ib_srq) -> Self {
        // SAFETY: Not null by the caller's promise.
        Self(
            unsafe { core::ptr::NonNull::new_unchecked(srq) },
            core::marker::PhantomData,
        )
    }

    /// Raises `IB_EVENT_SRQ_LIMIT_REACHED`.
    ///
    /// # Safety
    ///
    /// The SRQ must not have been destroyed (see the type invariant).
    pub unsafe fn raise_limit_reached(&self) {
        let srq = self.0.as_ptr();
        // SAFETY: Alive by the caller's promise; the core set the handler
        // and context before `create_srq` and they stay while the SRQ
        // lives; the event is read during the call only.
        unsafe {
            if let Some(h) = (*srq).event_handler {
                let mut ev: bindings::ib_event = core::mem::zeroed();
                ev.device = (*srq).device;
                *ev.element.srq.as_mut() = srq;
                ev.event = bindings::ib_event_type_IB_EVENT_SRQ_LIMIT_REACHED;
                h(&mut ev, (*srq).srq_context);
            }
        }
    }
}
