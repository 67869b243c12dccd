// SPDX-License-Identifier: GPL-2.0

//! Queue pair attributes: the values `modify_qp` may set, their checks as
//! rxe makes them, and the sizing of the send and receive rings.

use super::limits;

/// `enum ib_qp_state`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum QpState {
    /// Reset (the state a QP is created in).
    #[default]
    Reset = 0,
    /// Initialised.
    Init = 1,
    /// Ready to receive.
    Rtr = 2,
    /// Ready to send.
    Rts = 3,
    /// Send queue drained.
    Sqd = 4,
    /// Send queue error.
    Sqe = 5,
    /// Error.
    Err = 6,
}

impl QpState {
    /// From the C value.
    pub const fn from_raw(v: u32) -> Option<Self> {
        Some(match v {
            0 => Self::Reset,
            1 => Self::Init,
            2 => Self::Rtr,
            3 => Self::Rts,
            4 => Self::Sqd,
            5 => Self::Sqe,
            6 => Self::Err,
            _ => return None,
        })
    }
}

/// `enum ib_qp_attr_mask` bits.
pub mod mask {
    /// New state.
    pub const STATE: u32 = 1;
    /// Current state given.
    pub const CUR_STATE: u32 = 1 << 1;
    /// SQD async notification.
    pub const EN_SQD_ASYNC_NOTIFY: u32 = 1 << 2;
    /// Remote access flags.
    pub const ACCESS_FLAGS: u32 = 1 << 3;
    /// P_Key index.
    pub const PKEY_INDEX: u32 = 1 << 4;
    /// Port.
    pub const PORT: u32 = 1 << 5;
    /// Q_Key.
    pub const QKEY: u32 = 1 << 6;
    /// Address vector.
    pub const AV: u32 = 1 << 7;
    /// Path MTU.
    pub const PATH_MTU: u32 = 1 << 8;
    /// Local ACK timeout.
    pub const TIMEOUT: u32 = 1 << 9;
    /// Retry count.
    pub const RETRY_CNT: u32 = 1 << 10;
    /// RNR retry count.
    pub const RNR_RETRY: u32 = 1 << 11;
    /// Receive PSN.
    pub const RQ_PSN: u32 = 1 << 12;
    /// Outstanding RDMA reads/atomics as initiator.
    pub const MAX_QP_RD_ATOMIC: u32 = 1 << 13;
    /// Alternate path.
    pub const ALT_PATH: u32 = 1 << 14;
    /// RNR NAK timer.
    pub const MIN_RNR_TIMER: u32 = 1 << 15;
    /// Send PSN.
    pub const SQ_PSN: u32 = 1 << 16;
    /// Outstanding RDMA reads/atomics as responder.
    pub const MAX_DEST_RD_ATOMIC: u32 = 1 << 17;
    /// Path migration state.
    pub const PATH_MIG_STATE: u32 = 1 << 18;
    /// Capacities.
    pub const CAP: u32 = 1 << 19;
    /// Destination QP number.
    pub const DEST_QPN: u32 = 1 << 20;
    /// Rate limit (raw packet QPs only).
    pub const RATE_LIMIT: u32 = 1 << 25;
}

/// A RoCE address vector, as a QP or AH keeps it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Av {
    /// Destination GID.
    pub dgid: [u8; 16],
    /// Source GID table index.
    pub sgid_index: u8,
    /// IPv6 flow label.
    pub flow_label: u32,
    /// Hop limit (TTL).
    pub hop_limit: u8,
    /// Traffic class (DSCP/ECN).
    pub traffic_class: u8,
    /// Service level.
    pub sl: u8,
    /// Static rate.
    pub static_rate: u8,
    /// Destination MAC (resolved by the core).
    pub dmac: [u8; 6],
    /// Port.
    pub port_num: u32,
    /// The source GID the index named when the AV was set (zero when
    /// unknown).
    pub sgid: [u8; 16],
}

/// Queue capacities.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QpCap {
    /// Send queue entries.
    pub max_send_wr: u32,
    /// Receive queue entries.
    pub max_recv_wr: u32,
    /// Gather entries per send.
    pub max_send_sge: u32,
    /// Scatter entries per receive.
    pub max_recv_sge: u32,
    /// Inline data bytes per send.
    pub max_inline_data: u32,
}

/// The modifiable attributes of a QP (in rrxe, a value in its `QpInner`:
/// see `rrxe::qp::QpShared`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QpAttrs {
    /// State.
    pub state: QpState,
    /// `enum ib_mtu` (1..=5).
    pub path_mtu: u32,
    /// `enum ib_mig_state`.
    pub path_mig_state: u32,
    /// Q_Key.
    pub qkey: u32,
    /// Expected receive PSN (24 bits).
    pub rq_psn: u32,
    /// Next send PSN (24 bits).
    pub sq_psn: u32,
    /// Destination QP (24 bits).
    pub dest_qp_num: u32,
    /// Remote access flags.
    pub qp_access_flags: u32,
    /// Primary path.
    pub av: Av,
    /// Alternate path.
    pub alt_av: Av,
    /// P_Key index.
    pub pkey_index: u16,
    /// Alternate P_Key index.
    pub alt_pkey_index: u16,
    /// SQD async notification.
    pub en_sqd_async_notify: u8,
    /// Draining to SQD.
    pub sq_draining: u8,
    /// Reads/atomics outstanding as initiator.
    pub max_rd_atomic: u8,
    /// Reads/atomics outstanding as responder.
    pub max_dest_rd_atomic: u8,
    /// RNR NAK timer code.
    pub min_rnr_timer: u8,
    /// Port.
    pub port_num: u32,
    /// Local ACK timeout (4.096 us * 2^timeout).
    pub timeout: u8,
    /// Transport retries.
    pub retry_cnt: u8,
    /// RNR retries (7 = infinite).
    pub rnr_retry: u8,
    /// Alternate port.
    pub alt_port_num: u32,
    /// Alternate timeout.
    pub alt_timeout: u8,
}

/// PSNs and QP numbers are 24 bits.
pub const PSN_MASK: u32 = 0x00ff_ffff;

/// Why a modify is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttrError {
    /// A value out of range (`EINVAL`).
    Invalid,
    /// Not supported (`EOPNOTSUPP`).
    NotSupported,
}

/// Checks the values `mask` names in `new`, as rxe does; `max_mtu` is the
/// port's `enum ib_mtu`. State transitions are checked separately (by the
/// core's table), and so are capacities (`IB_QP_CAP`, see [`check_cap`]:
/// they cannot change).
pub fn check_modify(new: &QpAttrs, mask_bits: u32, max_mtu: u32) -> Result<(), AttrError> {
    use mask::*;
    if mask_bits & RATE_LIMIT != 0 {
        return Err(AttrError::NotSupported);
    }
    if mask_bits & PORT != 0 && new.port_num != 1 {
        return Err(AttrError::Invalid);
    }
    if mask_bits & ALT_PATH != 0 && (new.alt_port_num != 1 || new.alt_timeout > 31) {
        return Err(AttrError::Invalid);
    }
    if mask_bits & PKEY_INDEX != 0 && new.pkey_index >= 1 {
        return Err(AttrError::Invalid);
    }
    if mask_bits & PATH_MTU != 0 && (new.path_mtu == 0 || new.path_mtu > max_mtu) {
        return Err(AttrError::Invalid);
    }
    if mask_bits & MAX_QP_RD_ATOMIC != 0 && u32::from(new.max_rd_atomic) > limits::MAX_QP_RD_ATOM {
        return Err(AttrError::Invalid);
    }
    if mask_bits & MAX_DEST_RD_ATOMIC != 0
        && u32::from(new.max_dest_rd_atomic) > limits::MAX_QP_RD_ATOM
    {
        return Err(AttrError::Invalid);
    }
    if mask_bits & TIMEOUT != 0 && new.timeout > 31 {
        return Err(AttrError::Invalid);
    }
    if mask_bits & RETRY_CNT != 0 && new.retry_cnt > 7 {
        return Err(AttrError::Invalid);
    }
    if mask_bits & RNR_RETRY != 0 && new.rnr_retry > 7 {
        return Err(AttrError::Invalid);
    }
    if mask_bits & MIN_RNR_TIMER != 0 && new.min_rnr_timer > 31 {
        return Err(AttrError::Invalid);
    }
    Ok(())
}

/// Copies the attributes `mask` names from `new` into `cur`, masking PSNs
/// and QP numbers to 24 bits.
pub fn apply(cur: &mut QpAttrs, new: &QpAttrs, mask_bits: u32) {
    use mask::*;
    let m = |b: u32| mask_bits & b != 0;
    if m(STATE) {
        cur.state = new.state;
    }
    if m(EN_SQD_ASYNC_NOTIFY) {
        cur.en_sqd_async_notify = new.en_sqd_async_notify;
    }
    if m(ACCESS_FLAGS) {
        cur.qp_access_flags = new.qp_access_flags;
    }
    if m(PKEY_INDEX) {
        cur.pkey_index = new.pkey_index;
    }
    if m(PORT) {
        cur.port_num = new.port_num;
    }
    if m(QKEY) {
        cur.qkey = new.qkey;
    }
    if m(AV) {
        cur.av = new.av;
    }
    if m(PATH_MTU) {
        cur.path_mtu = new.path_mtu;
    }
    if m(TIMEOUT) {
        cur.timeout = new.timeout;
    }
    if m(RETRY_CNT) {
        cur.retry_cnt = new.retry_cnt;
    }
    if m(RNR_RETRY) {
        cur.rnr_retry = new.rnr_retry;
    }
    if m(RQ_PSN) {
        cur.rq_psn = new.rq_psn & PSN_MASK;
    }
    if m(MAX_QP_RD_ATOMIC) {
        cur.max_rd_atomic = new.max_rd_atomic;
    }
    if m(ALT_PATH) {
        cur.alt_av = new.alt_av;
        cur.alt_pkey_index = new.alt_pkey_index;
        cur.alt_port_num = new.alt_port_num;
        cur.alt_timeout = new.alt_timeout;
    }
    if m(MIN_RNR_TIMER) {
        cur.min_rnr_timer = new.min_rnr_timer;
    }
    if m(SQ_PSN) {
        cur.sq_psn = new.sq_psn & PSN_MASK;
    }
    if m(MAX_DEST_RD_ATOMIC) {
        cur.max_dest_rd_atomic = new.max_dest_rd_atomic;
    }
    if m(PATH_MIG_STATE) {
        cur.path_mig_state = new.path_mig_state;
    }
    if m(DEST_QPN) {
        cur.dest_qp_num = new.dest_qp_num & PSN_MASK;
    }
}

/// Size of a send WQE's fixed part (`struct rxe_send_wqe` up to its SGEs).
pub const SEND_WQE_HDR: u32 = limits::SEND_WQE_HDR;
/// Size of a receive WQE's fixed part.
pub const RECV_WQE_HDR: u32 = 40;
/// Size of an SGE.
pub const SGE_SIZE: u32 = limits::SGE_SIZE;

/// Checks requested capacities against the device limits (the receive side
/// only without an SRQ), as rxe does.
pub fn check_cap(cap: &QpCap, has_srq: bool) -> Result<(), AttrError> {
    if cap.max_send_wr > limits::MAX_QP_WR
        || cap.max_send_sge > limits::MAX_SGE
        || cap.max_inline_data > limits::MAX_INLINE_DATA
    {
        return Err(AttrError::Invalid);
    }
    if !has_srq && (cap.max_recv_wr > limits::MAX_QP_WR || cap.max_recv_sge > limits::MAX_SGE) {
        return Err(AttrError::Invalid);
    }
    Ok(())
}

/// The send WQE size for a capacity request, and the gather entries and
/// inline bytes that size allows (what the QP reports back).
pub fn send_wqe_layout(cap: &QpCap) -> (u32, u32, u32) {
    let room = (cap.max_send_sge * SGE_SIZE).max(cap.max_inline_data);
    (SEND_WQE_HDR + room, room / SGE_SIZE, room)
}

/// The receive WQE size for `max_recv_sge` scatter entries.
pub fn recv_wqe_size(max_recv_sge: u32) -> u32 {
    RECV_WQE_HDR + max_recv_sge * SGE_SIZE
}

/// Checks an SRQ's requested `max_wr` and `max_sge` as rxe does; returns
/// the `max_wr` and `max_sge` to size the ring for (at least 1 each). The
/// requested limit is taken as given, as rxe does.
pub fn check_srq_init(max_wr: u32, max_sge: u32) -> Result<(u32, u32), AttrError> {
    if max_wr == 0 || max_wr > limits::MAX_SRQ_WR || max_sge > limits::MAX_SRQ_SGE {
        return Err(AttrError::Invalid);
    }
    Ok((max_wr, max_sge.max(1)))
}

/// Checks an SRQ modify: a new `max_wr` (`Some`) must be 1..=`max_srq_wr`
/// and not below the armed limit; a new limit (`Some`) must not pass the
/// capacity the SRQ has (`capacity`, its ring's index mask).
pub fn check_srq_modify(
    max_wr: Option<u32>,
    limit: Option<u32>,
    cur_limit: u32,
    capacity: u32,
) -> Result<(), AttrError> {
    if let Some(w) = max_wr {
        if w == 0 || w > limits::MAX_SRQ_WR || (cur_limit != 0 && w < cur_limit) {
            return Err(AttrError::Invalid);
        }
    }
    if let Some(l) = limit {
        if l > limits::MAX_SRQ_WR || l > capacity {
            return Err(AttrError::Invalid);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn srq_rules() {
        assert_eq!(check_srq_init(100, 0), Ok((100, 1)));
        assert_eq!(check_srq_init(0, 1), Err(AttrError::Invalid));
        assert_eq!(
            check_srq_init(limits::MAX_SRQ_WR + 1, 1),
            Err(AttrError::Invalid)
        );
        assert_eq!(check_srq_init(16, 28), Err(AttrError::Invalid));
        assert_eq!(check_srq_init(16, 27), Ok((16, 27)));
        assert_eq!(
            check_srq_modify(Some(8), None, 10, 127),
            Err(AttrError::Invalid)
        );
        assert_eq!(check_srq_modify(Some(10), None, 10, 127), Ok(()));
        assert_eq!(
            check_srq_modify(Some(0), None, 0, 127),
            Err(AttrError::Invalid)
        );
        assert_eq!(
            check_srq_modify(None, Some(128), 0, 127),
            Err(AttrError::Invalid)
        );
        assert_eq!(check_srq_modify(None, Some(127), 0, 127), Ok(()));
    }

    use super::*;

    #[test]
    fn wqe_sizes() {
        let c = QpCap {
            max_send_sge: 4,
            max_inline_data: 0,
            ..Default::default()
        };
        assert_eq!(send_wqe_layout(&c), (208 + 64, 4, 64));
        let c = QpCap {
            max_send_sge: 1,
            max_inline_data: 100,
            ..Default::default()
        };
        assert_eq!(send_wqe_layout(&c), (308, 6, 100));
        let c = QpCap {
            max_send_sge: 32,
            max_inline_data: 512,
            ..Default::default()
        };
        assert_eq!(send_wqe_layout(&c), (720, 32, 512));
        assert_eq!(recv_wqe_size(0), 40);
        assert_eq!(recv_wqe_size(32), 552);
    }

    #[test]
    fn caps() {
        let ok = QpCap {
            max_send_wr: 100,
            max_recv_wr: 100,
            max_send_sge: 32,
            max_recv_sge: 32,
            max_inline_data: 512,
        };
        assert_eq!(check_cap(&ok, false), Ok(()));
        assert_eq!(
            check_cap(
                &QpCap {
                    max_send_sge: 33,
                    ..ok
                },
                false
            ),
            Err(AttrError::Invalid)
        );
        assert_eq!(
            check_cap(
                &QpCap {
                    max_inline_data: 513,
                    ..ok
                },
                false
            ),
            Err(AttrError::Invalid)
        );
        assert_eq!(
            check_cap(
                &QpCap {
                    max_send_wr: u32::MAX,
                    ..ok
                },
                false
            ),
            Err(AttrError::Invalid)
        );
        assert_eq!(
            check_cap(
                &QpCap {
                    max_recv_wr: u32::MAX,
                    ..ok
                },
                false
            ),
            Err(AttrError::Invalid)
        );
        // With an SRQ the receive side is not the QP's.
        assert_eq!(
            check_cap(
                &QpCap {
                    max_recv_wr: u32::MAX,
                    max_recv_sge: 99,
                    ..ok
                },
                true
            ),
            Ok(())
        );
    }

    #[test]
    fn modify_checks_and_apply() {
        let mut a = QpAttrs::default();
        let new = QpAttrs {
            state: QpState::Rts,
            sq_psn: 0x1234_5678,
            rq_psn: 0xff00_0001,
            dest_qp_num: 0xffff_ffff,
            qkey: 0x123,
            port_num: 1,
            path_mtu: 5,
            timeout: 14,
            retry_cnt: 7,
            rnr_retry: 7,
            ..Default::default()
        };
        let m = mask::STATE
            | mask::SQ_PSN
            | mask::RQ_PSN
            | mask::DEST_QPN
            | mask::PORT
            | mask::PATH_MTU
            | mask::TIMEOUT;
        assert_eq!(check_modify(&new, m, 5), Ok(()));
        apply(&mut a, &new, m);
        assert_eq!(
            (a.state, a.sq_psn, a.rq_psn, a.dest_qp_num),
            (QpState::Rts, 0x34_5678, 1, 0xff_ffff)
        );
        // Not named in the mask: unchanged.
        assert_eq!(a.qkey, 0);
        assert_eq!(
            check_modify(&QpAttrs { port_num: 2, ..new }, mask::PORT, 5),
            Err(AttrError::Invalid)
        );
        assert_eq!(
            check_modify(&QpAttrs { path_mtu: 6, ..new }, mask::PATH_MTU, 5),
            Err(AttrError::Invalid)
        );
        assert_eq!(
            check_modify(&QpAttrs { path_mtu: 0, ..new }, mask::PATH_MTU, 5),
            Err(AttrError::Invalid)
        );
        assert_eq!(
            check_modify(&QpAttrs { timeout: 32, ..new }, mask::TIMEOUT, 5),
            Err(AttrError::Invalid)
        );
        assert_eq!(
            check_modify(
                &QpAttrs {
                    retry_cnt: 8,
                    ..new
                },
                mask::RETRY_CNT,
                5
            ),
            Err(AttrError::Invalid)
        );
        assert_eq!(
            check_modify(
                &QpAttrs {
                    max_rd_atomic: 129,
                    ..new
                },
                mask::MAX_QP_RD_ATOMIC,
                5
            ),
            Err(AttrError::Invalid)
        );
        assert_eq!(
            check_modify(
                &QpAttrs {
                    pkey_index: 1,
                    ..new
                },
                mask::PKEY_INDEX,
                5
            ),
            Err(AttrError::Invalid)
        );
        assert_eq!(
            check_modify(&new, mask::RATE_LIMIT, 5),
            Err(AttrError::NotSupported)
        );
        // Out-of-range values are fine when the mask does not name them.
        assert_eq!(
            check_modify(
                &QpAttrs {
                    timeout: 99,
                    port_num: 9,
                    ..new
                },
                mask::QKEY,
                5
            ),
            Ok(())
        );
    }

    #[test]
    fn states() {
        assert_eq!(QpState::from_raw(3), Some(QpState::Rts));
        assert_eq!(QpState::from_raw(7), None);
    }
}
