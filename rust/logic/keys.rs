// SPDX-License-Identifier: GPL-2.0

//! Memory keys as rxe makes them: `lkey == rkey == (index << 8) | key8`.
//!
//! MR and MW indices come from disjoint ranges, so a key alone tells which
//! kind of object it names (LOCAL_INV and SEND_WITH_INV rely on this).

use super::limits::{MAX_MR_INDEX, MAX_MW_INDEX, MIN_MR_INDEX, MIN_MW_INDEX};

/// What a key's index range says it names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyKind {
    /// A memory region.
    Mr,
    /// A memory window.
    Mw,
}

/// Composes a key from an object index and the 8-bit variant.
///
/// Returns `None` if `index` does not fit the 24 bits a key has for it.
pub const fn make_key(index: u32, key8: u8) -> Option<u32> {
    if index >= 1 << 24 {
        return None;
    }
    Some((index << 8) | key8 as u32)
}

/// The object index of a key.
pub const fn key_index(key: u32) -> u32 {
    key >> 8
}

/// The 8-bit variant of a key.
pub const fn key8(key: u32) -> u8 {
    key as u8
}

/// Classifies a key by its index range; `None` for indices outside both.
pub const fn key_kind(key: u32) -> Option<KeyKind> {
    let i = key_index(key);
    if i >= MIN_MR_INDEX && i <= MAX_MR_INDEX {
        Some(KeyKind::Mr)
    } else if i >= MIN_MW_INDEX && i <= MAX_MW_INDEX {
        Some(KeyKind::Mw)
    } else {
        None
    }
}

/// The rkey a type 1 bind asks for, as librxe computes it: the same index,
/// the low byte incremented (wrapping).
pub const fn next_bind_key(key: u32) -> u32 {
    (key & !0xff) | (key.wrapping_add(1) & 0xff)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compose_and_split() {
        let k = make_key(0x12_3456, 0x9a).unwrap();
        assert_eq!(k, 0x1234_569a);
        assert_eq!(key_index(k), 0x12_3456);
        assert_eq!(key8(k), 0x9a);
        assert_eq!(make_key(1 << 24, 0), None);
        assert_eq!(make_key((1 << 24) - 1, 0xff), Some(u32::MAX));
    }

    #[test]
    fn kinds_by_range() {
        assert_eq!(
            key_kind(make_key(MIN_MR_INDEX, 0).unwrap()),
            Some(KeyKind::Mr)
        );
        assert_eq!(
            key_kind(make_key(MAX_MR_INDEX, 0xff).unwrap()),
            Some(KeyKind::Mr)
        );
        assert_eq!(
            key_kind(make_key(MIN_MW_INDEX, 0).unwrap()),
            Some(KeyKind::Mw)
        );
        assert_eq!(
            key_kind(make_key(MAX_MW_INDEX, 7).unwrap()),
            Some(KeyKind::Mw)
        );
        assert_eq!(key_kind(0), None, "index 0 is the reserved local DMA lkey");
        assert_eq!(key_kind(make_key(MAX_MW_INDEX + 1, 0).unwrap()), None);
        assert_eq!(key_kind(u32::MAX), None);
    }

    #[test]
    fn bind_key_rotates_only_the_low_byte() {
        assert_eq!(next_bind_key(0x0008_0001), 0x0008_0002);
        assert_eq!(next_bind_key(0x0008_00ff), 0x0008_0000);
        assert_eq!(next_bind_key(u32::MAX), 0xffff_ff00);
    }
}
