// SPDX-License-Identifier: GPL-2.0

//! Tests of the transport headers and the opcode table.

use super::*;

#[test]
fn bth_round_trip_and_masks() {
    let b = Bth {
        opcode: 0x64,
        se: true,
        mig: false,
        pad: 3,
        tver: 0,
        pkey: 0xffff,
        fecn: false,
        becn: true,
        dqpn: 0x12_3456,
        ack_req: true,
        psn: 0xab_cdef,
    };
    let mut raw = [0u8; 12];
    b.write(&mut raw).unwrap();
    assert_eq!(
        raw,
        [0x64, 0xb0, 0xff, 0xff, 0x40, 0x12, 0x34, 0x56, 0x80, 0xab, 0xcd, 0xef]
    );
    assert_eq!(Bth::parse(&raw), Some(b));
    let wide = Bth {
        dqpn: 0xff12_3456,
        psn: 0xffab_cdef,
        ..b
    };
    let mut raw2 = [0u8; 12];
    wide.write(&mut raw2).unwrap();
    assert_eq!(raw2, raw, "24-bit fields are masked");
    assert_eq!(Bth::parse(&raw[..11]), None);
}

#[test]
fn layouts() {
    let ud = layout(0x64).unwrap();
    assert_eq!((ud.deth, ud.hdr_len), (Some(12), 20));
    let ud_imm = layout(0x65).unwrap();
    assert_eq!((ud_imm.immdt, ud_imm.hdr_len), (Some(20), 24));
    let w = layout(0x0b).unwrap();
    assert_eq!((w.reth, w.immdt, w.hdr_len), (Some(12), Some(28), 32));
    let uc = layout(0x2a).unwrap();
    assert_eq!((uc.reth, uc.hdr_len), (Some(12), 28));
    assert_eq!(layout(0x13).unwrap().hdr_len, 40);
    assert_eq!(layout(0x12).unwrap().hdr_len, 24);
    assert_eq!(layout(0x1c).unwrap().hdr_len, 32);
    // Reads, atomics and acks are RC only; UD only sends only.
    assert_eq!(layout(0x2c), None);
    assert_eq!(layout(0x31), None);
    assert_eq!(layout(0x60), None);
    assert_eq!(layout(0x15), None);
    assert_eq!(layout(0x40), None);
    assert_eq!(layout(0xff), None);
}

#[test]
fn xrc_layouts() {
    // Requests: the XRCETH right after the BTH, then RC's headers.
    let send = layout(0xa4).unwrap();
    assert_eq!(
        (send.xrceth, send.hdr_len, send.payload),
        (Some(12), 16, true)
    );
    let imm = layout(0xa5).unwrap();
    assert_eq!(
        (imm.xrceth, imm.immdt, imm.hdr_len),
        (Some(12), Some(16), 20)
    );
    for op in [0xa6, 0xaa, 0xac] {
        let l = layout(op).unwrap();
        assert_eq!((l.xrceth, l.reth), (Some(12), Some(16)), "{op:#x}");
    }
    assert_eq!(layout(0xab).unwrap().hdr_len, 12 + 4 + 16 + 4);
    assert!(!layout(0xac).unwrap().payload);
    let cas = layout(0xb3).unwrap();
    assert_eq!(
        (cas.xrceth, cas.atmeth, cas.hdr_len),
        (Some(12), Some(16), 44)
    );
    let inv = layout(0xb7).unwrap();
    assert_eq!(
        (inv.xrceth, inv.ieth, inv.hdr_len),
        (Some(12), Some(16), 20)
    );
    for op in [0xa1, 0xa2, 0xa7, 0xa8] {
        assert_eq!(layout(op).unwrap().hdr_len, 16, "{op:#x}");
    }
    // Responses: as RC's, no XRCETH.
    for op in 0xadu8..=0xb2 {
        let (x, r) = (layout(op).unwrap(), layout(op - 0xa0).unwrap());
        assert_eq!(x, r, "{op:#x}");
        assert_eq!(x.xrceth, None);
    }
    // Neither FLUSH nor ATOMIC WRITE, nor what RC lacks.
    for op in [0xbc, 0xbd, 0xb5, 0xb8, 0xbf] {
        assert_eq!(layout(op), None, "{op:#x}");
    }
    assert_eq!(service(0xa0), Some(Service::Xrc));
    assert_eq!(service(0xc0), None);
    assert_eq!(service(0x80), None);
}

#[test]
fn xrceth_written_after_the_bth() {
    let mut b = [0u8; MAX_HDRS];
    // XRC RDMA WRITE ONLY: BTH, XRCETH, RETH.
    let reth = Reth {
        va: 0x1000,
        rkey: 0x1234_5678,
        len: 64,
    };
    let h = Headers {
        xrceth: Some(0xff12_3456),
        reth: Some(reth),
        ..Headers::new(Bth {
            opcode: 0xaa,
            ..Default::default()
        })
    };
    let n = h.write(&mut b);
    let l = layout(0xaa).unwrap();
    assert_eq!((n, h.wire_len()), (l.hdr_len, l.hdr_len));
    // The reserved byte is zero, the SRQ number 24 bits.
    assert_eq!(b[12..16], [0x00, 0x12, 0x34, 0x56]);
    assert_eq!(xrc_srqn(&b[l.xrceth.unwrap()..]), Some(0x12_3456));
    assert_eq!(Reth::parse(&b[l.reth.unwrap()..]), Some(reth));
    assert_eq!(xrc_srqn(&[0xff, 0xab, 0xcd, 0xef]), Some(0xab_cdef));
    assert_eq!(xrc_srqn(&[0, 0, 1]), None);
}

#[test]
fn split_checks_lengths() {
    let mut p = [0u8; 12 + 20 + 4];
    Bth {
        opcode: 0x11,
        ..Default::default()
    }
    .write(&mut p)
    .unwrap();
    // An ACK carries exactly its AETH.
    assert!(split(&p[..12 + 4 + 4]).is_some());
    assert!(split(&p[..12 + 4 + 4 + 1]).is_none());
    assert!(split(&p[..12 + 3]).is_none());
    // A pad count larger than the payload.
    Bth {
        opcode: 0x04,
        pad: 3,
        ..Default::default()
    }
    .write(&mut p)
    .unwrap();
    assert!(split(&p[..12 + 4 + 2]).is_none());
    let (_, _, r) = split(&p[..12 + 8 + 4]).unwrap();
    assert_eq!(r, 12..17);
}

#[test]
fn headers_write_in_layout_order() {
    let reth = Reth {
        va: 0x1122_3344_5566_7788,
        rkey: 0xaabb_ccdd,
        len: 300,
    };
    let mut b = [0u8; MAX_HDRS];
    // RC WRITE ONLY with immediate: BTH, RETH, ImmDt.
    let h = Headers {
        reth: Some(reth),
        imm: Some(0x0102_0304),
        ..Headers::new(Bth {
            opcode: 0x0b,
            psn: 7,
            ..Default::default()
        })
    };
    let n = h.write(&mut b);
    assert_eq!(h.wire_len(), n);
    let l = layout(0x0b).unwrap();
    assert_eq!(n, l.hdr_len);
    assert_eq!(Reth::parse(&b[l.reth.unwrap()..]), Some(reth));
    let i = l.immdt.unwrap();
    assert_eq!(b[i..i + 4], 0x0102_0304u32.to_ne_bytes());
    // FLUSH: BTH, FETH, RETH.
    let h = Headers {
        feth: Some(0x21),
        reth: Some(reth),
        ..Headers::new(Bth {
            opcode: 0x1c,
            ..Default::default()
        })
    };
    let n = h.write(&mut b);
    assert_eq!(h.wire_len(), n);
    let l = layout(0x1c).unwrap();
    assert_eq!(n, l.hdr_len);
    assert_eq!(b[l.feth.unwrap()..][..4], [0, 0, 0, 0x21]);
    assert_eq!(Reth::parse(&b[l.reth.unwrap()..]), Some(reth));
    // Atomic ACK: BTH, AETH, AtomicAckETH.
    let aeth = Aeth {
        syndrome: 0,
        msn: 9,
    };
    let h = Headers {
        aeth: Some(aeth),
        atmack: Some(0x0a0b_0c0d_0e0f_1011),
        ..Headers::new(Bth {
            opcode: 0x12,
            ..Default::default()
        })
    };
    let n = h.write(&mut b);
    assert_eq!(h.wire_len(), n);
    let l = layout(0x12).unwrap();
    assert_eq!(n, l.hdr_len);
    assert_eq!(Aeth::parse(&b[l.aeth.unwrap()..]), Some(aeth));
    assert_eq!(
        b[l.atmack.unwrap()..][..8],
        0x0a0b_0c0d_0e0f_1011u64.to_be_bytes()
    );
    // UD SEND ONLY with immediate: BTH, DETH, ImmDt.
    let deth = Deth {
        qkey: 0x1111_2222,
        sqpn: 0x12,
    };
    let h = Headers {
        deth: Some(deth),
        imm: Some(5),
        ..Headers::new(Bth {
            opcode: UD_SEND_ONLY_IMM,
            ..Default::default()
        })
    };
    let n = h.write(&mut b);
    assert_eq!(h.wire_len(), n);
    let l = layout(UD_SEND_ONLY_IMM).unwrap();
    assert_eq!(n, l.hdr_len);
    assert_eq!(Deth::parse(&b[l.deth.unwrap()..]), Some(deth));
    // SEND ONLY with invalidate: BTH, IETH.
    let h = Headers {
        ieth: Some(0xdead_beef),
        ..Headers::new(Bth {
            opcode: 0x17,
            ..Default::default()
        })
    };
    let n = h.write(&mut b);
    assert_eq!(h.wire_len(), n);
    let l = layout(0x17).unwrap();
    assert_eq!(n, l.hdr_len);
    assert_eq!(b[l.ieth.unwrap()..][..4], 0xdead_beefu32.to_be_bytes());
}

#[test]
fn udp_len_pads_and_adds_the_icrc() {
    let h = Headers::new(Bth::default());
    assert_eq!(h.udp_len(0), BTH + ICRC_SIZE);
    assert_eq!(h.udp_len(1), BTH + 4 + ICRC_SIZE);
    assert_eq!(h.udp_len(4096), BTH + 4096 + ICRC_SIZE);
    let w = Headers {
        reth: Some(Reth::default()),
        imm: Some(1),
        ..h
    };
    assert_eq!(w.udp_len(1023), BTH + RETH + IMMDT + 1024 + ICRC_SIZE);
}
