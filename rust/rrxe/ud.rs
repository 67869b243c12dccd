// SPDX-License-Identifier: GPL-2.0

//! The unreliable datagram transport: sending, local delivery, receiving.
//!
//! The doorbell (`sq`) hands this file each UD WQE it took. A UD WQE's
//! address (its AH, checked against the QP's PD, or the address vector
//! embedded by older providers) and memory keys are checked, and its
//! payload is gathered. A datagram whose destination GID belongs to this
//! device is delivered to the destination QP directly; one to a multicast
//! group goes to the members here and on the wire; any other goes on the
//! wire as a RoCEv2 SEND_ONLY (`net`). Delivery: Q_Key check, a receive WQE
//! taken from the QP's ring or its SRQ, the 40-byte GRH and the payload
//! scattered into it, and a receive completion. Anything that cannot be
//! delivered is dropped, as UD allows.

use crate::ib::{attr::MGMT_MAD_SIZE, device::Device, qp::QpType, umem::Fault};
use crate::logic::{
    cqe::{flags, net_type, status, Wc},
    hdr::{self, Bth, Deth, Headers},
    mcast,
    mtu::mtu_bytes,
    pkt::{self, IpOut},
    qp::QpState,
    wqe::{self, LegacyAv, Opcode, Transport, WrDetail},
};
use crate::rrxe::stats::Counter;
use crate::rrxe::{
    debug::{self, Site},
    device::{Rrxe, RrxeDev},
    mcast::members,
    net::{self, Egress, Gid, RxPkt},
    qp::{overflow_to_err, QpShared},
    sge::{scatter_at, Gather},
    sq::take_send,
    tx,
};
use kernel::prelude::*;

/// Size of the GRH at the start of every UD receive buffer.
const GRH: usize = 40;

/// A datagram on its way to a QP of this device.
struct Datagram<'a> {
    dqpn: u32,
    sqpn: u32,
    qkey: u32,
    imm: Option<u32>,
    solicited: bool,
    sgid: [u8; 16],
    dgid: [u8; 16],
    hop_limit: u8,
    traffic_class: u8,
    flow_label: u32,
    sl: u8,
    payload: &'a [u8],
}

/// Sends one UD WQE, its payload gathered into `buf` (the doorbell's,
/// grown as needed and reused); returns its completion and whether it
/// asked for one.
pub(crate) fn send_one(
    dev: &Device<Rrxe>,
    qp: &QpShared,
    slot: &[u8],
    buf: &mut KVec<u8>,
    own_qkey: u32,
) -> (Wc, bool) {
    let d = dev.data();
    let (w, mut wc) = match take_send(qp, slot, Transport::Ud) {
        Ok(x) => x,
        Err(wc) => return (wc, true),
    };
    let signaled = w.send_flags & wqe::SEND_SIGNALED != 0;
    let WrDetail::Ud {
        remote_qpn,
        remote_qkey,
        ah_num,
        ..
    } = w.detail
    else {
        wc.status = status::LOC_QP_OP_ERR;
        return (wc, true);
    };
    let Some(av) = address(dev, qp, slot, ah_num) else {
        wc.status = status::LOC_QP_OP_ERR;
        return (wc, true);
    };
    let mtu = mtu_bytes(d.active_mtu()) as u64;
    let len = w.payload.bytes();
    if len > mtu {
        wc.status = status::LOC_LEN_ERR;
        return (wc, true);
    }
    if buf.len() < len as usize
        && qp
            .charge
            .run(len as usize, |gfp| {
                Ok(buf.resize(len as usize, 0u8, gfp)?)
            })
            .is_err()
    {
        wc.status = status::LOC_QP_OP_ERR;
        return (wc, true);
    }
    let buf = &mut buf[..len as usize];
    // Never waits for a page fault: the send queue saw the memory
    // resident (see `sq::resident`).
    if Gather::new(slot, w.payload)
        .read(d, qp.pd, buf, Fault::NoWait)
        .is_err()
    {
        wc.status = status::LOC_PROT_ERR;
        return (wc, true);
    }
    wc.byte_len = len as u32;
    let dg = Datagram {
        dqpn: remote_qpn,
        sqpn: qp.qpn,
        // The high bit asks for the QP's own Q_Key (IB spec 10.2.5).
        qkey: if remote_qkey & 0x8000_0000 != 0 {
            own_qkey
        } else {
            remote_qkey
        },
        imm: (w.opcode == Opcode::SendImm).then_some(w.ex),
        solicited: w.send_flags & wqe::SEND_SOLICITED != 0,
        sgid: av.sgid,
        dgid: av.dgid,
        hop_limit: av.hop_limit,
        traffic_class: av.traffic_class,
        flow_label: av.flow_label,
        sl: 0,
        payload: buf,
    };
    send_datagram(dev, &dg);
    (wc, signaled)
}

/// The address of a UD WQE: an AH of the QP's PD, or (`ah_num` 0, older
/// providers) the address vector embedded in the WQE, whose source must be
/// one of this device's GIDs.
fn address(dev: &Device<Rrxe>, qp: &QpShared, slot: &[u8], ah_num: u32) -> Option<LegacyAv> {
    if ah_num == 0 {
        return wqe::legacy_av(slot).filter(|l| dev.has_gid(1, &l.sgid));
    }
    let ah = dev.data().ah_pool().get(ah_num).filter(|a| a.pd == qp.pd)?;
    Some(LegacyAv {
        sgid: ah.sgid,
        dgid: ah.av.dgid,
        flow_label: ah.av.flow_label,
        hop_limit: ah.av.hop_limit,
        traffic_class: ah.av.traffic_class,
    })
}

/// Sends a datagram: to the members of its multicast group, here and on
/// the wire; to a QP of this device; or on the wire.
fn send_datagram(dev: &Device<Rrxe>, dg: &Datagram<'_>) {
    let d = dev.data();
    if mcast::is_mcast_gid(&dg.dgid) {
        for n in members(d, &dg.dgid).qpns() {
            deliver_local(d, &Datagram { dqpn: *n, ..*dg });
        }
        // Members on other hosts hear it on the wire; lost as a unicast
        // datagram may be.
        if send_wire(dev, dg, wqe::MCAST_QPN).is_err() {
            d.count(Counter::SendErr, 1);
        }
    } else if dev.has_gid(1, &dg.dgid) {
        d.count(Counter::SentPkts, 1);
        d.count(Counter::SentBytes, dg.payload.len() as u64);
        deliver_local(d, dg);
    } else if send_wire(dev, dg, dg.dqpn).is_err() {
        // Unroutable or no memory: lost, as a datagram may be.
        d.count(Counter::SendErr, 1);
    }
}

/// Local delivery counts as a packet sent and received.
fn deliver_local(dev: &RrxeDev, dg: &Datagram<'_>) {
    tx::received(dev, dg.payload.len());
    deliver(dev, dg);
}

/// Sends a datagram as a RoCEv2 UD packet (SEND_ONLY, with immediate if
/// it has one).
fn send_wire(dev: &Device<Rrxe>, dg: &Datagram<'_>, dqpn: u32) -> Result {
    let opcode = if dg.imm.is_some() {
        hdr::UD_SEND_ONLY_IMM
    } else {
        hdr::UD_SEND_ONLY
    };
    let h = Headers {
        deth: Some(Deth {
            qkey: dg.qkey,
            sqpn: dg.sqpn,
        }),
        imm: dg.imm,
        ..Headers::new(Bth {
            opcode,
            se: dg.solicited,
            pkey: 0xffff,
            dqpn,
            ..Default::default()
        })
    };
    let out = IpOut {
        sgid: dg.sgid,
        dgid: dg.dgid,
        hop_limit: dg.hop_limit,
        traffic_class: dg.traffic_class,
        flow_label: dg.flow_label,
        sport: pkt::udp_sport(dg.flow_label, dg.sqpn, dqpn),
    };
    let egress = Egress {
        dev,
        out: &out,
        route: None,
        gate: None,
    };
    tx::xmit(&egress, &h, dg.payload.len(), |b| {
        b.copy_from_slice(dg.payload);
        Ok(())
    })
}

/// A UD packet from the wire (checked by `net::rx`): to one QP, or to the
/// members of a multicast group. QP1 (GSI) has no receiver yet.
pub fn rx(dev: &Device<Rrxe>, rx: &RxPkt<'_>) {
    let d = dev.data();
    let Some(deth) = rx.layout.deth.and_then(|o| Deth::parse(&rx.udp[o..])) else {
        net::bad_hdr(d, rx, "no DETH");
        return;
    };
    let dg = Datagram {
        dqpn: rx.bth.dqpn,
        sqpn: deth.sqpn,
        qkey: deth.qkey,
        imm: rx.imm(),
        solicited: rx.bth.se,
        sgid: rx.ip.sgid,
        dgid: rx.ip.dgid,
        hop_limit: rx.ip.hop_limit,
        traffic_class: rx.ip.traffic_class,
        flow_label: rx.ip.flow_label,
        sl: 0,
        payload: rx.payload,
    };
    let mc = mcast::is_mcast_gid(&rx.ip.dgid);
    if rx.bth.dqpn == wqe::MCAST_QPN && mc {
        for n in members(d, &rx.ip.dgid).qpns() {
            deliver(d, &Datagram { dqpn: *n, ..dg });
        }
    } else if rx.bth.dqpn != wqe::MCAST_QPN && !mc {
        deliver(d, &dg);
    } else {
        net::bad_hdr(d, rx, "multicast QPN and GID disagree");
    }
}

/// The GRH a receiver finds: for IPv4 (IPv4-mapped GIDs) 20 zero bytes and
/// the IPv4 header, otherwise the IPv6 header.
fn grh(dg: &Datagram<'_>) -> [u8; GRH] {
    let mut h = [0u8; GRH];
    // UDP, BTH, DETH, immediate, payload and ICRC: what the wire carries.
    let udp_len = 8 + 12 + 8 + if dg.imm.is_some() { 4 } else { 0 } + dg.payload.len() + 4;
    let v4 = dg.sgid[..10] == [0; 10] && dg.sgid[10..12] == [0xff, 0xff];
    if v4 {
        let ip = &mut h[20..];
        ip[0] = 0x45;
        ip[1] = dg.traffic_class;
        ip[2..4].copy_from_slice(&((20 + udp_len) as u16).to_be_bytes());
        ip[6] = 0x40; // don't fragment
        ip[8] = dg.hop_limit;
        ip[9] = 17;
        ip[12..16].copy_from_slice(&dg.sgid[12..16]);
        ip[16..20].copy_from_slice(&dg.dgid[12..16]);
        let mut sum = 0u32;
        for c in ip.chunks(2) {
            sum += u32::from(u16::from_be_bytes([c[0], c[1]]));
        }
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        ip[10..12].copy_from_slice(&(!(sum as u16)).to_be_bytes());
    } else {
        let vtf = (6u32 << 28) | (u32::from(dg.traffic_class) << 20) | (dg.flow_label & 0xf_ffff);
        h[0..4].copy_from_slice(&vtf.to_be_bytes());
        h[4..6].copy_from_slice(&(udp_len as u16).to_be_bytes());
        h[6] = 17;
        h[7] = dg.hop_limit;
        h[8..24].copy_from_slice(&dg.sgid);
        h[24..40].copy_from_slice(&dg.dgid);
    }
    h
}

/// Delivers a datagram to a UD QP of this device: dropped (as UD allows)
/// when the QP does not exist, is not UD, cannot receive, has another
/// Q_Key, or has no receive WQE posted, and for QP1 when it is longer
/// than a MAD.
fn deliver(dev: &RrxeDev, dg: &Datagram<'_>) {
    let refuse = |c, site, why: &str| {
        debug::dropped(
            dev,
            c,
            site,
            format_args!(
                "{why}: qp {:#x} from {} qp {:#x}",
                dg.dqpn,
                Gid(&dg.sgid),
                dg.sqpn
            ),
        )
    };
    let Some(qp) = dev.qp(dg.dqpn) else {
        refuse(Counter::RcvdUnknownQp, Site::DropQp, "no such QP");
        return;
    };
    if !matches!(qp.ty, QpType::Ud | QpType::Gsi) {
        refuse(Counter::RcvdUnknownQp, Site::DropQp, "not a UD QP");
        return;
    }
    // The MAD layer gives QP1 receive buffers of one MAD and never reposts
    // one that completes in error (it takes that for a QP in ERR): a
    // datagram longer than a MAD would cost QP1 a buffer for good, and a
    // few hundred of them, from anyone, all MAD traffic (rdma_cm).
    if qp.ty == QpType::Gsi && dg.payload.len() > MGMT_MAD_SIZE as usize {
        refuse(Counter::RcvdHdrErr, Site::DropHdr, "longer than a MAD");
        return;
    }
    // One delivery at a time: a receive WQE kept from a datagram that its
    // memory could not take at once is the next datagram's.
    let mut rx = qp.uc_rx.lock();
    if qp.is_dead() {
        refuse(Counter::RcvdUnknownQp, Site::DropQp, "QP destroyed");
        return;
    }
    let slot = {
        let mut g = qp.inner.lock();
        if !matches!(
            g.attrs.state,
            QpState::Rtr | QpState::Rts | QpState::Sqd | QpState::Sqe
        ) {
            refuse(Counter::RcvdUnknownQp, Site::DropQp, "QP not receiving");
            return;
        }
        if g.attrs.qkey != dg.qkey {
            debug::dropped(
                dev,
                Counter::RcvdQkeyErr,
                Site::DropQkey,
                format_args!(
                    "Q_Key {:#x}, not {:#x}: qp {:#x} from {} qp {:#x}",
                    dg.qkey,
                    g.attrs.qkey,
                    dg.dqpn,
                    Gid(&dg.sgid),
                    dg.sqpn
                ),
            );
            return;
        }
        // The QP's buffer, unless a receive WQE is kept.
        if rx.held.is_some() {
            KVec::new()
        } else {
            core::mem::take(&mut g.ud_spare)
        }
    };
    let (slot, max_sge) = match rx.held.take() {
        Some(held) => held,
        None => {
            let mut slot = slot;
            let Some(max_sge) = qp.pop_recv(&mut slot) else {
                give_back(&qp, slot);
                refuse(Counter::OutOfBuffer, Site::DropNoBuffer, "no receive WQE");
                return;
            };
            (slot, max_sge)
        }
    };
    let mut wc = Wc {
        wr_id: wqe::wr_id(&slot).unwrap_or(0),
        qp_num: qp.qpn,
        qp_cookie: qp.handle,
        opcode: wqe::WC_RECV,
        src_qp: dg.sqpn,
        port_num: 1,
        sl: dg.sl,
        ..Default::default()
    };
    let total = GRH + dg.payload.len();
    wc.status = match wqe::parse_recv(&slot, max_sge) {
        Err(_) => status::LOC_QP_OP_ERR,
        Ok(r) if r.length < total as u64 => status::LOC_LEN_ERR,
        Ok(r) => {
            // Never waits for an on-demand page: the datagram is dropped
            // (as UD allows, and as mlx5 does while it resolves the fault),
            // and the WQE is kept for the next one.
            match scatter_at(dev, qp.pd, &slot, r.num_sge, 0, &grh(dg), Fault::NoWait).and_then(
                |()| {
                    scatter_at(
                        dev,
                        qp.pd,
                        &slot,
                        r.num_sge,
                        GRH as u64,
                        dg.payload,
                        Fault::NoWait,
                    )
                },
            ) {
                Ok(()) => status::SUCCESS,
                Err(e) if e == EAGAIN => {
                    rx.held = Some((slot, max_sge));
                    debug::dropped(
                        dev,
                        Counter::OdpFaultDeferred,
                        Site::OdpFault,
                        format_args!(
                            "receive memory not resident: qp {:#x} from {} qp {:#x} dropped",
                            dg.dqpn,
                            Gid(&dg.sgid),
                            dg.sqpn
                        ),
                    );
                    return;
                }
                Err(_) => status::LOC_PROT_ERR,
            }
        }
    };
    if wc.status == status::SUCCESS {
        wc.byte_len = total as u32;
        // Kernel consumers (the MAD layer) learn the header type too.
        wc.wc_flags = flags::GRH | flags::WITH_NETWORK_HDR_TYPE;
        wc.network_hdr_type = if pkt::is_v4_mapped(&dg.sgid) {
            net_type::IPV4
        } else {
            net_type::IPV6
        };
        if let Some(imm) = dg.imm {
            wc.wc_flags |= flags::WITH_IMM;
            wc.ex = imm;
        }
    }
    dev.count_recv_done(&wc);
    let full = qp.recv_msg_wc(&wc, dg.solicited);
    give_back(&qp, slot);
    if full {
        overflow_to_err(dev, &qp, &mut rx);
    }
}

/// Gives `slot` back to `qp` as its receive WQE buffer; of two deliveries
/// that ran at once, the later one's is kept (the other is freed outside
/// the lock).
fn give_back(qp: &QpShared, slot: KVec<u8>) {
    let other = core::mem::replace(&mut qp.inner.lock().ud_spare, slot);
    drop(other);
}
