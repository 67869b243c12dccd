// SPDX-License-Identifier: GPL-2.0

//! Send WQEs: the operation-specific fields and the payload of a WQE in
//! the rxe layout, parsed and validated for the QP's transport and
//! capacities.

use super::super::wqe_layout::*;
use super::{
    sum_sges, u32_at, u64_at, Opcode, Transport, WqeError, DMA_LENGTH, DMA_NUM_SGE, EX, OPCODE,
    SEND_DMA, SEND_FLAGS, SEND_HDR, SEND_INLINE, SGE, WR, WR_ID,
};

/// The operation-specific part of a send WQE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WrDetail {
    /// Nothing beyond the payload (sends).
    None,
    /// RDMA read/write and flush: the remote address and key.
    Rdma {
        /// Remote address.
        remote_addr: u64,
        /// Remote key.
        rkey: u32,
    },
    /// Atomics.
    Atomic {
        /// Remote address.
        remote_addr: u64,
        /// Compare (CAS) or add (FAA) operand.
        compare_add: u64,
        /// Swap operand.
        swap: u64,
        /// Remote key.
        rkey: u32,
    },
    /// UD sends.
    Ud {
        /// Destination QP.
        remote_qpn: u32,
        /// Q_Key.
        remote_qkey: u32,
        /// P_Key index.
        pkey_index: u16,
        /// AH number (0: the address vector is embedded in the WQE).
        ah_num: u32,
    },
    /// Memory window bind.
    Mw {
        /// Window start.
        addr: u64,
        /// Window length.
        length: u64,
        /// The MR's lkey.
        mr_lkey: u32,
        /// The window's current rkey.
        mw_rkey: u32,
        /// The new rkey.
        rkey: u32,
        /// Window access.
        access: u32,
    },
    /// Flush: the range, its key, the placement type and the level.
    Flush {
        /// Remote address.
        remote_addr: u64,
        /// Length.
        length: u32,
        /// Remote key.
        rkey: u32,
        /// `IB_FLUSH_GLOBAL`/`IB_FLUSH_PERSISTENT` bits.
        ty: u8,
        /// `IB_FLUSH_RANGE` (0) or `IB_FLUSH_MR` (1).
        level: u8,
    },
    /// Fast registration: the MR (by its key's index), its new key and
    /// access. Not part of the user ABI: only kernel QPs encode it.
    Reg {
        /// The MR's key (its index is what counts).
        mr_key: u32,
        /// The key it answers to from now on.
        key: u32,
        /// Its access flags from now on.
        access: u32,
        /// The address the mapping answers to from now on (the MR's
        /// `iova` when the request was posted, which the consumer may
        /// change after mapping).
        iova: u64,
    },
    /// Local invalidate: the key.
    Inv {
        /// Key to invalidate.
        rkey: u32,
    },
}

/// Where a send WQE's data comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Payload {
    /// `n` SGEs, starting at [`SEND_HDR`] in the slot.
    Sges {
        /// Number of SGEs.
        n: u32,
        /// Their total length.
        length: u64,
    },
    /// `len` inline bytes at [`SEND_HDR`].
    Inline {
        /// Length.
        len: u32,
    },
}

impl Payload {
    /// The message length: the inline bytes, or the SGEs' total.
    pub fn bytes(self) -> u64 {
        match self {
            Payload::Inline { len } => u64::from(len),
            Payload::Sges { length, .. } => length,
        }
    }
}

/// A validated send WQE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SendWqe {
    /// Work request id.
    pub wr_id: u64,
    /// Operation.
    pub opcode: Opcode,
    /// `IB_SEND_*` flags.
    pub send_flags: u32,
    /// Immediate data (as stored, network order) or invalidate key.
    pub ex: u32,
    /// Operation-specific fields.
    pub detail: WrDetail,
    /// Data.
    pub payload: Payload,
    /// The XRC SRQ its message is for (an XRC initiator QP's WQE).
    pub xrc_srqn: Option<u32>,
}

/// The 8-byte operand of an ATOMIC WRITE, stored where the SGEs would be.
pub fn atomic_write_value(slot: &[u8]) -> Option<[u8; 8]> {
    slot.get(SEND_HDR..SEND_HDR + 8)?.try_into().ok()
}

/// Parses and validates a send WQE copied from a slot, for a QP of
/// transport `t` with capacities `max_sge` and `max_inline`.
pub fn parse_send(
    slot: &[u8],
    t: Transport,
    max_sge: u32,
    max_inline: u32,
) -> Result<SendWqe, WqeError> {
    if slot.len() < SEND_HDR {
        return Err(WqeError::Short);
    }
    let get32 = |o| u32_at(slot, o).ok_or(WqeError::Short);
    let opcode = Opcode::from_raw(get32(OPCODE)?).ok_or(WqeError::Opcode)?;
    if !opcode.allowed_on(t) {
        return Err(WqeError::Opcode);
    }
    let send_flags = get32(SEND_FLAGS)?;
    let ex = get32(EX)?;
    let detail = detail(slot, opcode, t, ex)?;
    let payload = payload(slot, opcode, send_flags, max_sge, max_inline)?;
    Ok(SendWqe {
        wr_id: u64_at(slot, WR_ID).ok_or(WqeError::Short)?,
        opcode,
        send_flags,
        ex,
        detail,
        payload,
        xrc_srqn: match t {
            Transport::Xrc => Some(get32(XRC_SRQN)? & 0x00ff_ffff),
            _ => None,
        },
    })
}

/// The operation-specific fields of a WQE of `opcode` on transport `t`,
/// whose `ex` field is `ex`.
fn detail(slot: &[u8], opcode: Opcode, t: Transport, ex: u32) -> Result<WrDetail, WqeError> {
    let get32 = |o| u32_at(slot, o).ok_or(WqeError::Short);
    let get64 = |o| u64_at(slot, o).ok_or(WqeError::Short);
    Ok(match opcode {
        Opcode::Send | Opcode::SendImm | Opcode::SendInv if t == Transport::Ud => WrDetail::Ud {
            remote_qpn: get32(WR + WR_UD_REMOTE_QPN)? & 0x00ff_ffff,
            remote_qkey: get32(WR + WR_UD_REMOTE_QKEY)?,
            pkey_index: get32(WR + WR_UD_PKEY_INDEX)? as u16,
            ah_num: get32(WR + WR_UD_AH_NUM)?,
        },
        Opcode::Send | Opcode::SendImm => WrDetail::None,
        Opcode::SendInv => WrDetail::Inv { rkey: ex },
        Opcode::RdmaWrite | Opcode::RdmaWriteImm | Opcode::RdmaRead => WrDetail::Rdma {
            remote_addr: get64(WR + WR_REMOTE_ADDR)?,
            rkey: get32(WR + WR_RDMA_RKEY)?,
        },
        Opcode::Flush => {
            let sel = get32(WR + WR_FLUSH_TYPE)?;
            WrDetail::Flush {
                remote_addr: get64(WR + WR_REMOTE_ADDR)?,
                // librxe's ibv_wr_flush() puts the length in `dma.length`
                // (and `dma.resid`, which rxe sends), not in
                // `wr.flush.length`.
                length: get32(SEND_DMA + DMA_LENGTH)?,
                rkey: get32(WR + WR_FLUSH_RKEY)?,
                ty: sel as u8,
                level: (sel >> 8) as u8,
            }
        }
        Opcode::CmpSwap | Opcode::FetchAdd => WrDetail::Atomic {
            remote_addr: get64(WR + WR_REMOTE_ADDR)?,
            compare_add: get64(WR + WR_ATOMIC_COMPARE_ADD)?,
            swap: get64(WR + WR_ATOMIC_SWAP)?,
            rkey: get32(WR + WR_ATOMIC_RKEY)?,
        },
        Opcode::AtomicWrite => WrDetail::Rdma {
            remote_addr: get64(WR + WR_REMOTE_ADDR)?,
            rkey: get32(WR + WR_RDMA_RKEY)?,
        },
        Opcode::LocalInv => WrDetail::Inv { rkey: ex },
        Opcode::RegMr => WrDetail::Reg {
            mr_key: get32(WR + WR_REG_MR_KEY)?,
            key: get32(WR + WR_REG_KEY)?,
            access: get32(WR + WR_REG_ACCESS)?,
            iova: get64(WR + WR_REG_IOVA)?,
        },
        Opcode::BindMw => WrDetail::Mw {
            addr: get64(WR + WR_MW_ADDR)?,
            length: get64(WR + WR_MW_LENGTH)?,
            mr_lkey: get32(WR + WR_MW_MR_LKEY)?,
            mw_rkey: get32(WR + WR_MW_MW_RKEY)?,
            rkey: get32(WR + WR_MW_RKEY)?,
            access: get32(WR + WR_MW_ACCESS)?,
        },
    })
}

/// The payload of a WQE of `opcode` with `send_flags`, for a QP of
/// capacities `max_sge` and `max_inline`.
fn payload(
    slot: &[u8],
    opcode: Opcode,
    send_flags: u32,
    max_sge: u32,
    max_inline: u32,
) -> Result<Payload, WqeError> {
    let get32 = |o| u32_at(slot, o).ok_or(WqeError::Short);
    if !opcode.has_payload() {
        return Ok(Payload::Sges { n: 0, length: 0 });
    }
    if send_flags & SEND_INLINE != 0 && opcode != Opcode::RdmaRead {
        // librxe's inline list builder leaves `dma.length` 0; rxe sends what
        // it says, bounded here by the QP's inline capacity and the slot.
        let len = get32(SEND_DMA + DMA_LENGTH)?;
        if len > max_inline || SEND_HDR + len as usize > slot.len() {
            return Err(WqeError::InlineTooLong);
        }
        return Ok(Payload::Inline { len });
    }
    let n = get32(SEND_DMA + DMA_NUM_SGE)?;
    if n > max_sge || SEND_HDR + n as usize * SGE > slot.len() {
        return Err(WqeError::TooManySge);
    }
    // The total is recomputed, not taken from `dma.length` (which librxe's
    // SGE list builder gets wrong).
    Ok(Payload::Sges {
        n,
        length: sum_sges(slot, SEND_HDR, n)?,
    })
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::super::*;
    use super::*;

    #[test]
    fn send_on_each_transport() {
        let b = send_slot(
            2,
            SEND_SIGNALED,
            &[(0x1000, 100, 0x105), (0x2000, 28, 0x105)],
        );
        let w = parse_send(&b, Transport::Rc, 4, 0).unwrap();
        assert_eq!(
            (w.wr_id, w.opcode, w.payload),
            (0xfeed, Opcode::Send, Payload::Sges { n: 2, length: 128 })
        );
        assert_eq!(
            sge_at(&b, SEND_HDR, 1),
            Some(Sge {
                addr: 0x2000,
                length: 28,
                lkey: 0x105
            })
        );
        let mut u = b;
        put32(&mut u, WR, 0xff00_0042);
        put32(&mut u, WR + 12, 7);
        let w = parse_send(&u, Transport::Ud, 4, 0).unwrap();
        assert_eq!(
            w.detail,
            WrDetail::Ud {
                remote_qpn: 0x42,
                remote_qkey: 0,
                pkey_index: 0,
                ah_num: 7
            }
        );
    }

    #[test]
    fn opcodes_are_checked_first() {
        for bad in [10, 11, 12, 13, 16, 0x21, u32::MAX] {
            assert_eq!(
                parse_send(&send_slot(bad, 0, &[]), Transport::Rc, 4, 0),
                Err(WqeError::Opcode)
            );
        }
        // Fast registration parses on RC (the provider refuses it from user
        // QPs), nowhere else.
        assert!(matches!(
            parse_send(&send_slot(0x20, 0, &[]), Transport::Rc, 4, 0),
            Ok(SendWqe {
                opcode: Opcode::RegMr,
                ..
            })
        ));
        assert_eq!(
            parse_send(&send_slot(0x20, 0, &[]), Transport::Uc, 4, 0),
            Err(WqeError::Opcode)
        );
        // Reads and atomics are RC only; UD only sends.
        assert_eq!(
            parse_send(&send_slot(4, 0, &[]), Transport::Uc, 4, 0),
            Err(WqeError::Opcode)
        );
        assert_eq!(
            parse_send(&send_slot(0, 0, &[]), Transport::Ud, 4, 0),
            Err(WqeError::Opcode)
        );
        assert!(parse_send(&send_slot(0, 0, &[]), Transport::Uc, 4, 0).is_ok());
        assert_eq!(Opcode::FetchAdd.wc_opcode(), 4);
    }

    #[test]
    fn hostile_counts_and_lengths() {
        let mut b = send_slot(2, 0, &[]);
        put32(&mut b, SEND_DMA + DMA_NUM_SGE, 5);
        assert_eq!(
            parse_send(&b, Transport::Rc, 4, 0),
            Err(WqeError::TooManySge)
        );
        put32(&mut b, SEND_DMA + DMA_NUM_SGE, u32::MAX);
        assert_eq!(
            parse_send(&b, Transport::Rc, u32::MAX, 0),
            Err(WqeError::TooManySge)
        );
        // 19 SGEs fill a 512-byte slot (208 + 304); 20 do not fit.
        put32(&mut b, SEND_DMA + DMA_NUM_SGE, 19);
        assert!(parse_send(&b, Transport::Rc, 32, 0).is_ok());
        put32(&mut b, SEND_DMA + DMA_NUM_SGE, 20);
        assert_eq!(
            parse_send(&b, Transport::Rc, 32, 0),
            Err(WqeError::TooManySge)
        );
        // Lengths sum past 2^31.
        let big = send_slot(2, 0, &[(0, u32::MAX, 1), (0, u32::MAX, 1)]);
        assert_eq!(
            parse_send(&big, Transport::Rc, 4, 0),
            Err(WqeError::TooLong)
        );
        // A lying dma.length is ignored.
        let mut l = send_slot(2, 0, &[(0, 10, 1)]);
        put32(&mut l, SEND_DMA + DMA_LENGTH, 999_999);
        assert_eq!(
            parse_send(&l, Transport::Rc, 4, 0).unwrap().payload,
            Payload::Sges { n: 1, length: 10 }
        );
        assert_eq!(
            parse_send(&[0u8; 100], Transport::Rc, 4, 0),
            Err(WqeError::Short)
        );
    }

    #[test]
    fn inline() {
        let mut b = send_slot(2, SEND_INLINE, &[]);
        put32(&mut b, SEND_DMA + DMA_LENGTH, 64);
        assert_eq!(
            parse_send(&b, Transport::Rc, 1, 64).unwrap().payload,
            Payload::Inline { len: 64 }
        );
        assert_eq!(
            parse_send(&b, Transport::Rc, 1, 63),
            Err(WqeError::InlineTooLong)
        );
        put32(&mut b, SEND_DMA + DMA_LENGTH, 400);
        assert_eq!(
            parse_send(&b, Transport::Rc, 1, 512),
            Err(WqeError::InlineTooLong)
        );
    }

    #[test]
    fn flush_length_is_the_dma_length() {
        // As librxe's ibv_wr_flush() writes it: dma.length, and
        // wr.flush.length left alone.
        let mut b = send_slot(14, SEND_SIGNALED, &[]);
        put64(&mut b, WR + WR_REMOTE_ADDR, 0x7000);
        put32(&mut b, WR + WR_FLUSH_LENGTH, 7);
        put32(&mut b, WR + WR_FLUSH_RKEY, 0x1234);
        put32(&mut b, WR + WR_FLUSH_TYPE, 0x0101);
        put32(&mut b, SEND_DMA + DMA_LENGTH, 8192);
        let w = parse_send(&b, Transport::Rc, 4, 0).unwrap();
        assert_eq!(
            w.detail,
            WrDetail::Flush {
                remote_addr: 0x7000,
                length: 8192,
                rkey: 0x1234,
                ty: 1,
                level: 1
            }
        );
    }

    #[test]
    fn xrc_wqes_name_their_srq() {
        // The SRQ number is the low 24 bits of the word after wr_id, read
        // on XRC only.
        let mut b = send_slot(2, SEND_SIGNALED, &[(0x1000, 64, 0x105)]);
        put32(&mut b, XRC_SRQN, 0xab02_0001);
        let w = parse_send(&b, Transport::Xrc, 4, 0).unwrap();
        assert_eq!((w.opcode, w.xrc_srqn), (Opcode::Send, Some(0x02_0001)));
        assert_eq!(parse_send(&b, Transport::Rc, 4, 0).unwrap().xrc_srqn, None);
        // XRC has RC's opcodes but FLUSH (14) and ATOMIC WRITE (15).
        for (op, ok) in [
            (0, true),
            (2, true),
            (4, true),
            (5, true),
            (9, true),
            (14, false),
            (15, false),
        ] {
            let r = parse_send(&send_slot(op, 0, &[]), Transport::Xrc, 4, 0);
            assert_eq!(r.is_ok(), ok, "opcode {op}: {r:?}");
        }
    }
}
