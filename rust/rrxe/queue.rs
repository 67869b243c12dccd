// SPDX-License-Identifier: GPL-2.0

//! Rings shared with userspace in the rxe layout (`logic::ring`).
//!
//! The kernel keeps its own copy of the geometry and of the index it owns,
//! and reads the other side's index masked, so nothing userspace writes
//! into the mapping can move the kernel out of bounds. Slots are copied
//! byte-wise; no reference into the mapping is ever formed.

use crate::ib::{mmap::UserMmapEntry, object::Ucontext};
use crate::logic::ring::{self, Geometry};
use crate::rrxe::device::Rrxe;
use core::sync::atomic::{AtomicU32, Ordering};
use kernel::{prelude::*, transmute::AsBytes};

/// `struct mminfo` of the rxe ABI: where and how much to mmap.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct MmapInfo {
    /// The mmap offset.
    pub offset: u64,
    /// The mapping's length.
    pub size: u32,
    /// Zero.
    pub pad: u32,
}

// SAFETY: Plain integers, no padding (8 + 4 + 4 bytes; the size is checked
// against `struct mminfo` in `rust/bindings/rxe_abi.rs`).
unsafe impl AsBytes for MmapInfo {}

/// Which side of a ring the kernel is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// The kernel produces, userspace consumes (CQs).
    KernelProduces,
    /// Userspace produces, the kernel consumes (SQ, RQ, SRQ).
    KernelConsumes,
}

/// Where a ring lives.
enum Mem {
    /// Memory the owning process maps.
    User(UserMmapEntry),
    /// Kernel memory of a kernel QP's ring (the kernel is both sides), as
    /// words whose interior mutability lets the ring's methods write
    /// through the shared buffer, as they do through a user ring's.
    Kernel(KVVec<AtomicU32>),
    /// Released by the owner's destruction: the ring is empty and inert.
    Released,
}

impl Mem {
    /// The buffer; `None` once released.
    fn as_ptr(&self) -> Option<*mut u8> {
        match self {
            Mem::User(e) => Some(e.as_ptr()),
            // CAST: Bytes of `AtomicU32`s, which may be written through a
            // shared reference.
            Mem::Kernel(words) => Some(words.as_ptr().cast::<u8>().cast_mut()),
            Mem::Released => None,
        }
    }
}

/// A ring's memory, taken out by [`UserRing::release`]. Dropping it gives
/// the mmap entry back to the user context (or frees a kernel ring), which
/// may sleep: drop it outside spinlocks.
pub struct ReleasedRing {
    _mem: Mem,
}

/// A ring in the rxe layout: in memory the owning process maps, or (for
/// kernel QPs) in kernel memory.
///
/// # Invariants
///
/// Unless released, `entry`'s buffer holds at least `geo.buf_len()` bytes
/// and is page (user) or word (kernel) aligned; `own` (the kernel's index:
/// producer or consumer by `role`) is masked by `geo.index_mask`. A
/// released ring touches no memory: it is empty, full and inert.
pub struct UserRing {
    entry: Mem,
    geo: Geometry,
    role: Role,
    own: u32,
}

impl UserRing {
    /// A zeroed ring for `entries` entries of `elem` bytes, mappable by
    /// `uc`, of at most `max_bytes` (else `ENOMEM`).
    pub fn new(
        uc: &Ucontext<Rrxe>,
        role: Role,
        entries: u32,
        elem: u32,
        max_bytes: usize,
    ) -> Result<Self> {
        let geo = Geometry::new(entries, elem, max_bytes).ok_or(ENOMEM)?;
        let entry = Mem::User(UserMmapEntry::new(uc, geo.buf_len().ok_or(ENOMEM)?)?);
        // INVARIANT: The entry has at least `buf_len` bytes (page-rounded
        // vmalloc memory); both indices are 0.
        let r = Self {
            entry,
            geo,
            role,
            own: 0,
        };
        r.init_header();
        Ok(r)
    }

    fn init_header(&self) {
        if let Some(w) = self.index(ring::LOG2_ELEM_OFF) {
            w.store(self.geo.log2_elem, Ordering::Release);
        }
        if let Some(w) = self.index(ring::INDEX_MASK_OFF) {
            w.store(self.geo.index_mask, Ordering::Release);
        }
    }

    /// A zeroed kernel-memory ring the kernel consumes and fills itself
    /// ([`Self::produce`]), for kernel QPs.
    pub fn new_kernel(entries: u32, elem: u32, max_bytes: usize) -> Result<Self> {
        let geo = Geometry::new(entries, elem, max_bytes).ok_or(ENOMEM)?;
        let len = geo.buf_len().ok_or(ENOMEM)?;
        let words = len.div_ceil(4);
        let mut buf = KVVec::with_capacity(words, GFP_KERNEL)?;
        for _ in 0..words {
            buf.push(AtomicU32::new(0), GFP_KERNEL)?;
        }
        // INVARIANT: `len` bytes, word aligned (kmalloc or vmalloc); both
        // indices 0.
        let r = Self {
            entry: Mem::Kernel(buf),
            geo,
            role: Role::KernelConsumes,
            own: 0,
        };
        r.init_header();
        Ok(r)
    }

    /// Appends an entry as the producer of a kernel ring; `false` if full
    /// (or not a kernel ring). Allocates nothing and does not sleep.
    pub fn produce(&mut self, bytes: &[u8]) -> bool {
        if !matches!(self.entry, Mem::Kernel(_)) {
            return false;
        }
        let (Some(prod), Some(w)) = (self.theirs(), self.index(ring::PRODUCER_OFF)) else {
            return false;
        };
        if self.geo.is_full(prod, self.own) {
            return false;
        }
        self.write_slot(prod, bytes);
        w.store(self.geo.next(prod), Ordering::Release);
        true
    }

    /// The header word at `off`; `None` once released.
    fn index(&self, off: usize) -> Option<&AtomicU32> {
        let base = self.entry.as_ptr()?;
        // SAFETY: `off` is one of the header's aligned word offsets, inside
        // the buffer (the invariant); the memory lives as long as `self`
        // holds it; userspace accesses the indices atomically too.
        Some(unsafe { AtomicU32::from_ptr(base.add(off).cast()) })
    }

    /// Whether the ring still has its memory.
    pub fn is_live(&self) -> bool {
        !matches!(self.entry, Mem::Released)
    }

    /// Takes the ring's memory out, leaving an empty, inert ring: nothing
    /// can be produced into or consumed from it again. Called by the
    /// owner's destruction under its lock, so that an object another
    /// thread still holds never touches a user context that is gone.
    /// Drop the result outside spinlocks.
    pub fn release(&mut self) -> ReleasedRing {
        ReleasedRing {
            _mem: core::mem::replace(&mut self.entry, Mem::Released),
        }
    }

    /// The index userspace published (consumer or producer), masked;
    /// `None` once released.
    fn theirs(&self) -> Option<u32> {
        let off = match self.role {
            Role::KernelProduces => ring::CONSUMER_OFF,
            Role::KernelConsumes => ring::PRODUCER_OFF,
        };
        Some(self.index(off)?.load(Ordering::Acquire) & self.geo.index_mask)
    }

    fn publish(&self) {
        let off = match self.role {
            Role::KernelProduces => ring::PRODUCER_OFF,
            Role::KernelConsumes => ring::CONSUMER_OFF,
        };
        if let Some(w) = self.index(off) {
            w.store(self.own, Ordering::Release);
        }
    }

    /// The ring's geometry.
    pub fn geometry(&self) -> Geometry {
        self.geo
    }

    /// Entries produced and not yet consumed (none once released).
    pub fn pending(&self) -> u32 {
        let Some(theirs) = self.theirs() else {
            return 0;
        };
        match self.role {
            Role::KernelProduces => self.geo.count(self.own, theirs),
            Role::KernelConsumes => self.geo.count(theirs, self.own),
        }
    }

    /// Where userspace maps it.
    pub fn mmap_info(&self) -> MmapInfo {
        match &self.entry {
            Mem::User(e) => MmapInfo {
                offset: e.offset(),
                size: e.len() as u32,
                pad: 0,
            },
            Mem::Kernel(_) | Mem::Released => MmapInfo::default(),
        }
    }

    /// Copies `bytes` into slot `index` (nothing once released).
    fn write_slot(&self, index: u32, bytes: &[u8]) {
        let Some(base) = self.entry.as_ptr() else {
            return;
        };
        let n = bytes.len().min(self.geo.elem_size());
        // SAFETY: The slot offset is within `buf_len` (masked index), `n`
        // does not pass the slot, and the buffer is alive with `self`. The
        // process may touch the memory concurrently; only bytes are copied.
        unsafe {
            core::ptr::copy_nonoverlapping(bytes.as_ptr(), base.add(self.geo.slot_offset(index)), n)
        };
    }

    /// Copies slot `index` into `out` (nothing once released).
    fn read_slot(&self, index: u32, out: &mut [u8]) {
        let Some(base) = self.entry.as_ptr() else {
            return;
        };
        let n = out.len().min(self.geo.elem_size());
        // SAFETY: As in `write_slot`, in the other direction.
        unsafe {
            core::ptr::copy_nonoverlapping(
                base.add(self.geo.slot_offset(index)),
                out.as_mut_ptr(),
                n,
            )
        };
    }

    /// Appends an entry (kernel-produced rings); `false` if full.
    pub fn push(&mut self, bytes: &[u8]) -> bool {
        let Some(theirs) = self.theirs() else {
            return false;
        };
        if self.role != Role::KernelProduces || self.geo.is_full(self.own, theirs) {
            return false;
        }
        self.write_slot(self.own, bytes);
        self.own = self.geo.next(self.own);
        self.publish();
        true
    }

    /// Takes the next entry userspace produced (kernel-consumed rings),
    /// copying its slot into `out`; `false` if there is none.
    pub fn pop(&mut self, out: &mut [u8]) -> bool {
        if self.role != Role::KernelConsumes || self.pending() == 0 {
            return false;
        }
        self.read_slot(self.own, out);
        self.own = self.geo.next(self.own);
        self.publish();
        true
    }

    /// Copies pending entry `nth` (0 is the oldest) of a kernel-consumed
    /// ring into `out` without taking it; `false` if fewer are pending.
    /// The RC requester keeps WQEs in the ring until they complete, so
    /// that userspace cannot post more than the ring holds.
    pub fn peek(&self, nth: u32, out: &mut [u8]) -> bool {
        if self.role != Role::KernelConsumes || nth >= self.pending() {
            return false;
        }
        self.read_slot(self.own.wrapping_add(nth) & self.geo.index_mask, out);
        true
    }

    /// The kernel's own index (the consumer's, for kernel-consumed rings).
    pub fn consumer(&self) -> u32 {
        self.own
    }

    /// Takes the oldest pending entry without reading it (see [`peek`]).
    ///
    /// [`peek`]: Self::peek
    pub fn consume(&mut self) -> bool {
        if self.role != Role::KernelConsumes || self.pending() == 0 {
            return false;
        }
        self.own = self.geo.next(self.own);
        self.publish();
        true
    }

    /// Empties a kernel-consumed ring without reading it: the kernel's
    /// index moves up to the producer's (a QP's move to RESET drops what
    /// was posted, as rxe's flush without completions does). The producer
    /// index, the other side's, is left as it is.
    pub fn drain(&mut self) {
        if self.role != Role::KernelConsumes {
            return;
        }
        if let Some(prod) = self.theirs() {
            // INVARIANT: `theirs` is masked.
            self.own = prod;
            self.publish();
        }
    }

    /// An empty ring like this one (role and slot size) for `entries`
    /// entries. Allocates: call without locks held.
    pub fn sibling(&self, uc: &Ucontext<Rrxe>, entries: u32, max_bytes: usize) -> Result<Self> {
        Self::new(
            uc,
            self.role,
            entries,
            self.geo.elem_size() as u32,
            max_bytes,
        )
    }

    /// Moves this ring's pending entries, in order, into the empty ring
    /// `new` from slot 0, through `buf` (one slot of this ring). `EINVAL`
    /// if they do not fit (`new` is then unchanged). Does not allocate or
    /// sleep, so it can run under the owner's lock.
    pub fn transfer_into(&self, new: &mut Self, buf: &mut [u8]) -> Result {
        let n = self.pending();
        if n > new.geo.index_mask || new.role != self.role || !new.is_live() {
            return Err(EINVAL);
        }
        let mut i = match self.role {
            Role::KernelProduces => self.theirs().ok_or(EINVAL)?,
            Role::KernelConsumes => self.own,
        };
        for k in 0..n {
            self.read_slot(i, buf);
            new.write_slot(k, buf);
            i = self.geo.next(i);
        }
        // `n <= index_mask`: no masking changes it.
        match self.role {
            Role::KernelProduces => new.own = n,
            Role::KernelConsumes => {
                if let Some(w) = new.index(ring::PRODUCER_OFF) {
                    w.store(n, Ordering::Release);
                }
            }
        }
        new.publish();
        Ok(())
    }
}
