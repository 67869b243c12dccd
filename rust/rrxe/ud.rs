// SPDX-License-Identifier: GPL-2.0

//! The user doorbell, and UD: sending, local delivery, receiving.
//!
//! The user doorbell (`post_send` without work requests) takes the send
//! queue's WQEs one by one, under the QP's send lock: each is copied out of
//! the ring and validated (`logic::wqe`); UC WQEs go to `uc`. A UD WQE's
//! address (its AH, checked against the QP's PD, or the address vector
//! embedded by older providers) and memory keys are checked, and its
//! payload is gathered. A datagram whose destination GID belongs to this
//! device is delivered to the destination QP directly; one to a multicast
//! group goes to the members here and on the wire; any other goes on the
//! wire as a RoCEv2 SEND_ONLY (`net`). Delivery: Q_Key check, a receive WQE
//! taken from the QP's ring or its SRQ, the 40-byte GRH and the payload
//! scattered into it, and a receive completion. Anything that cannot be
//! delivered is dropped, as UD allows.

use crate::ib::{device::Device, object::Qp, qp::QpType, stats::Counter};
use crate::logic::{
    access,
    cqe::{flags, net_type, status, Wc},
    hdr::{self, Bth, Deth},
    mcast,
    mtu::IbMtu,
    pkt::{self, IpOut},
    qp::QpState,
    wqe::{self, LegacyAv, Opcode, Payload, Transport, WrDetail},
};
use crate::rrxe::{
    device::{Rrxe, RrxeDev},
    mr,
    net::{self, RxPkt},
    qp::QpShared,
    uc,
};
use core::sync::atomic::Ordering;
use kernel::{prelude::*, sync::Arc};

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

/// The user doorbell: processes the send queue up to the producer index.
/// `EINVAL` below RTS (as rxe); in ERR, posted WQEs are flushed.
pub fn post_send_user(q: &Qp<Rrxe>) -> Result {
    process_sq(q.device(), &q.data().shared)
}

/// Works through a QP's send queue (the user doorbell, and the QP's send
/// task). RC QPs have their own engine (`rc`).
pub fn process_sq(dev: &Device<Rrxe>, s: &Arc<QpShared>) -> Result {
    {
        let mut g = s.inner.lock();
        match g.attrs.state {
            QpState::Rts => {}
            QpState::Err => {
                crate::rrxe::qp::flush(s, &mut g);
                return Ok(());
            }
            _ => return Err(EINVAL),
        }
    }
    let ty = s.ty;
    if ty == QpType::Rc {
        return crate::rrxe::rc::run(dev, s);
    }
    // One doorbell at a time works through a QP's send queue.
    let _serial = s.send_lock.lock();
    if s.is_dead() {
        return Ok(());
    }
    let size = s.inner.lock().sq.geometry().elem_size();
    let mut slot = KVec::new();
    slot.resize(size, 0u8, GFP_KERNEL)?;
    loop {
        let (attrs, signaled) = {
            let mut g = s.inner.lock();
            if g.attrs.state != QpState::Rts || !g.sq.pop(&mut slot) {
                break;
            }
            (g.attrs, s.sig_all)
        };
        let (wc, sig) = if ty != QpType::Uc {
            send_one(dev, s, &slot, attrs.qkey)
        } else {
            uc::send_one(dev, s, &slot, &attrs)
        };
        if sig || signaled || wc.status != status::SUCCESS {
            let _ = s.send_wc(&wc);
        }
        if wc.status != status::SUCCESS {
            // A failed WQE puts the QP in the error state and flushes the
            // rest, as rxe does.
            let mut g = s.inner.lock();
            g.attrs.state = QpState::Err;
            crate::rrxe::qp::flush(s, &mut g);
            break;
        }
    }
    Ok(())
}

/// Validates a send WQE copied out of `s`'s send queue: the WQE with its
/// completion so far (id, QP, opcode), or the error completion to post.
pub(crate) fn take_send(s: &QpShared, slot: &[u8], t: Transport) -> Result<(wqe::SendWqe, Wc), Wc> {
    let mut wc = Wc {
        wr_id: wqe::wr_id(slot).unwrap_or(0),
        qp_num: s.qpn,
        qp_cookie: s.handle,
        ..Default::default()
    };
    match wqe::parse_send(slot, t, s.cap.max_send_sge, s.cap.max_inline_data) {
        // Fast registration is for kernel consumers only.
        Ok(w) if w.opcode == wqe::Opcode::RegMr && !s.kernel => Err(Wc {
            status: status::LOC_QP_OP_ERR,
            ..wc
        }),
        Ok(w) => {
            wc.opcode = w.opcode.wc_opcode();
            Ok((w, wc))
        }
        Err(wqe::WqeError::TooLong | wqe::WqeError::InlineTooLong) => Err(Wc {
            status: status::LOC_LEN_ERR,
            ..wc
        }),
        Err(_) => Err(Wc {
            status: status::LOC_QP_OP_ERR,
            ..wc
        }),
    }
}

/// Sends one WQE; returns its completion and whether it asked for one.
fn send_one(dev: &Device<Rrxe>, s: &QpShared, slot: &[u8], own_qkey: u32) -> (Wc, bool) {
    let d = dev.data();
    let (w, mut wc) = match take_send(s, slot, Transport::Ud) {
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
    // The address: an AH of the QP's PD, or (ah_num 0, older providers)
    // the address vector embedded in the WQE, whose source must be one of
    // this device's GIDs.
    let av = if ah_num == 0 {
        match wqe::legacy_av(slot) {
            Some(l) if dev.has_gid(1, &l.sgid) => LegacyAv { ..l },
            _ => {
                wc.status = status::LOC_QP_OP_ERR;
                return (wc, true);
            }
        }
    } else {
        match d.ah_pool().get(ah_num).filter(|a| a.pd == s.pd) {
            Some(ah) => LegacyAv {
                sgid: ah.sgid,
                dgid: ah.av.dgid,
                flow_label: ah.av.flow_label,
                hop_limit: ah.av.hop_limit,
                traffic_class: ah.av.traffic_class,
            },
            None => {
                wc.status = status::LOC_QP_OP_ERR;
                return (wc, true);
            }
        }
    };
    let mtu = IbMtu::from_raw(d.active_mtu()).map_or(256, |m| m.bytes()) as u64;
    let len = match w.payload {
        Payload::Inline { len } => u64::from(len),
        Payload::Sges { length, .. } => length,
    };
    if len > mtu {
        wc.status = status::LOC_LEN_ERR;
        return (wc, true);
    }
    let mut buf = KVec::new();
    if buf.resize(len as usize, 0u8, GFP_KERNEL).is_err() {
        wc.status = status::LOC_QP_OP_ERR;
        return (wc, true);
    }
    if gather(d, s, slot, w.payload, &mut buf).is_err() {
        wc.status = status::LOC_PROT_ERR;
        return (wc, true);
    }
    wc.byte_len = len as u32;
    let dg = Datagram {
        dqpn: remote_qpn,
        sqpn: s.qpn,
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
        payload: &buf,
    };
    if mcast::is_mcast_gid(&dg.dgid) {
        for n in mcast_members(d, &dg.dgid).iter() {
            deliver_local(d, &Datagram { dqpn: *n, ..dg });
        }
        // Members on other hosts hear it on the wire.
        let _ = send_wire(dev, &dg, wqe::MCAST_QPN);
    } else if dev.has_gid(1, &dg.dgid) {
        d.count(Counter::SentPkts, 1);
        d.count(Counter::SentBytes, len);
        deliver_local(d, &dg);
    } else if send_wire(dev, &dg, dg.dqpn).is_err() {
        // Unroutable or no memory: lost, as a datagram may be.
        d.count(Counter::SendErr, 1);
    }
    (wc, signaled)
}

/// The QPs of this device attached to a multicast group.
fn mcast_members(d: &RrxeDev, gid: &[u8; 16]) -> KVec<u32> {
    let t = d.mcast().lock();
    let mut v = KVec::new();
    if let Some(g) = t.groups.iter().find(|g| &g.gid == gid) {
        for &n in g.qpns.iter() {
            let _ = v.push(n, GFP_KERNEL);
        }
    }
    v
}

/// Local delivery counts as a packet sent and received.
fn deliver_local(d: &RrxeDev, dg: &Datagram<'_>) {
    d.count(Counter::RcvdPkts, 1);
    d.count(Counter::RcvdBytes, dg.payload.len() as u64);
    deliver(d, dg);
}

/// Sends a datagram as a RoCEv2 UD packet (SEND_ONLY, with immediate if
/// it has one).
fn send_wire(dev: &Device<Rrxe>, dg: &Datagram<'_>, dqpn: u32) -> Result {
    let opcode = if dg.imm.is_some() {
        hdr::UD_SEND_ONLY_IMM
    } else {
        hdr::UD_SEND_ONLY
    };
    let mut h = [0u8; hdr::BTH + hdr::DETH + hdr::IMMDT];
    let bth = Bth {
        opcode,
        se: dg.solicited,
        pkey: 0xffff,
        dqpn,
        ..Default::default()
    };
    bth.write(&mut h).ok_or(EINVAL)?;
    Deth {
        qkey: dg.qkey,
        sqpn: dg.sqpn,
    }
    .write(&mut h[hdr::BTH..])
    .ok_or(EINVAL)?;
    let n = if let Some(imm) = dg.imm {
        h[hdr::BTH + hdr::DETH..].copy_from_slice(&imm.to_ne_bytes());
        h.len()
    } else {
        hdr::BTH + hdr::DETH
    };
    let out = IpOut {
        sgid: dg.sgid,
        dgid: dg.dgid,
        hop_limit: dg.hop_limit,
        traffic_class: dg.traffic_class,
        flow_label: dg.flow_label,
        sport: pkt::udp_sport(dg.flow_label, dg.sqpn, dqpn),
    };
    net::xmit(dev, &out, &h[..n], dg.payload.len(), |b| {
        b.copy_from_slice(dg.payload);
        Ok(())
    })
}

/// A UD packet from the wire (checked by `net::rx`): to one QP, or to the
/// members of a multicast group. QP1 (GSI) has no receiver yet.
pub fn rx(dev: &Device<Rrxe>, p: &RxPkt<'_>) {
    let Some(deth) = p.layout.deth.and_then(|o| Deth::parse(&p.udp[o..])) else {
        return;
    };
    let dg = Datagram {
        dqpn: p.bth.dqpn,
        sqpn: deth.sqpn,
        qkey: deth.qkey,
        imm: p.imm(),
        solicited: p.bth.se,
        sgid: p.ip.sgid,
        dgid: p.ip.dgid,
        hop_limit: p.ip.hop_limit,
        traffic_class: p.ip.traffic_class,
        flow_label: p.ip.flow_label,
        sl: 0,
        payload: p.payload,
    };
    let d = dev.data();
    if p.bth.dqpn == wqe::MCAST_QPN {
        if mcast::is_mcast_gid(&p.ip.dgid) {
            for n in mcast_members(d, &p.ip.dgid).iter() {
                deliver(d, &Datagram { dqpn: *n, ..dg });
            }
        }
    } else if !mcast::is_mcast_gid(&p.ip.dgid) {
        deliver(d, &dg);
    }
}

/// Copies a send WQE's payload into `buf` (its exact length).
fn gather(d: &RrxeDev, s: &QpShared, slot: &[u8], p: Payload, buf: &mut [u8]) -> Result {
    match p {
        Payload::Inline { len } => {
            let src = slot
                .get(wqe::SEND_HDR..wqe::SEND_HDR + len as usize)
                .ok_or(EINVAL)?;
            if src.len() != buf.len() {
                return Err(EINVAL);
            }
            buf.copy_from_slice(src);
        }
        Payload::Sges { n, .. } => {
            let mut pos = 0usize;
            for i in 0..n {
                let sge = wqe::sge_at(slot, wqe::SEND_HDR, i).ok_or(EINVAL)?;
                let l = sge.length as usize;
                if l == 0 {
                    continue;
                }
                let m = mr::lookup_mr(d, sge.lkey, s.pd, 0, sge.addr, l as u64)?;
                m.read(sge.addr, buf.get_mut(pos..pos + l).ok_or(EINVAL)?)?;
                pos += l;
            }
        }
    }
    Ok(())
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
/// Q_Key, or has no receive WQE posted.
fn deliver(d: &RrxeDev, dg: &Datagram<'_>) {
    let Some(qp) = d.qp(dg.dqpn) else { return };
    if !matches!(qp.ty, QpType::Ud | QpType::Gsi) {
        return;
    }
    {
        let g = qp.inner.lock();
        if !matches!(
            g.attrs.state,
            QpState::Rtr | QpState::Rts | QpState::Sqd | QpState::Sqe
        ) || g.attrs.qkey != dg.qkey
        {
            return;
        }
    }
    let mut slot = KVec::new();
    let Some(max_sge) = qp.pop_recv(&mut slot) else {
        return;
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
        Ok(r) => match scatter(d, &qp, &slot, r.num_sge, &grh(dg), dg.payload) {
            Ok(()) => status::SUCCESS,
            Err(_) => status::LOC_PROT_ERR,
        },
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
    let _ = qp.recv_wc(&wc, dg.solicited);
}

/// Writes `a` then `b` across a receive WQE's SGEs.
fn scatter(d: &RrxeDev, qp: &QpShared, slot: &[u8], n: u32, a: &[u8], b: &[u8]) -> Result {
    let mut src = Iterator::chain(a.iter(), b.iter()).copied();
    let mut left = a.len() + b.len();
    let mut chunk = [0u8; 256];
    for i in 0..n {
        if left == 0 {
            break;
        }
        let sge = wqe::sge_at(slot, wqe::RECV_HDR, i).ok_or(EINVAL)?;
        let take = left.min(sge.length as usize);
        if take == 0 {
            continue;
        }
        let m = mr::lookup_mr(
            d,
            sge.lkey,
            qp.pd,
            access::LOCAL_WRITE,
            sge.addr,
            take as u64,
        )?;
        let mut done = 0usize;
        while done < take {
            let k = (take - done).min(chunk.len());
            for c in chunk.iter_mut().take(k) {
                *c = src.next().ok_or(EINVAL)?;
            }
            m.write(sge.addr + done as u64, &chunk[..k])?;
            done += k;
        }
        left -= take;
    }
    if left != 0 {
        return Err(EINVAL);
    }
    Ok(())
}

impl RrxeDev {
    /// The active MTU as `enum ib_mtu`.
    pub fn active_mtu(&self) -> u32 {
        self.active_mtu_raw().load(Ordering::Relaxed)
    }
}
