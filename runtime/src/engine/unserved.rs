//! [`LeftToTheirServers`]: the due instances of machines this server lacks, which its
//! timer sweeps leave to a server that has them.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::time::Duration;

use crate::store::StoreKey;

/// How long past its due time an instance of a machine this server lacks is left to a
/// server that has it, before its deadline is taken off the store's index.
pub(super) const UNSERVED_AFTER: Duration = Duration::from_secs(3_600);

/// The most instances a sweep remembers having left to their servers.
const LEFT_REMEMBERED: usize = 4_096;

/// The due instances of machines this server lacks that its sweeps leave to a server that
/// has them, each with the time it is [`UNSERVED_AFTER`] overdue. A sweep asks the store
/// for as many more deadlines as it remembers of these, and skips them unread: they
/// neither crowd this server's own out of a sweep, nor are read again on every one.
#[derive(Default)]
pub(crate) struct LeftToTheirServers(Mutex<HashMap<StoreKey, u64>>);

impl LeftToTheirServers {
    pub(super) fn len(&self) -> usize {
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).len()
    }

    /// Whether the instance at `key` is left to its server at `now` (and so not read).
    pub(super) fn skips(&self, key: &StoreKey, now: u64) -> bool {
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).get(key).is_some_and(|&unserved| unserved > now)
    }

    /// Remembers that the instance at `key` is left to its server until `unserved`, or
    /// forgets it (`None`: cleared).
    pub(super) fn remember(&self, key: &StoreKey, unserved: Option<u64>) {
        let mut left = self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        match unserved {
            Some(at) if left.len() < LEFT_REMEMBERED || left.contains_key(key) => {
                left.insert(key.clone(), at);
            }
            Some(_) => {}
            None => {
                left.remove(key);
            }
        }
    }

    /// Forgets the instances the store no longer names as due (their server settled them).
    pub(super) fn keep_only(&self, due: &HashSet<&StoreKey>) {
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).retain(|key, _| due.contains(key));
    }
}
