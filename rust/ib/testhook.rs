// SPDX-License-Identifier: GPL-2.0

//! Hooks for the selftests, in the test build only (`RRXE_TEST_HOOKS=1`,
//! `cfg(rrxe_test_hooks)`): a test can hold the module at a named site
//! until it has put the other side of a race in place (see
//! `bindings/test_hooks.c`). In the module users build they are empty.

/// A place where the test build can hold the module.
#[derive(Clone, Copy)]
#[repr(u32)]
pub enum Site {
    /// A memory window's rkey resolution, between finding the window and
    /// taking its binding.
    MwResolve = 1,
    /// A copy by key, between finding the MR and copying its memory.
    MrCopy = 2,
    /// The receive path's entry in process context, for each packet.
    Rx = 3,
}

/// Holds the caller here if the test build's `test_hold_site` names
/// `site` (a bounded busy wait: any context). Nothing otherwise.
#[inline(always)]
pub fn hold(site: Site) {
    #[cfg(rrxe_test_hooks)]
    // SAFETY: The hook only reads its parameters and busy-waits.
    unsafe {
        super::bindings::rrxe_test_hold(site as u32)
    };
    #[cfg(not(rrxe_test_hooks))]
    let _ = site;
}
