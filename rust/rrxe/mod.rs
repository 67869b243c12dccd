// SPDX-License-Identifier: GPL-2.0

//! The rrxe provider: a Soft-RoCE device on top of the `ib` layer.

pub mod ah;
pub mod cq;
pub mod debug;
pub mod device;
pub mod dm;
pub mod glue;
pub mod gso;
pub mod mcast;
pub mod mr;
pub mod mr_users;
pub mod mw;
pub mod net;
pub mod params;
pub mod pd;
pub mod pool;
pub mod qp;
pub mod qp_destroy;
pub mod qp_flush;
pub mod qp_modify;
pub mod qp_new;
pub mod qp_xrc;
pub mod queue;
pub mod rc;
pub mod sge;
pub mod sq;
pub mod srq;
pub mod stats;
pub mod tx;
pub mod uc;
pub mod ud;
pub mod xrcd;
