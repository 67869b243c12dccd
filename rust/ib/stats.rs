// SPDX-License-Identifier: GPL-2.0

//! Port hardware counters (`/sys/class/infiniband/DEV/ports/1/hw_counters`
//! and `rdma statistic`). The first 17 are rdma_rxe's, under its names
//! and in its order; the drops by reason follow, then the completions lost
//! to full CQs. The names are declared in the C helper file; [`Counter`]
//! indexes them, and [`PortCounters`] holds them.

use super::{
    bindings,
    device::{Device, Driver},
};
use crate::logic::pma;
use core::sync::atomic::{AtomicU64, Ordering};
use kernel::prelude::*;

/// The counters, in the order of their names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum Counter {
    /// Packets sent.
    SentPkts = bindings::rrxe_hw_counter_RRXE_CNT_SENT_PKTS,
    /// Packets received.
    RcvdPkts = bindings::rrxe_hw_counter_RRXE_CNT_RCVD_PKTS,
    /// Duplicate requests received.
    DupReq = bindings::rrxe_hw_counter_RRXE_CNT_DUP_REQ,
    /// Out-of-sequence requests received.
    OutOfSeqReq = bindings::rrxe_hw_counter_RRXE_CNT_OUT_OF_SEQ_REQ,
    /// RNR NAKs received.
    RcvRnr = bindings::rrxe_hw_counter_RRXE_CNT_RCV_RNR,
    /// RNR NAKs sent.
    SndRnr = bindings::rrxe_hw_counter_RRXE_CNT_SND_RNR,
    /// Sequence error NAKs received.
    RcvSeqErr = bindings::rrxe_hw_counter_RRXE_CNT_RCV_SEQ_ERR,
    /// ACKs deferred.
    SenderSched = bindings::rrxe_hw_counter_RRXE_CNT_SENDER_SCHED,
    /// Transport retries exhausted.
    RetryExceeded = bindings::rrxe_hw_counter_RRXE_CNT_RETRY_EXCEEDED,
    /// RNR retries exhausted.
    RnrRetryExceeded = bindings::rrxe_hw_counter_RRXE_CNT_RNR_RETRY_EXCEEDED,
    /// Completer retries.
    CompRetry = bindings::rrxe_hw_counter_RRXE_CNT_COMP_RETRY,
    /// Send errors.
    SendErr = bindings::rrxe_hw_counter_RRXE_CNT_SEND_ERR,
    /// Times the link went down.
    LinkDowned = bindings::rrxe_hw_counter_RRXE_CNT_LINK_DOWNED,
    /// RDMA sends.
    RdmaSend = bindings::rrxe_hw_counter_RRXE_CNT_RDMA_SEND,
    /// RDMA receives.
    RdmaRecv = bindings::rrxe_hw_counter_RRXE_CNT_RDMA_RECV,
    /// Bytes sent.
    SentBytes = bindings::rrxe_hw_counter_RRXE_CNT_SENT_BYTES,
    /// Bytes received.
    RcvdBytes = bindings::rrxe_hw_counter_RRXE_CNT_RCVD_BYTES,
    /// Packets dropped for a wrong ICRC.
    RcvdIcrcErr = bindings::rrxe_hw_counter_RRXE_CNT_RCVD_ICRC_ERR,
    /// Packets dropped for headers that do not parse or do not fit.
    RcvdHdrErr = bindings::rrxe_hw_counter_RRXE_CNT_RCVD_HDR_ERR,
    /// Packets dropped for want of a QP that takes them.
    RcvdUnknownQp = bindings::rrxe_hw_counter_RRXE_CNT_RCVD_UNKNOWN_QP,
    /// Packets dropped for a P_Key not the port's.
    RcvdPkeyErr = bindings::rrxe_hw_counter_RRXE_CNT_RCVD_PKEY_ERR,
    /// Datagrams dropped for a Q_Key not the QP's.
    RcvdQkeyErr = bindings::rrxe_hw_counter_RRXE_CNT_RCVD_QKEY_ERR,
    /// Packets dropped for a PSN outside the window.
    RcvdPsnErr = bindings::rrxe_hw_counter_RRXE_CNT_RCVD_PSN_ERR,
    /// Packets dropped for a full receive queue.
    RcvdQueueFull = bindings::rrxe_hw_counter_RRXE_CNT_RCVD_QUEUE_FULL,
    /// UD and UC packets dropped for want of a receive WQE.
    OutOfBuffer = bindings::rrxe_hw_counter_RRXE_CNT_OUT_OF_BUFFER,
    /// Packets not sent for want of a route.
    SendNoRoute = bindings::rrxe_hw_counter_RRXE_CNT_SEND_NO_ROUTE,
    /// Packets or sends held back because on-demand memory they need was
    /// not resident, and the path that met it does not wait for a page
    /// fault: a UD or UC packet dropped, an RC request answered with an
    /// RNR NAK, a read response or atomic result asked for again, a send
    /// paused.
    OdpFaultDeferred = bindings::rrxe_hw_counter_RRXE_CNT_ODP_FAULT_DEFERRED,
    /// Completions lost to a full CQ (which raised `IB_EVENT_CQ_ERR`).
    CqOverflow = bindings::rrxe_hw_counter_RRXE_CNT_CQ_OVERFLOW,
}

/// Number of counters.
pub const NUM_COUNTERS: usize = bindings::rrxe_hw_counter_RRXE_NUM_COUNTERS as usize;

/// A port's counters, indexed by [`Counter`]: each count is a relaxed
/// atomic add, callable in any context.
pub struct PortCounters([AtomicU64; NUM_COUNTERS]);

impl Default for PortCounters {
    /// Counters at zero.
    fn default() -> Self {
        Self([const { AtomicU64::new(0) }; NUM_COUNTERS])
    }
}

impl PortCounters {
    /// Adds `amount` to `counter`.
    pub fn count(&self, counter: Counter, amount: u64) {
        self.0[counter as usize].fetch_add(amount, Ordering::Relaxed);
    }

    /// The values, in the order of the names.
    pub fn read(&self) -> [u64; NUM_COUNTERS] {
        core::array::from_fn(|i| self.0[i].load(Ordering::Relaxed))
    }
}

/// The `alloc_hw_port_stats` op: a stats structure over the static name
/// table.
///
/// # Safety
///
/// None beyond the C signature: the device and port are not used.
pub(super) unsafe extern "C" fn alloc_hw_port_stats_callback(
    _ib: *mut bindings::ib_device,
    _port: u32,
) -> *mut bindings::rdma_hw_stats {
    // SAFETY: Allocates a stats structure over the static name table.
    unsafe { bindings::rrxe_alloc_hw_port_stats() }
}

/// The `get_hw_stats` op: the port's counters, read from the driver.
///
/// # Safety
///
/// The arguments of the core's `get_hw_stats` call on a device of `T`: a
/// live device and a stats structure from `alloc_hw_port_stats` (or
/// null), for the call.
pub(super) unsafe extern "C" fn get_hw_stats_callback<T: Driver>(
    ib: *mut bindings::ib_device,
    stats: *mut bindings::rdma_hw_stats,
    port: u32,
    _index: c_int,
) -> c_int {
    if port == 0 || stats.is_null() {
        return EINVAL.to_errno();
    }
    // SAFETY: A live device of ours.
    let values = T::hw_counters(unsafe { Device::<T>::from_raw(ib) }, port);
    // SAFETY: `stats` came from `alloc_hw_port_stats`, so `value` has
    // `NUM_COUNTERS` entries; the core holds its lock for the call.
    unsafe {
        let v = (*stats).value.as_mut_ptr();
        for (i, x) in values.iter().enumerate() {
            v.add(i).write(*x);
        }
    }
    NUM_COUNTERS as c_int
}

/// The `process_mad` op: the performance management agent, answering
/// PortCounters and ClassPortInfo MADs from the same counters.
///
/// # Safety
///
/// The arguments of a `process_mad` call on a device of `T` (from the MAD
/// layer or sysfs): a live device and two distinct MADs (or nulls), for
/// the call.
pub(super) unsafe extern "C" fn process_mad_callback<T: Driver>(
    ib: *mut bindings::ib_device,
    _flags: c_int,
    port: u32,
    _wc: *const bindings::ib_wc,
    _grh: *const bindings::ib_grh,
    inp: *const bindings::ib_mad,
    out: *mut bindings::ib_mad,
    _out_size: *mut usize,
    _out_pkey_index: *mut u16,
) -> c_int {
    const _: () = assert!(core::mem::size_of::<bindings::ib_mad>() == pma::MAD_SIZE);
    if port != 1 || inp.is_null() || out.is_null() {
        return bindings::ib_mad_result_IB_MAD_RESULT_FAILURE as c_int;
    }
    // SAFETY: A live device of ours.
    let v = T::hw_counters(unsafe { Device::<T>::from_raw(ib) }, port);
    let c = pma::PortCounters {
        xmit_bytes: v[Counter::SentBytes as usize],
        rcv_bytes: v[Counter::RcvdBytes as usize],
        xmit_packets: v[Counter::SentPkts as usize],
        rcv_packets: v[Counter::RcvdPkts as usize],
        link_downed: v[Counter::LinkDowned as usize],
    };
    // SAFETY: The MAD layer and sysfs pass two distinct `ib_mad`s
    // (256 bytes, checked above), valid for the call; bytes have no
    // alignment or validity requirements.
    let (i, o) = unsafe {
        (
            &*inp.cast::<[u8; pma::MAD_SIZE]>(),
            &mut *out.cast::<[u8; pma::MAD_SIZE]>(),
        )
    };
    match pma::answer(i, &c, o) {
        pma::Answer::NotMine => bindings::ib_mad_result_IB_MAD_RESULT_SUCCESS as c_int,
        pma::Answer::Reply => {
            (bindings::ib_mad_result_IB_MAD_RESULT_SUCCESS
                | bindings::ib_mad_result_IB_MAD_RESULT_REPLY) as c_int
        }
    }
}
