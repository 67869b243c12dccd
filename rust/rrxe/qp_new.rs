// SPDX-License-Identifier: GPL-2.0

//! A new QP's parts: everything it allocates, made in its creator's call,
//! then the QP built from them, numbered and put in the device's tables
//! (`create_qp`, and `qp_xrc` for XRC target QPs).

use crate::ib::{
    device::{Device, DeviceRef},
    memcg::Charge,
    qp::{QpInit, QpType},
};
use crate::logic::qp::{QpAttrs, QpCap};
use crate::net::{gate::TxGate, route::RouteCache};
use crate::rrxe::{
    cq::CqShared,
    device::Rrxe,
    pd::PdId,
    qp::{QpInner, QpShared, GSI_QPN},
    queue::UserRing,
    rc::{ReqState, RespState},
    sq::SendBufs,
    srq::SrqShared,
    uc::UcRx,
    xrcd::XrcdId,
};
use kernel::{prelude::*, sync::Arc};

/// What a new QP is tied to: its PD (or XRC domain) and the CQs and SRQ
/// it uses.
pub(crate) struct QpLinks {
    pub(crate) pd: PdId,
    pub(crate) send_cq: Option<Arc<CqShared>>,
    pub(crate) recv_cq: Option<Arc<CqShared>>,
    pub(crate) srq: Option<Arc<SrqShared>>,
    pub(crate) xrcd: Option<XrcdId>,
}

/// A new QP before it has a number: everything it allocates, made in its
/// creator's call (later, in the receive path, an allocation could only
/// fail or go uncharged).
pub(crate) struct QpParts {
    pub(crate) ty: QpType,
    pub(crate) cap: QpCap,
    pub(crate) sig_all: bool,
    pub(crate) links: QpLinks,
    pub(crate) inner: QpInner,
    pub(crate) send_bufs: SendBufs,
    pub(crate) uc_rx: UcRx,
    pub(crate) req: ReqState,
    pub(crate) resp: RespState,
    pub(crate) route: Option<RouteCache>,
    pub(crate) gate: Option<TxGate<QpShared>>,
    pub(crate) kernel: bool,
    pub(crate) charge: Charge,
    pub(crate) handle: usize,
    pub(crate) dev: DeviceRef<Rrxe>,
}

impl QpParts {
    /// The parts of a QP of `init`'s type with these rings (send, and
    /// receive unless it uses an SRQ or has none) and capacities, charged
    /// to `charge`; `kernel` for a kernel consumer's QP.
    pub(crate) fn new(
        init: &QpInit,
        device: &Device<Rrxe>,
        links: QpLinks,
        (sq, rq): (UserRing, Option<UserRing>),
        cap: QpCap,
        charge: Charge,
        kernel: bool,
    ) -> Result<Self> {
        let gfp = charge.gfp();
        // RC's requester state, for an RC or XRC initiator QP.
        let rc = matches!(init.ty, QpType::Rc | QpType::XrcIni);
        let (slots, elem) = (sq.geometry().slots(), sq.geometry().elem_size());
        // The buffers a WQE is copied into.
        let recv = match (&rq, &links.srq) {
            (Some(rq), _) => rq.geometry().elem_size(),
            (None, Some(srq)) => srq.inner.lock().ring.geometry().elem_size(),
            (None, None) => 0,
        };
        charge.room(elem + recv + if rc { ReqState::bytes(slots, elem) } else { 0 })?;
        let (rc_recv, uc_recv, ud_recv) = match init.ty {
            QpType::Rc => (recv, 0, 0),
            QpType::Uc => (0, recv, 0),
            _ => (0, 0, recv),
        };
        let (req_slots, req_elem) = if rc { (slots, elem) } else { (0, 0) };
        // XRC's QPs are RC's requester (initiator) or responder (target).
        let connected = matches!(init.ty, QpType::Rc | QpType::XrcIni | QpType::XrcTgt);
        Ok(Self {
            ty: init.ty,
            cap,
            sig_all: init.sig_all,
            links,
            send_bufs: SendBufs {
                wqe: KVec::from_elem(0u8, elem, gfp)?,
                ..SendBufs::default()
            },
            uc_rx: UcRx {
                spare: KVec::from_elem(0u8, uc_recv, gfp)?,
                ..Default::default()
            },
            req: ReqState::new(req_slots, req_elem, gfp)?,
            resp: RespState::new(gfp, rc_recv)?,
            route: if connected || init.ty == QpType::Uc {
                Some(RouteCache::new(charge.accounts())?)
            } else {
                None
            },
            gate: if connected {
                Some(TxGate::new(charge.accounts())?)
            } else {
                None
            },
            inner: QpInner {
                attrs: QpAttrs {
                    port_num: 1,
                    ..Default::default()
                },
                sq,
                rq,
                ud_spare: KVec::from_elem(0u8, ud_recv, gfp)?,
            },
            kernel,
            charge,
            handle: init.handle,
            dev: DeviceRef::new(device),
        })
    }

    /// Numbers the QP (QP1 for GSI, the next free number otherwise), puts
    /// it in the device's tables, where the receive path finds it, and
    /// opens its gate.
    pub(crate) fn install(self, device: &Device<Rrxe>) -> Result<(u32, Arc<QpShared>)> {
        let dev = device.data();
        let (qpn, shared) = if self.ty == QpType::Gsi {
            // Built before the lock is taken: it allocates.
            let shared = QpShared::build(self, GSI_QPN)?;
            let mut g = dev.gsi().lock();
            if g.is_some() {
                drop(g);
                // Never entered the table: nothing to wait for or remove.
                shared.mark_dead();
                return Err(EBUSY);
            }
            *g = Some(shared.clone());
            (GSI_QPN, shared)
        } else {
            let (qpn, shared) = dev.qp_pool().insert(|qpn| QpShared::build(self, qpn))?;
            dev.qp_live().set(qpn, true);
            (qpn, shared)
        };
        if let Some(g) = &shared.gate {
            g.open(shared.clone());
        }
        Ok((qpn, shared))
    }
}
