//! Instances in time: the transitions `after` fires. The deadline is part of the instance
//! ([`Snapshot::due_at_ms`], set when it enters a state), so what is due follows from the
//! instance alone — on every read, on any replica, after any restart — and the engine's
//! sweeper only commits it sooner.

use super::Machine;
use crate::store::Snapshot;

/// At most this many `after` steps are applied at once (a cycle of short delays waits for
/// the next read or sweep).
const MAX_STEPS: usize = 64;

/// One transition time fired.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Fired {
    pub(crate) from: String,
    pub(crate) to: String,
    /// The delay that elapsed.
    pub(crate) after_ms: u64,
    /// When it was due (milliseconds since the Unix epoch).
    pub(crate) at_ms: u64,
}

impl Machine {
    /// Stamps `next`, whose machine has just entered `state` at `at_ms`, with its
    /// deadline: when the state's first `after` fires, if it has one.
    pub(crate) fn entered(&self, next: &mut Snapshot, state: &str, at_ms: u64) {
        next.due_at_ms = self.spec().first_delayed(state).map(|d| at_ms.saturating_add(d.after_ms));
        next.timed_at_ms = None;
    }

    /// The instance `before` with every transition due at `now_ms` applied (its version
    /// unchanged: the one a commit of it compares against), and those transitions in
    /// order; `None` when nothing is due.
    pub(crate) fn settle(&self, before: &Snapshot, now_ms: u64) -> Option<(Snapshot, Vec<Fired>)> {
        let mut due = before.due_at_ms.filter(|&at| at <= now_ms)?;
        let mut next = before.clone();
        let mut state = before.state_of(self.id(), self.initial()).to_string();
        let mut fired = Vec::new();
        loop {
            // A deadline the state no longer has (the machine changed since): dropped.
            let Some(delayed) = self.spec().first_delayed(&state) else {
                next.due_at_ms = None;
                break;
            };
            fired.push(Fired {
                from: state.clone(),
                to: delayed.target.clone(),
                after_ms: delayed.after_ms,
                at_ms: due,
            });
            state = delayed.target.clone();
            next.timed_at_ms = Some(due);
            next.due_at_ms = self.spec().first_delayed(&state).map(|d| due.saturating_add(d.after_ms));
            match next.due_at_ms {
                Some(at) if at <= now_ms && fired.len() < MAX_STEPS => due = at,
                _ => break,
            }
        }
        next.states.insert(self.id().to_string(), state);
        Some((next, fired))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quote() -> Machine {
        Machine::from_xstate_json(
            r#"{"id": "quote", "initial": "quoted", "meta": {"toolgate": {"key": "quote_id"}},
                "states": {
                    "quoted": { "on": { "BOOK": "booked" }, "after": { "PT15M": "expired", "PT1M": "reminded" } },
                    "reminded": { "on": { "BOOK": "booked" }, "after": { "PT14M": "expired" } },
                    "booked": { "type": "final" },
                    "expired": { "after": { "P1D": "archived" } },
                    "archived": { "type": "final" }
                }}"#,
        )
        .unwrap()
    }

    #[test]
    fn what_is_due_is_applied_in_order_from_the_deadlines() {
        let machine = quote();
        let mut created = Snapshot::default();
        machine.entered(&mut created, "quoted", 1_000);
        // The first `after` of the state counts: one minute.
        assert_eq!(created.due_at_ms, Some(61_000));
        assert_eq!(machine.settle(&created, 60_999), None);
        let (reminded, fired) = machine.settle(&created, 61_000).unwrap();
        assert_eq!((reminded.state_of("quote", "quoted"), reminded.due_at_ms), ("reminded", Some(61_000 + 840_000)));
        assert_eq!(fired[0].at_ms, 61_000);
        // A server down across several deadlines applies each, at its own time.
        let (archived, fired) = machine.settle(&created, 10_000_000_000).unwrap();
        let path: Vec<(&str, u64)> = fired.iter().map(|f| (f.to.as_str(), f.at_ms)).collect();
        assert_eq!(path, [("reminded", 61_000), ("expired", 901_000), ("archived", 901_000 + 86_400_000)]);
        assert_eq!((archived.state_of("quote", "quoted"), archived.due_at_ms), ("archived", None));
        assert_eq!(archived.timed_at_ms, Some(901_000 + 86_400_000));
        assert_eq!(archived.version, created.version, "a settled snapshot commits over what was read");
    }
}
