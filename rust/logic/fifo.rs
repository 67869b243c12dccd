// SPDX-License-Identifier: GPL-2.0

//! A bounded first-in first-out queue over storage allocated once (no
//! allocation when used), whose newest entry may absorb the next one: the
//! RC responder's replies waiting to be sent, in order.

use core::ops::DerefMut;

/// A queue of at most `slots.len()` entries.
pub struct Fifo<S> {
    /// The entries' storage; its length is the capacity.
    pub slots: S,
    head: usize,
    len: usize,
}

impl<T, S: DerefMut<Target = [Option<T>]>> Fifo<S> {
    /// An empty queue over `slots` (all `None`).
    pub fn new(slots: S) -> Self {
        Self {
            slots,
            head: 0,
            len: 0,
        }
    }

    /// Entries queued.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The slot of the `k`-th entry from the oldest. A queue of no slots
    /// never asks (it holds nothing); were it to, it gets slot 0 rather
    /// than a division by zero.
    fn at(&self, k: usize) -> usize {
        (self.head + k).checked_rem(self.slots.len()).unwrap_or(0)
    }

    /// Queues `x` behind the others, unless `merge` folds it into the
    /// newest entry (`merge(newest, &x)` returns true once it has). `false`
    /// if the queue is full (`x` is dropped).
    pub fn push(&mut self, x: T, merge: impl FnOnce(&mut T, &T) -> bool) -> bool {
        if self.len > 0 {
            let i = self.at(self.len - 1);
            if let Some(last) = self.slots[i].as_mut() {
                if merge(last, &x) {
                    return true;
                }
            }
        }
        if self.len == self.slots.len() {
            return false;
        }
        let i = self.at(self.len);
        self.slots[i] = Some(x);
        self.len += 1;
        true
    }

    /// The oldest entry.
    pub fn front_mut(&mut self) -> Option<&mut T> {
        if self.len == 0 {
            return None;
        }
        let i = self.head;
        self.slots[i].as_mut()
    }

    /// Removes the oldest entry.
    pub fn pop(&mut self) -> Option<T> {
        if self.len == 0 {
            return None;
        }
        let i = self.head;
        self.head = self.at(1);
        self.len -= 1;
        self.slots[i].take()
    }

    /// The position (from the oldest) of the oldest entry that satisfies
    /// `f`.
    fn position(&self, mut f: impl FnMut(&T) -> bool) -> Option<usize> {
        (0..self.len).find(|&k| self.slots[self.at(k)].as_ref().is_some_and(&mut f))
    }

    /// Whether an entry satisfies `f`.
    pub fn any(&self, f: impl FnMut(&T) -> bool) -> bool {
        self.position(f).is_some()
    }

    /// The oldest entry that satisfies `f`.
    pub fn find_mut(&mut self, f: impl FnMut(&T) -> bool) -> Option<&mut T> {
        let i = self.at(self.position(f)?);
        self.slots[i].as_mut()
    }

    /// Queues `x` ahead of the oldest entry that satisfies `f`: `None` if
    /// none does (nothing is queued), `Some(false)` if the queue is full
    /// (`x` is dropped).
    pub fn insert_before(&mut self, x: T, f: impl FnMut(&T) -> bool) -> Option<bool> {
        let k = self.position(f)?;
        if self.len == self.slots.len() {
            return Some(false);
        }
        for j in (k..self.len).rev() {
            let (from, to) = (self.at(j), self.at(j + 1));
            self.slots[to] = self.slots[from].take();
        }
        let i = self.at(k);
        self.slots[i] = Some(x);
        self.len += 1;
        Some(true)
    }

    /// Keeps only the entries that satisfy `keep`, in their order. Like
    /// [`Self::clear`], without a division or an index that can panic: the
    /// QP's error path calls it.
    pub fn retain(&mut self, mut keep: impl FnMut(&T) -> bool) {
        let cap = self.slots.len();
        let (mut from, mut to, mut kept) = (self.head, self.head, 0);
        for _ in 0..self.len {
            let x = self.slots.get_mut(from).and_then(Option::take);
            if let Some(x) = x.filter(|x| keep(x)) {
                // `to` trails `from`: its slot is this one or one emptied.
                if let Some(slot) = self.slots.get_mut(to) {
                    *slot = Some(x);
                }
                kept += 1;
                to += 1;
                if to == cap {
                    to = 0;
                }
            }
            from += 1;
            if from == cap {
                from = 0;
            }
        }
        self.len = kept;
    }

    /// Drops every entry (slot by slot: no division, so no panic path in
    /// the QP's reset and error paths that call it).
    pub fn clear(&mut self) {
        for x in self.slots.iter_mut() {
            *x = None;
        }
        self.head = 0;
        self.len = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(n: usize) -> Fifo<Vec<Option<u32>>> {
        Fifo::new(vec![None; n])
    }

    fn never(_: &mut u32, _: &u32) -> bool {
        false
    }

    #[test]
    fn order_and_bound() {
        let mut f = q(3);
        assert!(f.push(1, never) && f.push(2, never) && f.push(3, never));
        assert!(!f.push(4, never), "a full queue drops");
        assert_eq!(f.len(), 3);
        assert_eq!(f.pop(), Some(1));
        assert!(f.push(5, never), "room again, across the wrap");
        assert_eq!(
            (f.pop(), f.pop(), f.pop(), f.pop()),
            (Some(2), Some(3), Some(5), None)
        );
        assert!(f.is_empty());
    }

    #[test]
    fn merge_into_newest_only() {
        // Odd numbers absorb the next even one (it adds to them).
        let odd = |last: &mut u32, x: &u32| {
            if *last & 1 == 1 && *x & 1 == 0 {
                *last += *x;
                true
            } else {
                false
            }
        };
        let mut f = q(2);
        assert!(f.push(1, odd) && f.push(2, odd), "2 folds into 1");
        assert_eq!(f.len(), 1);
        assert!(f.push(4, odd) && f.len() == 1, "3 is odd: 4 folds too");
        assert!(f.push(6, never) && f.len() == 2);
        let add = |last: &mut u32, x: &u32| {
            *last += *x;
            true
        };
        assert!(f.push(8, add), "a full queue still merges");
        assert!(!f.push(1, never));
        assert!(f.any(|&x| x == 14) && !f.any(|&x| x == 1));
        if let Some(x) = f.find_mut(|&x| x > 5) {
            *x += 1;
        }
        assert!(
            f.any(|&x| x == 8) && f.any(|&x| x == 14),
            "the oldest match"
        );
        assert!(f.find_mut(|&x| x == 99).is_none());
        assert_eq!(f.front_mut().copied(), Some(8));
        f.clear();
        assert!(f.is_empty() && f.front_mut().is_none());
        assert!(f.slots.iter().all(Option::is_none), "every entry dropped");
        assert!(f.push(3, never) && f.push(4, never));
        assert_eq!((f.pop(), f.pop(), f.pop()), (Some(3), Some(4), None));
    }

    #[test]
    fn insert_before_keeps_order_across_the_wrap() {
        let mut f = q(5);
        for x in [1, 2, 4] {
            assert!(f.push(x, never));
        }
        assert_eq!(f.pop(), Some(1));
        assert!(f.push(5, never));
        // 2, 4, 5 with the head at slot 1: 3 goes before the first above 2.
        assert_eq!(f.insert_before(3, |&x| x > 2), Some(true));
        assert_eq!(f.insert_before(9, |&x| x > 8), None, "no such entry");
        assert_eq!(f.len(), 4);
        assert!(f.push(6, never), "across the wrap");
        assert_eq!(f.insert_before(0, |_| true), Some(false), "full");
        let got: Vec<_> = core::iter::from_fn(|| f.pop()).collect();
        assert_eq!(got, [2, 3, 4, 5, 6]);
    }

    #[test]
    fn retain_keeps_order_across_the_wrap() {
        let mut f = q(4);
        for x in [1, 2, 3] {
            assert!(f.push(x, never));
        }
        assert_eq!(f.pop(), Some(1));
        assert!(f.push(4, never) && f.push(5, never));
        // 2, 3, 4, 5 with the head at slot 1; the odd ones go.
        f.retain(|&x| x % 2 == 0);
        assert_eq!(f.len(), 2);
        assert_eq!(
            f.slots.iter().filter(|x| x.is_some()).count(),
            2,
            "the rest dropped"
        );
        assert!(f.push(6, never) && f.push(7, never));
        assert!(!f.push(8, never), "full at 4 again");
        f.retain(|_| true);
        let got: Vec<_> = core::iter::from_fn(|| f.pop()).collect();
        assert_eq!(got, [2, 4, 6, 7]);
        f.retain(|_| false);
        assert!(f.is_empty());
        let mut e = q(0);
        e.retain(|_| true);
        assert!(e.is_empty());
    }

    #[test]
    fn zero_capacity_refuses() {
        let mut f = q(0);
        assert!(!f.push(1, never));
        assert!(f.pop().is_none());
    }
}
