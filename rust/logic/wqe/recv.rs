// SPDX-License-Identifier: GPL-2.0

//! Receive WQEs: a work request id and the SGEs the received data goes
//! to, parsed and validated for the queue's capacity.

use super::{sum_sges, u32_at, u64_at, WqeError, DMA_NUM_SGE, RECV_DMA, RECV_HDR, SGE, WR_ID};

/// A validated receive WQE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecvWqe {
    /// Work request id.
    pub wr_id: u64,
    /// SGEs, starting at [`RECV_HDR`].
    pub num_sge: u32,
    /// Their total length.
    pub length: u64,
}

/// Parses and validates a receive WQE for a queue of `max_sge` SGEs.
pub fn parse_recv(slot: &[u8], max_sge: u32) -> Result<RecvWqe, WqeError> {
    let wr_id = u64_at(slot, WR_ID).ok_or(WqeError::Short)?;
    let n = u32_at(slot, RECV_DMA + DMA_NUM_SGE).ok_or(WqeError::Short)?;
    if n > max_sge || RECV_HDR + n as usize * SGE > slot.len() {
        return Err(WqeError::TooManySge);
    }
    Ok(RecvWqe {
        wr_id,
        num_sge: n,
        length: sum_sges(slot, RECV_HDR, n)?,
    })
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::super::*;
    use super::*;

    #[test]
    fn recv() {
        let mut b = [0u8; 128];
        put64(&mut b, 0, 77);
        put32(&mut b, RECV_DMA + DMA_NUM_SGE, 2);
        put32(&mut b, RECV_HDR + 8, 4096);
        put32(&mut b, RECV_HDR + 16 + 8, 100);
        assert_eq!(
            parse_recv(&b, 2),
            Ok(RecvWqe {
                wr_id: 77,
                num_sge: 2,
                length: 4196
            })
        );
        assert_eq!(parse_recv(&b, 1), Err(WqeError::TooManySge));
        put32(&mut b, RECV_DMA + DMA_NUM_SGE, 6);
        assert_eq!(parse_recv(&b, 8), Err(WqeError::TooManySge));
        assert_eq!(wr_id(&b), Some(77));
    }
}
