// SPDX-License-Identifier: GPL-2.0

//! Memory regions: registration, fast registration, copies, and the
//! resolution of keys (an rkey may name a memory window, see `mw`).

use crate::ib::{
    memcg::Charge,
    mr::{Advice, AdviseSges, FastRegType, Mr, MrOps, ReregFlags, UserMrRequest},
    object::Pd,
    udata::Udata,
    umem::{Fault, OdpUmem, PageRef, Umem},
};
use crate::logic::{
    access::{self, AccessError},
    bounds::{Chunks, Range},
    keys, limits,
};
pub use crate::rrxe::mr_users::{BoundMws, MrRef, Users};
use crate::rrxe::pd::{pd_id, PdId};
use crate::rrxe::{device::Rrxe, dm::DmMem};
use kernel::{
    alloc::Flags,
    new_spinlock_irq,
    page::PAGE_SHIFT,
    prelude::*,
    sync::{Arc, SpinLockIrq},
    types::ScopeGuard,
};

/// What backs an MR.
pub enum MrMem {
    /// Pinned user pages; `first_offset` is the start's offset in page 0.
    User {
        /// Keeps the pages pinned.
        _umem: Umem,
        /// The pinned pages, in order.
        pages: KVVec<PageRef>,
        /// Offset of the first byte in the first page.
        first_offset: usize,
    },
    /// User memory on demand (`IB_ACCESS_ON_DEMAND`): nothing pinned, each
    /// access reaches the process's pages of the moment.
    Odp(OdpUmem),
    /// All of kernel memory (`get_dma_mr`), for kernel users.
    Dma,
    /// A fast-registration MR's pages (`alloc_mr`, `ib_map_mr_sg`). Kernel
    /// consumers may map from any context, interrupts included (the verb
    /// does not sleep), so the lock keeps interrupts off.
    Fast(Pin<KBox<SpinLockIrq<FastPages>>>),
    /// Device memory, from `offset` on (`reg_dm_mr`).
    Dm {
        /// Keeps the device memory.
        mem: Arc<DmMem>,
        /// Where the region starts in it.
        offset: u64,
    },
}

/// The pages a kernel user mapped into a fast-registration MR.
///
/// # Invariants
///
/// `pages.len() <= max` and `pages` never reallocates (its capacity is
/// `max` from creation); `1 << page_shift` is the mapping's page size.
pub struct FastPages {
    /// Page addresses: kernel virtual addresses, since rrxe's devices have
    /// no DMA device and the core maps scatterlists to virtual addresses.
    pub pages: KVec<u64>,
    /// Capacity, from `alloc_mr`'s `max_num_sg`.
    pub max: u32,
    /// log2 of the page size of the current mapping.
    pub page_shift: u32,
    /// The current mapping's first address and length: from the mapping
    /// (`ib_map_mr_sg`), then the one each registration work request gives
    /// (the consumer may change the address in between, as xprtrdma does).
    pub iova: u64,
    /// See `iova`.
    pub length: u64,
    /// Where the mapping's first byte lies in `pages[0]`: fixed by the
    /// mapping, whatever address a registration gives it.
    pub first_offset: u64,
    /// The key a registration work request gave it (the index never
    /// changes), its access flags, and whether it is registered (valid) or
    /// free (new, or invalidated).
    pub key: u32,
    /// See `key`.
    pub access: u32,
    /// See `key`.
    pub valid: bool,
}

impl FastPages {
    /// The kernel virtual address of `iova` and how many bytes follow it
    /// within its page, for an access of `len` bytes that must lie inside
    /// the mapping.
    fn locate(&self, iova: u64, len: u64) -> Option<(u64, usize)> {
        let off = Range::new(self.iova, self.length)?.offset_of(iova, len)?;
        let psize = 1u64 << self.page_shift;
        let pos = self.first_offset.checked_add(off)?;
        let page = *self.pages.get((pos >> self.page_shift) as usize)?;
        let within = pos & (psize - 1);
        Some((page.checked_add(within)?, (psize - within) as usize))
    }

    /// Copies between the mapped pages at `iova` and a buffer.
    fn copy(&self, iova: u64, mut dir: Copy<'_>) -> Result {
        let total = match &dir {
            Copy::Into(b) => b.len(),
            Copy::From(b) => b.len(),
        };
        let mut done = 0usize;
        while done < total {
            let at = iova.checked_add(done as u64).ok_or(EFAULT)?;
            let (addr, room) = self.locate(at, (total - done) as u64).ok_or(EFAULT)?;
            let k = room.min(total - done);
            match &mut dir {
                // The pages are the kernel consumer's, mapped with
                // `ib_map_mr_sg` (virtual addresses: rrxe has no DMA device).
                Copy::Into(b) => {
                    // SAFETY: A registered MR's pages stay alive while the
                    // registration is valid; `k` bytes stay inside one page.
                    unsafe { crate::ib::mr::write_dma_addr(addr, &b[done..done + k])? }
                }
                Copy::From(b) => crate::ib::mr::read_dma_addr(addr, &mut b[done..done + k])?,
            }
            done += k;
        }
        Ok(())
    }
}

/// A memory region.
pub struct RrxeMr {
    /// Index in the device's MR table.
    pub index: u32,
    /// lkey == rkey.
    pub key: u32,
    /// The PD it belongs to, as an identity.
    pub pd: PdId,
    /// IB access flags.
    pub access: u32,
    /// The addresses it answers to.
    pub range: Range,
    /// What backs it (shared with a replacement made by a rereg that keeps
    /// the translation).
    pub mem: Arc<MrMem>,
    /// Memory windows bound to it; deregistration waits for none.
    pub bound_mws: BoundMws,
    /// The accesses to its memory under way; deregistration waits for them.
    pub(crate) users: Users,
}

pub(crate) fn access_err(err: AccessError) -> Error {
    match err {
        AccessError::Invalid => EINVAL,
        AccessError::NotSupported => EOPNOTSUPP,
    }
}

/// What backs a user MR of `length` bytes at `start` with `access`: the
/// pinned pages, or for `ON_DEMAND` the range of the caller's address
/// space, reached at access time (charged to the caller's memory cgroup,
/// as is the MR). Implicit ODP (the whole address space)
/// is not supported, as in rxe.
fn user_mem(pd: &Pd<Rrxe>, start: u64, length: u64, access: u32) -> Result<Arc<MrMem>> {
    if access & access::ON_DEMAND != 0 {
        if start == 0 && length == u64::MAX {
            return Err(EOPNOTSUPP);
        }
        Charge::current().room(0)?;
        return Ok(Arc::new(
            MrMem::Odp(OdpUmem::current(start, length)?),
            GFP_KERNEL_ACCOUNT,
        )?);
    }
    let umem = Umem::get(pd.device(), start, length, access)?;
    // The page array grows by doubling, to twice its final size at most.
    let npages = (length >> PAGE_SHIFT).saturating_add(2) as usize;
    Charge::current().room(npages.saturating_mul(2 * core::mem::size_of::<usize>()))?;
    let pages = umem.pages()?;
    let first_offset = umem.first_page_offset();
    Ok(Arc::new(
        MrMem::User {
            _umem: umem,
            pages,
            first_offset,
        },
        GFP_KERNEL_ACCOUNT,
    )?)
}

pub(crate) fn random_key8() -> u8 {
    let mut b = [0u8; 1];
    crate::ib::random_bytes(&mut b);
    b[0]
}

#[vtable]
impl MrOps<Rrxe> for Arc<RrxeMr> {
    /// `reg_user_mr`: pins the pages (unless on demand) and enters the MR
    /// in the table.
    fn reg_user_mr(
        pd: &Pd<Rrxe>,
        req: UserMrRequest,
        _udata: Option<&Udata>,
    ) -> Result<(Arc<RrxeMr>, u32)> {
        access::check_mr_access(req.access).map_err(access_err)?;
        if req.length == 0 {
            return Err(EINVAL);
        }
        let iova = if req.access & access::ZERO_BASED != 0 {
            0
        } else {
            req.iova
        };
        let range = Range::new(iova, req.length).ok_or(EINVAL)?;
        let mem = user_mem(pd, req.start, req.length, req.access)?;
        insert_mr(pd, req.access, range, mem, GFP_KERNEL_ACCOUNT)
    }

    /// `get_dma_mr`: an MR over all kernel memory.
    fn get_dma_mr(pd: &Pd<Rrxe>, access: u32) -> Result<(Arc<RrxeMr>, u32)> {
        access::check_kernel_mr_access(access).map_err(access_err)?;
        let range = Range::new(0, u64::MAX).ok_or(EINVAL)?;
        insert_mr(
            pd,
            access,
            range,
            Arc::new(MrMem::Dma, GFP_KERNEL)?,
            GFP_KERNEL,
        )
    }

    /// `alloc_mr`: a fast-registration MR (`IB_MR_TYPE_MEM_REG` only, as rxe)
    /// for up to `max_num_sg` pages, at most `max_fast_reg_page_list_len`.
    /// It answers to no key until a registration work request makes it valid.
    fn alloc_mr(pd: &Pd<Rrxe>, ty: FastRegType, max_num_sg: u32) -> Result<(Arc<RrxeMr>, u32)> {
        if ty != FastRegType::MemReg
            || max_num_sg == 0
            || max_num_sg > limits::MAX_FAST_REG_PAGE_LIST_LEN
        {
            return Err(EINVAL);
        }
        let mut pages = KVec::with_capacity(max_num_sg as usize, GFP_KERNEL)?;
        pages.clear();
        // INVARIANT: Empty, with capacity `max`.
        let fast = KBox::pin_init(
            new_spinlock_irq!(
                FastPages {
                    pages,
                    max: max_num_sg,
                    page_shift: PAGE_SHIFT as u32,
                    iova: 0,
                    length: 0,
                    first_offset: 0,
                    key: 0,
                    access: 0,
                    valid: false,
                },
                "rrxe::MrMem::Fast"
            ),
            GFP_KERNEL,
        )?;
        let range = Range::new(0, 0).ok_or(EINVAL)?;
        let mem = Arc::new(MrMem::Fast(fast), GFP_KERNEL)?;
        let (mr, key) = insert_mr(pd, 0, range, mem, GFP_KERNEL)?;
        if let MrMem::Fast(f) = &*mr.mem {
            f.lock().key = key;
        }
        Ok((mr, key))
    }

    /// `ib_map_mr_sg` starts: a new page list of `page_size` pages.
    fn map_mr_sg_start(mr: &Mr<Rrxe>, page_size: u32) -> Result {
        let f = fast_pages(mr)?;
        if !page_size.is_power_of_two() || u64::from(page_size) & limits::PAGE_SIZE_CAP == 0 {
            return Err(EINVAL);
        }
        let mut g = f.lock();
        g.pages.clear();
        g.page_shift = page_size.trailing_zeros();
        g.iova = 0;
        g.length = 0;
        g.first_offset = 0;
        Ok(())
    }

    /// One more page; `ENOMEM` once the MR is full, which ends the mapping.
    fn map_mr_sg_page(mr: &Mr<Rrxe>, addr: u64) -> Result {
        let f = fast_pages(mr)?;
        let mut g = f.lock();
        if g.pages.len() >= g.max as usize {
            return Err(ENOMEM);
        }
        // Within the capacity reserved at creation: no allocation happens.
        g.pages.push(addr, GFP_ATOMIC)?;
        Ok(())
    }

    /// The mapping is complete; the core computed its range.
    fn map_mr_sg_done(mr: &Mr<Rrxe>, _mapped: u32, iova: u64, length: u64) {
        if let Ok(f) = fast_pages(mr) {
            let mut g = f.lock();
            g.iova = iova;
            g.length = length;
            // The core's iova is the first SG entry's address (plus the
            // SG offset): its page offset is the first page's.
            g.first_offset = iova & ((1u64 << g.page_shift) - 1);
        }
    }

    /// `ibv_advise_mr`: every SGE must name, by lkey, a locally writable MR
    /// of `pd` (`EINVAL`, as rxe) on demand (`ENOENT` otherwise, as mlx5)
    /// and lie inside it (`EFAULT`); all are checked before anything is
    /// done. Prefetching faults the pages in and pins nothing; with
    /// `flush` a fault's failure is returned, without it (asynchronous,
    /// best effort in rxe) it is not. `PREFETCH_NO_FAULT` has nothing to
    /// do: no page is kept mapped between accesses.
    fn advise_mr(pd: &Pd<Rrxe>, advice: Advice, flush: bool, sges: AdviseSges<'_>) -> Result {
        let dev = pd.device().data();
        let id = pd_id(pd);
        let find = |lkey: u32, addr: u64, len: u64| -> Result<MrRef> {
            let mr = lookup_mr(dev, lkey, id, access::LOCAL_WRITE, addr, len).map_err(|e| {
                if e == EFAULT {
                    EFAULT
                } else {
                    EINVAL
                }
            })?;
            match &*mr.mem {
                MrMem::Odp(_) => Ok(mr),
                _ => Err(ENOENT),
            }
        };
        for s in sges.iter() {
            find(s.lkey, s.addr, s.length.into())?;
        }
        let write = match advice {
            Advice::Prefetch => false,
            Advice::PrefetchWrite => true,
            Advice::PrefetchNoFault => return Ok(()),
        };
        for s in sges.iter() {
            // Deregistered meanwhile: nothing to prefetch.
            let Ok(mr) = find(s.lkey, s.addr, s.length.into()) else {
                continue;
            };
            if let MrMem::Odp(u) = &*mr.mem {
                let off = mr.range.offset_of(s.addr, s.length.into()).ok_or(EFAULT)?;
                let r = u.fault(off, s.length.into(), write, Fault::Wait);
                if flush {
                    r?;
                }
            }
        }
        Ok(())
    }

    /// `dereg_mr`: refused while windows are bound (as rxe does), else retired
    /// (a bind under way fails), removed from the table, and returns once
    /// no access to its memory is under way (see [`Users`]). The memory is
    /// released when the core drops the MR, right after.
    fn dereg_mr(mr: &Mr<Rrxe>) -> Result {
        let m = mr.data();
        if !m.bound_mws.retire() {
            return Err(EINVAL);
        }
        // A rereg may have put a replacement at this index already.
        mr.pd().device().data().mr_pool().remove_if(m.index, m);
        m.users.retire_and_wait(m.key);
        Ok(())
    }

    /// `rereg_user_mr`: a replacement MR under the same key, with a new PD,
    /// access and/or translation. The core retires the old MR afterwards;
    /// work already holding the old one finishes on the old view. Refused
    /// while windows are bound; the old MR takes no bind from the start
    /// (a failure gives them back).
    fn rereg_user_mr(
        mr: &Mr<Rrxe>,
        flags: ReregFlags,
        req: UserMrRequest,
        new_pd: &Pd<Rrxe>,
        _udata: Option<&Udata>,
    ) -> Result<(Arc<RrxeMr>, u32)> {
        let old = mr.data();
        if !old.bound_mws.retire() {
            return Err(EINVAL);
        }
        let failed = ScopeGuard::new(|| old.bound_mws.unretire());
        let access = if flags.access { req.access } else { old.access };
        access::check_mr_access(access).map_err(access_err)?;
        let (range, mem) = if flags.translation {
            if req.length == 0 {
                return Err(EINVAL);
            }
            let iova = if access & access::ZERO_BASED != 0 {
                0
            } else {
                req.iova
            };
            let range = Range::new(iova, req.length).ok_or(EINVAL)?;
            (range, user_mem(new_pd, req.start, req.length, access)?)
        } else {
            // The memory stays what it was (pinned, or on demand) whatever
            // ON_DEMAND says now; pages pinned read-only cannot be written.
            if matches!(&*old.mem, MrMem::User { .. })
                && (access ^ old.access)
                    & (access::LOCAL_WRITE | access::REMOTE_WRITE | access::REMOTE_ATOMIC)
                    != 0
                && access & (access::LOCAL_WRITE | access::REMOTE_WRITE | access::REMOTE_ATOMIC)
                    != 0
                && old.access & (access::LOCAL_WRITE | access::REMOTE_WRITE | access::REMOTE_ATOMIC)
                    == 0
            {
                // The pages were pinned read-only; writable access needs a new
                // translation.
                return Err(EINVAL);
            }
            (old.range, old.mem.clone())
        };
        let new = Arc::new(
            RrxeMr {
                index: old.index,
                key: old.key,
                pd: pd_id(new_pd),
                access,
                range,
                mem,
                bound_mws: BoundMws::default(),
                users: Users::new(),
            },
            GFP_KERNEL_ACCOUNT,
        )?;
        new_pd
            .device()
            .data()
            .mr_pool()
            .replace(old.index, old, new.clone())?;
        failed.dismiss();
        let key = new.key;
        Ok((new, key))
    }
}

/// Enters an MR in the table; its object is allocated with `gfp`
/// (`GFP_KERNEL_ACCOUNT` for a user's MR).
pub(crate) fn insert_mr(
    pd: &Pd<Rrxe>,
    access: u32,
    range: Range,
    mem: Arc<MrMem>,
    gfp: Flags,
) -> Result<(Arc<RrxeMr>, u32)> {
    let dev = pd.device().data();
    let pd_id = pd_id(pd);
    let mut mem = Some(mem);
    let (_, mr) = dev.mr_pool().insert(|index| {
        let key = keys::make_key(index, random_key8()).ok_or(EINVAL)?;
        Ok(Arc::new(
            RrxeMr {
                index,
                key,
                pd: pd_id,
                access,
                range,
                mem: mem.take().ok_or(EINVAL)?,
                bound_mws: BoundMws::default(),
                users: Users::new(),
            },
            gfp,
        )?)
    })?;
    let key = mr.key;
    Ok((mr, key))
}

fn fast_pages(mr: &Mr<Rrxe>) -> Result<&Pin<KBox<SpinLockIrq<FastPages>>>> {
    match &*mr.data().mem {
        MrMem::Fast(f) => Ok(f),
        _ => Err(EINVAL),
    }
}

/// Kinds of access a lookup asks of an MR.
pub type NeedAccess = u32;

// The data path (UD/UC/RC traffic) is the user of these.
impl RrxeMr {
    /// Copies `src` into the region at `iova`. `fault` says whether an
    /// on-demand region may wait for its pages (`EAGAIN` if not).
    pub fn write(&self, iova: u64, src: &[u8], fault: Fault) -> Result {
        // A fast-registration MR's range is its current mapping's.
        if let MrMem::Fast(f) = &*self.mem {
            return f.lock().copy(iova, Copy::Into(src));
        }
        let off = self.range.offset_of(iova, src.len() as u64).ok_or(EFAULT)?;
        match &*self.mem {
            MrMem::User {
                pages,
                first_offset,
                ..
            } => {
                for c in Chunks::new(
                    *first_offset as u64,
                    off,
                    src.len(),
                    crate::ib::umem::PAGE_SHIFT,
                )
                .ok_or(EFAULT)?
                {
                    let page = pages.get(c.page).ok_or(EFAULT)?;
                    // SAFETY: `page` belongs to this MR's pinned pages, alive
                    // while `self` (which owns the umem through `mem`) is.
                    unsafe { page.write(c.offset, &src[c.pos..c.pos + c.len])? };
                }
                Ok(())
            }
            MrMem::Odp(u) => u.write(off, src, fault),
            MrMem::Dm { mem, offset } => {
                let p = mem.ptr(offset.checked_add(off).ok_or(EFAULT)?, src.len())?;
                // SAFETY: `p` has `src.len()` bytes of the DM buffer, which
                // `mem` keeps alive; `src` is a distinct kernel buffer.
                unsafe { core::ptr::copy_nonoverlapping(src.as_ptr(), p, src.len()) };
                Ok(())
            }
            // DMA MRs exist only for kernel PDs (`get_dma_mr` has no user
            // path) and their keys resolve only for that PD's QPs, or for
            // peers the consumer gave its unsafe global rkey to, as the
            // verbs define it.
            // SAFETY: A DMA MR's addresses are its consumer's DMA addresses.
            MrMem::Dma => unsafe { crate::ib::mr::write_dma_addr(iova, src) },
            MrMem::Fast(_) => Err(EFAULT),
        }
    }

    /// Whether the `len` bytes at `iova` can be read now without waiting
    /// for a page fault: `EAGAIN` if on-demand memory among them is not
    /// resident and its fault would wait (the fault is started). Memory of
    /// any other kind is always there.
    pub fn resident(&self, iova: u64, len: u64) -> Result {
        match &*self.mem {
            MrMem::Odp(u) => {
                let off = self.range.offset_of(iova, len).ok_or(EFAULT)?;
                u.fault(off, len, false, Fault::NoWait)
            }
            _ => Ok(()),
        }
    }

    /// The offset in its page of the memory behind `iova` (its address's
    /// low bits: atomics need their target aligned in memory, and a
    /// zero-based region need not put an aligned VA at an aligned address).
    pub fn page_offset_of(&self, iova: u64) -> Result<u64> {
        let mask = crate::ib::umem::PAGE_SIZE as u64 - 1;
        if let MrMem::Fast(f) = &*self.mem {
            let (addr, _) = f.lock().locate(iova, 1).ok_or(EFAULT)?;
            return Ok(addr & mask);
        }
        let off = self.range.offset_of(iova, 1).ok_or(EFAULT)?;
        match &*self.mem {
            // The pinned pages start at page boundaries.
            MrMem::User { first_offset, .. } => {
                Ok((*first_offset as u64).checked_add(off).ok_or(EFAULT)? & mask)
            }
            // The user address's low bits.
            MrMem::Odp(u) => Ok(u.addr().checked_add(off).ok_or(EFAULT)? & mask),
            MrMem::Dm { mem, offset } => {
                let p = mem.ptr(offset.checked_add(off).ok_or(EFAULT)?, 1)?;
                Ok(p as usize as u64 & mask)
            }
            // A DMA MR's addresses are kernel virtual addresses.
            MrMem::Dma => Ok(iova & mask),
            MrMem::Fast(_) => Err(EFAULT),
        }
    }

    /// Copies from the region at `iova` into `dst` (see [`Self::write`]).
    pub fn read(&self, iova: u64, dst: &mut [u8], fault: Fault) -> Result {
        if let MrMem::Fast(f) = &*self.mem {
            return f.lock().copy(iova, Copy::From(dst));
        }
        let len = dst.len();
        let off = self.range.offset_of(iova, len as u64).ok_or(EFAULT)?;
        match &*self.mem {
            MrMem::User {
                pages,
                first_offset,
                ..
            } => {
                for c in Chunks::new(*first_offset as u64, off, len, crate::ib::umem::PAGE_SHIFT)
                    .ok_or(EFAULT)?
                {
                    let page = pages.get(c.page).ok_or(EFAULT)?;
                    // SAFETY: As in `write`.
                    unsafe { page.read(c.offset, &mut dst[c.pos..c.pos + c.len])? };
                }
                Ok(())
            }
            MrMem::Odp(u) => u.read(off, dst, fault),
            MrMem::Dm { mem, offset } => {
                let p = mem.ptr(offset.checked_add(off).ok_or(EFAULT)?, len)?;
                // SAFETY: As in `write`, in the other direction.
                unsafe { core::ptr::copy_nonoverlapping(p.cast_const(), dst.as_mut_ptr(), len) };
                Ok(())
            }
            MrMem::Dma => crate::ib::mr::read_dma_addr(iova, dst),
            MrMem::Fast(_) => Err(EFAULT),
        }
    }
}

/// Finds the MR an lkey or MR rkey names for an access of `len` bytes at
/// `iova` from `pd`, checking the full key (index and variant), the PD, the
/// access rights and the bounds. Keys in the MW range are refused: use
/// [`lookup_key`] for rkeys.
pub fn lookup_mr(
    dev: &crate::rrxe::device::RrxeDev,
    key: u32,
    pd: PdId,
    need: NeedAccess,
    iova: u64,
    len: u64,
) -> Result<MrRef> {
    match keys::key_kind(key) {
        Some(keys::KeyKind::Mr) => {}
        _ => return Err(EINVAL),
    }
    let find = || {
        dev.mr_pool()
            .get(keys::key_index(key))
            .and_then(MrRef::enter)
    };
    // A rereg retires the MR it replaced: then the table holds the new one.
    let mr = find().or_else(find).ok_or(EINVAL)?;
    if mr.pd != pd {
        return Err(EINVAL);
    }
    // A fast-registration MR answers to the key, rights and range its last
    // registration work request gave it, while that registration is valid.
    if let MrMem::Fast(f) = &*mr.mem {
        let g = f.lock();
        if !g.valid || g.key != key {
            return Err(EINVAL);
        }
        if g.access & need != need {
            return Err(EACCES);
        }
        g.locate(iova, len).ok_or(EFAULT)?;
        drop(g);
        return Ok(mr);
    }
    if mr.key != key {
        return Err(EINVAL);
    }
    if mr.access & need != need {
        return Err(EACCES);
    }
    mr.range.offset_of(iova, len).ok_or(EFAULT)?;
    Ok(mr)
}

/// Resolves an rkey, which may name an MR or a memory window, for an access
/// of `len` bytes at `iova` by QP `qpn` in `pd`. Returns the MR that holds
/// the memory and the address in its space (windows may be zero-based).
/// Errors: `EINVAL` for a key that names nothing usable by this requester,
/// `EACCES` for missing rights, `EFAULT` for addresses outside.
pub fn lookup_key(
    dev: &crate::rrxe::device::RrxeDev,
    key: u32,
    pd: PdId,
    qpn: u32,
    need: NeedAccess,
    iova: u64,
    len: u64,
) -> Result<(MrRef, u64)> {
    match keys::key_kind(key) {
        Some(keys::KeyKind::Mr) => return Ok((lookup_mr(dev, key, pd, need, iova, len)?, iova)),
        Some(keys::KeyKind::Mw) => {}
        None => return Err(EINVAL),
    }
    crate::rrxe::mw::resolve(dev, key, pd, qpn, need, iova, len)
}

/// Which way [`copy_by_key`] copies.
pub enum Copy<'a> {
    /// From the buffer into the memory (needs `LOCAL_WRITE`, or the remote
    /// right the caller asks for).
    Into(&'a [u8]),
    /// From the memory into the buffer.
    From(&'a mut [u8]),
}

/// Copies between a kernel buffer and the memory `key` names at `iova`
/// (the buffer's length), after resolving the key (an MR, or for rkeys a
/// memory window) with the PD, QP, access and bounds checks of
/// [`lookup_key`]. `need` is the access the requester must have; `fault`
/// whether on-demand memory may wait for its pages (see [`RrxeMr::write`]).
#[expect(clippy::too_many_arguments)]
pub fn copy_by_key(
    dev: &crate::rrxe::device::RrxeDev,
    key: u32,
    pd: PdId,
    qpn: u32,
    need: NeedAccess,
    iova: u64,
    dir: Copy<'_>,
    fault: Fault,
) -> Result {
    let len = match &dir {
        Copy::Into(b) => b.len(),
        Copy::From(b) => b.len(),
    } as u64;
    let (mr, at) = lookup_key(dev, key, pd, qpn, need, iova, len)?;
    crate::rrxe::glue::test_hold(crate::rrxe::glue::Site::MrCopy);
    match dir {
        Copy::Into(b) => mr.write(at, b, fault),
        Copy::From(b) => mr.read(at, b, fault),
    }
}

/// Why a bind or an invalidation failed (the completion's status tells
/// the application; the details go to the debug log only).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LocalOpError {
    /// The key names no window or region this QP may use.
    BadKey,
    /// The rules of binding (state, rights, bounds, type) refuse it.
    Refused,
}

/// A fast registration (`IB_WR_REG_MR` from a kernel QP of PD `pd`): the
/// fast-registration MR with `mr_key`'s index takes `key` (same index) and
/// `access` over the pages last mapped into it, at `iova` (the MR's iova
/// when the request was posted, as rxe takes it), and becomes valid.
pub fn reg_fast(
    dev: &crate::rrxe::device::RrxeDev,
    pd: PdId,
    mr_key: u32,
    key: u32,
    access: u32,
    iova: u64,
) -> core::result::Result<(), LocalOpError> {
    if keys::key_kind(mr_key) != Some(keys::KeyKind::Mr)
        || keys::key_index(key) != keys::key_index(mr_key)
    {
        return Err(LocalOpError::BadKey);
    }
    let mr = dev
        .mr_pool()
        .get(keys::key_index(mr_key))
        .ok_or(LocalOpError::BadKey)?;
    let MrMem::Fast(f) = &*mr.mem else {
        return Err(LocalOpError::BadKey);
    };
    if mr.pd != pd {
        return Err(LocalOpError::BadKey);
    }
    access::check_kernel_mr_access(access).map_err(|_| LocalOpError::Refused)?;
    let mut g = f.lock();
    if g.pages.is_empty() || g.length == 0 || Range::new(iova, g.length).is_none() {
        return Err(LocalOpError::Refused);
    }
    g.iova = iova;
    g.key = key;
    g.access = access;
    g.valid = true;
    Ok(())
}

/// Invalidates `rkey` for PD `pd` (LOCAL_INV, or a SEND with invalidate
/// arriving): a bound type 2 window of that PD returns to free, a
/// registered fast-registration MR to free, and neither answers any more.
/// Type 1 windows and other regions cannot be invalidated.
pub fn invalidate(
    dev: &crate::rrxe::device::RrxeDev,
    rkey: u32,
    pd: PdId,
) -> core::result::Result<(), LocalOpError> {
    if keys::key_kind(rkey) == Some(keys::KeyKind::Mr) {
        let mr = dev
            .mr_pool()
            .get(keys::key_index(rkey))
            .ok_or(LocalOpError::BadKey)?;
        let MrMem::Fast(f) = &*mr.mem else {
            return Err(LocalOpError::BadKey);
        };
        if mr.pd != pd || mr.bound_mws.any() {
            return Err(LocalOpError::BadKey);
        }
        let mut g = f.lock();
        if !g.valid || g.key != rkey {
            return Err(LocalOpError::BadKey);
        }
        g.valid = false;
        return Ok(());
    }
    crate::rrxe::mw::invalidate(dev, rkey, pd)
}
