// SPDX-License-Identifier: GPL-2.0

//! Completion queues.
//!
//! A user CQ is an rxe ring (`logic::ring`) in kernel memory the process
//! maps: rrxe produces 128-byte slots holding `ib_uverbs_wc` entries and the
//! process consumes them. The kernel keeps its own copy of the geometry and
//! of the producer index, and only reads the consumer index (masked), so
//! nothing userspace writes into the mapping can move the kernel out of
//! bounds. A kernel CQ is a private ring of completions.

use crate::ib::{
    cq::{CqAttr, CqOps, CqRef, NotifyArm, NotifyFlags, WcOut},
    device::Device,
    memcg::Charge,
    object::{Cq, Ucontext},
    udata::Udata,
    upcall::{self, Upcalls},
};
use crate::logic::{
    cqe::Wc,
    ring::{self, Geometry},
};
use crate::rrxe::stats::{Counter, PortCounters};
use crate::rrxe::{
    device::Rrxe,
    queue::{MmapInfo, Role, UserRing},
};
use core::sync::atomic::{AtomicBool, Ordering};
use kernel::{
    new_spinlock_irq,
    prelude::*,
    sync::{Arc, SpinLockIrq},
};

/// Largest CQ ring buffer: rxe's `max_cqe` in 128-byte slots, plus the
/// header.
const MAX_RING_BYTES: usize = ring::HDR_SIZE + (1 << 22);

enum Ring {
    User {
        ring: UserRing,
    },
    Kernel {
        slots: KVec<Wc>,
        geo: Geometry,
        prod: u32,
        cons: u32,
    },
}

struct Inner {
    ring: Ring,
    arm: Option<NotifyArm>,
    /// Whether the C object still exists; posting to a destroyed CQ does
    /// nothing.
    alive: bool,
}

/// A CQ's state, shared with the QPs that complete to it (which may hold
/// it past the CQ's destruction: then posting does nothing).
///
/// Kernel consumers poll, arm and post from any context (`IB_POLL_SOFTIRQ`
/// CQs are polled in softirq, RDS posts from tasklets): the lock is
/// irq-safe, and the consumer's handlers run from `upcalls`, never under
/// it.
#[pin_data]
pub struct CqShared {
    #[pin]
    inner: SpinLockIrq<Inner>,
    #[pin]
    upcalls: Upcalls,
    /// The device's port counters, where completions lost to a full ring
    /// count.
    counters: Arc<PortCounters>,
}

/// A completion queue as the core holds it.
pub struct RrxeCq {
    /// The state.
    pub shared: Arc<CqShared>,
}

#[vtable]
impl CqOps<Rrxe> for RrxeCq {
    /// `destroy_cq`: the C object goes; the ring goes back to its context.
    fn destroy_cq(cq: &Cq<Rrxe>) {
        // The C object goes after this: no notification may reach it. A
        // user ring goes back to its context now (a QP that another thread
        // still holds may keep this state alive), and is freed outside the
        // lock.
        let sh = &cq.data().shared;
        let ring = {
            let mut g = sh.inner.lock();
            g.alive = false;
            match &mut g.ring {
                Ring::User { ring, .. } => Some(ring.release()),
                Ring::Kernel { .. } => None,
            }
        };
        drop(ring);
        // Every upcall was raised under the lock while `alive`: wait for
        // the last one's delivery.
        sh.upcalls.detach();
        cq.device()
            .data()
            .cq_count()
            .fetch_sub(1, Ordering::Relaxed);
    }

    /// `create_cq`: checks the request as rxe does (a capacity of 1 up to
    /// `max_cqe`, no flags, a valid completion vector) and makes the ring.
    fn create_cq(
        dev: &Device<Rrxe>,
        attr: CqAttr,
        user: Option<(&Ucontext<Rrxe>, Option<&Udata>)>,
        this: CqRef<Rrxe>,
    ) -> Result<(RrxeCq, u32)> {
        let d = dev.data();
        if attr.flags != 0 {
            return Err(EOPNOTSUPP);
        }
        if attr.cqe == 0
            || attr.cqe > d.attrs().max_cqe
            || attr.comp_vector >= crate::ib::num_possible_cpus()
        {
            return Err(EINVAL);
        }
        if let Some((_, Some(u))) = user {
            if u.outlen() < core::mem::size_of::<MmapInfo>() {
                return Err(EINVAL);
            }
        }
        d.cq_count()
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                (n < d.attrs().max_cq).then_some(n + 1)
            })
            .map_err(|_| ENOMEM)?;
        // From here the count is released by `RrxeCq`'s drop, or below.
        let ring = match user {
            Some((uc, udata)) => UserRing::new(
                uc,
                Role::KernelProduces,
                attr.cqe,
                ring::CQE_SIZE,
                MAX_RING_BYTES,
            )
            .and_then(|r| {
                if let Some(u) = udata {
                    u.write_out(&r.mmap_info())?;
                }
                Ok(Ring::User { ring: r })
            }),
            None => kernel_ring(attr.cqe),
        };
        let ring = match ring {
            Ok(r) => r,
            Err(e) => {
                d.cq_count().fetch_sub(1, Ordering::Relaxed);
                return Err(e);
            }
        };
        let cqe = match &ring {
            Ring::User { ring, .. } => ring.geometry().index_mask,
            Ring::Kernel { geo, .. } => geo.index_mask,
        };
        // A user's CQ is the user's memory, as its ring is.
        let charge = Charge::for_user(user.is_some());
        if let Err(e) = charge.room(0) {
            d.cq_count().fetch_sub(1, Ordering::Relaxed);
            return Err(e);
        }
        let shared = Arc::pin_init(
            pin_init!(CqShared {
                inner <- new_spinlock_irq!(
                    Inner {
                        ring,
                        arm: None,
                        alive: true,
                    },
                    "rrxe::CqShared::inner"
                ),
                upcalls <- Upcalls::new(),
                counters: d.counters().clone(),
            }),
            charge.gfp(),
        );
        match shared {
            Ok(shared) => {
                // SAFETY: `destroy_cq` detaches before the CQ goes.
                unsafe { shared.upcalls.attach_cq(&this) };
                Ok((RrxeCq { shared }, cqe))
            }
            Err(e) => {
                d.cq_count().fetch_sub(1, Ordering::Relaxed);
                Err(e)
            }
        }
    }

    /// `resize_cq` (user CQs): a new ring with the unconsumed entries, whose
    /// mmap info goes back to userspace. `EINVAL` above `max_cqe` or below the
    /// entries waiting.
    fn resize_cq(cq: &Cq<Rrxe>, cqe: u32, udata: Option<&Udata>) -> Result<u32> {
        let d = cq.device().data();
        if cqe == 0 || cqe > d.attrs().max_cqe {
            return Err(EINVAL);
        }
        if let Some(u) = udata {
            if u.outlen() < core::mem::size_of::<MmapInfo>() {
                return Err(EINVAL);
            }
        }
        let sh = &cq.data().shared;
        // Kernel CQs are not resized. A user CQ's new ring, allocated
        // without the lock, belongs to the context of the command, which
        // owns the CQ.
        if let Ring::Kernel { .. } = &sh.inner.lock().ring {
            return Err(EOPNOTSUPP);
        }
        let uc = udata.ok_or(EINVAL)?.ucontext::<Rrxe>();
        let mut new = UserRing::new(
            uc,
            Role::KernelProduces,
            cqe,
            ring::CQE_SIZE,
            MAX_RING_BYTES,
        )?;
        let n = new.geometry().index_mask;
        let mi = new.mmap_info();
        let mut buf = [0u8; ring::CQE_SIZE as usize];
        let old = {
            let mut g = sh.inner.lock();
            let Ring::User { ring, .. } = &mut g.ring else {
                return Err(EOPNOTSUPP);
            };
            ring.transfer_into(&mut new, &mut buf)?;
            core::mem::replace(ring, new)
        };
        // Unlocked: copying to userspace may fault. The process learns the new
        // ring's place from this; its mapping of the old one keeps its pages
        // until it unmaps them (the old ring is freed here, outside the lock).
        drop(old);
        if let Some(u) = udata {
            u.write_out(&mi)?;
        }
        Ok(n)
    }

    /// `req_notify_cq`: arms for the next (or next solicited) completion; a
    /// next-completion arm is not weakened by a later solicited one.
    fn req_notify_cq(cq: &Cq<Rrxe>, flags: NotifyFlags) -> Result<bool> {
        let mut g = cq.data().shared.inner.lock();
        match (g.arm, flags.arm) {
            (_, Some(NotifyArm::Next)) => g.arm = Some(NotifyArm::Next),
            (None, Some(NotifyArm::Solicited)) => g.arm = Some(NotifyArm::Solicited),
            _ => {}
        }
        let waiting = match &g.ring {
            Ring::User { ring, .. } => ring.pending() != 0,
            Ring::Kernel {
                geo, prod, cons, ..
            } => geo.count(*prod, *cons) != 0,
        };
        Ok(flags.report_missed && waiting)
    }

    /// `poll_cq` (kernel CQs).
    fn poll_cq(cq: &Cq<Rrxe>, out: &mut WcOut<'_>) {
        let mut g = cq.data().shared.inner.lock();
        if let Ring::Kernel {
            slots,
            geo,
            prod,
            cons,
        } = &mut g.ring
        {
            while *cons != *prod && out.room() > 0 {
                let Some(wc) = slots.get(*cons as usize) else {
                    break;
                };
                out.push(wc);
                *cons = geo.next(*cons);
            }
        }
    }

    /// `peek_cq` (kernel CQs).
    fn peek_cq(cq: &Cq<Rrxe>, wc_cnt: u32) -> u32 {
        let g = cq.data().shared.inner.lock();
        match &g.ring {
            Ring::Kernel {
                geo, prod, cons, ..
            } => geo.count(*prod, *cons).min(wc_cnt),
            Ring::User { .. } => 0,
        }
    }
}

fn kernel_ring(entries: u32) -> Result<Ring> {
    let geo = Geometry::new(entries, ring::CQE_SIZE, MAX_RING_BYTES).ok_or(EINVAL)?;
    let mut slots = KVec::with_capacity(geo.slots(), GFP_KERNEL)?;
    for _ in 0..geo.slots() {
        slots.push(Wc::default(), GFP_KERNEL)?;
    }
    Ok(Ring::Kernel {
        slots,
        geo,
        prod: 0,
        cons: 0,
    })
}

/// Adds a completion of the QP whose destruction sets `qp_dead`; the data
/// path's entry point, callable in any context and under the QP's lock. An
/// armed CQ calls its handler (solicited-only arms fire for solicited and
/// error completions); a full CQ raises `IB_EVENT_CQ_ERR`, as rxe's does,
/// and the completion is lost (`ENOSPC`) and counted in the port's
/// `cq_overflow`. Both upcalls run later, from the CQ's
/// `irq_work`, with no lock held. A destroyed CQ, or a QP being destroyed,
/// adds nothing (`ENODEV`): `qp_dead` is read under the lock that
/// [`fence`] takes.
pub fn post(cq: &CqShared, wc: &Wc, solicited: bool, qp_dead: &AtomicBool) -> Result {
    let mut g = cq.inner.lock();
    if !g.alive || qp_dead.load(Ordering::Acquire) {
        return Err(ENODEV);
    }
    let ok = match &mut g.ring {
        Ring::User { ring, .. } => ring.push(&wc.to_uverbs()),
        Ring::Kernel {
            slots,
            geo,
            prod,
            cons,
        } => {
            if geo.is_full(*prod, *cons) {
                false
            } else {
                if let Some(s) = slots.get_mut(*prod as usize) {
                    *s = *wc;
                }
                *prod = geo.next(*prod);
                true
            }
        }
    };
    if !ok {
        cq.counters.count(Counter::CqOverflow, 1);
        cq.upcalls.raise(upcall::CQ_ERROR);
        return Err(ENOSPC);
    }
    let fire = match g.arm {
        Some(NotifyArm::Next) => true,
        Some(NotifyArm::Solicited) => solicited || wc.status != crate::logic::cqe::status::SUCCESS,
        None => false,
    };
    if fire {
        g.arm = None;
        cq.upcalls.raise(upcall::COMPLETION);
    }
    Ok(())
}

/// Waits out every [`post`] under way: one that starts after this reads
/// the `qp_dead` its caller set before. Once a destroyed QP has fenced its
/// CQs, none of its completions (whose `qp_cookie` the core frees) is
/// added any more.
pub fn fence(cq: &CqShared) {
    drop(cq.inner.lock());
}
