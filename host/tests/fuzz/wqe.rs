// SPDX-License-Identifier: GPL-2.0

//! Work queue entries: a hostile slot is refused for exactly the reason the
//! rules give, and one accepted stays within its slot and the QP's
//! capacities (SGE count, recomputed total, inline size); the kernel's
//! own encodings parse back to what was encoded.

use crate::rng::Rng;
use rrxe_logic::wqe::*;
use rrxe_logic::wqe_layout::*;

/// One case: a hostile send or receive slot, or an encoding's round trip.
pub fn case(r: &mut Rng) {
    match r.below(6) {
        0..=2 => hostile_send(r),
        3 => hostile_recv(r),
        4 => encoded_send(r),
        _ => encoded_recv_and_av(r),
    }
    r.count();
}

fn u32_at(b: &[u8], o: usize) -> u32 {
    u32::from_ne_bytes(b[o..o + 4].try_into().unwrap())
}

fn u64_at(b: &[u8], o: usize) -> u64 {
    u64::from_ne_bytes(b[o..o + 8].try_into().unwrap())
}

fn put32(b: &mut [u8], o: usize, v: u32) {
    if let Some(d) = b.get_mut(o..o + 4) {
        d.copy_from_slice(&v.to_ne_bytes());
    }
}

const RAW_OPCODES: &[u32] = &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 14, 15, 0x20];

fn transport(r: &mut Rng) -> Transport {
    r.pick(&[Transport::Rc, Transport::Uc, Transport::Ud])
}

fn slot_len(r: &mut Rng, hdr: usize) -> usize {
    match r.below(4) {
        0 => r.below(hdr as u64 + 40) as usize,
        1 => r.pick(&[128, 256, 512, 1024]),
        _ => hdr + r.below(900) as usize,
    }
}

/// A count of SGEs: small, near a capacity, or anything.
fn sge_count(r: &mut Rng) -> u32 {
    match r.below(4) {
        0 => r.edgy32(),
        _ => r.below(70) as u32,
    }
}

fn capacity(r: &mut Rng) -> u32 {
    match r.below(3) {
        0 => r.pick(&[0, 1, 4, 32, 64, 256, 400, u32::MAX]),
        _ => r.below(80) as u32,
    }
}

/// SGE lengths: mostly small, now and then near 2^31 and 2^32.
fn fill_sges(r: &mut Rng, b: &mut [u8], base: usize) {
    let mut o = base;
    let big = r.chance(1, 4);
    while o + SGE <= b.len() {
        let len = if big {
            r.edgy32()
        } else {
            r.below(5000) as u32
        };
        put32(b, o + SGE_LENGTH, len);
        o += SGE;
    }
}

/// The total of SGEs `0..n` from `base`, if they lie in the slot.
fn sge_total(b: &[u8], base: usize, n: u32) -> Option<u64> {
    let end = base.checked_add((n as usize).checked_mul(SGE)?)?;
    if end > b.len() {
        return None;
    }
    Some(
        (0..n as usize)
            .map(|i| u64::from(u32_at(b, base + i * SGE + SGE_LENGTH)))
            .sum(),
    )
}

/// What the rules say of a send slot: its opcode and payload, or why it
/// is refused.
fn send_verdict(
    b: &[u8],
    t: Transport,
    max_sge: u32,
    max_inline: u32,
) -> Result<(Opcode, Payload), WqeError> {
    if b.len() < SEND_HDR {
        return Err(WqeError::Short);
    }
    let op = Opcode::from_raw(u32_at(b, OPCODE)).ok_or(WqeError::Opcode)?;
    if !op.allowed_on(t) {
        return Err(WqeError::Opcode);
    }
    if !matches!(
        op,
        Opcode::Send
            | Opcode::SendImm
            | Opcode::SendInv
            | Opcode::RdmaWrite
            | Opcode::RdmaWriteImm
            | Opcode::RdmaRead
    ) {
        return Ok((op, Payload::Sges { n: 0, length: 0 }));
    }
    if u32_at(b, SEND_FLAGS) & SEND_INLINE != 0 && op != Opcode::RdmaRead {
        let len = u32_at(b, SEND_DMA + DMA_LENGTH);
        if len > max_inline || SEND_HDR as u64 + u64::from(len) > b.len() as u64 {
            return Err(WqeError::InlineTooLong);
        }
        return Ok((op, Payload::Inline { len }));
    }
    let n = u32_at(b, SEND_DMA + DMA_NUM_SGE);
    if n > max_sge {
        return Err(WqeError::TooManySge);
    }
    let length = sge_total(b, SEND_HDR, n).ok_or(WqeError::TooManySge)?;
    if length > MAX_MSG {
        return Err(WqeError::TooLong);
    }
    Ok((op, Payload::Sges { n, length }))
}

/// A hostile send slot: `parse_send` gives the rules' verdict, and what it
/// accepts lies in the slot.
fn hostile_send(r: &mut Rng) {
    let mut b = vec![0u8; slot_len(r, SEND_HDR)];
    r.fill(&mut b);
    if r.chance(7, 8) {
        put32(&mut b, OPCODE, r.pick(RAW_OPCODES));
    }
    let inline = r.chance(1, 4);
    let flags = (r.u32() & !SEND_INLINE) | if inline { SEND_INLINE } else { 0 };
    if r.chance(7, 8) {
        put32(&mut b, SEND_FLAGS, flags);
    }
    let inline_len = if r.bool() {
        r.below(1024) as u32
    } else {
        r.edgy32()
    };
    put32(&mut b, SEND_DMA + DMA_LENGTH, inline_len);
    put32(&mut b, SEND_DMA + DMA_NUM_SGE, sge_count(r));
    fill_sges(r, &mut b, SEND_HDR);
    let (t, max_sge, max_inline) = (transport(r), capacity(r), capacity(r));
    let got = parse_send(&b, t, max_sge, max_inline);
    let want = send_verdict(&b, t, max_sge, max_inline);
    assert_eq!(got.map(|w| (w.opcode, w.payload)), want);
    let Ok(w) = got else {
        return;
    };
    assert_eq!(w.wr_id, u64_at(&b, WR_ID));
    assert_eq!(
        (w.send_flags, w.ex),
        (u32_at(&b, SEND_FLAGS), u32_at(&b, EX))
    );
    assert!(w.opcode.allowed_on(t));
    match w.payload {
        Payload::Inline { len } => {
            assert!(len <= max_inline && SEND_HDR + len as usize <= b.len());
            assert!(w.opcode.has_payload() && w.opcode != Opcode::RdmaRead);
        }
        Payload::Sges { n, length } => {
            assert!(n <= max_sge && length <= MAX_MSG);
            let mut sum = 0u64;
            for i in 0..n {
                sum += u64::from(sge_at(&b, SEND_HDR, i).unwrap().length);
            }
            assert_eq!(sum, length);
            assert!(w.payload.bytes() <= MAX_MSG);
        }
    }
    if let WrDetail::Ud { remote_qpn, .. } = w.detail {
        assert!(t == Transport::Ud && remote_qpn <= 0x00ff_ffff);
    }
    if matches!(w.opcode, Opcode::SendInv | Opcode::LocalInv) && t != Transport::Ud {
        assert_eq!(w.detail, WrDetail::Inv { rkey: w.ex });
    }
    // Past the SGEs in the slot, nothing is readable as an SGE.
    let past = ((b.len() - SEND_HDR) / SGE) as u32;
    assert_eq!(sge_at(&b, SEND_HDR, past), None);
    assert_eq!(sge_at(&b, usize::MAX, r.u32()), None);
}

/// A hostile receive slot: `parse_recv` gives the rules' verdict.
fn hostile_recv(r: &mut Rng) {
    let mut b = vec![0u8; slot_len(r, RECV_HDR)];
    r.fill(&mut b);
    put32(&mut b, RECV_DMA + DMA_NUM_SGE, sge_count(r));
    fill_sges(r, &mut b, RECV_HDR);
    let max_sge = capacity(r);
    let want = if b.len() < RECV_DMA + DMA_NUM_SGE + 4 {
        Err(WqeError::Short)
    } else {
        let n = u32_at(&b, RECV_DMA + DMA_NUM_SGE);
        match sge_total(&b, RECV_HDR, n) {
            _ if n > max_sge => Err(WqeError::TooManySge),
            None => Err(WqeError::TooManySge),
            Some(l) if l > MAX_MSG => Err(WqeError::TooLong),
            Some(length) => Ok(RecvWqe {
                wr_id: u64_at(&b, WR_ID),
                num_sge: n,
                length,
            }),
        }
    };
    assert_eq!(parse_recv(&b, max_sge), want);
}

fn sges(r: &mut Rng, n: usize) -> Vec<Sge> {
    (0..n)
        .map(|_| Sge {
            addr: r.next(),
            length: if r.chance(1, 8) {
                r.edgy32()
            } else {
                r.below(70_000) as u32
            },
            lkey: r.u32(),
        })
        .collect()
}

/// A kernel send WQE, encoded and parsed back.
fn encoded_send(r: &mut Rng) {
    let (raw, t, detail) = match r.below(8) {
        0 => (r.pick(&[2, 3]), Transport::Rc, WrDetail::None),
        1 => (
            r.pick(&[2, 3]),
            Transport::Ud,
            WrDetail::Ud {
                remote_qpn: r.u32() & 0x00ff_ffff,
                remote_qkey: r.u32(),
                pkey_index: r.u16(),
                ah_num: r.u32(),
            },
        ),
        2 | 3 => (
            r.pick(&[0, 1, 4]),
            Transport::Rc,
            WrDetail::Rdma {
                remote_addr: r.next(),
                rkey: r.u32(),
            },
        ),
        4 => (
            r.pick(&[5, 6]),
            Transport::Rc,
            WrDetail::Atomic {
                remote_addr: r.next(),
                compare_add: r.next(),
                swap: r.next(),
                rkey: r.u32(),
            },
        ),
        5 => (
            0x20,
            Transport::Rc,
            WrDetail::Reg {
                mr_key: r.u32(),
                key: r.u32(),
                access: r.u32(),
                iova: r.next(),
            },
        ),
        _ => (r.pick(&[7, 9]), Transport::Rc, WrDetail::None),
    };
    let ex = r.u32();
    let f = SendFields {
        wr_id: r.next(),
        opcode: raw,
        send_flags: r.u32() & !SEND_INLINE,
        ex,
        detail,
    };
    let n = r.below(24) as usize;
    let s = sges(r, n);
    let mut slot = vec![0xa5u8; slot_len(r, SEND_HDR)];
    let fits = slot.len() >= SEND_HDR + n * SGE;
    let enc = encode_send(&mut slot, &f, s.iter().copied());
    assert_eq!(enc.is_some(), fits, "{n} SGEs in {} bytes", slot.len());
    if !fits {
        return;
    }
    let op = Opcode::from_raw(raw).unwrap();
    let want_detail = match op {
        Opcode::SendInv | Opcode::LocalInv => WrDetail::Inv { rkey: ex },
        _ => detail,
    };
    let total: u64 = s.iter().map(|x| u64::from(x.length)).sum();
    let want = if !op.has_payload() {
        Ok(Payload::Sges { n: 0, length: 0 })
    } else if total > MAX_MSG {
        Err(WqeError::TooLong)
    } else {
        Ok(Payload::Sges {
            n: n as u32,
            length: total,
        })
    };
    let got = parse_send(&slot, t, n as u32, 0);
    assert_eq!(got.map(|w| w.payload), want);
    if let Ok(w) = got {
        assert_eq!(
            (w.wr_id, w.opcode, w.send_flags, w.ex, w.detail),
            (f.wr_id, op, f.send_flags, ex, want_detail)
        );
        if op.has_payload() {
            for (i, x) in s.iter().enumerate() {
                assert_eq!(sge_at(&slot, SEND_HDR, i as u32), Some(*x));
            }
        }
    }
    // One SGE more than the QP allows is refused.
    if n > 0 && op.has_payload() {
        assert_eq!(
            parse_send(&slot, t, n as u32 - 1, 0).err(),
            Some(WqeError::TooManySge)
        );
    }
}

/// A random GID, IPv4-mapped if `v4`.
fn gid(r: &mut Rng, v4: bool) -> [u8; 16] {
    let mut g = [0u8; 16];
    r.fill(&mut g);
    if v4 {
        g[..10].fill(0);
        g[10] = 0xff;
        g[11] = 0xff;
    }
    g
}

/// A kernel receive WQE and a UD address vector, encoded and parsed back.
fn encoded_recv_and_av(r: &mut Rng) {
    let n = r.below(12) as usize;
    let s = sges(r, n);
    let mut slot = vec![0x5au8; slot_len(r, RECV_HDR)];
    let fits = slot.len() >= RECV_HDR + n * SGE;
    let wr_id = r.next();
    assert_eq!(
        encode_recv(&mut slot, wr_id, s.iter().copied()).is_some(),
        fits
    );
    if fits {
        let total: u64 = s.iter().map(|x| u64::from(x.length)).sum();
        let want = if total > MAX_MSG {
            Err(WqeError::TooLong)
        } else {
            Ok(RecvWqe {
                wr_id,
                num_sge: n as u32,
                length: total,
            })
        };
        assert_eq!(parse_recv(&slot, n as u32), want);
    }
    // The address vector: IPv4 when both GIDs are IPv4-mapped.
    let v4 = r.bool();
    let sv4 = v4 || r.chance(1, 4);
    let av = LegacyAv {
        sgid: gid(r, sv4),
        dgid: gid(r, v4),
        flow_label: r.u32() & 0xf_ffff,
        hop_limit: r.u8(),
        traffic_class: r.u8(),
    };
    let mut w = vec![0u8; slot_len(r, SEND_HDR)];
    r.fill(&mut w);
    let end = WR + WR_UD_AV + AV_SIZE;
    assert_eq!(encode_legacy_av(&mut w, &av).is_some(), w.len() >= end);
    if w.len() >= end {
        assert_eq!(legacy_av(&w), Some(av));
        // Hostile: any bytes parse or not, without panicking, and a parsed
        // vector's GIDs agree with its network type.
        let i = WR + WR_UD_AV + r.below(AV_SIZE as u64) as usize;
        w[i] = r.u8();
        if let Some(h) = legacy_av(&w) {
            let mapped = |g: &[u8; 16]| g[..10] == [0; 10] && g[10..12] == [0xff, 0xff];
            if w[WR + WR_UD_AV + AV_NETWORK_TYPE] == NETWORK_TYPE_IPV4 {
                assert!(mapped(&h.sgid) && mapped(&h.dgid));
            }
            assert!(h.flow_label <= 0xf_ffff);
        }
    } else {
        assert_eq!(legacy_av(&w), None);
    }
}
