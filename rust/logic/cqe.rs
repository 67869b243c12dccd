// SPDX-License-Identifier: GPL-2.0

//! Work completions: one driver-side form, written to user CQ slots in the
//! 48-byte `struct ib_uverbs_wc` layout (native byte order) and converted
//! to `struct ib_wc` for kernel consumers by the ib layer.

/// `enum ib_wc_status` values rrxe produces.
pub mod status {
    /// Success.
    pub const SUCCESS: u32 = 0;
    /// Local length error.
    pub const LOC_LEN_ERR: u32 = 1;
    /// Local QP operation error.
    pub const LOC_QP_OP_ERR: u32 = 2;
    /// Local protection error.
    pub const LOC_PROT_ERR: u32 = 4;
    /// Flushed when the QP went to the error state.
    pub const WR_FLUSH_ERR: u32 = 5;
    /// Memory window bind error.
    pub const MW_BIND_ERR: u32 = 6;
    /// Remote invalid request.
    pub const REM_INV_REQ_ERR: u32 = 9;
    /// Remote access error.
    pub const REM_ACCESS_ERR: u32 = 10;
    /// Remote operation error.
    pub const REM_OP_ERR: u32 = 11;
    /// Transport retries exceeded.
    pub const RETRY_EXC_ERR: u32 = 12;
    /// RNR retries exceeded.
    pub const RNR_RETRY_EXC_ERR: u32 = 13;
    /// Bad response (a malformed read response).
    pub const BAD_RESP_ERR: u32 = 7;
    /// Invalid RD request.
    pub const REM_INV_RD_REQ_ERR: u32 = 15;
    /// Fatal error.
    pub const FATAL_ERR: u32 = 19;
    /// General error.
    pub const GENERAL_ERR: u32 = 21;
}

/// `wc_flags` bits.
pub mod flags {
    /// A GRH is in the receive buffer.
    pub const GRH: u32 = 1 << 0;
    /// `ex` holds immediate data.
    pub const WITH_IMM: u32 = 1 << 1;
    /// `ex` holds an invalidated rkey.
    pub const WITH_INVALIDATE: u32 = 1 << 2;
    /// `network_hdr_type` is set (kernel completions only).
    pub const WITH_NETWORK_HDR_TYPE: u32 = 1 << 6;
    /// The flags `struct ib_uverbs_wc` carries.
    pub const UVERBS: u32 = GRH | WITH_IMM | WITH_INVALIDATE;
}

/// `enum rdma_network_type` of a received datagram's headers.
pub mod net_type {
    /// IPv4.
    pub const IPV4: u8 = 2;
    /// IPv6.
    pub const IPV6: u8 = 3;
}

/// Size of `struct ib_uverbs_wc`.
pub const UVERBS_WC_SIZE: usize = 48;

/// A work completion.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Wc {
    /// The work request's id.
    pub wr_id: u64,
    /// `enum ib_wc_status`.
    pub status: u32,
    /// `enum ib_wc_opcode`.
    pub opcode: u32,
    /// Vendor error (0).
    pub vendor_err: u32,
    /// Bytes transferred.
    pub byte_len: u32,
    /// Immediate data (network order, as received) or invalidated rkey.
    pub ex: u32,
    /// The local QP.
    pub qp_num: u32,
    /// The remote QP (UD).
    pub src_qp: u32,
    /// `wc_flags`.
    pub wc_flags: u32,
    /// P_Key index.
    pub pkey_index: u16,
    /// Source LID (0 on RoCE).
    pub slid: u16,
    /// Service level.
    pub sl: u8,
    /// DLID path bits.
    pub dlid_path_bits: u8,
    /// Port.
    pub port_num: u8,
    /// `enum rdma_network_type` (kernel completions, with the flag).
    pub network_hdr_type: u8,
    /// The driver's handle for the local QP, which kernel completions
    /// carry (an opaque value here).
    pub qp_cookie: usize,
}

/// Byte offsets in `struct ib_uverbs_wc` (checked against the uapi header
/// at compile time in `rust/bindings/rxe_abi.rs`).
pub mod uverbs {
    /// `wr_id`.
    pub const WR_ID: usize = 0;
    /// `status`.
    pub const STATUS: usize = 8;
    /// `opcode`.
    pub const OPCODE: usize = 12;
    /// `vendor_err`.
    pub const VENDOR_ERR: usize = 16;
    /// `byte_len`.
    pub const BYTE_LEN: usize = 20;
    /// `ex` (immediate data or invalidated rkey).
    pub const EX: usize = 24;
    /// `qp_num`.
    pub const QP_NUM: usize = 28;
    /// `src_qp`.
    pub const SRC_QP: usize = 32;
    /// `wc_flags`.
    pub const WC_FLAGS: usize = 36;
    /// `pkey_index`.
    pub const PKEY_INDEX: usize = 40;
    /// `slid`.
    pub const SLID: usize = 42;
    /// `sl`.
    pub const SL: usize = 44;
    /// `dlid_path_bits`.
    pub const DLID_PATH_BITS: usize = 45;
    /// `port_num`.
    pub const PORT_NUM: usize = 46;
}

impl Wc {
    /// The completion in the `ib_uverbs_wc` layout (offsets in [`uverbs`];
    /// the reserved last byte stays 0).
    pub fn to_uverbs(&self) -> [u8; UVERBS_WC_SIZE] {
        let mut b = [0u8; UVERBS_WC_SIZE];
        b[uverbs::WR_ID..uverbs::WR_ID + 8].copy_from_slice(&self.wr_id.to_ne_bytes());
        let words = [
            (uverbs::STATUS, self.status),
            (uverbs::OPCODE, self.opcode),
            (uverbs::VENDOR_ERR, self.vendor_err),
            (uverbs::BYTE_LEN, self.byte_len),
            (uverbs::EX, self.ex),
            (uverbs::QP_NUM, self.qp_num),
            (uverbs::SRC_QP, self.src_qp),
            (uverbs::WC_FLAGS, self.wc_flags & flags::UVERBS),
        ];
        for (off, w) in words {
            b[off..off + 4].copy_from_slice(&w.to_ne_bytes());
        }
        let pkey = uverbs::PKEY_INDEX;
        b[pkey..pkey + 2].copy_from_slice(&self.pkey_index.to_ne_bytes());
        b[uverbs::SLID..uverbs::SLID + 2].copy_from_slice(&self.slid.to_ne_bytes());
        b[uverbs::SL] = self.sl;
        b[uverbs::DLID_PATH_BITS] = self.dlid_path_bits;
        b[uverbs::PORT_NUM] = self.port_num;
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uverbs_layout() {
        let wc = Wc {
            wr_id: 0x0102_0304_0506_0708,
            status: status::REM_ACCESS_ERR,
            opcode: 0x80,
            vendor_err: 0,
            byte_len: 4096,
            ex: 0xdead_beef,
            qp_num: 17,
            src_qp: 0x00ab_cdef,
            wc_flags: flags::GRH | flags::WITH_IMM,
            pkey_index: 0,
            slid: 0,
            sl: 3,
            dlid_path_bits: 0,
            port_num: 1,
            ..Default::default()
        };
        let b = wc.to_uverbs();
        let u32_at = |o: usize| u32::from_ne_bytes(b[o..o + 4].try_into().unwrap());
        assert_eq!(u64::from_ne_bytes(b[0..8].try_into().unwrap()), wc.wr_id);
        assert_eq!(u32_at(8), 10);
        assert_eq!(u32_at(12), 0x80);
        assert_eq!(u32_at(20), 4096);
        assert_eq!(u32_at(24), 0xdead_beef);
        assert_eq!(u32_at(28), 17);
        assert_eq!(u32_at(32), 0x00ab_cdef);
        assert_eq!(u32_at(36), 3);
        let k = Wc {
            wc_flags: flags::GRH | flags::WITH_NETWORK_HDR_TYPE,
            ..wc
        }
        .to_uverbs();
        assert_eq!(
            u32::from_ne_bytes(k[36..40].try_into().unwrap()),
            flags::GRH,
            "kernel-only flags stay out"
        );
        assert_eq!((b[44], b[45], b[46], b[47]), (3, 0, 1, 0));
    }
}
