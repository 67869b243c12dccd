// SPDX-License-Identifier: GPL-2.0

//! Access flags (`enum ib_access_flags`) and the rules MRs and MWs follow.

/// Local write.
pub const LOCAL_WRITE: u32 = 1 << 0;
/// Remote write.
pub const REMOTE_WRITE: u32 = 1 << 1;
/// Remote read.
pub const REMOTE_READ: u32 = 1 << 2;
/// Remote atomics.
pub const REMOTE_ATOMIC: u32 = 1 << 3;
/// Memory windows may be bound to the MR.
pub const MW_BIND: u32 = 1 << 4;
/// The region's addresses start at 0.
pub const ZERO_BASED: u32 = 1 << 5;
/// On-demand paging.
pub const ON_DEMAND: u32 = 1 << 6;
/// Huge pages hint.
pub const HUGETLB: u32 = 1 << 7;
/// Global flush target.
pub const FLUSH_GLOBAL: u32 = 1 << 8;
/// Persistent flush target.
pub const FLUSH_PERSISTENT: u32 = 1 << 9;
/// The optional range: bits a driver may ignore (relaxed ordering is 1 << 20).
pub const OPTIONAL_RANGE: u32 = (((1 << 29) << 1) - 1) & !((1 << 20) - 1);
/// Every flag the core accepts.
pub const SUPPORTED: u32 = ((FLUSH_PERSISTENT << 1) - 1) | OPTIONAL_RANGE;
/// Remote access of any kind.
pub const REMOTE: u32 = REMOTE_WRITE | REMOTE_READ | REMOTE_ATOMIC;

/// Why access flags are refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AccessError {
    /// Malformed: unknown bits, or remote write/atomic without local write
    /// (`EINVAL`).
    Invalid,
    /// Well-formed but not supported by this device (`EOPNOTSUPP`).
    NotSupported,
}

/// Checks MR access flags as the core's `ib_check_mr_access` does, for a
/// device that supports both flush types and accepts `ON_DEMAND` (rrxe
/// reports ODP support, as rxe does, and pages such MRs on demand).
pub const fn check_mr_access(flags: u32) -> Result<(), AccessError> {
    if flags & (REMOTE_ATOMIC | REMOTE_WRITE) != 0 && flags & LOCAL_WRITE == 0 {
        return Err(AccessError::Invalid);
    }
    if flags & !SUPPORTED != 0 {
        return Err(AccessError::Invalid);
    }
    Ok(())
}

/// Checks the access of a fast-registration (`IB_WR_REG_MR`), DMA or
/// device-memory MR:
/// as [`check_mr_access`], and on-demand paging means nothing there.
pub const fn check_kernel_mr_access(flags: u32) -> Result<(), AccessError> {
    if flags & ON_DEMAND != 0 {
        return Err(AccessError::NotSupported);
    }
    check_mr_access(flags)
}

/// Memory window types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MwType {
    /// Type 1: bound with `ibv_bind_mw`, not tied to a QP.
    Type1,
    /// Type 2 (2B): bound through the send queue, tied to a QP.
    Type2,
}

/// Why a memory-window bind is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BindError {
    /// The MR lacks MW_BIND access.
    MrNoBindAccess,
    /// Zero-based windows are for type 2 only.
    ZeroBasedType1,
    /// A writable (remote write or atomic) window needs local write on the MR.
    WritableNeedsLocalWrite,
    /// Only remote access and zero-based may be asked of a window (local
    /// write is tolerated and means nothing, as in rxe).
    BadWindowAccess,
}

/// Checks the access-flag rules of binding a window of type `ty` with
/// `mw_access` onto an MR with `mr_access`.
pub const fn check_bind_access(
    ty: MwType,
    mr_access: u32,
    mw_access: u32,
) -> Result<(), BindError> {
    if mw_access & !(LOCAL_WRITE | REMOTE | ZERO_BASED) != 0 {
        return Err(BindError::BadWindowAccess);
    }
    if mr_access & MW_BIND == 0 {
        return Err(BindError::MrNoBindAccess);
    }
    if matches!(ty, MwType::Type1) && mw_access & ZERO_BASED != 0 {
        return Err(BindError::ZeroBasedType1);
    }
    if mw_access & (REMOTE_WRITE | REMOTE_ATOMIC) != 0 && mr_access & LOCAL_WRITE == 0 {
        return Err(BindError::WritableNeedsLocalWrite);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constants_match_the_uapi() {
        assert_eq!(OPTIONAL_RANGE, 0x3ff0_0000);
        assert_eq!(SUPPORTED, 0x3ff0_03ff);
    }

    #[test]
    fn mr_access_rules() {
        assert_eq!(check_mr_access(0), Ok(()));
        assert_eq!(check_mr_access(LOCAL_WRITE | REMOTE), Ok(()));
        assert_eq!(check_mr_access(REMOTE_READ), Ok(()));
        assert_eq!(check_mr_access(REMOTE_WRITE), Err(AccessError::Invalid));
        assert_eq!(check_mr_access(REMOTE_ATOMIC), Err(AccessError::Invalid));
        assert_eq!(check_mr_access(1 << 10), Err(AccessError::Invalid));
        assert_eq!(check_mr_access(1 << 30), Err(AccessError::Invalid));
        assert_eq!(check_mr_access(u32::MAX), Err(AccessError::Invalid));
        assert_eq!(
            check_mr_access(1 << 20),
            Ok(()),
            "relaxed ordering is optional"
        );
        assert_eq!(check_mr_access(ON_DEMAND | LOCAL_WRITE), Ok(()));
        assert_eq!(
            check_kernel_mr_access(ON_DEMAND),
            Err(AccessError::NotSupported)
        );
        assert_eq!(
            check_kernel_mr_access(REMOTE_WRITE),
            Err(AccessError::Invalid)
        );
        assert_eq!(check_mr_access(FLUSH_GLOBAL | FLUSH_PERSISTENT), Ok(()));
    }

    #[test]
    fn bind_rules() {
        let mr = LOCAL_WRITE | MW_BIND;
        assert_eq!(check_bind_access(MwType::Type1, mr, REMOTE), Ok(()));
        assert_eq!(
            check_bind_access(MwType::Type2, mr, REMOTE | ZERO_BASED),
            Ok(())
        );
        assert_eq!(
            check_bind_access(MwType::Type1, mr, REMOTE_READ | ZERO_BASED),
            Err(BindError::ZeroBasedType1)
        );
        assert_eq!(
            check_bind_access(MwType::Type2, LOCAL_WRITE, REMOTE_READ),
            Err(BindError::MrNoBindAccess)
        );
        assert_eq!(
            check_bind_access(MwType::Type2, MW_BIND, REMOTE_WRITE),
            Err(BindError::WritableNeedsLocalWrite)
        );
        assert_eq!(
            check_bind_access(MwType::Type2, MW_BIND, REMOTE_READ),
            Ok(())
        );
        assert_eq!(
            check_bind_access(MwType::Type2, mr, LOCAL_WRITE | REMOTE_WRITE),
            Ok(())
        );
        assert_eq!(
            check_bind_access(MwType::Type2, mr, MW_BIND),
            Err(BindError::BadWindowAccess)
        );
    }
}
