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
//! Readers take no lock: the writers (the two callbacks, serialised by a
//! lock of their own) publish the copy in atomic words under a sequence
//! count, as the kernel's seqcount does, and a reader that overlapped a
//! change reads again. A lock taken and released for every packet cost
//! more than the scan itself (three times per RC request on its critical
//! path: the sender twice, the receiver once).
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h)

use super::{Device, Driver};
use crate::bindings;
use core::sync::atomic::{fence, AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
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

/// How many times a reader reads again after overlapping a change before
/// it takes the writers' lock instead.
const READ_TRIES: usize = 4;

/// An entry as words: the port, then the GID's two halves (native order).
fn words(port: u32, gid: &[u8; 16]) -> [u64; 3] {
    let mut hi = [0u8; 8];
    let mut lo = [0u8; 8];
    hi.copy_from_slice(&gid[..8]);
    lo.copy_from_slice(&gid[8..]);
    [
        u64::from(port),
        u64::from_ne_bytes(hi),
        u64::from_ne_bytes(lo),
    ]
}

/// A device's own RoCEv2 GIDs.
///
/// # Invariants
///
/// `seq` is odd only while a writer, holding `gids`, changes the published
/// copy (`len`, `overflow`, `words`); when it is even, the published copy
/// is the one in `gids`.
#[pin_data]
pub(crate) struct GidCache {
    /// The writers' copy; its lock serialises the writers.
    #[pin]
    gids: SpinLockIrq<Gids>,
    /// Counts the changes to the published copy, twice each.
    seq: AtomicU32,
    /// Published: entries in use.
    len: AtomicUsize,
    /// Published: the copy overflowed.
    overflow: AtomicBool,
    /// Published: each entry as [`words`].
    words: [[AtomicU64; 3]; CAPACITY],
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
            seq: AtomicU32::new(0),
            len: AtomicUsize::new(0),
            overflow: AtomicBool::new(false),
            words: [const { [const { AtomicU64::new(0) }; 3] }; CAPACITY],
        })
    }

    /// Publishes the writers' copy `gids` (its lock held) for the readers.
    fn publish(&self, gids: &Gids) {
        let s = self.seq.load(Ordering::Relaxed);
        // INVARIANT: Odd while the published copy changes, under the lock.
        self.seq.store(s.wrapping_add(1), Ordering::Relaxed);
        fence(Ordering::Release);
        for (w, (port, gid)) in self.words.iter().zip(&gids.entries[..gids.len]) {
            for (a, v) in w.iter().zip(words(*port, gid)) {
                a.store(v, Ordering::Relaxed);
            }
        }
        self.len.store(gids.len, Ordering::Relaxed);
        self.overflow.store(gids.overflow, Ordering::Relaxed);
        self.seq.store(s.wrapping_add(2), Ordering::Release);
    }

    /// [`Self::contains`] under the writers' lock.
    fn contains_locked(&self, port: u32, gid: &[u8; 16]) -> Option<bool> {
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

    /// Whether `gid` is one of port `port`'s GIDs; `None` when the copy
    /// cannot tell (it overflowed) and the core's table must.
    /// Takes no lock unless a change overlaps the read again and again.
    pub(crate) fn contains(&self, port: u32, gid: &[u8; 16]) -> Option<bool> {
        let want = words(port, gid);
        for _ in 0..READ_TRIES {
            let s = self.seq.load(Ordering::Acquire);
            if s & 1 == 0 {
                let overflow = self.overflow.load(Ordering::Relaxed);
                let n = self.len.load(Ordering::Relaxed).min(CAPACITY);
                let found = self.words[..n].iter().any(|w| {
                    w.iter()
                        .zip(want)
                        .all(|(a, v)| a.load(Ordering::Relaxed) == v)
                });
                // The reads above come before the second read of `seq`.
                fence(Ordering::Acquire);
                if self.seq.load(Ordering::Relaxed) == s {
                    return (!overflow).then_some(found);
                }
            }
            core::hint::spin_loop();
        }
        self.contains_locked(port, gid)
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
        } else {
            let n = g.len;
            g.entries[n] = (port, *gid);
            g.len = n + 1;
        }
        self.publish(&g);
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
            self.publish(&g);
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
