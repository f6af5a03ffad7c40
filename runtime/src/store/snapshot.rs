//! [`Snapshot`]: one committed record — a flow's or an instance's.

use std::collections::BTreeMap;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

/// A committed record: the state of each machine it holds, the active domain (flows
/// only), and the version compare-and-set uses.
///
/// A flow holds its conversation machines and its active domain; a keyed machine's
/// instance holds that one machine's state.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Snapshot {
    /// Machine id → current state. A machine absent here is in its initial state.
    pub states: BTreeMap<String, String>,
    /// The active intent domain, if one was selected.
    pub active_domain: Option<String>,
    /// Assigned by the store on every commit; `0` means "never committed" (or removed).
    pub version: u64,
    /// Milliseconds since the Unix epoch of the last commit.
    pub updated_at_ms: u64,
    /// Milliseconds since the Unix epoch after which the record is gone (flows named by a
    /// state handle expire; `None` never does).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at_ms: Option<u64>,
    /// A keyed instance's data (`machine! { context: Payment, … }`), as JSON, committed
    /// with its state in the same compare-and-set; `None` until a call sets it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<serde_json::Value>,
    /// When time next moves the instance (the first `after` of its state), in milliseconds
    /// since the Unix epoch; `None` when its state has no `after`. Set when the instance
    /// enters a state, so the deadline is part of the instance: every read applies what is
    /// due, on any replica and after any restart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub due_at_ms: Option<u64>,
    /// When time moved the instance into its state (an `after` transition), in
    /// milliseconds since the Unix epoch; `None` when a call moved it there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timed_at_ms: Option<u64>,
    /// The MCP task holding the instance (its id), while one runs a call that changes it:
    /// set when the task starts, under the instance's lease, and cleared by the commit
    /// that ends it (or by its end without one). Other calls that would change the
    /// instance meanwhile are refused with `TASK_RUNNING`; reads still answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    /// What a record that is not a flow or an instance holds (a confirmation challenge, an
    /// idempotency record), as JSON; `None` for flows and instances.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub record: Option<serde_json::Value>,
}

impl Snapshot {
    /// The state of `machine`, or `initial` when the record never moved it.
    pub fn state_of<'a>(&'a self, machine: &str, initial: &'a str) -> &'a str {
        self.states.get(machine).map(String::as_str).unwrap_or(initial)
    }

    /// The snapshot to change and commit after this one (stamped now; the store assigns
    /// its version on commit).
    pub fn next(&self) -> Self {
        Self { updated_at_ms: now_ms(), ..self.clone() }
    }

    /// The snapshot that follows this one with `machine` in `state`.
    pub fn with_state(&self, machine: &str, state: &str) -> Self {
        let mut next = self.next();
        next.states.insert(machine.to_string(), state.to_string());
        next
    }

    /// Whether the record has expired at `now_ms`.
    pub fn is_expired(&self, now_ms: u64) -> bool {
        self.expires_at_ms.is_some_and(|at| at <= now_ms)
    }
}

/// Milliseconds since the Unix epoch.
pub(crate) fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}
