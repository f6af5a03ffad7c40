//! A handler's own rusqlite code on the file's one writer, at its call's commit
//! ([`Transaction::sqlite_at_commit`](crate::Transaction::sqlite_at_commit)): bounded in
//! time, and kept from ending the group's transaction.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rusqlite::Connection;
use rusqlite::hooks::{AuthAction, AuthContext, Authorization};

use crate::store::{SqliteWork, StoreError, now_ms};

/// How long a handler's rusqlite work may run on the writer at its commit. Every call's
/// commit waits on the one writer while it runs, so it is short: SQL still running at this
/// bound is interrupted, and work that ran past it (in Rust, between statements) fails its
/// call all the same; either way nothing of that call is kept, and the other calls of its
/// group commit.
pub const SQLITE_WORK_LIMIT: Duration = Duration::from_millis(250);

/// How many SQLite virtual-machine instructions run between two looks at the deadline: a
/// look is one atomic load while no work runs.
const INSTRUCTIONS_PER_LOOK: std::ffi::c_int = 1000;

/// The deadline of the handler work running on the writer (milliseconds since the epoch;
/// 0 while none runs), which the writer's progress handler and authorizer read.
#[derive(Debug, Default)]
pub(super) struct WorkBound(Arc<AtomicU64>);

impl WorkBound {
    /// Installs the bound on the writer `connection`: SQL of a handler's work is
    /// interrupted past its deadline, and may not begin, commit, roll back or name a
    /// savepoint (the group's transaction and the call's savepoint are toolgate's).
    pub(super) fn install(connection: &mut Connection) -> rusqlite::Result<Self> {
        let deadline = Arc::new(AtomicU64::new(0));
        let interrupt = Arc::clone(&deadline);
        connection.progress_handler(
            INSTRUCTIONS_PER_LOOK,
            Some(move || {
                let at = interrupt.load(Ordering::Relaxed);
                at != 0 && now_ms() > at
            }),
        )?;
        let guarded = Arc::clone(&deadline);
        connection.authorizer(Some(move |context: AuthContext<'_>| {
            let ends_ours = matches!(context.action, AuthAction::Transaction { .. } | AuthAction::Savepoint { .. });
            if ends_ours && guarded.load(Ordering::Relaxed) != 0 { Authorization::Deny } else { Authorization::Allow }
        }))?;
        Ok(Self(deadline))
    }

    /// Runs `work` on `connection` within [`SQLITE_WORK_LIMIT`]: what it returned, or why
    /// it failed (its error, its panic, or the bound).
    pub(super) fn run(&self, connection: &Connection, work: SqliteWork) -> Result<(), StoreError> {
        let started = Instant::now();
        self.0.store(now_ms() + SQLITE_WORK_LIMIT.as_millis() as u64, Ordering::Relaxed);
        // A panic in the handler's work fails its call, not the writer's group.
        let done = std::panic::catch_unwind(AssertUnwindSafe(|| work(connection)));
        self.0.store(0, Ordering::Relaxed);
        let took = started.elapsed();
        let failed = |why: String| Err(StoreError::Statement(why));
        match done {
            Err(_) => failed("a handler's rusqlite work panicked at its commit".into()),
            Ok(_) if took > SQLITE_WORK_LIMIT => failed(format!(
                "a handler's rusqlite work ran {} ms at its commit, past the bound of {} ms",
                took.as_millis(),
                SQLITE_WORK_LIMIT.as_millis()
            )),
            Ok(Err(error)) => failed(format!("a handler's rusqlite work failed at its commit: {error}")),
            Ok(Ok(())) if connection.is_autocommit() => {
                // Unreachable through the authorizer; kept so that no commit is answered
                // as done after its transaction was ended under it.
                failed("a handler's rusqlite work ended the commit's transaction".into())
            }
            Ok(Ok(())) => Ok(()),
        }
    }
}
