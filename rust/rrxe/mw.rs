// SPDX-License-Identifier: GPL-2.0

//! Memory windows: allocation, binds and invalidation, and the resolution
//! of an rkey that names a window.

use crate::ib::{
    memcg::Charge,
    mw::MwOps,
    object::{Mw, Pd},
    udata::Udata,
};
use crate::logic::{
    access::{self, MwType},
    bounds::Range,
    keys,
    mw::{self, Binding, MwState, UseError},
};
use crate::rrxe::pd::{pd_id, PdId};
use crate::rrxe::{
    device::{Rrxe, RrxeDev},
    mr::{lookup_mr, random_key8, LocalOpError, MrRef, NeedAccess, RrxeMr},
};
use core::sync::atomic::{AtomicU32, Ordering};
use kernel::{
    new_spinlock,
    prelude::*,
    sync::{Arc, SpinLock},
};

/// A memory window.
#[pin_data]
pub struct RrxeMw {
    /// Index in the device's MW table.
    pub index: u32,
    /// The current rkey (binds change its low byte).
    pub rkey: AtomicU32,
    /// Window type.
    pub ty: MwType,
    /// The PD it belongs to, as an identity.
    pub pd: PdId,
    /// State and binding, changed by binds and invalidations.
    #[pin]
    pub bind: SpinLock<MwBind>,
}

/// A window's state and what it is bound to.
///
/// # Invariants
///
/// While `binding` is `Some((mr, _))`, this window is counted in
/// `mr.bound_mws`.
pub struct MwBind {
    /// Free, valid or invalid (see `logic::mw`).
    pub state: MwState,
    /// The MR and the range the window grants, once bound.
    pub binding: Option<(Arc<RrxeMr>, Binding)>,
}

#[vtable]
impl MwOps<Rrxe> for MwHandle {
    /// `alloc_mw`: a window in the MW table. Type 1 windows start valid and
    /// unbound; type 2 windows start free.
    fn alloc_mw(pd: &Pd<Rrxe>, ty: MwType, udata: Option<&Udata>) -> Result<(MwHandle, u32)> {
        let dev = pd.device().data();
        // A user's window is charged to its memory cgroup.
        let charge = Charge::for_user(udata.is_some());
        charge.room(0)?;
        let gfp = charge.gfp();
        let pd_id = pd_id(pd);
        let (_, mw) = dev.mw_pool().insert(|index| {
            let rkey = keys::make_key(index, random_key8()).ok_or(EINVAL)?;
            let state = mw::initial_state(ty);
            Arc::pin_init(
                try_pin_init!(RrxeMw {
                    index,
                    rkey: AtomicU32::new(rkey),
                    ty,
                    pd: pd_id,
                    // INVARIANT: Unbound.
                    bind <- new_spinlock!(
                        MwBind { state, binding: None },
                        "rrxe::RrxeMw::bind"
                    ),
                }? Error),
                gfp,
            )
        })?;
        let rkey = mw.rkey.load(Ordering::Relaxed);
        Ok((MwHandle { mw }, rkey))
    }

    /// `dealloc_mw`: the window is unbound, invalid for good, and leaves
    /// the table.
    fn dealloc_mw(ibmw: &Mw<Rrxe>) {
        let mw = &ibmw.data().mw;
        let old = {
            let mut b = mw.bind.lock();
            b.state = MwState::Invalid;
            b.binding.take()
        };
        if let Some((mr, _)) = old {
            // INVARIANT: Unbound, so no longer counted.
            mr.bound_mws.unbind();
        }
        ibmw.device().data().mw_pool().remove(mw.index);
    }
}

/// A window as the core holds it: removed from the table when the core
/// deallocates it.
pub struct MwHandle {
    /// The window.
    pub mw: Arc<RrxeMw>,
}

/// Resolves `key`, which names a window (see [`super::mr::lookup_key`]):
/// the MR the window is bound to and the address in its space.
pub(crate) fn resolve(
    dev: &RrxeDev,
    key: u32,
    pd: PdId,
    qpn: u32,
    need: NeedAccess,
    iova: u64,
    len: u64,
) -> Result<(MrRef, u64)> {
    let w = dev.mw_pool().get(keys::key_index(key)).ok_or(EINVAL)?;
    if w.rkey.load(Ordering::Acquire) != key {
        return Err(EINVAL);
    }
    crate::rrxe::glue::test_hold(crate::rrxe::glue::Site::MwResolve);
    let (mr, mr_iova) = {
        let b = w.bind.lock();
        // Again under the binding's lock, which every change of key takes:
        // the look above may be older than an invalidation and a new bind,
        // and the old key must not reach the new binding.
        if w.rkey.load(Ordering::Acquire) != key {
            return Err(EINVAL);
        }
        let bound = b.binding.as_ref();
        let mr_iova = mw::check_use(
            w.ty,
            b.state,
            bound.map(|x| &x.1),
            w.pd == pd,
            qpn,
            need,
            iova,
            len,
        )
        .map_err(|e| match e {
            UseError::BadKey => EINVAL,
            UseError::Access => EACCES,
            UseError::Bounds => EFAULT,
        })?;
        // A bound MR is not deregistered (deregistration is refused
        // while windows are bound), so it takes the access.
        let mr = MrRef::enter(bound.ok_or(EINVAL)?.0.clone()).ok_or(EINVAL)?;
        (mr, mr_iova)
    };
    // A bind checked the window against the MR; check again, cheaply.
    mr.range.offset_of(mr_iova, len).ok_or(EFAULT)?;
    Ok((mr, mr_iova))
}

/// A memory-window bind from QP `qpn` of PD `pd` (a `BIND_MW` WQE: the type
/// 1 binds librxe's `ibv_bind_mw` posts and type 2 binds alike). The window
/// must carry `mw_rkey` as its current key and belong to `pd`; the MR,
/// named by `mr_lkey`, must belong to `pd`, allow MW_BIND, cover the range
/// and satisfy the access rules. A type 2 window must be free and gets a
/// non-empty range tied to the QP; a zero-length bind unbinds a type 1
/// window. The new key keeps the index and takes the low byte of `rkey`.
#[expect(clippy::too_many_arguments)]
pub fn bind_mw(
    dev: &crate::rrxe::device::RrxeDev,
    pd: PdId,
    qpn: u32,
    mw_rkey: u32,
    rkey: u32,
    mr_lkey: u32,
    addr: u64,
    length: u64,
    mw_access: u32,
) -> core::result::Result<(), LocalOpError> {
    if keys::key_kind(mw_rkey) != Some(keys::KeyKind::Mw) {
        return Err(LocalOpError::BadKey);
    }
    let w = dev
        .mw_pool()
        .get(keys::key_index(mw_rkey))
        .ok_or(LocalOpError::BadKey)?;
    if w.pd != pd || w.rkey.load(Ordering::Acquire) != mw_rkey {
        return Err(LocalOpError::BadKey);
    }
    let range = Range::new(addr, length).ok_or(LocalOpError::Refused)?;
    // The MR, unless a type 1 window is being unbound.
    let mr = if length == 0 && w.ty == MwType::Type1 {
        None
    } else {
        if length == 0 {
            return Err(LocalOpError::Refused);
        }
        let mr = lookup_mr(dev, mr_lkey, pd, 0, addr, length).map_err(|_| LocalOpError::BadKey)?;
        access::check_bind_access(w.ty, mr.access, mw_access).map_err(|_| LocalOpError::Refused)?;
        Some(mr)
    };
    let new_key = (mw_rkey & !0xff) | (rkey & 0xff);
    let old = {
        let mut b = w.bind.lock();
        // Again under the lock that every change of key takes (see
        // `resolve`).
        if w.rkey.load(Ordering::Acquire) != mw_rkey {
            return Err(LocalOpError::BadKey);
        }
        match (w.ty, b.state) {
            (MwType::Type1, MwState::Valid) | (MwType::Type2, MwState::Free) => {}
            _ => return Err(LocalOpError::Refused),
        }
        // The MR may have been deregistered since the lookup: then its
        // key names nothing, and the bind fails.
        if mr.as_ref().is_some_and(|m| !m.bound_mws.bind()) {
            return Err(LocalOpError::BadKey);
        }
        let new = mr.map(|m| {
            let qp = (w.ty == MwType::Type2).then_some(qpn);
            (
                m.arc(),
                Binding {
                    range,
                    access: mw_access,
                    qpn: qp,
                },
            )
        });
        if w.ty == MwType::Type2 {
            b.state = MwState::Valid;
        }
        w.rkey.store(new_key, Ordering::Release);
        // INVARIANT: The new MR was counted above; the old one is uncounted
        // below, once the lock is dropped.
        core::mem::replace(&mut b.binding, new)
    };
    if let Some((m, _)) = old {
        m.bound_mws.unbind();
    }
    Ok(())
}

/// Invalidates the window `rkey` names for PD `pd` (see
/// [`super::mr::invalidate`]): a bound type 2 window returns to free.
pub(crate) fn invalidate(
    dev: &RrxeDev,
    rkey: u32,
    pd: PdId,
) -> core::result::Result<(), LocalOpError> {
    if keys::key_kind(rkey) != Some(keys::KeyKind::Mw) {
        return Err(LocalOpError::BadKey);
    }
    let w = dev
        .mw_pool()
        .get(keys::key_index(rkey))
        .ok_or(LocalOpError::BadKey)?;
    if w.pd != pd || w.rkey.load(Ordering::Acquire) != rkey || w.ty != MwType::Type2 {
        return Err(LocalOpError::BadKey);
    }
    let old = {
        let mut b = w.bind.lock();
        // Again under the lock that every change of key takes (see
        // `resolve`).
        if w.rkey.load(Ordering::Acquire) != rkey {
            return Err(LocalOpError::BadKey);
        }
        if b.state != MwState::Valid {
            return Err(LocalOpError::Refused);
        }
        b.state = MwState::Free;
        // INVARIANT: Uncounted below.
        b.binding.take()
    };
    if let Some((m, _)) = old {
        m.bound_mws.unbind();
    }
    Ok(())
}
