// SPDX-License-Identifier: GPL-2.0

//! Debug lines a user switches on at run time, one site at a time: the
//! `debug` module parameter (declared in the C helper file) holds one bit
//! a site, and a line goes to the kernel log at `KERN_DEBUG`, prefixed
//! with `rrxe` and the device's name (no `ibdev_*` printer at that level
//! is exported, and `ibdev_dbg` without dynamic debug prints nothing). It works
//! with or without `CONFIG_DYNAMIC_DEBUG` (the kernel crate's `pr_debug!`
//! does not reach dynamic debug). A site that is off costs a load and a
//! test.

use super::{
    bindings,
    device::{Device, Driver},
};

/// Whether site `bit` of the `debug` parameter is on.
#[inline]
pub fn enabled(bit: u32) -> bool {
    // SAFETY: Reads an `unsigned long` parameter with `READ_ONCE`.
    let mask = unsafe { bindings::rrxe_debug_mask() } as u64;
    bit < u64::BITS && mask & (1 << bit) != 0
}

/// Prints `args` (ending with a newline) at `KERN_DEBUG`, after `rrxe` and
/// the name of `dev`. Any context.
pub fn print<T: Driver>(dev: &Device<T>, args: core::fmt::Arguments<'_>) {
    // SAFETY: `dev` is live; `args` is a valid `fmt::Arguments` for the
    // call, which the C side formats with `%pA`.
    unsafe { bindings::rrxe_ibdev_dbg(dev.as_raw(), core::ptr::from_ref(&args).cast()) };
}
