// SPDX-License-Identifier: GPL-2.0

//! The rings rxe shares with userspace (`struct rxe_queue_buf`): a 384-byte
//! header, then a power-of-two number of power-of-two-sized slots.
//!
//! Header: `log2_elem_size` at 0, `index_mask` at 4, the producer index at
//! 128 and the consumer index at 256 (each on its own cache line), slots at
//! 384. Indices are stored masked; the ring is empty when they are equal and
//! full when the producer is one behind the consumer, so it holds
//! `index_mask` entries. The kernel keeps its own copies of the geometry:
//! userspace may rewrite the header at any time.

/// Size of the ring header.
pub const HDR_SIZE: usize = 384;
/// Offset of `log2_elem_size` in the header.
pub const LOG2_ELEM_OFF: usize = 0;
/// Offset of `index_mask` in the header.
pub const INDEX_MASK_OFF: usize = 4;
/// Offset of the producer index.
pub const PRODUCER_OFF: usize = 128;
/// Offset of the consumer index.
pub const CONSUMER_OFF: usize = 256;
/// The smallest slot: a cache line, as rxe (x86_64).
pub const MIN_ELEM: u32 = 64;
/// CQ slots hold the larger of the kernel and user completion layouts,
/// rounded up: 128 bytes.
pub const CQE_SIZE: u32 = 128;

/// The shape of a ring, fixed when it is made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    /// log2 of the slot size.
    pub log2_elem: u32,
    /// Number of slots minus one: the capacity, and the index mask.
    pub index_mask: u32,
}

impl Geometry {
    /// A ring for at least `entries` entries of `elem_size` bytes: slots are
    /// `elem_size` rounded up to a power of two (at least [`MIN_ELEM`]),
    /// and there are `entries + 1` of them rounded up to a power of two.
    /// `None` if the sizes overflow or the ring would exceed `max_bytes`.
    pub fn new(entries: u32, elem_size: u32, max_bytes: usize) -> Option<Self> {
        let elem = elem_size.max(MIN_ELEM).checked_next_power_of_two()?;
        let slots = entries.checked_add(1)?.checked_next_power_of_two()?;
        let g = Self {
            log2_elem: elem.trailing_zeros(),
            index_mask: slots - 1,
        };
        (g.buf_len()? <= max_bytes).then_some(g)
    }

    /// Bytes per slot.
    pub const fn elem_size(&self) -> usize {
        1 << self.log2_elem
    }

    /// Number of slots.
    pub const fn slots(&self) -> usize {
        self.index_mask as usize + 1
    }

    /// Bytes of header and slots.
    pub fn buf_len(&self) -> Option<usize> {
        self.slots()
            .checked_mul(self.elem_size())?
            .checked_add(HDR_SIZE)
    }

    /// Byte offset of the slot for (unmasked) index `i`.
    pub const fn slot_offset(&self, i: u32) -> usize {
        HDR_SIZE + (((i & self.index_mask) as usize) << self.log2_elem)
    }

    /// Entries between a consumer and a producer index, whatever values
    /// userspace left there (masking keeps the result in range).
    pub const fn count(&self, producer: u32, consumer: u32) -> u32 {
        producer.wrapping_sub(consumer) & self.index_mask
    }

    /// Whether one more entry would not fit.
    pub const fn is_full(&self, producer: u32, consumer: u32) -> bool {
        self.count(producer, consumer) == self.index_mask
    }

    /// The index after `i`, masked.
    pub const fn next(&self, i: u32) -> u32 {
        i.wrapping_add(1) & self.index_mask
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAX: usize = 1 << 30;

    #[test]
    fn sizing_as_rxe() {
        let g = Geometry::new(100, CQE_SIZE, MAX).unwrap();
        assert_eq!((g.elem_size(), g.slots(), g.index_mask), (128, 128, 127));
        assert_eq!(g.buf_len(), Some(384 + 128 * 128));
        // n + 1 is rounded: 127 entries fit 128 slots, 128 need 256.
        assert_eq!(Geometry::new(127, 128, MAX).unwrap().slots(), 128);
        assert_eq!(Geometry::new(128, 128, MAX).unwrap().slots(), 256);
        assert_eq!(
            Geometry::new(0, 1, MAX).unwrap(),
            Geometry {
                log2_elem: 6,
                index_mask: 0
            }
        );
        assert_eq!(Geometry::new(1, 1, MAX).unwrap().index_mask, 1);
        // A send queue slot for 32 SGEs: 208 + 512 bytes -> 1024.
        assert_eq!(Geometry::new(16, 720, MAX).unwrap().elem_size(), 1024);
        // rxe's max_cqe: 32767 entries in 32768 slots of 128 bytes.
        assert_eq!(
            Geometry::new(32767, 128, MAX).unwrap().buf_len(),
            Some(384 + (1 << 22))
        );
    }

    #[test]
    fn overflow_and_limits() {
        assert_eq!(Geometry::new(u32::MAX, 128, MAX), None);
        assert_eq!(Geometry::new(1 << 31, 128, MAX), None);
        assert_eq!(Geometry::new(16, u32::MAX, MAX), None);
        assert_eq!(Geometry::new(1 << 20, 1 << 12, MAX), None);
        assert!(Geometry::new((1 << 18) - 1, 1 << 12, MAX).is_none());
        assert!(Geometry::new((1 << 17) - 1, 1 << 12, usize::MAX).is_some());
    }

    #[test]
    fn indices() {
        let g = Geometry::new(7, 64, MAX).unwrap();
        assert_eq!(g.index_mask, 7);
        assert_eq!(g.count(0, 0), 0);
        assert_eq!(g.count(3, 0), 3);
        assert_eq!(g.count(0, 3), 5);
        assert!(g.is_full(7, 0));
        assert!(g.is_full(2, 3));
        assert!(!g.is_full(3, 3));
        assert_eq!(g.next(7), 0);
        // Hostile, unmasked values stay in range.
        assert_eq!(g.count(u32::MAX, 0), 7);
        assert!(g.count(0x1234_5678, 0xdead_beef) <= 7);
        assert_eq!(g.slot_offset(9), 384 + 64);
        assert_eq!(g.slot_offset(u32::MAX), 384 + 7 * 64);
    }
}
