// SPDX-License-Identifier: GPL-2.0

//! Transmit gates: how many of a sender's packets the network stack still
//! holds (a NIC's transmit ring, a qdisc), so that the sender stops at a
//! bound and is woken when the stack has freed most of them, as rxe bounds
//! a QP's `skb_out`. The C side is `rust/bindings/tx_gate.c`.

use crate::bindings;
use core::{marker::PhantomData, ptr::NonNull};
use kernel::{
    prelude::*,
    sync::{Arc, ArcBorrow},
};

/// What a gate wakes when its packets in flight fall below its low mark.
pub trait GateOwner: Send + Sync + Sized {
    /// Called in any context but hard interrupts, under the gate's spinlock
    /// (interrupts off): it must not sleep and should only schedule work.
    fn wake(this: ArcBorrow<'_, Self>);
}

/// A transmit gate with an optional owner of type `T`, which it holds a
/// reference to until [`TxGate::close`] (or its drop).
///
/// # Invariants
///
/// `ptr` came from `rrxe_gate_create` and is destroyed once, on drop. The
/// owner the C side holds, when there is one, is a pointer from
/// [`Arc::into_raw`] on an `Arc<T>`, whose reference the gate owns.
pub struct TxGate<T: GateOwner> {
    ptr: NonNull<bindings::rrxe_gate>,
    _owner: PhantomData<Arc<T>>,
}

// SAFETY: The C side guards the owner with a spinlock and the counters are
// atomics; the owner is an `Arc<T>` with `T: Send + Sync`.
unsafe impl<T: GateOwner> Send for TxGate<T> {}
// SAFETY: See above.
unsafe impl<T: GateOwner> Sync for TxGate<T> {}

/// Calls the owner's wake from the C side.
///
/// # Safety
///
/// `owner` is a pointer the gate holds from [`Arc::into_raw`] on an
/// `Arc<T>`, and the gate's lock is held, so it stays valid for the call.
unsafe extern "C" fn wake_trampoline<T: GateOwner>(owner: *const core::ffi::c_void) {
    // SAFETY: The caller's guarantee: a live `Arc<T>` the gate holds.
    let this = unsafe { ArcBorrow::<T>::from_raw(owner.cast()) };
    T::wake(this);
}

impl<T: GateOwner> TxGate<T> {
    /// A gate without an owner (it creates a kernel socket; may sleep),
    /// charged to the current memory cgroup (`__GFP_ACCOUNT`) when
    /// `account`.
    pub fn new(account: bool) -> Result<Self> {
        // SAFETY: No preconditions; null on failure.
        let ptr = unsafe { bindings::rrxe_gate_create(account) };
        // INVARIANT: A fresh gate, without an owner.
        NonNull::new(ptr)
            .map(|ptr| Self {
                ptr,
                _owner: PhantomData,
            })
            .ok_or(ENOMEM)
    }

    /// Gives the gate its owner, replacing any it had.
    pub fn open(&self, owner: Arc<T>) {
        let raw = Arc::into_raw(owner).cast::<core::ffi::c_void>();
        // SAFETY: The gate is live (the invariant); `raw` is an `Arc<T>`
        // that the gate now owns, and `wake_trampoline::<T>` matches it.
        let old =
            unsafe { bindings::rrxe_gate_open(self.ptr.as_ptr(), Some(wake_trampoline::<T>), raw) };
        Self::release(old);
    }

    /// Takes the owner away: no wake runs once this returns. The first
    /// close releases the gate's socket and may sleep; after it, the gate
    /// may be dropped in any context.
    pub fn close(&self) {
        // SAFETY: The gate is live (the invariant).
        let old = unsafe { bindings::rrxe_gate_close(self.ptr.as_ptr()) };
        Self::release(old);
    }

    /// Drops an owner reference the C side gave back.
    fn release(old: *const core::ffi::c_void) {
        if !old.is_null() {
            // SAFETY: The C side gave back an owner it held, which came
            // from `Arc::into_raw` on an `Arc<T>` (the invariant), and no
            // longer has it.
            drop(unsafe { Arc::<T>::from_raw(old.cast()) });
        }
    }

    /// Whether the sender must wait: `high` or more packets are out. The
    /// gate then wakes its owner once fewer than `low` are.
    pub fn must_wait(&self, high: u32, low: u32) -> bool {
        // SAFETY: The gate is live (the invariant).
        unsafe { bindings::rrxe_gate_must_wait(self.ptr.as_ptr(), high, low) }
    }

    /// How many packets are out now (a snapshot: the stack frees them in
    /// any context).
    pub fn out(&self) -> u32 {
        // SAFETY: The gate is live (the invariant).
        unsafe { bindings::rrxe_gate_out(self.ptr.as_ptr()) }
    }

    /// The C gate, for [`super::skb::TxPacket::send_gated`].
    pub(super) fn as_raw(&self) -> *mut bindings::rrxe_gate {
        self.ptr.as_ptr()
    }
}

impl<T: GateOwner> Drop for TxGate<T> {
    /// Sleeps only if the gate was never closed (see [`TxGate::close`]).
    fn drop(&mut self) {
        self.close();
        // SAFETY: Ours (the invariant), destroyed once, here; packets still
        // out keep the C gate until the stack frees them.
        unsafe { bindings::rrxe_gate_destroy(self.ptr.as_ptr()) };
    }
}
