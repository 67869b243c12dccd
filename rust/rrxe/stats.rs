// SPDX-License-Identifier: GPL-2.0

//! The port's hardware counters (`/sys/class/infiniband/DEV/ports/1/hw_counters`
//! and `rdma statistic`). The first 17 are rdma_rxe's, under its names
//! and in its order; the drops by reason follow, then the completions lost
//! to full CQs. [`Counter`] indexes them, [`NAMES`] names them (for the
//! `ib` layer, through `Driver::HW_COUNTERS`), and [`PortCounters`] holds
//! them. `out_of_buffer` is mlx5's name for the same drop.

use crate::ib::stats::StatDesc;
use crate::logic::pma;
use core::sync::atomic::{AtomicU64, Ordering};

/// The counters, in the order of their names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum Counter {
    /// Packets sent.
    SentPkts = 0,
    /// Packets received.
    RcvdPkts = 1,
    /// Duplicate requests received.
    DupReq = 2,
    /// Out-of-sequence requests received.
    OutOfSeqReq = 3,
    /// RNR NAKs received.
    RcvRnr = 4,
    /// RNR NAKs sent.
    SndRnr = 5,
    /// Sequence error NAKs received.
    RcvSeqErr = 6,
    /// ACKs deferred.
    SenderSched = 7,
    /// Transport retries exhausted.
    RetryExceeded = 8,
    /// RNR retries exhausted.
    RnrRetryExceeded = 9,
    /// Completer retries.
    CompRetry = 10,
    /// Send errors.
    SendErr = 11,
    /// Times the link went down.
    LinkDowned = 12,
    /// RDMA sends.
    RdmaSend = 13,
    /// RDMA receives.
    RdmaRecv = 14,
    /// Bytes sent.
    SentBytes = 15,
    /// Bytes received.
    RcvdBytes = 16,
    /// Packets dropped for a wrong ICRC.
    RcvdIcrcErr = 17,
    /// Packets dropped for headers that do not parse or do not fit.
    RcvdHdrErr = 18,
    /// Packets dropped for want of a QP that takes them.
    RcvdUnknownQp = 19,
    /// Packets dropped for a P_Key not the port's.
    RcvdPkeyErr = 20,
    /// Datagrams dropped for a Q_Key not the QP's.
    RcvdQkeyErr = 21,
    /// Packets dropped for a PSN outside the window.
    RcvdPsnErr = 22,
    /// Packets dropped for a full receive queue.
    RcvdQueueFull = 23,
    /// UD and UC packets dropped for want of a receive WQE.
    OutOfBuffer = 24,
    /// Packets not sent for want of a route.
    SendNoRoute = 25,
    /// Packets or sends held back because on-demand memory they need was
    /// not resident, and the path that met it does not wait for a page
    /// fault: a UD or UC packet dropped, an RC request answered with an
    /// RNR NAK, a read response or atomic result asked for again, a send
    /// paused.
    OdpFaultDeferred = 26,
    /// Completions lost to a full CQ (which raised `IB_EVENT_CQ_ERR`).
    CqOverflow = 27,
}

/// Number of counters.
pub const NUM_COUNTERS: usize = Counter::CqOverflow as usize + 1;

/// The counters' names, indexed by [`Counter`].
pub static NAMES: [StatDesc; NUM_COUNTERS] = [
    StatDesc::new(c"sent_pkts"),
    StatDesc::new(c"rcvd_pkts"),
    StatDesc::new(c"duplicate_request"),
    StatDesc::new(c"out_of_seq_request"),
    StatDesc::new(c"rcvd_rnr_err"),
    StatDesc::new(c"send_rnr_err"),
    StatDesc::new(c"rcvd_seq_err"),
    StatDesc::new(c"ack_deferred"),
    StatDesc::new(c"retry_exceeded_err"),
    StatDesc::new(c"retry_rnr_exceeded_err"),
    StatDesc::new(c"completer_retry_err"),
    StatDesc::new(c"send_err"),
    StatDesc::new(c"link_downed"),
    StatDesc::new(c"rdma_sends"),
    StatDesc::new(c"rdma_recvs"),
    StatDesc::new(c"sent_bytes"),
    StatDesc::new(c"rcvd_bytes"),
    StatDesc::new(c"rcvd_icrc_err"),
    StatDesc::new(c"rcvd_hdr_err"),
    StatDesc::new(c"rcvd_unknown_qp"),
    StatDesc::new(c"rcvd_pkey_err"),
    StatDesc::new(c"rcvd_qkey_err"),
    StatDesc::new(c"rcvd_psn_err"),
    StatDesc::new(c"rcvd_queue_full"),
    StatDesc::new(c"out_of_buffer"),
    StatDesc::new(c"send_no_route"),
    StatDesc::new(c"odp_fault_deferred"),
    StatDesc::new(c"cq_overflow"),
];

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

    /// The values, in the order of the names, into `values` (as many as
    /// both have).
    pub fn read(&self, values: &mut [u64]) {
        for (v, c) in values.iter_mut().zip(self.0.iter()) {
            *v = c.load(Ordering::Relaxed);
        }
    }

    /// The counters the performance management agent reports.
    pub fn pma(&self) -> pma::PortCounters {
        let get = |c: Counter| self.0[c as usize].load(Ordering::Relaxed);
        pma::PortCounters {
            xmit_bytes: get(Counter::SentBytes),
            rcv_bytes: get(Counter::RcvdBytes),
            xmit_packets: get(Counter::SentPkts),
            rcv_packets: get(Counter::RcvdPkts),
            link_downed: get(Counter::LinkDowned),
        }
    }
}
