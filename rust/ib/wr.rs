// SPDX-License-Identifier: GPL-2.0

//! Work requests kernel consumers post (`ib_post_send`, `ib_post_recv`,
//! `ib_post_srq_recv`), as read-only views for the driver. Kernel callers
//! are trusted to pass well-formed lists; the driver still checks what it
//! takes from them (opcodes, SGE counts, keys) as it does for user WQEs.

use super::{bindings, device::Driver, object::Ah};
use crate::logic::wqe::Sge;
use core::marker::PhantomData;

fn sges<'a>(list: *const bindings::ib_sge, num_sge: i32) -> &'a [bindings::ib_sge] {
    if list.is_null() || num_sge <= 0 {
        return &[];
    }
    // SAFETY: The poster passes `num_sge` valid SGEs at `list`, alive for the
    // post call (which bounds `'a`).
    unsafe { core::slice::from_raw_parts(list, num_sge as usize) }
}

fn to_sge(sge: &bindings::ib_sge) -> Sge {
    Sge {
        addr: sge.addr,
        length: sge.length,
        lkey: sge.lkey,
    }
}

/// The UD part of a send work request.
pub struct UdWr<'a, T: Driver> {
    /// The address handle.
    pub ah: &'a Ah<T>,
    /// Destination QP.
    pub remote_qpn: u32,
    /// Q_Key.
    pub remote_qkey: u32,
    /// P_Key index.
    pub pkey_index: u16,
}

/// A kernel send work request.
///
/// # Invariants
///
/// `raw` is the `ib_send_wr` inside an `ib_ud_wr` when `ud` is set, inside
/// an `ib_rdma_wr` when `rdma` is set; all valid for `'a`.
pub struct SendWr<'a, T: Driver> {
    raw: &'a bindings::ib_send_wr,
    ud: bool,
    rdma: bool,
    _t: PhantomData<T>,
}

impl<'a, T: Driver> SendWr<'a, T> {
    /// # Safety
    ///
    /// `wr` must be valid for `'a`, embedded in an `ib_ud_wr` if `ud` and
    /// in an `ib_rdma_wr` if its opcode is an RDMA write or read and not
    /// `ud`; an AH it names must be one of `T`'s.
    pub(crate) unsafe fn from_raw(wr: *const bindings::ib_send_wr, ud: bool) -> Self {
        // SAFETY: The caller's promise.
        let raw = unsafe { &*wr };
        let rdma = !ud
            && matches!(
                raw.opcode,
                bindings::ib_wr_opcode_IB_WR_RDMA_WRITE
                    | bindings::ib_wr_opcode_IB_WR_RDMA_WRITE_WITH_IMM
                    | bindings::ib_wr_opcode_IB_WR_RDMA_READ
            );
        // INVARIANT: As promised by the caller.
        Self {
            raw,
            ud,
            rdma,
            _t: PhantomData,
        }
    }

    /// The work request id (or the `wr_cqe` pointer the union holds).
    pub fn wr_id(&self) -> u64 {
        self.raw.__bindgen_anon_1.bindgen_union_field
    }

    /// `enum ib_wr_opcode`.
    pub fn opcode(&self) -> u32 {
        self.raw.opcode
    }

    /// `IB_SEND_*` flags.
    pub fn send_flags(&self) -> u32 {
        self.raw.send_flags as u32
    }

    /// Immediate data (as stored, network order) or invalidate key.
    pub fn ex(&self) -> u32 {
        self.raw.ex.bindgen_union_field
    }

    /// Number of SGEs.
    pub fn num_sge(&self) -> usize {
        sges(self.raw.sg_list, self.raw.num_sge).len()
    }

    /// The SGEs.
    pub fn sges(&self) -> impl Iterator<Item = Sge> + 'a {
        sges(self.raw.sg_list, self.raw.num_sge).iter().map(to_sge)
    }

    /// The UD fields, for UD and GSI QPs.
    pub fn ud(&self) -> Option<UdWr<'a, T>> {
        if !self.ud {
            return None;
        }
        // SAFETY: `raw` is the first field of an `ib_ud_wr` (the type
        // invariant), valid for `'a`.
        let u = unsafe { &*core::ptr::from_ref(self.raw).cast::<bindings::ib_ud_wr>() };
        if u.ah.is_null() {
            return None;
        }
        Some(UdWr {
            // SAFETY: A live AH of this device (the caller of `from_raw`
            // promised it is `T`'s).
            ah: unsafe { Ah::<T>::from_raw(u.ah) },
            remote_qpn: u.remote_qpn,
            remote_qkey: u.remote_qkey,
            pkey_index: u.pkey_index,
        })
    }

    /// Remote address and key of RDMA writes and reads.
    pub fn rdma(&self) -> Option<(u64, u32)> {
        if !self.rdma {
            return None;
        }
        // SAFETY: `raw` is the first field of an `ib_rdma_wr` (the type
        // invariant), valid for `'a`.
        let r = unsafe { &*core::ptr::from_ref(self.raw).cast::<bindings::ib_rdma_wr>() };
        Some((r.remote_addr, r.rkey))
    }

    /// For `IB_WR_REG_MR`: the MR's current lkey, the key it is to take and
    /// its access flags.
    pub fn reg(&self) -> Option<(u32, u32, u32, u64)> {
        if self.raw.opcode != bindings::ib_wr_opcode_IB_WR_REG_MR {
            return None;
        }
        // SAFETY: The core builds every `IB_WR_REG_MR` request as an
        // `ib_reg_wr`, whose first field is this `ib_send_wr`, valid for
        // `'a`.
        let r = unsafe { &*core::ptr::from_ref(self.raw).cast::<bindings::ib_reg_wr>() };
        if r.mr.is_null() {
            return None;
        }
        // The MR's `iova` is the one the registration gives the mapping: the
        // consumer may have changed it since `ib_map_mr_sg` (xprtrdma puts
        // the RPC's XID in the upper 32 bits).
        // SAFETY: A registration request names a live MR of this device.
        let (lkey, iova) = unsafe { ((*r.mr).lkey, (*r.mr).iova) };
        Some((lkey, r.key, r.access as u32, iova))
    }

    /// For `IB_SEND_INLINE`: copies the bytes the SGEs point at (kernel
    /// virtual addresses the trusted kernel poster owns) into `out`, up to
    /// its length. Returns the bytes copied.
    pub fn copy_inline(&self, out: &mut [u8]) -> usize {
        let mut done = 0usize;
        for s in sges(self.raw.sg_list, self.raw.num_sge) {
            let k = (s.length as usize).min(out.len() - done);
            if k == 0 || s.addr == 0 {
                continue;
            }
            // SAFETY: Kernel posters of inline sends pass kernel virtual
            // addresses of at least `length` readable bytes, alive for the
            // post call; `out` has room for `k` more bytes.
            unsafe {
                core::ptr::copy_nonoverlapping(
                    s.addr as usize as *const u8,
                    out.as_mut_ptr().add(done),
                    k,
                )
            };
            done += k;
        }
        done
    }
}

/// A kernel receive work request.
pub struct RecvWr<'a> {
    raw: &'a bindings::ib_recv_wr,
}

impl<'a> RecvWr<'a> {
    /// # Safety
    ///
    /// `wr` must be valid for `'a`.
    pub(crate) unsafe fn from_raw(wr: *const bindings::ib_recv_wr) -> Self {
        // SAFETY: The caller's promise.
        let raw = unsafe { &*wr };
        Self { raw }
    }

    /// The work request id (or `wr_cqe`).
    pub fn wr_id(&self) -> u64 {
        self.raw.__bindgen_anon_1.bindgen_union_field
    }

    /// Number of SGEs.
    pub fn num_sge(&self) -> usize {
        sges(self.raw.sg_list, self.raw.num_sge).len()
    }

    /// The SGEs.
    pub fn sges(&self) -> impl Iterator<Item = Sge> + 'a {
        sges(self.raw.sg_list, self.raw.num_sge).iter().map(to_sge)
    }
}
