//! [`CommitLog`]: what a call's commit says in the log, once it is made.

/// What a call's commit says in the log — the transition it committed, the domain it
/// switched to — said once the commit is made (for a call whose handler opened a
/// transaction, once that transaction committed).
#[derive(Debug, Default)]
pub(crate) struct CommitLog {
    pub(crate) transition: Option<TransitionLog>,
    pub(crate) switch: Option<SwitchLog>,
}

/// A committed transition, as the log says it.
#[derive(Debug)]
pub(crate) struct TransitionLog {
    pub(crate) tool: &'static str,
    /// The instance's or flow's store key.
    pub(crate) on: Option<String>,
    pub(crate) machine: String,
    pub(crate) from: Option<String>,
    pub(crate) to: String,
    pub(crate) call_id: Option<String>,
}

/// A domain switch, as the log says it.
#[derive(Debug)]
pub(crate) struct SwitchLog {
    pub(crate) flow: Option<String>,
    pub(crate) from: Option<String>,
    pub(crate) to: String,
    pub(crate) reason: String,
}

impl CommitLog {
    /// Says it.
    pub(crate) fn emit(&self) {
        if let Some(TransitionLog { tool, on, machine, from, to, call_id }) = &self.transition {
            tracing::info!(tool, on, machine, from, to, call_id, "transition committed");
        }
        if let Some(SwitchLog { flow, from, to, reason }) = &self.switch {
            tracing::info!(flow, from = ?from, to = %to, reason = %reason, "domain switched");
        }
    }
}
