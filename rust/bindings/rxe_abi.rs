// SPDX-License-Identifier: GPL-2.0

//! Compile-time checks that the provider's view of rxe's user ABI matches
//! the target kernel's headers.
//!
//! librxe and rrxe share the mmap'd rings (`struct rxe_queue_buf`), the
//! WQEs in them (`struct rxe_send_wqe`, `struct rxe_recv_wqe`), the CQEs
//! (`struct ib_uverbs_wc`) and the udata of the create and modify verbs
//! (`struct mminfo` and the `rxe_*_resp`/`rxe_*_cmd` structs). The provider
//! writes them as byte offsets (`logic::ring`, `logic::wqe_layout`,
//! `logic::cqe`) and `#[repr(C)]` structs (`rrxe::queue::MmapInfo`, the
//! responses in `rrxe::{qp, srq, ah}`) and never sees the bindings. Here
//! every such offset, size and value is compared with the bindgen layout of
//! `include/uapi/rdma/rdma_user_rxe.h`, `include/uapi/rdma/ib_user_verbs.h`
//! and `include/rdma/ib_verbs.h`, so that a header that moves a field stops
//! the build instead of corrupting a ring.
//!
//! The file sits in `rust/bindings/` and not among the ib layer's
//! abstractions because it is about the generated layouts, not an API: it
//! exports nothing and generates no code, and the ib layer stays
//! driver-agnostic. It is a module of the ib layer (declared next to
//! `bindings` in `ib/mod.rs`), the only place where the bindings may be
//! named, and it is compiled with the crate's lints, not with the
//! relaxations the generated file needs.
//!
//! bindgen emits C unions as structs whose members all sit at offset 0, so
//! a union member's field is checked in the member's own type
//! (`rxe_send_wr__bindgen_ty_2__bindgen_ty_N`, named below by what it is).
//! Those names follow the members' order in the header; the field names
//! checked differ between the members, so an alias that lands on the wrong
//! member fails to compile.

use super::bindings as b;
use crate::logic::{
    access, cqe,
    cqe::{flags, net_type, status, uverbs},
    limits, qp as lqp, ring,
    wqe::{self, Opcode},
    wqe_layout as wl,
};
use crate::rrxe::{ah::CreateAhResp, qp::CreateQpResp, queue::MmapInfo, srq};
use core::mem::{offset_of, size_of};

// The members of `union { ... } wr` in `struct rxe_send_wr`.
type WrFlush = b::rxe_send_wr__bindgen_ty_2__bindgen_ty_1;
type WrRdma = b::rxe_send_wr__bindgen_ty_2__bindgen_ty_2;
type WrAtomic = b::rxe_send_wr__bindgen_ty_2__bindgen_ty_3;
type WrUd = b::rxe_send_wr__bindgen_ty_2__bindgen_ty_4;
type WrMw = b::rxe_send_wr__bindgen_ty_2__bindgen_ty_5;
type WrReg = b::rxe_send_wr__bindgen_ty_2__bindgen_ty_6;
type WrUnion = b::rxe_send_wr__bindgen_ty_2;

// --- The ring header (`struct rxe_queue_buf`). ------------------------------

const _: () = assert!(offset_of!(b::rxe_queue_buf, log2_elem_size) == ring::LOG2_ELEM_OFF);
const _: () = assert!(offset_of!(b::rxe_queue_buf, index_mask) == ring::INDEX_MASK_OFF);
const _: () = assert!(offset_of!(b::rxe_queue_buf, producer_index) == ring::PRODUCER_OFF);
const _: () = assert!(offset_of!(b::rxe_queue_buf, consumer_index) == ring::CONSUMER_OFF);
const _: () = assert!(offset_of!(b::rxe_queue_buf, data) == ring::HDR_SIZE);
const _: () = assert!(size_of::<b::rxe_queue_buf>() == ring::HDR_SIZE);
// The indices are accessed as `AtomicU32`s in place.
const _: () = assert!(size_of::<b::__u32>() == size_of::<core::sync::atomic::AtomicU32>());

// --- CQ slots hold an `ib_uverbs_wc` (user CQs) or an `ib_wc` (kernel CQs).

const _: () = assert!(size_of::<b::ib_uverbs_wc>() == cqe::UVERBS_WC_SIZE);
const _: () = assert!(ring::CQE_SIZE.is_power_of_two());
const _: () = assert!(ring::CQE_SIZE as usize >= size_of::<b::ib_uverbs_wc>());
const _: () = assert!(ring::CQE_SIZE as usize >= size_of::<b::ib_wc>());
const _: () = assert!(offset_of!(b::ib_uverbs_wc, wr_id) == uverbs::WR_ID);
const _: () = assert!(offset_of!(b::ib_uverbs_wc, status) == uverbs::STATUS);
const _: () = assert!(offset_of!(b::ib_uverbs_wc, opcode) == uverbs::OPCODE);
const _: () = assert!(offset_of!(b::ib_uverbs_wc, vendor_err) == uverbs::VENDOR_ERR);
const _: () = assert!(offset_of!(b::ib_uverbs_wc, byte_len) == uverbs::BYTE_LEN);
const _: () = assert!(offset_of!(b::ib_uverbs_wc, ex) == uverbs::EX);
const _: () = assert!(offset_of!(b::ib_uverbs_wc, qp_num) == uverbs::QP_NUM);
const _: () = assert!(offset_of!(b::ib_uverbs_wc, src_qp) == uverbs::SRC_QP);
const _: () = assert!(offset_of!(b::ib_uverbs_wc, wc_flags) == uverbs::WC_FLAGS);
const _: () = assert!(offset_of!(b::ib_uverbs_wc, pkey_index) == uverbs::PKEY_INDEX);
const _: () = assert!(offset_of!(b::ib_uverbs_wc, slid) == uverbs::SLID);
const _: () = assert!(offset_of!(b::ib_uverbs_wc, sl) == uverbs::SL);
const _: () = assert!(offset_of!(b::ib_uverbs_wc, dlid_path_bits) == uverbs::DLID_PATH_BITS);
const _: () = assert!(offset_of!(b::ib_uverbs_wc, port_num) == uverbs::PORT_NUM);
const _: () = assert!(offset_of!(b::ib_uverbs_wc, reserved) == cqe::UVERBS_WC_SIZE - 1);

// --- Scatter/gather entries and `struct rxe_dma_info`. ----------------------

const _: () = assert!(size_of::<b::rxe_sge>() == wqe::SGE);
const _: () = assert!(size_of::<b::rxe_sge>() == limits::SGE_SIZE as usize);
const _: () = assert!(offset_of!(b::rxe_sge, addr) == wl::SGE_ADDR);
const _: () = assert!(offset_of!(b::rxe_sge, length) == wl::SGE_LENGTH);
const _: () = assert!(offset_of!(b::rxe_sge, lkey) == wl::SGE_LKEY);
const _: () = assert!(offset_of!(b::rxe_dma_info, length) == wl::DMA_LENGTH);
const _: () = assert!(offset_of!(b::rxe_dma_info, num_sge) == wl::DMA_NUM_SGE);
// The SGEs, inline data and ATOMIC WRITE operand (a flexible-array union)
// end the struct.
const _: () =
    assert!(offset_of!(b::rxe_dma_info, __bindgen_anon_1) == size_of::<b::rxe_dma_info>());

// --- `struct rxe_send_wqe`. -------------------------------------------------

const _: () = assert!(size_of::<b::rxe_send_wqe>() == wqe::SEND_HDR);
const _: () = assert!(size_of::<b::rxe_send_wqe>() == limits::SEND_WQE_HDR as usize);
const _: () = assert!(size_of::<b::rxe_send_wqe>() == lqp::SEND_WQE_HDR as usize);
const _: () = assert!(
    offset_of!(b::rxe_send_wqe, dma) + offset_of!(b::rxe_dma_info, __bindgen_anon_1)
        == wqe::SEND_HDR
);
const _: () = assert!(offset_of!(b::rxe_send_wqe, wr) == 0);
const _: () = assert!(offset_of!(b::rxe_send_wqe, dma) == wl::SEND_DMA);
const _: () = assert!(offset_of!(b::rxe_send_wr, wr_id) == wl::WR_ID);
const _: () = assert!(offset_of!(b::rxe_send_wr, reserved) == wl::XRC_SRQN);
const _: () = assert!(offset_of!(b::rxe_send_wr, opcode) == wl::OPCODE);
const _: () = assert!(offset_of!(b::rxe_send_wr, send_flags) == wl::SEND_FLAGS);
const _: () = assert!(offset_of!(b::rxe_send_wr, ex) == wl::EX);
const _: () = assert!(offset_of!(b::rxe_send_wr, wr) == wl::WR);
const _: () = assert!(wl::WR + size_of::<WrUnion>() <= wl::SEND_DMA);

// `wr.rdma` (RDMA READ and WRITE, ATOMIC WRITE).
const _: () = assert!(offset_of!(WrRdma, remote_addr) == wl::WR_REMOTE_ADDR);
const _: () = assert!(offset_of!(WrRdma, rkey) == wl::WR_RDMA_RKEY);

// `wr.flush`: `type` and `level` are read as the two low bytes of a word.
const _: () = assert!(offset_of!(WrFlush, remote_addr) == wl::WR_REMOTE_ADDR);
const _: () = assert!(offset_of!(WrFlush, length) == wl::WR_FLUSH_LENGTH);
const _: () = assert!(offset_of!(WrFlush, rkey) == wl::WR_FLUSH_RKEY);
const _: () = assert!(offset_of!(WrFlush, type_) == wl::WR_FLUSH_TYPE);
const _: () = assert!(offset_of!(WrFlush, level) == wl::WR_FLUSH_TYPE + 1);
const _: () = assert!(wl::WR_FLUSH_TYPE + 4 <= size_of::<WrFlush>());

// `wr.atomic`.
const _: () = assert!(offset_of!(WrAtomic, remote_addr) == wl::WR_REMOTE_ADDR);
const _: () = assert!(offset_of!(WrAtomic, compare_add) == wl::WR_ATOMIC_COMPARE_ADD);
const _: () = assert!(offset_of!(WrAtomic, swap) == wl::WR_ATOMIC_SWAP);
const _: () = assert!(offset_of!(WrAtomic, rkey) == wl::WR_ATOMIC_RKEY);

// `wr.ud`: `pkey_index` is read as a word with the `reserved` half after it.
const _: () = assert!(offset_of!(WrUd, remote_qpn) == wl::WR_UD_REMOTE_QPN);
const _: () = assert!(offset_of!(WrUd, remote_qkey) == wl::WR_UD_REMOTE_QKEY);
const _: () = assert!(offset_of!(WrUd, pkey_index) == wl::WR_UD_PKEY_INDEX);
const _: () = assert!(offset_of!(WrUd, reserved) == wl::WR_UD_PKEY_INDEX + 2);
const _: () = assert!(offset_of!(WrUd, ah_num) == wl::WR_UD_AH_NUM);
const _: () = assert!(offset_of!(WrUd, av) == wl::WR_UD_AV);

// `wr.mw` (type 2 window binds).
const _: () = assert!(offset_of!(WrMw, addr) == wl::WR_MW_ADDR);
const _: () = assert!(offset_of!(WrMw, length) == wl::WR_MW_LENGTH);
const _: () = assert!(offset_of!(WrMw, mr_lkey) == wl::WR_MW_MR_LKEY);
const _: () = assert!(offset_of!(WrMw, mw_rkey) == wl::WR_MW_MW_RKEY);
const _: () = assert!(offset_of!(WrMw, rkey) == wl::WR_MW_RKEY);
const _: () = assert!(offset_of!(WrMw, access) == wl::WR_MW_ACCESS);

// `wr.reg` is kernel-only and not part of the uapi: rrxe encodes fast
// registrations on its own kernel rings in its own layout (an MR key where
// rxe keeps an MR pointer), which must only stay inside the `wr` union (the
// iova lies past rxe's `wr.reg` member).
const _: () = assert!(wl::WR_REG_ACCESS + 4 <= size_of::<WrReg>());
const _: () = assert!(wl::WR_REG_MR_KEY + 4 <= wl::WR_REG_KEY);
const _: () = assert!(wl::WR_REG_KEY + 4 <= wl::WR_REG_ACCESS);
const _: () = assert!(wl::WR_REG_ACCESS + 4 <= wl::WR_REG_IOVA);
const _: () = assert!(wl::WR_REG_IOVA % 8 == 0);
const _: () = assert!(wl::WR_REG_IOVA + 8 <= size_of::<WrUnion>());

// `wr.ud.av` (`struct rxe_av`, embedded by older providers and by kernel
// UD sends) and the socket addresses in it.
const _: () = assert!(size_of::<b::rxe_av>() == wl::AV_SIZE);
const _: () = assert!(offset_of!(b::rxe_av, port_num) == wl::AV_PORT_NUM);
const _: () = assert!(offset_of!(b::rxe_av, network_type) == wl::AV_NETWORK_TYPE);
const _: () =
    assert!(offset_of!(b::rxe_av, grh) + offset_of!(b::rxe_global_route, dgid) == wl::AV_DGID);
const _: () = assert!(size_of::<b::rxe_gid>() == 16);
const _: () = assert!(
    offset_of!(b::rxe_av, grh) + offset_of!(b::rxe_global_route, flow_label) == wl::AV_FLOW_LABEL
);
const _: () = assert!(
    offset_of!(b::rxe_av, grh) + offset_of!(b::rxe_global_route, hop_limit) == wl::AV_HOP_LIMIT
);
const _: () = assert!(
    offset_of!(b::rxe_av, grh) + offset_of!(b::rxe_global_route, traffic_class)
        == wl::AV_TRAFFIC_CLASS
);
const _: () = assert!(offset_of!(b::rxe_av, sgid_addr) == wl::AV_SGID_ADDR);
const _: () = assert!(offset_of!(b::rxe_av, dgid_addr) == wl::AV_DGID_ADDR);
const _: () = assert!(wl::NETWORK_TYPE_IPV4 as u32 == b::RXE_NETWORK_TYPE_IPV4);
const _: () = assert!(wl::NETWORK_TYPE_IPV6 as u32 == b::RXE_NETWORK_TYPE_IPV6);
const _: () = assert!(offset_of!(b::sockaddr_in, sin_family) == wl::SA_FAMILY);
const _: () = assert!(offset_of!(b::sockaddr_in, sin_addr) == wl::SIN_ADDR);
const _: () = assert!(offset_of!(b::sockaddr_in6, sin6_family) == wl::SA_FAMILY);
const _: () = assert!(offset_of!(b::sockaddr_in6, sin6_addr) == wl::SIN6_ADDR);
const _: () = assert!(wl::AF_INET as u32 == b::AF_INET);
const _: () = assert!(wl::AF_INET6 as u32 == b::AF_INET6);

// --- `struct rxe_recv_wqe`. -------------------------------------------------

const _: () = assert!(size_of::<b::rxe_recv_wqe>() == wqe::RECV_HDR);
const _: () = assert!(size_of::<b::rxe_recv_wqe>() == lqp::RECV_WQE_HDR as usize);
const _: () = assert!(
    offset_of!(b::rxe_recv_wqe, dma) + offset_of!(b::rxe_dma_info, __bindgen_anon_1)
        == wqe::RECV_HDR
);
const _: () = assert!(offset_of!(b::rxe_recv_wqe, wr_id) == wl::WR_ID);
const _: () = assert!(offset_of!(b::rxe_recv_wqe, dma) == wl::RECV_DMA);

// --- Udata: `struct mminfo` and the create/resize/modify structs. -----------

const _: () = assert!(size_of::<MmapInfo>() == size_of::<b::mminfo>());
const _: () = assert!(offset_of!(MmapInfo, offset) == offset_of!(b::mminfo, offset));
const _: () = assert!(offset_of!(MmapInfo, size) == offset_of!(b::mminfo, size));
const _: () = assert!(offset_of!(MmapInfo, pad) == offset_of!(b::mminfo, pad));
// create_cq and resize_cq answer with a bare `MmapInfo`.
const _: () = assert!(size_of::<MmapInfo>() == size_of::<b::rxe_create_cq_resp>());
const _: () = assert!(offset_of!(b::rxe_create_cq_resp, mi) == 0);
const _: () = assert!(size_of::<MmapInfo>() == size_of::<b::rxe_resize_cq_resp>());
const _: () = assert!(offset_of!(b::rxe_resize_cq_resp, mi) == 0);
const _: () = assert!(size_of::<CreateQpResp>() == size_of::<b::rxe_create_qp_resp>());
const _: () = assert!(offset_of!(CreateQpResp, rq_mi) == offset_of!(b::rxe_create_qp_resp, rq_mi));
const _: () = assert!(offset_of!(CreateQpResp, sq_mi) == offset_of!(b::rxe_create_qp_resp, sq_mi));
const _: () = assert!(size_of::<srq::CreateSrqResp>() == size_of::<b::rxe_create_srq_resp>());
const _: () = assert!(offset_of!(srq::CreateSrqResp, mi) == offset_of!(b::rxe_create_srq_resp, mi));
const _: () =
    assert!(offset_of!(srq::CreateSrqResp, srq_num) == offset_of!(b::rxe_create_srq_resp, srq_num));
const _: () = assert!(
    offset_of!(srq::CreateSrqResp, reserved) == offset_of!(b::rxe_create_srq_resp, reserved)
);
const _: () = assert!(size_of::<srq::ModifySrqCmd>() == size_of::<b::rxe_modify_srq_cmd>());
const _: () = assert!(
    offset_of!(srq::ModifySrqCmd, mmap_info_addr)
        == offset_of!(b::rxe_modify_srq_cmd, mmap_info_addr)
);
const _: () = assert!(size_of::<CreateAhResp>() == size_of::<b::rxe_create_ah_resp>());
const _: () =
    assert!(offset_of!(CreateAhResp, ah_num) == offset_of!(b::rxe_create_ah_resp, ah_num));
const _: () =
    assert!(offset_of!(CreateAhResp, reserved) == offset_of!(b::rxe_create_ah_resp, reserved));

// --- Send opcodes (`enum ib_uverbs_wr_opcode`; kernel work requests use
// `enum ib_wr_opcode`, whose shared values are the same). -------------------

/// Whether the WQE opcode `raw` parses as `op`.
const fn parses_as(raw: u32, op: Opcode) -> bool {
    match Opcode::from_raw(raw) {
        Some(o) => o as u32 == op as u32,
        None => false,
    }
}

const _: () = assert!(parses_as(
    b::ib_uverbs_wr_opcode_IB_UVERBS_WR_RDMA_WRITE,
    Opcode::RdmaWrite
));
const _: () = assert!(parses_as(
    b::ib_uverbs_wr_opcode_IB_UVERBS_WR_RDMA_WRITE_WITH_IMM,
    Opcode::RdmaWriteImm
));
const _: () = assert!(parses_as(
    b::ib_uverbs_wr_opcode_IB_UVERBS_WR_SEND,
    Opcode::Send
));
const _: () = assert!(parses_as(
    b::ib_uverbs_wr_opcode_IB_UVERBS_WR_SEND_WITH_IMM,
    Opcode::SendImm
));
const _: () = assert!(parses_as(
    b::ib_uverbs_wr_opcode_IB_UVERBS_WR_RDMA_READ,
    Opcode::RdmaRead
));
const _: () = assert!(parses_as(
    b::ib_uverbs_wr_opcode_IB_UVERBS_WR_ATOMIC_CMP_AND_SWP,
    Opcode::CmpSwap
));
const _: () = assert!(parses_as(
    b::ib_uverbs_wr_opcode_IB_UVERBS_WR_ATOMIC_FETCH_AND_ADD,
    Opcode::FetchAdd
));
const _: () = assert!(parses_as(
    b::ib_uverbs_wr_opcode_IB_UVERBS_WR_LOCAL_INV,
    Opcode::LocalInv
));
const _: () = assert!(parses_as(
    b::ib_uverbs_wr_opcode_IB_UVERBS_WR_BIND_MW,
    Opcode::BindMw
));
const _: () = assert!(parses_as(
    b::ib_uverbs_wr_opcode_IB_UVERBS_WR_SEND_WITH_INV,
    Opcode::SendInv
));
const _: () = assert!(parses_as(
    b::ib_uverbs_wr_opcode_IB_UVERBS_WR_FLUSH,
    Opcode::Flush
));
const _: () = assert!(parses_as(
    b::ib_uverbs_wr_opcode_IB_UVERBS_WR_ATOMIC_WRITE,
    Opcode::AtomicWrite
));
const _: () = assert!(parses_as(b::ib_wr_opcode_IB_WR_REG_MR, Opcode::RegMr));
// What rxe does not implement is refused.
const _: () = assert!(Opcode::from_raw(b::ib_uverbs_wr_opcode_IB_UVERBS_WR_TSO).is_none());
const _: () =
    assert!(Opcode::from_raw(b::ib_uverbs_wr_opcode_IB_UVERBS_WR_RDMA_READ_WITH_INV).is_none());
const _: () = assert!(Opcode::from_raw(
    b::ib_uverbs_wr_opcode_IB_UVERBS_WR_MASKED_ATOMIC_CMP_AND_SWP
)
.is_none());
const _: () = assert!(Opcode::from_raw(
    b::ib_uverbs_wr_opcode_IB_UVERBS_WR_MASKED_ATOMIC_FETCH_AND_ADD
)
.is_none());
const _: () = assert!(Opcode::from_raw(b::ib_wr_opcode_IB_WR_REG_MR_INTEGRITY).is_none());
// Kernel work requests are encoded with their `ib_wr_opcode` value.
const _: () = assert!(b::ib_wr_opcode_IB_WR_SEND == b::ib_uverbs_wr_opcode_IB_UVERBS_WR_SEND);
const _: () = assert!(
    b::ib_wr_opcode_IB_WR_SEND_WITH_IMM == b::ib_uverbs_wr_opcode_IB_UVERBS_WR_SEND_WITH_IMM
);
const _: () =
    assert!(b::ib_wr_opcode_IB_WR_RDMA_WRITE == b::ib_uverbs_wr_opcode_IB_UVERBS_WR_RDMA_WRITE);
const _: () = assert!(
    b::ib_wr_opcode_IB_WR_RDMA_WRITE_WITH_IMM
        == b::ib_uverbs_wr_opcode_IB_UVERBS_WR_RDMA_WRITE_WITH_IMM
);
const _: () =
    assert!(b::ib_wr_opcode_IB_WR_RDMA_READ == b::ib_uverbs_wr_opcode_IB_UVERBS_WR_RDMA_READ);
const _: () = assert!(
    b::ib_wr_opcode_IB_WR_ATOMIC_CMP_AND_SWP
        == b::ib_uverbs_wr_opcode_IB_UVERBS_WR_ATOMIC_CMP_AND_SWP
);
const _: () = assert!(
    b::ib_wr_opcode_IB_WR_ATOMIC_FETCH_AND_ADD
        == b::ib_uverbs_wr_opcode_IB_UVERBS_WR_ATOMIC_FETCH_AND_ADD
);
const _: () =
    assert!(b::ib_wr_opcode_IB_WR_LOCAL_INV == b::ib_uverbs_wr_opcode_IB_UVERBS_WR_LOCAL_INV);
const _: () = assert!(
    b::ib_wr_opcode_IB_WR_SEND_WITH_INV == b::ib_uverbs_wr_opcode_IB_UVERBS_WR_SEND_WITH_INV
);

// --- `IB_SEND_*` flags (`enum ib_send_flags` is signed: its last value is
// `1 << 31`). ---------------------------------------------------------------

const _: () = assert!(wqe::SEND_FENCE == b::ib_send_flags_IB_SEND_FENCE as u32);
const _: () = assert!(wqe::SEND_SIGNALED == b::ib_send_flags_IB_SEND_SIGNALED as u32);
const _: () = assert!(wqe::SEND_SOLICITED == b::ib_send_flags_IB_SEND_SOLICITED as u32);
const _: () = assert!(wqe::SEND_INLINE == b::ib_send_flags_IB_SEND_INLINE as u32);

// --- Completion opcodes (`enum ib_wc_opcode`, the same values as
// `enum ib_uverbs_wc_opcode` for the ones userspace sees). -------------------

const _: () = assert!(Opcode::Send.wc_opcode() == b::ib_wc_opcode_IB_WC_SEND);
const _: () = assert!(Opcode::SendImm.wc_opcode() == b::ib_wc_opcode_IB_WC_SEND);
const _: () = assert!(Opcode::SendInv.wc_opcode() == b::ib_wc_opcode_IB_WC_SEND);
const _: () = assert!(Opcode::RdmaWrite.wc_opcode() == b::ib_wc_opcode_IB_WC_RDMA_WRITE);
const _: () = assert!(Opcode::RdmaWriteImm.wc_opcode() == b::ib_wc_opcode_IB_WC_RDMA_WRITE);
const _: () = assert!(Opcode::RdmaRead.wc_opcode() == b::ib_wc_opcode_IB_WC_RDMA_READ);
const _: () = assert!(Opcode::CmpSwap.wc_opcode() == b::ib_wc_opcode_IB_WC_COMP_SWAP);
const _: () = assert!(Opcode::FetchAdd.wc_opcode() == b::ib_wc_opcode_IB_WC_FETCH_ADD);
const _: () = assert!(Opcode::BindMw.wc_opcode() == b::ib_wc_opcode_IB_WC_BIND_MW);
const _: () = assert!(Opcode::LocalInv.wc_opcode() == b::ib_wc_opcode_IB_WC_LOCAL_INV);
const _: () = assert!(Opcode::Flush.wc_opcode() == b::ib_wc_opcode_IB_WC_FLUSH);
const _: () = assert!(Opcode::AtomicWrite.wc_opcode() == b::ib_wc_opcode_IB_WC_ATOMIC_WRITE);
const _: () = assert!(Opcode::RegMr.wc_opcode() == b::ib_wc_opcode_IB_WC_REG_MR);
const _: () = assert!(wqe::WC_RECV == b::ib_wc_opcode_IB_WC_RECV);
const _: () = assert!(wqe::WC_RECV_RDMA_WITH_IMM == b::ib_wc_opcode_IB_WC_RECV_RDMA_WITH_IMM);
const _: () = assert!(b::ib_wc_opcode_IB_WC_SEND == b::ib_uverbs_wc_opcode_IB_UVERBS_WC_SEND);
const _: () =
    assert!(b::ib_wc_opcode_IB_WC_RDMA_READ == b::ib_uverbs_wc_opcode_IB_UVERBS_WC_RDMA_READ);
const _: () = assert!(b::ib_wc_opcode_IB_WC_FLUSH == b::ib_uverbs_wc_opcode_IB_UVERBS_WC_FLUSH);
const _: () =
    assert!(b::ib_wc_opcode_IB_WC_ATOMIC_WRITE == b::ib_uverbs_wc_opcode_IB_UVERBS_WC_ATOMIC_WRITE);

// --- Completion statuses (`enum ib_wc_status`). ------------------------------

const _: () = assert!(status::SUCCESS == b::ib_wc_status_IB_WC_SUCCESS);
const _: () = assert!(status::LOC_LEN_ERR == b::ib_wc_status_IB_WC_LOC_LEN_ERR);
const _: () = assert!(status::LOC_QP_OP_ERR == b::ib_wc_status_IB_WC_LOC_QP_OP_ERR);
const _: () = assert!(status::LOC_PROT_ERR == b::ib_wc_status_IB_WC_LOC_PROT_ERR);
const _: () = assert!(status::WR_FLUSH_ERR == b::ib_wc_status_IB_WC_WR_FLUSH_ERR);
const _: () = assert!(status::MW_BIND_ERR == b::ib_wc_status_IB_WC_MW_BIND_ERR);
const _: () = assert!(status::BAD_RESP_ERR == b::ib_wc_status_IB_WC_BAD_RESP_ERR);
const _: () = assert!(status::REM_INV_REQ_ERR == b::ib_wc_status_IB_WC_REM_INV_REQ_ERR);
const _: () = assert!(status::REM_ACCESS_ERR == b::ib_wc_status_IB_WC_REM_ACCESS_ERR);
const _: () = assert!(status::REM_OP_ERR == b::ib_wc_status_IB_WC_REM_OP_ERR);
const _: () = assert!(status::RETRY_EXC_ERR == b::ib_wc_status_IB_WC_RETRY_EXC_ERR);
const _: () = assert!(status::RNR_RETRY_EXC_ERR == b::ib_wc_status_IB_WC_RNR_RETRY_EXC_ERR);
const _: () = assert!(status::REM_INV_RD_REQ_ERR == b::ib_wc_status_IB_WC_REM_INV_RD_REQ_ERR);
const _: () = assert!(status::FATAL_ERR == b::ib_wc_status_IB_WC_FATAL_ERR);
const _: () = assert!(status::GENERAL_ERR == b::ib_wc_status_IB_WC_GENERAL_ERR);

// --- Completion flags and network header types. -----------------------------

const _: () = assert!(flags::GRH == b::ib_wc_flags_IB_WC_GRH);
const _: () = assert!(flags::WITH_IMM == b::ib_wc_flags_IB_WC_WITH_IMM);
const _: () = assert!(flags::WITH_INVALIDATE == b::ib_wc_flags_IB_WC_WITH_INVALIDATE);
const _: () = assert!(flags::WITH_NETWORK_HDR_TYPE == b::ib_wc_flags_IB_WC_WITH_NETWORK_HDR_TYPE);
const _: () = assert!(net_type::IPV4 as u32 == b::rdma_network_type_RDMA_NETWORK_IPV4);
const _: () = assert!(net_type::IPV6 as u32 == b::rdma_network_type_RDMA_NETWORK_IPV6);
const _: () = assert!(wqe::MCAST_QPN == b::IB_MULTICAST_QPN);

// --- Access flags (`enum ib_access_flags`, the uverbs values). --------------

const _: () = assert!(access::LOCAL_WRITE == b::ib_access_flags_IB_ACCESS_LOCAL_WRITE);
const _: () = assert!(access::REMOTE_WRITE == b::ib_access_flags_IB_ACCESS_REMOTE_WRITE);
const _: () = assert!(access::REMOTE_READ == b::ib_access_flags_IB_ACCESS_REMOTE_READ);
const _: () = assert!(access::REMOTE_ATOMIC == b::ib_access_flags_IB_ACCESS_REMOTE_ATOMIC);
const _: () = assert!(access::MW_BIND == b::ib_access_flags_IB_ACCESS_MW_BIND);
const _: () = assert!(access::ZERO_BASED == b::ib_access_flags_IB_ZERO_BASED);
const _: () = assert!(access::ON_DEMAND == b::ib_access_flags_IB_ACCESS_ON_DEMAND);
const _: () = assert!(access::HUGETLB == b::ib_access_flags_IB_ACCESS_HUGETLB);
const _: () = assert!(access::FLUSH_GLOBAL == b::ib_access_flags_IB_ACCESS_FLUSH_GLOBAL);
const _: () = assert!(access::FLUSH_PERSISTENT == b::ib_access_flags_IB_ACCESS_FLUSH_PERSISTENT);
const _: () = assert!(access::OPTIONAL_RANGE == b::ib_access_flags_IB_ACCESS_OPTIONAL);
const _: () = assert!(access::SUPPORTED == b::ib_access_flags_IB_ACCESS_SUPPORTED);

// --- rrxe's additions (`include/uapi/rdma/rrxe-abi.h`). ---------------------
//
// The header's room for driver-namespace ids is the core's (the C helper
// file checks each id against it), and the attribute the Rust DM layer
// fills is the header's, in the driver namespace.

const _: () =
    assert!(b::RRXE_IB_DRIVER_NS_METHODS == b::uapi_radix_data_UVERBS_API_METHOD_KEY_NUM_DRIVER);
const _: () = assert!(
    b::RRXE_IB_DRIVER_NS_ATTRS == (1 << (b::uapi_radix_data_UVERBS_API_ATTR_KEY_BITS - 1)) - 1
);
const _: () = assert!(
    crate::rrxe::glue::ALLOC_DM_RESP_MMAP_OFFSET as u32
        == b::rrxe_ib_alloc_dm_attrs_RRXE_IB_ATTR_ALLOC_DM_RESP_MMAP_OFFSET
);
const _: () = {
    let id = b::rrxe_ib_alloc_dm_attrs_RRXE_IB_ATTR_ALLOC_DM_RESP_MMAP_OFFSET as u64;
    let first = b::UVERBS_ID_DRIVER_NS as u64;
    assert!(id >= first && id < first + b::RRXE_IB_DRIVER_NS_ATTRS as u64);
};

// The word of an XRC initiator's send WQE that names its XRC SRQ.
const _: () = assert!(b::RRXE_XRC_SRQN_WQE_OFFSET as usize == wl::XRC_SRQN);
const _: () = assert!(b::RRXE_XRC_SRQN_MASK == 0x00ff_ffff);
