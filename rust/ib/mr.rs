// SPDX-License-Identifier: GPL-2.0

//! Memory regions: driver-allocated `ib_mr` objects with driver data.
//!
//! Unlike PDs and contexts, the core does not allocate MRs: the driver
//! returns a pointer to an `ib_mr` it allocated, and frees it in `dereg_mr`.
//! Here an MR is a `KBox<Mr<T>>` whose first field is the `ib_mr`.

use super::{bindings, device::Driver, memcg::Charge, object::Pd, udata::Udata};
use kernel::{error::from_result, prelude::*, types::Opaque};

/// The operations on a memory region, implemented by the driver's MR data
/// ([`Driver::Mr`]). The data is dropped when the MR is deregistered.
#[vtable]
pub trait MrOps<T: Driver>: Sized + Send + Sync {
    /// Registers user memory; returns the MR's data and its key (used as
    /// both lkey and rkey).
    fn reg_user_mr(
        _pd: &Pd<T>,
        _req: UserMrRequest,
        _udata: Option<&Udata>,
    ) -> Result<(Self, u32)> {
        build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// Re-registers `mr` with the parts `flags` names changed. Returns the
    /// data and key of a replacement MR, which the core puts in the old
    /// one's place before deregistering the old one.
    fn rereg_user_mr(
        _mr: &Mr<T>,
        _flags: ReregFlags,
        _req: UserMrRequest,
        _new_pd: &Pd<T>,
        _udata: Option<&Udata>,
    ) -> Result<(Self, u32)> {
        build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// An MR covering all kernel memory, for kernel users.
    fn get_dma_mr(_pd: &Pd<T>, _access: u32) -> Result<(Self, u32)> {
        build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// A fast-registration MR of type `ty` for kernel users, able to hold
    /// `max_num_sg` pages; returns its data and key. It starts unusable
    /// until a registration work request makes it valid.
    fn alloc_mr(_pd: &Pd<T>, _ty: FastRegType, _max_num_sg: u32) -> Result<(Self, u32)> {
        build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// `ib_map_mr_sg` begins on `mr` (from `alloc_mr`): forget the pages of
    /// any earlier mapping. Pages are `page_size` bytes.
    fn map_mr_sg_start(_mr: &Mr<T>, _page_size: u32) -> Result {
        build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// The next page of the mapping, by DMA address (a kernel virtual
    /// address: rrxe's devices have no DMA device). An error ends the
    /// mapping there (the MR is full).
    fn map_mr_sg_page(_mr: &Mr<T>, _addr: u64) -> Result {
        build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// The mapping ended with `mapped` scatterlist entries mapped; the core
    /// set the MR's address range to `(iova, length)`.
    fn map_mr_sg_done(_mr: &Mr<T>, _mapped: u32, _iova: u64, _length: u64) {
        build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// `ibv_advise_mr`: `advice` for the memory the SGEs name (lkeys of
    /// MRs of `pd`); with `flush`, done before returning, else best effort.
    fn advise_mr(_pd: &Pd<T>, _advice: Advice, _flush: bool, _sges: AdviseSges<'_>) -> Result {
        build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// Asked before an MR is deregistered; an error keeps the MR (rxe
    /// refuses while memory windows are bound). The MR's data is dropped
    /// after `Ok`.
    fn dereg_mr(_mr: &Mr<T>) -> Result {
        Ok(())
    }
}

/// A memory region.
///
/// # Invariants
///
/// Allocated through an [`MrSlot`] as a `KBox`, handed to the core, and
/// freed only by the `dereg_mr` callback.
#[repr(C)]
pub struct Mr<T: Driver> {
    ib: Opaque<bindings::ib_mr>,
    data: T::Mr,
}

impl<T: Driver> Mr<T> {
    /// The driver's data.
    pub fn data(&self) -> &T::Mr {
        &self.data
    }

    /// # Safety
    ///
    /// `ptr` must come from [`MrSlot::fill`] for this `T` and not be freed.
    pub(crate) unsafe fn from_raw<'a>(ptr: *mut bindings::ib_mr) -> &'a Self {
        // SAFETY: The caller's promise.
        unsafe { &*ptr.cast::<Self>() }
    }

    /// # Safety
    ///
    /// `ptr` must come from [`MrSlot::fill`] for this `T`; it is freed.
    pub(crate) unsafe fn free(ptr: *mut bindings::ib_mr) {
        // SAFETY: The caller's promise; the box is reconstituted once.
        drop(unsafe { KBox::from_raw(ptr.cast::<Self>()) });
    }

    /// The address range the core recorded: `(iova, length)`.
    pub fn iova_length(&self) -> (u64, u64) {
        // SAFETY: Plain fields, set before the MR is visible.
        unsafe { ((*self.ib.get()).iova, (*self.ib.get()).length) }
    }

    /// The PD the core associated with the MR.
    pub fn pd(&self) -> &Pd<T> {
        // SAFETY: The core sets `pd` after creation and keeps it alive while
        // the MR exists.
        unsafe { Pd::from_raw((*self.ib.get()).pd) }
    }
}

/// Memory for an MR, allocated before the driver creates its data, so that
/// nothing can fail between the driver's success and the core owning the MR.
pub(crate) struct MrSlot<T: Driver>(KBox<core::mem::MaybeUninit<Mr<T>>>);

impl<T: Driver> MrSlot<T> {
    /// For a user's MR (`user`) charged to the caller's memory cgroup.
    pub(crate) fn new(user: bool) -> Result<Self> {
        let charge = Charge::for_user(user);
        charge.room(0)?;
        Ok(Self(KBox::new_uninit(charge.gfp())?))
    }

    /// Stores `data` with `key` as lkey and rkey and the address range
    /// (which the core overwrites for new user registrations), and returns
    /// the pointer the core expects.
    pub(crate) fn fill(
        self,
        data: T::Mr,
        key: u32,
        iova: u64,
        length: u64,
    ) -> *mut bindings::ib_mr {
        const { assert!(core::mem::offset_of!(Mr<T>, ib) == 0) };
        let mr = KBox::write(
            self.0,
            Mr {
                ib: Opaque::zeroed(),
                data,
            },
        );
        // SAFETY: Freshly initialised and ours.
        unsafe {
            let ib = mr.ib.get();
            (*ib).lkey = key;
            (*ib).rkey = key;
            (*ib).iova = iova;
            (*ib).length = length;
        }
        KBox::into_raw(mr).cast()
    }
}

/// What `reg_user_mr` was asked for.
#[derive(Clone, Copy, Debug)]
pub struct UserMrRequest {
    /// Start of the user buffer.
    pub start: u64,
    /// Length in bytes.
    pub length: u64,
    /// The address the region is known by (equal to `start` unless the
    /// application asks otherwise; 0 for zero-based regions).
    pub iova: u64,
    /// IB access flags.
    pub access: u32,
}

/// Which parts of an MR a rereg changes (`IB_MR_REREG_*`).
#[derive(Clone, Copy, Debug)]
pub struct ReregFlags {
    /// New address range and pages.
    pub translation: bool,
    /// New PD.
    pub pd: bool,
    /// New access flags.
    pub access: bool,
}

impl ReregFlags {
    pub(crate) fn from_raw(flags: u32) -> Self {
        Self {
            translation: flags & bindings::ib_mr_rereg_flags_IB_MR_REREG_TRANS != 0,
            pd: flags & bindings::ib_mr_rereg_flags_IB_MR_REREG_PD != 0,
            access: flags & bindings::ib_mr_rereg_flags_IB_MR_REREG_ACCESS != 0,
        }
    }
}

/// What `ibv_advise_mr` advises (`IB_UVERBS_ADVISE_MR_ADVICE_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Advice {
    /// `PREFETCH`: fault the pages in for reading.
    Prefetch,
    /// `PREFETCH_WRITE`: fault the pages in for writing.
    PrefetchWrite,
    /// `PREFETCH_NO_FAULT`: map what is present, fault nothing in.
    PrefetchNoFault,
}

/// One SGE of an `ibv_advise_mr` call.
#[derive(Clone, Copy, Debug)]
pub struct AdviseSge {
    /// Start address.
    pub addr: u64,
    /// Length in bytes.
    pub length: u32,
    /// The lkey of the MR it lies in.
    pub lkey: u32,
}

/// The SGEs of an `ibv_advise_mr` call (the core's copy, for the call).
#[derive(Clone, Copy)]
pub struct AdviseSges<'a>(&'a [bindings::ib_sge]);

impl AdviseSges<'_> {
    /// The SGEs, in order.
    pub fn iter(&self) -> impl Iterator<Item = AdviseSge> + '_ {
        self.0.iter().map(|s| AdviseSge {
            addr: s.addr,
            length: s.length,
            lkey: s.lkey,
        })
    }
}

/// Kinds of fast-registration MR (`ib_alloc_mr`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FastRegType {
    /// `IB_MR_TYPE_MEM_REG`: pages of one size, no gaps.
    MemReg,
    /// `IB_MR_TYPE_SG_GAPS`: arbitrary scatterlists.
    SgGaps,
}

/// Reads `out.len()` bytes at a kernel consumer's DMA address. rrxe has no
/// DMA device (virtual DMA): `ib_dma_map_*` hands consumers CPU addresses,
/// which is what DMA MRs (`get_dma_mr`, kernel PDs only) are used with.
/// A bad address gives `EFAULT`, never a fault.
pub fn read_dma_addr(addr: u64, out: &mut [u8]) -> Result {
    // SAFETY: `out` is writable for its length; the source is probed
    // without faulting.
    let r = unsafe {
        bindings::copy_from_kernel_nofault(
            out.as_mut_ptr().cast(),
            addr as usize as *const kernel::ffi::c_void,
            out.len(),
        )
    };
    if r != 0 {
        return Err(EFAULT);
    }
    Ok(())
}

/// Writes `src` at a kernel consumer's DMA address (see [`read_dma_addr`]).
///
/// # Safety
///
/// `addr..addr + src.len()` must be memory the kernel consumer mapped for
/// the device (`ib_dma_map_*`) and may be written: the kernel has no
/// exported non-faulting store to check it with.
pub unsafe fn write_dma_addr(addr: u64, src: &[u8]) -> Result {
    if addr.checked_add(src.len() as u64).is_none() {
        return Err(EFAULT);
    }
    // SAFETY: The caller's promise; `src` is readable for its length.
    unsafe { core::ptr::copy_nonoverlapping(src.as_ptr(), addr as usize as *mut u8, src.len()) };
    Ok(())
}

/// The result of a callback that returns an MR: the MR, or the error as an
/// error pointer.
fn mr_result(result: Result<*mut bindings::ib_mr>) -> *mut bindings::ib_mr {
    result.unwrap_or_else(Error::to_ptr)
}

/// The `reg_user_mr` op.
///
/// # Safety
///
/// The arguments of the core's `reg_user_mr` call: a live PD of `T`, a DMA
/// handle (or null) and the command's udata (or null), for the call.
pub(super) unsafe extern "C" fn reg_user_mr_callback<T: Driver>(
    pd: *mut bindings::ib_pd,
    start: u64,
    length: u64,
    iova: u64,
    access: c_int,
    dmah: *mut bindings::ib_dmah,
    udata: *mut bindings::ib_udata,
) -> *mut bindings::ib_mr {
    mr_result((|| {
        if !dmah.is_null() {
            return Err(EOPNOTSUPP);
        }
        // SAFETY: The core passes a live PD of this device and a valid
        // udata for the call.
        let (pd, udata) = unsafe { (Pd::<T>::from_raw(pd), Udata::from_raw(udata)) };
        let req = UserMrRequest {
            start,
            length,
            iova,
            access: access as u32,
        };
        let slot = MrSlot::<T>::new(true)?;
        let (data, key) = T::Mr::reg_user_mr(pd, req, udata)?;
        Ok(slot.fill(data, key, 0, 0))
    })())
}

/// The `rereg_user_mr` op.
///
/// # Safety
///
/// The arguments of the core's `rereg_user_mr` call: a live MR of `T`, the
/// PD to use (the old one when unchanged) and the command's udata (or
/// null), for the call.
pub(super) unsafe extern "C" fn rereg_user_mr_callback<T: Driver>(
    mr: *mut bindings::ib_mr,
    flags: c_int,
    start: u64,
    length: u64,
    iova: u64,
    access: c_int,
    pd: *mut bindings::ib_pd,
    udata: *mut bindings::ib_udata,
) -> *mut bindings::ib_mr {
    mr_result((|| {
        let (mr, pd, udata) =
            // SAFETY: The core passes a live MR of this device (from
            // `MrSlot::fill`), the PD to use (the old one when unchanged)
            // and a valid udata, for the call.
            unsafe { (Mr::<T>::from_raw(mr), Pd::<T>::from_raw(pd), Udata::from_raw(udata)) };
        let req = UserMrRequest {
            start,
            length,
            iova,
            access: access as u32,
        };
        let flags = ReregFlags::from_raw(flags as u32);
        // The core fills in the range only for new registrations.
        let (iova, length) = if flags.translation {
            (iova, length)
        } else {
            mr.iova_length()
        };
        let slot = MrSlot::<T>::new(true)?;
        let (data, key) = T::Mr::rereg_user_mr(mr, flags, req, pd, udata)?;
        Ok(slot.fill(data, key, iova, length))
    })())
}

/// The `get_dma_mr` op.
///
/// # Safety
///
/// `pd` must be a live PD of `T`, for the call.
pub(super) unsafe extern "C" fn get_dma_mr_callback<T: Driver>(
    pd: *mut bindings::ib_pd,
    access: c_int,
) -> *mut bindings::ib_mr {
    mr_result((|| {
        // SAFETY: The core passes a live PD of this device.
        let pd = unsafe { Pd::<T>::from_raw(pd) };
        let slot = MrSlot::<T>::new(false)?;
        let (data, key) = T::Mr::get_dma_mr(pd, access as u32)?;
        Ok(slot.fill(data, key, 0, u64::MAX))
    })())
}

/// The `alloc_mr` op.
///
/// # Safety
///
/// `pd` must be a live PD of `T`, for the call.
pub(super) unsafe extern "C" fn alloc_mr_callback<T: Driver>(
    pd: *mut bindings::ib_pd,
    ty: bindings::ib_mr_type,
    max_num_sg: u32,
) -> *mut bindings::ib_mr {
    mr_result((|| {
        let ty = match ty {
            bindings::ib_mr_type_IB_MR_TYPE_MEM_REG => FastRegType::MemReg,
            bindings::ib_mr_type_IB_MR_TYPE_SG_GAPS => FastRegType::SgGaps,
            _ => return Err(EINVAL),
        };
        // SAFETY: The core passes a live PD of this device.
        let pd = unsafe { Pd::<T>::from_raw(pd) };
        let slot = MrSlot::<T>::new(false)?;
        let (data, key) = T::Mr::alloc_mr(pd, ty, max_num_sg)?;
        Ok(slot.fill(data, key, 0, 0))
    })())
}

/// The `map_mr_sg` op: the driver is told where the mapping starts, gets
/// its pages one by one through [`set_page_callback`], and is told where
/// it ended.
///
/// # Safety
///
/// The arguments of an `ib_map_mr_sg` call: a live MR of `T` from
/// `alloc_mr`, and the caller's scatterlist and offset, for the call.
pub(super) unsafe extern "C" fn map_mr_sg_callback<T: Driver>(
    ibmr: *mut bindings::ib_mr,
    sg: *mut bindings::scatterlist,
    nents: c_int,
    sg_offset: *mut c_uint,
) -> c_int {
    // SAFETY: The core passes an MR of this device from `alloc_mr` (only
    // those reach `map_mr_sg`), which lives for the call.
    let mr = unsafe { Mr::<T>::from_raw(ibmr) };
    // SAFETY: As above; `page_size` was set by `ib_map_mr_sg`.
    let page_size = unsafe { (*ibmr).page_size };
    if let Err(e) = T::Mr::map_mr_sg_start(mr, page_size) {
        return e.to_errno();
    }
    // SAFETY: The scatterlist and offset come from the caller of
    // `ib_map_mr_sg`; `set_page` is called back with this MR only.
    let n = unsafe {
        bindings::ib_sg_to_pages(ibmr, sg, nents, sg_offset, Some(set_page_callback::<T>))
    };
    if n >= 0 {
        // SAFETY: `ib_sg_to_pages` set the range; the MR is live.
        let (iova, length) = unsafe { ((*ibmr).iova, (*ibmr).length) };
        T::Mr::map_mr_sg_done(mr, n as u32, iova, length);
    }
    n
}

/// `ib_sg_to_pages`'s page callback for [`map_mr_sg_callback`].
///
/// # Safety
///
/// `ibmr` must be the MR `map_mr_sg_callback` passed to `ib_sg_to_pages`.
unsafe extern "C" fn set_page_callback<T: Driver>(ibmr: *mut bindings::ib_mr, addr: u64) -> c_int {
    from_result(|| {
        // SAFETY: Called from `map_mr_sg_callback` with its MR.
        T::Mr::map_mr_sg_page(unsafe { Mr::<T>::from_raw(ibmr) }, addr)?;
        Ok(0)
    })
}

/// The `advise_mr` op.
///
/// # Safety
///
/// The arguments of the core's `advise_mr` call: a live PD of `T` and
/// `num_sge` SGEs at `sg_list`, for the call.
pub(super) unsafe extern "C" fn advise_mr_callback<T: Driver>(
    pd: *mut bindings::ib_pd,
    advice: bindings::ib_uverbs_advise_mr_advice,
    flags: u32,
    sg_list: *mut bindings::ib_sge,
    num_sge: u32,
    _attrs: *mut bindings::uverbs_attr_bundle,
) -> c_int {
    from_result(|| {
        let advice = match advice {
            bindings::ib_uverbs_advise_mr_advice_IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH => {
                Advice::Prefetch
            }
            bindings::ib_uverbs_advise_mr_advice_IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_WRITE => {
                Advice::PrefetchWrite
            }
            bindings::ib_uverbs_advise_mr_advice_IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT => {
                Advice::PrefetchNoFault
            }
            _ => return Err(EOPNOTSUPP),
        };
        let sges = if num_sge == 0 || sg_list.is_null() {
            &[]
        } else {
            // SAFETY: The core passes `num_sge` SGEs it copied in, alive
            // for the call.
            unsafe { core::slice::from_raw_parts(sg_list.cast_const(), num_sge as usize) }
        };
        // SAFETY: The core passes a live PD of this device.
        let pd = unsafe { Pd::<T>::from_raw(pd) };
        let flush = flags & bindings::ib_uverbs_advise_mr_flag_IB_UVERBS_ADVISE_MR_FLAG_FLUSH != 0;
        T::Mr::advise_mr(pd, advice, flush, AdviseSges(sges))?;
        Ok(0)
    })
}

/// The `dereg_mr` op: the driver may refuse; the MR is freed after it
/// agrees.
///
/// # Safety
///
/// `mr` must be a live MR of `T` (every one comes from [`MrSlot::fill`]),
/// passed by the core's `dereg_mr` call.
pub(super) unsafe extern "C" fn dereg_mr_callback<T: Driver>(
    mr: *mut bindings::ib_mr,
    _udata: *mut bindings::ib_udata,
) -> c_int {
    from_result(|| {
        // SAFETY: Every MR of this device came from `MrSlot::fill`.
        T::Mr::dereg_mr(unsafe { Mr::<T>::from_raw(mr) })?;
        // SAFETY: As above; the core does not use the MR after success.
        unsafe { Mr::<T>::free(mr) };
        Ok(0)
    })
}
