//! Flows: one running instance of the machines plus the active domain (design §4).
//!
//! A flow is stored as a [`Snapshot`] under a [`FlowKey`]. This issue keys flows by the
//! `Mcp-Session-Id` of a stateful HTTP session or by the connection itself (stdio); signed
//! state handles come later and only add a key kind.

use std::collections::BTreeMap;
use std::fmt;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

/// Where a flow lives in the store.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FlowKey(String);

impl FlowKey {
    /// The flow of a stateful Streamable HTTP session.
    pub fn session(session_id: &str) -> Self {
        Self(format!("session:{session_id}"))
    }

    /// The flow of one connection (stdio, or any transport without a session id).
    pub fn connection(connection_id: u64) -> Self {
        Self(format!("connection:{connection_id}"))
    }

    /// The key as stored.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for FlowKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A flow's committed state: the state of each machine, the active domain, and the
/// version compare-and-set uses.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Snapshot {
    /// Machine id → current state. A machine absent here is in its initial state.
    pub states: BTreeMap<String, String>,
    /// The active intent domain, if one was selected.
    pub active_domain: Option<String>,
    /// Incremented by every commit; `0` means "never committed".
    pub version: u64,
    /// Milliseconds since the Unix epoch of the last commit.
    pub updated_at_ms: u64,
}

impl Snapshot {
    /// The state of `machine`, or `initial` when the flow never moved it.
    pub fn state_of<'a>(&'a self, machine: &str, initial: &'a str) -> &'a str {
        self.states.get(machine).map(String::as_str).unwrap_or(initial)
    }

    /// The snapshot that follows this one (next version, now), to be changed and committed.
    pub fn next(&self) -> Self {
        Self { version: self.version + 1, updated_at_ms: now_ms(), ..self.clone() }
    }

    /// The snapshot that follows this one with `machine` in `state`.
    pub fn with_state(&self, machine: &str, state: &str) -> Self {
        let mut next = self.next();
        next.states.insert(machine.to_string(), state.to_string());
        next
    }
}

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}
