// SPDX-License-Identifier: GPL-2.0

//! The rrxe device: creation on `rdma link add`, attributes, port state,
//! and reactions to netdev events.

use crate::ib::{
    attr::{
        DeviceAttrs, PhysState, PortAttrs, PortImmutable, PortState, MGMT_MAD_SIZE, PORT_CM_SUP,
        WIDTH_1X,
    },
    device::{Device, Driver, NewDevice, UapiDefinitions},
    link::LinkHandler,
};
use crate::logic::{
    cqe::{status, Wc},
    guid, limits, mtu, pma,
    wqe::Opcode,
};
use crate::net::{
    netdev::{Event, Handler, NetDev},
    tunnel::NetTicket,
};
use crate::pr_err_ratelimited;
use crate::rrxe::{
    ah::{AhShared, RrxeAh},
    cq::RrxeCq,
    dm::RrxeDm,
    mcast::McastTable,
    mr::RrxeMr,
    mw::{MwHandle, RrxeMw},
    pd::{RrxePd, RrxeUcontext},
    pool::{LiveSet, Pool},
    qp::{QpShared, RrxeQp},
    srq::{RrxeSrq, SrqShared},
    stats::{self, Counter, PortCounters},
    xrcd::RrxeXrcd,
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
    /// Number of live XRC domains, bounded by `limits::MAX_XRCD`.
    xrcds: AtomicU32,
    /// Port counters (`link_downed` among them); shared with the CQs,
    /// which count the completions they lose.
    counters: Arc<PortCounters>,
    /// Device memory in use, in bytes (whole pages), at most
    /// `attrs.max_dm_size`; shared with the allocations, which give their
    /// share back when they go.
    dm_used: Arc<AtomicU64>,
    /// Number of live CQs, bounded by `max_cq`.
    cqs: AtomicU32,
    /// Queue pairs, by number.
    #[pin]
    qps: Pool<QpShared>,
    /// The numbers of the QPs in `qps`, for the receive softirq.
    qp_live: LiveSet,
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

    /// The active MTU as `enum ib_mtu`.
    pub fn active_mtu(&self) -> u32 {
        self.active_mtu.load(Ordering::Relaxed)
    }

    /// Adds `amount` to a port counter.
    pub fn count(&self, counter: Counter, amount: u64) {
        self.counters.count(counter, amount);
    }

    /// The port counters, for an object that counts into them.
    pub fn counters(&self) -> &Arc<PortCounters> {
        &self.counters
    }

    /// Counts a send WQE that finished with `wc` (signaled or not), as
    /// rxe's completer does: `rdma_sends` counts the SENDs that succeeded.
    pub fn count_send_done(&self, wc: &Wc) {
        if wc.status == status::SUCCESS && wc.opcode == Opcode::Send.wc_opcode() {
            self.count(Counter::RdmaSend, 1);
        }
    }

    /// Counts a receive completion, as rxe's responder does: `rdma_recvs`
    /// counts those that succeeded.
    pub fn count_recv_done(&self, wc: &Wc) {
        if wc.status == status::SUCCESS {
            self.count(Counter::RdmaRecv, 1);
        }
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

    /// The numbers of the QPs in [`Self::qp_pool`], readable in any
    /// context.
    pub fn qp_live(&self) -> &LiveSet {
        &self.qp_live
    }

    /// Number of live PDs.
    pub fn pd_count(&self) -> &AtomicU32 {
        &self.pds
    }

    /// Number of live XRC domains.
    pub fn xrcd_count(&self) -> &AtomicU32 {
        &self.xrcds
    }

    /// Number of live CQs.
    pub fn cq_count(&self) -> &AtomicU32 {
        &self.cqs
    }

    /// Device memory in use, in bytes.
    pub fn dm_used(&self) -> &Arc<AtomicU64> {
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

/// The provider type: implements the `ib` layer's driver operations. Each
/// object type implements its family's operations in its own file.
pub struct Rrxe;

#[vtable]
impl Driver for Rrxe {
    type Data = RrxeDev;
    type Ucontext = RrxeUcontext;
    type Pd = RrxePd;
    type Mr = Arc<RrxeMr>;
    type Mw = MwHandle;
    type Dm = RrxeDm;
    type Cq = RrxeCq;
    type Qp = RrxeQp;
    type Ah = RrxeAh;
    type Srq = RrxeSrq;
    type Xrcd = RrxeXrcd;

    const DRIVER_ID: u32 = crate::ib::attr::DRIVER_ID_RXE;
    const UVERBS_ABI_VER: u32 = limits::UVERBS_ABI_VERSION;
    const HW_COUNTERS: &'static [crate::ib::stats::StatDesc] = &stats::NAMES;

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
            gid_tbl_len: limits::PORT_GID_TBL_LEN,
            port_cap_flags: PORT_CM_SUP,
            max_msg_sz: limits::PORT_MAX_MSG_SZ,
            bad_pkey_cntr: 0,
            qkey_viol_cntr: 0,
            pkey_tbl_len: limits::PORT_PKEY_TBL_LEN,
            max_vl_num: limits::PORT_MAX_VL_NUM,
            active_width: width,
            active_speed: speed,
        })
    }

    fn query_pkey(_dev: &Device<Self>, _port: u32, index: u16) -> Result<u16> {
        if index != 0 {
            return Err(EINVAL);
        }
        Ok(limits::DEFAULT_PKEY)
    }

    fn port_immutable(_dev: &Device<Self>, _port: u32) -> Result<PortImmutable> {
        Ok(PortImmutable {
            pkey_tbl_len: limits::PORT_PKEY_TBL_LEN.into(),
            gid_tbl_len: limits::PORT_GID_TBL_LEN,
            roce_udp_encap: true,
            max_mad_size: MGMT_MAD_SIZE,
        })
    }

    fn hw_counters(dev: &Device<Self>, _port: u32, values: &mut [u64]) {
        dev.data().counters.read(values);
    }

    fn pma_counters(dev: &Device<Self>, _port: u32) -> pma::PortCounters {
        dev.data().counters.pma()
    }

    fn driver_def() -> Option<UapiDefinitions> {
        crate::rrxe::glue::driver_def()
    }

    fn rx_accept(dev: &Device<Self>, pkt: &[u8]) -> bool {
        crate::rrxe::net::rx_accept(dev, pkt)
    }

    fn rx_packet(dev: &Device<Self>, pkt: &[u8]) {
        crate::rrxe::net::rx(dev, pkt)
    }

    fn rx_queue_full(dev: &Device<Self>) {
        crate::rrxe::debug::dropped(
            dev.data(),
            Counter::RcvdQueueFull,
            crate::rrxe::debug::Site::DropFull,
            format_args!("receive queue full"),
        );
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
        let dm_size = crate::rrxe::glue::dm_size_param();
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
            mrs <- Pool::new(limits::MIN_MR_INDEX, limits::MAX_MR_INDEX, limits::MAX_MR),
            mws <- Pool::new(limits::MIN_MW_INDEX, limits::MAX_MW_INDEX, limits::MAX_MW),
            active_mtu: AtomicU32::new(mtu::active_mtu(ndev.mtu()) as u32),
            pds: AtomicU32::new(0),
            xrcds: AtomicU32::new(0),
            counters: Arc::new(PortCounters::default(), GFP_KERNEL)?,
            dm_used: Arc::new(AtomicU64::new(0), GFP_KERNEL)?,
            cqs: AtomicU32::new(0),
            qps <- Pool::new(limits::MIN_QP_INDEX, limits::MIN_QP_INDEX + limits::MAX_QP - 1, limits::MAX_QP),
            qp_live: LiveSet::new(limits::MIN_QP_INDEX, limits::MIN_QP_INDEX + limits::MAX_QP - 1)?,
            ahs <- Pool::new(1, limits::MAX_AH, limits::MAX_AH),
            srqs <- Pool::new(limits::MIN_SRQ_INDEX, limits::MIN_SRQ_INDEX + limits::MAX_SRQ - 1, limits::MAX_SRQ),
            mcast <- new_mutex!(McastTable::default(), "rrxe::RrxeDev::mcast"),
            _net: ticket,
            gsi <- new_spinlock!(None, "rrxe::RrxeDev::gsi"),
            atomics <- new_mutex!((), "rrxe::RrxeDev::atomics"),
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
