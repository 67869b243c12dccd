// SPDX-License-Identifier: GPL-2.0

//! rrxe: a Soft-RoCE (RoCEv2) RDMA provider in Rust.
//!
//! Wire- and ABI-compatible with the in-kernel `rdma_rxe`, so the stock
//! rdma-core userspace (librxe) drives it unmodified.

use kernel::prelude::*;

// Bindgen's output and the C glue's declarations, for the `ib` and `net`
// layers only.
mod bindings;
// The `ib` and `net` layers and the pure-logic files are libraries: parts
// of their API serve later work before the provider uses them.
#[allow(dead_code)]
pub mod ib;
#[allow(dead_code)]
pub mod logic;
#[allow(dead_code)]
pub mod net;
pub mod rrxe;

use ib::link::LinkOps;
use net::netdev::Notifier;
use rrxe::device::Rrxe;

module! {
    type: RrxeModule,
    name: "rrxe",
    authors: ["rrxe developers"],
    description: "Soft-RoCE RDMA provider in Rust (rxe-compatible)",
    license: "GPL",
    alias: ["rdma-link-rrxe"],
}

/// The module: link ops and the netdev notifier, registered while loaded.
pub struct RrxeModule {
    link: Option<Pin<KBox<LinkOps<Rrxe>>>>,
    notifier: Option<Pin<KBox<Notifier<Rrxe>>>>,
}

impl kernel::Module for RrxeModule {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        // SAFETY: Module init runs once, before anything else in the crate.
        unsafe { ib::init() };
        let link_type = rrxe::glue::link_type();
        if link_type.to_bytes().is_empty()
            || !link_type
                .to_bytes()
                .iter()
                .all(|c| c.is_ascii_alphanumeric() || *c == b'_')
        {
            pr_err!("link_type must be a non-empty name of letters, digits and '_'\n");
            return Err(EINVAL);
        }
        net::tunnel::init::<ib::device::Device<Rrxe>>()?;
        let registered = Notifier::<Rrxe>::register()
            .and_then(|n| LinkOps::<Rrxe>::register(link_type).map(|l| (n, l)));
        let (notifier, link) = match registered {
            Ok(r) => r,
            Err(e) => {
                net::tunnel::fini();
                return Err(e);
            }
        };
        let ([k, s8, sp], engine) = crate::rrxe::net::choose_icrc_engine();
        pr_info!(
            "ICRC over 4 KiB: crc32_le {k} ns, slice-by-8 {s8} ns, sparse fold {sp} ns: using {}\n",
            engine.name()
        );
        pr_info!("loaded, link type {}\n", link_type.to_str().unwrap_or("?"));
        Ok(Self {
            link: Some(link),
            notifier: Some(notifier),
        })
    }
}

impl Drop for RrxeModule {
    fn drop(&mut self) {
        // No new devices once the link type is gone (unregistering it waits
        // for a running `rdma link add`). Then remove ours, and only then stop
        // listening to netdev events.
        drop(self.link.take());
        ib::device::unregister_all::<Rrxe>();
        drop(self.notifier.take());
        net::tunnel::fini();
        ib::exit();
        pr_info!("unloaded\n");
    }
}
