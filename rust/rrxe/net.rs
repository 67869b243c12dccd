// SPDX-License-Identifier: GPL-2.0

//! RoCEv2 on the wire: building and sending packets (IP, UDP, the
//! transport headers, the payload, its pad and the ICRC), and the first
//! checks on packets that arrive, before the transports see them.

use crate::ib::device::Device;
use crate::logic::{
    hdr::{self, Bth, Layout, Service},
    icrc::{self, UDP_HDR},
    mcast,
    pkt::{self, IpInfo, IpOut},
    qp::QpAttrs,
    wqe,
};
use crate::net::{crc, gate::TxGate, route::RouteCache, skb::TxPacket};
use crate::rrxe::stats::Counter;
use crate::rrxe::{
    debug::{self, Site},
    device::{Rrxe, RrxeDev},
    qp::QpShared,
    rc, uc, ud,
};
use crate::rrxe_dbg;
use core::sync::atomic::{AtomicU8, Ordering};
use kernel::prelude::*;
use kernel::time::{Instant, Monotonic};

// Aligns the sections of the CRC-32 loops (`logic::icrc::Slice8` and
// `logic::icrc::Sparse`) to pages: the module's text starts on one, and
// each loop then fits in the first page of its section. A section's
// alignment is the largest asked for in it.
core::arch::global_asm!(
    ".pushsection .text.rrxe_crc,\"ax\",@progbits",
    ".balign 4096",
    ".popsection",
    ".pushsection .text.rrxe_crc_sparse,\"ax\",@progbits",
    ".balign 4096",
    ".popsection"
);

/// The ICRC's CRC-32 engines, in the order [`choose_icrc_engine`] times
/// them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum CrcEngine {
    /// The kernel's `crc32_le` (carry-less multiply where the CPU has it).
    Kernel = 0,
    /// The table-driven slice-by-8 of `logic::icrc`.
    Slice8 = 1,
    /// The table-free fold by a sparse multiple of `logic::icrc`.
    Sparse = 2,
}

impl CrcEngine {
    const ALL: [Self; 3] = [Self::Kernel, Self::Slice8, Self::Sparse];

    /// The engine's name in the kernel log.
    pub fn name(self) -> &'static str {
        match self {
            Self::Kernel => "crc32_le",
            Self::Slice8 => "slice-by-8",
            Self::Sparse => "sparse fold",
        }
    }

    fn crc32_le(self, crc: u32, data: &[u8]) -> u32 {
        match self {
            Self::Kernel => <crc::Kernel as icrc::Backend>::crc32_le(crc, data),
            Self::Slice8 => <icrc::Slice8 as icrc::Backend>::crc32_le(crc, data),
            Self::Sparse => <icrc::Sparse as icrc::Backend>::crc32_le(crc, data),
        }
    }
}

/// The [`CrcEngine`] the ICRC uses, as its `u8`: the fastest at module
/// load.
static ENGINE: AtomicU8 = AtomicU8::new(CrcEngine::Kernel as u8);

fn engine() -> CrcEngine {
    let e = ENGINE.load(Ordering::Relaxed);
    CrcEngine::ALL
        .get(usize::from(e))
        .copied()
        .unwrap_or(CrcEngine::Kernel)
}

/// The ICRC of a packet (IP header to payload), by the chosen engine.
fn icrc(pkt: &[u8]) -> Result<u32, icrc::IcrcError> {
    match engine() {
        CrcEngine::Kernel => icrc::icrc_with::<crc::Kernel>(pkt),
        CrcEngine::Slice8 => icrc::icrc_with::<icrc::Slice8>(pkt),
        CrcEngine::Sparse => icrc::icrc_with::<icrc::Sparse>(pkt),
    }
}

/// The ICRC of a packet given as its IP and UDP headers and the rest (see
/// `icrc::icrc_split_with`), by the chosen engine.
pub(crate) fn icrc_split(hdrs: &[u8], udp_payload: &[u8]) -> Result<u32, icrc::IcrcError> {
    match engine() {
        CrcEngine::Kernel => icrc::icrc_split_with::<crc::Kernel>(hdrs, udp_payload),
        CrcEngine::Slice8 => icrc::icrc_split_with::<icrc::Slice8>(hdrs, udp_payload),
        CrcEngine::Sparse => icrc::icrc_split_with::<icrc::Sparse>(hdrs, udp_payload),
    }
}

/// Picks the fastest CRC-32 engine for this CPU, as the kernel picks its
/// RAID-6 and XOR routines at boot: each engine runs over 4 KiB a few
/// times, in turn, and the best run of each counts. `crc32_le` uses the
/// CPU's carry-less multiply where it has one, and is then the fastest on
/// hardware. Where that instruction is emulated and loads are dear, the
/// table-driven engines can win, the sparse fold with its one load per
/// eight bytes most; timing them at load picks whichever holds on the CPU
/// at hand.
/// Returns the best times in nanoseconds, in [`CrcEngine`] order, and the
/// engine chosen.
pub fn choose_icrc_engine() -> ([i64; 3], CrcEngine) {
    const LEN: usize = 4096;
    const ROUNDS: usize = 8;
    let mut best = [i64::MAX; 3];
    let Ok(mut buf) = KVec::<u8>::from_elem(0u8, LEN, GFP_KERNEL) else {
        return (best, engine());
    };
    for (i, b) in buf.iter_mut().enumerate() {
        *b = (i as u8).wrapping_mul(31).wrapping_add(7);
    }
    let mut crcs = [0u32; 3];
    for _ in 0..ROUNDS {
        for e in CrcEngine::ALL {
            let t = Instant::<Monotonic>::now();
            crcs[e as usize] = e.crc32_le(!0, &buf);
            best[e as usize] = best[e as usize].min(t.elapsed().as_nanos());
        }
        // All engines compute the same CRC; a difference is a broken
        // engine, and the kernel's is the reference.
        if crcs[1] != crcs[0] || crcs[2] != crcs[0] {
            pr_err!("ICRC engines disagree; using crc32_le\n");
            ENGINE.store(CrcEngine::Kernel as u8, Ordering::Relaxed);
            return (best, CrcEngine::Kernel);
        }
    }
    let mut chosen = CrcEngine::Kernel;
    for e in CrcEngine::ALL {
        if best[e as usize] < best[chosen as usize] {
            chosen = e;
        }
    }
    ENGINE.store(chosen as u8, Ordering::Relaxed);
    (best, chosen)
}

/// The IP and UDP fields of a connected QP's packets (its address vector;
/// the source port from the flow label and both QP numbers, as rxe).
pub fn connected_out(attrs: &QpAttrs, qpn: u32) -> IpOut {
    IpOut {
        sgid: attrs.av.sgid,
        dgid: attrs.av.dgid,
        hop_limit: attrs.av.hop_limit,
        traffic_class: attrs.av.traffic_class,
        flow_label: attrs.av.flow_label,
        sport: pkt::udp_sport(attrs.av.flow_label, qpn, attrs.dest_qp_num),
    }
}

/// Where a QP's packets go and how they leave, as every send to the wire
/// (one packet, or a burst) takes it.
#[derive(Clone, Copy)]
pub struct Egress<'a> {
    /// The device that sends them.
    pub dev: &'a Device<Rrxe>,
    /// Their IP and UDP fields.
    pub out: &'a IpOut,
    /// A connected QP's route cache, kept between its packets.
    pub route: Option<&'a RouteCache>,
    /// The gate that counts the QP's packets the stack holds (RC).
    pub gate: Option<&'a TxGate<QpShared>>,
}

/// Sends one packet to `egress`: `hdrs` (the BTH and its extension
/// headers) and `payload_len` bytes that `fill` writes, padded to four
/// bytes, with the ICRC. The BTH's pad count is set here.
pub fn xmit(
    egress: &Egress<'_>,
    hdrs: &[u8],
    payload_len: usize,
    fill: impl FnOnce(&mut [u8]) -> Result,
) -> Result {
    let Egress {
        dev,
        out,
        route,
        gate,
    } = *egress;
    let ndev = dev.netdev(1).ok_or(ENODEV)?;
    let pad = (4 - payload_len % 4) % 4;
    let udp_payload = hdrs.len() + payload_len + pad + hdr::ICRC_SIZE;
    let h = out.hdr_len();
    let total = h + udp_payload;
    let (s, d) = if out.v4() {
        (&out.sgid[12..], &out.dgid[12..])
    } else {
        (&out.sgid[..], &out.dgid[..])
    };
    let mut tx = TxPacket::new(&ndev, route, s, d, out.traffic_class, total)
        .inspect_err(|e| route_failed(dev.data(), *e, out, 1))?;
    {
        let p = tx.data();
        out.write(p, udp_payload).ok_or(EINVAL)?;
        let (t, rest) = p[h..].split_at_mut(hdrs.len());
        t.copy_from_slice(hdrs);
        t[1] = (t[1] & !0x30) | ((pad as u8) << 4);
        let (body, tail) = rest.split_at_mut(payload_len);
        fill(body)?;
        tail[..pad].fill(0);
    }
    tx.ip4_ident(1);
    let p = tx.data();
    let sum = icrc(&p[..total - hdr::ICRC_SIZE]).map_err(|_| EINVAL)?;
    p[total - hdr::ICRC_SIZE..].copy_from_slice(&sum.to_le_bytes());
    match gate {
        Some(g) => tx.send_gated(g)?,
        None => tx.send()?,
    }
    let d = dev.data();
    d.count(Counter::SentPkts, 1);
    d.count(Counter::SentBytes, payload_len as u64);
    Ok(())
}

/// Counts `pkts` packets to `out` that [`TxPacket::new`] could not route
/// (`err`, an unreachable network or host), and prints the debug line.
pub fn route_failed(dev: &RrxeDev, err: Error, out: &IpOut, pkts: usize) {
    if err != EHOSTUNREACH && err != ENETUNREACH {
        return;
    }
    dev.count(Counter::SendNoRoute, pkts as u64);
    rrxe_dbg!(
        dev,
        Site::NoRoute,
        "{pkts} packets from {} to {}: {err:?}",
        Gid(&out.sgid),
        Gid(&out.dgid)
    );
}

/// A received packet, checked up to its transport headers.
pub struct RxPkt<'a> {
    /// The IP and UDP headers.
    pub ip: IpInfo,
    /// The BTH.
    pub bth: Bth,
    /// Where the extension headers are.
    pub layout: Layout,
    /// The UDP payload: BTH to ICRC.
    pub udp: &'a [u8],
    /// The packet's payload.
    pub payload: &'a [u8],
}

impl RxPkt<'_> {
    /// The immediate data, as stored (network order).
    pub fn imm(&self) -> Option<u32> {
        let o = self.layout.immdt?;
        let b = self.udp.get(o..o + hdr::IMMDT)?;
        Some(u32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
    }
}

/// Why [`checked`] refused a packet: its counter and debug site.
type Refusal = (Counter, Site);

const BAD_HDR: Refusal = (Counter::RcvdHdrErr, Site::DropHdr);

/// A received packet's headers, checked: IP and UDP, the BTH and the
/// destination GID. Anything malformed is refused, with the reason, and
/// then dropped, as the wire allows. The ICRC is [`icrc_ok`]'s.
fn checked<'a>(dev: &Device<Rrxe>, pkt: &'a [u8]) -> Result<RxPkt<'a>, Refusal> {
    let ip = pkt::parse(pkt).map_err(|_| BAD_HDR)?;
    let pkt = &pkt[..ip.total];
    let udp = &pkt[ip.ip_len + UDP_HDR..];
    if udp.len() < hdr::BTH + hdr::ICRC_SIZE {
        return Err(BAD_HDR);
    }
    let (bth, layout, range) = hdr::split(udp).ok_or(BAD_HDR)?;
    // TVer 0, QPN 0 unused.
    if bth.tver != 0 || bth.dqpn == 0 {
        return Err(BAD_HDR);
    }
    // The default P_Key (either membership).
    if bth.pkey & 0x7fff != 0x7fff {
        return Err((Counter::RcvdPkeyErr, Site::DropPkey));
    }
    if !mcast::is_mcast_gid(&ip.dgid) && !dev.has_gid(1, &ip.dgid) {
        return Err(BAD_HDR);
    }
    Ok(RxPkt {
        ip,
        bth,
        layout,
        udp,
        payload: &udp[range],
    })
}

/// Whether the ICRC of a packet [`checked`] took is right.
fn icrc_ok(pkt: &[u8], rx: &RxPkt<'_>) -> bool {
    let (body, trailer) = pkt[..rx.ip.total].split_at(rx.ip.total - hdr::ICRC_SIZE);
    matches!(icrc(body), Ok(c) if c.to_le_bytes() == trailer)
}

/// Counts a packet [`checked`] refused, and prints its debug line (the
/// source parsed again only then: a flood of bad packets pays the count
/// alone).
fn refused(dev: &Device<Rrxe>, pkt: &[u8], (counter, site): Refusal) {
    let d = dev.data();
    d.count(counter, 1);
    if site.on() {
        let src = pkt::parse(pkt).map(|ip| ip.sgid).unwrap_or([0; 16]);
        debug::print(
            d,
            site,
            format_args!("{} bytes from {}", pkt.len(), Gid(&src)),
        );
    }
}

/// The softirq's look at a packet before it is queued: IP/UDP checks, the
/// BTH, the destination GID, that a QP has the destination QP number (QP1
/// and multicast aside), and then the ICRC. Nothing here sleeps or takes a
/// lock, so a flood of packets that fail these checks, to no QP or with a
/// bad ICRC, is dropped where the network stack accounts for its receive
/// work, as rdma_rxe drops it. As in rdma_rxe, a packet to no QP is
/// dropped before its ICRC is computed: a flood to QP numbers nobody has
/// costs the headers' checks alone. Such a packet is counted as received
/// first, as the transports count every packet that passed the checks
/// before them; every drop is counted by its reason.
pub fn rx_accept(dev: &Device<Rrxe>, pkt: &[u8]) -> bool {
    let rx = match checked(dev, pkt) {
        Ok(rx) => rx,
        Err(r) => {
            refused(dev, pkt, r);
            return false;
        }
    };
    let qpn = rx.bth.dqpn;
    let d = dev.data();
    if qpn != crate::rrxe::qp::GSI_QPN && qpn != wqe::MCAST_QPN && !d.qp_live().contains(qpn) {
        count_received(dev, &rx);
        no_qp(d, &rx);
        return false;
    }
    if !icrc_ok(pkt, &rx) {
        refused(dev, pkt, (Counter::RcvdIcrcErr, Site::DropIcrc));
        return false;
    }
    true
}

/// Counts a packet for a QP number no QP has.
pub fn no_qp(dev: &RrxeDev, rx: &RxPkt<'_>) {
    debug::dropped(
        dev,
        Counter::RcvdUnknownQp,
        Site::DropQp,
        format_args!(
            "opcode {:#x} to qp {:#x} from {}",
            rx.bth.opcode,
            rx.bth.dqpn,
            Gid(&rx.ip.sgid)
        ),
    );
}

/// Counts a packet that passed the checks of [`checked`].
fn count_received(dev: &Device<Rrxe>, rx: &RxPkt<'_>) {
    dev.data().count(Counter::RcvdPkts, 1);
    dev.data()
        .count(Counter::RcvdBytes, rx.payload.len() as u64);
}

/// A GID for the log: an IPv4 address when it maps one.
pub struct Gid<'a>(pub &'a [u8; 16]);

impl core::fmt::Display for Gid<'_> {
    fn fmt(&self, out: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let g = self.0;
        if pkt::is_v4_mapped(g) {
            return write!(out, "{}.{}.{}.{}", g[12], g[13], g[14], g[15]);
        }
        for (i, c) in g.chunks(2).enumerate() {
            let sep = if i == 0 { "" } else { ":" };
            write!(out, "{sep}{:x}", u16::from_be_bytes([c[0], c[1]]))?;
        }
        Ok(())
    }
}

/// The receive path's entry, in process context, for a packet
/// [`rx_accept`] took (its ICRC is not checked again): the packet's
/// transport.
pub fn rx(dev: &Device<Rrxe>, pkt: &[u8]) {
    crate::rrxe::glue::test_hold(crate::rrxe::glue::Site::Rx);
    let rx = match checked(dev, pkt) {
        Ok(rx) => rx,
        Err(r) => {
            refused(dev, pkt, r);
            return;
        }
    };
    count_received(dev, &rx);
    match hdr::service(rx.bth.opcode) {
        Some(Service::Ud) => ud::rx(dev, &rx),
        Some(Service::Uc) => uc::rx(dev, &rx),
        // XRC requests go to RC's responder, for XRC target QPs.
        Some(Service::Rc | Service::Xrc) => rc::rx(dev, &rx),
        None => bad_hdr(dev.data(), &rx, "no transport"),
    }
}

/// Counts a packet whose headers do not fit its QP or transport (`why`).
pub fn bad_hdr(dev: &RrxeDev, rx: &RxPkt<'_>, why: &str) {
    debug::dropped(
        dev,
        Counter::RcvdHdrErr,
        Site::DropHdr,
        format_args!(
            "{why}: opcode {:#x} to qp {:#x} from {}",
            rx.bth.opcode,
            rx.bth.dqpn,
            Gid(&rx.ip.sgid)
        ),
    );
}
