//! [`InFlight`]: what the engine counts as running, for a shutdown to wait for
//! (`stopping.rs`).

use std::sync::atomic::Ordering;

/// What the engine counts in flight, to wait for at shutdown.
#[derive(Debug)]
pub(crate) struct InFlight {
    /// The tool calls being judged, run or committed (tasks' calls among them).
    pub(crate) calls: tokio_util::task::TaskTracker,
    /// The tasks' runs, from admission to their record's end.
    pub(crate) tasks: tokio_util::task::TaskTracker,
    /// Cancelled as the server stops: the sweeper claims nothing more.
    pub(crate) stopping: tokio_util::sync::CancellationToken,
    /// Set when the tasks still running at the deadline are given up: their end is
    /// recorded as the server's failure, not the client's cancellation.
    pub(crate) giving_up: std::sync::atomic::AtomicBool,
    /// The gate background work passes: it yields to the `calls` in flight.
    pub(crate) calls_first: crate::calls_first::CallsFirst,
}

impl Default for InFlight {
    fn default() -> Self {
        let calls = tokio_util::task::TaskTracker::new();
        Self {
            calls_first: crate::calls_first::CallsFirst::new(calls.clone()),
            calls,
            tasks: Default::default(),
            stopping: Default::default(),
            giving_up: Default::default(),
        }
    }
}

impl InFlight {
    /// Whether tasks cancelled now are given up by the server.
    pub(crate) fn gave_up(&self) -> bool {
        self.giving_up.load(Ordering::Acquire)
    }
}
