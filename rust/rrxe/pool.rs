// SPDX-License-Identifier: GPL-2.0

//! Object tables: bounded, indexed, reference-counted.
//!
//! An object lives in an `Arc`; the table holds one reference and hands out
//! clones on lookup, so a lookup racing with a destroy either gets a live
//! object or nothing, never a freed one. Indices are allocated cyclically
//! within a fixed range, so a freed index is not reused at once.

use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use kernel::{
    new_mutex,
    prelude::*,
    sync::{Arc, Mutex},
    xarray::{AllocKind, XArray},
};

/// A table of objects of type `T`, indexed within `[min, max]`, holding at
/// most `limit` objects.
#[pin_data]
pub struct Pool<T: Send + Sync + 'static> {
    #[pin]
    xa: XArray<Arc<T>>,
    /// Serialises allocation: the probe for a free index and the store must
    /// not interleave with another allocation.
    #[pin]
    alloc: Mutex<()>,
    min: u32,
    max: u32,
    limit: u32,
    count: AtomicU32,
    next: AtomicU32,
}

impl<T: Send + Sync + 'static> Pool<T> {
    /// A table for indices `min..=max` with at most `limit` objects.
    pub fn new(first: u32, last: u32, most: u32) -> impl PinInit<Self> {
        pin_init!(Self {
            xa <- XArray::new(AllocKind::Alloc),
            alloc <- new_mutex!((), "rrxe::Pool::alloc"),
            min: first,
            max: last,
            limit: most,
            count: AtomicU32::new(0),
            next: AtomicU32::new(first),
        })
    }

    /// Number of objects in the table.
    pub fn count(&self) -> u32 {
        self.count.load(Ordering::Relaxed)
    }

    /// Allocates an index, builds the object for it with `make`, and stores
    /// it. Fails with `ENOMEM` when the table is full.
    pub fn insert(&self, make: impl FnOnce(u32) -> Result<Arc<T>>) -> Result<(u32, Arc<T>)> {
        self.count
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                (n < self.limit).then_some(n + 1)
            })
            .map_err(|_| ENOMEM)?;
        let r = self.insert_reserved(make);
        if r.is_err() {
            self.count.fetch_sub(1, Ordering::Relaxed);
        }
        r
    }

    fn insert_reserved(&self, make: impl FnOnce(u32) -> Result<Arc<T>>) -> Result<(u32, Arc<T>)> {
        let _a = self.alloc.lock();
        let span = self.max - self.min + 1;
        let start = self.next.load(Ordering::Relaxed).clamp(self.min, self.max) - self.min;
        let idx = {
            let g = self.xa.lock();
            (0..span)
                .map(|i| self.min + (start + i) % span)
                .find(|&i| g.get(i as usize).is_none())
                .ok_or(ENOMEM)?
        };
        let obj = make(idx)?;
        let mut g = self.xa.lock();
        match g.store(idx as usize, obj.clone(), GFP_KERNEL) {
            Ok(None) => {}
            // Only allocation stores, and it is serialised: the slot was free.
            Ok(Some(_)) => return Err(EBUSY),
            Err(e) => return Err(e.error),
        }
        drop(g);
        let next = if idx == self.max { self.min } else { idx + 1 };
        self.next.store(next, Ordering::Relaxed);
        Ok((idx, obj))
    }

    /// The object at `idx`, with a reference taken.
    pub fn get(&self, idx: u32) -> Option<Arc<T>> {
        if idx < self.min || idx > self.max {
            return None;
        }
        let g = self.xa.lock();
        g.get(idx as usize).map(Arc::from)
    }

    /// Replaces the object at `idx` with `new`, if `old` is what is there.
    pub fn replace(&self, idx: u32, old: &Arc<T>, new: Arc<T>) -> Result {
        let _a = self.alloc.lock();
        let mut g = self.xa.lock();
        match g.get(idx as usize) {
            Some(cur) if core::ptr::eq(&*cur, &**old) => {}
            _ => return Err(EINVAL),
        }
        let r = g.store(idx as usize, new, GFP_KERNEL);
        drop(g);
        // The previous object (if this was its last reference) is dropped
        // here, outside the lock.
        match r {
            Ok(_) => Ok(()),
            Err(e) => Err(e.error),
        }
    }

    /// Removes the object at `idx` if it is `obj` (and not a replacement).
    pub fn remove_if(&self, idx: u32, obj: &Arc<T>) -> Option<Arc<T>> {
        let _a = self.alloc.lock();
        let mut g = self.xa.lock();
        match g.get(idx as usize) {
            Some(cur) if core::ptr::eq(&*cur, &**obj) => {}
            _ => return None,
        }
        let r = g.remove(idx as usize);
        drop(g);
        if r.is_some() {
            self.count.fetch_sub(1, Ordering::Relaxed);
        }
        r
    }

    /// Removes and returns the object at `idx`.
    pub fn remove(&self, idx: u32) -> Option<Arc<T>> {
        if idx < self.min || idx > self.max {
            return None;
        }
        let r = self.xa.lock().remove(idx as usize);
        if r.is_some() {
            self.count.fetch_sub(1, Ordering::Relaxed);
        }
        r
    }
}

/// Which indices of a range are in use, as one bit each, read without a
/// lock from any context: the receive softirq drops a packet for a QP
/// number no QP has before it queues the packet (a table lookup takes a
/// lock that softirq may not). The owner sets a bit once the object is in
/// its table and clears it before the object leaves, so a reader that
/// finds a bit clear is never wrong for long.
pub struct LiveSet {
    words: KVVec<AtomicU64>,
    min: u32,
    max: u32,
}

impl LiveSet {
    /// A set for indices `min..=max`, all clear.
    pub fn new(min: u32, max: u32) -> Result<Self> {
        let n = ((max - min) / 64 + 1) as usize;
        let mut words = KVVec::with_capacity(n, GFP_KERNEL)?;
        for _ in 0..n {
            words.push(AtomicU64::new(0), GFP_KERNEL)?;
        }
        Ok(Self { words, min, max })
    }

    fn bit(&self, idx: u32) -> Option<(&AtomicU64, u64)> {
        if idx < self.min || idx > self.max {
            return None;
        }
        let i = idx - self.min;
        Some((self.words.get((i / 64) as usize)?, 1u64 << (i % 64)))
    }

    /// Marks `idx` in use (`on`) or free.
    pub fn set(&self, idx: u32, on: bool) {
        if let Some((w, b)) = self.bit(idx) {
            if on {
                w.fetch_or(b, Ordering::Release);
            } else {
                w.fetch_and(!b, Ordering::Release);
            }
        }
    }

    /// Whether `idx` is in use.
    pub fn contains(&self, idx: u32) -> bool {
        self.bit(idx)
            .is_some_and(|(w, b)| w.load(Ordering::Acquire) & b != 0)
    }
}
