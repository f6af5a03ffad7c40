//! [`SqliteStore`]: flows, instances, challenges and idempotency records in one file, with
//! no server to install — what a server started from the command line keeps its state in
//! unless told otherwise (`ARCHITECTURE.md`, "Stores", says why SQLite).
//!
//! - **Everything in one file**: records (instances, flows, challenges, idempotency
//!   records) and the calls of declared rate limits, so neither a paid invoice nor a
//!   limit's spent calls are forgotten by a restart.
//! - **Durable before the reply.** Commits are SQLite transactions in WAL mode with
//!   `synchronous = FULL`: a commit is on disk when `compare_and_set` returns, so when the
//!   reply says a transition happened, a crash cannot take it back; a crash mid-commit
//!   leaves the old record or the new one, never a mix.
//! - **Group commit.** Commits that arrive while another is syncing wait for it, then go
//!   to disk together: one transaction, one sync, each commit in a savepoint of its own (a
//!   conflict undoes only its own). Each caller still hears of its commit only once the
//!   sync that holds it returned. So transitions on many instances at once share the
//!   disk's syncs instead of queueing for one each (`BENCHMARKS.md`, "Group commit").
//! - **One process per file.** A second process opening the same file — by its name, a
//!   symbolic link or a hard link — is refused with a clear message (an exclusive `flock`
//!   on the database file itself, which SQLite's own POSIX locks do not touch): leases
//!   are this process's.
//! - **Versions never go back**, across removals and restarts: one counter, stored with the
//!   records, assigns them.
//! - **Reads from memory.** The file is this process's alone, so what it last read or
//!   wrote of a key is what the file holds: loads are answered from a cache kept in step
//!   with every commit and removal (a call that only reads costs no SQL), bounded to
//!   [`CACHED_KEYS`] keys (present or absent), emptied when full.
//! - **Histories in the same transaction.** An instance's transition and its
//!   [`HistoryEntry`] (a `history` table row, numbered by the commit's version) are written
//!   by one SQLite transaction, trimmed by the retention in it too.
//! - **Bounded.** Reads store nothing (a million `invoice_view`s of made-up ids add no
//!   record); expired records — flows named by handles, confirmation challenges,
//!   idempotency records — and calls that left their rate-limit window are deleted when
//!   the store opens and then every [`SWEEP_EVERY`] commits. Instances in a final state are kept: forgetting one would
//!   make a paid invoice payable again.

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use async_trait::async_trait;
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use super::counts::{self, Counted};
use super::leases::LocalLeases;
use super::{
    FlowLease, FlowStore, HistoryEntry, HistoryRetention, InstanceCounts, LiveRecords, RecordWrite, Snapshot, SqlRow,
    SqlValue, StoreError, StoreKey, StoreTransaction, now_ms,
};

/// Expired records are swept once every this many commits (and when the store opens).
pub const SWEEP_EVERY: u64 = 1024;

/// The most keys whose record (or absence) the read cache holds.
pub const CACHED_KEYS: usize = 16_384;

/// A store in one SQLite file. Cheap to clone; clones share the file.
#[derive(Clone)]
pub struct SqliteStore {
    inner: Arc<Inner>,
}

struct Inner {
    path: PathBuf,
    connection: Mutex<Connection>,
    /// Commits waiting for the next group, which the commit leading takes whole (see
    /// [`SqliteStore::lead`]).
    queue: Mutex<Queue>,
    /// Groups committed, and the commits they held.
    groups: AtomicU64,
    grouped: AtomicU64,
    /// What the file holds for recently read or written keys (`None`: no record). A write
    /// changes it while the connection is held, in the order the file changes.
    cache: Mutex<HashMap<StoreKey, Option<Snapshot>>>,
    /// A second connection, only for reads that miss the cache: in WAL mode it reads the
    /// last commit without waiting for the one syncing (which holds `connection`).
    reader: Mutex<Connection>,
    /// How many times a write changed the cache: a read that missed it keeps what it read
    /// only if no write changed the cache meanwhile (else it could put back what the
    /// write replaced).
    writes: AtomicU64,
    leases: LocalLeases,
    /// The database file, locked for the store's life: no other process opens it
    /// meanwhile, by whatever name.
    _lock: File,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore").field("path", &self.inner.path).finish_non_exhaustive()
    }
}

/// Why a store file could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// Another process has the file open.
    #[error(
        "{0} is in use by another process (a second server on the same state file would break its leases); stop it, or give this one its own file with `--store sqlite:PATH`"
    )]
    InUse(PathBuf),
    /// The file or its lock could not be created or read.
    #[error("cannot open the state file {path}: {problem}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        problem: String,
    },
}

fn unavailable(error: impl std::fmt::Display) -> StoreError {
    StoreError::Unavailable(error.to_string())
}

impl SqliteStore {
    /// Opens (creating if needed) the store in the file at `path`, refusing a file another
    /// process holds.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, OpenError> {
        let path = path.as_ref().to_path_buf();
        let io = |problem: &dyn std::fmt::Display| OpenError::Io { path: path.clone(), problem: problem.to_string() };
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|e| io(&e))?;
        }
        // The lock is on the database file itself (its inode), not on a name beside it: a
        // symbolic or hard link to a file another server holds finds it held.
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(&path)
            .map_err(|e| io(&e))?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => return Err(OpenError::InUse(path)),
            Err(std::fs::TryLockError::Error(e)) => return Err(io(&e)),
        }
        let connection = Connection::open(&path).map_err(|e| io(&e))?;
        connection
            .execute_batch(
                "PRAGMA journal_mode = WAL;
                 PRAGMA synchronous = FULL;
                 PRAGMA foreign_keys = OFF;
                 CREATE TABLE IF NOT EXISTS records (
                     key TEXT PRIMARY KEY NOT NULL,
                     version INTEGER NOT NULL,
                     expires_at_ms INTEGER,
                     snapshot TEXT NOT NULL
                 ) WITHOUT ROWID;
                 CREATE INDEX IF NOT EXISTS records_expiry ON records (expires_at_ms) WHERE expires_at_ms IS NOT NULL;
                 CREATE TABLE IF NOT EXISTS revision (id INTEGER PRIMARY KEY CHECK (id = 1), last INTEGER NOT NULL);
                 CREATE TABLE IF NOT EXISTS windows (
                     window TEXT NOT NULL,
                     ticket INTEGER NOT NULL,
                     until_ms INTEGER NOT NULL,
                     PRIMARY KEY (window, ticket)
                 ) WITHOUT ROWID;
                 CREATE INDEX IF NOT EXISTS windows_expiry ON windows (until_ms);
                 CREATE TABLE IF NOT EXISTS history (
                     key TEXT NOT NULL,
                     version INTEGER NOT NULL,
                     at_ms INTEGER NOT NULL,
                     entry TEXT NOT NULL,
                     PRIMARY KEY (key, version)
                 ) WITHOUT ROWID;
                 INSERT OR IGNORE INTO revision (id, last) VALUES (1, 0);",
            )
            .map_err(|e| io(&e))?;
        add_due_column(&connection).map_err(|e| io(&e))?;
        add_counters(&connection).map_err(|e| io(&e))?;
        let flags = rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let reader = Connection::open_with_flags(&path, flags).map_err(|e| io(&e))?;
        let inner = Inner {
            path: path.clone(),
            connection: Mutex::new(connection),
            reader: Mutex::new(reader),
            writes: AtomicU64::new(0),
            queue: Mutex::default(),
            groups: AtomicU64::new(0),
            grouped: AtomicU64::new(0),
            cache: Mutex::default(),
            leases: LocalLeases::default(),
            _lock: lock,
        };
        let store = Self { inner: Arc::new(inner) };
        store.sweep().map_err(|e| io(&e))?;
        Ok(store)
    }

    /// How many group commits the store made (each one transaction and one sync), and how
    /// many commits they held: their ratio is how many commits shared each sync.
    pub fn commit_groups(&self) -> (u64, u64) {
        (self.inner.groups.load(Ordering::Relaxed), self.inner.grouped.load(Ordering::Relaxed))
    }

    /// The file the store keeps its records in.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// How many live records the file holds, for monitoring and tests.
    pub fn record_count(&self) -> Result<u64, StoreError> {
        let connection = self.connection();
        let count: i64 = connection
            .query_row(
                "SELECT COUNT(*) FROM records WHERE expires_at_ms IS NULL OR expires_at_ms > ?1",
                params![now_ms() as i64],
                |row| row.get(0),
            )
            .map_err(unavailable)?;
        Ok(count as u64)
    }

    fn connection(&self) -> MutexGuard<'_, Connection> {
        // A panic while holding it rolled its transaction back; the connection is usable.
        lock(&self.inner.connection)
    }

    /// Deletes expired records (with their histories) and the calls that left their
    /// rate-limit windows.
    fn sweep(&self) -> rusqlite::Result<usize> {
        let connection = self.connection();
        let now = now_ms() as i64;
        connection.execute(
            "DELETE FROM history WHERE key IN (SELECT key FROM records WHERE expires_at_ms IS NOT NULL AND expires_at_ms <= ?1)",
            params![now],
        )?;
        let records = connection
            .execute("DELETE FROM records WHERE expires_at_ms IS NOT NULL AND expires_at_ms <= ?1", params![now])?;
        let calls = connection.execute("DELETE FROM windows WHERE until_ms <= ?1", params![now])?;
        Ok(records + calls)
    }

    /// Admits one call under `window` (durably, like a commit: a restart does not give a
    /// limit's calls back), or says in how many milliseconds the oldest leaves it.
    fn spend_window_blocking(&self, window: &str, calls: u32, per_ms: u64) -> Result<Result<String, u64>, StoreError> {
        let now = now_ms() as i64;
        let mut connection = self.connection();
        let transaction = connection.transaction_with_behavior(TransactionBehavior::Immediate).map_err(unavailable)?;
        transaction
            .execute("DELETE FROM windows WHERE window = ?1 AND until_ms <= ?2", params![window, now])
            .map_err(unavailable)?;
        let (admitted, leaves): (i64, Option<i64>) = transaction
            .query_row("SELECT COUNT(*), MIN(until_ms) FROM windows WHERE window = ?1", params![window], |row| {
                Ok((row.get(0)?, row.get(1)?))
            })
            .map_err(unavailable)?;
        if admitted >= i64::from(calls) {
            return Ok(Err(leaves.map_or(1, |until| (until - now).max(1) as u64)));
        }
        // Tickets come from the store's one counter, so they never repeat.
        let ticket: i64 = transaction
            .query_row("UPDATE revision SET last = last + 1 WHERE id = 1 RETURNING last", [], |row| row.get(0))
            .map_err(unavailable)?;
        let until = now.saturating_add(per_ms.max(1).min(i64::MAX as u64) as i64);
        transaction
            .execute(
                "INSERT INTO windows (window, ticket, until_ms) VALUES (?1, ?2, ?3)",
                params![window, ticket, until],
            )
            .map_err(unavailable)?;
        transaction.commit().map_err(unavailable)?;
        Ok(Ok(ticket.to_string()))
    }

    fn cache(&self) -> MutexGuard<'_, HashMap<StoreKey, Option<Snapshot>>> {
        lock(&self.inner.cache)
    }

    /// Remembers what the file now holds for `key` after a write (call with the
    /// connection held, once the write is committed).
    fn remember(&self, key: &StoreKey, record: Option<Snapshot>) {
        self.inner.writes.fetch_add(1, Ordering::SeqCst);
        Self::keep(&mut self.cache(), key, record);
    }

    fn keep(cache: &mut HashMap<StoreKey, Option<Snapshot>>, key: &StoreKey, record: Option<Snapshot>) {
        if cache.len() >= CACHED_KEYS && !cache.contains_key(key) {
            cache.clear();
        }
        cache.insert(key.clone(), record);
    }

    /// A key's record: from the cache, or read on the reader connection (which a commit
    /// syncing does not hold up).
    fn load_blocking(&self, key: &StoreKey) -> Result<Snapshot, StoreError> {
        let now = now_ms();
        if let Some(cached) = self.cache().get(key) {
            return Ok(cached.as_ref().filter(|s| !s.is_expired(now)).cloned().unwrap_or_default());
        }
        let writes = self.inner.writes.load(Ordering::SeqCst);
        let row: Option<(i64, String)> = lock(&self.inner.reader)
            .prepare_cached(
                "SELECT version, snapshot FROM records WHERE key = ?1 AND (expires_at_ms IS NULL OR expires_at_ms > ?2)",
            )
            .and_then(|mut select| {
                select.query_row(params![key.as_str(), now as i64], |row| Ok((row.get(0)?, row.get(1)?))).optional()
            })
            .map_err(unavailable)?;
        let snapshot = match row {
            None => None,
            Some((version, text)) => {
                let snapshot: Snapshot = serde_json::from_str(&text).map_err(unavailable)?;
                Some(Snapshot { version: version as u64, ..snapshot })
            }
        };
        // Kept only if no write changed the cache since the read began: a write that
        // committed meanwhile is remembered after its commit, so it counted before this
        // check, or it comes after it and replaces what this keeps.
        let mut cache = self.cache();
        if self.inner.writes.load(Ordering::SeqCst) == writes {
            Self::keep(&mut cache, key, snapshot.clone());
        }
        Ok(snapshot.unwrap_or_default())
    }

    /// Compare-and-set, and with `entry` the history row, durably: queued for the next
    /// group commit, answered once the group's sync returned.
    async fn commit(
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
    async fn commit_unit(&self, statements: Vec<Statement>, writes: Vec<RecordWrite>) -> Result<Vec<u64>, StoreError> {
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
    fn lead(&self) {
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
    fn commit_group(&self, group: Vec<Queued>) {
        let mut connection = self.connection();
        let mut outcomes = Vec::with_capacity(group.len());
        let done = (|| {
            let mut transaction = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
            if let [alone] = group.as_slice() {
                // A group of one needs no savepoint: what fails undoes the transaction.
                let outcome = unit_in(&transaction, alone);
                let failed = outcome.is_err();
                outcomes.push(outcome);
                if failed {
                    return transaction.rollback();
                }
            } else {
                for queued in &group {
                    let mut savepoint = transaction.savepoint()?;
                    let outcome = unit_in(&savepoint, queued);
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

/// The commits waiting for the next group, and whether a leader is committing groups.
#[derive(Default)]
struct Queue {
    pending: Vec<Queued>,
    leading: bool,
}

/// A commit waiting for its group: a handler's statements (a call's
/// [`Transaction`](crate::Transaction)), then the records the call writes.
struct Queued {
    statements: Vec<Statement>,
    writes: Vec<RecordWrite>,
    reply: tokio::sync::oneshot::Sender<Result<Vec<u64>, StoreError>>,
}

/// A handler's statement, run when its call commits.
enum Statement {
    /// One statement and its parameters.
    One(String, Vec<SqlValue>),
    /// Statements without parameters, separated by `;` (the tables of yours a server
    /// creates as it starts).
    Batch(String),
}

/// One queued unit inside the group's transaction: the statements, then each write — the
/// record as stored (`None`: an `if_absent` write that found one), or why not (a
/// conflict, a statement that failed, or what SQLite said).
fn unit_in(connection: &Connection, queued: &Queued) -> Result<Vec<Option<Snapshot>>, StoreError> {
    for statement in &queued.statements {
        let done = match statement {
            Statement::One(sql, params) => super::sql::execute_sqlite(connection, sql, params).map(drop),
            Statement::Batch(sql) => connection.execute_batch(sql),
        };
        done.map_err(|error| StoreError::Statement(error.to_string()))?;
    }
    queued.writes.iter().map(|write| compare_and_set_in(connection, write)).collect()
}

/// `mutex`, whether or not a panic poisoned it: what it guards is left consistent (a
/// connection's transaction rolls back, the queue and cache are replaced whole).
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
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

#[async_trait]
impl FlowStore for SqliteStore {
    async fn load(&self, key: &StoreKey) -> Result<Snapshot, StoreError> {
        // A read touches pages already cached, or the disk without waiting on a sync.
        self.load_blocking(key)
    }

    async fn compare_and_set(&self, key: &StoreKey, expected_version: u64, next: &Snapshot) -> Result<u64, StoreError> {
        self.commit(key, expected_version, next, None).await
    }

    async fn lease(&self, key: &StoreKey) -> Result<FlowLease, StoreError> {
        Ok(self.inner.leases.lease(key).await)
    }

    async fn remove(&self, key: &StoreKey) -> Result<(), StoreError> {
        let (store, key) = (self.clone(), key.clone());
        tokio::task::spawn_blocking(move || {
            let mut connection = store.connection();
            let transaction = connection.transaction()?;
            transaction.execute("DELETE FROM records WHERE key = ?1", params![key.as_str()])?;
            transaction.execute("DELETE FROM history WHERE key = ?1", params![key.as_str()])?;
            transaction.commit()?;
            store.remember(&key, None);
            Ok::<_, rusqlite::Error>(())
        })
        .await
        .map_err(unavailable)?
        .map_err(unavailable)
    }

    async fn spend_window(
        &self,
        window: &str,
        calls: u32,
        per_ms: u64,
    ) -> Result<Option<Result<String, u64>>, StoreError> {
        let (store, window) = (self.clone(), window.to_string());
        tokio::task::spawn_blocking(move || store.spend_window_blocking(&window, calls, per_ms))
            .await
            .map_err(unavailable)?
            .map(Some)
    }

    async fn refund_window(&self, window: &str, ticket: &str) -> Result<(), StoreError> {
        let (store, window) = (self.clone(), window.to_string());
        let Ok(ticket) = ticket.parse::<i64>() else { return Ok(()) };
        tokio::task::spawn_blocking(move || {
            store
                .connection()
                .execute("DELETE FROM windows WHERE window = ?1 AND ticket = ?2", params![window, ticket])
                .map(drop)
        })
        .await
        .map_err(unavailable)?
        .map_err(unavailable)
    }

    fn keeps_history(&self) -> bool {
        true
    }

    fn keeps_your_tables(&self) -> bool {
        true
    }

    async fn begin(&self) -> Result<Option<Box<dyn StoreTransaction>>, StoreError> {
        Ok(Some(Box::new(SqliteTransaction { store: self.clone(), statements: Vec::new() })))
    }

    async fn commit_with_history(
        &self,
        key: &StoreKey,
        expected_version: u64,
        next: &Snapshot,
        _lease: Option<&FlowLease>,
        entry: &HistoryEntry,
        retention: HistoryRetention,
    ) -> Result<u64, StoreError> {
        // One process per file: its leases cannot be lost, the compare-and-set guards.
        self.commit(key, expected_version, next, Some((entry.clone(), retention))).await
    }

    async fn history(&self, key: &StoreKey) -> Result<Option<Vec<HistoryEntry>>, StoreError> {
        // A read, like `load`: no sync to wait for.
        let connection = self.connection();
        let mut statement = connection
            .prepare_cached(
                "SELECT history.entry FROM history JOIN records ON records.key = history.key
                 WHERE history.key = ?1 AND (records.expires_at_ms IS NULL OR records.expires_at_ms > ?2)
                 ORDER BY history.version",
            )
            .map_err(unavailable)?;
        let rows = statement
            .query_map(params![key.as_str(), now_ms() as i64], |row| row.get::<_, String>(0))
            .map_err(unavailable)?;
        let mut entries = Vec::new();
        for row in rows {
            entries.push(serde_json::from_str(&row.map_err(unavailable)?).map_err(unavailable)?);
        }
        Ok(Some(entries))
    }

    async fn due(&self, now_ms: u64, limit: usize) -> Result<Vec<StoreKey>, StoreError> {
        let store = self.clone();
        tokio::task::spawn_blocking(move || {
            let connection = store.connection();
            let mut statement = connection.prepare_cached(
                "SELECT key FROM records WHERE due_at_ms IS NOT NULL AND due_at_ms <= ?1
                 AND (expires_at_ms IS NULL OR expires_at_ms > ?1) ORDER BY due_at_ms LIMIT ?2",
            )?;
            let now = now_ms.min(i64::MAX as u64) as i64;
            let keys = statement.query_map(params![now, limit as i64], |row| row.get::<_, String>(0))?;
            keys.map(|key| key.map(StoreKey::from_stored)).collect::<rusqlite::Result<Vec<_>>>()
        })
        .await
        .map_err(unavailable)?
        .map_err(|error: rusqlite::Error| unavailable(error))
    }

    async fn count_instances(&self, scope: &str, machine: &str) -> Result<Option<InstanceCounts>, StoreError> {
        let (store, (low, high)) = (self.clone(), counts::range(scope, machine));
        tokio::task::spawn_blocking(move || {
            // The reader's connection: it never waits on a commit's sync.
            let reader = lock(&store.inner.reader);
            let mut statement = reader.prepare_cached("SELECT name, n FROM counts WHERE name >= ?1 AND name < ?2")?;
            let counters = statement.query_map(params![low, high], |row| Ok((row.get(0)?, row.get(1)?)))?;
            Ok(Some(counts::tally(&low, counters.collect::<rusqlite::Result<Vec<_>>>()?)))
        })
        .await
        .map_err(unavailable)?
        .map_err(|error: rusqlite::Error| unavailable(error))
    }

    async fn count_live(&self) -> Result<Option<LiveRecords>, StoreError> {
        let store = self.clone();
        tokio::task::spawn_blocking(move || {
            let connection = store.connection();
            // A range of the primary key per kind: no scan of the other records.
            let mut statement = connection.prepare_cached(
                "SELECT count(*) FROM records WHERE key >= ?1 AND key < ?2
                 AND (expires_at_ms IS NULL OR expires_at_ms > ?3)",
            )?;
            let now = now_ms() as i64;
            let mut count = |prefix: &str| -> rusqlite::Result<u64> {
                // Every key with the prefix sorts below the prefix with its last byte raised.
                let above = format!("{};", prefix.strip_suffix(':').unwrap_or(prefix));
                statement.query_row(params![prefix, above, now], |row| row.get::<_, i64>(0)).map(|n| n.max(0) as u64)
            };
            let mut live = LiveRecords::default();
            for prefix in StoreKey::FLOW_PREFIXES {
                live.flows += count(prefix)?;
            }
            for prefix in StoreKey::INSTANCE_PREFIXES {
                live.instances += count(prefix)?;
            }
            Ok(Some(live))
        })
        .await
        .map_err(unavailable)?
        .map_err(|error: rusqlite::Error| unavailable(error))
    }
}

/// Adds the column of instances' deadlines (and its index) to a database made before
/// `after` existed.
/// A call's transaction on the SQLite file. The file has one writer, which commits the
/// calls of many instances together (group commit) and so cannot wait for one handler:
/// the handler's statements are kept, and run when its call commits, first in the call's
/// unit of the group's transaction (all of it or none). Its queries read what is
/// committed, on the reader connection.
struct SqliteTransaction {
    store: SqliteStore,
    statements: Vec<Statement>,
}

#[async_trait]
impl StoreTransaction for SqliteTransaction {
    async fn execute(&mut self, sql: &str, params: &[SqlValue]) -> Result<Option<u64>, StoreError> {
        // Checked now, so that a statement SQLite cannot prepare fails the handler, not
        // the commit.
        let store = self.store.clone();
        let checked = sql.to_string();
        tokio::task::spawn_blocking(move || lock(&store.inner.reader).prepare_cached(&checked).map(drop))
            .await
            .map_err(unavailable)?
            .map_err(|error| StoreError::Statement(error.to_string()))?;
        self.statements.push(Statement::One(sql.to_string(), params.to_vec()));
        Ok(None)
    }

    async fn query(&mut self, sql: &str, params: &[SqlValue]) -> Result<Vec<SqlRow>, StoreError> {
        let (store, sql, params) = (self.store.clone(), sql.to_string(), params.to_vec());
        tokio::task::spawn_blocking(move || super::sql::query_sqlite(&lock(&store.inner.reader), &sql, &params))
            .await
            .map_err(unavailable)?
            .map_err(|error| StoreError::Statement(error.to_string()))
    }

    async fn execute_batch(&mut self, sql: &str) -> Result<(), StoreError> {
        self.statements.push(Statement::Batch(sql.to_string()));
        Ok(())
    }

    async fn commit(self: Box<Self>, writes: Vec<RecordWrite>) -> Result<Vec<u64>, StoreError> {
        let Self { store, statements } = *self;
        store.commit_unit(statements, writes).await
    }
}

fn add_due_column(connection: &Connection) -> rusqlite::Result<()> {
    let has_column =
        connection.prepare("SELECT 1 FROM pragma_table_info('records') WHERE name = 'due_at_ms'")?.exists([])?;
    if !has_column {
        connection.execute_batch("ALTER TABLE records ADD COLUMN due_at_ms INTEGER;")?;
    }
    connection
        .execute_batch("CREATE INDEX IF NOT EXISTS records_due ON records (due_at_ms) WHERE due_at_ms IS NOT NULL;")
}

/// The instances counted by state ([`counts`]): a `counted` column beside each record
/// (the names it counts under, as a JSON array), and triggers that move the `counts` table's
/// counters whenever a row's names change, in the statement's own transaction. A file
/// written before counters existed has its instances counted once, here.
fn add_counters(connection: &Connection) -> rusqlite::Result<()> {
    let has_column =
        connection.prepare("SELECT 1 FROM pragma_table_info('records') WHERE name = 'counted'")?.exists([])?;
    connection.execute_batch(
        "CREATE TABLE IF NOT EXISTS counts (name TEXT PRIMARY KEY NOT NULL, n INTEGER NOT NULL) WITHOUT ROWID;
         CREATE TRIGGER IF NOT EXISTS records_counted_insert AFTER INSERT ON records WHEN NEW.counted IS NOT NULL
         BEGIN
             INSERT INTO counts (name, n) SELECT value, 1 FROM json_each(NEW.counted) WHERE true
             ON CONFLICT (name) DO UPDATE SET n = n + 1;
         END;
         CREATE TRIGGER IF NOT EXISTS records_counted_update AFTER UPDATE OF counted ON records
         WHEN OLD.counted IS NOT NEW.counted
         BEGIN
             INSERT INTO counts (name, n) SELECT value, -1 FROM json_each(OLD.counted) WHERE true
             ON CONFLICT (name) DO UPDATE SET n = n - 1;
             INSERT INTO counts (name, n) SELECT value, 1 FROM json_each(NEW.counted) WHERE true
             ON CONFLICT (name) DO UPDATE SET n = n + 1;
         END;
         CREATE TRIGGER IF NOT EXISTS records_counted_delete AFTER DELETE ON records WHEN OLD.counted IS NOT NULL
         BEGIN
             INSERT INTO counts (name, n) SELECT value, -1 FROM json_each(OLD.counted) WHERE true
             ON CONFLICT (name) DO UPDATE SET n = n - 1;
         END;",
    )?;
    if has_column {
        return Ok(());
    }
    connection.execute_batch("ALTER TABLE records ADD COLUMN counted TEXT;")?;
    let mut instances = Vec::new();
    let mut select = connection.prepare("SELECT key, snapshot FROM records")?;
    let mut rows = select.query([])?;
    while let Some(row) = rows.next()? {
        let key = StoreKey::from_stored(row.get(0)?);
        let text: String = row.get(1)?;
        let snapshot = serde_json::from_str::<Snapshot>(&text).ok();
        if let Some(counted) = snapshot.and_then(|snapshot| counts::counted(&key, &snapshot)) {
            instances.push((key, Counted::json(Some(&counted))));
        }
    }
    for (key, counted) in instances {
        connection.execute("UPDATE records SET counted = ?2 WHERE key = ?1", params![key.as_str(), counted])?;
    }
    Ok(())
}

/// Appends `entry` to `key`'s history as the row of the commit's `version` (versions grow,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_path(name: &str) -> PathBuf {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
        std::env::temp_dir().join(format!("toolgate-sqlite-{name}-{}-{nanos}.db", std::process::id()))
    }

    fn cleanup(path: &Path) {
        for suffix in ["", "-lock", "-wal", "-shm"] {
            let mut file = path.as_os_str().to_owned();
            file.push(suffix);
            let _ = std::fs::remove_file(file);
        }
    }

    /// 64 commits arrive while the file is busy: they go to disk in at most two groups
    /// (what the leader took before it waited, then the rest), each judged alone — of two
    /// commits from the same version of a key, one wins and one conflicts — and what each
    /// was told is what the file holds after a reopen.
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    // Holding the connection across the waits is the point: it keeps the file busy while
    // the commits arrive (the leader waits for it on a blocking thread, not on this task).
    #[allow(clippy::await_holding_lock)]
    async fn commits_that_arrive_together_share_a_sync_and_are_judged_one_by_one() {
        use std::sync::atomic::AtomicUsize;
        use std::time::Duration;
        let path = temp_path("group");
        let store = SqliteStore::open(&path).unwrap();
        let busy = store.connection();
        let started = Arc::new(AtomicUsize::new(0));
        let commits: Vec<_> = (0..64)
            .map(|i| {
                let (store, started) = (store.clone(), started.clone());
                tokio::spawn(async move {
                    let key = StoreKey::instance("m", &format!("k{}", i % 32));
                    let next = Snapshot::default().with_state("m", if i < 32 { "a" } else { "b" });
                    started.fetch_add(1, Ordering::SeqCst);
                    let outcome = store.compare_and_set(&key, 0, &next).await;
                    (key, next.states["m"].clone(), outcome)
                })
            })
            .collect();
        while started.load(Ordering::SeqCst) < 64 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        // Each queued itself in the poll that counted it.
        tokio::time::sleep(Duration::from_millis(50)).await;
        drop(busy);
        let mut won: HashMap<StoreKey, (String, u64)> = HashMap::new();
        let mut conflicts = 0;
        for commit in commits {
            match commit.await.unwrap() {
                (key, state, Ok(version)) => assert!(won.insert(key, (state, version)).is_none(), "two won"),
                (_, _, Err(StoreError::Conflict { expected: 0, found })) => {
                    assert!(found > 0);
                    conflicts += 1;
                }
                (_, _, Err(other)) => panic!("{other}"),
            }
        }
        assert_eq!((won.len(), conflicts), (32, 32));
        let (groups, grouped) = store.commit_groups();
        assert_eq!(grouped, 64);
        assert!(groups <= 2, "{groups} groups for 64 commits that waited together");
        drop(store);
        let reopened = SqliteStore::open(&path).unwrap();
        for (key, (state, version)) in &won {
            let stored = reopened.load(key).await.unwrap();
            assert_eq!((stored.states["m"].as_str(), stored.version), (state.as_str(), *version));
        }
        drop(reopened);
        cleanup(&path);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn passes_the_store_conformance_suite() {
        let path = temp_path("conformance");
        crate::store::conformance::check(&SqliteStore::open(&path).unwrap()).await;
        cleanup(&path);
        let path = temp_path("counts");
        let store = SqliteStore::open(&path).unwrap();
        assert!(store.count_live().await.unwrap().is_some(), "the SQLite store counts its live records");
        crate::store::conformance::check_live_counts(&store).await;
        crate::store::conformance::check_instance_counts(&store).await;
        cleanup(&path);
    }

    #[tokio::test]
    async fn records_and_versions_survive_reopening() {
        let path = temp_path("reopen");
        let key = StoreKey::instance("invoice", "INV-1");
        let (first, removed_at) = {
            let store = SqliteStore::open(&path).unwrap();
            let first =
                store.compare_and_set(&key, 0, &Snapshot::default().with_state("invoice", "discharged")).await.unwrap();
            let gone = StoreKey::connection("gone");
            let removed_at = store.compare_and_set(&gone, 0, &Snapshot::default()).await.unwrap();
            store.remove(&gone).await.unwrap();
            (first, removed_at)
        };
        let store = SqliteStore::open(&path).unwrap();
        let loaded = store.load(&key).await.unwrap();
        assert_eq!((loaded.version, loaded.state_of("invoice", "draft")), (first, "discharged"));
        let next = store.compare_and_set(&StoreKey::connection("gone"), 0, &Snapshot::default()).await.unwrap();
        assert!(next > removed_at, "versions never go back across a restart: {removed_at} then {next}");
        drop(store);
        cleanup(&path);
    }

    /// A file an older toolgate wrote (no `counted` column, no counters) has its instances
    /// counted as it opens, and their commits move the counts from there.
    #[tokio::test]
    async fn a_file_written_before_counters_has_its_instances_counted_on_open() {
        let path = temp_path("counted");
        {
            let old = Connection::open(&path).unwrap();
            old.execute_batch(
                "CREATE TABLE records (key TEXT PRIMARY KEY NOT NULL, version INTEGER NOT NULL,
                     expires_at_ms INTEGER, snapshot TEXT NOT NULL) WITHOUT ROWID;
                 CREATE TABLE revision (id INTEGER PRIMARY KEY CHECK (id = 1), last INTEGER NOT NULL);
                 INSERT INTO revision (id, last) VALUES (1, 4);",
            )
            .unwrap();
            let key = StoreKey::instance("invoice", "INV-1");
            let snapshot = r#"{"states":{"invoice":"approved"},"active_domain":null,"version":0,"updated_at_ms":1}"#;
            old.execute("INSERT INTO records VALUES (?1, 4, NULL, ?2)", params![key.as_str(), snapshot]).unwrap();
            old.execute("INSERT INTO records VALUES ('connection:c', 3, NULL, '{\"states\":{}}')", []).unwrap();
        }
        let store = SqliteStore::open(&path).unwrap();
        let states = || async { store.count_instances("", "invoice").await.unwrap().unwrap().states };
        assert_eq!(states().await, [("approved".to_string(), 1)].into());
        let key = StoreKey::instance("invoice", "INV-1");
        let before = store.load(&key).await.unwrap();
        store.compare_and_set(&key, before.version, &before.with_state("invoice", "discharged")).await.unwrap();
        assert_eq!(states().await, [("discharged".to_string(), 1)].into());
        drop(store);
        // Opened again, nothing is counted twice.
        let store = SqliteStore::open(&path).unwrap();
        assert_eq!(
            store.count_instances("", "invoice").await.unwrap().unwrap().states,
            [("discharged".to_string(), 1)].into()
        );
        drop(store);
        cleanup(&path);
    }

    #[tokio::test]
    async fn a_second_opener_is_refused_while_the_first_holds_the_file() {
        let path = temp_path("exclusive");
        let store = SqliteStore::open(&path).unwrap();
        let refused = SqliteStore::open(&path).unwrap_err();
        assert!(matches!(refused, OpenError::InUse(_)), "{refused}");
        assert!(refused.to_string().contains("in use by another process"), "{refused}");
        // By another name for the same file: a symbolic link, a hard link.
        let symlink = path.with_extension("symlink.db");
        std::os::unix::fs::symlink(&path, &symlink).unwrap();
        let hard = path.with_extension("hard.db");
        std::fs::hard_link(&path, &hard).unwrap();
        for other in [&symlink, &hard] {
            let refused = SqliteStore::open(other).unwrap_err();
            assert!(matches!(refused, OpenError::InUse(_)), "{}: {refused}", other.display());
        }
        drop(store);
        SqliteStore::open(&path).expect("free again once the first is gone");
        let _ = std::fs::remove_file(&symlink);
        let _ = std::fs::remove_file(&hard);
        cleanup(&path);
    }

    #[tokio::test]
    async fn reads_store_nothing_and_expired_records_are_swept_on_open() {
        let path = temp_path("bounded");
        {
            let store = SqliteStore::open(&path).unwrap();
            for i in 0..1_000 {
                store.load(&StoreKey::instance("invoice", &format!("INV-{i}"))).await.unwrap();
            }
            assert_eq!(store.record_count().unwrap(), 0, "a read of an instance that does not exist stores nothing");
            let expiring = Snapshot { expires_at_ms: Some(now_ms() + 20), ..Snapshot::default() };
            store.compare_and_set(&StoreKey::handle("short"), 0, &expiring).await.unwrap();
            store.compare_and_set(&StoreKey::instance("invoice", "INV-1"), 0, &Snapshot::default()).await.unwrap();
        }
        tokio::time::sleep(std::time::Duration::from_millis(40)).await;
        let store = SqliteStore::open(&path).unwrap();
        let rows: i64 = store.connection().query_row("SELECT COUNT(*) FROM records", [], |row| row.get(0)).unwrap();
        assert_eq!(rows, 1, "the expired handle flow was deleted, the instance kept");
        drop(store);
        cleanup(&path);
    }
}
