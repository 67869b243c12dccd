// SPDX-License-Identifier: GPL-2.0

//! Shared receive queues: a user-produced ring of receive WQEs in the rxe
//! layout, resized by `modify_srq(IB_SRQ_MAX_WR)`. The rxe ABI passes a
//! user pointer in the modify command where the new ring's mmap info goes.
//! Kernel SRQs have the same ring in kernel memory, filled by
//! `ib_post_srq_recv` (they cannot be resized: `EINVAL`).

use crate::ib::{
    memcg::Charge,
    object::{Pd, Srq},
    srq::{SrqAttr, SrqInit, SrqKind, SrqMask, SrqOps, SrqRef},
    udata::Udata,
    upcall::{self, Upcalls},
    wr::RecvWr,
};
use crate::logic::{
    limits,
    qp::{self, AttrError},
};
use crate::rrxe::{
    cq::CqShared,
    device::{Rrxe, RrxeDev},
    pd::{pd_id, PdId},
    queue::{MmapInfo, Role, UserRing},
    xrcd::{xrcd_id, XrcdId},
};
use kernel::{
    new_spinlock_irq,
    prelude::*,
    sync::{Arc, SpinLockIrq},
    transmute::{AsBytes, FromBytes},
};

/// Largest SRQ ring: `max_srq_wr` slots of the largest receive WQE.
const MAX_SRQ_RING_BYTES: usize =
    crate::logic::ring::HDR_SIZE + ((limits::MAX_SRQ_WR as usize + 1) << 9);

/// The create response of the rxe ABI.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub(crate) struct CreateSrqResp {
    pub(crate) mi: MmapInfo,
    pub(crate) srq_num: u32,
    pub(crate) reserved: u32,
}

// SAFETY: Integers without padding (16 + 4 + 4 bytes; the size is checked
// against `struct rxe_create_srq_resp` in `rust/bindings/rxe_abi.rs`).
unsafe impl AsBytes for CreateSrqResp {}

/// The modify command's driver data: where to write the new mmap info.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub(crate) struct ModifySrqCmd {
    pub(crate) mmap_info_addr: u64,
}

// SAFETY: Any bit pattern is a valid `u64`.
unsafe impl FromBytes for ModifySrqCmd {}

/// An SRQ's mutable state.
pub struct SrqInner {
    /// The ring.
    pub ring: UserRing,
    /// Scatter entries per WQE.
    pub max_sge: u32,
    /// The armed limit (0: none).
    pub limit: u32,
}

impl SrqInner {
    /// Takes the next receive WQE into `slot` (resized to the ring's
    /// slots). When fewer than an armed limit remain afterwards, the limit
    /// event is raised (through `upcalls`, never under this lock) and
    /// disarms, as the IB spec has it.
    pub fn pop(&mut self, slot: &mut KVec<u8>, upcalls: &Upcalls) -> bool {
        let size = self.ring.geometry().elem_size();
        if slot.len() != size && slot.resize(size, 0u8, GFP_ATOMIC).is_err() {
            return false;
        }
        if !self.ring.pop(slot) {
            return false;
        }
        if self.limit != 0 && self.ring.pending() < self.limit {
            self.limit = 0;
            upcalls.raise(upcall::SRQ_LIMIT);
        }
        true
    }
}

/// What makes an SRQ an XRC SRQ: the domain whose target QPs may take
/// receives from it, and the CQ those receives complete on.
pub struct XrcSrq {
    /// The domain.
    pub xrcd: XrcdId,
    /// Where receives complete.
    pub cq: Arc<CqShared>,
}

/// An SRQ as the device's SRQ table holds it.
#[pin_data]
pub struct SrqShared {
    /// Its number.
    pub num: u32,
    /// Its PD, as an identity: an XRC target QP has none, and uses this
    /// one for the keys of the receives it takes from an XRC SRQ.
    pub pd: PdId,
    /// Its domain and CQ, for an XRC SRQ.
    pub xrc: Option<XrcSrq>,
    /// State and ring. Kernel consumers post receives from any context:
    /// the lock is irq-safe.
    #[pin]
    pub inner: SpinLockIrq<SrqInner>,
    /// The limit event's delivery.
    #[pin]
    pub upcalls: Upcalls,
    /// A kernel SRQ: its ring is in kernel memory, filled by
    /// `ib_post_srq_recv`, and is not resized.
    kernel: bool,
}

/// An SRQ as the core holds it: leaves the table when destroyed.
pub struct RrxeSrq {
    /// The SRQ.
    pub shared: Arc<SrqShared>,
}

impl RrxeSrq {
    /// Takes the SRQ out of `dev`'s table; then, under the lock every
    /// access takes, the C object (no event may reach it after this) and
    /// the ring (back to its context now, not with the last reference a QP
    /// may hold) go.
    fn unlink(&self, dev: &RrxeDev) {
        let unlinked = dev.srq_pool().remove(self.shared.num);
        let ring = self.shared.inner.lock().ring.release();
        drop((unlinked, ring));
        // No upcall reaches the C object after this.
        self.shared.upcalls.detach();
    }
}

fn attr_err(err: AttrError) -> Error {
    match err {
        AttrError::Invalid => EINVAL,
        AttrError::NotSupported => EOPNOTSUPP,
    }
}

#[vtable]
impl SrqOps<Rrxe> for RrxeSrq {
    /// `destroy_srq`: the SRQ leaves the table and lets go of its ring.
    fn destroy_srq(srq: &Srq<Rrxe>) {
        srq.data().unlink(srq.device().data());
    }

    /// `create_srq`.
    fn create_srq(
        pd: &Pd<Rrxe>,
        init: &SrqInit,
        udata: Option<&Udata>,
        this: SrqRef<Rrxe>,
    ) -> Result<(RrxeSrq, SrqAttr)> {
        let xrc = match (init.kind, init.xrc::<Rrxe>()) {
            (SrqKind::Basic, _) => None,
            // The XRC target QPs of its domain take receives from it, which
            // complete on its CQ.
            (SrqKind::Xrc, Some((xrcd, cq))) => Some(XrcSrq {
                xrcd: xrcd_id(xrcd),
                cq: cq.data().shared.clone(),
            }),
            _ => return Err(EOPNOTSUPP),
        };
        let (max_wr, max_sge) =
            qp::check_srq_init(init.attr.max_wr, init.attr.max_sge).map_err(attr_err)?;
        let elem = qp::recv_wqe_size(max_sge);
        let kernel = udata.is_none();
        let ring = match udata {
            Some(u) => {
                if u.outlen() < core::mem::size_of::<CreateSrqResp>() {
                    return Err(EINVAL);
                }
                let uc = u.ucontext::<Rrxe>();
                UserRing::new(uc, Role::KernelConsumes, max_wr, elem, MAX_SRQ_RING_BYTES)?
            }
            // A kernel SRQ: its ring is in kernel memory, filled by
            // `ib_post_srq_recv`.
            None => UserRing::new_kernel(max_wr, elem, MAX_SRQ_RING_BYTES)?,
        };
        let attr = SrqAttr {
            max_wr: ring.geometry().index_mask,
            max_sge,
            srq_limit: init.attr.srq_limit,
        };
        let mi = ring.mmap_info();
        let dev = pd.device().data();
        let mut inner = Some(SrqInner {
            ring,
            max_sge,
            limit: init.attr.srq_limit,
        });
        let mut xrc = Some(xrc);
        let charge = Charge::for_user(!kernel);
        charge.room(0)?;
        let (num, shared) = dev.srq_pool().insert(|num| {
            let inner = inner.take().ok_or(EINVAL)?;
            let xrc = xrc.take().ok_or(EINVAL)?;
            Arc::pin_init(
                try_pin_init!(SrqShared {
                    num,
                    pd: pd_id(pd),
                    xrc,
                    inner <- new_spinlock_irq!(inner, "rrxe::SrqShared::inner"),
                    upcalls <- Upcalls::new(),
                    kernel,
                }? Error),
                // A user's SRQ is charged to its memory cgroup, as its ring.
                charge.gfp(),
            )
        })?;
        // SAFETY: `destroy_srq` (and the failure below) detach before the
        // SRQ goes.
        unsafe { shared.upcalls.attach_srq(&this) };
        let srq = RrxeSrq { shared };
        if let Some(u) = udata {
            let resp = CreateSrqResp {
                mi,
                srq_num: num,
                reserved: 0,
            };
            // On failure the SRQ leaves the table again.
            u.write_out(&resp).inspect_err(|_| srq.unlink(dev))?;
        }
        Ok((srq, attr))
    }

    /// `ib_post_srq_recv` on a kernel SRQ: into its ring. Does not sleep.
    fn post_srq_recv(srq: &Srq<Rrxe>, wr: &RecvWr<'_>) -> Result {
        let s = &srq.data().shared;
        if !s.kernel {
            // User SRQs are filled through their mapped ring.
            return Err(EINVAL);
        }
        let mut slot = [0u8; 1024];
        let mut g = s.inner.lock();
        if wr.num_sge() > g.max_sge as usize {
            return Err(EINVAL);
        }
        let elem = g.ring.geometry().elem_size().min(slot.len());
        crate::logic::wqe::encode_recv(&mut slot[..elem], wr.wr_id(), wr.sges()).ok_or(EINVAL)?;
        if !g.ring.produce(&slot[..elem]) {
            return Err(ENOMEM);
        }
        Ok(())
    }

    /// `modify_srq`: resizing builds a new ring with the posted WQEs and writes
    /// its mmap info to the address the command names; the limit arms the
    /// limit event.
    fn modify_srq(srq: &Srq<Rrxe>, attr: SrqAttr, mask: SrqMask, udata: Option<&Udata>) -> Result {
        if mask.unknown {
            return Err(EINVAL);
        }
        let s = &srq.data().shared;
        let (capacity, limit, elem) = {
            let g = s.inner.lock();
            (
                g.ring.geometry().index_mask,
                g.limit,
                g.ring.geometry().elem_size(),
            )
        };
        qp::check_srq_modify(
            mask.max_wr.then_some(attr.max_wr),
            mask.limit.then_some(attr.srq_limit),
            limit,
            capacity,
        )
        .map_err(attr_err)?;
        if mask.max_wr {
            // Kernel SRQs (no context, no udata) are not resized.
            if s.kernel {
                return Err(EINVAL);
            }
            let u = udata.ok_or(EINVAL)?;
            let cmd: ModifySrqCmd = u.read_in()?;
            // Allocate without the lock (in the context of the command,
            // which owns the SRQ); move the posted WQEs under it.
            let shape = s.inner.lock().ring.geometry().elem_size() as u32;
            let mut new = UserRing::new(
                u.ucontext::<Rrxe>(),
                Role::KernelConsumes,
                attr.max_wr,
                shape,
                MAX_SRQ_RING_BYTES,
            )?;
            let mi = new.mmap_info();
            let mut buf = KVec::from_elem(0u8, elem, GFP_KERNEL)?;
            let old = {
                let mut g = s.inner.lock();
                if g.limit != 0 && attr.max_wr < g.limit {
                    return Err(EINVAL);
                }
                g.ring.transfer_into(&mut new, &mut buf)?;
                core::mem::replace(&mut g.ring, new)
            };
            // Freed outside the lock; the process's old mapping keeps its
            // pages until it unmaps them.
            drop(old);
            Udata::write_to_user(cmd.mmap_info_addr, mi.as_bytes())?;
        }
        if mask.limit {
            let mut g = s.inner.lock();
            if attr.srq_limit > g.ring.geometry().index_mask {
                return Err(EINVAL);
            }
            g.limit = attr.srq_limit;
        }
        Ok(())
    }

    /// The SRQ's number in the device's SRQ table (24 bits: see
    /// `limits::MAX_SRQ`).
    fn number(&self) -> u32 {
        self.shared.num
    }

    /// `query_srq`.
    fn query_srq(srq: &Srq<Rrxe>) -> Result<SrqAttr> {
        let g = srq.data().shared.inner.lock();
        Ok(SrqAttr {
            max_wr: g.ring.geometry().index_mask,
            max_sge: g.max_sge,
            srq_limit: g.limit,
        })
    }
}
