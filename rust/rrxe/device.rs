// SPDX-License-Identifier: GPL-2.0

//! The rrxe device: creation on `rdma link add`, attributes, port state,
//! and reactions to netdev events.

use crate::ib::{
    ah::AhInit,
    attr::{
        DeviceAttrs, PhysState, PortAttrs, PortImmutable, PortState, MGMT_MAD_SIZE, PORT_CM_SUP,
        WIDTH_1X,
    },
    cq::{CqAttr, CqRef, NotifyFlags, WcOut},
    device::{Device, Driver, NewDevice},
    dm::{Dm, DmMrRequest, DmRequest},
    link::LinkHandler,
    mr::{FastRegType, Mr, ReregFlags, UserMrRequest},
    net::NetTicket,
    netdev::{Event, Handler, NetDev},
    object::{Ah, Cq, Pd, Qp, Srq, Ucontext},
    qp::QpInit,
    srq::{SrqAttr, SrqInit, SrqMask, SrqRef},
    stats::{self, Counter},
    udata::Udata,
    wr::{RecvWr, SendWr},
};
use crate::logic::{
    access::MwType,
    guid, limits as l, mtu,
    qp::{Av, QpAttrs, QpCap, QpState},
};
use crate::pr_err_ratelimited;
use crate::rrxe::{
    ah::{self, AhShared, RrxeAh},
    cq::{self, RrxeCq},
    dm::{self, RrxeDm},
    mcast::{self, McastTable},
    mr::{self, MwHandle, RrxeMr, RrxeMw},
    pool::Pool,
    qp::{self, QpShared, RrxeQp},
    srq::{self, RrxeSrq, SrqShared},
};
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use kernel::{
    new_mutex, new_spinlock,
    prelude::*,
    sync::{Arc, Mutex, SpinLock},
};

/// Per-device state.
#[pin_data]
pub struct RrxeDev {
    /// Device attributes, fixed at creation.
    attrs: DeviceAttrs,
    /// Memory regions, by index (keys are `index << 8 | key8`).
    #[pin]
    mrs: Pool<RrxeMr>,
    /// Memory windows, by index, in a range disjoint from the MRs'.
    #[pin]
    mws: Pool<RrxeMw>,
    /// The active IB MTU (`enum ib_mtu`), following the netdev's MTU.
    active_mtu: AtomicU32,
    /// Number of live PDs, bounded by `max_pd`.
    pds: AtomicU32,
    /// Port counters, indexed by `stats::Counter` (`link_downed` among
    /// them).
    counters: [AtomicU64; stats::NUM_COUNTERS],
    /// Device memory in use, in bytes (whole pages), at most
    /// `attrs.max_dm_size`.
    dm_used: AtomicU64,
    /// Number of live CQs, bounded by `max_cq`.
    cqs: AtomicU32,
    /// Queue pairs, by number.
    #[pin]
    qps: Pool<QpShared>,
    /// Address handles, by number.
    #[pin]
    ahs: Pool<AhShared>,
    /// Shared receive queues, by number.
    #[pin]
    srqs: Pool<SrqShared>,
    /// Multicast groups.
    #[pin]
    mcast: Mutex<McastTable>,
    /// The device's share of its namespace's UDP sockets.
    _net: NetTicket,
    /// QP1 (GSI), outside the numbered table.
    #[pin]
    gsi: SpinLock<Option<Arc<QpShared>>>,
    /// Serialises the responder's atomics (see `atomics`).
    #[pin]
    atomics: Mutex<()>,
}

impl RrxeDev {
    /// The MR table.
    pub fn mr_pool(&self) -> &Pool<RrxeMr> {
        &self.mrs
    }

    /// The MW table.
    pub fn mw_pool(&self) -> &Pool<RrxeMw> {
        &self.mws
    }

    /// The active MTU cell.
    pub(crate) fn active_mtu_raw(&self) -> &AtomicU32 {
        &self.active_mtu
    }

    /// Adds `n` to a port counter.
    pub fn count(&self, c: Counter, n: u64) {
        self.counters[c as usize].fetch_add(n, Ordering::Relaxed);
    }

    /// The device attributes.
    pub fn attrs(&self) -> &DeviceAttrs {
        &self.attrs
    }

    /// Serialises the responder's atomic operations across QPs.
    pub fn atomics(&self) -> &Mutex<()> {
        &self.atomics
    }

    /// The multicast groups.
    pub fn mcast(&self) -> &Mutex<McastTable> {
        &self.mcast
    }

    /// The SRQ table.
    pub fn srq_pool(&self) -> &Pool<SrqShared> {
        &self.srqs
    }

    /// The AH table.
    pub fn ah_pool(&self) -> &Pool<AhShared> {
        &self.ahs
    }

    /// The QP table.
    pub fn gsi(&self) -> &SpinLock<Option<Arc<QpShared>>> {
        &self.gsi
    }

    /// The QP numbered `qpn` (QP1 included), with a reference.
    pub fn qp(&self, qpn: u32) -> Option<Arc<QpShared>> {
        if qpn == crate::rrxe::qp::GSI_QPN {
            return self.gsi.lock().clone();
        }
        self.qps.get(qpn)
    }

    /// The numbered QPs.
    pub fn qp_pool(&self) -> &Pool<QpShared> {
        &self.qps
    }

    /// Number of live CQs.
    pub fn cq_count(&self) -> &AtomicU32 {
        &self.cqs
    }

    /// Device memory in use, in bytes.
    pub fn dm_used(&self) -> &AtomicU64 {
        &self.dm_used
    }

    /// The device's device memory size (`dm_size` when it was created).
    pub fn max_dm_size(&self) -> u64 {
        self.attrs.max_dm_size
    }

    fn set_mtu(&self, netdev_mtu: u32) {
        self.active_mtu
            .store(mtu::active_mtu(netdev_mtu) as u32, Ordering::Relaxed);
    }
}

/// A user context. Objects that need mmap entries hang off it in later work.
pub struct RrxeUcontext;

/// The provider type: implements the `ib` layer's driver operations.
pub struct Rrxe;

#[vtable]
impl Driver for Rrxe {
    type Data = RrxeDev;
    type Ucontext = RrxeUcontext;
    type Pd = PdGuard;
    type Mr = Arc<RrxeMr>;
    type Mw = MwHandle;
    type Dm = RrxeDm;
    type Cq = RrxeCq;
    type Qp = RrxeQp;
    type Ah = RrxeAh;
    type Srq = RrxeSrq;

    const DRIVER_ID: u32 = crate::ib::attr::DRIVER_ID_RXE;
    const UVERBS_ABI_VER: u32 = l::UVERBS_ABI_VERSION;

    fn query_device(dev: &Device<Self>) -> Result<DeviceAttrs> {
        Ok(dev.data().attrs.clone())
    }

    fn query_port(dev: &Device<Self>, port: u32) -> Result<PortAttrs> {
        let ndev = dev.netdev(port).ok_or(ENODEV)?;
        let active = ndev.port_active();
        let (speed, width) = dev.eth_speed(port).unwrap_or((1, WIDTH_1X));
        Ok(PortAttrs {
            state: if active {
                PortState::Active
            } else {
                PortState::Down
            },
            phys_state: if active {
                PhysState::LinkUp
            } else if ndev.is_up() {
                PhysState::Polling
            } else {
                PhysState::Disabled
            },
            max_mtu: mtu::IbMtu::Mtu4096 as u32,
            active_mtu: dev.data().active_mtu.load(Ordering::Relaxed),
            gid_tbl_len: l::PORT_GID_TBL_LEN,
            port_cap_flags: PORT_CM_SUP,
            max_msg_sz: l::PORT_MAX_MSG_SZ,
            bad_pkey_cntr: 0,
            qkey_viol_cntr: 0,
            pkey_tbl_len: l::PORT_PKEY_TBL_LEN,
            max_vl_num: l::PORT_MAX_VL_NUM,
            active_width: width,
            active_speed: speed,
        })
    }

    fn query_pkey(_dev: &Device<Self>, _port: u32, index: u16) -> Result<u16> {
        if index != 0 {
            return Err(EINVAL);
        }
        Ok(l::DEFAULT_PKEY)
    }

    fn port_immutable(_dev: &Device<Self>, _port: u32) -> Result<PortImmutable> {
        Ok(PortImmutable {
            pkey_tbl_len: l::PORT_PKEY_TBL_LEN.into(),
            gid_tbl_len: l::PORT_GID_TBL_LEN,
            roce_udp_encap: true,
            max_mad_size: MGMT_MAD_SIZE,
        })
    }

    fn alloc_ucontext(_dev: &Device<Self>, _udata: Option<&Udata>) -> Result<RrxeUcontext> {
        Ok(RrxeUcontext)
    }

    fn alloc_pd(dev: &Device<Self>, _udata: Option<&Udata>) -> Result<PdGuard> {
        PdGuard::new(dev)
    }

    fn reg_user_mr(
        pd: &Pd<Self>,
        req: UserMrRequest,
        udata: Option<&Udata>,
    ) -> Result<(Arc<RrxeMr>, u32)> {
        mr::reg_user_mr(pd, req, udata)
    }

    fn rereg_user_mr(
        m: &Mr<Self>,
        flags: ReregFlags,
        req: UserMrRequest,
        new_pd: &Pd<Self>,
        _udata: Option<&Udata>,
    ) -> Result<(Arc<RrxeMr>, u32)> {
        mr::rereg_user_mr(m, flags, req, new_pd)
    }

    fn get_dma_mr(pd: &Pd<Self>, access: u32) -> Result<(Arc<RrxeMr>, u32)> {
        mr::get_dma_mr(pd, access)
    }

    fn alloc_mr(pd: &Pd<Self>, ty: FastRegType, max_num_sg: u32) -> Result<(Arc<RrxeMr>, u32)> {
        mr::alloc_mr(pd, ty, max_num_sg)
    }

    fn map_mr_sg_start(m: &Mr<Self>, page_size: u32) -> Result {
        mr::map_mr_sg_start(m, page_size)
    }

    fn map_mr_sg_page(m: &Mr<Self>, addr: u64) -> Result {
        mr::map_mr_sg_page(m, addr)
    }

    fn map_mr_sg_done(m: &Mr<Self>, _n: u32, iova: u64, length: u64) {
        mr::map_mr_sg_done(m, iova, length)
    }

    fn dereg_mr(m: &Mr<Self>) -> Result {
        mr::dereg_mr(m)
    }

    fn alloc_mw(pd: &Pd<Self>, ty: MwType, udata: Option<&Udata>) -> Result<(MwHandle, u32)> {
        mr::alloc_mw(pd, ty, udata)
    }

    fn create_cq(
        dev: &Device<Self>,
        attr: CqAttr,
        user: Option<(&Ucontext<Self>, Option<&Udata>)>,
        this: CqRef<Self>,
    ) -> Result<(RrxeCq, u32)> {
        cq::create_cq(dev, attr, user, this)
    }

    fn resize_cq(c: &Cq<Self>, cqe: u32, udata: Option<&Udata>) -> Result<u32> {
        cq::resize_cq(c, cqe, udata)
    }

    fn req_notify_cq(c: &Cq<Self>, flags: NotifyFlags) -> Result<bool> {
        cq::req_notify_cq(c, flags)
    }

    fn poll_cq(c: &Cq<Self>, out: &mut WcOut<'_>) {
        cq::poll_cq(c, out)
    }

    fn peek_cq(c: &Cq<Self>, n: u32) -> u32 {
        cq::peek_cq(c, n)
    }

    fn create_ah(pd: &Pd<Self>, init: &AhInit, udata: Option<&Udata>) -> Result<RrxeAh> {
        ah::create_ah(pd, init, udata)
    }

    fn query_ah(a: &Ah<Self>) -> Result<Av> {
        ah::query_ah(a)
    }

    fn create_srq(
        pd: &Pd<Self>,
        init: &SrqInit,
        udata: Option<&Udata>,
        this: SrqRef<Self>,
    ) -> Result<(RrxeSrq, SrqAttr)> {
        srq::create_srq(pd, init, udata, this)
    }

    fn modify_srq(s: &Srq<Self>, attr: SrqAttr, mask: SrqMask, udata: Option<&Udata>) -> Result {
        srq::modify_srq(s, attr, mask, udata)
    }

    fn query_srq(s: &Srq<Self>) -> Result<SrqAttr> {
        srq::query_srq(s)
    }

    fn attach_mcast(q: &Qp<Self>, gid: &[u8; 16]) -> Result {
        mcast::attach(q, gid)
    }

    fn detach_mcast(q: &Qp<Self>, gid: &[u8; 16]) -> Result {
        mcast::detach(q, gid)
    }

    fn hw_counters(dev: &Device<Self>, _port: u32) -> [u64; stats::NUM_COUNTERS] {
        let c = &dev.data().counters;
        core::array::from_fn(|i| c[i].load(Ordering::Relaxed))
    }

    fn create_qp(
        pd: &Pd<Self>,
        init: &QpInit,
        udata: Option<&Udata>,
    ) -> Result<(RrxeQp, u32, QpCap)> {
        qp::create_qp(pd, init, udata)
    }

    fn modify_qp(
        q: &Qp<Self>,
        attrs: &QpAttrs,
        cur: Option<QpState>,
        mask: u32,
        _udata: Option<&Udata>,
    ) -> Result {
        qp::modify_qp(q, attrs, cur, mask)
    }

    fn query_qp(q: &Qp<Self>) -> Result<(QpAttrs, QpCap, bool)> {
        qp::query_qp(q)
    }

    fn rx_packet(dev: &Device<Self>, pkt: &[u8]) {
        crate::rrxe::net::rx(dev, pkt)
    }

    fn post_send_kernel(q: &Qp<Self>, wr: &SendWr<'_, Self>) -> Result {
        qp::post_send_kernel(q, wr)
    }

    fn post_recv(q: &Qp<Self>, wr: &RecvWr<'_>) -> Result {
        qp::post_recv_kernel(q, wr)
    }

    fn post_srq_recv(s: &Srq<Self>, wr: &RecvWr<'_>) -> Result {
        srq::post_srq_recv_kernel(s, wr)
    }

    fn post_send_user(q: &Qp<Self>) -> Result {
        crate::rrxe::sq::post_send_user(q)
    }

    fn alloc_dm(uc: &Ucontext<Self>, req: DmRequest) -> Result<(RrxeDm, u64)> {
        dm::alloc_dm(uc, req)
    }

    fn reg_dm_mr(pd: &Pd<Self>, d: &Dm<Self>, req: DmMrRequest) -> Result<(Arc<RrxeMr>, u32)> {
        dm::reg_dm_mr(pd, d, req)
    }
}

/// Counts a PD against the device's `max_pd` for as long as it lives.
pub struct PdGuard {
    dev: *const RrxeDev,
}

// SAFETY: `dev` points to device data that outlives every PD (the core
// destroys all objects before `dealloc_driver`), and is only read atomically.
unsafe impl Send for PdGuard {}
// SAFETY: See above.
unsafe impl Sync for PdGuard {}

impl PdGuard {
    fn new(dev: &Device<Rrxe>) -> Result<Self> {
        let d = dev.data();
        d.pds
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                (n < d.attrs.max_pd).then_some(n + 1)
            })
            .map_err(|_| ENOMEM)?;
        Ok(Self { dev: d })
    }
}

impl Drop for PdGuard {
    fn drop(&mut self) {
        // SAFETY: The device data outlives its PDs (see the `Send` impl).
        unsafe { (*self.dev).pds.fetch_sub(1, Ordering::Relaxed) };
    }
}

impl LinkHandler for Rrxe {
    fn newlink(name: &CStr, ndev: &NetDev) -> Result {
        if ndev.is_vlan() {
            pr_err_ratelimited!("{}: rrxe needs a real netdev, not a VLAN\n", ndev.name());
            return Err(EPERM);
        }
        if Device::<Rrxe>::with_netdev(ndev, |_| ()).is_some() {
            pr_err_ratelimited!("{}: already has an RXE-driver device\n", ndev.name());
            return Err(EEXIST);
        }
        let (addr, len) = ndev.mac();
        let mut random = [0u8; 6];
        if len < 6 {
            crate::ib::random_bytes(&mut random);
        }
        let mac = guid::device_mac(&addr[..len], random);
        let guid = guid::eui64_from_mac(&mac);
        let dm_size = crate::ib::dm::dm_size_param();
        if !crate::logic::dm::check_dm_size(dm_size, kernel::page::PAGE_SIZE as u64) {
            pr_err_ratelimited!(
                "dm_size {} is not a multiple of {} up to {}\n",
                dm_size,
                kernel::page::PAGE_SIZE,
                crate::logic::dm::MAX_DM_SIZE
            );
            return Err(EINVAL);
        }
        let ticket = NetTicket::get(ndev).inspect_err(|e| {
            pr_err_ratelimited!(
                "{}: cannot open UDP port 4791 in its namespace ({:?}): one RoCEv2 provider per namespace\n",
                ndev.name(),
                e
            );
        })?;
        let mut attrs = crate::rrxe::params::device_attrs(guid);
        attrs.max_dm_size = dm_size;
        let dev = try_pin_init!(RrxeDev {
            attrs,
            mrs <- Pool::new(l::MIN_MR_INDEX, l::MAX_MR_INDEX, l::MAX_MR),
            mws <- Pool::new(l::MIN_MW_INDEX, l::MAX_MW_INDEX, l::MAX_MW),
            active_mtu: AtomicU32::new(mtu::active_mtu(ndev.mtu()) as u32),
            pds: AtomicU32::new(0),
            counters: [const { AtomicU64::new(0) }; stats::NUM_COUNTERS],
            dm_used: AtomicU64::new(0),
            cqs: AtomicU32::new(0),
            qps <- Pool::new(l::MIN_QP_INDEX, l::MIN_QP_INDEX + l::MAX_QP - 1, l::MAX_QP),
            ahs <- Pool::new(1, l::MAX_AH, l::MAX_AH),
            srqs <- Pool::new(l::MIN_SRQ_INDEX, l::MIN_SRQ_INDEX + l::MAX_SRQ - 1, l::MAX_SRQ),
            mcast <- new_mutex!(McastTable::default()),
            _net: ticket,
            gsi <- new_spinlock!(None),
            atomics <- new_mutex!(()),
        }? Error);
        let mut new = NewDevice::<Rrxe>::new(
            &<crate::RrxeModule as kernel::ModuleMetadata>::THIS_MODULE,
            ndev,
            dev,
        )?;
        new.set_node_guid(guid);
        new.set_node_desc(b"rrxe");
        new.set_num_comp_vectors(crate::ib::num_possible_cpus());
        new.register(name, ndev)?;
        pr_info!("{}: added on {}\n", name, ndev.name());
        Ok(())
    }
}

impl Handler for Rrxe {
    fn event(event: Event, ndev: &NetDev) {
        Device::<Rrxe>::with_netdev(ndev, |dev| match event {
            Event::Unregister => {
                pr_info!(
                    "{}: {} unregistered, removing device\n",
                    dev.name(),
                    ndev.name()
                );
                dev.unregister_queued();
            }
            Event::ChangeMtu => dev.data().set_mtu(ndev.mtu()),
            Event::Down | Event::Change => {
                if !ndev.port_active() {
                    dev.data().count(Counter::LinkDowned, 1);
                }
            }
            Event::Up | Event::Other(_) => {}
        });
    }
}
