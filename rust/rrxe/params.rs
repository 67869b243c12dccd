// SPDX-License-Identifier: GPL-2.0

//! Device and port attributes, assembled from the limits in `logic::limits`.

use crate::ib::attr::{cap, kcap, odp, AtomicCap, DeviceAttrs, OdpCaps};
use crate::logic::limits;

/// rxe's device capability flags, and XRC.
pub const DEVICE_CAP_FLAGS: u64 = cap::BAD_PKEY_CNTR
    | cap::BAD_QKEY_CNTR
    | cap::AUTO_PATH_MIG
    | cap::CHANGE_PHY_PORT
    | cap::UD_AV_PORT_ENFORCE
    | cap::PORT_ACTIVE_EVENT
    | cap::SYS_IMAGE_GUID
    | cap::RC_RNR_NAK_GEN
    | cap::SRQ_RESIZE
    | cap::MEM_MGT_EXTENSIONS
    | cap::MEM_WINDOW
    | cap::FLUSH_GLOBAL
    | cap::FLUSH_PERSISTENT
    | cap::MEM_WINDOW_TYPE_2B
    | cap::ATOMIC_WRITE
    | cap::XRC;

/// The attributes of a new device whose identifiers derive from `guid`.
pub fn device_attrs(guid: [u8; 8]) -> DeviceAttrs {
    DeviceAttrs {
        sys_image_guid: guid,
        max_mr_size: limits::MAX_MR_SIZE,
        page_size_cap: limits::PAGE_SIZE_CAP,
        vendor_id: limits::VENDOR_ID,
        max_qp: limits::MAX_QP,
        max_qp_wr: limits::MAX_QP_WR,
        device_cap_flags: DEVICE_CAP_FLAGS,
        kernel_cap_flags: kcap::ALLOW_USER_UNREG | kcap::ON_DEMAND_PAGING,
        max_send_sge: limits::MAX_SGE,
        max_recv_sge: limits::MAX_SGE,
        max_sge_rd: limits::MAX_SGE_RD,
        max_cq: limits::MAX_CQ,
        max_cqe: limits::MAX_CQE,
        max_mr: limits::MAX_MR,
        max_pd: limits::MAX_PD,
        max_qp_rd_atom: limits::MAX_QP_RD_ATOM,
        max_res_rd_atom: limits::MAX_RES_RD_ATOM,
        max_qp_init_rd_atom: limits::MAX_QP_RD_ATOM,
        atomic_cap: Some(AtomicCap::Hca),
        max_mw: limits::MAX_MW,
        max_mcast_grp: limits::MAX_MCAST_GRP,
        max_mcast_qp_attach: limits::MAX_MCAST_QP_ATTACH,
        max_total_mcast_qp_attach: limits::MAX_TOT_MCAST_QP_ATTACH,
        max_ah: limits::MAX_AH,
        max_srq: limits::MAX_SRQ,
        max_srq_wr: limits::MAX_SRQ_WR,
        max_srq_sge: limits::MAX_SRQ_SGE,
        max_fast_reg_page_list_len: limits::MAX_FAST_REG_PAGE_LIST_LEN,
        max_pkeys: limits::MAX_PKEYS,
        local_ca_ack_delay: limits::LOCAL_CA_ACK_DELAY,
        max_dm_size: 0,
        // What rxe reports with CONFIG_INFINIBAND_ON_DEMAND_PAGING: an
        // IB_ACCESS_ON_DEMAND MR pins nothing at registration, and each
        // access pins just the pages it touches, as the process has them
        // then (`ib::umem::OdpUmem`). No implicit ODP.
        odp_caps: OdpCaps {
            general: odp::SUPPORT,
            rc: odp::SEND
                | odp::RECV
                | odp::WRITE
                | odp::READ
                | odp::ATOMIC
                | odp::SRQ_RECV
                | odp::FLUSH
                | odp::ATOMIC_WRITE,
            uc: 0,
            ud: odp::SEND | odp::RECV | odp::SRQ_RECV,
            // XRC's requester and responder are RC's; its receives come
            // from XRC SRQs.
            xrc: odp::SEND | odp::WRITE | odp::READ | odp::ATOMIC | odp::SRQ_RECV,
        },
    }
}
