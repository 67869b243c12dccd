// SPDX-License-Identifier: GPL-2.0

//! Debug lines, as rdma_rxe's `rxe_dbg_*`: drops, NAKs, retries, RNR, QP
//! state changes and WQEs that fail. Each [`Site`] is a bit of the `debug`
//! module parameter (`glue::debug_enabled`), off by default, and its lines start
//! with the device's name and the site's.

use crate::ib::device::Device;
use crate::rrxe::device::{Rrxe, RrxeDev};
use crate::rrxe::stats::Counter;

/// A place that prints a debug line, and its bit in `debug`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum Site {
    /// A packet dropped for a wrong ICRC.
    DropIcrc = 0,
    /// A packet dropped for headers that do not parse or do not fit.
    DropHdr = 1,
    /// A packet dropped for want of a QP that takes it.
    DropQp = 2,
    /// A packet dropped for a wrong P_Key.
    DropPkey = 3,
    /// A datagram dropped for a wrong Q_Key.
    DropQkey = 4,
    /// A packet dropped for a PSN outside the window.
    DropPsn = 5,
    /// A packet dropped for a full receive queue.
    DropFull = 6,
    /// A UD or UC packet dropped for want of a receive WQE.
    DropNoBuffer = 7,
    /// A packet not sent for want of a route.
    NoRoute = 8,
    /// A NAK sent by the responder (sequence, RNR or error).
    NakSent = 9,
    /// A NAK received by the requester.
    NakRcvd = 10,
    /// A retransmission: a sequence NAK, a lost response or the timer.
    Retry = 11,
    /// An RNR NAK sent or received.
    Rnr = 12,
    /// A QP state change.
    QpState = 13,
    /// A WQE completed with an error.
    Err = 14,
    /// A packet or send held back for on-demand memory not resident.
    OdpFault = 15,
}

impl Site {
    /// The site's name, which starts its lines.
    pub const fn name(self) -> &'static str {
        match self {
            Self::DropIcrc => "drop_icrc",
            Self::DropHdr => "drop_hdr",
            Self::DropQp => "drop_qp",
            Self::DropPkey => "drop_pkey",
            Self::DropQkey => "drop_qkey",
            Self::DropPsn => "drop_psn",
            Self::DropFull => "drop_full",
            Self::DropNoBuffer => "drop_no_buffer",
            Self::NoRoute => "no_route",
            Self::NakSent => "nak_sent",
            Self::NakRcvd => "nak_rcvd",
            Self::Retry => "retry",
            Self::Rnr => "rnr",
            Self::QpState => "qp_state",
            Self::Err => "err",
            Self::OdpFault => "odp_fault",
        }
    }

    /// Whether the site is switched on.
    #[inline]
    pub fn on(self) -> bool {
        crate::rrxe::glue::debug_enabled(self as u32)
    }
}

/// Prints a line of `site` for the device of `dev`.
pub fn print(dev: &RrxeDev, site: Site, args: core::fmt::Arguments<'_>) {
    // SAFETY: An `RrxeDev` is made only by the pin-initialiser `Rrxe`'s
    // `newlink` hands the `ib` layer, in place in its `Device<Rrxe>`, and
    // reached only through `Device::data`.
    let ibdev = unsafe { Device::<Rrxe>::from_data(dev) };
    crate::rrxe::glue::debug_print(ibdev, format_args!("{}: {}\n", site.name(), args));
}

/// Counts a packet dropped for the reason `counter` and, when `site` is on,
/// prints `args` as its line. Formatting waits for the print.
pub fn dropped(dev: &RrxeDev, counter: Counter, site: Site, args: core::fmt::Arguments<'_>) {
    dev.count(counter, 1);
    if site.on() {
        print(dev, site, args);
    }
}

/// A debug line of a [`Site`] for the device whose data is `$d` (a
/// `&RrxeDev`), formatted only when the site is on.
#[macro_export]
macro_rules! rrxe_dbg {
    ($d:expr, $site:expr, $($arg:tt)*) => {
        if $site.on() {
            $crate::rrxe::debug::print($d, $site, format_args!($($arg)*));
        }
    };
}
