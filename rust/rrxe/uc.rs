// SPDX-License-Identifier: GPL-2.0

//! The unreliable connected transport.

use crate::ib::device::Device;
use crate::rrxe::{device::Rrxe, net::RxPkt};

/// A UC packet from the wire.
pub fn rx(_dev: &Device<Rrxe>, _p: &RxPkt<'_>) {}
