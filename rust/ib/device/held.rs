// SPDX-License-Identifier: GPL-2.0

//! A driver object's hold on its device: [`DeviceRef`].
//!
//! Something a driver keeps beyond a callback (a work item, a timer) that
//! must reach its device later holds a [`DeviceRef`], not a pointer back:
//! the reference keeps the device's memory, and [`DeviceRef::with`] lends
//! the device only while it is registered, the way ib_core's own work does
//! (`ib_device_try_get`). Unregistration waits for every loan to end
//! before it drops the driver's data.

use super::{registration::device_of, Device, Driver};
use crate::bindings;
use core::{marker::PhantomData, ptr::NonNull};

/// A counted reference to the memory of a [`Device`] of `T`.
///
/// # Invariants
///
/// `ib` is a device this layer created for `T`, and `self` holds one
/// reference on its `struct device` (`get_device`), so its allocation
/// lives until `self` is dropped.
pub struct DeviceRef<T: Driver> {
    ib: NonNull<bindings::ib_device>,
    _driver: PhantomData<T>,
}

// SAFETY: The reference is a kobject count, taken and dropped from any
// thread; the device is only lent out through `with`, whose registration
// reference makes it as usable as in any callback of the core.
unsafe impl<T: Driver> Send for DeviceRef<T> {}
// SAFETY: See above: `&DeviceRef` allows nothing but `with`.
unsafe impl<T: Driver> Sync for DeviceRef<T> {}

impl<T: Driver> DeviceRef<T> {
    /// A new reference to `dev`.
    pub fn new(dev: &Device<T>) -> Self {
        let ib = dev.as_raw();
        // SAFETY: `dev` is alive for the call; its `struct device` is
        // initialised from allocation on.
        unsafe { bindings::get_device(device_of(ib)) };
        // INVARIANT: A device of `T`, one reference taken above.
        Self {
            // SAFETY: From a reference: not null.
            ib: unsafe { NonNull::new_unchecked(ib) },
            _driver: PhantomData,
        }
    }

    /// Runs `op` on the device if it is still registered; `None` once its
    /// unregistration has begun. Unregistration waits for `op` to return,
    /// so `op` must not wait for anything that unregistration does first
    /// (the destruction of the device's objects, for one).
    pub fn with<R>(&self, op: impl FnOnce(&Device<T>) -> R) -> Option<R> {
        let ib = self.ib.as_ptr();
        // SAFETY: The memory is ours to read (type invariant).
        if !unsafe { bindings::ib_device_try_get(ib) } {
            return None;
        }
        // SAFETY: A device of `T` (type invariant) holding a registration
        // reference, taken above: its data stays alive until the put below
        // (`Device`'s invariants).
        let r = op(unsafe { Device::<T>::from_raw(ib) });
        // SAFETY: Drops the registration reference taken above.
        unsafe { bindings::ib_device_put(ib) };
        Some(r)
    }
}

impl<T: Driver> Drop for DeviceRef<T> {
    fn drop(&mut self) {
        // SAFETY: Drops the reference `new` took (type invariant).
        unsafe { bindings::put_device(device_of(self.ib.as_ptr())) };
    }
}
