// SPDX-License-Identifier: GPL-2.0

//! Device and port queries: the attributes of the device and of its port,
//! P_Keys and GIDs, as the `query_*` callbacks answer them.
//!
//! A device has one port, port 1, of link layer Ethernet (RoCE). Its GIDs
//! live in the core's GID cache, which ib_core fills from the netdev's
//! addresses.

use super::{Device, Driver};
use crate::ib::{bindings, udata::Udata};
use kernel::{error::from_result, prelude::*};

/// Link layer of every port: Ethernet (RoCE).
const LINK_LAYER_ETHERNET: bindings::rdma_link_layer =
    bindings::rdma_link_layer_IB_LINK_LAYER_ETHERNET;

impl<T: Driver> Device<T> {
    /// Active speed and width of an Ethernet port, as the core derives them
    /// from the netdev's link settings.
    pub fn eth_speed(&self, port: u32) -> Result<(u16, u8)> {
        let mut speed: u16 = 0;
        let mut width: u8 = 0;
        // SAFETY: The device is alive; both out-pointers are valid.
        kernel::error::to_result(unsafe {
            bindings::ib_get_eth_speed(self.as_raw(), port, &mut speed, &mut width)
        })?;
        Ok((speed, width))
    }

    /// Whether `gid` is one of port `port`'s RoCEv2 GIDs (a destination on
    /// this device).
    pub fn has_gid(&self, port: u32, gid: &[u8; 16]) -> bool {
        if let Some(mine) = self.gids.contains(port, gid) {
            return mine;
        }
        // SAFETY: All-zero is a valid GID union.
        let mut g: bindings::ib_gid = unsafe { core::mem::zeroed() };
        // SAFETY: Writing the raw member of a plain-data union.
        unsafe { *g.raw.as_mut() = *gid };
        // SAFETY: A live device and a GID for the call; the lookup returns
        // an error pointer, or a GID attribute with a reference taken.
        let a = unsafe {
            bindings::rdma_find_gid_by_port(
                self.as_raw(),
                &g,
                bindings::ib_gid_type_IB_GID_TYPE_ROCE_UDP_ENCAP,
                port,
                core::ptr::null_mut(),
            )
        };
        match kernel::error::from_err_ptr(a.cast_mut()) {
            Ok(a) if !a.is_null() => {
                // SAFETY: Drops the reference the lookup took.
                unsafe { bindings::rdma_put_gid_attr(a) };
                true
            }
            _ => false,
        }
    }
}

/// The `query_device` op.
///
/// # Safety
///
/// The arguments of the core's `query_device` call on a device of `T`: a
/// live device, an attribute structure to fill and a valid or null udata,
/// for the call.
pub(super) unsafe extern "C" fn query_device_callback<T: Driver>(
    ib: *mut bindings::ib_device,
    attr: *mut bindings::ib_device_attr,
    udata: *mut bindings::ib_udata,
) -> c_int {
    from_result(|| {
        // SAFETY: The core passes a live device of ours and a valid
        // (possibly null) udata for the duration of the call.
        let (dev, udata) = unsafe { (Device::<T>::from_raw(ib), Udata::from_raw(udata)) };
        Udata::no_io(udata)?;
        let a = T::query_device(dev)?;
        // SAFETY: `attr` is valid for writes during the call.
        unsafe { a.write_to(attr) };
        Ok(0)
    })
}

/// The `query_port` op.
///
/// # Safety
///
/// The arguments of the core's `query_port` call on a device of `T`: a
/// live device and a port attribute structure to fill, for the call.
pub(super) unsafe extern "C" fn query_port_callback<T: Driver>(
    ib: *mut bindings::ib_device,
    port: u32,
    attr: *mut bindings::ib_port_attr,
) -> c_int {
    from_result(|| {
        if port != 1 {
            return Err(EINVAL);
        }
        // SAFETY: Live device of ours for the call.
        let dev = unsafe { Device::<T>::from_raw(ib) };
        let a = T::query_port(dev, port)?;
        // SAFETY: `attr` is valid during the call.
        unsafe { a.write_to(attr) };
        Ok(0)
    })
}

/// The `query_pkey` op.
///
/// # Safety
///
/// The arguments of the core's `query_pkey` call on a device of `T`: a
/// live device and a P_Key to write, for the call.
pub(super) unsafe extern "C" fn query_pkey_callback<T: Driver>(
    ib: *mut bindings::ib_device,
    port: u32,
    index: u16,
    pkey: *mut u16,
) -> c_int {
    from_result(|| {
        if port != 1 {
            return Err(EINVAL);
        }
        // SAFETY: Live device of ours for the call.
        let dev = unsafe { Device::<T>::from_raw(ib) };
        let v = T::query_pkey(dev, port, index)?;
        // SAFETY: `pkey` is valid for writes during the call.
        unsafe { pkey.write(v) };
        Ok(0)
    })
}

/// The `query_gid` op: GIDs of a RoCE port live in the core's GID cache,
/// which ib_core fills from the netdev's addresses; this answers from that
/// table.
///
/// # Safety
///
/// The arguments of the core's `query_gid` call: a live device and a GID
/// to write, for the call.
pub(super) unsafe extern "C" fn query_gid_callback(
    ib: *mut bindings::ib_device,
    port: u32,
    index: c_int,
    gid: *mut bindings::ib_gid,
) -> c_int {
    if port != 1 {
        return EINVAL.to_errno();
    }
    // SAFETY: Live device and a valid out-pointer for the call;
    // `rdma_query_gid` only reads the cache under its own lock.
    unsafe { bindings::rdma_query_gid(ib, port, index, gid) }
}

/// The `get_port_immutable` op.
///
/// # Safety
///
/// The arguments of the core's `get_port_immutable` call on a device of
/// `T`: a live device and the port's immutable data to fill, for the call.
pub(super) unsafe extern "C" fn get_port_immutable_callback<T: Driver>(
    ib: *mut bindings::ib_device,
    port: u32,
    out: *mut bindings::ib_port_immutable,
) -> c_int {
    from_result(|| {
        if port != 1 {
            return Err(EINVAL);
        }
        // SAFETY: Live device of ours for the call.
        let dev = unsafe { Device::<T>::from_raw(ib) };
        let p = T::port_immutable(dev, port)?;
        // SAFETY: `out` is valid for writes during the call.
        unsafe {
            (*out).pkey_tbl_len = p.pkey_tbl_len;
            (*out).gid_tbl_len = p.gid_tbl_len;
            (*out).core_cap_flags = if p.roce_udp_encap {
                bindings::RDMA_CORE_PORT_IBA_ROCE_UDP_ENCAP
            } else {
                0
            };
            (*out).max_mad_size = p.max_mad_size;
        }
        Ok(0)
    })
}

/// The `get_link_layer` op: every port is Ethernet.
///
/// # Safety
///
/// None beyond the C signature: no argument is used.
pub(super) unsafe extern "C" fn get_link_layer_callback(
    _ib: *mut bindings::ib_device,
    _port: u32,
) -> bindings::rdma_link_layer {
    LINK_LAYER_ETHERNET
}
