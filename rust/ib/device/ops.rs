// SPDX-License-Identifier: GPL-2.0

//! The ops table: the `struct ib_device_ops` of driver `T`.
//!
//! Mandatory callbacks are always installed; each optional one only when
//! `T` implements the operation behind it (`HAS_*` from `#[vtable]`), so
//! the core sees `EOPNOTSUPP` for the rest. The callbacks themselves live
//! next to the abstraction of their object family.

use super::{gid, port, registration, Driver};
use crate::ib::{
    ah::{self, AhOps},
    bindings,
    cq::{self, CqOps},
    dm::{self, DmOps},
    mmap,
    mr::{self, MrOps},
    mw::{self, MwOps},
    object::{Ah, Cq, Mw, Pd, Qp, Srq, Ucontext, Xrcd},
    pd,
    qp::{self, QpOps},
    srq::{self, SrqOps},
    stats,
    xrcd::{self, XrcdOps},
};
use kernel::prelude::*;

/// The ops table of driver `T`, owned by `module`.
pub(super) fn ops<T: Driver>(module: &ThisModule) -> bindings::ib_device_ops {
    // SAFETY: All-zero is a valid ops table (all callbacks `None`).
    let mut o: bindings::ib_device_ops = unsafe { core::mem::zeroed() };
    o.owner = module.as_ptr();
    o.driver_id = T::DRIVER_ID;
    o.uverbs_abi_ver = T::UVERBS_ABI_VER;

    // The device and its port.
    o.query_device = Some(port::query_device_callback::<T>);
    o.query_port = Some(port::query_port_callback::<T>);
    o.query_pkey = Some(port::query_pkey_callback::<T>);
    o.query_gid = Some(port::query_gid_callback);
    o.get_port_immutable = Some(port::get_port_immutable_callback::<T>);
    o.get_link_layer = Some(port::get_link_layer_callback);
    o.add_gid = Some(gid::add_gid_callback::<T>);
    o.del_gid = Some(gid::del_gid_callback::<T>);
    o.dealloc_driver = Some(registration::dealloc_driver_callback::<T>);
    if T::HAS_ENABLE {
        o.enable_driver = Some(registration::enable_driver_callback::<T>);
    }
    if T::HAS_HW_COUNTERS {
        // The performance management agent answers from the same
        // counters (sysfs `ports/N/counters/`, and PMA MADs on QP1).
        o.process_mad = Some(stats::process_mad_callback::<T>);
        o.alloc_hw_port_stats = Some(stats::alloc_hw_port_stats_callback::<T>);
        o.get_hw_stats = Some(stats::get_hw_stats_callback::<T>);
    }

    // User contexts, their mappings, and PDs.
    o.alloc_ucontext = Some(pd::alloc_ucontext_callback::<T>);
    o.dealloc_ucontext = Some(pd::dealloc_ucontext_callback::<T>);
    o.disassociate_ucontext = Some(pd::disassociate_ucontext_callback);
    o.query_ucontext = Some(pd::query_ucontext_callback);
    o.mmap = Some(mmap::mmap_callback);
    o.mmap_free = Some(mmap::mmap_free_callback);
    o.alloc_pd = Some(pd::alloc_pd_callback::<T>);
    o.dealloc_pd = Some(pd::dealloc_pd_callback::<T>);
    o.size_ib_ucontext = core::mem::size_of::<Ucontext<T>>();
    o.size_ib_pd = core::mem::size_of::<Pd<T>>();

    // Memory regions, windows and device memory.
    if <T::Mr as MrOps<T>>::HAS_REG_USER_MR {
        o.reg_user_mr = Some(mr::reg_user_mr_callback::<T>);
    }
    if <T::Mr as MrOps<T>>::HAS_REREG_USER_MR {
        o.rereg_user_mr = Some(mr::rereg_user_mr_callback::<T>);
    }
    if <T::Mr as MrOps<T>>::HAS_ADVISE_MR {
        o.advise_mr = Some(mr::advise_mr_callback::<T>);
    }
    if <T::Mr as MrOps<T>>::HAS_GET_DMA_MR {
        o.get_dma_mr = Some(mr::get_dma_mr_callback::<T>);
    }
    if <T::Mr as MrOps<T>>::HAS_ALLOC_MR {
        o.alloc_mr = Some(mr::alloc_mr_callback::<T>);
        o.map_mr_sg = Some(mr::map_mr_sg_callback::<T>);
    }
    if <T::Mr as MrOps<T>>::HAS_REG_USER_MR
        || <T::Mr as MrOps<T>>::HAS_GET_DMA_MR
        || <T::Mr as MrOps<T>>::HAS_ALLOC_MR
        || <T::Dm as DmOps<T>>::HAS_REG_DM_MR
    {
        o.dereg_mr = Some(mr::dereg_mr_callback::<T>);
    }
    if <T::Mw as MwOps<T>>::HAS_ALLOC_MW {
        o.alloc_mw = Some(mw::alloc_mw_callback::<T>);
        o.dealloc_mw = Some(mw::dealloc_mw_callback::<T>);
        o.size_ib_mw = core::mem::size_of::<Mw<T>>();
    }
    if <T::Dm as DmOps<T>>::HAS_ALLOC_DM {
        o.alloc_dm = Some(dm::alloc_dm_callback::<T>);
        o.dealloc_dm = Some(dm::dealloc_dm_callback::<T>);
        if <T::Dm as DmOps<T>>::HAS_REG_DM_MR {
            o.reg_dm_mr = Some(dm::reg_dm_mr_callback::<T>);
        }
    }

    // Completion queues.
    if <T::Cq as CqOps<T>>::HAS_CREATE_CQ {
        o.create_cq = Some(cq::create_cq_callback::<T>);
        o.destroy_cq = Some(cq::destroy_cq_callback::<T>);
        o.size_ib_cq = core::mem::size_of::<Cq<T>>();
    }
    if <T::Cq as CqOps<T>>::HAS_RESIZE_CQ {
        o.resize_user_cq = Some(cq::resize_cq_callback::<T>);
    }
    if <T::Cq as CqOps<T>>::HAS_REQ_NOTIFY_CQ {
        o.req_notify_cq = Some(cq::req_notify_cq_callback::<T>);
    }
    if <T::Cq as CqOps<T>>::HAS_POLL_CQ {
        o.poll_cq = Some(cq::poll_cq_callback::<T>);
    }
    if <T::Cq as CqOps<T>>::HAS_PEEK_CQ {
        o.peek_cq = Some(cq::peek_cq_callback::<T>);
    }

    // Address handles.
    if <T::Ah as AhOps<T>>::HAS_CREATE_AH {
        o.create_ah = Some(ah::create_ah_callback::<T>);
        o.create_user_ah = Some(ah::create_user_ah_callback::<T>);
        o.destroy_ah = Some(ah::destroy_ah_callback::<T>);
        o.size_ib_ah = core::mem::size_of::<Ah<T>>();
        if <T::Ah as AhOps<T>>::HAS_QUERY_AH {
            o.query_ah = Some(ah::query_ah_callback::<T>);
        }
    }

    // Shared receive queues.
    if <T::Srq as SrqOps<T>>::HAS_CREATE_SRQ {
        o.create_srq = Some(srq::create_srq_callback::<T>);
        o.modify_srq = Some(srq::modify_srq_callback::<T>);
        o.query_srq = Some(srq::query_srq_callback::<T>);
        o.destroy_srq = Some(srq::destroy_srq_callback::<T>);
        o.size_ib_srq = core::mem::size_of::<Srq<T>>();
    }
    if <T::Srq as SrqOps<T>>::HAS_POST_SRQ_RECV {
        o.post_srq_recv = Some(srq::post_srq_recv_callback::<T>);
    }

    // XRC domains. The core allocates them at `size_ib_xrcd` (a driver
    // with `alloc_xrcd` must give a size).
    if <T::Xrcd as XrcdOps<T>>::HAS_ALLOC_XRCD {
        o.alloc_xrcd = Some(xrcd::alloc_xrcd_callback::<T>);
        o.dealloc_xrcd = Some(xrcd::dealloc_xrcd_callback::<T>);
        o.size_ib_xrcd = core::mem::size_of::<Xrcd<T>>();
    }

    // Queue pairs, their work requests and multicast groups.
    if <T::Qp as QpOps<T>>::HAS_CREATE_QP {
        o.create_qp = Some(qp::create_qp_callback::<T>);
        o.modify_qp = Some(qp::modify_qp_callback::<T>);
        o.query_qp = Some(qp::query_qp_callback::<T>);
        o.destroy_qp = Some(qp::destroy_qp_callback::<T>);
        o.size_ib_qp = core::mem::size_of::<Qp<T>>();
    }
    if <T::Qp as QpOps<T>>::HAS_POST_SEND_USER {
        o.post_send = Some(qp::post_send_callback::<T>);
    }
    if <T::Qp as QpOps<T>>::HAS_POST_RECV {
        o.post_recv = Some(qp::post_recv_callback::<T>);
    }
    if <T::Qp as QpOps<T>>::HAS_ATTACH_MCAST {
        o.attach_mcast = Some(qp::attach_mcast_callback::<T>);
        o.detach_mcast = Some(qp::detach_mcast_callback::<T>);
    }
    o
}
