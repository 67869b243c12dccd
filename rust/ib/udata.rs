// SPDX-License-Identifier: GPL-2.0

//! Driver-specific command data (`struct ib_udata`).

use super::bindings;
use kernel::{
    prelude::*,
    transmute::{AsBytes, FromBytes},
    types::Opaque,
    uaccess::UserSlice,
};

/// The driver-private input and output buffers of a uverbs command.
///
/// # Invariants
///
/// Formed only from a live `ib_udata` the core passed to a callback that is
/// still running; its buffers are user pointers of the calling process.
#[repr(transparent)]
pub struct Udata(Opaque<bindings::ib_udata>);

impl Udata {
    /// Forms an optional reference from the pointer the core passed.
    ///
    /// # Safety
    ///
    /// `ptr` must be null or point to an `ib_udata` valid for `'a`.
    pub(crate) unsafe fn from_raw<'a>(ptr: *mut bindings::ib_udata) -> Option<&'a Self> {
        // SAFETY: Transparent wrapper; validity is the caller's promise.
        unsafe { ptr.cast::<Self>().as_ref() }
    }

    pub(crate) fn as_raw(&self) -> *mut bindings::ib_udata {
        self.0.get()
    }

    /// Bytes of driver input userspace supplied.
    pub fn inlen(&self) -> usize {
        // SAFETY: Live by the invariant.
        unsafe { (*self.as_raw()).inlen }
    }

    /// Bytes of driver output userspace has room for.
    pub fn outlen(&self) -> usize {
        // SAFETY: Live by the invariant.
        unsafe { (*self.as_raw()).outlen }
    }

    /// Reads the driver input as `T`.
    ///
    /// Fails with `EINVAL` if userspace supplied fewer bytes than `T`, and with
    /// `EOPNOTSUPP` if it supplied more and the extra bytes are not zero (a
    /// newer provider asking for something this driver does not know).
    pub fn read_in<T: FromBytes>(&self) -> Result<T> {
        let len = self.inlen();
        let size = core::mem::size_of::<T>();
        if len < size {
            return Err(EINVAL);
        }
        // SAFETY: Live by the invariant.
        let inbuf = unsafe { (*self.as_raw()).inbuf };
        let mut r = UserSlice::new(UserPtr::from_ptr(inbuf.cast_mut()), len).reader();
        let v = r.read::<T>()?;
        self.check_zero_tail(&mut r, len - size)?;
        Ok(v)
    }

    fn check_zero_tail(
        &self,
        reader: &mut kernel::uaccess::UserSliceReader,
        mut left: usize,
    ) -> Result {
        let mut buf = [0u8; 64];
        while left > 0 {
            let n = left.min(buf.len());
            reader.read_slice(&mut buf[..n])?;
            if buf[..n].iter().any(|&b| b != 0) {
                return Err(EOPNOTSUPP);
            }
            left -= n;
        }
        Ok(())
    }

    /// Writes `value` as the driver output. Fails with `ENOSPC` if userspace
    /// has less room than `T`.
    pub fn write_out<T: AsBytes>(&self, value: &T) -> Result {
        let size = core::mem::size_of::<T>();
        if self.outlen() < size {
            return Err(ENOSPC);
        }
        // SAFETY: Live by the invariant.
        let outbuf = unsafe { (*self.as_raw()).outbuf };
        UserSlice::new(UserPtr::from_ptr(outbuf), size)
            .writer()
            .write_slice(value.as_bytes())
    }

    /// Copies `data` to the calling process's address `addr` (for ABIs that
    /// pass an output pointer inside the command, as rxe's `modify_srq`).
    pub fn write_to_user(addr: u64, data: &[u8]) -> Result {
        let addr = usize::try_from(addr).map_err(|_| EFAULT)?;
        UserSlice::new(UserPtr::from_addr(addr), data.len())
            .writer()
            .write_slice(data)
    }

    /// The user context the command runs in.
    pub fn ucontext<T: super::device::Driver>(&self) -> &super::object::Ucontext<T> {
        // The bundle's header (`struct_group_tagged`) is its first member,
        // so that the header is where the bundle is.
        type BundleHdr = bindings::uverbs_attr_bundle__bindgen_ty_1_uverbs_attr_bundle_hdr;
        const { assert!(core::mem::offset_of!(bindings::uverbs_attr_bundle, __bindgen_anon_1) == 0) };
        // A `Udata` is only formed from the driver udata of a uverbs command
        // bundle (kernel callers pass none).
        // SAFETY: The bundle's context (`container_of(udata, struct
        // uverbs_attr_bundle, driver_udata)->context`) is live for the call.
        unsafe {
            let hdr = self
                .as_raw()
                .byte_sub(core::mem::offset_of!(BundleHdr, driver_udata))
                .cast::<BundleHdr>();
            super::object::Ucontext::from_raw((*hdr).context)
        }
    }

    /// For commands that take no driver data: rejects non-zero input and
    /// zero-fills the output (`ib_no_udata_io`).
    pub fn no_io(this: Option<&Self>) -> Result {
        match this {
            None => Ok(()),
            Some(u) => {
                // SAFETY: `u` is live by the invariant.
                let r = unsafe { bindings::ib_no_udata_io(u.as_raw()) };
                kernel::error::to_result(r)
            }
        }
    }
}
