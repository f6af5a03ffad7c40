//! A session's focus: per keyed machine, the instance its latest call on that machine
//! named, with the state that call left it in. A session's `tools/list` shows what its
//! focus instances allow.
//!
//! Calls of one session run concurrently, so the focus is never copied and written back:
//! every call takes a ticket when it starts, and moves the focus only if no call that
//! started after it moved it already ([`SessionFocus::move_to`]); a listing refreshes the
//! state of the instance still in focus and nothing else ([`SessionFocus::refresh`]).

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// The focus of one session, per keyed machine.
pub(crate) type Focus = BTreeMap<String, FocusEntry>;

/// One keyed machine's focus.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FocusEntry {
    /// The instance (`INV-7`).
    pub(crate) instance: String,
    /// Its state when last seen.
    pub(crate) state: String,
}

/// When a call started, among the calls of its session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Ticket(u64);

/// The focus of a session, shared by its concurrent calls.
#[derive(Debug, Default)]
pub(crate) struct SessionFocus {
    /// Per machine: the focus, and the ticket of the call that set it.
    entries: Mutex<BTreeMap<String, (FocusEntry, Ticket)>>,
    tickets: AtomicU64,
    /// How many times the focus moved (counted under the lock, after the move).
    moves: AtomicU64,
}

impl SessionFocus {
    /// A ticket for a call starting now: later calls get greater ones.
    pub(crate) fn begin(&self) -> Ticket {
        Ticket(self.tickets.fetch_add(1, Ordering::Relaxed) + 1)
    }

    /// How many times the focus moved so far: a session that watched its focus at this
    /// count need not watch it again until the count changes.
    pub(crate) fn moves(&self) -> u64 {
        self.moves.load(Ordering::Acquire)
    }

    /// The focus now.
    pub(crate) fn current(&self) -> Focus {
        self.lock().iter().map(|(machine, (entry, _))| (machine.clone(), entry.clone())).collect()
    }

    /// Moves `machine`'s focus to `entry` for the call holding `ticket`, unless a call that
    /// started later moved it already; returns the focus before and after, read at once,
    /// if it changed (`None`: it did not, the common case of a call on the instance in
    /// focus).
    pub(crate) fn move_to(&self, machine: &str, entry: FocusEntry, ticket: Ticket) -> Option<(Focus, Focus)> {
        let mut entries = self.lock();
        match entries.get_mut(machine) {
            Some((_, set_by)) if *set_by > ticket => return None,
            Some((current, set_by)) if *current == entry => {
                *set_by = ticket;
                return None;
            }
            _ => {}
        }
        let before: Focus = entries.iter().map(|(m, (e, _))| (m.clone(), e.clone())).collect();
        entries.insert(machine.to_string(), (entry.clone(), ticket));
        self.moves.fetch_add(1, Ordering::Release);
        let mut after = before.clone();
        after.insert(machine.to_string(), entry);
        Some((before, after))
    }

    /// Records that `machine`'s instance `instance` is now in `state`, if it is still the
    /// one in focus (a listing reads states after the calls that set the focus).
    pub(crate) fn refresh(&self, machine: &str, instance: &str, state: &str) {
        if let Some((entry, _)) = self.lock().get_mut(machine)
            && entry.instance == instance
        {
            entry.state = state.to_string();
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, (FocusEntry, Ticket)>> {
        self.entries.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// The states a focus lays over a flow's snapshot.
pub(crate) fn focus_states(focus: &Focus) -> impl Iterator<Item = (&str, &str)> {
    focus.iter().map(|(machine, entry)| (machine.as_str(), entry.state.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(instance: &str, state: &str) -> FocusEntry {
        FocusEntry { instance: instance.into(), state: state.into() }
    }

    #[test]
    fn a_call_that_started_earlier_never_moves_a_later_calls_focus() {
        let focus = SessionFocus::default();
        let (slow, fast) = (focus.begin(), focus.begin());
        focus.move_to("invoice", entry("INV-2", "review"), fast);
        assert_eq!(focus.move_to("invoice", entry("INV-1", "draft"), slow), None);
        assert_eq!(focus.current()["invoice"], entry("INV-2", "review"));
    }

    #[test]
    fn a_refresh_touches_only_the_instance_in_focus() {
        let focus = SessionFocus::default();
        focus.move_to("invoice", entry("INV-2", "review"), focus.begin());
        focus.refresh("invoice", "INV-1", "approved");
        assert_eq!(focus.current()["invoice"], entry("INV-2", "review"));
        focus.refresh("invoice", "INV-2", "approved");
        assert_eq!(focus.current()["invoice"], entry("INV-2", "approved"));
    }
}
