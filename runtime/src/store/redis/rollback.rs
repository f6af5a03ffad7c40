//! How a running store notices Redis going back to an earlier state under it: its data
//! restored from a backup, or a restart that lost writes (the append-only file turned off
//! at run time), while the marker is the same.
//!
//! Every commit advances a clock in Redis (`toolgate:{clock}`, `INCR` in the script that
//! writes), and every store remembers the highest value it has seen: in the answers to its
//! commits, and in what its reads and its once-a-second watch find. Redis only ever moves
//! the clock forward, so a store that saw `N` and then finds `M < N` has seen Redis go
//! back: what was committed between `M` and `N` is gone, and the key counters with it —
//! `PAY-4` would be minted again, a payment voided would be `authorized` again. From then on
//! the store fails closed (`STORE_UNAVAILABLE`) until the servers are restarted, after the
//! restore procedure ([`restore`](super::restore)) — on its own it could not tell when it is
//! safe again: a new server that remembers nothing would move the clock past `N`.
//!
//! The commit script compares before it writes: a commit never lands on a Redis that went
//! back. The comparison is to the value the store remembered *before* it sent the call, and
//! a reply reflects a state Redis reached after every reply the store had received then: a
//! lower value cannot be a reordering of replies.
//!
//! Each replica remembers only what it saw: one that has seen nothing newer than the backup
//! (started after it, or idle since, for less than the watch's second) cannot notice — the
//! others do. After a full restart nobody remembers: that case is the restore procedure's.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::store::StoreError;

/// Where the clock lives (under `toolgate:{`, with the rest of what an ACL grants the store).
pub(super) const CLOCK_KEY: &str = "toolgate:{clock}";

/// The highest value of Redis's clock this store saw, and whether it saw Redis go back.
#[derive(Debug)]
pub(super) struct Clock {
    highest: AtomicU64,
    went_back: AtomicBool,
    /// Whether what a read finds is remembered: not where a write is kept only once a
    /// replica acknowledged it, as a read can see one no replica has yet (a failover may
    /// lose it, reported to its caller as of unknown outcome: no going back).
    trusts_reads: bool,
}

impl Clock {
    /// A clock that has seen nothing yet.
    pub(super) fn new(trusts_reads: bool) -> Self {
        Self { highest: AtomicU64::new(0), went_back: AtomicBool::new(false), trusts_reads }
    }

    /// The highest value seen so far: read before a call is sent, and sent with a commit.
    pub(super) fn highest(&self) -> u64 {
        self.highest.load(Ordering::Acquire)
    }

    /// Fails closed once Redis was seen going back.
    pub(super) fn check(&self) -> Result<(), StoreError> {
        if self.went_back.load(Ordering::Acquire) { Err(went_back()) } else { Ok(()) }
    }

    /// What a read sent when the highest value seen was `before` found: `None` for a Redis
    /// without the clock (no commit yet).
    pub(super) fn read(&self, before: u64, found: Option<u64>) -> Result<(), StoreError> {
        let found = found.unwrap_or(0);
        if found < before {
            return Err(self.gone_back(before, found));
        }
        if self.trusts_reads {
            self.highest.fetch_max(found, Ordering::AcqRel);
        }
        self.check()
    }

    /// The value a commit made (kept: Redis acknowledged it as the store requires).
    pub(super) fn committed(&self, clock: u64) {
        self.highest.fetch_max(clock, Ordering::AcqRel);
    }

    /// Redis was found at `found`, lower than `seen`: logged once, with both values.
    pub(super) fn gone_back(&self, seen: u64, found: u64) -> StoreError {
        if !self.went_back.swap(true, Ordering::AcqRel) {
            tracing::error!(
                seen,
                found,
                clock = CLOCK_KEY,
                "Redis went back to an earlier state under this server: its clock reads {found}, this server saw \
                 {seen} (its data was restored from a backup, or it restarted having lost writes). Every call is \
                 refused so that no key is minted twice; follow the restore procedure (`<server> redis-restored \
                 --store URL`) and restart the servers"
            );
        }
        went_back()
    }
}

/// What a call gets once Redis went back.
fn went_back() -> StoreError {
    StoreError::Unavailable(
        "Redis went back to an earlier state under this server (restored from a backup, or restarted having lost \
         writes): toolgate refuses every call until the servers are restarted after the restore procedure"
            .into(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_lower_than_one_seen_before_the_call_is_going_back_for_good() {
        let clock = Clock::new(true);
        clock.committed(7);
        assert_eq!(clock.read(clock.highest(), Some(9)), Ok(()));
        assert_eq!(clock.highest(), 9);
        // A reply to a call sent before 9 was seen: not going back.
        assert_eq!(clock.read(7, Some(8)), Ok(()));
        assert_eq!(clock.highest(), 9);
        assert!(clock.read(9, Some(4)).is_err());
        assert!(clock.read(0, Some(12)).is_err(), "once gone back, always refused");
        assert!(clock.check().is_err());
    }

    #[test]
    fn a_store_kept_by_replicas_remembers_only_what_they_acknowledged() {
        let clock = Clock::new(false);
        clock.committed(3);
        assert_eq!(clock.read(3, Some(5)), Ok(()));
        assert_eq!(clock.highest(), 3, "a value no replica may have is not remembered");
        assert!(clock.read(3, None).is_err(), "an empty clock under a value seen");
    }
}
