// SPDX-License-Identifier: GPL-2.0

//! `rdma link add NAME type TYPE netdev DEV`: netlink link operations.

use super::bindings;
use crate::net::netdev::NetDev;
use kernel::{error::from_result, prelude::*, types::Opaque};

/// Creates devices for `rdma link add`.
pub trait LinkHandler: Sync + 'static {
    /// Creates a device named `name` on `ndev`.
    fn newlink(name: &CStr, ndev: &NetDev) -> Result;
}

/// Registered link operations.
///
/// # Invariants
///
/// `ops` is registered with `rdma_link_register` for this object's lifetime
/// and is pinned; its `type_` points to a static string.
#[pin_data(PinnedDrop)]
pub struct LinkOps<H: LinkHandler> {
    #[pin]
    ops: Opaque<bindings::rdma_link_ops>,
    _h: core::marker::PhantomData<H>,
}

// SAFETY: After registration only the core touches `ops`, under its lock.
unsafe impl<H: LinkHandler> Send for LinkOps<H> {}
// SAFETY: See above.
unsafe impl<H: LinkHandler> Sync for LinkOps<H> {}

impl<H: LinkHandler> LinkOps<H> {
    /// Registers link type `type_`.
    pub fn register(type_: &'static CStr) -> Result<Pin<KBox<Self>>> {
        let this = KBox::pin_init(
            pin_init!(Self {
                ops <- Opaque::init_zeroed(),
                _h: core::marker::PhantomData,
            }),
            GFP_KERNEL,
        )?;
        let ops = this.ops.get();
        // SAFETY: `ops` is pinned, zeroed and ours; it is unregistered in drop.
        unsafe {
            (*ops).type_ = type_.as_char_ptr();
            (*ops).newlink = Some(Self::newlink);
            bindings::rdma_link_register(ops);
        }
        Ok(this)
    }

    /// The `newlink` callback of `rdma link add`.
    ///
    /// # Safety
    ///
    /// The arguments of the core's `newlink` call: a NUL-terminated name and
    /// a netdev the core holds, for the call.
    unsafe extern "C" fn newlink(name: *const c_char, ndev: *mut bindings::net_device) -> c_int {
        from_result(|| {
            // SAFETY: The core passes a NUL-terminated name and a netdev it
            // holds for the duration of the call.
            let (name, ndev) =
                unsafe { (CStr::from_char_ptr(name.cast()), NetDev::from_raw(ndev)) };
            H::newlink(name, ndev)?;
            Ok(0)
        })
    }
}

#[pinned_drop]
impl<H: LinkHandler> PinnedDrop for LinkOps<H> {
    fn drop(self: Pin<&mut Self>) {
        // SAFETY: Registered in `register`; unregistering waits for running
        // `newlink` calls (the core's link-ops lock).
        unsafe { bindings::rdma_link_unregister(self.ops.get()) };
    }
}
