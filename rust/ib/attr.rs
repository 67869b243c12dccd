// SPDX-License-Identifier: GPL-2.0

//! Device and port attributes, as plain Rust values.
//!
//! Drivers fill these; the layer copies them into the C `ib_device_attr`
//! and `ib_port_attr` the core passes in.

use super::bindings;

/// `IB_DEVICE_*` capability bits (`enum ib_device_cap_flags`).
pub mod cap {
    use super::bindings;
    /// Bad P_Key counter.
    pub const BAD_PKEY_CNTR: u64 = bindings::ib_device_cap_flags_IB_DEVICE_BAD_PKEY_CNTR as u64;
    /// Bad Q_Key counter.
    pub const BAD_QKEY_CNTR: u64 = bindings::ib_device_cap_flags_IB_DEVICE_BAD_QKEY_CNTR as u64;
    /// Automatic path migration.
    pub const AUTO_PATH_MIG: u64 = bindings::ib_device_cap_flags_IB_DEVICE_AUTO_PATH_MIG as u64;
    /// Change of physical port.
    pub const CHANGE_PHY_PORT: u64 = bindings::ib_device_cap_flags_IB_DEVICE_CHANGE_PHY_PORT as u64;
    /// UD AV port enforcement.
    pub const UD_AV_PORT_ENFORCE: u64 =
        bindings::ib_device_cap_flags_IB_DEVICE_UD_AV_PORT_ENFORCE as u64;
    /// Port active event.
    pub const PORT_ACTIVE_EVENT: u64 =
        bindings::ib_device_cap_flags_IB_DEVICE_PORT_ACTIVE_EVENT as u64;
    /// System image GUID.
    pub const SYS_IMAGE_GUID: u64 = bindings::ib_device_cap_flags_IB_DEVICE_SYS_IMAGE_GUID as u64;
    /// RC RNR NAK generation.
    pub const RC_RNR_NAK_GEN: u64 = bindings::ib_device_cap_flags_IB_DEVICE_RC_RNR_NAK_GEN as u64;
    /// SRQ resize.
    pub const SRQ_RESIZE: u64 = bindings::ib_device_cap_flags_IB_DEVICE_SRQ_RESIZE as u64;
    /// Memory management extensions.
    pub const MEM_MGT_EXTENSIONS: u64 =
        bindings::ib_device_cap_flags_IB_DEVICE_MEM_MGT_EXTENSIONS as u64;
    /// Memory windows.
    pub const MEM_WINDOW: u64 = bindings::ib_device_cap_flags_IB_DEVICE_MEM_WINDOW as u64;
    /// Global flush.
    pub const FLUSH_GLOBAL: u64 = bindings::ib_device_cap_flags_IB_DEVICE_FLUSH_GLOBAL as u64;
    /// Persistent flush.
    pub const FLUSH_PERSISTENT: u64 =
        bindings::ib_device_cap_flags_IB_DEVICE_FLUSH_PERSISTENT as u64;
    /// Type 2B memory windows.
    pub const MEM_WINDOW_TYPE_2B: u64 =
        bindings::ib_device_cap_flags_IB_DEVICE_MEM_WINDOW_TYPE_2B as u64;
    /// Atomic write.
    pub const ATOMIC_WRITE: u64 = bindings::ib_device_cap_flags_IB_DEVICE_ATOMIC_WRITE as u64;
    /// XRC domains, SRQs and QPs.
    pub const XRC: u64 = bindings::ib_device_cap_flags_IB_DEVICE_XRC as u64;
}

/// `IBK_*` kernel capability bits (`enum ib_kernel_cap_flags`).
pub mod kcap {
    use super::bindings;
    /// `rdma link delete` may unregister the device.
    pub const ALLOW_USER_UNREG: u64 = bindings::ib_kernel_cap_flags_IBK_ALLOW_USER_UNREG as u64;
    /// `IB_ACCESS_ON_DEMAND` is accepted by `reg_user_mr`.
    pub const ON_DEMAND_PAGING: u64 = bindings::ib_kernel_cap_flags_IBK_ON_DEMAND_PAGING as u64;
}

/// On-demand paging capabilities (`struct ib_odp_caps`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OdpCaps {
    /// `IB_ODP_SUPPORT*` bits.
    pub general: u64,
    /// Per transport: `IB_ODP_SUPPORT_*` operation bits.
    pub rc: u32,
    /// UC.
    pub uc: u32,
    /// UD.
    pub ud: u32,
    /// XRC.
    pub xrc: u32,
}

/// ODP capability bits (`enum ib_odp_general_cap_bits`,
/// `enum ib_odp_transport_cap_bits`).
pub mod odp {
    use super::bindings;
    /// ODP is supported.
    pub const SUPPORT: u64 = bindings::ib_odp_general_cap_bits_IB_ODP_SUPPORT as u64;
    /// Per-transport operation bits: sends.
    pub const SEND: u32 = bindings::ib_odp_transport_cap_bits_IB_ODP_SUPPORT_SEND;
    /// Receives.
    pub const RECV: u32 = bindings::ib_odp_transport_cap_bits_IB_ODP_SUPPORT_RECV;
    /// RDMA WRITE targets.
    pub const WRITE: u32 = bindings::ib_odp_transport_cap_bits_IB_ODP_SUPPORT_WRITE;
    /// RDMA READ targets.
    pub const READ: u32 = bindings::ib_odp_transport_cap_bits_IB_ODP_SUPPORT_READ;
    /// Atomic targets.
    pub const ATOMIC: u32 = bindings::ib_odp_transport_cap_bits_IB_ODP_SUPPORT_ATOMIC;
    /// Receives through an SRQ.
    pub const SRQ_RECV: u32 = bindings::ib_odp_transport_cap_bits_IB_ODP_SUPPORT_SRQ_RECV;
    /// FLUSH targets.
    pub const FLUSH: u32 = bindings::ib_odp_transport_cap_bits_IB_ODP_SUPPORT_FLUSH;
    /// ATOMIC WRITE targets.
    pub const ATOMIC_WRITE: u32 = bindings::ib_odp_transport_cap_bits_IB_ODP_SUPPORT_ATOMIC_WRITE;
}

/// Atomic operation support (`enum ib_atomic_cap`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AtomicCap {
    /// No atomics.
    None,
    /// Atomic across this HCA's QPs.
    Hca,
    /// Atomic with respect to the whole node.
    Glob,
}

/// Device attributes reported by `query_device`.
///
/// Each field is the `struct ib_device_attr` field of the same name.
#[expect(
    missing_docs,
    reason = "fields mirror struct ib_device_attr one to one"
)]
#[derive(Clone, Debug, Default)]
pub struct DeviceAttrs {
    pub sys_image_guid: [u8; 8],
    pub max_mr_size: u64,
    pub page_size_cap: u64,
    pub vendor_id: u32,
    pub max_qp: u32,
    pub max_qp_wr: u32,
    pub device_cap_flags: u64,
    pub kernel_cap_flags: u64,
    pub max_send_sge: u32,
    pub max_recv_sge: u32,
    pub max_sge_rd: u32,
    pub max_cq: u32,
    pub max_cqe: u32,
    pub max_mr: u32,
    pub max_pd: u32,
    pub max_qp_rd_atom: u32,
    pub max_res_rd_atom: u32,
    pub max_qp_init_rd_atom: u32,
    pub atomic_cap: Option<AtomicCap>,
    pub max_mw: u32,
    pub max_mcast_grp: u32,
    pub max_mcast_qp_attach: u32,
    pub max_total_mcast_qp_attach: u32,
    pub max_ah: u32,
    pub max_srq: u32,
    pub max_srq_wr: u32,
    pub max_srq_sge: u32,
    pub max_fast_reg_page_list_len: u32,
    pub max_pkeys: u16,
    pub local_ca_ack_delay: u8,
    pub max_dm_size: u64,
    pub odp_caps: OdpCaps,
}

impl DeviceAttrs {
    /// Writes these values over the C attribute struct, zeroing the rest.
    ///
    /// # Safety
    ///
    /// `out` must be valid for writes of an `ib_device_attr`.
    pub(crate) unsafe fn write_to(&self, out: *mut bindings::ib_device_attr) {
        // SAFETY: All-zero is a valid `ib_device_attr` (plain integers).
        let mut a: bindings::ib_device_attr = unsafe { core::mem::zeroed() };
        a.sys_image_guid = u64::from_ne_bytes(self.sys_image_guid);
        a.max_mr_size = self.max_mr_size;
        a.page_size_cap = self.page_size_cap;
        a.vendor_id = self.vendor_id;
        a.max_qp = self.max_qp;
        a.max_qp_wr = self.max_qp_wr;
        a.device_cap_flags = self.device_cap_flags;
        a.kernel_cap_flags = self.kernel_cap_flags;
        a.max_send_sge = self.max_send_sge;
        a.max_recv_sge = self.max_recv_sge;
        a.max_sge_rd = self.max_sge_rd;
        a.max_cq = self.max_cq;
        a.max_cqe = self.max_cqe;
        a.max_mr = self.max_mr;
        a.max_pd = self.max_pd;
        a.max_qp_rd_atom = self.max_qp_rd_atom;
        a.max_res_rd_atom = self.max_res_rd_atom;
        a.max_qp_init_rd_atom = self.max_qp_init_rd_atom;
        a.atomic_cap = match self.atomic_cap {
            None | Some(AtomicCap::None) => bindings::ib_atomic_cap_IB_ATOMIC_NONE,
            Some(AtomicCap::Hca) => bindings::ib_atomic_cap_IB_ATOMIC_HCA,
            Some(AtomicCap::Glob) => bindings::ib_atomic_cap_IB_ATOMIC_GLOB,
        };
        a.max_mw = self.max_mw;
        a.max_mcast_grp = self.max_mcast_grp;
        a.max_mcast_qp_attach = self.max_mcast_qp_attach;
        a.max_total_mcast_qp_attach = self.max_total_mcast_qp_attach;
        a.max_ah = self.max_ah;
        a.max_srq = self.max_srq;
        a.max_srq_wr = self.max_srq_wr;
        a.max_srq_sge = self.max_srq_sge;
        a.max_fast_reg_page_list_len = self.max_fast_reg_page_list_len;
        a.max_pkeys = self.max_pkeys;
        a.local_ca_ack_delay = self.local_ca_ack_delay;
        a.max_dm_size = self.max_dm_size;
        a.odp_caps.general_caps = self.odp_caps.general;
        a.odp_caps.per_transport_caps.rc_odp_caps = self.odp_caps.rc;
        a.odp_caps.per_transport_caps.uc_odp_caps = self.odp_caps.uc;
        a.odp_caps.per_transport_caps.ud_odp_caps = self.odp_caps.ud;
        a.odp_caps.per_transport_caps.xrc_odp_caps = self.odp_caps.xrc;
        // SAFETY: The caller guarantees `out` is valid for writes.
        unsafe { out.write(a) };
    }
}

/// Port states (`enum ib_port_state`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PortState {
    /// Link down.
    Down,
    /// Link up and usable.
    Active,
}

/// Physical port states (`enum ib_port_phys_state`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PhysState {
    /// Administratively down.
    Disabled,
    /// Up but no carrier.
    Polling,
    /// Carrier present.
    LinkUp,
}

/// `IB_PORT_CM_SUP`: the port supports connection management.
pub const PORT_CM_SUP: u32 = bindings::ib_port_capability_mask_bits_IB_PORT_CM_SUP;
/// `IB_WIDTH_1X`.
pub const WIDTH_1X: u8 = bindings::ib_port_width_IB_WIDTH_1X as u8;

/// Port attributes reported by `query_port`.
///
/// Each field is the `struct ib_port_attr` field of the same name.
#[expect(missing_docs, reason = "fields mirror struct ib_port_attr one to one")]
#[derive(Clone, Debug)]
pub struct PortAttrs {
    pub state: PortState,
    pub phys_state: PhysState,
    /// `enum ib_mtu` value.
    pub max_mtu: u32,
    /// `enum ib_mtu` value.
    pub active_mtu: u32,
    pub gid_tbl_len: i32,
    pub port_cap_flags: u32,
    pub max_msg_sz: u32,
    pub bad_pkey_cntr: u32,
    pub qkey_viol_cntr: u32,
    pub pkey_tbl_len: u16,
    pub max_vl_num: u8,
    pub active_width: u8,
    pub active_speed: u16,
}

impl PortAttrs {
    /// Writes these values into the C port attribute struct.
    ///
    /// The core zeroes it before calling the driver, and some fields (like
    /// `ip_gids`) are filled by the core itself, so only ours are written.
    ///
    /// # Safety
    ///
    /// `out` must be valid for reads and writes of an `ib_port_attr`.
    pub(crate) unsafe fn write_to(&self, out: *mut bindings::ib_port_attr) {
        // SAFETY: The caller guarantees `out` is valid.
        let a = unsafe { &mut *out };
        a.state = match self.state {
            PortState::Down => bindings::ib_port_state_IB_PORT_DOWN,
            PortState::Active => bindings::ib_port_state_IB_PORT_ACTIVE,
        };
        a.phys_state = match self.phys_state {
            PhysState::Disabled => bindings::ib_port_phys_state_IB_PORT_PHYS_STATE_DISABLED,
            PhysState::Polling => bindings::ib_port_phys_state_IB_PORT_PHYS_STATE_POLLING,
            PhysState::LinkUp => bindings::ib_port_phys_state_IB_PORT_PHYS_STATE_LINK_UP,
        } as u8;
        a.max_mtu = self.max_mtu;
        a.active_mtu = self.active_mtu;
        a.gid_tbl_len = self.gid_tbl_len;
        a.port_cap_flags = self.port_cap_flags;
        a.max_msg_sz = self.max_msg_sz;
        a.bad_pkey_cntr = self.bad_pkey_cntr;
        a.qkey_viol_cntr = self.qkey_viol_cntr;
        a.pkey_tbl_len = self.pkey_tbl_len;
        a.max_vl_num = self.max_vl_num;
        a.active_width = self.active_width;
        a.active_speed = self.active_speed;
    }
}

/// Immutable port data (`struct ib_port_immutable`).
#[derive(Clone, Copy, Debug)]
pub struct PortImmutable {
    /// P_Key table length.
    pub pkey_tbl_len: i32,
    /// GID table length.
    pub gid_tbl_len: i32,
    /// RoCEv2 (`RDMA_CORE_PORT_IBA_ROCE_UDP_ENCAP`) when true.
    pub roce_udp_encap: bool,
    /// Largest MAD the port handles.
    pub max_mad_size: u32,
}

/// `IB_MGMT_MAD_SIZE`: the size of a MAD.
pub const MGMT_MAD_SIZE: u32 = bindings::IB_MGMT_MAD_SIZE;

/// `RDMA_DRIVER_RXE`: the driver id that makes libibverbs load librxe.
pub const DRIVER_ID_RXE: u32 = bindings::rdma_driver_id_RDMA_DRIVER_RXE;
