// SPDX-License-Identifier: GPL-2.0

//! Byte offsets of the fields of rxe's work queue entries
//! (`rdma_user_rxe.h`: `struct rxe_send_wqe`, `struct rxe_recv_wqe`, their
//! `struct rxe_dma_info` and the `struct rxe_av` of UD sends) that
//! [`super::wqe`] reads and writes.
//!
//! The ib layer checks every one of them against the uapi header at compile
//! time (`rust/bindings/rxe_abi.rs`). Offsets named `WR_*` are relative to
//! the `wr` union at [`WR`], `AV_*` to the address vector `wr.ud.av`, and
//! `SA_*`/`SIN*` to a socket address in it.

/// `addr` in `struct rxe_sge`.
pub const SGE_ADDR: usize = 0;
/// `length` in `struct rxe_sge`.
pub const SGE_LENGTH: usize = 8;
/// `lkey` in `struct rxe_sge`.
pub const SGE_LKEY: usize = 12;

/// `wr_id` in a send or a receive WQE.
pub const WR_ID: usize = 0;
/// `wr.reserved` in a send WQE: the XRC SRQ number of an XRC initiator
/// QP's WQE, in its low 24 bits (rrxe's use of the word, which
/// `include/uapi/rdma/rrxe-abi.h` declares; stock librxe writes it zero).
pub const XRC_SRQN: usize = 8;
/// `opcode` in a send WQE.
pub const OPCODE: usize = 12;
/// `send_flags` in a send WQE.
pub const SEND_FLAGS: usize = 16;
/// `ex` (immediate data or invalidate key) in a send WQE.
pub const EX: usize = 20;
/// The `wr` union in a send WQE; the `WR_*` offsets are relative to it.
pub const WR: usize = 24;
/// `dma` in a send WQE.
pub const SEND_DMA: usize = 184;
/// `dma` in a receive WQE.
pub const RECV_DMA: usize = 16;
/// `length` in `struct rxe_dma_info`.
pub const DMA_LENGTH: usize = 0;
/// `num_sge` in `struct rxe_dma_info`.
pub const DMA_NUM_SGE: usize = 12;

/// `wr.rdma.remote_addr` (also `wr.flush`'s and `wr.atomic`'s).
pub const WR_REMOTE_ADDR: usize = 0;
/// `wr.rdma.rkey`.
pub const WR_RDMA_RKEY: usize = 8;
/// `wr.flush.length`.
pub const WR_FLUSH_LENGTH: usize = 8;
/// `wr.flush.rkey`.
pub const WR_FLUSH_RKEY: usize = 12;
/// `wr.flush.type`, followed by the byte `wr.flush.level`.
pub const WR_FLUSH_TYPE: usize = 16;
/// `wr.atomic.compare_add`.
pub const WR_ATOMIC_COMPARE_ADD: usize = 8;
/// `wr.atomic.swap`.
pub const WR_ATOMIC_SWAP: usize = 16;
/// `wr.atomic.rkey`.
pub const WR_ATOMIC_RKEY: usize = 24;
/// `wr.ud.remote_qpn`.
pub const WR_UD_REMOTE_QPN: usize = 0;
/// `wr.ud.remote_qkey`.
pub const WR_UD_REMOTE_QKEY: usize = 4;
/// `wr.ud.pkey_index` (read as a word with `reserved`).
pub const WR_UD_PKEY_INDEX: usize = 8;
/// `wr.ud.ah_num`.
pub const WR_UD_AH_NUM: usize = 12;
/// `wr.ud.av`.
pub const WR_UD_AV: usize = 32;
/// `wr.mw.addr`.
pub const WR_MW_ADDR: usize = 0;
/// `wr.mw.length`.
pub const WR_MW_LENGTH: usize = 8;
/// `wr.mw.mr_lkey`.
pub const WR_MW_MR_LKEY: usize = 16;
/// `wr.mw.mw_rkey`.
pub const WR_MW_MW_RKEY: usize = 20;
/// `wr.mw.rkey`.
pub const WR_MW_RKEY: usize = 24;
/// `wr.mw.access`.
pub const WR_MW_ACCESS: usize = 28;
/// Fast registration's MR key. rrxe's own layout, for its kernel rings
/// only: rxe's kernel-only `wr.reg` holds an MR pointer here instead.
pub const WR_REG_MR_KEY: usize = 0;
/// Fast registration's new key (rrxe's layout, see [`WR_REG_MR_KEY`]).
pub const WR_REG_KEY: usize = 4;
/// Fast registration's new access (rrxe's layout, see [`WR_REG_MR_KEY`]).
pub const WR_REG_ACCESS: usize = 8;
/// Fast registration's iova (rrxe's layout, see [`WR_REG_MR_KEY`]): past
/// rxe's `wr.reg` member, still inside the `wr` union.
pub const WR_REG_IOVA: usize = 16;

/// `struct rxe_av`.
pub const AV_SIZE: usize = 88;
/// `port_num` in `struct rxe_av`.
pub const AV_PORT_NUM: usize = 0;
/// `network_type` in `struct rxe_av`.
pub const AV_NETWORK_TYPE: usize = 1;
/// `grh.dgid` in `struct rxe_av`.
pub const AV_DGID: usize = 8;
/// `grh.flow_label` in `struct rxe_av`.
pub const AV_FLOW_LABEL: usize = 24;
/// `grh.hop_limit` in `struct rxe_av`.
pub const AV_HOP_LIMIT: usize = 29;
/// `grh.traffic_class` in `struct rxe_av`.
pub const AV_TRAFFIC_CLASS: usize = 30;
/// `sgid_addr` in `struct rxe_av`.
pub const AV_SGID_ADDR: usize = 32;
/// `dgid_addr` in `struct rxe_av`.
pub const AV_DGID_ADDR: usize = 60;
/// `RXE_NETWORK_TYPE_IPV4`, in `network_type`.
pub const NETWORK_TYPE_IPV4: u8 = 1;
/// `RXE_NETWORK_TYPE_IPV6`, in `network_type`.
pub const NETWORK_TYPE_IPV6: u8 = 2;
/// `sin_family`/`sin6_family` in a socket address.
pub const SA_FAMILY: usize = 0;
/// `sin_addr` in `struct sockaddr_in`.
pub const SIN_ADDR: usize = 4;
/// `sin6_addr` in `struct sockaddr_in6`.
pub const SIN6_ADDR: usize = 8;
/// `AF_INET`.
pub const AF_INET: u16 = 2;
/// `AF_INET6`.
pub const AF_INET6: u16 = 10;
