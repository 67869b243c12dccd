// SPDX-License-Identifier: GPL-2.0

//! Multicast groups of UD QPs, with rxe's limits: at most
//! `max_mcast_grp` groups, `max_mcast_qp_attach` QPs per group and
//! `max_total_mcast_qp_attach` attachments in all. Storage is the caller's
//! (any `Vec`-like type), so the kernel and the host use the same rules.

/// Why an attach or detach is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum McastError {
    /// A limit is reached (`ENOMEM`).
    Full,
    /// The QP is not attached to the group (`EINVAL`).
    NotAttached,
}

/// The limits.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Groups.
    pub groups: usize,
    /// QPs per group.
    pub per_group: usize,
    /// Attachments in all.
    pub total: usize,
}

/// What an attach must do, decided before anything changes (so that an
/// allocation failure leaves the table as it was).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Attach {
    /// Already attached: nothing to do.
    Present,
    /// Add the QP to the group at this index.
    AddTo(usize),
    /// Create the group, with the QP.
    NewGroup,
}

/// Decides an attach of `qpn` to `gid`, given the groups' GIDs and members
/// (`members(i)` lists group `i`'s QPs) and the total attachment count.
pub fn plan_attach<'a>(
    gids: impl Iterator<Item = &'a [u8; 16]>,
    members: impl Fn(usize) -> &'a [u32],
    gid: &[u8; 16],
    qpn: u32,
    total: usize,
    lim: Limits,
) -> Result<Attach, McastError> {
    let mut n = 0;
    for (i, g) in gids.enumerate() {
        n += 1;
        if g == gid {
            let m = members(i);
            if m.contains(&qpn) {
                return Ok(Attach::Present);
            }
            if m.len() >= lim.per_group || total >= lim.total {
                return Err(McastError::Full);
            }
            return Ok(Attach::AddTo(i));
        }
    }
    if n >= lim.groups || total >= lim.total {
        return Err(McastError::Full);
    }
    Ok(Attach::NewGroup)
}

/// Whether the multicast GID is one RoCE maps (IPv6 multicast `ff00::/8`,
/// or IPv4-mapped `::ffff:224.0.0.0/4`).
pub fn is_mcast_gid(gid: &[u8; 16]) -> bool {
    gid[0] == 0xff
        || (gid[..10] == [0; 10] && gid[10] == 0xff && gid[11] == 0xff && gid[12] & 0xf0 == 0xe0)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIM: Limits = Limits {
        groups: 2,
        per_group: 2,
        total: 3,
    };

    #[test]
    fn plans() {
        let g1 = [1u8; 16];
        let g2 = [2u8; 16];
        let g3 = [3u8; 16];
        let gids = [g1, g2];
        let mem: [&[u32]; 2] = [&[10, 11], &[12]];
        let p = |gid, qpn, total| plan_attach(gids.iter(), |i| mem[i], gid, qpn, total, LIM);
        assert_eq!(p(&g1, 10, 3), Ok(Attach::Present));
        assert_eq!(p(&g1, 12, 2), Err(McastError::Full), "group full");
        assert_eq!(p(&g2, 10, 2), Ok(Attach::AddTo(1)));
        assert_eq!(p(&g2, 10, 3), Err(McastError::Full), "total reached");
        assert_eq!(p(&g3, 10, 1), Err(McastError::Full), "no room for a group");
        let one = [g1];
        assert_eq!(
            plan_attach(one.iter(), |i| mem[i], &g3, 5, 2, LIM),
            Ok(Attach::NewGroup)
        );
    }

    #[test]
    fn mcast_gids() {
        let mut v6 = [0u8; 16];
        v6[0] = 0xff;
        assert!(is_mcast_gid(&v6));
        let mut v4 = [0u8; 16];
        v4[10] = 0xff;
        v4[11] = 0xff;
        v4[12] = 239;
        assert!(is_mcast_gid(&v4));
        v4[12] = 10;
        assert!(!is_mcast_gid(&v4));
        assert!(!is_mcast_gid(&[0; 16]));
    }
}
