// SPDX-License-Identifier: GPL-2.0

//! Queue pairs: creation with the rxe send and receive rings, the state
//! machine and attribute checks of `modify_qp`, `query_qp` and destroy.
//!
//! User QPs of type RC, UC and UD have rings the process maps. Kernel QPs
//! (RC, UC, UD and GSI, which is QP1 and carries ib_core's MADs) have the
//! same rings in kernel memory: `ib_post_send`/`ib_post_recv` encode work
//! requests into them without sleeping, and a send task on the module's
//! workqueue processes the send queue as the user doorbell does.

use crate::ib::{
    device::{Device, DeviceRef},
    memcg::Charge,
    wr::{RecvWr, SendWr},
};
use crate::ib::{
    object::{Pd, Qp, Xrcd},
    qp::{QpInit, QpOps, QpType},
    udata::Udata,
};
use crate::logic::uc::RxSeq;
use crate::logic::{
    cqe::{status, Wc},
    limits,
    qp::{self, AttrError, QpAttrs, QpCap, QpState},
    wqe,
};
use crate::net::{
    gate::{GateOwner, TxGate},
    route::RouteCache,
};
use crate::rrxe::debug::Site;
use crate::rrxe::pd::{pd_id, PdId};
pub(crate) use crate::rrxe::qp_flush::{flush, flush_rest, overflow_to_err};
use crate::rrxe::qp_modify;
use crate::rrxe::qp_new::{QpLinks, QpParts};
use crate::rrxe::rc::RcLocks;
use crate::rrxe::uc::UcRx;
use crate::rrxe::{
    cq::{self, CqShared},
    device::Rrxe,
    queue::{MmapInfo, Role, UserRing},
    sq::SendBufs,
    srq::SrqShared,
    xrcd::XrcdId,
};
use crate::rrxe_dbg;
use core::sync::atomic::{AtomicBool, Ordering};
use kernel::{
    new_mutex, new_spinlock_irq, new_work,
    prelude::*,
    sync::{Arc, ArcBorrow, Mutex, SpinLockIrq},
    time::{
        hrtimer::{HrTimer, HrTimerCallback, HrTimerCallbackContext, HrTimerRestart, RelativeMode},
        Monotonic,
    },
    transmute::AsBytes,
    workqueue::Work,
};

/// The create response of the rxe ABI: the RQ's and the SQ's mmap info.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub(crate) struct CreateQpResp {
    pub(crate) rq_mi: MmapInfo,
    pub(crate) sq_mi: MmapInfo,
}

// SAFETY: Two padding-free structs of integers (its size is checked against
// `struct rxe_create_qp_resp` in `rust/bindings/rxe_abi.rs`).
unsafe impl AsBytes for CreateQpResp {}

/// A QP's mutable state, under [`QpShared`]'s `inner` (see there).
pub struct QpInner {
    /// The attributes `modify_qp` set.
    pub attrs: QpAttrs,
    /// The send ring.
    pub sq: UserRing,
    /// The receive ring (none with an SRQ).
    pub rq: Option<UserRing>,
    /// A UD QP's buffer for receive WQEs, lent to one delivery at a time.
    pub ud_spare: KVec<u8>,
}

/// A QP as the device's QP table holds it (the receive path finds QPs by
/// number there). One QP is five types:
/// - `Qp<Rrxe>`: the core's `struct ib_qp`, with [`RrxeQp`] after it, from
///   `create_qp` to `destroy_qp`; no lock of rrxe's covers it.
/// - [`RrxeQp`]: an `Arc` of the `QpShared`, as the QP table, a local
///   peer's sender, the send task, the timer and the gate hold one: those
///   may outlive the core's object.
/// - `QpShared`: what is fixed at creation, read without a lock, atomic
///   flags, and the transports' state under their own mutexes
///   (`send_lock`, the packet buffers, `rc`'s two, `uc_rx`).
/// - [`QpInner`]: the rings and the attributes, under `inner`, an IRQ-safe
///   spinlock, so taken after any of those mutexes.
/// - `QpAttrs` (`logic::qp`): the attributes `modify_qp` sets, a value in
///   [`QpInner`]; the transports copy it out under `inner` and work on the
///   copy.
#[pin_data]
pub struct QpShared {
    /// The QP number.
    pub qpn: u32,
    /// Transport.
    pub ty: QpType,
    /// Capacities, fixed at creation.
    pub cap: QpCap,
    /// Every send signals a completion.
    pub sig_all: bool,
    /// The PD, as an identity.
    pub pd: PdId,
    /// Where send completions go (none for an XRC target QP).
    pub send_cq: Option<Arc<CqShared>>,
    /// Where receive completions go (none for an XRC target QP).
    pub recv_cq: Option<Arc<CqShared>>,
    /// The SRQ receives come from, if any.
    pub srq: Option<Arc<SrqShared>>,
    /// An XRC target QP's domain: the XRC SRQs of this domain take its
    /// receives.
    pub xrcd: Option<XrcdId>,
    /// State and rings.
    #[pin]
    pub inner: SpinLockIrq<QpInner>,
    /// Serialises the processing of the send queue (doorbells may ring
    /// on several CPUs at once); a move to RESET waits for it too. It holds
    /// the buffers a doorbell works in (see [`SendBufs`]).
    #[pin]
    pub send_lock: Mutex<SendBufs>,
    /// The UC responder's message state; a UD QP's deliveries take it one
    /// at a time, and keep there (`held`) a receive WQE that a datagram's
    /// on-demand memory could not take. Taken before `inner` when both are
    /// needed.
    #[pin]
    pub uc_rx: Mutex<UcRx>,
    /// The reliable transport's state (RC QPs), under its two locks.
    #[pin]
    pub rc: RcLocks,
    /// The RC requester's buffer for packets to a QP of this device (it
    /// grows once to the largest segment, then is reused).
    #[pin]
    pub req_buf: Mutex<KVVec<u8>>,
    /// The same for the RC responder's read responses.
    #[pin]
    pub reply_buf: Mutex<KVVec<u8>>,
    /// A kernel QP (rings in kernel memory, posted through the verbs).
    pub kernel: bool,
    /// Whose memory cgroup pays for what the QP allocates once created
    /// (its packet buffers), whatever context allocates it.
    pub charge: Charge,
    /// The core's handle for the QP, carried by kernel completions.
    pub handle: usize,
    /// The route of a connected QP's packets (RC and UC), kept between
    /// packets; `modify_qp` resets it when it sets the address vector.
    pub route: Option<RouteCache>,
    /// Counts an RC QP's packets the network stack still holds; the
    /// requester waits at a bound (see `logic::gate`), and the
    /// gate wakes the send task. Opened once the QP is in the table,
    /// closed when it is destroyed.
    pub gate: Option<TxGate<QpShared>>,
    /// The device, for the send task: lent to it while the device is
    /// registered ([`DeviceRef::with`]).
    dev: DeviceRef<Rrxe>,
    /// Set when the QP is destroyed: the send task does nothing after.
    dead: AtomicBool,
    /// Set by the RC timer when it fires, taken by the requester's run
    /// that it wakes (see `rc::timer::tick`).
    timer_fired: AtomicBool,
    /// Set when a [`flush`] left WQEs for [`flush_rest`].
    pub(crate) flush_pending: AtomicBool,
    /// The send task: kernel QPs' posts, and the RC requester when the
    /// completer or a timer wakes it.
    #[pin]
    task: Work<QpShared>,
    /// The RC retransmit and RNR timer: it wakes the send task.
    #[pin]
    timer: HrTimer<QpShared>,
}

kernel::impl_has_work! {
    impl HasWork<Self> for QpShared { self.task }
}

kernel::impl_has_hr_timer! {
    impl HasHrTimer<Self> for QpShared {
        mode: RelativeMode<Monotonic>,
        field: self.timer
    }
}

impl HrTimerCallback for QpShared {
    type Pointer<'a> = Arc<QpShared>;

    fn run(
        this: ArcBorrow<'_, QpShared>,
        _ctx: HrTimerCallbackContext<'_, Self>,
    ) -> HrTimerRestart {
        this.timer_fired.store(true, Ordering::Release);
        if !this.is_dead() {
            Arc::from(this).kick();
        }
        HrTimerRestart::NoRestart
    }
}

impl QpShared {
    /// Schedules the send task (see `sq`, which runs it); a no-op while it
    /// is queued.
    pub fn kick(self: &Arc<Self>) {
        let _ = crate::net::queue().enqueue(self.clone());
    }

    /// Whether the RC timer fired since the last call (which clears it).
    /// A plain read first: the exchange is an atomic read-modify-write,
    /// which the common case (not fired) does without.
    pub fn take_timer_fired(&self) -> bool {
        self.timer_fired.load(Ordering::Acquire) && self.timer_fired.swap(false, Ordering::AcqRel)
    }

    /// The QP made of `parts`, numbered `qpn` (see `qp_new`).
    pub(crate) fn build(parts: QpParts, qpn: u32) -> Result<Arc<Self>> {
        let gfp = parts.charge.gfp();
        Arc::pin_init(
            try_pin_init!(QpShared {
                qpn,
                ty: parts.ty,
                cap: parts.cap,
                sig_all: parts.sig_all,
                pd: parts.links.pd,
                send_cq: parts.links.send_cq,
                recv_cq: parts.links.recv_cq,
                srq: parts.links.srq,
                xrcd: parts.links.xrcd,
                inner <- new_spinlock_irq!(parts.inner, "rrxe::QpShared::inner"),
                send_lock <- new_mutex!(parts.send_bufs, "rrxe::QpShared::send_lock"),
                uc_rx <- new_mutex!(parts.uc_rx, "rrxe::QpShared::uc_rx"),
                rc <- RcLocks::new(parts.req, parts.resp),
                req_buf <- new_mutex!(KVVec::new(), "rrxe::QpShared::req_buf"),
                reply_buf <- new_mutex!(KVVec::new(), "rrxe::QpShared::reply_buf"),
                kernel: parts.kernel,
                charge: parts.charge,
                handle: parts.handle,
                route: parts.route,
                gate: parts.gate,
                dev: parts.dev,
                dead: AtomicBool::new(false),
                timer_fired: AtomicBool::new(false),
                flush_pending: AtomicBool::new(false),
                task <- new_work!("rrxe::QpShared::task"),
                timer <- HrTimer::new(),
            }? Error),
            gfp,
        )
    }

    /// Whether the QP keeps the reliable transport's state (`rc`): an RC
    /// QP, an XRC initiator QP (an RC requester) or an XRC target QP (an
    /// RC responder).
    pub fn reliable(&self) -> bool {
        matches!(self.ty, QpType::Rc | QpType::XrcIni | QpType::XrcTgt)
    }

    /// Whether the QP sends RC's requests: an RC or an XRC initiator QP.
    pub fn requester(&self) -> bool {
        matches!(self.ty, QpType::Rc | QpType::XrcIni)
    }

    /// Marks the QP as being destroyed (see `RrxeQp::destroy`).
    pub(crate) fn mark_dead(&self) {
        self.dead.store(true, Ordering::Release);
    }

    /// Whether the QP is being destroyed.
    pub fn is_dead(&self) -> bool {
        self.dead.load(Ordering::Acquire)
    }

    /// Runs `op` on the QP's device, unless the device is being
    /// unregistered (its QPs are being destroyed then): `None`.
    pub(crate) fn with_device<R>(&self, op: impl FnOnce(&Device<Rrxe>) -> R) -> Option<R> {
        self.dev.with(op)
    }

    /// Posts a completion to the send CQ; returns whether it was added.
    /// Callers need not act on a completion not added: a full CQ has
    /// raised its error event and counted the loss (`cq::post`), and a
    /// destroyed QP that another thread still holds completes nothing, on
    /// purpose: its consumer has forgotten it, and a kernel QP's handle is
    /// stale. `dead` is checked under the CQ's lock, which destruction
    /// takes after setting it.
    pub fn send_wc(&self, wc: &Wc) -> bool {
        let Some(cq) = &self.send_cq else {
            return false;
        };
        cq::post(cq, wc, false, &self.dead).is_ok()
    }

    /// The attributes of a connected QP whose responder may take a packet
    /// from `sgid` to `dgid`: it is in a receiving state (RTR or later) and
    /// connected to that peer. `None` otherwise (the packet is dropped).
    pub fn responder_attrs(&self, sgid: &[u8; 16], dgid: &[u8; 16]) -> Option<QpAttrs> {
        let a = self.inner.lock().attrs;
        let receiving = matches!(
            a.state,
            QpState::Rtr | QpState::Rts | QpState::Sqd | QpState::Sqe
        );
        (receiving && *sgid == a.av.dgid && *dgid == a.av.sgid).then_some(a)
    }

    /// Completes a receive WQE a responder held (copied out of its ring)
    /// with `IB_WC_WR_FLUSH_ERR` on `cq` (the receive CQ, or an XRC SRQ's),
    /// as the ERR flush does the ring's; returns whether it was added (see
    /// [`Self::send_wc`]).
    pub fn flush_held(&self, cq: Option<&Arc<CqShared>>, slot: &[u8]) -> bool {
        let wc = Wc {
            status: status::WR_FLUSH_ERR,
            qp_num: self.qpn,
            qp_cookie: self.handle,
            wr_id: wqe::wr_id(slot).unwrap_or(0),
            ..Default::default()
        };
        cq.is_some_and(|cq| cq::post(cq, &wc, false, &self.dead).is_ok())
    }

    /// Posts a completion to the receive CQ, as [`Self::send_wc`] does.
    pub fn recv_wc(&self, wc: &Wc, solicited: bool) -> bool {
        let Some(cq) = &self.recv_cq else {
            return false;
        };
        cq::post(cq, wc, solicited, &self.dead).is_ok()
    }

    /// Posts the completion of a received message, as [`Self::recv_wc`]
    /// does, and returns whether the receive CQ was full: the completion
    /// is then lost (counted, `IB_EVENT_CQ_ERR` raised), and the caller
    /// puts the QP in ERR, as rxe's responder does for every QP type, so
    /// that the QP takes no message past one its consumer never saw. A QP
    /// with no receive CQ (an XRC target QP) takes no message this way:
    /// it counts as full.
    pub fn recv_msg_wc(&self, wc: &Wc, solicited: bool) -> bool {
        self.msg_wc_on(self.recv_cq.as_ref(), wc, solicited)
    }

    /// [`Self::recv_msg_wc`] on `cq` (the receive CQ, or an XRC SRQ's).
    pub fn msg_wc_on(&self, cq: Option<&Arc<CqShared>>, wc: &Wc, solicited: bool) -> bool {
        let Some(cq) = cq else {
            return true;
        };
        cq::post(cq, wc, solicited, &self.dead) == Err(ENOSPC)
    }
}

impl QpShared {
    /// Takes the next receive WQE (from the SRQ or the QP's own ring) into
    /// `slot`, resized to fit. Returns the scatter entries it may hold.
    pub fn pop_recv(&self, slot: &mut KVec<u8>) -> Option<u32> {
        if let Some(srq) = self.srq.as_ref() {
            let mut g = srq.inner.lock();
            let max = g.max_sge;
            return g.pop(slot, &srq.upcalls).then_some(max);
        }
        let size = self.inner.lock().rq.as_ref()?.geometry().elem_size();
        if slot.len() != size {
            self.charge
                .run(size, |gfp| Ok(slot.resize(size, 0u8, gfp)?))
                .ok()?;
        }
        let mut g = self.inner.lock();
        let rq = g.rq.as_mut()?;
        if rq.geometry().elem_size() != slot.len() {
            return None;
        }
        rq.pop(slot).then_some(self.cap.max_recv_sge)
    }
}

/// A QP as the core holds it (after its `struct ib_qp`): leaves the QP
/// table when destroyed. See [`QpShared`].
pub struct RrxeQp {
    /// The QP.
    pub shared: Arc<QpShared>,
}

impl GateOwner for QpShared {
    /// Fewer of the QP's packets are out: the requester may go on.
    fn wake(this: ArcBorrow<'_, Self>) {
        if !this.is_dead() {
            Arc::from(this).kick();
        }
    }
}

/// QP1, the general services QP.
pub const GSI_QPN: u32 = 1;

/// The errno of an attribute the logic refused.
pub(crate) fn attr_err(err: AttrError) -> Error {
    match err {
        AttrError::Invalid => EINVAL,
        AttrError::NotSupported => EOPNOTSUPP,
    }
}

#[vtable]
impl QpOps<Rrxe> for RrxeQp {
    /// `destroy_qp`: see `RrxeQp::destroy`; never refused.
    fn destroy_qp(ibqp: &Qp<Rrxe>) -> Result {
        ibqp.data().destroy(ibqp.device().data());
        Ok(())
    }

    /// `create_qp`: checks the request as rxe does and makes the rings; the
    /// response carries their mmap info.
    fn create_qp(
        pd: &Pd<Rrxe>,
        init: &QpInit,
        udata: Option<&Udata>,
    ) -> Result<(RrxeQp, u32, QpCap)> {
        let kernel = udata.is_none();
        match init.ty {
            QpType::Rc | QpType::Uc | QpType::Ud => {}
            // An XRC initiator QP's WQEs name the remote XRC SRQ in a word
            // of the user ABI: a kernel work request has none.
            QpType::XrcIni if !kernel => {}
            // QP1 is for ib_core's MAD layer, on port 1.
            QpType::Gsi if kernel && init.port_num == 1 => {}
            _ => return Err(EOPNOTSUPP),
        }
        if init.create_flags != 0 {
            return Err(EOPNOTSUPP);
        }
        // An XRC initiator QP receives nothing: the core gives it no
        // receive CQ, and it has no receive queue.
        let ini = init.ty == QpType::XrcIni;
        let (send_cq, recv_cq) = if ini {
            (init.send_cq::<Rrxe>().ok_or(EINVAL)?, None)
        } else {
            let (scq, rcq) = init.cqs::<Rrxe>().ok_or(EINVAL)?;
            (scq, Some(rcq))
        };
        let (send_cq, recv_cq) = (
            send_cq.data().shared.clone(),
            recv_cq.map(|c| c.data().shared.clone()),
        );
        let srq = init.srq::<Rrxe>().map(|x| x.data().shared.clone());
        let no_rq = init.has_srq || ini;
        qp::check_cap(&init.cap, no_rq).map_err(attr_err)?;
        let (sq_elem, send_sge, inline) = qp::send_wqe_layout(&init.cap);
        let recv_elem = qp::recv_wqe_size(init.cap.max_recv_sge);
        let (sq, rq) = match udata {
            Some(udata) => {
                if udata.outlen() < core::mem::size_of::<CreateQpResp>() {
                    return Err(EINVAL);
                }
                let uc = udata.ucontext::<Rrxe>();
                let sq = UserRing::new(
                    uc,
                    Role::KernelConsumes,
                    init.cap.max_send_wr,
                    sq_elem,
                    MAX_QP_RING_BYTES,
                )?;
                let rq = if no_rq {
                    None
                } else {
                    Some(UserRing::new(
                        uc,
                        Role::KernelConsumes,
                        init.cap.max_recv_wr,
                        recv_elem,
                        MAX_QP_RING_BYTES,
                    )?)
                };
                (sq, rq)
            }
            None => {
                let sq = UserRing::new_kernel(init.cap.max_send_wr, sq_elem, MAX_QP_RING_BYTES)?;
                let rq = if no_rq {
                    None
                } else {
                    Some(UserRing::new_kernel(
                        init.cap.max_recv_wr,
                        recv_elem,
                        MAX_QP_RING_BYTES,
                    )?)
                };
                (sq, rq)
            }
        };
        let cap = QpCap {
            max_send_wr: sq.geometry().index_mask,
            max_send_sge: send_sge,
            max_inline_data: inline,
            max_recv_wr: rq.as_ref().map_or(0, |r| r.geometry().index_mask),
            max_recv_sge: if no_rq { 0 } else { init.cap.max_recv_sge },
        };
        if let Some(udata) = udata {
            let resp = CreateQpResp {
                rq_mi: rq.as_ref().map(|r| r.mmap_info()).unwrap_or_default(),
                sq_mi: sq.mmap_info(),
            };
            udata.write_out(&resp)?;
        }

        let links = QpLinks {
            pd: pd_id(pd),
            send_cq: Some(send_cq),
            recv_cq,
            srq,
            xrcd: None,
        };
        // What a user QP allocates (its RC shadow of the send ring, as large
        // as the ring, its route cache and socket, the buffers that grow
        // later) is the user's memory, charged to its memory cgroup like
        // the rings.
        let charge = Charge::for_user(udata.is_some());
        let parts = QpParts::new(init, pd.device(), links, (sq, rq), cap, charge, kernel)?;
        let (qpn, shared) = parts.install(pd.device())?;
        Ok((RrxeQp { shared }, qpn, cap))
    }

    /// `create_qp` of an XRC target QP: see `qp_xrc`.
    fn create_xrc_tgt(xrcd: &Xrcd<Rrxe>, init: &QpInit) -> Result<(RrxeQp, u32, QpCap)> {
        crate::rrxe::qp_xrc::create_tgt(xrcd, init)
    }

    /// `modify_qp`: the transition must be one the IB spec allows with exactly
    /// these attributes, and every value named must be in range; then the
    /// values are taken.
    fn modify_qp(
        ibqp: &Qp<Rrxe>,
        new: &QpAttrs,
        cur: Option<QpState>,
        mask: u32,
        _udata: Option<&Udata>,
    ) -> Result {
        let s = &ibqp.data().shared;
        if mask & qp::mask::STATE != 0 && new.state == QpState::Reset {
            rrxe_dbg!(
                ibqp.device().data(),
                Site::QpState,
                "qp {:#x}: -> Reset (modify_qp)",
                s.qpn
            );
            return qp_modify::reset(s, new, cur, mask);
        }
        let mut g = s.inner.lock();
        qp_modify::check(s, &g, new, cur, mask)?;
        let was = g.attrs.state;
        qp::apply(&mut g.attrs, new, mask);
        if mask & qp::mask::AV != 0 {
            if let Some(r) = &s.route {
                r.reset();
            }
        }
        let to_err = g.attrs.state == QpState::Err && was != QpState::Err;
        if g.attrs.state != was {
            let now = g.attrs.state;
            rrxe_dbg!(
                ibqp.device().data(),
                Site::QpState,
                "qp {:#x}: {was:?} -> {now:?} (modify_qp)",
                s.qpn
            );
        }
        if to_err {
            flush(s, &mut g);
        }
        drop(g);
        flush_rest(s);
        if s.reliable() {
            let mut resp = s.rc.resp.lock();
            if mask & qp::mask::RQ_PSN != 0 {
                resp.set_rq_psn(new.rq_psn);
            }
            if mask & qp::mask::MAX_DEST_RD_ATOMIC != 0 {
                let n = new.max_dest_rd_atomic;
                s.charge.run(0, |gfp| resp.set_dest_rd_atomic(n, gfp))?;
            }
            if to_err {
                resp.on_error(s);
            }
            drop(resp);
            let mut req = s.rc.req.lock();
            if mask & qp::mask::SQ_PSN != 0 {
                req.set_sq_psn(new.sq_psn);
            }
            if mask & (qp::mask::RETRY_CNT | qp::mask::RNR_RETRY) != 0 {
                let a = s.inner.lock().attrs;
                req.set_retries(a.retry_cnt, a.rnr_retry);
            }
            if to_err {
                req.on_error();
            }
        }
        // The responder's state has its own lock, taken before `inner`.
        let mut rx = s.uc_rx.lock();
        if mask & qp::mask::RQ_PSN != 0 {
            rx.seq = RxSeq {
                epsn: new.rq_psn & 0x00ff_ffff,
                msg: None,
            };
            rx.offset = 0;
            rx.write = None;
        }
        if to_err {
            // A receive WQE kept by the UC responder is flushed too.
            if let Some((slot, _)) = rx.held.take() {
                s.flush_held(s.recv_cq.as_ref(), &slot);
            }
            rx.seq.msg = None;
            rx.write = None;
        }
        Ok(())
    }

    /// `query_qp`.
    fn query_qp(ibqp: &Qp<Rrxe>) -> Result<(QpAttrs, QpCap, bool)> {
        let s = &ibqp.data().shared;
        let attrs = s.inner.lock().attrs;
        Ok((attrs, s.cap, s.sig_all))
    }

    /// The user doorbell: the send queue is processed as UD, UC or RC
    /// requires.
    fn post_send_user(ibqp: &Qp<Rrxe>) -> Result {
        crate::rrxe::sq::post_send_user(ibqp)
    }

    /// `attach_mcast`: see the multicast groups.
    fn attach_mcast(ibqp: &Qp<Rrxe>, gid: &[u8; 16]) -> Result {
        crate::rrxe::mcast::attach(ibqp, gid)
    }

    /// `detach_mcast`: see the multicast groups.
    fn detach_mcast(ibqp: &Qp<Rrxe>, gid: &[u8; 16]) -> Result {
        crate::rrxe::mcast::detach(ibqp, gid)
    }

    /// `ib_post_send` on a kernel QP: the work request goes into the send
    /// ring in the rxe layout and the send task is kicked. Does not sleep.
    fn post_send_kernel(ibqp: &Qp<Rrxe>, wr: &SendWr<'_, Rrxe>) -> Result {
        let s = &ibqp.data().shared;
        if !s.kernel {
            // Requests for user QPs come through the mapped ring.
            return Err(EOPNOTSUPP);
        }
        if wr.num_sge() > s.cap.max_send_sge as usize {
            return Err(EINVAL);
        }
        let detail = if let Some(u) = wr.ud() {
            wqe::WrDetail::Ud {
                remote_qpn: u.remote_qpn,
                remote_qkey: u.remote_qkey,
                pkey_index: u.pkey_index,
                ah_num: 0,
            }
        } else if let Some((remote_addr, rkey)) = wr.rdma() {
            wqe::WrDetail::Rdma { remote_addr, rkey }
        } else if let Some((mr_key, key, access, iova)) = wr.reg() {
            wqe::WrDetail::Reg {
                mr_key,
                key,
                access,
                iova,
            }
        } else {
            wqe::WrDetail::None
        };
        if matches!(s.ty, QpType::Ud | QpType::Gsi) && !matches!(detail, wqe::WrDetail::Ud { .. }) {
            return Err(EINVAL);
        }
        // Kernel inline data comes with valid lkeys: it is gathered like any
        // other payload.
        let f = wqe::SendFields {
            wr_id: wr.wr_id(),
            opcode: wr.opcode(),
            send_flags: wr.send_flags() & !wqe::SEND_INLINE,
            ex: wr.ex(),
            detail,
        };
        let mut slot = [0u8; KERNEL_WQE_MAX];
        let mut g = s.inner.lock();
        if matches!(g.attrs.state, QpState::Reset | QpState::Init | QpState::Rtr) {
            return Err(EINVAL);
        }
        let elem = g.sq.geometry().elem_size().min(KERNEL_WQE_MAX);
        wqe::encode_send(&mut slot[..elem], &f, wr.sges()).ok_or(EINVAL)?;
        if let Some(u) = wr.ud() {
            let ah = &u.ah.data().shared;
            let av = wqe::LegacyAv {
                sgid: ah.sgid,
                dgid: ah.av.dgid,
                flow_label: ah.av.flow_label,
                hop_limit: ah.av.hop_limit,
                traffic_class: ah.av.traffic_class,
            };
            wqe::encode_legacy_av(&mut slot[..elem], &av).ok_or(EINVAL)?;
        }
        if !g.sq.produce(&slot[..elem]) {
            return Err(ENOMEM);
        }
        drop(g);
        s.kick();
        Ok(())
    }

    /// `ib_post_recv` on a kernel QP: into the receive ring (flushed at once
    /// in ERR). Does not sleep.
    fn post_recv(ibqp: &Qp<Rrxe>, wr: &RecvWr<'_>) -> Result {
        let s = &ibqp.data().shared;
        if !s.kernel || s.srq.is_some() {
            return Err(EINVAL);
        }
        if wr.num_sge() > s.cap.max_recv_sge as usize {
            return Err(EINVAL);
        }
        let mut slot = [0u8; KERNEL_WQE_MAX];
        let mut g = s.inner.lock();
        if g.attrs.state == QpState::Reset {
            return Err(EINVAL);
        }
        let rq = g.rq.as_mut().ok_or(EINVAL)?;
        let elem = rq.geometry().elem_size().min(KERNEL_WQE_MAX);
        wqe::encode_recv(&mut slot[..elem], wr.wr_id(), wr.sges()).ok_or(EINVAL)?;
        if !rq.produce(&slot[..elem]) {
            return Err(ENOMEM);
        }
        if g.attrs.state == QpState::Err {
            flush(s, &mut g);
        }
        drop(g);
        flush_rest(s);
        Ok(())
    }
}

/// Largest send WQE of a kernel QP that is built on the stack.
const KERNEL_WQE_MAX: usize = 1024;

/// Largest QP ring: `max_qp_wr` slots of the largest WQE (1 KiB), as rxe
/// allows (a gigabyte of kernel memory for a maximal send queue).
const MAX_QP_RING_BYTES: usize =
    crate::logic::ring::HDR_SIZE + ((limits::MAX_QP_WR as usize + 1) << 10);
