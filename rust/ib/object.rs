// SPDX-License-Identifier: GPL-2.0

//! Core-allocated verbs objects with driver data embedded after them.
//!
//! The IB core allocates user contexts and PDs itself, zeroed, at the size
//! the ops table declares (`size_ib_*`), and then calls the driver to fill
//! them. Here the C object comes first and the driver's data after it.

use super::{
    bindings,
    device::{Device, Driver},
};
use kernel::types::Opaque;

macro_rules! core_object {
    ($(#[$m:meta])* $name:ident, $cty:ty, $field:ident) => {
        $(#[$m])*
        ///
        /// # Invariants
        ///
        /// `data` is initialised from a successful alloc callback until the
        /// matching dealloc callback; references are only formed in between.
        #[repr(C)]
        pub struct $name<T: Driver> {
            ib: Opaque<$cty>,
            data: T::$field,
        }

        impl<T: Driver> $name<T> {
            /// The driver's data.
            pub fn data(&self) -> &T::$field {
                &self.data
            }

            /// The device this object belongs to.
            pub fn device(&self) -> &Device<T> {
                // SAFETY: The core sets `device` before calling the driver and
                // the device outlives its objects.
                unsafe { Device::from_raw((*self.ib.get()).device) }
            }

            pub(crate) fn as_raw(&self) -> *mut $cty {
                self.ib.get()
            }

            /// # Safety
            ///
            /// `ptr` must be an object the core allocated with this type's size
            /// whose data is initialised, alive for `'a`.
            pub(crate) unsafe fn from_raw<'a>(ptr: *mut $cty) -> &'a Self {
                const { assert!(core::mem::offset_of!(Self, ib) == 0) };
                // CAST: The C object is the first field of this `#[repr(C)]` type.
                // SAFETY: Validity is the caller's promise.
                unsafe { &*ptr.cast::<Self>() }
            }

            /// # Safety
            ///
            /// `ptr` must be a fresh object the core allocated with this type's
            /// size; its data part must not be initialised yet.
            pub(crate) unsafe fn init_data(ptr: *mut $cty, data: T::$field) {
                const { assert!(core::mem::align_of::<Self>() <= 8) };
                // SAFETY: In bounds of the allocation (the caller's promise).
                unsafe { (&raw mut (*ptr.cast::<Self>()).data).write(data) };
            }

            /// # Safety
            ///
            /// `ptr`'s data must be initialised and not used afterwards.
            pub(crate) unsafe fn drop_data(ptr: *mut $cty) {
                // SAFETY: The caller's promise.
                unsafe { core::ptr::drop_in_place(&raw mut (*ptr.cast::<Self>()).data) };
            }
        }
    };
}

core_object!(
    /// A user context: one per process that opened the device.
    Ucontext, bindings::ib_ucontext, Ucontext
);
core_object!(
    /// A protection domain.
    Pd, bindings::ib_pd, Pd
);
core_object!(
    /// A completion queue.
    Cq, bindings::ib_cq, Cq
);
core_object!(
    /// A shared receive queue.
    Srq, bindings::ib_srq, Srq
);
core_object!(
    /// An address handle.
    Ah, bindings::ib_ah, Ah
);
core_object!(
    /// A queue pair: the core's `struct ib_qp`, the driver's `T::Qp` after
    /// it (rrxe's QP types are described at `rrxe::qp::QpShared`).
    Qp, bindings::ib_qp, Qp
);
core_object!(
    /// A memory window (allocated by the core).
    Mw, bindings::ib_mw, Mw
);
core_object!(
    /// An XRC domain (allocated by the core; see [`super::xrcd`]).
    Xrcd, bindings::ib_xrcd, Xrcd
);
