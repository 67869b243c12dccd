// SPDX-License-Identifier: GPL-2.0

//! Work queue entries in the rxe layout (`rdma_user_rxe.h`), parsed from a
//! private copy of the slot. Userspace writes these, so every field is
//! hostile: the opcode is range-checked first, then checked against the QP
//! type; the SGE count is bounded by the QP's capacity and by the slot;
//! lengths are summed with overflow checks; nothing is trusted that can be
//! recomputed.

/// The destination QPN of multicast datagrams.
pub const MCAST_QPN: u32 = 0x00ff_ffff;

/// `struct rxe_send_wqe` up to its SGEs / inline data.
pub const SEND_HDR: usize = 208;
/// `struct rxe_recv_wqe` up to its SGEs.
pub const RECV_HDR: usize = 40;
/// `struct rxe_sge`.
pub const SGE: usize = 16;

const WR_ID: usize = 0;
const OPCODE: usize = 12;
const SEND_FLAGS: usize = 16;
const EX: usize = 20;
const WR: usize = 24;
/// `dma` in a send WQE.
const SEND_DMA: usize = 184;
/// `dma` in a receive WQE.
const RECV_DMA: usize = 16;
// Offsets inside `struct rxe_dma_info`.
const DMA_LENGTH: usize = 0;
const DMA_NUM_SGE: usize = 12;

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
}

/// The 8-byte operand of an ATOMIC WRITE, stored where the SGEs would be.
pub fn atomic_write_value(slot: &[u8]) -> Option<[u8; 8]> {
    slot.get(SEND_HDR..SEND_HDR + 8)?.try_into().ok()
}

/// The SGE at index `i` of a WQE whose SGEs start at `base`.
pub fn sge_at(slot: &[u8], base: usize, i: u32) -> Option<Sge> {
    let off = base.checked_add((i as usize).checked_mul(SGE)?)?;
    Some(Sge {
        addr: u64_at(slot, off)?,
        length: u32_at(slot, off + 8)?,
        lkey: u32_at(slot, off + 12)?,
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
    let get64 = |o| u64_at(slot, o).ok_or(WqeError::Short);
    let opcode = Opcode::from_raw(get32(OPCODE)?).ok_or(WqeError::Opcode)?;
    if !opcode.allowed_on(t) {
        return Err(WqeError::Opcode);
    }
    let send_flags = get32(SEND_FLAGS)?;
    let ex = get32(EX)?;
    let detail = match opcode {
        Opcode::Send | Opcode::SendImm | Opcode::SendInv if t == Transport::Ud => WrDetail::Ud {
            remote_qpn: get32(WR)? & 0x00ff_ffff,
            remote_qkey: get32(WR + 4)?,
            pkey_index: get32(WR + 8)? as u16,
            ah_num: get32(WR + 12)?,
        },
        Opcode::Send | Opcode::SendImm => WrDetail::None,
        Opcode::SendInv => WrDetail::Inv { rkey: ex },
        Opcode::RdmaWrite | Opcode::RdmaWriteImm | Opcode::RdmaRead => WrDetail::Rdma {
            remote_addr: get64(WR)?,
            rkey: get32(WR + 8)?,
        },
        Opcode::Flush => {
            let sel = get32(WR + 16)?;
            WrDetail::Flush {
                remote_addr: get64(WR)?,
                length: get32(WR + 8)?,
                rkey: get32(WR + 12)?,
                ty: sel as u8,
                level: (sel >> 8) as u8,
            }
        }
        Opcode::CmpSwap | Opcode::FetchAdd => WrDetail::Atomic {
            remote_addr: get64(WR)?,
            compare_add: get64(WR + 8)?,
            swap: get64(WR + 16)?,
            rkey: get32(WR + 24)?,
        },
        Opcode::AtomicWrite => WrDetail::Rdma {
            remote_addr: get64(WR)?,
            rkey: get32(WR + 8)?,
        },
        Opcode::LocalInv => WrDetail::Inv { rkey: ex },
        Opcode::RegMr => WrDetail::Reg {
            mr_key: get32(WR)?,
            key: get32(WR + 4)?,
            access: get32(WR + 8)?,
        },
        Opcode::BindMw => WrDetail::Mw {
            addr: get64(WR)?,
            length: get64(WR + 8)?,
            mr_lkey: get32(WR + 16)?,
            mw_rkey: get32(WR + 20)?,
            rkey: get32(WR + 24)?,
            access: get32(WR + 28)?,
        },
    };
    let payload = if !opcode.has_payload() {
        Payload::Sges { n: 0, length: 0 }
    } else if send_flags & SEND_INLINE != 0 && opcode != Opcode::RdmaRead {
        // librxe's inline list builder leaves `dma.length` 0; rxe sends what
        // it says, bounded here by the QP's inline capacity and the slot.
        let len = get32(SEND_DMA + DMA_LENGTH)?;
        if len > max_inline || SEND_HDR + len as usize > slot.len() {
            return Err(WqeError::InlineTooLong);
        }
        Payload::Inline { len }
    } else {
        let n = get32(SEND_DMA + DMA_NUM_SGE)?;
        if n > max_sge || SEND_HDR + n as usize * SGE > slot.len() {
            return Err(WqeError::TooManySge);
        }
        // The total is recomputed, not taken from `dma.length` (which
        // librxe's SGE list builder gets wrong).
        Payload::Sges {
            n,
            length: sum_sges(slot, SEND_HDR, n)?,
        }
    };
    Ok(SendWqe {
        wr_id: get64(WR_ID)?,
        opcode,
        send_flags,
        ex,
        detail,
        payload,
    })
}

/// A validated receive WQE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecvWqe {
    /// Work request id.
    pub wr_id: u64,
    /// SGEs, starting at [`RECV_HDR`].
    pub num_sge: u32,
    /// Their total length.
    pub length: u64,
}

/// Parses and validates a receive WQE for a queue of `max_sge` SGEs.
pub fn parse_recv(slot: &[u8], max_sge: u32) -> Result<RecvWqe, WqeError> {
    let wr_id = u64_at(slot, WR_ID).ok_or(WqeError::Short)?;
    let n = u32_at(slot, RECV_DMA + DMA_NUM_SGE).ok_or(WqeError::Short)?;
    if n > max_sge || RECV_HDR + n as usize * SGE > slot.len() {
        return Err(WqeError::TooManySge);
    }
    Ok(RecvWqe {
        wr_id,
        num_sge: n,
        length: sum_sges(slot, RECV_HDR, n)?,
    })
}

/// The address vector an older provider embeds in a UD WQE (`struct
/// rxe_av`, used when `ah_num` is 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LegacyAv {
    /// Source address as a GID (IPv4-mapped for IPv4).
    pub sgid: [u8; 16],
    /// Destination address as a GID.
    pub dgid: [u8; 16],
    /// IPv6 flow label.
    pub flow_label: u32,
    /// Hop limit.
    pub hop_limit: u8,
    /// Traffic class.
    pub traffic_class: u8,
}

/// Offset of `wr.ud.av` in a send WQE.
const UD_AV: usize = WR + 32;

/// Writes a GID as a `sockaddr_in` (IPv4-mapped) or `sockaddr_in6`.
fn put_sockaddr(b: &mut [u8], off: usize, gid: &[u8; 16], v6: bool) {
    if v6 {
        b[off..off + 2].copy_from_slice(&10u16.to_ne_bytes());
        b[off + 8..off + 24].copy_from_slice(gid);
    } else {
        b[off..off + 2].copy_from_slice(&2u16.to_ne_bytes());
        b[off + 4..off + 8].copy_from_slice(&gid[12..]);
    }
}

/// Embeds an address vector in a UD send WQE (as older providers did), for
/// kernel work requests, whose AHs have no number: the inverse of
/// [`legacy_av`]. IPv4 when both GIDs are IPv4-mapped.
pub fn encode_legacy_av(slot: &mut [u8], av: &LegacyAv) -> Option<()> {
    let b = slot.get_mut(UD_AV..UD_AV + 88)?;
    let v4 = |g: &[u8; 16]| g[..10] == [0; 10] && g[10..12] == [0xff, 0xff];
    let v6 = !(v4(&av.sgid) && v4(&av.dgid));
    b.fill(0);
    b[0] = 1;
    b[1] = if v6 { 2 } else { 1 };
    b[8..24].copy_from_slice(&av.dgid);
    b[24..28].copy_from_slice(&av.flow_label.to_ne_bytes());
    b[29] = av.hop_limit;
    b[30] = av.traffic_class;
    put_sockaddr(b, 32, &av.sgid, v6);
    put_sockaddr(b, 60, &av.dgid, v6);
    Some(())
}

/// Reads a `sockaddr_in` or `sockaddr_in6` as a GID.
fn sockaddr_gid(b: &[u8], off: usize, v6: bool) -> Option<[u8; 16]> {
    let family = u16::from_ne_bytes([*b.get(off)?, *b.get(off + 1)?]);
    let mut g = [0u8; 16];
    match (family, v6) {
        (2, false) => {
            g[10] = 0xff;
            g[11] = 0xff;
            g[12..].copy_from_slice(b.get(off + 4..off + 8)?);
        }
        (10, true) => g.copy_from_slice(b.get(off + 8..off + 24)?),
        _ => return None,
    }
    Some(g)
}

/// The embedded address vector of a UD WQE: its network type must be
/// IPv4 (1) or IPv6 (2) and both socket addresses of that family.
pub fn legacy_av(slot: &[u8]) -> Option<LegacyAv> {
    let av = slot.get(UD_AV..UD_AV + 88)?;
    let v6 = match av[1] {
        1 => false,
        2 => true,
        _ => return None,
    };
    Some(LegacyAv {
        sgid: sockaddr_gid(av, 32, v6)?,
        dgid: sockaddr_gid(av, 60, v6)?,
        flow_label: u32::from_ne_bytes([av[24], av[25], av[26], av[27]]) & 0xf_ffff,
        hop_limit: av[29],
        traffic_class: av[30],
    })
}

/// What a kernel work request puts in a send WQE.
#[derive(Clone, Copy, Debug)]
pub struct SendFields {
    /// Work request id.
    pub wr_id: u64,
    /// `enum ib_wr_opcode` (the same values as the user ABI's).
    pub opcode: u32,
    /// `IB_SEND_*` flags.
    pub send_flags: u32,
    /// Immediate data or invalidate key.
    pub ex: u32,
    /// Operation-specific fields.
    pub detail: WrDetail,
}

/// Writes a send WQE in the rxe layout into `slot` (zeroing it first), for
/// the kernel's own rings: the inverse of [`parse_send`] for sends and
/// RDMA writes, reads and UD sends. `None` if the SGEs do not fit.
pub fn encode_send(slot: &mut [u8], f: &SendFields, sges: impl Iterator<Item = Sge>) -> Option<()> {
    if slot.len() < SEND_HDR {
        return None;
    }
    slot.fill(0);
    let put32 = |b: &mut [u8], o: usize, v: u32| b[o..o + 4].copy_from_slice(&v.to_ne_bytes());
    slot[WR_ID..WR_ID + 8].copy_from_slice(&f.wr_id.to_ne_bytes());
    put32(slot, OPCODE, f.opcode);
    put32(slot, SEND_FLAGS, f.send_flags);
    put32(slot, EX, f.ex);
    match f.detail {
        WrDetail::Ud {
            remote_qpn,
            remote_qkey,
            pkey_index,
            ah_num,
        } => {
            put32(slot, WR, remote_qpn);
            put32(slot, WR + 4, remote_qkey);
            put32(slot, WR + 8, u32::from(pkey_index));
            put32(slot, WR + 12, ah_num);
        }
        WrDetail::Rdma { remote_addr, rkey } => {
            slot[WR..WR + 8].copy_from_slice(&remote_addr.to_ne_bytes());
            put32(slot, WR + 8, rkey);
        }
        WrDetail::Reg {
            mr_key,
            key,
            access,
        } => {
            put32(slot, WR, mr_key);
            put32(slot, WR + 4, key);
            put32(slot, WR + 8, access);
        }
        WrDetail::Atomic {
            remote_addr,
            compare_add,
            swap,
            rkey,
        } => {
            slot[WR..WR + 8].copy_from_slice(&remote_addr.to_ne_bytes());
            slot[WR + 8..WR + 16].copy_from_slice(&compare_add.to_ne_bytes());
            slot[WR + 16..WR + 24].copy_from_slice(&swap.to_ne_bytes());
            put32(slot, WR + 24, rkey);
        }
        _ => {}
    }
    let (n, len) = put_sges(slot, SEND_HDR, sges)?;
    slot[SEND_DMA + DMA_LENGTH..SEND_DMA + DMA_LENGTH + 4].copy_from_slice(&len.to_ne_bytes());
    put32(slot, SEND_DMA + DMA_NUM_SGE, n);
    Some(())
}

/// Writes a receive WQE in the rxe layout into `slot`: the inverse of
/// [`parse_recv`]. `None` if the SGEs do not fit.
pub fn encode_recv(slot: &mut [u8], wr_id: u64, sges: impl Iterator<Item = Sge>) -> Option<()> {
    if slot.len() < RECV_HDR {
        return None;
    }
    slot.fill(0);
    slot[WR_ID..WR_ID + 8].copy_from_slice(&wr_id.to_ne_bytes());
    let (n, len) = put_sges(slot, RECV_HDR, sges)?;
    slot[RECV_DMA + DMA_LENGTH..RECV_DMA + DMA_LENGTH + 4].copy_from_slice(&len.to_ne_bytes());
    slot[RECV_DMA + DMA_NUM_SGE..RECV_DMA + DMA_NUM_SGE + 4].copy_from_slice(&n.to_ne_bytes());
    Some(())
}

fn put_sges(slot: &mut [u8], base: usize, sges: impl Iterator<Item = Sge>) -> Option<(u32, u32)> {
    let mut n = 0u32;
    let mut len = 0u32;
    for s in sges {
        let o = base + n as usize * SGE;
        let b = slot.get_mut(o..o + SGE)?;
        b[0..8].copy_from_slice(&s.addr.to_ne_bytes());
        b[8..12].copy_from_slice(&s.length.to_ne_bytes());
        b[12..16].copy_from_slice(&s.lkey.to_ne_bytes());
        len = len.wrapping_add(s.length);
        n += 1;
    }
    Some((n, len))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put32(b: &mut [u8], o: usize, v: u32) {
        b[o..o + 4].copy_from_slice(&v.to_ne_bytes());
    }
    fn put64(b: &mut [u8], o: usize, v: u64) {
        b[o..o + 8].copy_from_slice(&v.to_ne_bytes());
    }
    fn send_slot(op: u32, flags: u32, sges: &[(u64, u32, u32)]) -> [u8; 512] {
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
    fn recv() {
        let mut b = [0u8; 128];
        put64(&mut b, 0, 77);
        put32(&mut b, RECV_DMA + DMA_NUM_SGE, 2);
        put32(&mut b, RECV_HDR + 8, 4096);
        put32(&mut b, RECV_HDR + 16 + 8, 100);
        assert_eq!(
            parse_recv(&b, 2),
            Ok(RecvWqe {
                wr_id: 77,
                num_sge: 2,
                length: 4196
            })
        );
        assert_eq!(parse_recv(&b, 1), Err(WqeError::TooManySge));
        put32(&mut b, RECV_DMA + DMA_NUM_SGE, 6);
        assert_eq!(parse_recv(&b, 8), Err(WqeError::TooManySge));
        assert_eq!(wr_id(&b), Some(77));
    }

    #[test]
    fn legacy_av_parses_both_families() {
        let mut u = [0u8; 512];
        assert_eq!(legacy_av(&u), None, "network type 0");
        u[UD_AV + 1] = 1;
        assert_eq!(legacy_av(&u), None, "no socket addresses");
        u[UD_AV + 32..UD_AV + 34].copy_from_slice(&2u16.to_ne_bytes());
        u[UD_AV + 36..UD_AV + 40].copy_from_slice(&[10, 0, 0, 1]);
        u[UD_AV + 60..UD_AV + 62].copy_from_slice(&2u16.to_ne_bytes());
        u[UD_AV + 64..UD_AV + 68].copy_from_slice(&[10, 0, 0, 2]);
        u[UD_AV + 29] = 64;
        let a = legacy_av(&u).unwrap();
        assert_eq!(&a.sgid[10..], &[0xff, 0xff, 10, 0, 0, 1]);
        assert_eq!(&a.dgid[12..], &[10, 0, 0, 2]);
        assert_eq!(a.hop_limit, 64);
        // IPv6 type with IPv4 addresses.
        u[UD_AV + 1] = 2;
        assert_eq!(legacy_av(&u), None);
        u[UD_AV + 32..UD_AV + 34].copy_from_slice(&10u16.to_ne_bytes());
        u[UD_AV + 60..UD_AV + 62].copy_from_slice(&10u16.to_ne_bytes());
        u[UD_AV + 40] = 0xfe;
        u[UD_AV + 68] = 0xfd;
        let b = legacy_av(&u).unwrap();
        assert_eq!((b.sgid[0], b.dgid[0]), (0xfe, 0xfd));
        // A truncated slot.
        assert_eq!(legacy_av(&u[..UD_AV + 80]), None);
        // What the kernel embeds reads back.
        for av in [a, b] {
            let mut s = [0u8; 512];
            encode_legacy_av(&mut s, &av).unwrap();
            assert_eq!(legacy_av(&s), Some(av));
        }
    }

    #[test]
    fn kernel_encoding_parses_back() {
        let mut slot = [0xeeu8; 512];
        let sges = [
            Sge {
                addr: 0x1000,
                length: 100,
                lkey: 0x301,
            },
            Sge {
                addr: 0x9000,
                length: 28,
                lkey: 0x301,
            },
        ];
        let f = SendFields {
            wr_id: 0xfeed,
            opcode: 2,
            send_flags: SEND_SIGNALED,
            ex: 0,
            detail: WrDetail::Ud {
                remote_qpn: 1,
                remote_qkey: 0x8001_0000,
                pkey_index: 0,
                ah_num: 9,
            },
        };
        encode_send(&mut slot, &f, sges.iter().copied()).unwrap();
        let w = parse_send(&slot, Transport::Ud, 2, 0).unwrap();
        assert_eq!(
            (w.wr_id, w.opcode, w.send_flags),
            (0xfeed, Opcode::Send, SEND_SIGNALED)
        );
        assert!(matches!(
            w.detail,
            WrDetail::Ud {
                remote_qpn: 1,
                remote_qkey: 0x8001_0000,
                ah_num: 9,
                ..
            }
        ));
        assert!(matches!(w.payload, Payload::Sges { n: 2, length: 128 }));
        assert_eq!(sge_at(&slot, SEND_HDR, 1).unwrap().addr, 0x9000);
        // One SGE more than the QP allows is refused when parsed.
        assert_eq!(
            parse_send(&slot, Transport::Ud, 1, 0).err(),
            Some(WqeError::TooManySge)
        );
        let f = SendFields {
            opcode: 1,
            ex: 0x1234,
            detail: WrDetail::Rdma {
                remote_addr: 0xabc,
                rkey: 7,
            },
            ..f
        };
        encode_send(&mut slot, &f, sges.iter().copied()).unwrap();
        let w = parse_send(&slot, Transport::Uc, 2, 0).unwrap();
        assert!(matches!(
            w.detail,
            WrDetail::Rdma {
                remote_addr: 0xabc,
                rkey: 7
            }
        ));
        assert_eq!((w.opcode, w.ex), (Opcode::RdmaWriteImm, 0x1234));
        // SGEs past the slot.
        assert_eq!(
            encode_send(&mut slot[..SEND_HDR + 16], &f, sges.iter().copied()),
            None
        );
        let mut r = [0u8; RECV_HDR + 2 * SGE];
        encode_recv(&mut r, 77, sges.iter().copied()).unwrap();
        let rw = parse_recv(&r, 2).unwrap();
        assert_eq!((rw.wr_id, rw.num_sge, rw.length), (77, 2, 128));
        assert_eq!(
            encode_recv(&mut r[..RECV_HDR + SGE], 1, sges.iter().copied()),
            None
        );
    }
}
