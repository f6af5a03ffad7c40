//! Which kept sessions list from which keyed instance, so that a commit that moves the
//! instance tells them: a session focused on `INV-7` hears `list_changed` when another
//! session (or, through the store's commit feed, another replica) moves `INV-7` and its own
//! listing changes with it. Sessions are held weakly: a closed session is forgotten at the
//! next lookup.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use crate::store::StoreKey;

/// Sessions by the instance they list from.
pub(crate) struct Watchers<T> {
    by_key: Mutex<HashMap<StoreKey, Vec<Weak<T>>>>,
}

impl<T> Default for Watchers<T> {
    fn default() -> Self {
        Self { by_key: Mutex::default() }
    }
}

impl<T> Watchers<T> {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<StoreKey, Vec<Weak<T>>>> {
        self.by_key.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// `session` lists from `key` (once, however often it says so).
    pub(crate) fn watch(&self, key: StoreKey, session: &Arc<T>) {
        let mut by_key = self.lock();
        let sessions = by_key.entry(key).or_default();
        sessions.retain(|weak| weak.strong_count() > 0);
        if !sessions.iter().any(|weak| std::ptr::eq(weak.as_ptr(), Arc::as_ptr(session))) {
            sessions.push(Arc::downgrade(session));
        }
    }

    /// The live sessions that listed from `key`; closed ones are forgotten.
    pub(crate) fn watching(&self, key: &StoreKey) -> Vec<Arc<T>> {
        let mut by_key = self.lock();
        let Some(sessions) = by_key.get_mut(key) else { return Vec::new() };
        let live: Vec<Arc<T>> = sessions.iter().filter_map(Weak::upgrade).collect();
        sessions.retain(|weak| weak.strong_count() > 0);
        if sessions.is_empty() {
            by_key.remove(key);
        }
        live
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closed_sessions_are_forgotten_and_a_session_is_listed_once() {
        let watchers = Watchers::default();
        let key = StoreKey::instance("invoice", "INV-7");
        let (open, closed) = (Arc::new(1), Arc::new(2));
        watchers.watch(key.clone(), &open);
        watchers.watch(key.clone(), &open);
        watchers.watch(key.clone(), &closed);
        drop(closed);
        assert_eq!(watchers.watching(&key).iter().map(|s| **s).collect::<Vec<_>>(), [1]);
        drop(open);
        assert!(watchers.watching(&key).is_empty());
        assert!(watchers.lock().is_empty(), "nothing is kept for a key nobody watches");
    }
}
