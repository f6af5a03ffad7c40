//! The group commit: commits that arrive while another syncs wait for it, then go to disk
//! together, each in a savepoint of its own.

use std::sync::Mutex;
use std::sync::atomic::Ordering;

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use super::driver::WorkBound;
use super::queue::{Queue, Queued, Statement};
use super::store::{SqliteStore, lock};
use super::sweep::SWEEP_EVERY;
use crate::store::counts::{self, Counted};
use crate::store::{HistoryEntry, HistoryRetention, RecordWrite, Snapshot, StoreError, StoreKey, now_ms, unavailable};

impl SqliteStore {
    /// Compare-and-set, and with `entry` the history row, durably: queued for the next
    /// group commit, answered once the group's sync returned.
    pub(super) async fn write(
        &self,
        key: &StoreKey,
        expected: u64,
        next: &Snapshot,
        entry: Option<(HistoryEntry, HistoryRetention)>,
    ) -> Result<u64, StoreError> {
        let write =
            RecordWrite { key: key.clone(), expected, next: next.clone(), fence: None, entry, if_absent: false };
        let versions = self.commit_unit(Vec::new(), vec![write]).await?;
        Ok(versions.first().copied().unwrap_or_default())
    }

    /// Runs `statements`, then writes `writes`, as one unit of the next group commit (all
    /// of it or none); answered once the group's sync returned.
    pub(super) async fn commit_unit(
        &self,
        statements: Vec<Statement>,
        writes: Vec<RecordWrite>,
    ) -> Result<Vec<u64>, StoreError> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        let queued = Queued { statements, writes, reply };
        // The first commit to find no leader leads: it commits group after group until the
        // queue is empty. The others only wait for their answer.
        let leads = {
            let mut queue = lock(&self.inner.queue);
            queue.pending.push(queued);
            !std::mem::replace(&mut queue.leading, true)
        };
        if leads {
            // Syncs wait for the disk: off the async workers.
            let store = self.clone();
            tokio::task::spawn_blocking(move || store.lead()).await.map_err(unavailable)?;
        }
        answer.await.unwrap_or_else(|_| Err(unavailable("the commit was dropped")))
    }

    /// Commits the queue, group after group, until it is empty; then no one leads. (The
    /// emptiness and the end of the lead are one step under the queue's lock, so a commit
    /// queued meanwhile finds a leader or becomes one.)
    pub(super) fn lead(&self) {
        /// Should a group panic, the lead ends, and what is queued is dropped (its callers
        /// hear so) rather than left waiting for a leader.
        struct Abdicate<'a>(&'a Mutex<Queue>);
        impl Drop for Abdicate<'_> {
            fn drop(&mut self) {
                if std::thread::panicking() {
                    let mut queue = lock(self.0);
                    queue.pending.clear();
                    queue.leading = false;
                }
            }
        }
        let _abdicate = Abdicate(&self.inner.queue);
        loop {
            let group = {
                let mut queue = lock(&self.inner.queue);
                if queue.pending.is_empty() {
                    queue.leading = false;
                    return;
                }
                std::mem::take(&mut queue.pending)
            };
            self.commit_group(group);
        }
    }

    /// Commits `group` in one transaction and one sync, each commit in its own savepoint,
    /// and answers each commit once the sync returned.
    pub(super) fn commit_group(&self, group: Vec<Queued>) {
        let mut connection = self.connection();
        let mut outcomes = Vec::with_capacity(group.len());
        let done = (|| {
            let mut transaction = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
            if let [alone] = group.as_slice() {
                // A group of one needs no savepoint: what fails undoes the transaction.
                let outcome = unit_in(&transaction, alone, &self.inner.bound);
                let failed = outcome.is_err();
                outcomes.push(outcome);
                if failed {
                    return transaction.rollback();
                }
            } else {
                for queued in &group {
                    let mut savepoint = transaction.savepoint()?;
                    let outcome = unit_in(&savepoint, queued, &self.inner.bound);
                    if outcome.is_ok() {
                        savepoint.commit()?;
                    } else {
                        savepoint.rollback()?;
                    }
                    outcomes.push(outcome);
                }
            }
            // Durable (WAL, synchronous = FULL) when this returns: then, and only then, is
            // any commit of the group answered.
            transaction.commit()
        })();
        let sweep_due =
            outcomes.iter().flatten().flatten().flatten().any(|stored| stored.version.is_multiple_of(SWEEP_EVERY));
        match done {
            Err(error) => {
                // Nothing of the group is on disk.
                for queued in group {
                    let _ = queued.reply.send(Err(unavailable(&error)));
                }
                return;
            }
            Ok(()) => {
                self.inner.groups.fetch_add(1, Ordering::Relaxed);
                self.inner.grouped.fetch_add(group.len() as u64, Ordering::Relaxed);
                for (queued, outcome) in group.into_iter().zip(outcomes) {
                    let answer = outcome.map(|stored| {
                        let written = queued.writes.iter().zip(stored);
                        written
                            .map(|(write, stored)| match stored {
                                Some(stored) => {
                                    let version = stored.version;
                                    self.remember(&write.key, Some(stored));
                                    version
                                }
                                None => 0,
                            })
                            .collect()
                    });
                    let _ = queued.reply.send(answer);
                }
            }
        }
        drop(connection);
        if sweep_due && let Err(error) = self.sweep() {
            tracing::warn!(%error, "cannot sweep expired records");
        }
    }
}

/// One queued unit inside the group's transaction: the statements, then each write — the
/// record as stored (`None`: an `if_absent` write that found one), or why not (a
/// conflict, a statement that failed, or what SQLite said).
pub(super) fn unit_in(
    connection: &Connection,
    queued: &Queued,
    bound: &WorkBound,
) -> Result<Vec<Option<Snapshot>>, StoreError> {
    for statement in &queued.statements {
        let done = match statement {
            Statement::One(sql, params) => super::values::execute(connection, sql, params).map(drop),
            Statement::Batch(sql) => connection.execute_batch(sql),
            Statement::Work(work) => {
                if let Some(work) = lock(work).take() {
                    bound.run(connection, work)?;
                }
                Ok(())
            }
        };
        done.map_err(|error| StoreError::Statement(error.to_string()))?;
    }
    queued.writes.iter().map(|write| compare_and_set_in(connection, write)).collect()
}

/// One compare-and-set (and its history row) inside the group's transaction: the record as
/// stored (`None`: an `if_absent` write that found one), or why not (a conflict, or what
/// SQLite said).
fn compare_and_set_in(connection: &Connection, write: &RecordWrite) -> Result<Option<Snapshot>, StoreError> {
    let RecordWrite { key, expected, next, entry, if_absent, .. } = write;
    let now = now_ms() as i64;
    // Cached statements: a group runs them once per commit.
    let found: u64 = connection
        .prepare_cached("SELECT version FROM records WHERE key = ?1 AND (expires_at_ms IS NULL OR expires_at_ms > ?2)")
        .and_then(|mut select| select.query_row(params![key.as_str(), now], |row| row.get::<_, i64>(0)).optional())
        .map_err(unavailable)?
        .map_or(0, |v| v as u64);
    if *if_absent && found != 0 {
        return Ok(None);
    }
    if found != *expected && !*if_absent {
        return Err(StoreError::Conflict { expected: *expected, found });
    }
    let version: i64 = connection
        .prepare_cached("UPDATE revision SET last = last + 1 WHERE id = 1 RETURNING last")
        .and_then(|mut update| update.query_row([], |row| row.get(0)))
        .map_err(unavailable)?;
    let stored = Snapshot { version: version as u64, ..next.clone() };
    let text = serde_json::to_string(&stored).map_err(unavailable)?;
    connection
        .prepare_cached(
            "INSERT INTO records (key, version, expires_at_ms, snapshot, due_at_ms, counted)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)
             ON CONFLICT (key) DO UPDATE SET version = excluded.version, expires_at_ms = excluded.expires_at_ms,
             snapshot = excluded.snapshot, due_at_ms = excluded.due_at_ms, counted = excluded.counted",
        )
        .and_then(|mut insert| {
            insert.execute(params![
                key.as_str(),
                version,
                stored.expires_at_ms.map(|ms| ms as i64),
                text,
                stored.wake_at_ms().map(|ms| ms.min(i64::MAX as u64) as i64),
                Counted::json(counts::counted(key, &stored).as_ref())
            ])
        })
        .map_err(unavailable)?;
    if found == 0 {
        // What an expired record left behind went with it.
        connection.execute("DELETE FROM history WHERE key = ?1", params![key.as_str()]).map_err(unavailable)?;
    }
    if let Some((entry, retention)) = entry {
        append_history(connection, key, version, entry, *retention).map_err(unavailable)?;
    }
    Ok(Some(stored))
}

/// so rows sort in commit order), then deletes what `retention` does not keep.
fn append_history(
    transaction: &Connection,
    key: &StoreKey,
    version: i64,
    entry: &HistoryEntry,
    retention: HistoryRetention,
) -> rusqlite::Result<()> {
    let text = serde_json::to_string(entry).map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))?;
    let at_ms = i64::try_from(entry.at_ms()).unwrap_or(i64::MAX);
    transaction.execute(
        "INSERT INTO history (key, version, at_ms, entry) VALUES (?1, ?2, ?3, ?4)",
        params![key.as_str(), version, at_ms, text],
    )?;
    if let Some(most) = retention.entries() {
        // Every row but the newest `most`.
        transaction.execute(
            "DELETE FROM history WHERE key = ?1 AND version NOT IN
                 (SELECT version FROM history WHERE key = ?1 ORDER BY version DESC LIMIT ?2)",
            params![key.as_str(), i64::from(most)],
        )?;
    }
    if retention.age().is_some() {
        let oldest = i64::try_from(retention.oldest_kept_ms(entry.at_ms())).unwrap_or(i64::MAX);
        transaction.execute("DELETE FROM history WHERE key = ?1 AND at_ms < ?2", params![key.as_str(), oldest])?;
    }
    Ok(())
}
