// SPDX-License-Identifier: GPL-2.0

//! Upcalls to a consumer (a CQ's completion handler and error event, an
//! SRQ's limit event), deferred to an `irq_work`.
//!
//! A provider decides on an upcall under its own locks, but must not make
//! it there: a handler may poll the CQ or post to a QP, and take the very
//! lock it was called under. [`Upcalls::raise`] only records the upcall and
//! queues the `irq_work`; the handler runs once this CPU takes interrupts
//! again, in hard-irq context (where mlx5 calls handlers too), with none of
//! the provider's irq-safe locks held on this CPU.
//!
//! The object's lifetime is the driver's to bound: it attaches the object
//! after creating it ([`Upcalls::attach_cq`], [`Upcalls::attach_srq`]) and
//! detaches it ([`Upcalls::detach`]) before the object is destroyed, which
//! waits for an upcall under way. Upcalls raised after that are dropped.

use super::{bindings, cq::CqRef, device::Driver, srq::SrqRef};
use core::{
    ffi::c_void,
    ptr::null_mut,
    sync::atomic::{AtomicPtr, AtomicU32, AtomicU8, Ordering},
};
use kernel::{prelude::*, types::Opaque};

/// The completion handler is due.
pub const COMPLETION: u32 = 1;
/// `IB_EVENT_CQ_ERR` is due (the CQ overflowed).
pub const CQ_ERROR: u32 = 2;
/// `IB_EVENT_SRQ_LIMIT_REACHED` is due.
pub const SRQ_LIMIT: u32 = 4;

const KIND_NONE: u8 = 0;
const KIND_CQ: u8 = 1;
const KIND_SRQ: u8 = 2;

/// Deferred upcalls for one CQ or SRQ.
///
/// # Invariants
///
/// While `target` is not null it points to a live `ib_cq` (`kind` is
/// `KIND_CQ`) or `ib_srq` (`KIND_SRQ`): [`Upcalls::detach`] clears it, and
/// waits for the `irq_work`, before the object goes.
#[pin_data(PinnedDrop)]
pub struct Upcalls {
    #[pin]
    work: Opaque<bindings::irq_work>,
    pending: AtomicU32,
    target: AtomicPtr<c_void>,
    kind: AtomicU8,
}

// SAFETY: The `irq_work` is made to be queued from any CPU and runs on the
// queueing one; every other field is atomic. The target is only
// dereferenced under the type invariant, which does not depend on the
// thread.
unsafe impl Send for Upcalls {}
// SAFETY: See above.
unsafe impl Sync for Upcalls {}

impl Upcalls {
    /// Upcalls attached to nothing yet.
    pub fn new() -> impl PinInit<Self> {
        pin_init!(Self {
            // SAFETY: `init_irq_work` initialises the slot it is given, which
            // stays pinned inside `Self`.
            work <- unsafe {
                Opaque::ffi_init(|w: *mut bindings::irq_work| {
                    bindings::init_irq_work(w, Some(run));
                })
            },
            pending: AtomicU32::new(0),
            target: AtomicPtr::new(null_mut()),
            kind: AtomicU8::new(KIND_NONE),
        })
    }

    /// Delivers this CQ's upcalls ([`COMPLETION`], [`CQ_ERROR`]).
    ///
    /// # Safety
    ///
    /// The caller calls [`Upcalls::detach`] before the CQ is destroyed.
    pub unsafe fn attach_cq<T: Driver>(&self, cq: &CqRef<T>) {
        self.kind.store(KIND_CQ, Ordering::Relaxed);
        self.target.store(cq.as_raw().cast(), Ordering::Release);
    }

    /// Delivers this SRQ's upcalls ([`SRQ_LIMIT`]).
    ///
    /// # Safety
    ///
    /// The caller calls [`Upcalls::detach`] before the SRQ is destroyed.
    pub unsafe fn attach_srq<T: Driver>(&self, srq: &SrqRef<T>) {
        self.kind.store(KIND_SRQ, Ordering::Relaxed);
        self.target.store(srq.as_raw().cast(), Ordering::Release);
    }

    /// Records upcalls `bits` and queues their delivery; callable in any
    /// context, under any lock. Nothing is delivered once detached.
    pub fn raise(&self, bits: u32) {
        if self.target.load(Ordering::Acquire).is_null() {
            return;
        }
        self.pending.fetch_or(bits, Ordering::AcqRel);
        // SAFETY: The work was initialised in `new` and is pinned.
        unsafe { bindings::irq_work_queue(self.work.get()) };
    }

    /// Delivers nothing more and waits for a delivery under way. Sleeps:
    /// call it in process context, with interrupts enabled. A driver that
    /// raises upcalls under a lock takes that lock around its last raise's
    /// check (for example, that the object is not destroyed) so that no
    /// raise queues the work after this returns.
    pub fn detach(&self) {
        self.target.store(null_mut(), Ordering::Release);
        // SAFETY: The work was initialised in `new`; the caller's context
        // may sleep.
        unsafe { bindings::irq_work_sync(self.work.get()) };
    }
}

#[pinned_drop]
impl PinnedDrop for Upcalls {
    fn drop(self: Pin<&mut Self>) {
        // A queued work must not outlive its memory. `detach` has waited
        // for it already when the driver detached; an upcall raised later
        // found no target and queued nothing, so this never waits then
        // (and the last reference may go in any context).
        // SAFETY: The work was initialised in `new`.
        if unsafe { bindings::irq_work_is_busy(self.work.get()) } {
            // SAFETY: As above.
            unsafe { bindings::irq_work_sync(self.work.get()) };
        }
    }
}

/// The `irq_work` callback: delivers the recorded upcalls.
///
/// # Safety
///
/// `work` is the `work` field of a live [`Upcalls`] (the work is queued
/// only by [`Upcalls::raise`] and waited for before the memory goes).
unsafe extern "C" fn run(work: *mut bindings::irq_work) {
    // SAFETY: `work` is the `work` field of an `Upcalls`, by the caller's
    // promise; `Opaque<T>` has `T`'s layout.
    let this = unsafe {
        &*kernel::container_of!(work.cast::<Opaque<bindings::irq_work>>(), Upcalls, work)
    };
    let bits = this.pending.swap(0, Ordering::AcqRel);
    let target = this.target.load(Ordering::Acquire);
    if bits == 0 || target.is_null() {
        return;
    }
    match this.kind.load(Ordering::Relaxed) {
        KIND_CQ => {
            let cq = target.cast::<bindings::ib_cq>();
            if bits & COMPLETION != 0 {
                // SAFETY: Attached, so alive (the type invariant): `detach`
                // waits for this call before the CQ goes.
                unsafe { super::cq::deliver_completion(cq) };
            }
            if bits & CQ_ERROR != 0 {
                // SAFETY: As above.
                unsafe { super::cq::deliver_error(cq) };
            }
        }
        KIND_SRQ => {
            if bits & SRQ_LIMIT != 0 {
                // SAFETY: As for the CQ.
                unsafe { super::srq::deliver_limit(target.cast()) };
            }
        }
        _ => {}
    }
}
