// SPDX-License-Identifier: GPL-2.0

//! Packet emission, shared by the transports: a packet's headers and the
//! source of its payload, sent on the wire as RoCEv2 (`net`), or filled
//! into a buffer for a QP of this device.
//!
//! The payload is gathered while the packet is built, straight from its
//! source memory. A packet whose payload cannot be gathered is not sent,
//! and the caller learns it (`Err`); a packet lost on the way out (no
//! route, no memory) is counted and dropped, as the wire would drop it.

use crate::ib::{device::Device, umem::Fault};
use crate::logic::{
    access,
    hdr::{Headers, MAX_HDRS},
    wqe::Payload,
};
use crate::rrxe::pd::PdId;
use crate::rrxe::stats::Counter;
use crate::rrxe::{
    device::{Rrxe, RrxeDev},
    gso,
    mr::{self, Copy},
    net::{self, Egress},
    sge::Gather,
};
use kernel::prelude::*;

/// Where a packet's payload comes from.
#[derive(Clone, Copy)]
pub(crate) enum Src {
    /// No payload.
    None,
    /// A send WQE's data (in the sender's copy of its slot), from this
    /// offset.
    Wqe {
        /// The WQE's payload.
        payload: Payload,
        /// Bytes of it before this packet's.
        off: u64,
    },
    /// Eight bytes carried in the WQE (ATOMIC WRITE).
    Bytes([u8; 8]),
    /// Memory named by an rkey (read responses).
    Key {
        /// The rkey.
        rkey: u32,
        /// The PD it is looked up in: the QP's, or an XRC SRQ's.
        pd: PdId,
        /// The address of the packet's first byte.
        va: u64,
    },
}

/// A packet to send: its headers, its payload length and where the
/// payload comes from.
#[derive(Clone, Copy)]
pub(crate) struct Packet {
    /// The BTH and extension headers.
    pub(crate) hdrs: Headers,
    /// Payload bytes.
    pub(crate) len: usize,
    /// Their source.
    pub(crate) src: Src,
}

impl Packet {
    /// A packet of headers only.
    pub(crate) fn new(hdrs: Headers) -> Self {
        Self {
            hdrs,
            len: 0,
            src: Src::None,
        }
    }

    /// Fills `out` from the payload's source, for QP `qpn` of PD `pd`
    /// whose WQE (if the payload comes from one) is in `slot`.
    pub(crate) fn fill(
        &self,
        dev: &RrxeDev,
        pd: PdId,
        qpn: u32,
        slot: &[u8],
        out: &mut [u8],
    ) -> Result {
        match self.src {
            Src::None => Ok(()),
            Src::Bytes(b) => {
                out.copy_from_slice(b.get(..out.len()).ok_or(EINVAL)?);
                Ok(())
            }
            Src::Wqe { payload, off } => {
                // An RC payload never waits for an ODP page fault: the
                // requester also runs in the receive path, after an ACK.
                // `EAGAIN` sends it later (see `rc::requester`).
                let mut g = Gather::new(slot, payload);
                g.skip(off)?;
                g.read(dev, pd, out, Fault::NoWait)
            }
            Src::Key { rkey, pd, va } => {
                if out.is_empty() {
                    return Ok(());
                }
                // A read response never waits for an ODP page fault (it may
                // be sent from the receive path, or from a task that the
                // QP's destruction waits for): `EAGAIN` abandons the
                // response, and the requester asks again (see
                // `rc::replies::pump`).
                mr::copy_by_key(
                    dev,
                    rkey,
                    pd,
                    qpn,
                    access::REMOTE_READ,
                    va,
                    Copy::From(out),
                    Fault::NoWait,
                )
            }
        }
    }
}

/// Sends one packet on the wire, to `egress`: `hdrs`, then `len` payload
/// bytes that `fill` writes. `Err` when the packet could not be sent.
pub(crate) fn xmit(
    egress: &Egress<'_>,
    hdrs: &Headers,
    len: usize,
    fill: impl FnOnce(&mut [u8]) -> Result,
) -> Result {
    let mut h = [0u8; MAX_HDRS];
    let n = hdrs.write(&mut h);
    net::xmit(egress, &h[..n], len, fill)
}

/// Sends one packet of a connected QP on the wire (as [`xmit`]). `Err`
/// when `fill` could not gather the payload (nothing was sent), or
/// `EMSGSIZE` when the packet is bigger than the route carries (a path MTU
/// above the netdev's, which `modify_qp` accepts as rxe does): sending it
/// again cannot help, and the WQE fails, as rxe fails a WQE whose packet it
/// could not send (with `LOC_QP_OP_ERR`, which its error flush reports as
/// `WR_FLUSH_ERR`). Any other packet lost on the way out is counted: RC's
/// retransmit timer recovers it, UC does not retry.
pub(crate) fn send(
    egress: &Egress<'_>,
    hdrs: &Headers,
    len: usize,
    fill: impl FnOnce(&mut [u8]) -> Result,
) -> Result {
    let mut gather_err = false;
    let r = xmit(egress, hdrs, len, |b| {
        fill(b).inspect_err(|_| gather_err = true)
    });
    outcome(egress.dev, r, gather_err)
}

/// Sends `segments` packets of a connected QP on the wire as one burst
/// ([`gso::xmit`]): packet `k` has the headers and payload length
/// `packet(k)` gives, and `fill(k, ..)` writes its payload. The outcome is
/// [`send`]'s, for the whole burst (a payload that cannot be gathered
/// sends none of it).
pub(crate) fn send_burst(
    egress: &Egress<'_>,
    segments: usize,
    packet: impl Fn(usize) -> (Headers, usize),
    mut fill: impl FnMut(usize, &mut [u8]) -> Result,
) -> Result {
    let mut gather_err = false;
    let r = gso::xmit(egress, segments, packet, |k, b| {
        fill(k, b).inspect_err(|_| gather_err = true)
    });
    outcome(egress.dev, r, gather_err)
}

/// What [`send`] returns for `result`, the result of sending (`gather_err`: the
/// payload could not be gathered).
fn outcome(dev: &Device<Rrxe>, result: Result, gather_err: bool) -> Result {
    match result {
        Err(e) if gather_err => Err(e),
        Err(e) if e == EMSGSIZE => {
            dev.data().count(Counter::SendErr, 1);
            Err(e)
        }
        Err(_) => {
            dev.data().count(Counter::SendErr, 1);
            Ok(())
        }
        Ok(()) => Ok(()),
    }
}

/// The status of a WQE whose packet [`send`] refused: `EMSGSIZE` (bigger
/// than the route carries) is rxe's `LOC_QP_OP_ERR`, and so is `ENOMEM`,
/// anything else a payload that could not be gathered.
pub(crate) fn fail_status(err: Error) -> u32 {
    // Too big for the route, or a buffer the owner's memory cgroup had no
    // room for: the operation failed, not the memory it names.
    if err == EMSGSIZE || err == ENOMEM {
        crate::logic::cqe::status::LOC_QP_OP_ERR
    } else {
        crate::logic::cqe::status::LOC_PROT_ERR
    }
}

/// A packet for a QP of this device: `fill` writes its payload into `buf`,
/// and it counts as sent. `Err` when the payload could not be gathered
/// (nothing was sent).
pub(crate) fn local<'b>(
    dev: &RrxeDev,
    buf: &'b mut [u8],
    fill: impl FnOnce(&mut [u8]) -> Result,
) -> Result<&'b [u8]> {
    fill(buf)?;
    dev.count(Counter::SentPkts, 1);
    dev.count(Counter::SentBytes, buf.len() as u64);
    Ok(buf)
}

/// A packet delivered in place counts as received too.
pub(crate) fn received(dev: &RrxeDev, len: usize) {
    dev.count(Counter::RcvdPkts, 1);
    dev.count(Counter::RcvdBytes, len as u64);
}
