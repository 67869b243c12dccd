// SPDX-License-Identifier: GPL-2.0

//! Scatter/gather lists: reading a send WQE's payload, and writing data into
//! the SGEs of a receive WQE (or of an RDMA READ), through the memory keys
//! of the QP's PD. RC, UC and UD share these.

use crate::ib::umem::Fault;
use crate::logic::{
    access,
    wqe::{self, Payload},
};
use crate::rrxe::pd::PdId;
use crate::rrxe::{device::RrxeDev, mr};
use kernel::prelude::*;

/// Reads a send WQE's payload in order, a packet at a time.
pub(crate) struct Gather<'a> {
    slot: &'a [u8],
    payload: Payload,
    sge: u32,
    off: u64,
    inline_off: usize,
}

impl<'a> Gather<'a> {
    /// A reader at the start of the payload of the send WQE in `slot`.
    pub(crate) fn new(slot: &'a [u8], payload: Payload) -> Self {
        Self {
            slot,
            payload,
            sge: 0,
            off: 0,
            inline_off: 0,
        }
    }

    /// Moves `bytes` ahead without reading them.
    pub(crate) fn skip(&mut self, bytes: u64) -> Result {
        match self.payload {
            Payload::Inline { len } => {
                let end = (self.inline_off as u64).checked_add(bytes).ok_or(EINVAL)?;
                if end > u64::from(len) {
                    return Err(EINVAL);
                }
                self.inline_off = end as usize;
            }
            Payload::Sges { n: count, .. } => {
                let mut left = bytes;
                while left > 0 {
                    if self.sge >= count {
                        return Err(EINVAL);
                    }
                    let sge = wqe::sge_at(self.slot, wqe::SEND_HDR, self.sge).ok_or(EINVAL)?;
                    let room = u64::from(sge.length).saturating_sub(self.off);
                    if room > left {
                        self.off += left;
                        left = 0;
                    } else {
                        left -= room;
                        self.sge += 1;
                        self.off = 0;
                    }
                }
            }
        }
        Ok(())
    }

    /// Fills `out` with the next bytes, through the lkeys of `pd`. `fault`
    /// says whether on-demand memory may wait for its pages (`EAGAIN` if
    /// not).
    pub(crate) fn read(&mut self, dev: &RrxeDev, pd: PdId, out: &mut [u8], fault: Fault) -> Result {
        match self.payload {
            Payload::Inline { len } => {
                let end = self.inline_off.checked_add(out.len()).ok_or(EINVAL)?;
                if end > len as usize {
                    return Err(EINVAL);
                }
                let src = self
                    .slot
                    .get(wqe::SEND_HDR + self.inline_off..wqe::SEND_HDR + end)
                    .ok_or(EINVAL)?;
                out.copy_from_slice(src);
                self.inline_off = end;
            }
            Payload::Sges { n, .. } => {
                let mut done = 0usize;
                while done < out.len() {
                    if self.sge >= n {
                        return Err(EINVAL);
                    }
                    let sge = wqe::sge_at(self.slot, wqe::SEND_HDR, self.sge).ok_or(EINVAL)?;
                    let left = u64::from(sge.length).saturating_sub(self.off);
                    if left == 0 {
                        self.sge += 1;
                        self.off = 0;
                        continue;
                    }
                    let k = left.min((out.len() - done) as u64) as usize;
                    let at = sge.addr.checked_add(self.off).ok_or(EINVAL)?;
                    let m = mr::lookup_mr(dev, sge.lkey, pd, 0, at, k as u64)?;
                    m.read(at, &mut out[done..done + k], fault)?;
                    done += k;
                    self.off += k as u64;
                }
            }
        }
        Ok(())
    }
}

/// Whether the payload of the send WQE in `slot` (`payload`, its SGEs) can
/// be gathered without waiting for a page fault: `EAGAIN` if on-demand
/// memory it names is not resident and its fault would wait (the fault is
/// started). Keys that do not resolve are left for the send to report.
pub(crate) fn resident(dev: &RrxeDev, pd: PdId, slot: &[u8], payload: Payload) -> Result {
    let Payload::Sges { n, .. } = payload else {
        return Ok(());
    };
    for i in 0..n {
        let Some(sge) = wqe::sge_at(slot, wqe::SEND_HDR, i) else {
            break;
        };
        let len = u64::from(sge.length);
        if len == 0 {
            continue;
        }
        if let Ok(m) = mr::lookup_mr(dev, sge.lkey, pd, 0, sge.addr, len) {
            let r = m.resident(sge.addr, len);
            if r == Err(EAGAIN) {
                return r;
            }
        }
    }
    Ok(())
}

/// Writes `data` into a receive WQE's SGEs starting `offset` bytes in
/// (`fault`: see [`scatter_sges`]).
pub(crate) fn scatter_at(
    dev: &RrxeDev,
    pd: PdId,
    slot: &[u8],
    num_sge: u32,
    offset: u64,
    data: &[u8],
    fault: Fault,
) -> Result {
    scatter_sges(dev, pd, slot, wqe::RECV_HDR, num_sge, offset, data, fault)
}

/// Writes `data` into the `num_sge` SGEs at `base` in a WQE (a receive
/// WQE's, or an RDMA READ's), starting `offset` bytes in; each SGE's lkey
/// must allow local write. `fault` says whether on-demand memory may wait
/// for its pages (`EAGAIN` if not; some of `data` may have been written).
#[expect(clippy::too_many_arguments)]
pub(crate) fn scatter_sges(
    dev: &RrxeDev,
    pd: PdId,
    slot: &[u8],
    base: usize,
    num_sge: u32,
    offset: u64,
    data: &[u8],
    fault: Fault,
) -> Result {
    let mut skip = offset;
    let mut done = 0usize;
    for i in 0..num_sge {
        if done == data.len() {
            break;
        }
        let sge = wqe::sge_at(slot, base, i).ok_or(EINVAL)?;
        let l = u64::from(sge.length);
        if skip >= l {
            skip -= l;
            continue;
        }
        let k = (l - skip).min((data.len() - done) as u64) as usize;
        let at = sge.addr.checked_add(skip).ok_or(EINVAL)?;
        let m = mr::lookup_mr(dev, sge.lkey, pd, access::LOCAL_WRITE, at, k as u64)?;
        m.write(at, &data[done..done + k], fault)?;
        done += k;
        skip = 0;
    }
    if done != data.len() {
        return Err(EINVAL);
    }
    Ok(())
}
