// SPDX-License-Identifier: GPL-2.0

//! Bounds arithmetic for memory named by (iova, length), that cannot
//! overflow `u64`.
//!
//! rxe shipped out-of-bounds writes from exactly these checks: an iova near
//! `u64::MAX`, and `offset + length` wrapping. Every function here works on
//! differences, never on sums that could wrap.

/// A registered range: `len` bytes that userspace addresses from `iova`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Range {
    /// First address.
    pub iova: u64,
    /// Length in bytes.
    pub len: u64,
}

impl Range {
    /// A range, if `iova + len` does not pass 2^64 (a region may end exactly
    /// at the top of the address space).
    pub const fn new(iova: u64, len: u64) -> Option<Self> {
        // The last byte, `iova + len - 1`, must be representable.
        if len != 0 && len - 1 > u64::MAX - iova {
            return None;
        }
        Some(Self { iova, len })
    }

    /// The byte offset of `[iova, iova + len)` inside this range, or `None`
    /// if any byte of it falls outside.
    ///
    /// A zero-length access is in bounds anywhere in `[self.iova,
    /// self.iova + self.len]`.
    pub const fn offset_of(&self, iova: u64, len: u64) -> Option<u64> {
        if iova < self.iova {
            return None;
        }
        let off = iova - self.iova;
        if off > self.len {
            return None;
        }
        if len > self.len - off {
            return None;
        }
        Some(off)
    }

    /// Whether `inner` lies entirely inside this range.
    pub const fn contains(&self, inner: &Range) -> bool {
        self.offset_of(inner.iova, inner.len).is_some()
    }
}

/// Splits a byte offset into a region into (page index, offset in page), for
/// a region whose first byte sits `first_offset` bytes into its first page.
/// `page_shift` is the page size's log2 (at most 63).
pub const fn page_of(first_offset: u64, off: u64, page_shift: u32) -> Option<(u64, u64)> {
    let page = 1u64 << page_shift;
    if first_offset >= page {
        return None;
    }
    let abs = match first_offset.checked_add(off) {
        Some(a) => a,
        None => return None,
    };
    Some((abs >> page_shift, abs & (page - 1)))
}

/// Number of pages that `[addr, addr + len)` touches, or `None` on overflow.
pub const fn pages_spanned(addr: u64, len: u64, page_shift: u32) -> Option<u64> {
    if len == 0 {
        return Some(0);
    }
    let page = 1u64 << page_shift;
    let start = addr & !(page - 1);
    let last = match addr.checked_add(len - 1) {
        Some(l) => l,
        None => return None,
    };
    Some(((last - start) >> page_shift) + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_ending_at_the_top_are_valid() {
        assert!(Range::new(u64::MAX, 1).is_some());
        assert!(Range::new(u64::MAX, 2).is_none());
        assert!(Range::new(0, u64::MAX).is_some());
        assert!(
            Range::new(1, u64::MAX).is_some(),
            "ends at exactly u64::MAX"
        );
        assert!(Range::new(2, u64::MAX).is_none());
        assert!(Range::new(u64::MAX, 0).is_some());
    }

    #[test]
    fn offsets_inside() {
        let r = Range::new(0x1000, 0x100).unwrap();
        assert_eq!(r.offset_of(0x1000, 0x100), Some(0));
        assert_eq!(r.offset_of(0x10ff, 1), Some(0xff));
        assert_eq!(
            r.offset_of(0x1100, 0),
            Some(0x100),
            "empty access at the end"
        );
        assert_eq!(r.offset_of(0x1100, 1), None, "one byte past the end");
        assert_eq!(r.offset_of(0x0fff, 1), None, "one byte before");
        assert_eq!(r.offset_of(0x1001, 0x100), None);
    }

    #[test]
    fn no_wrap_near_u64_max() {
        let r = Range::new(u64::MAX - 0xfff, 0x1000).unwrap();
        assert_eq!(r.offset_of(u64::MAX, 1), Some(0xfff));
        assert_eq!(r.offset_of(u64::MAX, 2), None);
        assert_eq!(r.offset_of(u64::MAX - 0xfff, u64::MAX), None);
        // The classic bug: iova + len wraps to a small number that looks in range.
        let low = Range::new(0, 0x1000).unwrap();
        assert_eq!(low.offset_of(0x10, u64::MAX - 0x8), None);
        assert_eq!(low.offset_of(u64::MAX, 2), None);
        assert_eq!(low.offset_of(0x800, u64::MAX), None);
    }

    #[test]
    fn exhaustive_small_ranges_match_a_wide_model() {
        for base in [0u64, 1, 7, u64::MAX - 9] {
            for rlen in 0..10u64 {
                let Some(r) = Range::new(base, rlen) else {
                    continue;
                };
                for d in 0..24u64 {
                    let iova = base.wrapping_add(d).wrapping_sub(4);
                    for len in [0u64, 1, 2, 5, 9, u64::MAX] {
                        let (rs, re) = (base as u128, base as u128 + rlen as u128);
                        let (s, e) = (iova as u128, iova as u128 + len as u128);
                        let model = (s >= rs && e <= re).then(|| (s - rs) as u64);
                        assert_eq!(
                            r.offset_of(iova, len),
                            model,
                            "{base:#x}+{rlen} @ {iova:#x}+{len}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn pages() {
        assert_eq!(page_of(0x10, 0, 12), Some((0, 0x10)));
        assert_eq!(page_of(0x10, 0xff0, 12), Some((1, 0)));
        assert_eq!(page_of(0x1000, 0, 12), None);
        assert_eq!(page_of(0xfff, u64::MAX, 12), None);
        assert_eq!(pages_spanned(0x1000, 0x1000, 12), Some(1));
        assert_eq!(pages_spanned(0x1fff, 2, 12), Some(2));
        assert_eq!(pages_spanned(0x1234, 0, 12), Some(0));
        assert_eq!(pages_spanned(u64::MAX, 1, 12), Some(1));
        assert_eq!(pages_spanned(u64::MAX, 2, 12), None);
        assert_eq!(pages_spanned(0, u64::MAX, 12), Some(1 << 52));
    }
}

/// One piece of a copy that stays within a page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Chunk {
    /// Index of the page in the region's page list.
    pub page: usize,
    /// Offset within that page.
    pub offset: usize,
    /// Bytes in this piece.
    pub len: usize,
    /// Offset of this piece within the whole copy.
    pub pos: usize,
}

/// Splits a copy of `len` bytes starting `off` bytes into a region (whose
/// first byte is `first_offset` into its first page) into page-bounded
/// chunks. The caller has already checked `off + len` against the region.
#[derive(Clone, Debug)]
pub struct Chunks {
    page_shift: u32,
    abs: u64,
    left: usize,
    pos: usize,
}

impl Chunks {
    /// The chunks of `[off, off + len)`; `None` if the arithmetic overflows.
    pub const fn new(first_offset: u64, off: u64, len: usize, page_shift: u32) -> Option<Self> {
        match page_of(first_offset, off, page_shift) {
            None => None,
            Some(_) => match first_offset.checked_add(off) {
                None => None,
                Some(abs) => {
                    if abs.checked_add(len as u64).is_none() {
                        return None;
                    }
                    Some(Self {
                        page_shift,
                        abs,
                        left: len,
                        pos: 0,
                    })
                }
            },
        }
    }
}

impl Iterator for Chunks {
    type Item = Chunk;

    fn next(&mut self) -> Option<Chunk> {
        if self.left == 0 {
            return None;
        }
        let page_size = 1u64 << self.page_shift;
        let page = (self.abs >> self.page_shift) as usize;
        let offset = (self.abs & (page_size - 1)) as usize;
        let room = (page_size as usize) - offset;
        let len = room.min(self.left);
        let c = Chunk {
            page,
            offset,
            len,
            pos: self.pos,
        };
        self.abs += len as u64;
        self.left -= len;
        self.pos += len;
        Some(c)
    }
}

#[cfg(test)]
mod chunk_tests {
    use super::*;

    #[test]
    fn chunks_cover_the_copy_exactly() {
        for first in [0u64, 1, 100, 4095] {
            for off in [0u64, 1, 4095, 4096, 10000] {
                for len in [0usize, 1, 4095, 4096, 4097, 20000] {
                    let cs: std::vec::Vec<Chunk> =
                        Chunks::new(first, off, len, 12).unwrap().collect();
                    let total: usize = cs.iter().map(|c| c.len).sum();
                    assert_eq!(total, len);
                    let mut pos = 0;
                    let mut abs = first + off;
                    for c in &cs {
                        assert_eq!(c.pos, pos);
                        assert!(c.len > 0 && c.offset + c.len <= 4096);
                        assert_eq!(c.page as u64, abs >> 12);
                        assert_eq!(c.offset as u64, abs & 4095);
                        pos += c.len;
                        abs += c.len as u64;
                    }
                }
            }
        }
    }

    #[test]
    fn chunks_refuse_overflow() {
        assert!(
            Chunks::new(4096, 0, 1, 12).is_none(),
            "first offset must be inside a page"
        );
        assert!(Chunks::new(1, u64::MAX, 1, 12).is_none());
        assert!(Chunks::new(0, u64::MAX, 2, 12).is_none());
        assert!(Chunks::new(0, u64::MAX - 1, 1, 12).is_some());
    }
}
