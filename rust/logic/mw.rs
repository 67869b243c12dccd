// SPDX-License-Identifier: GPL-2.0

//! Memory-window states and the checks of using a window's rkey, as rxe
//! and the IB spec (o10-37, 10.6.7) have them.
//!
//! A type 1 window starts valid but unbound (it answers no address until
//! `ibv_bind_mw`); a type 2 window starts free and becomes valid when a
//! bind work request binds it to a QP. Invalidation returns a type 2
//! window to free.

use super::{
    access::{MwType, ZERO_BASED},
    bounds::Range,
};

/// A window's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MwState {
    /// Being destroyed; never used again.
    Invalid,
    /// A type 2 window that is not bound.
    Free,
    /// Usable (type 1 always; type 2 once bound).
    Valid,
}

/// The state a new window starts in.
pub const fn initial_state(ty: MwType) -> MwState {
    match ty {
        MwType::Type1 => MwState::Valid,
        MwType::Type2 => MwState::Free,
    }
}

/// What a bind recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Binding {
    /// The window's addresses, in the MR's address space (`addr`) and
    /// length; a zero-based window answers to `[0, len)` instead.
    pub range: Range,
    /// Remote access rights (and `ZERO_BASED`).
    pub access: u32,
    /// The QP a type 2 window is bound to.
    pub qpn: Option<u32>,
}

/// Why using a window is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UseError {
    /// Wrong key variant, wrong PD or QP, not valid, or not bound.
    BadKey,
    /// The window does not grant the access asked for.
    Access,
    /// The addresses are not all inside the window.
    Bounds,
}

/// Checks an access of `len` bytes at `iova` through a window, and returns
/// the address in the underlying MR's space. `pd_ok` says whether the
/// window's PD is the requester's; `qpn` is the QP the request arrived on.
#[expect(clippy::too_many_arguments)]
pub fn check_use(
    ty: MwType,
    state: MwState,
    binding: Option<&Binding>,
    pd_ok: bool,
    qpn: u32,
    need: u32,
    iova: u64,
    len: u64,
) -> Result<u64, UseError> {
    let b = match (state, binding) {
        (MwState::Valid, Some(b)) if pd_ok => b,
        _ => return Err(UseError::BadKey),
    };
    if matches!(ty, MwType::Type2) && b.qpn != Some(qpn) {
        return Err(UseError::BadKey);
    }
    if b.range.len == 0 {
        return Err(UseError::BadKey);
    }
    if b.access & need != need {
        return Err(UseError::Access);
    }
    if b.access & ZERO_BASED != 0 {
        let window = Range::new(0, b.range.len).ok_or(UseError::Bounds)?;
        let off = window.offset_of(iova, len).ok_or(UseError::Bounds)?;
        // `off < range.len` and the range does not wrap.
        b.range.iova.checked_add(off).ok_or(UseError::Bounds)
    } else {
        b.range.offset_of(iova, len).ok_or(UseError::Bounds)?;
        Ok(iova)
    }
}

#[cfg(test)]
mod tests {
    use super::super::access::{REMOTE_READ, REMOTE_WRITE};
    use super::*;

    fn bound(iova: u64, len: u64, access: u32, qpn: Option<u32>) -> Binding {
        Binding {
            range: Range::new(iova, len).unwrap(),
            access,
            qpn,
        }
    }

    #[test]
    fn initial_states() {
        assert_eq!(initial_state(MwType::Type1), MwState::Valid);
        assert_eq!(initial_state(MwType::Type2), MwState::Free);
    }

    #[test]
    fn unbound_or_wrong_owner_is_a_bad_key() {
        let b = bound(0x1000, 0x100, REMOTE_READ, Some(7));
        // A new type 1 window is valid but unbound.
        assert_eq!(
            check_use(MwType::Type1, MwState::Valid, None, true, 7, 0, 0x1000, 1),
            Err(UseError::BadKey)
        );
        assert_eq!(
            check_use(
                MwType::Type2,
                MwState::Free,
                Some(&b),
                true,
                7,
                0,
                0x1000,
                1
            ),
            Err(UseError::BadKey)
        );
        assert_eq!(
            check_use(
                MwType::Type2,
                MwState::Invalid,
                Some(&b),
                true,
                7,
                0,
                0x1000,
                1
            ),
            Err(UseError::BadKey)
        );
        assert_eq!(
            check_use(
                MwType::Type2,
                MwState::Valid,
                Some(&b),
                false,
                7,
                0,
                0x1000,
                1
            ),
            Err(UseError::BadKey)
        );
        assert_eq!(
            check_use(
                MwType::Type2,
                MwState::Valid,
                Some(&b),
                true,
                8,
                0,
                0x1000,
                1
            ),
            Err(UseError::BadKey)
        );
        // Type 1 windows are not tied to a QP.
        let b1 = bound(0x1000, 0x100, REMOTE_READ, None);
        assert_eq!(
            check_use(
                MwType::Type1,
                MwState::Valid,
                Some(&b1),
                true,
                9,
                REMOTE_READ,
                0x1000,
                1
            ),
            Ok(0x1000)
        );
        // Bound with length 0: answers nothing.
        let z = Binding {
            range: Range::new(0x1000, 0).unwrap(),
            access: REMOTE_READ,
            qpn: None,
        };
        assert_eq!(
            check_use(
                MwType::Type1,
                MwState::Valid,
                Some(&z),
                true,
                0,
                0,
                0x1000,
                0
            ),
            Err(UseError::BadKey)
        );
    }

    #[test]
    fn access_and_bounds() {
        let b = bound(0x1000, 0x100, REMOTE_READ, Some(7));
        let t = |need, iova, len| {
            check_use(
                MwType::Type2,
                MwState::Valid,
                Some(&b),
                true,
                7,
                need,
                iova,
                len,
            )
        };
        assert_eq!(t(REMOTE_READ, 0x1000, 0x100), Ok(0x1000));
        assert_eq!(t(REMOTE_READ, 0x10ff, 1), Ok(0x10ff));
        assert_eq!(t(REMOTE_WRITE, 0x1000, 1), Err(UseError::Access));
        assert_eq!(t(REMOTE_READ, 0xfff, 1), Err(UseError::Bounds));
        assert_eq!(t(REMOTE_READ, 0x10ff, 2), Err(UseError::Bounds));
        assert_eq!(t(REMOTE_READ, u64::MAX, 2), Err(UseError::Bounds));
        assert_eq!(t(REMOTE_READ, 0x1000, u64::MAX), Err(UseError::Bounds));
    }

    #[test]
    fn zero_based_windows_translate() {
        let b = bound(u64::MAX - 0xff, 0x100, REMOTE_WRITE | ZERO_BASED, Some(3));
        let t = |iova, len| {
            check_use(
                MwType::Type2,
                MwState::Valid,
                Some(&b),
                true,
                3,
                REMOTE_WRITE,
                iova,
                len,
            )
        };
        assert_eq!(t(0, 0x100), Ok(u64::MAX - 0xff));
        assert_eq!(t(0xff, 1), Ok(u64::MAX));
        assert_eq!(t(0xff, 2), Err(UseError::Bounds));
        assert_eq!(t(u64::MAX, 1), Err(UseError::Bounds));
        assert_eq!(t(0x100, 0), Err(UseError::Bounds));
    }
}
