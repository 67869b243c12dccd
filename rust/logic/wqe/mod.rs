// SPDX-License-Identifier: GPL-2.0

//! Work queue entries in the rxe layout (`rdma_user_rxe.h`): the layout's
//! offsets, the send opcodes and SGEs shared by every WQE, with send WQEs
//! parsed in `send`, receive WQEs in `recv`, the address vector of older
//! UD WQEs in `av`, and the kernel's own WQEs written in `encode`.
//!
//! WQEs are parsed from a private copy of the slot. Userspace writes them,
//! so every field is hostile: the opcode is range-checked first, then
//! checked against the QP type; the SGE count is bounded by the QP's
//! capacity and by the slot; lengths are summed with overflow checks;
//! nothing is trusted that can be recomputed.

use super::wqe_layout::*;

mod av;
mod encode;
mod recv;
mod send;

pub use av::{encode_legacy_av, legacy_av, LegacyAv};
pub use encode::{encode_recv, encode_send, SendFields};
pub use recv::{parse_recv, RecvWqe};
pub use send::{atomic_write_value, parse_send, Payload, SendWqe, WrDetail};

/// The destination QPN of multicast datagrams.
pub const MCAST_QPN: u32 = 0x00ff_ffff;

/// `struct rxe_send_wqe` up to its SGEs / inline data.
pub const SEND_HDR: usize = 208;
/// `struct rxe_recv_wqe` up to its SGEs.
pub const RECV_HDR: usize = 40;
/// `struct rxe_sge`.
pub const SGE: usize = 16;

/// `IB_SEND_FENCE`.
pub const SEND_FENCE: u32 = 1 << 0;
/// `IB_SEND_SIGNALED`.
pub const SEND_SIGNALED: u32 = 1 << 1;
/// `IB_SEND_SOLICITED`.
pub const SEND_SOLICITED: u32 = 1 << 2;
/// `IB_SEND_INLINE`.
pub const SEND_INLINE: u32 = 1 << 3;

/// Largest message: 2^31 bytes (the port's `max_msg_sz`).
pub const MAX_MSG: u64 = 1 << 31;

/// The transports, as far as WQEs care.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    /// Reliable connected.
    Rc,
    /// Unreliable connected.
    Uc,
    /// Unreliable datagram (and GSI).
    Ud,
    /// XRC's initiator: RC's requests, each for the XRC SRQ its WQE
    /// names.
    Xrc,
}

/// Send opcodes userspace may post (`enum ib_uverbs_wr_opcode`) that rxe
/// implements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Opcode {
    /// RDMA write.
    RdmaWrite,
    /// RDMA write with immediate.
    RdmaWriteImm,
    /// Send.
    Send,
    /// Send with immediate.
    SendImm,
    /// RDMA read.
    RdmaRead,
    /// Atomic compare and swap.
    CmpSwap,
    /// Atomic fetch and add.
    FetchAdd,
    /// Local invalidate.
    LocalInv,
    /// Bind a memory window.
    BindMw,
    /// Send with invalidate.
    SendInv,
    /// Flush.
    Flush,
    /// Atomic write.
    AtomicWrite,
    /// Fast registration of an MR (kernel QPs only).
    RegMr,
}

impl Opcode {
    /// From the WQE's value; `None` for anything rxe does not implement.
    pub const fn from_raw(v: u32) -> Option<Self> {
        Some(match v {
            0 => Self::RdmaWrite,
            1 => Self::RdmaWriteImm,
            2 => Self::Send,
            3 => Self::SendImm,
            4 => Self::RdmaRead,
            5 => Self::CmpSwap,
            6 => Self::FetchAdd,
            7 => Self::LocalInv,
            8 => Self::BindMw,
            9 => Self::SendInv,
            14 => Self::Flush,
            15 => Self::AtomicWrite,
            0x20 => Self::RegMr,
            _ => return None,
        })
    }

    /// Whether a QP of transport `t` may post it (rxe's tables).
    pub const fn allowed_on(self, t: Transport) -> bool {
        match t {
            Transport::Ud => matches!(self, Self::Send | Self::SendImm),
            Transport::Uc => matches!(
                self,
                Self::RdmaWrite
                    | Self::RdmaWriteImm
                    | Self::Send
                    | Self::SendImm
                    | Self::LocalInv
                    | Self::BindMw
            ),
            Transport::Rc => true,
            // XRC's opcodes are RC's up to SEND WITH INVALIDATE.
            Transport::Xrc => !matches!(self, Self::Flush | Self::AtomicWrite),
        }
    }

    /// The `enum ib_wc_opcode` of its completion.
    pub const fn wc_opcode(self) -> u32 {
        match self {
            Self::RdmaWrite | Self::RdmaWriteImm => 1,
            Self::Send | Self::SendImm | Self::SendInv => 0,
            Self::RdmaRead => 2,
            Self::CmpSwap => 3,
            Self::FetchAdd => 4,
            Self::BindMw => 5,
            Self::LocalInv => 6,
            Self::Flush => 8,
            Self::AtomicWrite => 9,
            Self::RegMr => 10,
        }
    }

    /// Whether it carries data from SGEs or inline (as opposed to none or
    /// the atomic operands).
    pub const fn has_payload(self) -> bool {
        matches!(
            self,
            Self::RdmaWrite
                | Self::RdmaWriteImm
                | Self::Send
                | Self::SendImm
                | Self::SendInv
                | Self::RdmaRead
        )
    }
}

/// `enum ib_wc_opcode` of receive completions.
pub const WC_RECV: u32 = 1 << 7;
/// `enum ib_wc_opcode` of a received RDMA write with immediate.
pub const WC_RECV_RDMA_WITH_IMM: u32 = (1 << 7) + 1;

/// A scatter/gather entry.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sge {
    /// Address in the MR's space.
    pub addr: u64,
    /// Length.
    pub length: u32,
    /// Local key.
    pub lkey: u32,
}

/// Why a WQE is refused (the WQE completes with an error).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WqeError {
    /// The slot is too small for the header.
    Short,
    /// Unknown opcode, or not allowed on this QP type.
    Opcode,
    /// More SGEs than the QP allows or the slot holds.
    TooManySge,
    /// Inline data larger than the QP allows.
    InlineTooLong,
    /// Total length above the maximum message size.
    TooLong,
}

fn u32_at(b: &[u8], off: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(off..off + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], off: usize) -> Option<u64> {
    Some(u64::from_ne_bytes(b.get(off..off + 8)?.try_into().ok()?))
}

/// The work request's id, valid in any slot (for flushing).
pub fn wr_id(slot: &[u8]) -> Option<u64> {
    u64_at(slot, WR_ID)
}

/// The raw opcode of a send WQE (for flushing).
pub fn raw_opcode(slot: &[u8]) -> Option<u32> {
    u32_at(slot, OPCODE)
}

/// The SGE at index `i` of a WQE whose SGEs start at `base`.
pub fn sge_at(slot: &[u8], base: usize, i: u32) -> Option<Sge> {
    let off = base.checked_add((i as usize).checked_mul(SGE)?)?;
    Some(Sge {
        addr: u64_at(slot, off + SGE_ADDR)?,
        length: u32_at(slot, off + SGE_LENGTH)?,
        lkey: u32_at(slot, off + SGE_LKEY)?,
    })
}

fn sum_sges(slot: &[u8], base: usize, n: u32) -> Result<u64, WqeError> {
    let mut total = 0u64;
    for i in 0..n {
        let s = sge_at(slot, base, i).ok_or(WqeError::TooManySge)?;
        total += u64::from(s.length);
    }
    if total > MAX_MSG {
        return Err(WqeError::TooLong);
    }
    Ok(total)
}

/// Slot builders for the tests.
#[cfg(test)]
mod testing {
    use super::*;

    pub(super) fn put32(b: &mut [u8], o: usize, v: u32) {
        b[o..o + 4].copy_from_slice(&v.to_ne_bytes());
    }
    pub(super) fn put64(b: &mut [u8], o: usize, v: u64) {
        b[o..o + 8].copy_from_slice(&v.to_ne_bytes());
    }
    pub(super) fn send_slot(op: u32, flags: u32, sges: &[(u64, u32, u32)]) -> [u8; 512] {
        let mut b = [0u8; 512];
        put64(&mut b, 0, 0xfeed);
        put32(&mut b, OPCODE, op);
        put32(&mut b, SEND_FLAGS, flags);
        put32(&mut b, SEND_DMA + DMA_NUM_SGE, sges.len() as u32);
        for (i, s) in sges.iter().enumerate() {
            put64(&mut b, SEND_HDR + i * 16, s.0);
            put32(&mut b, SEND_HDR + i * 16 + 8, s.1);
            put32(&mut b, SEND_HDR + i * 16 + 12, s.2);
        }
        b
    }
}
