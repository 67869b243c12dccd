// SPDX-License-Identifier: GPL-2.0

//! A device's own RoCEv2 GIDs, as the core adds and deletes them (the
//! `add_gid` and `del_gid` callbacks), so that asking whether a GID is one
//! of the device's own looks at a few entries instead of scanning the
//! core's table.
//!
//! Every packet asks: a receiver whether it is addressed to the device, a
//! sender whether its peer is a QP of the same device. A peer on another
//! host is a miss, and a miss in the core's table (`rdma_find_gid_by_port`)
//! walks every one of its entries (1024 on soft-RoCE devices), under its
//! lock, per packet.
//!
//! The core calls `add_gid` before the new entry is visible in its table
//! and `del_gid` after the entry stopped being visible, so the copy here
//! never misses a GID the table holds. A device with more GIDs than the
//! copy holds asks the core's table from then on.
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h)

use super::{Device, Driver};
use crate::ib::bindings;
use kernel::{new_spinlock_irq, prelude::*, sync::SpinLockIrq};

/// How many GIDs the copy holds: a netdev's IPv4 address, its IPv6
/// link-local and a few global addresses, with room to spare.
const CAPACITY: usize = 16;

/// The GID type of RoCEv2, the only one these devices use.
const ROCE_V2: bindings::ib_gid_type = bindings::ib_gid_type_IB_GID_TYPE_ROCE_UDP_ENCAP;

/// The GIDs under the lock.
struct Gids {
    /// Port and GID of each entry in use.
    entries: [(u32, [u8; 16]); CAPACITY],
    /// Entries in use.
    len: usize,
    /// More GIDs were added than fit: the core's table answers, for the
    /// rest of the device's life.
    overflow: bool,
}

/// A device's own RoCEv2 GIDs.
#[pin_data]
pub(crate) struct GidCache {
    #[pin]
    gids: SpinLockIrq<Gids>,
}

impl GidCache {
    /// An empty copy (a device before registration has no GID).
    pub(crate) fn new() -> impl PinInit<Self> {
        pin_init!(Self {
            gids <- new_spinlock_irq!(
                Gids {
                    entries: [(0, [0; 16]); CAPACITY],
                    len: 0,
                    overflow: false,
                },
                "ib::GidCache::gids"
            ),
        })
    }

    /// Whether `gid` is one of port `port`'s GIDs; `None` when the copy
    /// cannot tell (it overflowed) and the core's table must.
    pub(crate) fn contains(&self, port: u32, gid: &[u8; 16]) -> Option<bool> {
        let g = self.gids.lock();
        if g.overflow {
            return None;
        }
        Some(
            g.entries[..g.len]
                .iter()
                .any(|(p, x)| *p == port && x == gid),
        )
    }

    fn add(&self, port: u32, gid: &[u8; 16]) {
        let mut g = self.gids.lock();
        if g.entries[..g.len]
            .iter()
            .any(|(p, x)| *p == port && x == gid)
        {
            return;
        }
        if g.len == CAPACITY {
            g.overflow = true;
            return;
        }
        let n = g.len;
        g.entries[n] = (port, *gid);
        g.len = n + 1;
    }

    fn del(&self, port: u32, gid: &[u8; 16]) {
        let mut g = self.gids.lock();
        let n = g.len;
        if let Some(i) = g.entries[..n]
            .iter()
            .position(|(p, x)| *p == port && x == gid)
        {
            g.entries.swap(i, n - 1);
            g.len = n - 1;
        }
    }
}

/// Port and GID of a RoCEv2 GID attribute, `None` for other types.
///
/// # Safety
///
/// `attr` must be valid for reads for the call.
unsafe fn roce_v2(attr: *const bindings::ib_gid_attr) -> Option<(u32, [u8; 16])> {
    // SAFETY: The caller guarantees `attr` is valid.
    let a = unsafe { &*attr };
    if a.gid_type != ROCE_V2 {
        return None;
    }
    // SAFETY: Every member of the GID union is plain bytes.
    Some((a.port_num, unsafe { *a.gid.raw.as_ref() }))
}

/// The `add_gid` op: a GID is about to appear in the core's table.
///
/// # Safety
///
/// `attr` must be a GID attribute of a live device created by this layer
/// for `T`, valid for the call.
pub(super) unsafe extern "C" fn add_gid_callback<T: Driver>(
    attr: *const bindings::ib_gid_attr,
    _context: *mut *mut c_void,
) -> c_int {
    // SAFETY: The caller guarantees `attr` is valid.
    if let Some((port, gid)) = unsafe { roce_v2(attr) } {
        // SAFETY: A live device of this layer for `T` (the caller's
        // guarantee); its data lives until `dealloc_driver`.
        let dev = unsafe { Device::<T>::from_raw((*attr).device) };
        dev.gids.add(port, &gid);
    }
    0
}

/// The `del_gid` op: a GID left the core's table.
///
/// # Safety
///
/// As for [`add_gid_callback`].
pub(super) unsafe extern "C" fn del_gid_callback<T: Driver>(
    attr: *const bindings::ib_gid_attr,
    _context: *mut *mut c_void,
) -> c_int {
    // SAFETY: The caller guarantees `attr` is valid.
    if let Some((port, gid)) = unsafe { roce_v2(attr) } {
        // SAFETY: As in `add_gid_callback`.
        let dev = unsafe { Device::<T>::from_raw((*attr).device) };
        dev.gids.del(port, &gid);
    }
    0
}
