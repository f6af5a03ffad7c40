//! Instances counted by state, kept by each store as its records commit, so that the
//! console reads how many invoices are `draft` without reading the invoices
//! ([`Counts::instances`](super::Counts::instances)).
//!
//! Each instance record counts under a few names, all about its machine in its scope: its
//! state, and whether a timer is pending on it, and whether a task holds it. A store keeps
//! the names a record counts under beside the record, and when a commit or a removal
//! changes them, changes the counters in the same atomic step (SQLite's and Postgres's
//! triggers, Redis's commit script, the memory store's lock): a count is never a scan.
//!
//! The scope is the instance's tenant, from its key: a tenant-scoped machine's, or a
//! principal-owned one's (its owner's tenant); none (`""`) for a machine whose instances
//! are everyone's.

use std::collections::BTreeMap;

use super::{Snapshot, StoreKey};

/// How many instances of one machine, in one scope, are in each state, have a timer
/// pending, and are held by a running task.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct InstanceCounts {
    /// State → instances in it (states without any are absent). An instance whose record
    /// names no state for its machine is in the machine's initial state: counted under `""`.
    pub states: BTreeMap<String, u64>,
    /// Instances with a timer pending (a state's `after`).
    pub timers: u64,
    /// Instances a running MCP task holds.
    pub tasks: u64,
}

/// The names `snapshot`, stored under `key`, counts under: `None` for a record that is not
/// a keyed machine's instance.
pub(crate) fn counted(key: &StoreKey, snapshot: &Snapshot) -> Option<Counted> {
    let (scope, machine, _id) = key.instance_parts()?;
    let prefix = prefix(scope.unwrap_or_default(), machine);
    let state = snapshot.states.get(machine).map_or("", String::as_str);
    let mut names = vec![format!("{prefix}{STATE}{state}")];
    if snapshot.due_at_ms.is_some() {
        names.push(format!("{prefix}{TIMER}"));
    }
    if snapshot.task.is_some() {
        names.push(format!("{prefix}{TASK}"));
    }
    Some(Counted { prefix, names })
}

/// The names one record counts under, all beginning with `prefix` (its machine in its scope).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Counted {
    pub(crate) prefix: String,
    pub(crate) names: Vec<String>,
}

impl Counted {
    /// The names as a JSON array: what SQLite and Postgres keep beside the record.
    pub(crate) fn json(counted: Option<&Counted>) -> Option<String> {
        counted.map(|counted| serde_json::Value::from(counted.names.clone()).to_string())
    }

    /// What each name says after the prefix, one per line (a state's name is an identifier:
    /// no line breaks), as Redis keeps it beside the record.
    #[cfg_attr(not(feature = "redis"), allow(dead_code))]
    pub(crate) fn suffixes(&self) -> String {
        let suffixes: Vec<&str> = self.names.iter().map(|name| &name[self.prefix.len()..]).collect();
        suffixes.join("\n")
    }
}

const STATE: &str = "state:";
const TIMER: &str = "timer";
const TASK: &str = "task";

/// What every name about `machine` in `scope` begins with: lengths first, so that no
/// scope and machine spell another pair's prefix.
pub(crate) fn prefix(scope: &str, machine: &str) -> String {
    format!("{}:{scope}:{}:{machine}:", scope.len(), machine.len())
}

/// The names about `machine` in `scope` lie in `[low, high)` in byte order: the prefix, and
/// the prefix with its final `:` made `;`.
pub(crate) fn range(scope: &str, machine: &str) -> (String, String) {
    let low = prefix(scope, machine);
    let high = format!("{};", &low[..low.len() - 1]);
    (low, high)
}

/// The counts from counters read back (full names, or what follows the prefix), summed
/// by name; counters at zero or below are left out.
pub(crate) fn tally(prefix: &str, counters: impl IntoIterator<Item = (String, i64)>) -> InstanceCounts {
    let mut counts = InstanceCounts::default();
    for (name, n) in counters {
        let Ok(n) = u64::try_from(n) else { continue };
        if n == 0 {
            continue;
        }
        let what = name.strip_prefix(prefix).unwrap_or(&name);
        if let Some(state) = what.strip_prefix(STATE) {
            *counts.states.entry(state.to_string()).or_default() += n;
        } else if what == TIMER {
            counts.timers += n;
        } else if what == TASK {
            counts.tasks += n;
        }
    }
    counts
}

/// How many live records of each kind a store holds ([`Counts::live`](super::Counts::live)).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LiveRecords {
    /// Flows: stdio connections and sessions, and the flows state handles name.
    pub flows: u64,
    /// Keyed machines' instances (an invoice, a payment).
    pub instances: u64,
}

impl LiveRecords {
    /// Counts `key` under its kind (a challenge, a lock or an idempotency record counts
    /// under neither).
    pub fn count(&mut self, key: &str) {
        if StoreKey::FLOW_PREFIXES.iter().any(|p| key.starts_with(p)) {
            self.flows += 1;
        } else if StoreKey::INSTANCE_PREFIXES.iter().any(|p| key.starts_with(p)) {
            self.instances += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_counts_under_its_state_its_timer_and_its_task() {
        let key = StoreKey::tenant_instance("acme", "payment", "PAY-1");
        let snapshot = Snapshot {
            due_at_ms: Some(1),
            task: Some("t".into()),
            ..Snapshot::default().with_state("payment", "held")
        };
        let counted = counted(&key, &snapshot).unwrap();
        assert_eq!(counted.names, ["4:acme:7:payment:state:held", "4:acme:7:payment:timer", "4:acme:7:payment:task"]);
        assert_eq!(counted.suffixes(), "state:held\ntimer\ntask");
        let (low, high) = range("acme", "payment");
        assert!(counted.names.iter().all(|name| low <= *name && *name < high));
        assert!(!(low.as_str()..high.as_str()).contains(&"4:acme:8:payments:state:held"));
        let counts = tally(&low, counted.names.iter().map(|name| (name.clone(), 2)));
        assert_eq!((counts.states["held"], counts.timers, counts.tasks), (2, 2, 2));
    }

    #[test]
    fn an_owned_instance_counts_in_its_owners_tenant_and_other_records_not_at_all() {
        let key = StoreKey::tenant_instance("acme", "bus", "Q-1");
        let snapshot = Snapshot { owner: Some("digest".into()), ..Snapshot::default() };
        assert_eq!(counted(&key, &snapshot).unwrap().names, ["4:acme:3:bus:state:"]);
        // What an older toolgate wrote counts under nothing until migrated.
        assert!(counted(&StoreKey::legacy_owned_instance("digest", "bus", "Q-1"), &snapshot).is_none());
        assert_eq!(counted(&StoreKey::instance("invoice", "INV-1"), &snapshot).unwrap().prefix, "0::7:invoice:");
        assert!(counted(&StoreKey::connection("c"), &snapshot).is_none());
        assert!(counted(&StoreKey::challenge("c"), &snapshot).is_none());
    }
}
