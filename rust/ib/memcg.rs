// SPDX-License-Identifier: GPL-2.0

//! Whose memory cgroup pays for an object's allocations.
//!
//! What a user's verbs make the kernel allocate is the user's memory: an
//! object a process creates keeps a [`Charge`] naming that process's memory
//! cgroup, and every allocation made for the object allocates through it,
//! with `GFP_KERNEL_ACCOUNT` inside the cgroup's charging scope
//! (`set_active_memcg`). The scope matters for memory an object allocates
//! later, in whatever context then runs: a packet buffer that grows in the
//! receive thread, or in another process's doorbell, is charged to the
//! object's owner, not to that thread (which has no cgroup) nor to that
//! process. A kernel consumer's objects are the kernel's: [`Charge::kernel`]
//! allocates with plain `GFP_KERNEL`.
//!
//! Past the cgroup's limit a user's allocation fails with `ENOMEM`; it
//! never calls the cgroup's OOM killer, which a plain `GFP_KERNEL_ACCOUNT`
//! charge would (Rust's allocation flags cannot say `__GFP_RETRY_MAYFAIL`).
//! So each charged allocation first makes sure of the room it needs
//! ([`Charge::room`]).

use super::bindings;
use core::ptr::NonNull;
use kernel::{
    alloc::{flags, Flags},
    prelude::*,
};

/// Room a verb asks for beyond what it says it allocates: an object's
/// small allocations beside its big one, the VMA and page table of the
/// mapping that follows a ring, a QP's kernel socket.
const SLACK: usize = 16 * 1024;

/// Room a buffer growing later asks for beyond its size: the slab's
/// rounding.
const ROUNDING: usize = kernel::page::PAGE_SIZE;

/// The memory cgroup an object's allocations are charged to.
///
/// # Invariants
///
/// `memcg`, when set, holds a reference to a memory cgroup.
pub struct Charge {
    memcg: Option<NonNull<bindings::mem_cgroup>>,
}

// SAFETY: The reference may be dropped, and the cgroup entered, from any
// thread.
unsafe impl Send for Charge {}
// SAFETY: `&Charge` only enters the cgroup, which any thread may do.
unsafe impl Sync for Charge {}

impl Charge {
    /// The calling process's cgroup: for an object a user creates.
    /// None when the process has no memory (a kernel thread) or is in the
    /// root cgroup, which is never charged.
    pub fn current() -> Self {
        // SAFETY: The current task is live; its `mm` is its own (or null)
        // for as long as it runs this.
        let mm = unsafe { (*bindings::get_current()).mm };
        if mm.is_null() {
            return Self { memcg: None };
        }
        // SAFETY: `mm` is the running task's; a non-null result holds a
        // reference.
        let memcg = NonNull::new(unsafe { bindings::get_mem_cgroup_from_mm(mm) });
        if let Some(m) = memcg {
            // SAFETY: `m` is referenced (just above).
            if unsafe { bindings::mem_cgroup_is_root(m.as_ptr()) } {
                // SAFETY: Releases the reference taken above.
                unsafe { bindings::mem_cgroup_put(m.as_ptr()) };
                return Self { memcg: None };
            }
        }
        // INVARIANT: A non-null `memcg` holds the reference taken above,
        // which `Drop` releases.
        Self { memcg }
    }

    /// No cgroup: a kernel consumer's object.
    pub fn kernel() -> Self {
        Self { memcg: None }
    }

    /// The caller's cgroup for a user's object (`user`), none otherwise.
    pub fn for_user(user: bool) -> Self {
        if user {
            Self::current()
        } else {
            Self::kernel()
        }
    }

    /// Whether allocations are charged (a user's object).
    pub fn accounts(&self) -> bool {
        self.memcg.is_some()
    }

    /// The flags this object allocates with, for allocations made in the
    /// creating process's own call, after [`Self::room`] (inside
    /// [`Self::run`] elsewhere).
    pub fn gfp(&self) -> Flags {
        if self.memcg.is_some() {
            flags::GFP_KERNEL_ACCOUNT
        } else {
            flags::GFP_KERNEL
        }
    }

    /// Runs `op`, which allocates up to about `bytes` with the flags it is
    /// given, charging that to this object's cgroup whatever the context;
    /// `ENOMEM` instead when the cgroup lacks the room (see the module's
    /// doc). Process context; may sleep.
    pub fn run<R>(&self, bytes: usize, op: impl FnOnce(Flags) -> Result<R>) -> Result<R> {
        self.scoped(bytes.saturating_add(ROUNDING), op)
    }

    /// `ENOMEM` unless the cgroup has room for about `bytes` more: for
    /// the allocations of a user's verb that follow, in its own call
    /// (with [`Self::gfp`]).
    pub fn room(&self, bytes: usize) -> Result {
        self.scoped(bytes.saturating_add(SLACK), |_| Ok(()))
    }

    /// [`Self::run`] with `room` bytes of room asked for.
    fn scoped<R>(&self, room: usize, op: impl FnOnce(Flags) -> Result<R>) -> Result<R> {
        let Some(m) = self.memcg else {
            return op(flags::GFP_KERNEL);
        };
        // SAFETY: `m` is referenced (type invariant) for as long as this
        // scope, which ends below.
        let old = unsafe { bindings::set_active_memcg(m.as_ptr()) };
        let r = room_now(room).and_then(|()| op(flags::GFP_KERNEL_ACCOUNT));
        // SAFETY: Restores the scope that was active before ours.
        unsafe { bindings::set_active_memcg(old) };
        r
    }
}

/// Whether the memory cgroup charged now (the charging scope's, else the
/// caller's) has room for `bytes` more: `ENOMEM` when it has not. Process
/// context; may sleep. `bytes` is what the caller is about to allocate
/// anyway, so the check costs no more than the allocation.
///
/// It takes that many pages with `__GFP_RETRY_MAYFAIL` (reclaiming the
/// cgroup's memory as needed, failing where reclaim finds too little, never
/// killing) and gives them back at once. Their charge stays in the CPU's
/// charge stock or goes back to the cgroup's margin, where the allocations
/// that follow find it. The pages are chained through their own first word,
/// so that holding them allocates nothing more.
fn room_now(bytes: usize) -> Result {
    let gfp = bindings::GFP_KERNEL_ACCOUNT | bindings::__GFP_RETRY_MAYFAIL | bindings::__GFP_NOWARN;
    let mut held: *mut bindings::page = core::ptr::null_mut();
    let mut r = Ok(());
    for _ in 0..bytes.div_ceil(kernel::page::PAGE_SIZE) {
        // SAFETY: Process context (the caller's promise); null on failure.
        let page = unsafe { bindings::alloc_pages(gfp, 0) };
        if page.is_null() {
            r = Err(ENOMEM);
            break;
        }
        // SAFETY: A fresh page of ours, mapped for the write, which fits
        // in it.
        unsafe {
            let va = bindings::kmap_local_page(page);
            va.cast::<*mut bindings::page>().write(held);
            bindings::kunmap_local(va);
        }
        held = page;
        // SAFETY: Process context, holding no lock.
        unsafe { bindings::cond_resched() };
    }
    while !held.is_null() {
        let page = held;
        // SAFETY: A page of ours taken above, whose first word names the
        // page taken before it (or null); freed once, here.
        unsafe {
            let va = bindings::kmap_local_page(page);
            held = va.cast::<*mut bindings::page>().read();
            bindings::kunmap_local(va);
            bindings::__free_pages(page, 0);
        }
    }
    r
}

impl Drop for Charge {
    fn drop(&mut self) {
        if let Some(m) = self.memcg {
            // SAFETY: Releases the reference taken in `current`.
            unsafe { bindings::mem_cgroup_put(m.as_ptr()) };
        }
    }
}
