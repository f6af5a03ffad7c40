//! [`DeadLetterLog`]: the instances this process dead-lettered an effect of lately — the
//! index the console's effects page reads; each instance's dead letters (name, attempts,
//! why the last failed) are read from its record in the store
//! ([`Snapshot::dead_effects`](crate::store::Snapshot::dead_effects)).
//!
//! Kept in memory, per process, like the tasks started: a dead letter holds no due time, so
//! the store's index of deadlines does not name it, and listing them from the store would
//! read every instance. With replicas, each replica's console lists the dead letters its
//! own sweeps wrote.

use std::collections::VecDeque;
use std::sync::Mutex;

use crate::store::StoreKey;

/// How many instances are remembered: the latest, from every tenant.
const KEPT: usize = 1_024;

/// The instances with an effect dead-lettered lately ([module docs](self)).
#[derive(Debug, Default)]
pub(crate) struct DeadLetterLog {
    keys: Mutex<VecDeque<StoreKey>>,
}

impl DeadLetterLog {
    /// Remembers that an effect of the instance at `key` was dead-lettered (once per
    /// instance, as its latest), forgetting the oldest past [`KEPT`].
    pub(crate) fn record(&self, key: &StoreKey) {
        let mut keys = self.keys.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        keys.retain(|kept| kept != key);
        if keys.len() == KEPT {
            keys.pop_front();
        }
        keys.push_back(key.clone());
    }

    /// The instances, the latest first, at most `most`.
    pub(crate) fn latest(&self, most: usize) -> Vec<StoreKey> {
        let keys = self.keys.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        keys.iter().rev().take(most).cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_instance_is_listed_once_as_its_latest_and_the_oldest_are_forgotten() {
        let log = DeadLetterLog::default();
        let (one, two) = (StoreKey::instance("payment", "PAY-1"), StoreKey::instance("payment", "PAY-2"));
        log.record(&one);
        log.record(&two);
        log.record(&one);
        assert_eq!(log.latest(10), [one.clone(), two.clone()]);
        assert_eq!(log.latest(1).first(), Some(&one));
        assert_eq!(log.latest(1).len(), 1);
        for n in 0..KEPT {
            log.record(&StoreKey::instance("payment", &format!("P-{n}")));
        }
        assert!(!log.latest(KEPT).contains(&one), "the oldest are forgotten past {KEPT}");
    }
}
