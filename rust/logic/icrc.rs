// SPDX-License-Identifier: GPL-2.0

//! The RoCEv2 invariant CRC (IB spec annex A17): CRC-32 (the Ethernet
//! polynomial, reflected, initial value and final complement all ones)
//! over 64 bits of ones standing in for the LRH, then the IP and UDP
//! headers and the transport headers and payload, with the fields that may
//! change in flight replaced by ones: IPv4 TOS, TTL and checksum, IPv6
//! traffic class, flow label and hop limit, the UDP checksum, and the BTH
//! byte that holds FECN, BECN and the reserved bits. It is sent
//! little-endian after the payload.

/// The reflected CRC-32 polynomial (the Ethernet one, bit-reversed).
const POLY: u32 = 0xedb8_8320;

/// `T[k][b]` is the raw CRC (seed zero) of byte `b` then `k` zero bytes:
/// `T[0]` is the classic bytewise table, and the others let slice-by-8 fold
/// eight bytes in one step.
const fn make_tables() -> [[u32; 256]; 8] {
    let mut t = [[0u32; 256]; 8];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 { POLY ^ (c >> 1) } else { c >> 1 };
            k += 1;
        }
        t[0][i] = c;
        i += 1;
    }
    let mut k = 1;
    while k < 8 {
        let mut i = 0;
        while i < 256 {
            let c = t[k - 1][i];
            t[k][i] = (c >> 8) ^ t[0][(c & 0xff) as usize];
            i += 1;
        }
        k += 1;
    }
    t
}

static TABLES: [[u32; 256]; 8] = make_tables();

/// A CRC-32 engine: the raw reflected update of the kernel's `crc32_le`,
/// which neither complements its seed nor its result.
pub trait Backend {
    /// The running CRC `crc` (without complement) after `data`.
    fn crc32_le(crc: u32, data: &[u8]) -> u32;
}

/// One table lookup per byte: the reference the others are tested against.
#[derive(Clone, Copy, Debug, Default)]
pub struct Bytewise;

impl Backend for Bytewise {
    fn crc32_le(mut crc: u32, data: &[u8]) -> u32 {
        for &b in data {
            crc = TABLES[0][((crc ^ u32::from(b)) & 0xff) as usize] ^ (crc >> 8);
        }
        crc
    }
}

/// Slice-by-8: eight bytes per step through eight tables, the tail bytewise.
/// The portable engine, used where the kernel's `crc32_le` is not.
#[derive(Clone, Copy, Debug, Default)]
pub struct Slice8;

impl Backend for Slice8 {
    // Out of line, in a section of its own that the kernel module aligns
    // to a page (`rrxe::net`), so that its loop never crosses a page
    // boundary: a binary translator chains translated code within a page
    // only, and a loop body that crosses one leaves the translated code on
    // every step.
    #[inline(never)]
    #[link_section = ".text.rrxe_crc"]
    fn crc32_le(mut crc: u32, data: &[u8]) -> u32 {
        let t = &TABLES;
        let mut chunks = data.chunks_exact(8);
        for c in &mut chunks {
            let a = u32::from_le_bytes([c[0], c[1], c[2], c[3]]) ^ crc;
            let b = u32::from_le_bytes([c[4], c[5], c[6], c[7]]);
            crc = t[7][(a & 0xff) as usize]
                ^ t[6][((a >> 8) & 0xff) as usize]
                ^ t[5][((a >> 16) & 0xff) as usize]
                ^ t[4][(a >> 24) as usize]
                ^ t[3][(b & 0xff) as usize]
                ^ t[2][((b >> 8) & 0xff) as usize]
                ^ t[1][((b >> 16) & 0xff) as usize]
                ^ t[0][(b >> 24) as usize];
        }
        Bytewise::crc32_le(crc, chunks.remainder())
    }
}

/// Folding by a sparse multiple of the polynomial: no table, one load and
/// sixteen shifts and exclusive-ors per eight bytes.
///
/// The generator divides `x^300 + x^155 + x^117 + x^89 + 1` (the sparsest
/// multiple of degree at most 300 whose next term lies 64 or more below
/// the top; the test `sparse_multiple` checks the division). So a message
/// bit keeps its remainder if it is cleared and the bits 145, 183, 211 and
/// 300 places after it (in the order the reflected CRC reads them) are
/// flipped, as long as those lie inside the message. Every place is at
/// least two 64-bit words on, so a word folds into the words after it
/// without touching its neighbour, and the loop carries five words.
/// The last 38 to 45 bytes, with what was folded into them, go through
/// slice-by-8.
///
/// Where loads cost several times what register arithmetic does (a CPU
/// emulated by binary translation), this takes a fraction of slice-by-8's
/// nine loads per eight bytes. The module's `net::choose_icrc_engine`
/// times it against the others at load.
#[derive(Clone, Copy, Debug, Default)]
pub struct Sparse;

/// The distance in bits from a message bit to the farthest one it folds
/// into.
const SPARSE_SPAN: usize = 300;

/// Below this many bytes, [`Sparse`] hands the whole update to
/// [`Slice8`]. The fold needs 38 bytes at least (its arithmetic), and
/// below about this length its setup costs more than slice-by-8's loads
/// save.
const SPARSE_MIN: usize = 96;

/// Folds the next 8-byte word `w` into the debts `k` of the word and the
/// four after it, and returns the debts of the next five.
#[inline(always)]
fn sparse_fold(k: [u64; 5], w: &[u8]) -> [u64; 5] {
    let mut b = [0u8; 8];
    b.copy_from_slice(w);
    let v = u64::from_le_bytes(b) ^ k[0];
    [
        k[1],
        k[2] ^ (v << 17) ^ (v << 55),
        k[3] ^ (v >> 47) ^ (v >> 9) ^ (v << 19),
        k[4] ^ (v >> 45) ^ (v << 44),
        v >> 20,
    ]
}

impl Backend for Sparse {
    // At the start of a page of its own, as `Slice8` is, for the same
    // reason.
    #[inline(never)]
    #[link_section = ".text.rrxe_crc_sparse"]
    fn crc32_le(crc: u32, data: &[u8]) -> u32 {
        if data.len() < SPARSE_MIN {
            return Slice8::crc32_le(crc, data);
        }
        // Words folded away: the last one's final bit, plus the span, is
        // the message's final bit at most.
        let fold = (8 * data.len() - SPARSE_SPAN) / 64;
        // What is owed to words i to i + 4; the running CRC enters as the
        // first four bytes' complement (the reflected update's seed).
        let mut k = [u64::from(crc), 0, 0, 0, 0];
        // Four words a step: one loop branch per 32 bytes.
        let (quads, words) = data[..8 * fold].split_at(32 * (fold / 4));
        for q in quads.chunks_exact(32) {
            for w in q.chunks_exact(8) {
                k = sparse_fold(k, w);
            }
        }
        for w in words.chunks_exact(8) {
            k = sparse_fold(k, w);
        }
        // The tail: 38 to 45 bytes, the first 40 with their debts. Bits
        // owed beyond the message's end are zero.
        let tail = &data[8 * fold..];
        let mut t = [0u8; 48];
        t[..tail.len()].copy_from_slice(tail);
        for (i, d) in k.iter().enumerate() {
            let o = &mut t[8 * i..8 * i + 8];
            let mut b = [0u8; 8];
            b.copy_from_slice(o);
            o.copy_from_slice(&(u64::from_le_bytes(b) ^ d).to_le_bytes());
        }
        Slice8::crc32_le(0, &t[..tail.len()])
    }
}

/// A running CRC-32 (without the final complement), computed by `B`.
#[derive(Clone, Copy, Debug)]
pub struct Crc32<B: Backend = Slice8> {
    crc: u32,
    backend: core::marker::PhantomData<B>,
}

impl<B: Backend> Default for Crc32<B> {
    fn default() -> Self {
        Self::new()
    }
}

impl<B: Backend> Crc32<B> {
    /// A CRC over nothing.
    pub const fn new() -> Self {
        Self {
            crc: 0xffff_ffff,
            backend: core::marker::PhantomData,
        }
    }

    /// Adds `data`.
    pub fn update(&mut self, data: &[u8]) {
        self.crc = B::crc32_le(self.crc, data);
    }

    /// The CRC of everything added.
    pub const fn finish(&self) -> u32 {
        !self.crc
    }
}

/// Size of the IPv4 header rrxe sends and accepts (no options).
pub const IPV4_HDR: usize = 20;
/// Size of the IPv6 header.
pub const IPV6_HDR: usize = 40;
/// Size of the UDP header.
pub const UDP_HDR: usize = 8;
/// Offset of the FECN/BECN/reserved byte in the BTH.
pub const BTH_RESV8A: usize = 4;

/// Why an ICRC cannot be computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IcrcError {
    /// Shorter than its headers.
    Short,
    /// Not IPv4 without options or IPv6.
    BadIp,
}

/// The ICRC of a packet that starts at its IP header and ends before its
/// ICRC (`ip.len()` covers IP, UDP, transport headers and payload), with
/// the portable CRC-32.
pub fn icrc(ip: &[u8]) -> Result<u32, IcrcError> {
    icrc_with::<Slice8>(ip)
}

/// Size of the masked headers the ICRC starts with: the ones for the LRH,
/// then the IP and UDP headers and the BTH up to its masked byte, inclusive.
const PSEUDO_MAX: usize = 8 + IPV6_HDR + UDP_HDR + BTH_RESV8A + 1;

/// [`icrc`] with the CRC-32 of `B`: two CRC updates, one over the masked
/// headers gathered on the stack and one over the rest of the packet.
pub fn icrc_with<B: Backend>(ip: &[u8]) -> Result<u32, IcrcError> {
    let ip_len = ip_hdr_len(ip)?;
    let (hdrs, udp_payload) = ip.split_at(ip.len().min(ip_len + UDP_HDR));
    icrc_split_with::<B>(hdrs, udp_payload)
}

/// The size of the IP header `ip` starts with: IPv4 without options, or
/// IPv6.
fn ip_hdr_len(ip: &[u8]) -> Result<usize, IcrcError> {
    match ip.first().ok_or(IcrcError::Short)? {
        0x45 => Ok(IPV4_HDR),
        v if v >> 4 == 6 => Ok(IPV6_HDR),
        _ => Err(IcrcError::BadIp),
    }
}

/// [`icrc_with`] of a packet given in two pieces: `hdrs`, its IP and UDP
/// headers (exactly), and `udp_payload`, the BTH to the end of the payload
/// (the ICRC excluded). A segment of a packet the stack splits (UDP
/// segmentation offload) has its headers written only by the stack, so
/// the sender computes its ICRC over the headers the segment will have.
pub fn icrc_split_with<B: Backend>(hdrs: &[u8], udp_payload: &[u8]) -> Result<u32, IcrcError> {
    let ip_len = ip_hdr_len(hdrs)?;
    let bth = ip_len + UDP_HDR;
    if hdrs.len() != bth || udp_payload.len() < BTH_RESV8A + 1 {
        return Err(IcrcError::Short);
    }
    // The LRH's ones, then the headers up to the BTH's masked byte, which
    // stays one.
    let len = 8 + bth + BTH_RESV8A + 1;
    let mut p = [0xffu8; PSEUDO_MAX];
    p[8..8 + bth].copy_from_slice(hdrs);
    p[8 + bth..len - 1].copy_from_slice(&udp_payload[..BTH_RESV8A]);
    let h = &mut p[8..];
    if ip_len == IPV4_HDR {
        h[1] = 0xff; // TOS
        h[8] = 0xff; // TTL
        h[10] = 0xff; // header checksum
        h[11] = 0xff;
    } else {
        h[0] |= 0x0f; // traffic class (low nibble of byte 0) ...
        h[1] = 0xff; // ... and flow label
        h[2] = 0xff;
        h[3] = 0xff;
        h[7] = 0xff; // hop limit
    }
    h[ip_len + 6] = 0xff; // UDP checksum
    h[ip_len + 7] = 0xff;
    let mut c = Crc32::<B>::new();
    c.update(&p[..len]);
    c.update(&udp_payload[BTH_RESV8A + 1..]);
    Ok(c.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small xorshift generator, so the tests need no crate.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }

        fn fill(&mut self, buf: &mut [u8]) {
            for b in buf {
                *b = self.next() as u8;
            }
        }
    }

    fn check_value<B: Backend>() {
        // The CRC-32 check value of "123456789".
        let mut c = Crc32::<B>::new();
        c.update(b"123456789");
        assert_eq!(c.finish(), 0xcbf4_3926);
        let mut e = Crc32::<B>::new();
        e.update(b"");
        assert_eq!(e.finish(), 0);
    }

    #[test]
    fn crc32_check_value() {
        check_value::<Bytewise>();
        check_value::<Slice8>();
        check_value::<Sparse>();
    }

    /// `B` against the bytewise reference: random data at any alignment
    /// with any running CRC over `lens` (`reps` times each), then runs of
    /// equal bytes, which sparse tables would get wrong, with the seeds
    /// `seeds`, over the lengths up to `runs`.
    fn matches_bytewise<B: Backend>(
        seed: u64,
        lens: impl Iterator<Item = usize>,
        reps: usize,
        runs: usize,
        seeds: &[u32],
    ) {
        let mut r = Rng(seed);
        let mut buf = vec![0u8; 9000 + 8];
        for len in lens {
            for _ in 0..reps {
                r.fill(&mut buf);
                let off = (r.next() % 8) as usize;
                let seed = r.next() as u32;
                let d = &buf[off..off + len];
                assert_eq!(
                    B::crc32_le(seed, d),
                    Bytewise::crc32_le(seed, d),
                    "len {len} offset {off} seed {seed:#x}"
                );
            }
        }
        for fill in [0u8, 0xff, 0x80, 0x01] {
            let d = vec![fill; runs];
            for len in 0..=runs {
                for &seed in seeds {
                    assert_eq!(
                        B::crc32_le(seed, &d[..len]),
                        Bytewise::crc32_le(seed, &d[..len]),
                        "{fill:#x} x {len} seed {seed:#x}"
                    );
                }
            }
        }
    }

    #[test]
    fn slice8_matches_bytewise() {
        matches_bytewise::<Slice8>(0x1c2c_0001, 0..=300, 8, 300, &[!0]);
    }

    #[test]
    fn sparse_multiple() {
        // x^300 + x^155 + x^117 + x^89 + 1 modulo the generator, in the
        // unreflected form: x^k mod P by repeated doubling.
        const P: u64 = 0x1_04c1_1db7;
        let mut pow = [0u64; SPARSE_SPAN + 1];
        pow[0] = 1;
        for i in 1..pow.len() {
            let v = pow[i - 1] << 1;
            pow[i] = if v >> 32 != 0 { v ^ P } else { v };
        }
        assert_eq!(pow[300] ^ pow[155] ^ pow[117] ^ pow[89] ^ pow[0], 0);
        // The places a bit folds into are those of the terms below the top.
        for (place, term) in [(145, 155), (183, 117), (211, 89), (300, 0)] {
            assert_eq!(SPARSE_SPAN - place, term);
        }
    }

    #[test]
    fn sparse_matches_bytewise() {
        let lens = (0..=700).chain([1024, 4095, 4096, 4097, 8192, 9000]);
        matches_bytewise::<Sparse>(0x1c2c_0004, lens, 4, 700, &[0, !0, 1 << 31]);
        // A single bit anywhere in a long message.
        let mut d = vec![0u8; 1000];
        for bit in 0..8 * d.len() {
            d[bit / 8] = 1 << (bit % 8);
            assert_eq!(
                Sparse::crc32_le(!0, &d),
                Bytewise::crc32_le(!0, &d),
                "bit {bit}"
            );
            d[bit / 8] = 0;
        }
    }

    fn splits_equal_one_shot<B: Backend>() {
        let mut r = Rng(0x1c2c_0002);
        let mut d = [0u8; 300];
        r.fill(&mut d);
        let mut one = Crc32::<B>::new();
        one.update(&d);
        let want = one.finish();
        for i in 0..=d.len() {
            let mut c = Crc32::<B>::new();
            c.update(&d[..i]);
            c.update(&d[i..]);
            assert_eq!(c.finish(), want, "split at {i}");
        }
        // Many small pieces, of every length up to 17.
        for step in 1..=17 {
            let mut c = Crc32::<B>::new();
            for piece in d.chunks(step) {
                c.update(piece);
            }
            assert_eq!(c.finish(), want, "pieces of {step}");
        }
    }

    #[test]
    fn incremental_updates_equal_one_shot() {
        splits_equal_one_shot::<Bytewise>();
        splits_equal_one_shot::<Slice8>();
        splits_equal_one_shot::<Sparse>();
    }

    /// The ICRC as it was first written, one update per header piece over
    /// the bytewise reference: the gathered pseudo-header must match it.
    fn icrc_by_pieces(ip: &[u8]) -> u32 {
        let ip_len = if ip[0] >> 4 == 4 { IPV4_HDR } else { IPV6_HDR };
        let mut c = Crc32::<Bytewise>::new();
        c.update(&[0xff; 8]);
        let mut h = [0u8; IPV6_HDR];
        h[..ip_len].copy_from_slice(&ip[..ip_len]);
        if ip_len == IPV4_HDR {
            for i in [1, 8, 10, 11] {
                h[i] = 0xff;
            }
        } else {
            h[0] |= 0x0f;
            for i in [1, 2, 3, 7] {
                h[i] = 0xff;
            }
        }
        c.update(&h[..ip_len]);
        let mut u = [0u8; UDP_HDR];
        u.copy_from_slice(&ip[ip_len..ip_len + UDP_HDR]);
        u[6] = 0xff;
        u[7] = 0xff;
        c.update(&u);
        let bth = ip_len + UDP_HDR;
        c.update(&ip[bth..bth + BTH_RESV8A]);
        c.update(&[0xff]);
        c.update(&ip[bth + BTH_RESV8A + 1..]);
        c.finish()
    }

    #[test]
    fn icrc_backends_agree() {
        let mut r = Rng(0x1c2c_0003);
        let mut p = [0u8; IPV6_HDR + UDP_HDR + 12 + 300];
        for v6 in [false, true] {
            let hl = if v6 { IPV6_HDR } else { IPV4_HDR } + UDP_HDR;
            for len in hl + BTH_RESV8A + 1..=hl + 12 + 300 {
                r.fill(&mut p);
                p[0] = if v6 { 0x60 | (p[0] & 0x0f) } else { 0x45 };
                let q = &p[..len];
                let want = icrc_by_pieces(q);
                assert_eq!(icrc(q), Ok(want), "v6 {v6} len {len}");
                assert_eq!(icrc_with::<Bytewise>(q), Ok(want), "v6 {v6} len {len}");
            }
        }
    }

    #[test]
    fn split_equals_whole() {
        let mut r = Rng(0x5e9_0001);
        let mut p = [0u8; IPV6_HDR + UDP_HDR + 12 + 64];
        for v6 in [false, true] {
            let hl = if v6 { IPV6_HDR } else { IPV4_HDR } + UDP_HDR;
            for len in hl + BTH_RESV8A + 1..=p.len() {
                r.fill(&mut p);
                p[0] = if v6 { 0x60 | (p[0] & 0x0f) } else { 0x45 };
                let (h, u) = p[..len].split_at(hl);
                assert_eq!(icrc_split_with::<Slice8>(h, u), icrc(&p[..len]));
            }
        }
        // The headers must be exactly IP and UDP, and the BTH's first
        // five bytes must follow.
        let q = [0x45u8; 40];
        assert_eq!(
            icrc_split_with::<Slice8>(&q[..27], &q[27..]),
            Err(IcrcError::Short)
        );
        assert_eq!(
            icrc_split_with::<Slice8>(&q[..29], &q[29..]),
            Err(IcrcError::Short)
        );
        assert_eq!(
            icrc_split_with::<Slice8>(&q[..28], &q[28..32]),
            Err(IcrcError::Short)
        );
        assert!(icrc_split_with::<Slice8>(&q[..28], &q[28..33]).is_ok());
    }

    #[test]
    fn rejects_short_and_odd_ip() {
        assert_eq!(icrc(&[]), Err(IcrcError::Short));
        assert_eq!(icrc(&[0x45; 30]), Err(IcrcError::Short));
        assert_eq!(icrc(&[0x46; 80]), Err(IcrcError::BadIp));
        assert_eq!(icrc(&[0x55; 80]), Err(IcrcError::BadIp));
    }

    #[test]
    fn masked_fields_do_not_matter() {
        let mut p = [0u8; 20 + 8 + 12 + 16];
        p[0] = 0x45;
        for (i, b) in p.iter_mut().enumerate().skip(1) {
            *b = i as u8;
        }
        let base = icrc(&p).unwrap();
        let mut q = p;
        q[1] ^= 0x5a; // TOS
        q[8] ^= 1; // TTL
        q[10] ^= 0xff; // IP checksum
        q[26] ^= 0x11; // UDP checksum
        q[28 + 4] ^= 0xc0; // FECN/BECN
        assert_eq!(icrc(&q).unwrap(), base);
        let mut r = p;
        r[28 + 5] ^= 1; // destination QP
        assert_ne!(icrc(&r).unwrap(), base);
    }
}
