// SPDX-License-Identifier: GPL-2.0

//! Address handles. Each AH has a number in the device's AH table
//! (`ah_num`, 1..=`max_ah`), which user UD work requests name; the create
//! response carries it (`{u32 ah_num, u32 reserved}`; an older provider
//! that passes less room gets no number and must embed the address vector
//! in its work requests).

use crate::ib::{
    ah::{AhInit, AhOps},
    memcg::Charge,
    object::{Ah, Pd},
    udata::Udata,
};
use crate::logic::{limits, qp::Av};
use crate::rrxe::device::{Rrxe, RrxeDev};
use crate::rrxe::pd::{pd_id, PdId};
use kernel::{prelude::*, sync::Arc, transmute::AsBytes};

/// An AH as the AH table holds it (UD sends find it by number).
pub struct AhShared {
    /// Its number.
    pub num: u32,
    /// The PD it belongs to, as an identity.
    pub pd: PdId,
    /// The address vector.
    pub av: Av,
    /// The source GID.
    pub sgid: [u8; 16],
}

/// An AH as the core holds it: leaves the table when destroyed.
pub struct RrxeAh {
    /// The AH.
    pub shared: Arc<AhShared>,
}

impl RrxeAh {
    /// Takes the AH out of `dev`'s table.
    fn unlink(&self, dev: &RrxeDev) {
        // Kernel AHs (number 0) are in no table.
        if self.shared.num != 0 {
            dev.ah_pool().remove(self.shared.num);
        }
    }
}

/// The create response of the rxe ABI: the AH's number.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct CreateAhResp {
    pub(crate) ah_num: u32,
    pub(crate) reserved: u32,
}

// SAFETY: Two `u32`s, no padding.
unsafe impl AsBytes for CreateAhResp {}

#[vtable]
impl AhOps<Rrxe> for RrxeAh {
    /// `destroy_ah`: the AH leaves the table.
    fn destroy_ah(ah: &Ah<Rrxe>) {
        ah.data().unlink(ah.device().data());
    }

    /// `create_ah`/`create_user_ah`: a RoCE address vector with a GRH, on port
    /// 1, with a resolved RoCEv2 source GID.
    fn create_ah(pd: &Pd<Rrxe>, init: &AhInit, udata: Option<&Udata>) -> Result<RrxeAh> {
        if !init.roce
            || !init.grh
            || init.av.port_num != 1
            || i32::from(init.av.sgid_index) >= limits::PORT_GID_TBL_LEN
        {
            return Err(EINVAL);
        }
        let sgid = init.sgid.ok_or(EINVAL)?;
        if !sgid.roce_v2 {
            return Err(EINVAL);
        }
        let dev = pd.device().data();
        let pd_id = pd_id(pd);
        let Some(u) = udata else {
            // A kernel AH: kernel work requests name it by pointer, so it needs
            // no number and no table slot; it may be made in atomic context.
            let flags = if init.sleepable {
                GFP_KERNEL
            } else {
                GFP_ATOMIC
            };
            let shared = Arc::new(
                AhShared {
                    num: 0,
                    pd: pd_id,
                    av: init.av,
                    sgid: sgid.gid,
                },
                flags,
            )?;
            return Ok(RrxeAh { shared });
        };
        Charge::current().room(0)?;
        let (num, shared) = dev.ah_pool().insert(|num| {
            Ok(Arc::new(
                AhShared {
                    num,
                    pd: pd_id,
                    av: init.av,
                    sgid: sgid.gid,
                },
                // A user's AH is charged to its memory cgroup.
                GFP_KERNEL_ACCOUNT,
            )?)
        })?;
        let ah = RrxeAh { shared };
        if u.outlen() >= core::mem::size_of::<CreateAhResp>() {
            let resp = CreateAhResp {
                ah_num: num,
                reserved: 0,
            };
            // On failure the AH leaves the table again.
            u.write_out(&resp).inspect_err(|_| ah.unlink(dev))?;
        }
        Ok(ah)
    }

    /// `query_ah`.
    fn query_ah(ah: &Ah<Rrxe>) -> Result<Av> {
        Ok(ah.data().shared.av)
    }
}
