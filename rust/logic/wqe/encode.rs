// SPDX-License-Identifier: GPL-2.0

//! The kernel's own WQEs: send and receive work requests written in the
//! rxe layout into the rings of kernel QPs, the inverse of parsing them.

use super::super::wqe_layout::*;
use super::{
    Sge, WrDetail, DMA_LENGTH, DMA_NUM_SGE, EX, OPCODE, RECV_DMA, RECV_HDR, SEND_DMA, SEND_FLAGS,
    SEND_HDR, SGE, WR, WR_ID,
};

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
    let put64 = |b: &mut [u8], o: usize, v: u64| b[o..o + 8].copy_from_slice(&v.to_ne_bytes());
    put64(slot, WR_ID, f.wr_id);
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
            put32(slot, WR + WR_UD_REMOTE_QPN, remote_qpn);
            put32(slot, WR + WR_UD_REMOTE_QKEY, remote_qkey);
            put32(slot, WR + WR_UD_PKEY_INDEX, u32::from(pkey_index));
            put32(slot, WR + WR_UD_AH_NUM, ah_num);
        }
        WrDetail::Rdma { remote_addr, rkey } => {
            put64(slot, WR + WR_REMOTE_ADDR, remote_addr);
            put32(slot, WR + WR_RDMA_RKEY, rkey);
        }
        WrDetail::Reg {
            mr_key,
            key,
            access,
            iova,
        } => {
            put32(slot, WR + WR_REG_MR_KEY, mr_key);
            put32(slot, WR + WR_REG_KEY, key);
            put32(slot, WR + WR_REG_ACCESS, access);
            put64(slot, WR + WR_REG_IOVA, iova);
        }
        WrDetail::Atomic {
            remote_addr,
            compare_add,
            swap,
            rkey,
        } => {
            put64(slot, WR + WR_REMOTE_ADDR, remote_addr);
            put64(slot, WR + WR_ATOMIC_COMPARE_ADD, compare_add);
            put64(slot, WR + WR_ATOMIC_SWAP, swap);
            put32(slot, WR + WR_ATOMIC_RKEY, rkey);
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
        b[SGE_ADDR..SGE_ADDR + 8].copy_from_slice(&s.addr.to_ne_bytes());
        b[SGE_LENGTH..SGE_LENGTH + 4].copy_from_slice(&s.length.to_ne_bytes());
        b[SGE_LKEY..SGE_LKEY + 4].copy_from_slice(&s.lkey.to_ne_bytes());
        len = len.wrapping_add(s.length);
        n += 1;
    }
    Some((n, len))
}

#[cfg(test)]
mod tests {
    use super::super::*;
    use super::*;

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
