// SPDX-License-Identifier: GPL-2.0

//! Device memory sizing rules: the `dm_size` parameter and allocation
//! requests, checked without overflow.

/// Largest `dm_size` a device accepts (1 GiB): device memory is ordinary
/// kernel memory here, and a typo should not pin the machine's RAM.
pub const MAX_DM_SIZE: u64 = 1 << 30;

/// Why a device memory request is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DmError {
    /// The device has no device memory (`dm_size` is 0).
    Off,
    /// Zero length, more than the device has, or an alignment above a page.
    Invalid,
}

/// Checks a `dm_size` value: at most [`MAX_DM_SIZE`] and a multiple of the
/// page size (the unit the memory is mapped in).
pub fn check_dm_size(bytes: u64, page_size: u64) -> bool {
    bytes <= MAX_DM_SIZE && page_size.is_power_of_two() && bytes.is_multiple_of(page_size)
}

/// Checks an allocation of `length` bytes aligned to `1 << log_align` on a
/// device with `max` bytes of device memory, and returns what it costs:
/// `length` rounded up to whole pages. Every allocation starts at offset 0
/// of its own page-aligned mapping, so alignments up to a page hold.
pub fn charge(length: u64, log_align: u32, max: u64, page_shift: u32) -> Result<u64, DmError> {
    if max == 0 {
        return Err(DmError::Off);
    }
    if length == 0 || length > max || log_align > page_shift || page_shift >= 63 {
        return Err(DmError::Invalid);
    }
    let page = 1u64 << page_shift;
    // `length <= max <= u64::MAX`, but rounding up may still wrap for a
    // `max` near u64::MAX: checked.
    length
        .checked_next_multiple_of(page)
        .ok_or(DmError::Invalid)
}

/// Adds `charge` to `used` if the total stays within `max`.
pub fn reserve(used: u64, charge: u64, max: u64) -> Option<u64> {
    used.checked_add(charge).filter(|&t| t <= max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dm_size_values() {
        assert!(check_dm_size(0, 4096));
        assert!(check_dm_size(4096, 4096));
        assert!(check_dm_size(MAX_DM_SIZE, 4096));
        assert!(!check_dm_size(MAX_DM_SIZE + 4096, 4096));
        assert!(!check_dm_size(100, 4096));
        assert!(!check_dm_size(u64::MAX, 4096));
        assert!(!check_dm_size(4096, 0));
    }

    #[test]
    fn charges_round_to_pages() {
        assert_eq!(charge(1, 0, 65536, 12), Ok(4096));
        assert_eq!(charge(4096, 12, 65536, 12), Ok(4096));
        assert_eq!(charge(4097, 2, 65536, 12), Ok(8192));
        assert_eq!(charge(65536, 0, 65536, 12), Ok(65536));
    }

    #[test]
    fn bad_requests() {
        assert_eq!(charge(4, 0, 0, 12), Err(DmError::Off));
        assert_eq!(charge(0, 0, 65536, 12), Err(DmError::Invalid));
        assert_eq!(charge(65537, 0, 65536, 12), Err(DmError::Invalid));
        assert_eq!(charge(4, 13, 65536, 12), Err(DmError::Invalid));
        assert_eq!(charge(4, u32::MAX, 65536, 12), Err(DmError::Invalid));
        // A length whose page round-up wraps u64.
        assert_eq!(charge(u64::MAX - 1, 0, u64::MAX, 12), Err(DmError::Invalid));
    }

    #[test]
    fn reservations() {
        assert_eq!(reserve(0, 4096, 4096), Some(4096));
        assert_eq!(reserve(4096, 4096, 4096), None);
        assert_eq!(reserve(u64::MAX, 1, u64::MAX), None);
        assert_eq!(reserve(8192, 4096, 16384), Some(12288));
    }
}
