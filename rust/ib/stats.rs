// SPDX-License-Identifier: GPL-2.0

//! Port hardware counters (`/sys/class/infiniband/DEV/ports/1/hw_counters`
//! and `rdma statistic`). The names are rdma_rxe's, declared in the C
//! helper file; [`Counter`] indexes them.

use super::bindings;

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
}

/// Number of counters.
pub const NUM_COUNTERS: usize = bindings::rrxe_hw_counter_RRXE_NUM_COUNTERS as usize;
