// SPDX-License-Identifier: GPL-2.0

//! RoCEv2 frames the in-kernel rdma_rxe sent (captured with
//! tools/capture-rxe-vectors: UD and RC pingpongs over IPv4 and a UD one
//! over IPv6 between two namespaces), checked against rrxe's header parsing
//! and ICRC.

use rrxe_logic::{hdr, icrc, pkt};

fn frames() -> Vec<Vec<u8>> {
    let text = include_str!("vectors/rxe_frames.hex");
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            (0..l.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&l[i..i + 2], 16).unwrap())
                .collect()
        })
        .collect()
}

/// The IP packet of an Ethernet frame (without trailing padding), and the
/// length of its IP header.
fn ip_packet(f: &[u8]) -> (&[u8], usize) {
    let ip = &f[14..];
    match &f[12..14] {
        [0x08, 0x00] => (&ip[..u16::from_be_bytes([ip[2], ip[3]]) as usize], 20),
        [0x86, 0xdd] => (&ip[..40 + u16::from_be_bytes([ip[4], ip[5]]) as usize], 40),
        t => panic!("ethertype {t:?}"),
    }
}

#[test]
fn icrc_matches_rdma_rxe() {
    let fs = frames();
    assert!(fs.len() >= 40, "captured {} frames", fs.len());
    for (i, f) in fs.iter().enumerate() {
        let (ip, _) = ip_packet(f);
        let (body, trailer) = ip.split_at(ip.len() - 4);
        let want = u32::from_le_bytes(trailer.try_into().unwrap());
        assert_eq!(icrc::icrc(body), Ok(want), "frame {i}");
        assert_eq!(
            icrc::icrc_with::<icrc::Bytewise>(body),
            Ok(want),
            "frame {i}, bytewise"
        );
        // Any change outside the masked fields breaks it.
        let mut t = body.to_vec();
        let last = t.len() - 1;
        t[last] ^= 1;
        assert_ne!(icrc::icrc(&t), Ok(want), "frame {i} tampered");
    }
}

#[test]
fn headers_parse_and_round_trip() {
    let mut seen = std::collections::BTreeSet::new();
    let mut v6 = 0;
    for (i, f) in frames().iter().enumerate() {
        let (ip, ip_len) = ip_packet(f);
        v6 += usize::from(ip_len == 40);
        let udp = &ip[ip_len..];
        assert_eq!(u16::from_be_bytes([udp[2], udp[3]]), hdr::ROCE_V2_PORT);
        let (bth, l, payload) =
            hdr::split(&udp[8..]).unwrap_or_else(|| panic!("frame {i} does not split"));
        seen.insert(bth.opcode);
        assert_eq!((bth.tver, bth.pkey), (0, 0xffff), "frame {i}");
        let mut raw = [0u8; hdr::BTH];
        bth.write(&mut raw).unwrap();
        assert_eq!(&raw[..], &udp[8..8 + hdr::BTH], "frame {i}: BTH round trip");
        let n = payload.len();
        match bth.opcode {
            0x64 => {
                let d = hdr::Deth::parse(&udp[8 + l.deth.unwrap()..]).unwrap();
                // ibv_ud_pingpong's Q_Key; 1024-byte messages over IPv4,
                // 512-byte ones over IPv6.
                assert_eq!(d.qkey, 0x1111_1111, "frame {i}");
                assert_eq!(n, if ip_len == 20 { 1024 } else { 512 }, "frame {i}");
                let mut raw = [0u8; hdr::DETH];
                d.write(&mut raw).unwrap();
                assert_eq!(&raw[..], &udp[8 + 12..8 + 20]);
            }
            // 3000-byte sends over a 1024-byte path MTU.
            0x00 | 0x01 => assert_eq!(n, 1024, "frame {i}"),
            0x02 => assert_eq!(n, 3000 - 2048, "frame {i}"),
            0x11 => {
                assert_eq!(n, 0);
                let a = hdr::Aeth::parse(&udp[8 + l.aeth.unwrap()..]).unwrap();
                assert_eq!(a.syndrome >> 5, 0, "frame {i}: an ACK, not a NAK");
            }
            op => panic!("frame {i}: unexpected opcode {op:#x}"),
        }
    }
    assert!(
        seen.contains(&0x64) && seen.contains(&0x11) && seen.contains(&0x00),
        "{seen:?}"
    );
    assert!(v6 >= 10, "{v6} IPv6 frames");
}

#[test]
fn ip_and_udp_headers_parse_and_rebuild() {
    for (i, f) in frames().iter().enumerate() {
        let (ip, ip_len) = ip_packet(f);
        let info = pkt::parse(ip).unwrap_or_else(|e| panic!("frame {i}: {e:?}"));
        assert_eq!(
            (info.ip_len, info.total, info.v6),
            (ip_len, ip.len(), ip_len == 40),
            "frame {i}"
        );
        assert!(
            info.sport >= 0xc000,
            "frame {i}: source port {:#x}",
            info.sport
        );
        // rrxe's headers for the same packet are rdma_rxe's, byte for byte
        // (the IPv4 identification is the stack's choice: copied over).
        let o = pkt::IpOut {
            sgid: info.sgid,
            dgid: info.dgid,
            hop_limit: info.hop_limit,
            traffic_class: info.traffic_class,
            flow_label: info.flow_label,
            sport: info.sport,
        };
        assert_eq!(o.hdr_len(), ip_len + 8);
        let mut mine = ip.to_vec();
        o.write(&mut mine, ip.len() - ip_len - 8).unwrap();
        if ip_len == 20 {
            mine[4..6].copy_from_slice(&ip[4..6]);
            pkt::set_ipv4_checksum(&mut mine[..20]);
        }
        assert_eq!(&mine[..ip_len + 8], &ip[..ip_len + 8], "frame {i}");
        // And the ICRC over them is what rdma_rxe sent.
        let (body, trailer) = mine.split_at(mine.len() - 4);
        assert_eq!(
            icrc::icrc(body).unwrap().to_le_bytes(),
            trailer,
            "frame {i}"
        );
    }
}
