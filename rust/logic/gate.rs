// SPDX-License-Identifier: GPL-2.0

//! How much of an RC requester's traffic the network stack may hold: the
//! bound of its transmit gate (a qdisc, a NIC's transmit ring, a veth
//! peer's backlog; see the admin guide's "Transmit"). A requester with
//! that much out waits until the stack has freed most of it.
//!
//! The bound is in payload bytes and adapts per QP, as TCP's congestion
//! window does. rxe bounds a QP at 64 skbs whatever their size; a link
//! whose far end is slow to drain (a NIC whose transmit completions come
//! late) is then as fast as that bound lets it be, and a link that drops
//! what it cannot buffer (a host socket between two QEMUs) loses the tail
//! of every burst past its buffer. So the bound starts at 64 KiB, doubles
//! each round trip's worth of acknowledged payload until the QP first
//! loses a packet, then grows by 4 KiB a round; each loss (a sequence NAK
//! or a retransmit timeout) halves it. It stays between [`MIN`] and
//! [`MAX`] bytes, and between [`MIN_PKTS`] and [`MAX_PKTS`] packets.

/// The bound of a new QP, in payload bytes.
pub const START: u32 = 64 << 10;
/// The most: rxe's 64 packets of 4 KiB.
pub const MAX: u32 = 256 << 10;
/// The least a loss can leave.
pub const MIN: u32 = 32 << 10;
/// The growth per round after the first loss.
pub const STEP: u32 = 4 << 10;
/// Never more packets than rxe's bound on a QP's `skb_out` ...
pub const MAX_PKTS: u32 = 64;
/// ... nor fewer than this many.
pub const MIN_PKTS: u32 = 8;

/// A QP's gate bound.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GateBound {
    bytes: u32,
    /// No loss yet: the bound doubles each round.
    fresh: bool,
    /// Payload acknowledged towards the next step.
    credit: u64,
}

impl Default for GateBound {
    fn default() -> Self {
        Self {
            bytes: START,
            fresh: true,
            credit: 0,
        }
    }
}

impl GateBound {
    /// The bound in payload bytes.
    pub fn bytes(&self) -> u32 {
        self.bytes
    }

    /// The gate's marks for packets of `seg` payload bytes: the requester
    /// stops with the first out and goes on below the second (a quarter
    /// of it).
    pub fn marks(&self, seg: u32) -> (u32, u32) {
        let high = (self.bytes / seg.max(1)).clamp(MIN_PKTS, MAX_PKTS);
        (high, high / 4)
    }

    /// `n` payload bytes were acknowledged.
    pub fn acked(&mut self, n: u64) {
        if self.bytes >= MAX {
            self.credit = 0;
            return;
        }
        if self.fresh {
            self.bytes = (u64::from(self.bytes) + n).min(u64::from(MAX)) as u32;
            return;
        }
        self.credit = self.credit.saturating_add(n);
        while self.credit >= u64::from(self.bytes) && self.bytes < MAX {
            self.credit -= u64::from(self.bytes);
            self.bytes = (self.bytes + STEP).min(MAX);
        }
    }

    /// The QP lost a packet of its own.
    pub fn lost(&mut self) {
        self.fresh = false;
        self.credit = 0;
        self.bytes = (self.bytes / 2).max(MIN);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_qp_holds_64_kib_in_packets_of_its_mtu() {
        let g = GateBound::default();
        assert_eq!(g.bytes(), 64 << 10);
        assert_eq!(g.marks(256), (64, 16));
        assert_eq!(g.marks(1024), (64, 16));
        assert_eq!(g.marks(2048), (32, 8));
        assert_eq!(g.marks(4096), (16, 4));
        assert_eq!(g.marks(65536), (8, 2));
        assert_eq!(g.marks(0), (64, 16));
    }

    #[test]
    fn without_loss_it_doubles_a_round_up_to_rxes_64_packets_of_4_kib() {
        let mut g = GateBound::default();
        g.acked(64 << 10);
        assert_eq!(g.bytes(), 128 << 10);
        assert_eq!(g.marks(4096), (32, 8));
        g.acked(128 << 10);
        assert_eq!(g.bytes(), 256 << 10);
        g.acked(1 << 30);
        assert_eq!(g.bytes(), MAX);
        assert_eq!(g.marks(4096), (64, 16));
        // Never more than 64 packets, whatever their size.
        assert_eq!(g.marks(1024), (64, 16));
    }

    #[test]
    fn a_loss_halves_it_and_then_it_grows_a_step_a_round() {
        let mut g = GateBound::default();
        g.acked(1 << 20);
        assert_eq!(g.bytes(), MAX);
        g.lost();
        assert_eq!(g.bytes(), 128 << 10);
        // Less than a round: no step.
        g.acked((128 << 10) - 1);
        assert_eq!(g.bytes(), 128 << 10);
        g.acked(1);
        assert_eq!(g.bytes(), (128 << 10) + STEP);
        // Two rounds at once: two steps.
        g.acked(2 * u64::from(g.bytes()) + u64::from(STEP));
        assert_eq!(g.bytes(), (128 << 10) + 3 * STEP);
    }

    #[test]
    fn losses_leave_at_least_32_kib_and_8_packets() {
        let mut g = GateBound::default();
        for _ in 0..10 {
            g.lost();
        }
        assert_eq!(g.bytes(), MIN);
        assert_eq!(g.marks(4096), (8, 2));
        assert_eq!(g.marks(1024), (32, 8));
        assert_eq!(g.marks(65536), (MIN_PKTS, 2));
        g.acked(u64::MAX);
        g.acked(u64::MAX);
        assert!(g.bytes() > MIN && g.bytes() <= MAX);
    }
}
