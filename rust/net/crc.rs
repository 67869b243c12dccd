// SPDX-License-Identifier: GPL-2.0

//! The kernel's CRC-32 (`lib/crc`), which uses the CPU's carry-less
//! multiply where it has one (PCLMULQDQ on x86).

use crate::bindings;
use crate::logic::icrc::Backend;

/// The running CRC-32 `crc` after `data`: the reflected Ethernet CRC,
/// neither seed nor result complemented (the kernel's `crc32_le`).
pub fn crc32_le(crc: u32, data: &[u8]) -> u32 {
    // SAFETY: `data` is valid for reads of `data.len()` bytes for the whole
    // call; `crc32_le` only reads them and may run in any context.
    unsafe { bindings::crc32_le(crc, data.as_ptr().cast(), data.len()) }
}

/// [`crc32_le`] as the ICRC's CRC-32 engine.
#[derive(Clone, Copy, Debug, Default)]
pub struct Kernel;

impl Backend for Kernel {
    fn crc32_le(crc: u32, data: &[u8]) -> u32 {
        crc32_le(crc, data)
    }
}
