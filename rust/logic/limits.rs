// SPDX-License-Identifier: GPL-2.0

//! Device and port limits: rxe's values (`rxe_param.h`), in one place.

/// The 2^20 bound rxe uses for most object counts.
pub const DEFAULT_MAX_VALUE: u32 = 1 << 20;

/// IEEE OUI-less vendor id rxe reports.
pub const VENDOR_ID: u32 = 0x00ff_ffff;
/// Largest MR, in bytes.
pub const MAX_MR_SIZE: u64 = u64::MAX;
/// Page sizes MRs accept.
pub const PAGE_SIZE_CAP: u64 = 0xffff_f000;
/// First QP number handed out (below are QP0/QP1 and reserved numbers).
pub const MIN_QP_INDEX: u32 = 16;
/// Number of QPs.
pub const MAX_QP: u32 = DEFAULT_MAX_VALUE - MIN_QP_INDEX;
/// Work requests per QP.
pub const MAX_QP_WR: u32 = DEFAULT_MAX_VALUE;
/// Scatter/gather entries per WQE.
pub const MAX_SGE: u32 = 32;
/// SGEs for RDMA reads.
pub const MAX_SGE_RD: u32 = 32;
/// Size of `struct rxe_send_wqe` up to its SGE array (uapi).
pub const SEND_WQE_HDR: u32 = 208;
/// Size of one SGE (uapi `struct rxe_sge`).
pub const SGE_SIZE: u32 = 16;
/// Inline data bytes per send WQE.
pub const MAX_INLINE_DATA: u32 = SGE_SIZE * MAX_SGE;
/// Number of CQs.
pub const MAX_CQ: u32 = DEFAULT_MAX_VALUE;
/// Entries per CQ.
pub const MAX_CQE: u32 = (1 << 15) - 1;
/// First MR index; MR indices end where MW indices start.
pub const MIN_MR_INDEX: u32 = 1;
/// Last MR index.
pub const MAX_MR_INDEX: u32 = DEFAULT_MAX_VALUE >> 1;
/// Number of MRs.
pub const MAX_MR: u32 = MAX_MR_INDEX - MIN_MR_INDEX;
/// First MW index.
pub const MIN_MW_INDEX: u32 = MAX_MR_INDEX + 1;
/// Last MW index.
pub const MAX_MW_INDEX: u32 = DEFAULT_MAX_VALUE;
/// Number of MWs.
pub const MAX_MW: u32 = MAX_MW_INDEX - MIN_MW_INDEX;
/// Number of PDs.
pub const MAX_PD: u32 = DEFAULT_MAX_VALUE;
/// Number of XRC domains.
pub const MAX_XRCD: u32 = DEFAULT_MAX_VALUE;
/// Outstanding RDMA reads and atomics per QP, as responder and initiator.
pub const MAX_QP_RD_ATOM: u32 = 128;
/// Same, summed over the device.
pub const MAX_RES_RD_ATOM: u32 = 0x3f000;
/// Multicast groups.
pub const MAX_MCAST_GRP: u32 = 8192;
/// QPs attached per multicast group.
pub const MAX_MCAST_QP_ATTACH: u32 = 56;
/// QP attachments over all groups.
pub const MAX_TOT_MCAST_QP_ATTACH: u32 = 0x70000;
/// Address handles.
pub const MAX_AH: u32 = (1 << 15) - 1;
/// First SRQ number.
pub const MIN_SRQ_INDEX: u32 = 0x0002_0001;
/// Number of SRQs.
pub const MAX_SRQ: u32 = DEFAULT_MAX_VALUE - MIN_SRQ_INDEX;
// An SRQ's number is its index: an XRCETH carries it in 24 bits.
const _: () = assert!(MIN_SRQ_INDEX + MAX_SRQ <= 1 << 24);
/// Work requests per SRQ.
pub const MAX_SRQ_WR: u32 = DEFAULT_MAX_VALUE;
/// SGEs per SRQ WQE.
pub const MAX_SRQ_SGE: u32 = 27;
/// Pages in a fast-registration page list.
pub const MAX_FAST_REG_PAGE_LIST_LEN: u32 = 512;
/// P_Keys the device claims.
pub const MAX_PKEYS: u16 = 64;
/// Local CA ACK delay (4.096 µs · 2^n).
pub const LOCAL_CA_ACK_DELAY: u8 = 15;

/// GID table entries per port.
pub const PORT_GID_TBL_LEN: i32 = 1024;
/// P_Key table entries per port (just the default full-membership key).
pub const PORT_PKEY_TBL_LEN: u16 = 1;
/// The default P_Key.
pub const DEFAULT_PKEY: u16 = 0xffff;
/// Largest message.
pub const PORT_MAX_MSG_SZ: u32 = 1 << 31;
/// Virtual lanes.
pub const PORT_MAX_VL_NUM: u8 = 1;

/// The uverbs ABI version librxe expects (`RXE_UVERBS_ABI_VERSION`).
pub const UVERBS_ABI_VERSION: u32 = 2;

// Checked wherever the crate compiles (the host's and the kernel's).
const _: () = assert!(MIN_MR_INDEX <= MAX_MR_INDEX);
// Keys are (index << 8) | key8 in 32 bits.
const _: () = assert!(MAX_MW_INDEX <= 1 << 24);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mr_and_mw_index_ranges_are_disjoint_and_fit_24_bits() {
        assert_eq!(MIN_MW_INDEX, MAX_MR_INDEX + 1);
        assert_eq!(MAX_MR, (1 << 19) - 1);
        assert_eq!(MAX_MW, (1 << 19) - 1);
    }

    #[test]
    fn rxe_reported_values() {
        assert_eq!(MAX_QP, (1 << 20) - 16);
        assert_eq!(MAX_INLINE_DATA, 512);
        assert_eq!(MAX_SRQ, (1 << 20) - 0x20001);
        assert_eq!(MAX_CQE, 32767);
    }
}
