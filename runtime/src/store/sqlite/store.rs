//! [`SqliteStore`]: the struct, its opening, its read cache, and the [`FlowStore`] it is.

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use async_trait::async_trait;
use rusqlite::{Connection, OptionalExtension, params};

use super::migrations::migrate;
use super::queue::Queue;
use crate::store::counts;
use crate::store::leases::LocalLeases;
use crate::store::{
    Capabilities, Counts, FlowLease, FlowStore, Histories, HistoryEntry, HistoryRetention, Hold, InstanceCounts,
    LiveRecords, RateWindows, Snapshot, Step, StoreError, StoreKey, StoreTransaction, YourTables, now_ms, unavailable,
};

/// The most keys whose record (or absence) the read cache holds.
pub const CACHED_KEYS: usize = 16_384;

/// Each connection's page cache, in KiB (SQLite's default is 2,000): a million instances'
/// tables have about 5 MB of interior pages each, which must stay cached for a read or a
/// commit to reach its row without going to the file for every level of the tree.
const PAGE_CACHE_KIB: u32 = 32 * 1024;

/// A store in one SQLite file. Cheap to clone; clones share the file.
#[derive(Clone)]
pub struct SqliteStore {
    pub(super) inner: Arc<Inner>,
}

pub(super) struct Inner {
    pub(super) path: PathBuf,
    pub(super) connection: Mutex<Connection>,
    /// Commits waiting for the next group, which the commit leading takes whole (see
    /// [`SqliteStore::lead`]).
    pub(super) queue: Mutex<Queue>,
    /// Groups committed, and the commits they held.
    pub(super) groups: AtomicU64,
    pub(super) grouped: AtomicU64,
    /// What the file holds for recently read or written keys (`None`: no record). A write
    /// changes it while the connection is held, in the order the file changes.
    pub(super) cache: Mutex<HashMap<StoreKey, Option<Snapshot>>>,
    /// A second connection, only for reads that miss the cache: in WAL mode it reads the
    /// last commit without waiting for the one syncing (which holds `connection`).
    pub(super) reader: Mutex<Connection>,
    /// How many times a write changed the cache: a read that missed it keeps what it read
    /// only if no write changed the cache meanwhile (else it could put back what the
    /// write replaced).
    pub(super) writes: AtomicU64,
    pub(super) leases: LocalLeases,
    /// The deadline of a handler's rusqlite work on the writer, while one runs.
    pub(super) bound: super::driver::WorkBound,
    /// The database file, locked for the store's life: no other process opens it
    /// meanwhile, by whatever name.
    pub(super) _lock: File,
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
        let mut connection = Connection::open(&path).map_err(|e| io(&e))?;
        let bound = super::driver::WorkBound::install(&mut connection).map_err(|e| io(&e))?;
        connection
            .execute_batch("PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA foreign_keys = OFF;")
            .map_err(|e| io(&e))?;
        let page_cache = format!("PRAGMA cache_size = -{PAGE_CACHE_KIB}");
        connection.execute_batch(&page_cache).map_err(|e| io(&e))?;
        migrate(&connection).map_err(|e| io(&e))?;
        super::checkpoint::apart(&mut connection, &path).map_err(|e| io(&e))?;
        let flags = rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let reader = Connection::open_with_flags(&path, flags).map_err(|e| io(&e))?;
        reader.execute_batch(&page_cache).map_err(|e| io(&e))?;
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
            bound,
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

    pub(super) fn connection(&self) -> MutexGuard<'_, Connection> {
        // A panic while holding it rolled its transaction back; the connection is usable.
        lock(&self.inner.connection)
    }

    pub(super) fn cache(&self) -> MutexGuard<'_, HashMap<StoreKey, Option<Snapshot>>> {
        lock(&self.inner.cache)
    }

    /// Remembers what the file now holds for `key` after a write (call with the
    /// connection held, once the write is committed).
    pub(super) fn remember(&self, key: &StoreKey, record: Option<Snapshot>) {
        self.inner.writes.fetch_add(1, Ordering::SeqCst);
        Self::keep(&mut self.cache(), key, record);
    }

    pub(super) fn keep(cache: &mut HashMap<StoreKey, Option<Snapshot>>, key: &StoreKey, record: Option<Snapshot>) {
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
}

/// `mutex`, whether or not a panic poisoned it: what it guards is left consistent (a
/// connection's transaction rolls back, the queue and cache are replaced whole).
pub(super) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[async_trait]
impl FlowStore for SqliteStore {
    async fn load(&self, key: &StoreKey) -> Result<Snapshot, StoreError> {
        // A read touches pages already cached, or the disk without waiting on a sync.
        self.load_blocking(key)
    }

    async fn begin(&self, key: &StoreKey, hold: Hold) -> Result<Step, StoreError> {
        let lease = self.inner.leases.for_step(key, hold).await;
        Ok(Step { loaded: self.load_blocking(key)?, lease })
    }

    async fn commit(
        &self,
        key: &StoreKey,
        expected_version: u64,
        next: &Snapshot,
        _lease: Option<&FlowLease>,
        entry: Option<(&HistoryEntry, HistoryRetention)>,
    ) -> Result<u64, StoreError> {
        // One process per file: its leases cannot be lost, the compare-and-set guards.
        let entry = entry.map(|(entry, retention)| (entry.clone(), retention));
        self.write(key, expected_version, next, entry).await
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

    async fn due_changed(&self, _key: &StoreKey, _due_at_ms: Option<u64>) -> Result<(), StoreError> {
        // `due` reads the records' own column: there is no index to tell.
        Ok(())
    }

    fn capabilities(&self) -> Capabilities<'_> {
        Capabilities {
            history: Some(self),
            windows: Some(self),
            tables: Some(self),
            counts: Some(self),
            ..Capabilities::default()
        }
    }
}

#[async_trait]
impl Histories for SqliteStore {
    async fn history(&self, key: &StoreKey) -> Result<Vec<HistoryEntry>, StoreError> {
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
        Ok(entries)
    }
}

#[async_trait]
impl RateWindows for SqliteStore {
    async fn spend(&self, window: &str, calls: u32, per_ms: u64) -> Result<Result<String, u64>, StoreError> {
        let (store, window) = (self.clone(), window.to_string());
        tokio::task::spawn_blocking(move || store.spend_window_blocking(&window, calls, per_ms))
            .await
            .map_err(unavailable)?
    }

    async fn refund(&self, window: &str, ticket: &str) -> Result<(), StoreError> {
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
}

#[async_trait]
impl YourTables for SqliteStore {
    async fn transaction(&self) -> Result<Box<dyn StoreTransaction>, StoreError> {
        Ok(self.open_transaction())
    }
}

#[async_trait]
impl Counts for SqliteStore {
    async fn live(&self) -> Result<LiveRecords, StoreError> {
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
            Ok(live)
        })
        .await
        .map_err(unavailable)?
        .map_err(|error: rusqlite::Error| unavailable(error))
    }

    async fn instances(&self, scope: &str, machine: &str) -> Result<InstanceCounts, StoreError> {
        let (store, (low, high)) = (self.clone(), counts::range(scope, machine));
        tokio::task::spawn_blocking(move || {
            // The reader's connection: it never waits on a commit's sync.
            let reader = lock(&store.inner.reader);
            let mut statement = reader.prepare_cached("SELECT name, n FROM counts WHERE name >= ?1 AND name < ?2")?;
            let counters = statement.query_map(params![low, high], |row| Ok((row.get(0)?, row.get(1)?)))?;
            Ok(counts::tally(&low, counters.collect::<rusqlite::Result<Vec<_>>>()?))
        })
        .await
        .map_err(unavailable)?
        .map_err(|error: rusqlite::Error| unavailable(error))
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// A fresh file name for a test's store.
    pub(in crate::store::sqlite) fn temp_path(name: &str) -> PathBuf {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
        std::env::temp_dir().join(format!("toolgate-sqlite-{name}-{}-{nanos}.db", std::process::id()))
    }

    /// Removes a test's store file and the files beside it.
    pub(in crate::store::sqlite) fn cleanup(path: &Path) {
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
                    let outcome = store.commit(&key, 0, &next, None, None).await;
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
        assert!(store.capabilities().counts.is_some(), "the SQLite store counts its live records");
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
            let first = store
                .commit(&key, 0, &Snapshot::default().with_state("invoice", "discharged"), None, None)
                .await
                .unwrap();
            let gone = StoreKey::connection("gone");
            let removed_at = store.commit(&gone, 0, &Snapshot::default(), None, None).await.unwrap();
            store.remove(&gone).await.unwrap();
            (first, removed_at)
        };
        let store = SqliteStore::open(&path).unwrap();
        let loaded = store.load(&key).await.unwrap();
        assert_eq!((loaded.version, loaded.state_of("invoice", "draft")), (first, "discharged"));
        let next = store.commit(&StoreKey::connection("gone"), 0, &Snapshot::default(), None, None).await.unwrap();
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
        let states = || async { store.instances("", "invoice").await.unwrap().states };
        assert_eq!(states().await, [("approved".to_string(), 1)].into());
        let key = StoreKey::instance("invoice", "INV-1");
        let before = store.load(&key).await.unwrap();
        store.commit(&key, before.version, &before.with_state("invoice", "discharged"), None, None).await.unwrap();
        assert_eq!(states().await, [("discharged".to_string(), 1)].into());
        drop(store);
        // Opened again, nothing is counted twice.
        let store = SqliteStore::open(&path).unwrap();
        assert_eq!(store.instances("", "invoice").await.unwrap().states, [("discharged".to_string(), 1)].into());
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
            store.commit(&StoreKey::handle("short"), 0, &expiring, None, None).await.unwrap();
            store.commit(&StoreKey::instance("invoice", "INV-1"), 0, &Snapshot::default(), None, None).await.unwrap();
        }
        tokio::time::sleep(std::time::Duration::from_millis(40)).await;
        let store = SqliteStore::open(&path).unwrap();
        let rows: i64 = store.connection().query_row("SELECT COUNT(*) FROM records", [], |row| row.get(0)).unwrap();
        assert_eq!(rows, 1, "the expired handle flow was deleted, the instance kept");
        drop(store);
        cleanup(&path);
    }
}
