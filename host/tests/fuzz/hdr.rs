// SPDX-License-Identifier: GPL-2.0

//! Transport headers: every header written and parsed back is what was
//! written; a whole packet's headers, built for an opcode's layout, split
//! back into the same BTH, layout and payload; arbitrary bytes never make
//! `split` claim headers or a payload beyond the buffer.

use crate::rng::Rng;
use rrxe_logic::hdr::*;

/// One case: a round trip or a hostile buffer.
pub fn case(r: &mut Rng) {
    match r.below(4) {
        0 => fields(r),
        1 => packet(r),
        _ => hostile(r),
    }
    r.count();
}

fn bth(r: &mut Rng, opcode: u8) -> Bth {
    Bth {
        opcode,
        se: r.bool(),
        mig: r.bool(),
        pad: r.u8() & 3,
        tver: r.u8() & 0x0f,
        pkey: r.u16(),
        fecn: r.bool(),
        becn: r.bool(),
        dqpn: r.u32() & 0x00ff_ffff,
        ack_req: r.bool(),
        psn: r.psn(),
    }
}

/// Each header alone: parse(write(x)) == x, 24-bit fields masked, and a
/// buffer one byte short refused both ways.
fn fields(r: &mut Rng) {
    let mut b = [0u8; 64];
    r.fill(&mut b);
    let op = r.u8();
    let mut x = bth(r, op);
    x.dqpn |= r.u32() & 0xff00_0000;
    x.psn |= r.u32() & 0xff00_0000;
    x.write(&mut b).unwrap();
    let want = Bth {
        dqpn: x.dqpn & 0x00ff_ffff,
        psn: x.psn & 0x00ff_ffff,
        ..x
    };
    assert_eq!(Bth::parse(&b), Some(want));
    assert_eq!(Bth::parse(&b[..BTH - 1]), None);
    assert_eq!(x.write(&mut b[..BTH - 1]), None);
    // Bytes to header and back: all but the reserved bits survive.
    let mut raw = [0u8; BTH];
    r.fill(&mut raw);
    let mut back = [0u8; BTH];
    Bth::parse(&raw).unwrap().write(&mut back).unwrap();
    let mut masked = raw;
    masked[4] &= 0xc0;
    masked[8] &= 0x80;
    assert_eq!(back, masked);

    let d = Deth {
        qkey: r.edgy32(),
        sqpn: r.u32(),
    };
    d.write(&mut b).unwrap();
    assert_eq!(
        Deth::parse(&b),
        Some(Deth {
            sqpn: d.sqpn & 0x00ff_ffff,
            ..d
        })
    );
    assert_eq!(Deth::parse(&b[..DETH - 1]), None);
    let re = Reth {
        va: r.next(),
        rkey: r.edgy32(),
        len: r.edgy32(),
    };
    re.write(&mut b).unwrap();
    assert_eq!(Reth::parse(&b), Some(re));
    assert_eq!(Reth::parse(&b[..RETH - 1]), None);
    assert_eq!(re.write(&mut b[..RETH - 1]), None);
    let a = Aeth {
        syndrome: r.u8(),
        msn: r.u32(),
    };
    a.write(&mut b).unwrap();
    assert_eq!(
        Aeth::parse(&b),
        Some(Aeth {
            msn: a.msn & 0x00ff_ffff,
            ..a
        })
    );
    assert_eq!(Aeth::parse(&b[..AETH - 1]), None);
    let m = AtmEth {
        va: r.next(),
        rkey: r.edgy32(),
        swap_add: r.next(),
        compare: r.next(),
    };
    m.write(&mut b).unwrap();
    assert_eq!(AtmEth::parse(&b), Some(m));
    assert_eq!(AtmEth::parse(&b[..ATMETH - 1]), None);
    assert_eq!(m.write(&mut b[..ATMETH - 1]), None);
}

/// An opcode rrxe knows, of any service.
fn known_opcode(r: &mut Rng) -> u8 {
    loop {
        let op = r.u8();
        if layout(op).is_some() {
            return op;
        }
    }
}

/// The headers of a packet of a known opcode, as its layout has them, a
/// payload, pad and ICRC: `split` gives back the BTH, the layout and the
/// payload's range, and every extension header parses back at its offset.
fn packet(r: &mut Rng) {
    let op = known_opcode(r);
    let l = layout(op).unwrap();
    let plen = if l.payload {
        r.pick(&[0, 1, 3, 4, 255, 256, 1024, 4096]) + r.below(4) as usize
    } else {
        0
    };
    let mut h = Headers::new(bth(r, op));
    h.bth.pad = ((4 - plen % 4) % 4) as u8;
    let deth = Deth {
        qkey: r.u32(),
        sqpn: r.u32() & 0x00ff_ffff,
    };
    let reth = Reth {
        va: r.next(),
        rkey: r.u32(),
        len: r.u32(),
    };
    let atm = AtmEth {
        va: r.next(),
        rkey: r.u32(),
        swap_add: r.next(),
        compare: r.next(),
    };
    let aeth = Aeth {
        syndrome: r.u8(),
        msn: r.u32() & 0x00ff_ffff,
    };
    let (feth, atmack, imm, ieth) = (r.u32(), r.next(), r.u32(), r.u32());
    let srqn = r.u32() & 0x00ff_ffff;
    h.xrceth = l.xrceth.map(|_| srqn);
    h.deth = l.deth.map(|_| deth);
    h.feth = l.feth.map(|_| feth);
    h.reth = l.reth.map(|_| reth);
    h.atm = l.atmeth.map(|_| atm);
    h.aeth = l.aeth.map(|_| aeth);
    h.atmack = l.atmack.map(|_| atmack);
    h.imm = l.immdt.map(|_| imm);
    h.ieth = l.ieth.map(|_| ieth);
    let mut hb = [0u8; MAX_HDRS];
    let n = h.write(&mut hb);
    assert_eq!(n, l.hdr_len, "opcode {op:#x}");
    let mut pkt = hb[..n].to_vec();
    let payload_at = pkt.len();
    pkt.resize(payload_at + plen + h.bth.pad as usize + ICRC_SIZE, 0);
    r.fill(&mut pkt[payload_at..]);
    let (b, l2, range) = split(&pkt).expect("a well-formed packet splits");
    assert_eq!((b, l2), (h.bth, l));
    assert_eq!(range, l.hdr_len..l.hdr_len + plen);
    let at = |o: Option<usize>| &pkt[o.unwrap()..];
    if h.xrceth.is_some() {
        assert_eq!(xrc_srqn(at(l.xrceth)), Some(srqn));
    }
    if h.deth.is_some() {
        assert_eq!(Deth::parse(at(l.deth)), Some(deth));
    }
    if h.feth.is_some() {
        assert_eq!(at(l.feth)[..4], feth.to_be_bytes());
    }
    if h.reth.is_some() {
        assert_eq!(Reth::parse(at(l.reth)), Some(reth));
    }
    if h.atm.is_some() {
        assert_eq!(AtmEth::parse(at(l.atmeth)), Some(atm));
    }
    if h.aeth.is_some() {
        assert_eq!(Aeth::parse(at(l.aeth)), Some(aeth));
    }
    if h.atmack.is_some() {
        assert_eq!(at(l.atmack)[..8], atmack.to_be_bytes());
    }
    if h.imm.is_some() {
        assert_eq!(at(l.immdt)[..4], imm.to_ne_bytes());
    }
    if h.ieth.is_some() {
        assert_eq!(at(l.ieth)[..4], ieth.to_be_bytes());
    }
    // One byte short of its headers (with the pad and ICRC): refused.
    let short = l.hdr_len + h.bth.pad as usize + ICRC_SIZE - 1;
    assert_eq!(split(&pkt[..short]), None, "opcode {op:#x}");
}

/// Arbitrary bytes (a known opcode most of the time, any length, or a
/// good packet cut short): `split` never panics, and what it accepts lies
/// within the buffer and agrees with the opcode's layout.
fn hostile(r: &mut Rng) {
    let len = match r.below(3) {
        0 => r.below(BTH as u64 + 8) as usize,
        1 => r.below(80) as usize,
        _ => r.below(2000) as usize,
    };
    let mut b = vec![0u8; len];
    r.fill(&mut b);
    if len > 0 && r.chance(3, 4) {
        b[0] = known_opcode(r);
    }
    let Some((bth, l, range)) = split(&b) else {
        return;
    };
    assert_eq!(Some(l), layout(bth.opcode));
    assert_eq!(Bth::parse(&b), Some(bth));
    assert!(l.hdr_len >= BTH && l.hdr_len <= MAX_HDRS);
    assert_eq!(range.start, l.hdr_len);
    assert!(range.start <= range.end);
    assert_eq!(range.end + bth.pad as usize + ICRC_SIZE, b.len());
    assert!(l.payload || range.is_empty());
    // Every extension header present lies inside the headers, in order,
    // without overlap.
    let mut end = BTH;
    for (o, size) in [
        (l.xrceth, XRCETH),
        (l.deth, DETH),
        (l.feth, FETH),
        (l.reth, RETH),
        (l.atmeth, ATMETH),
        (l.aeth, AETH),
        (l.atmack, ATMACK),
        (l.immdt, IMMDT),
        (l.ieth, IETH),
    ] {
        if let Some(o) = o {
            assert_eq!(o, end, "opcode {:#x}", bth.opcode);
            end = o + size;
        }
    }
    assert_eq!(end, l.hdr_len);
    let _ = &b[range];
}
