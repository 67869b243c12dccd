// SPDX-License-Identifier: GPL-2.0

//! rrxe's own C declarations, seen from the provider: the module
//! parameters `link_type`, `dm_size` and `debug` (C declares them, for the
//! string parameter and `dm_size`'s check when set), the uverbs methods
//! and attributes rrxe adds (`include/uapi/rdma/rrxe-abi.h`, whose tree
//! only the C macros can build), the debug printer, and the test build's
//! hooks (`bindings/test_hooks.c`). The one provider file that names a
//! binding, and it names only rrxe's own (`rrxe_*`, `RRXE_*`) and the
//! types in their signatures, never a kernel function: those are the `ib`
//! and `net` layers' business.

use crate::bindings;
use crate::ib::{
    device::{Device, UapiDefinitions},
    dm::Dm,
};
use crate::rrxe::device::Rrxe;
use kernel::prelude::*;

/// rrxe's uverbs tree: the mmap offset of DM_ALLOC, the DM_QUERY and
/// PD_QUERY methods.
pub fn driver_def() -> Option<UapiDefinitions> {
    // SAFETY: A static, terminated array in the C helper file.
    unsafe { UapiDefinitions::from_raw(bindings::rrxe_driver_def()) }
}

/// The driver-namespace attribute id of the mmap offset DM_ALLOC returns.
pub const ALLOC_DM_RESP_MMAP_OFFSET: u16 = {
    let id = bindings::rrxe_ib_alloc_dm_attrs_RRXE_IB_ATTR_ALLOC_DM_RESP_MMAP_OFFSET;
    // An attribute id is 16 bits on the wire (`struct ib_uverbs_attr`).
    assert!(id <= u16::MAX as u32);
    id as u16
};

// The C DM_QUERY method sees a DM as a `struct rrxe_dm_head`: the core's
// part, then the mmap offset.
const _: () = {
    use core::mem::offset_of;
    assert!(offset_of!(bindings::rrxe_dm_head, ib) == 0);
    assert!(offset_of!(bindings::rrxe_dm_head, mmap_offset) == Dm::<Rrxe>::MMAP_OFFSET_AT);
};

/// The configured link type name (module parameter `link_type`).
pub fn link_type() -> &'static CStr {
    // SAFETY: The parameter buffer is static and NUL-terminated; it is
    // read-only after load (permissions 0444).
    unsafe { CStr::from_char_ptr(bindings::rrxe_link_type().cast()) }
}

const _: () = assert!(bindings::RRXE_MAX_DM_SIZE as u64 == crate::logic::dm::MAX_DM_SIZE);

/// The `dm_size` module parameter: the device memory a new device gets, in
/// bytes. Writable at runtime, and refused when set unless whole pages up
/// to `logic::dm::MAX_DM_SIZE`; callers validate what they read all the
/// same.
pub fn dm_size_param() -> u64 {
    // SAFETY: Reads an `unsigned long` parameter with `READ_ONCE`.
    unsafe { bindings::rrxe_dm_size() as u64 }
}

/// Whether site `bit` of the `debug` parameter is on.
#[inline]
pub fn debug_enabled(bit: u32) -> bool {
    // SAFETY: Reads an `unsigned long` parameter with `READ_ONCE`.
    let mask = unsafe { bindings::rrxe_debug_mask() } as u64;
    bit < u64::BITS && mask & (1 << bit) != 0
}

/// Prints `args` (ending with a newline) at `KERN_DEBUG`, after `rrxe` and
/// the name of `dev`. Any context.
///
/// No `ibdev_*` printer at that level is exported, and `ibdev_dbg` without
/// dynamic debug prints nothing; the kernel crate's `pr_debug!` does not
/// reach dynamic debug either. So C prints, with `%pA`.
pub fn debug_print(dev: &Device<Rrxe>, args: core::fmt::Arguments<'_>) {
    // SAFETY: `dev` is live; `args` is a valid `fmt::Arguments` for the
    // call, which the C side formats with `%pA`.
    unsafe { bindings::rrxe_ibdev_dbg(dev.as_raw(), core::ptr::from_ref(&args).cast()) };
}

/// A place where the test build can hold the module (`test_hold_site`;
/// `enum rrxe_test_site` in `net_glue.h`).
#[derive(Clone, Copy)]
#[repr(u32)]
pub enum Site {
    /// A memory window's rkey resolution, between finding the window and
    /// taking its binding.
    MwResolve = bindings::rrxe_test_site_RRXE_TEST_SITE_MW_RESOLVE,
    /// A copy by key, between finding the MR and copying its memory.
    MrCopy = bindings::rrxe_test_site_RRXE_TEST_SITE_MR_COPY,
    /// The receive path's entry in process context, for each packet.
    Rx = bindings::rrxe_test_site_RRXE_TEST_SITE_RX,
    /// A UD or UC WQE failed: its error completion is posted.
    SendFailed = bindings::rrxe_test_site_RRXE_TEST_SITE_SEND_FAILED,
}

/// Holds the caller here if the test build's `test_hold_site` names
/// `site` (a bounded busy wait: any context), so that a selftest can put
/// the other side of a race in place. Nothing in the module users build
/// (`RRXE_TEST_HOOKS=1`, `cfg(rrxe_test_hooks)`, makes the test build).
#[inline(always)]
pub fn test_hold(site: Site) {
    #[cfg(rrxe_test_hooks)]
    // SAFETY: The hook only reads its parameters and busy-waits.
    unsafe {
        bindings::rrxe_test_hold(site as u32)
    };
    #[cfg(not(rrxe_test_hooks))]
    let _ = site;
}
