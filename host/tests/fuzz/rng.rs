// SPDX-License-Identifier: GPL-2.0

//! A small deterministic generator (SplitMix64) and the biased choices the
//! fuzz targets draw from it.

/// SplitMix64, seeded per case; it also counts the cases a run checks
/// (a run may check many: every step of a window's life is one).
pub struct Rng {
    s: u64,
    cases: u64,
}

impl Rng {
    /// The stream of case `i` of target `name` under `seed`.
    pub fn for_case(seed: u64, name: &str, i: u64) -> Self {
        let mut h = seed ^ 0x9e37_79b9_7f4a_7c15;
        for b in name.bytes() {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        let mut r = Self {
            s: h ^ i.wrapping_mul(0xd1b5_4a32_d192_ed03),
            cases: 0,
        };
        r.next();
        r
    }

    /// The next 64 random bits.
    pub fn next(&mut self) -> u64 {
        self.s = self.s.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.s;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// 32 random bits.
    pub fn u32(&mut self) -> u32 {
        (self.next() >> 32) as u32
    }

    /// 16 random bits.
    pub fn u16(&mut self) -> u16 {
        (self.next() >> 48) as u16
    }

    /// 8 random bits.
    pub fn u8(&mut self) -> u8 {
        (self.next() >> 56) as u8
    }

    /// A random bool.
    pub fn bool(&mut self) -> bool {
        self.next() >> 63 != 0
    }

    /// True with probability `num` in `den`.
    pub fn chance(&mut self, num: u64, den: u64) -> bool {
        self.below(den) < num
    }

    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next()) * u128::from(n)) >> 64) as u64
    }

    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }

    /// One of `xs`.
    pub fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len() as u64) as usize]
    }

    /// A 32-bit value biased to the edges (0, 1, the maxima, powers of
    /// two and their neighbours) half the time.
    pub fn edgy32(&mut self) -> u32 {
        match self.below(8) {
            0 => self.pick(&[0, 1, 2, u32::MAX, u32::MAX - 1, 0x7fff_ffff, 0x8000_0000]),
            1 => {
                let p = 1u32 << self.below(32);
                p.wrapping_add(self.pick(&[0, 1, u32::MAX]))
            }
            2 => self.u32() & 0xff,
            3 => self.u32() & 0xffff,
            _ => self.u32(),
        }
    }

    /// A 24-bit PSN, biased to the wrap.
    pub fn psn(&mut self) -> u32 {
        match self.below(4) {
            0 => 0x00ff_ffff - (self.u32() & 0xff),
            1 => self.u32() & 0xff,
            _ => self.u32() & 0x00ff_ffff,
        }
    }

    /// Fills `b` with random bytes.
    pub fn fill(&mut self, b: &mut [u8]) {
        for c in b.chunks_mut(8) {
            let v = self.next().to_ne_bytes();
            c.copy_from_slice(&v[..c.len()]);
        }
    }

    /// Counts one checked case.
    pub fn count(&mut self) {
        self.cases += 1;
    }

    /// The cases counted.
    pub fn cases(&self) -> u64 {
        self.cases
    }
}
