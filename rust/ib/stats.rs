// SPDX-License-Identifier: GPL-2.0

//! Port hardware counters (`/sys/class/infiniband/DEV/ports/1/hw_counters`
//! and `rdma statistic`), and the performance management agent that
//! reports from them (PMA MADs on QP1, sysfs `ports/N/counters/`). The
//! driver names its counters ([`Driver::HW_COUNTERS`], a table of
//! [`StatDesc`]s) and reads their values ([`Driver::hw_counters`],
//! [`Driver::pma_counters`]).

use super::{
    bindings,
    device::{Device, Driver},
};
use crate::logic::pma;
use core::ffi::CStr;
use kernel::prelude::*;

/// A counter's descriptor (`struct rdma_stat_desc`): its name.
#[repr(transparent)]
pub struct StatDesc(bindings::rdma_stat_desc);

// SAFETY: A descriptor only points at a static name, which nobody writes.
unsafe impl Sync for StatDesc {}

impl StatDesc {
    /// The descriptor of a counter named `name`.
    pub const fn new(name: &'static CStr) -> Self {
        Self(bindings::rdma_stat_desc {
            name: name.to_bytes_with_nul().as_ptr(),
            flags: 0,
            priv_: core::ptr::null(),
        })
    }
}

/// The `alloc_hw_port_stats` op: a stats structure over the driver's
/// table of names.
///
/// # Safety
///
/// None beyond the C signature: the device and port are not used.
pub(super) unsafe extern "C" fn alloc_hw_port_stats_callback<T: Driver>(
    _ib: *mut bindings::ib_device,
    _port: u32,
) -> *mut bindings::rdma_hw_stats {
    let descs = T::HW_COUNTERS;
    let Ok(num) = c_int::try_from(descs.len()) else {
        return core::ptr::null_mut();
    };
    // SAFETY: `descs` is a static table of `num` descriptors (`StatDesc`
    // is a transparent `rdma_stat_desc`), which the structure keeps.
    unsafe {
        bindings::rdma_alloc_hw_stats_struct(
            descs.as_ptr().cast(),
            num,
            bindings::RDMA_HW_STATS_DEFAULT_LIFESPAN as kernel::ffi::c_ulong,
        )
    }
}

/// The `get_hw_stats` op: the port's counters, read from the driver.
///
/// # Safety
///
/// The arguments of the core's `get_hw_stats` call on a device of `T`: a
/// live device and a stats structure from `alloc_hw_port_stats` (or
/// null), for the call.
pub(super) unsafe extern "C" fn get_hw_stats_callback<T: Driver>(
    ib: *mut bindings::ib_device,
    stats: *mut bindings::rdma_hw_stats,
    port: u32,
    _index: c_int,
) -> c_int {
    if port == 0 || stats.is_null() {
        return EINVAL.to_errno();
    }
    let num = T::HW_COUNTERS.len();
    // SAFETY: `stats` came from `alloc_hw_port_stats`, so `value` has an
    // entry for each of the driver's counters; the core holds its lock for
    // the call, and nothing else refers to them meanwhile.
    let values = unsafe { (*stats).value.as_mut_slice(num) };
    // SAFETY: A live device of ours.
    T::hw_counters(unsafe { Device::<T>::from_raw(ib) }, port, values);
    num as c_int
}

/// The `process_mad` op: the performance management agent, answering
/// PortCounters and ClassPortInfo MADs from the same counters.
///
/// # Safety
///
/// The arguments of a `process_mad` call on a device of `T` (from the MAD
/// layer or sysfs): a live device and two distinct MADs (or nulls), for
/// the call.
pub(super) unsafe extern "C" fn process_mad_callback<T: Driver>(
    ib: *mut bindings::ib_device,
    _flags: c_int,
    port: u32,
    _wc: *const bindings::ib_wc,
    _grh: *const bindings::ib_grh,
    inp: *const bindings::ib_mad,
    out: *mut bindings::ib_mad,
    _out_size: *mut usize,
    _out_pkey_index: *mut u16,
) -> c_int {
    const _: () = assert!(core::mem::size_of::<bindings::ib_mad>() == pma::MAD_SIZE);
    if port != 1 || inp.is_null() || out.is_null() {
        return bindings::ib_mad_result_IB_MAD_RESULT_FAILURE as c_int;
    }
    // SAFETY: A live device of ours.
    let c = T::pma_counters(unsafe { Device::<T>::from_raw(ib) }, port);
    // SAFETY: The MAD layer and sysfs pass two distinct `ib_mad`s
    // (256 bytes, checked above), valid for the call; bytes have no
    // alignment or validity requirements.
    let (i, o) = unsafe {
        (
            &*inp.cast::<[u8; pma::MAD_SIZE]>(),
            &mut *out.cast::<[u8; pma::MAD_SIZE]>(),
        )
    };
    match pma::answer(i, &c, o) {
        pma::Answer::NotMine => bindings::ib_mad_result_IB_MAD_RESULT_SUCCESS as c_int,
        pma::Answer::Reply => {
            (bindings::ib_mad_result_IB_MAD_RESULT_SUCCESS
                | bindings::ib_mad_result_IB_MAD_RESULT_REPLY) as c_int
        }
    }
}
