// SPDX-License-Identifier: GPL-2.0

//! Host build of rrxe's pure-logic modules.
//!
//! The files live in `rust/logic/` and are compiled unchanged into the kernel
//! module; here they are compiled for the host so their unit tests run under
//! `cargo test`.

#[path = "../../rust/logic/access.rs"]
pub mod access;
#[path = "../../rust/logic/acks.rs"]
pub mod acks;
#[path = "../../rust/logic/bounds.rs"]
pub mod bounds;
#[path = "../../rust/logic/cqe.rs"]
pub mod cqe;
#[path = "../../rust/logic/dm.rs"]
pub mod dm;
#[path = "../../rust/logic/fifo.rs"]
pub mod fifo;
#[path = "../../rust/logic/flights.rs"]
pub mod flights;
#[path = "../../rust/logic/gate.rs"]
pub mod gate;
#[path = "../../rust/logic/guid.rs"]
pub mod guid;
#[path = "../../rust/logic/hdr.rs"]
pub mod hdr;
#[path = "../../rust/logic/icrc.rs"]
pub mod icrc;
#[path = "../../rust/logic/keys.rs"]
pub mod keys;
#[path = "../../rust/logic/limits.rs"]
pub mod limits;
#[path = "../../rust/logic/mcast.rs"]
pub mod mcast;
#[path = "../../rust/logic/mtu.rs"]
pub mod mtu;
#[path = "../../rust/logic/mw.rs"]
pub mod mw;
#[path = "../../rust/logic/pkt.rs"]
pub mod pkt;
#[path = "../../rust/logic/pma.rs"]
pub mod pma;
#[path = "../../rust/logic/qp.rs"]
pub mod qp;
#[path = "../../rust/logic/rc.rs"]
pub mod rc;
#[path = "../../rust/logic/readresp.rs"]
pub mod readresp;
#[path = "../../rust/logic/ring.rs"]
pub mod ring;
#[path = "../../rust/logic/uc.rs"]
pub mod uc;
#[path = "../../rust/logic/wqe/mod.rs"]
pub mod wqe;
#[path = "../../rust/logic/wqe_layout.rs"]
pub mod wqe_layout;
