// SPDX-License-Identifier: GPL-2.0

//! Safe abstractions over the kernel's RDMA core (`ib_core`).
//!
//! This layer is driver-agnostic and, with the net layer
//! ([`crate::net`]), the only part of rrxe that touches the generated
//! bindings; it uses the net layer where ib_core plumbing needs it (a
//! device's netdev, its receive queue). A driver implements [`device::Driver`] for its
//! device, and one `#[vtable]` trait per object family for the types of its
//! objects ([`cq::CqOps`], [`qp::QpOps`], [`srq::SrqOps`], [`mr::MrOps`],
//! [`mw::MwOps`], [`dm::DmOps`], [`ah::AhOps`], [`xrcd::XrcdOps`],
//! [`pd::PdOps`] and [`pd::UcontextOps`]); each family's C callbacks live next to its
//! abstraction and fill the ops table only where the driver implements
//! them. Drivers use the typed wrappers here: [`device::Device`],
//! [`udata::Udata`], [`mmap::UserMmapEntry`] and [`link::LinkOps`].

use crate::bindings;
#[path = "../bindings/rxe_abi.rs"]
mod rxe_abi;

pub mod ah;
pub mod attr;
pub mod clock;
pub mod cq;
pub mod device;
pub mod dm;
pub mod link;
pub mod memcg;
pub mod mmap;
pub mod mr;
pub mod mw;
pub mod object;
pub mod pd;
pub mod qp;
pub mod srq;
pub mod stats;
pub mod udata;
pub mod umem;
pub mod upcall;
pub mod wr;
pub mod xrcd;

/// Initialises the layer's global state.
///
/// # Safety
///
/// Must be called exactly once, from module init, before anything else in
/// this layer is used.
pub unsafe fn init() {
    // SAFETY: The caller guarantees that this runs once, before any use.
    unsafe { device::init_registry() };
}

/// Releases the layer's global state. Call once at module exit, after every
/// device is gone (see [`device::unregister_all`]).
pub fn exit() {
    device::release_registry();
}

/// Fills `buf` with random bytes.
pub fn random_bytes(buf: &mut [u8]) {
    // SAFETY: `buf` is valid for writes of its length.
    unsafe { bindings::get_random_bytes(buf.as_mut_ptr().cast(), buf.len()) };
}

/// Number of possible CPUs.
pub fn num_possible_cpus() -> u32 {
    // SAFETY: Reads a global CPU mask weight.
    unsafe { bindings::num_possible_cpus() }
}

/// Yields the CPU if a reschedule is due (`cond_resched`). For loops that
/// may run long in process context.
///
/// Must not be called in atomic context (under a spinlock, in softirq or
/// hardirq); `might_sleep` debugging reports it there.
pub fn cond_resched() {
    // SAFETY: Plain call; it may sleep, which the documented contract of
    // this function leaves to the caller's context.
    unsafe { bindings::cond_resched() };
}

/// Whether a rate-limited message may be printed now (`printk_ratelimit`).
pub fn printk_ratelimit() -> bool {
    // SAFETY: Plain call into the printk rate limiter.
    unsafe { bindings::printk_ratelimit() != 0 }
}

/// `pr_err!`, rate-limited: for errors that userspace, the wire or the
/// command line can trigger at will.
#[macro_export]
macro_rules! pr_err_ratelimited {
    ($($arg:tt)*) => {
        if $crate::ib::printk_ratelimit() {
            ::kernel::pr_err!($($arg)*);
        }
    };
}
