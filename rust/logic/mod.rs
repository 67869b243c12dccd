// SPDX-License-Identifier: GPL-2.0

//! Pure logic: no kernel imports, so these files also build as the host
//! crate in `host/` for `cargo test` and fuzzing.

pub mod access;
pub mod acks;
pub mod bounds;
pub mod cqe;
pub mod dm;
pub mod fifo;
pub mod flights;
pub mod gate;
pub mod guid;
pub mod hdr;
pub mod icrc;
pub mod keys;
pub mod limits;
pub mod mcast;
pub mod mtu;
pub mod mw;
pub mod pkt;
pub mod pma;
pub mod qp;
pub mod rc;
pub mod readresp;
pub mod ring;
pub mod uc;
pub mod wqe;
pub mod wqe_layout;
