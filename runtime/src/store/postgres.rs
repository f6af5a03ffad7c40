//! [`PostgresStore`]: flows, instances, histories, leases, rate-limit windows and due
//! timers in Postgres, shared by every replica that points at the same database — a
//! deployment on Postgres needs no Redis: other replicas hear of commits through
//! `LISTEN`/`NOTIFY`.
//!
//! Its tables live in a schema of their own (`toolgate` unless told otherwise), created and
//! migrated at start-up by versioned migrations, one transaction each, under an advisory
//! lock (replicas starting together migrate once). It never touches another schema. A
//! schema written by a newer toolgate is refused with a message naming both versions.
//!
//! One commit is one statement, a function the migrations create (`commit_record`): the
//! record's row is locked (`FOR UPDATE`), the lease's fencing token checked, the version
//! compared and bumped, the history appended and trimmed; once committed, it is announced
//! (`pg_notify`, batched, outside the commit: see `notify_commits`). A record removed
//! or expired keeps its row's version, so versions never go back for a key.
//!
//! A call whose handler writes tables of yours ([`Transaction`](crate::Transaction)) runs
//! its statements in a transaction opened for it, and its records are written in that same
//! transaction: your rows and the state commit together, or neither does.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use deadpool_postgres::{GenericClient, Manager, ManagerConfig, Pool, RecyclingMethod};
use tokio_postgres::NoTls;

use super::{
    FlowLease, FlowStore, HistoryEntry, HistoryRetention, LiveRecords, RecordWrite, Snapshot, SqlRow, SqlValue,
    StoreError, StoreKey, StoreTransaction, now_ms,
};

/// The schema version this toolgate writes and reads: the number of its migrations.
pub const POSTGRES_SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// The schema toolgate's tables live in, unless [`PostgresStore::connect_in_schema`] names
/// another.
pub const DEFAULT_POSTGRES_SCHEMA: &str = "toolgate";

/// How long a lease lives unless renewed (renewed every third of it while held).
const LEASE_TTL: Duration = Duration::from_secs(10);

/// How often a waiter asks for a held lease again.
const LEASE_POLL: Duration = Duration::from_millis(5);

/// Connections in the pool.
const POOL_SIZE: usize = 16;

/// The migrations, in order; `{s}` is the schema. Applied ones are never edited: a change
/// is a new migration.
const MIGRATIONS: [&str; 4] = [
    r#"
CREATE TABLE {s}.records (
    key text PRIMARY KEY,
    -- The last version given to the key; kept when the record is removed or expires.
    version bigint NOT NULL,
    -- The snapshot as JSON; NULL once removed.
    snapshot text,
    expires_at_ms bigint,
    due_at_ms bigint
);
CREATE INDEX records_due ON {s}.records (due_at_ms) WHERE due_at_ms IS NOT NULL;
CREATE TABLE {s}.history (
    key text NOT NULL,
    seq bigserial,
    at_ms bigint NOT NULL,
    entry text NOT NULL,
    PRIMARY KEY (key, seq)
);
CREATE TABLE {s}.leases (
    key text PRIMARY KEY,
    token text NOT NULL,
    expires_at timestamptz NOT NULL
);
CREATE TABLE {s}.windows (
    name text NOT NULL,
    ticket text NOT NULL,
    at_ms bigint NOT NULL,
    PRIMARY KEY (name, ticket)
);
"#,
    // 2: one commit, one statement — a function that does in the database what a commit
    // did in eight round trips. It answers the version written; -1: an `if_absent` write
    // found a live record; -2: the lease's token no longer holds; -3 - N: the record is at
    // version N, not the one expected.
    r#"
CREATE FUNCTION {s}.commit_record(
    p_key text, p_expected bigint, p_snapshot text, p_expires bigint, p_due bigint, p_fence text,
    p_entry text, p_at_ms bigint, p_keep bigint, p_since bigint, p_if_absent boolean,
    p_channel text, p_now bigint
) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    stored bigint;
    live boolean;
    current bigint;
    written bigint;
BEGIN
    INSERT INTO {s}.records (key, version) VALUES (p_key, 0) ON CONFLICT (key) DO NOTHING;
    SELECT version, snapshot IS NOT NULL AND (expires_at_ms IS NULL OR expires_at_ms > p_now)
        INTO stored, live FROM {s}.records WHERE key = p_key FOR UPDATE;
    IF p_if_absent AND live THEN
        RETURN -1;
    END IF;
    IF p_fence IS NOT NULL AND NOT EXISTS (
        SELECT 1 FROM {s}.leases WHERE key = p_key AND token = p_fence AND expires_at > clock_timestamp()
    ) THEN
        RETURN -2;
    END IF;
    current := CASE WHEN live THEN stored ELSE 0 END;
    IF current <> p_expected AND NOT p_if_absent THEN
        RETURN -3 - current;
    END IF;
    UPDATE {s}.records SET version = version + 1, snapshot = p_snapshot, expires_at_ms = p_expires,
        due_at_ms = p_due WHERE key = p_key RETURNING version INTO written;
    IF NOT live THEN
        DELETE FROM {s}.history WHERE key = p_key;
    END IF;
    IF p_entry IS NOT NULL THEN
        INSERT INTO {s}.history (key, at_ms, entry) VALUES (p_key, p_at_ms, p_entry);
        IF p_keep IS NOT NULL THEN
            DELETE FROM {s}.history WHERE key = p_key AND seq NOT IN
                (SELECT seq FROM {s}.history WHERE key = p_key ORDER BY seq DESC LIMIT p_keep);
        END IF;
        IF p_since IS NOT NULL THEN
            DELETE FROM {s}.history WHERE key = p_key AND at_ms < p_since;
        END IF;
    END IF;
    IF p_channel IS NOT NULL THEN
        PERFORM pg_notify(p_channel, p_key);
    END IF;
    RETURN written;
END
$$;
"#,
    // 3: a lease is not worth a disk flush: its table is UNLOGGED (no WAL), so taking and
    // releasing one waits for no sync. A crash of Postgres (or a failover to a standby)
    // empties it, which releases every lease — and a holder whose lease vanished cannot
    // commit, its fencing token no longer holding.
    r#"
ALTER TABLE {s}.leases SET UNLOGGED;
"#,
    // 4: a lease and the record it guards in one round trip: the lease taken (or NULL, held
    // by another), then the record read — a statement of its own inside the function, so
    // it sees every commit made before the lease was free.
    r#"
CREATE FUNCTION {s}.lease_and_load(p_key text, p_token text, p_ttl_ms bigint, p_now bigint)
RETURNS TABLE (taken boolean, version bigint, snapshot text) LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO {s}.leases AS held (key, token, expires_at)
        VALUES (p_key, p_token, clock_timestamp() + p_ttl_ms * interval '1 millisecond')
        ON CONFLICT (key) DO UPDATE SET token = EXCLUDED.token, expires_at = EXCLUDED.expires_at
        WHERE held.expires_at <= clock_timestamp();
    IF NOT FOUND THEN
        RETURN QUERY SELECT false, NULL::bigint, NULL::text;
        RETURN;
    END IF;
    RETURN QUERY SELECT true, r.version, r.snapshot FROM (SELECT 1) AS one
        LEFT JOIN {s}.records AS r ON r.key = p_key AND r.snapshot IS NOT NULL
            AND (r.expires_at_ms IS NULL OR r.expires_at_ms > p_now);
END
$$;
"#,
];

/// The store's statements, written once for its schema.
struct Sql {
    commit: String,
    load: String,
    history: String,
    take_lease: String,
    lease_and_load: String,
    renew_lease: String,
    release_lease: String,
    remove: String,
    remove_history: String,
    due: String,
    due_changed: String,
    live_keys: String,
    window_lock: String,
    window_clear: String,
    window_count: String,
    window_spend: String,
    window_oldest: String,
    window_refund: String,
    /// The `LISTEN`/`NOTIFY` channel of this schema's commits.
    channel: String,
    /// The schema.
    schema: String,
}

impl Sql {
    fn new(schema: &str) -> Self {
        let s = format!("\"{schema}\"");
        let channel = format!("{schema}_commits");
        let now = "(extract(epoch from clock_timestamp()) * 1000)::bigint";
        Self {
            commit: format!("SELECT {s}.commit_record($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)"),
            load: format!(
                "SELECT version, snapshot FROM {s}.records \
                 WHERE key = $1 AND snapshot IS NOT NULL AND (expires_at_ms IS NULL OR expires_at_ms > $2)"
            ),
            history: format!(
                "SELECT h.entry FROM {s}.history h JOIN {s}.records r ON r.key = h.key \
                 WHERE h.key = $1 AND r.snapshot IS NOT NULL AND (r.expires_at_ms IS NULL OR r.expires_at_ms > $2) \
                 ORDER BY h.seq"
            ),
            take_lease: format!(
                "INSERT INTO {s}.leases (key, token, expires_at) \
                 VALUES ($1, $2, clock_timestamp() + $3::bigint * interval '1 millisecond') \
                 ON CONFLICT (key) DO UPDATE SET token = EXCLUDED.token, expires_at = EXCLUDED.expires_at \
                 WHERE {s}.leases.expires_at <= clock_timestamp() RETURNING 1"
            ),
            lease_and_load: format!("SELECT taken, version, snapshot FROM {s}.lease_and_load($1, $2, $3, $4)"),
            renew_lease: format!(
                "UPDATE {s}.leases SET expires_at = clock_timestamp() + $3::bigint * interval '1 millisecond' \
                 WHERE key = $1 AND token = $2"
            ),
            release_lease: format!(
                "DELETE FROM {s}.leases AS held USING unnest($1::text[], $2::text[]) AS released (key, token) \
                 WHERE held.key = released.key AND held.token = released.token"
            ),
            remove: format!(
                "UPDATE {s}.records SET snapshot = NULL, expires_at_ms = NULL, due_at_ms = NULL WHERE key = $1"
            ),
            remove_history: format!("DELETE FROM {s}.history WHERE key = $1"),
            due: format!(
                "SELECT key FROM {s}.records WHERE due_at_ms <= $1 AND snapshot IS NOT NULL \
                 ORDER BY due_at_ms LIMIT $2"
            ),
            due_changed: format!("UPDATE {s}.records SET due_at_ms = $2 WHERE key = $1"),
            live_keys: format!(
                "SELECT key FROM {s}.records WHERE snapshot IS NOT NULL AND (expires_at_ms IS NULL OR expires_at_ms > $1)"
            ),
            window_lock: "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))".to_string(),
            window_clear: format!("DELETE FROM {s}.windows WHERE name = $1 AND at_ms <= {now} - $2"),
            window_count: format!("SELECT count(*) FROM {s}.windows WHERE name = $1"),
            window_spend: format!("INSERT INTO {s}.windows (name, ticket, at_ms) VALUES ($1, $2, {now})"),
            window_oldest: format!("SELECT min(at_ms) + $2 - {now} FROM {s}.windows WHERE name = $1"),
            window_refund: format!("DELETE FROM {s}.windows WHERE name = $1 AND ticket = $2"),
            channel,
            schema: schema.to_string(),
        }
    }
}

/// Flows, instances, challenges, idempotency records, histories, leases, rate-limit
/// windows and due timers in Postgres, shared by every replica that points at the same
/// database and schema. Cheap to clone.
#[derive(Clone)]
pub struct PostgresStore {
    pool: Pool,
    sql: Arc<Sql>,
    /// Every commit any replica makes, as the schema's channel announces it.
    commits: tokio::sync::broadcast::Sender<StoreKey>,
    /// The keys of commits to announce, by [`notify_commits`], after they committed.
    announce: tokio::sync::mpsc::UnboundedSender<String>,
    /// Leases dropped, to release (key, token), by [`release_leases`].
    release: tokio::sync::mpsc::UnboundedSender<(String, String)>,
    lease_ttl: Duration,
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStore").field("schema", &self.sql.schema).finish_non_exhaustive()
    }
}

fn unavailable(error: impl std::fmt::Display) -> StoreError {
    StoreError::Unavailable(error.to_string())
}

impl PostgresStore {
    /// Connects to the Postgres at `url` (`postgres://USER:PASSWORD@HOST:PORT/DATABASE`,
    /// plain TCP), and creates or migrates toolgate's tables in the schema `toolgate`.
    pub async fn connect(url: &str) -> Result<Self, StoreError> {
        Self::connect_in_schema(url, DEFAULT_POSTGRES_SCHEMA).await
    }

    /// [`PostgresStore::connect`], with toolgate's tables in `schema` (lowercase letters,
    /// digits and `_`, not starting with a digit).
    pub async fn connect_in_schema(url: &str, schema: &str) -> Result<Self, StoreError> {
        let plain = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_';
        if schema.is_empty() || !schema.chars().all(plain) || schema.starts_with(|c: char| c.is_ascii_digit()) {
            return Err(unavailable(format!(
                "`{schema}` is not a schema name toolgate uses: lowercase letters, digits and `_`"
            )));
        }
        let config: tokio_postgres::Config = url.parse().map_err(unavailable)?;
        let manager = Manager::from_config(config, NoTls, ManagerConfig { recycling_method: RecyclingMethod::Fast });
        let pool = Pool::builder(manager).max_size(POOL_SIZE).build().map_err(unavailable)?;
        migrate(&pool, schema).await?;
        let sql = Arc::new(Sql::new(schema));
        let (commits, _) = tokio::sync::broadcast::channel(1024);
        tokio::spawn(announce_commits(url.to_string(), sql.channel.clone(), commits.downgrade()));
        let (announce, to_announce) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(notify_commits(pool.clone(), sql.channel.clone(), to_announce));
        let (release, to_release) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(release_leases(pool.clone(), sql.clone(), to_release));
        Ok(Self { pool, sql, commits, announce, release, lease_ttl: LEASE_TTL })
    }

    /// Leases live `ttl` unless renewed (at least 300 ms).
    pub fn with_lease_ttl(mut self, ttl: Duration) -> Self {
        self.lease_ttl = ttl.max(Duration::from_millis(300));
        self
    }

    async fn client(&self) -> Result<deadpool_postgres::Object, StoreError> {
        self.pool.get().await.map_err(unavailable)
    }

    /// Compare-and-set in one transaction; with `fence`, only while the key's lease holds
    /// it; with `entry`, appending it to the key's history (trimmed by the retention).
    async fn commit(
        &self,
        key: &StoreKey,
        expected_version: u64,
        next: &Snapshot,
        fence: Option<&str>,
        entry: Option<(&HistoryEntry, HistoryRetention)>,
    ) -> Result<u64, StoreError> {
        let write = RecordWrite {
            key: key.clone(),
            expected: expected_version,
            next: next.clone(),
            fence: fence.map(str::to_string),
            entry: entry.map(|(entry, retention)| (entry.clone(), retention)),
            if_absent: false,
        };
        // One statement, its own transaction: a commit sent and not answered may have
        // been applied.
        let client = self.client().await?;
        let version = write_in(&self.sql, &client, &write, StoreError::OutcomeUnknown).await?;
        if version.is_some() {
            let _ = self.announce.send(key.as_str().to_string());
        }
        Ok(version.unwrap_or_default())
    }

    /// Takes `key`'s lease: waits until the row is free (or its holder's time ran out),
    /// then renews it until dropped.
    async fn take_lease(&self, key: &StoreKey) -> Result<FlowLease, StoreError> {
        let token = uuid::Uuid::new_v4().simple().to_string();
        let ttl_ms = self.lease_ttl.as_millis() as i64;
        loop {
            let client = self.client().await?;
            let statement = client.prepare_cached(&self.sql.take_lease).await.map_err(unavailable)?;
            let taken = client.query_opt(&statement, &[&key.as_str(), &token, &ttl_ms]).await.map_err(unavailable)?;
            drop(client);
            if taken.is_some() {
                return Ok(self.held(key, token));
            }
            // The caller bounds the wait (dropping this future gives up the place).
            tokio::time::sleep(LEASE_POLL).await;
        }
    }

    /// [`PostgresStore::take_lease`], and the record once the lease is held, one round trip
    /// per try.
    async fn take_lease_and_load(&self, key: &StoreKey) -> Result<(FlowLease, Snapshot), StoreError> {
        let token = uuid::Uuid::new_v4().simple().to_string();
        let ttl_ms = self.lease_ttl.as_millis() as i64;
        loop {
            let client = self.client().await?;
            let statement = client.prepare_cached(&self.sql.lease_and_load).await.map_err(unavailable)?;
            let now = now_ms() as i64;
            let row =
                client.query_one(&statement, &[&key.as_str(), &token, &ttl_ms, &now]).await.map_err(unavailable)?;
            drop(client);
            if row.get::<_, bool>(0) {
                let lease = self.held(key, token);
                let loaded = match (row.get::<_, Option<i64>>(1), row.get::<_, Option<String>>(2)) {
                    (Some(version), Some(text)) => {
                        let snapshot: Snapshot = serde_json::from_str(&text).map_err(unavailable)?;
                        Snapshot { version: version as u64, ..snapshot }
                    }
                    _ => Snapshot::default(),
                };
                return Ok((lease, loaded));
            }
            tokio::time::sleep(LEASE_POLL).await;
        }
    }

    /// The lease `token` holds on `key`, renewed until dropped.
    fn held(&self, key: &StoreKey, token: String) -> FlowLease {
        let ttl_ms = self.lease_ttl.as_millis() as i64;
        let (store, renewed_key, renewed_token) = (self.clone(), key.as_str().to_string(), token.clone());
        let renewal = tokio::spawn(async move {
            loop {
                tokio::time::sleep(store.lease_ttl / 3).await;
                let renewed = async {
                    let client = store.client().await?;
                    let statement = client.prepare_cached(&store.sql.renew_lease).await.map_err(unavailable)?;
                    client.execute(&statement, &[&renewed_key, &renewed_token, &ttl_ms]).await.map_err(unavailable)
                };
                if !matches!(renewed.await, Ok(1)) {
                    tracing::warn!(lease = %renewed_key, "a lease could not be renewed; its commit will be refused if another holder wrote first");
                    return;
                }
            }
        });
        let fence = token.clone();
        let lease = PostgresLease { store: self.clone(), key: key.as_str().to_string(), token, renewal };
        FlowLease::fenced(lease, fence)
    }
}

/// One record's write, one statement (`commit_record`, migration 2): the row `FOR
/// UPDATE`, the lease's fencing token checked, the version compared and bumped (a removed
/// or expired record keeps its version, so versions never go back), the history appended
/// and trimmed (announced by the caller, once committed). `None`: an `if_absent` write found a live record and
/// wrote nothing. `lost`: what an unanswered statement means (outside a transaction, an
/// unknown outcome).
async fn write_in(
    sql: &Sql,
    client: &impl GenericClient,
    write: &RecordWrite,
    lost: fn(String) -> StoreError,
) -> Result<Option<u64>, StoreError> {
    let RecordWrite { key, expected, next, fence, entry, if_absent } = write;
    let text = serde_json::to_string(&Snapshot { version: 0, ..next.clone() }).map_err(unavailable)?;
    let entry_text = entry.as_ref().map(|(entry, _)| serde_json::to_string(entry)).transpose().map_err(unavailable)?;
    let at_ms = entry.as_ref().map(|(entry, _)| entry.at_ms() as i64);
    let keep = entry.as_ref().and_then(|(_, retention)| retention.entries()).map(|most| most as i64);
    let since = entry
        .as_ref()
        .filter(|(_, retention)| retention.age().is_some())
        .map(|(entry, retention)| retention.oldest_kept_ms(entry.at_ms()) as i64);
    let statement = client.prepare_cached(&sql.commit).await.map_err(unavailable)?;
    let answer = client
        .query_one(
            &statement,
            &[
                &key.as_str(),
                &(*expected as i64),
                &text,
                &next.expires_at_ms.map(|ms| ms as i64),
                &next.due_at_ms.map(|ms| ms.min(i64::MAX as u64) as i64),
                fence,
                &entry_text,
                &at_ms,
                &keep,
                &since,
                if_absent,
                // Announced after the commit, by `notify_commits`, not in it.
                &None::<&str>,
                &(now_ms() as i64),
            ],
        )
        .await
        .map_err(|error| if error.is_closed() { lost(error.to_string()) } else { unavailable(error) })?;
    match answer.get::<_, i64>(0) {
        -1 => Ok(None),
        -2 => Err(StoreError::LeaseLost),
        written if written > 0 => Ok(Some(written as u64)),
        conflict => Err(StoreError::Conflict { expected: *expected, found: (-3 - conflict) as u64 }),
    }
}

/// Announces committed keys on the schema's channel, after their commits: whatever has
/// queued meanwhile in one statement. A `NOTIFY` inside a commit would take Postgres's
/// global notify lock for the whole commit, its disk flush included, and so serialize
/// every commit of every replica (about 1,500 a second here); announced after, commits
/// flush together. A process that dies between a commit and its announcement leaves the
/// other replicas' sessions to see the change at their next listing.
async fn notify_commits(pool: Pool, channel: String, mut keys: tokio::sync::mpsc::UnboundedReceiver<String>) {
    while let Some(first) = keys.recv().await {
        let mut batch = vec![first];
        while let Ok(key) = keys.try_recv() {
            batch.push(key);
        }
        batch.sort_unstable();
        batch.dedup();
        let announced = async {
            let client = pool.get().await.map_err(unavailable)?;
            let statement = client
                .prepare_cached("SELECT pg_notify($1, key) FROM unnest($2::text[]) AS key")
                .await
                .map_err(unavailable)?;
            client.execute(&statement, &[&channel, &batch]).await.map_err(unavailable)
        };
        if let Err(error) = announced.await {
            tracing::warn!(%error, commits = batch.len(), "commits could not be announced to the other replicas");
        }
    }
}

/// Releases dropped leases: whatever has queued meanwhile, in one statement. Under load a
/// release costs Postgres a share of one statement, not one of its own.
async fn release_leases(pool: Pool, sql: Arc<Sql>, mut leases: tokio::sync::mpsc::UnboundedReceiver<(String, String)>) {
    while let Some(first) = leases.recv().await {
        let mut batch = vec![first];
        while let Ok(lease) = leases.try_recv() {
            batch.push(lease);
        }
        let (keys, tokens): (Vec<String>, Vec<String>) = batch.into_iter().unzip();
        let released = async {
            let client = pool.get().await.map_err(unavailable)?;
            let statement = client.prepare_cached(&sql.release_lease).await.map_err(unavailable)?;
            client.execute(&statement, &[&keys, &tokens]).await.map_err(unavailable)
        };
        if let Err(error) = released.await {
            tracing::debug!(%error, leases = keys.len(), "leases could not be released; they expire by themselves");
        }
    }
}

/// A call's transaction on Postgres: a pooled connection inside `BEGIN`, on which the
/// handler's statements run as they come and the call's records are written at the
/// commit. Dropped before its commit (the handler failed, the call was cancelled), its
/// connection leaves the pool and closes, and Postgres rolls the transaction back.
struct PostgresTransaction {
    sql: Arc<Sql>,
    announce: tokio::sync::mpsc::UnboundedSender<String>,
    client: Option<deadpool_postgres::Object>,
}

impl PostgresTransaction {
    fn client(&self) -> Result<&deadpool_postgres::Object, StoreError> {
        self.client.as_ref().ok_or_else(|| unavailable("the transaction has ended"))
    }
}

/// What Postgres said of a handler's statement; a connection that failed is the store's.
fn statement(error: impl std::fmt::Display) -> StoreError {
    StoreError::Statement(error.to_string())
}

impl Drop for PostgresTransaction {
    fn drop(&mut self) {
        if let Some(client) = self.client.take() {
            // Out of the pool and closed: Postgres rolls back what it had.
            drop(deadpool_postgres::Object::take(client));
        }
    }
}

#[async_trait]
impl StoreTransaction for PostgresTransaction {
    async fn execute(&mut self, sql: &str, params: &[SqlValue]) -> Result<Option<u64>, StoreError> {
        let client = self.client()?;
        let rows = client.execute(sql, &crate::store::sql::postgres_params(params)).await.map_err(statement)?;
        Ok(Some(rows))
    }

    async fn query(&mut self, sql: &str, params: &[SqlValue]) -> Result<Vec<SqlRow>, StoreError> {
        let client = self.client()?;
        let rows = client.query(sql, &crate::store::sql::postgres_params(params)).await.map_err(statement)?;
        rows.iter().map(|row| crate::store::sql::postgres_row(row).map_err(statement)).collect()
    }

    async fn execute_batch(&mut self, sql: &str) -> Result<(), StoreError> {
        self.client()?.batch_execute(sql).await.map_err(|error| StoreError::Statement(error.to_string()))
    }

    async fn commit(mut self: Box<Self>, writes: Vec<RecordWrite>) -> Result<Vec<u64>, StoreError> {
        let mut versions = Vec::with_capacity(writes.len());
        {
            let client = self.client()?;
            for write in &writes {
                // Inside the transaction: an unanswered write is a failed transaction.
                versions.push(write_in(&self.sql, client, write, StoreError::Unavailable).await?.unwrap_or_default());
            }
            // Past this point the commit may have been applied even if no answer comes back.
            client.batch_execute("COMMIT").await.map_err(|error| StoreError::OutcomeUnknown(error.to_string()))?;
        }
        for (write, version) in writes.iter().zip(&versions) {
            if *version > 0 {
                let _ = self.announce.send(write.key.as_str().to_string());
            }
        }
        // Committed: the connection goes back to the pool.
        drop(self.client.take());
        Ok(versions)
    }
}

/// Creates the schema and applies the migrations it lacks, one transaction each, under a
/// transaction-level advisory lock: replicas starting together migrate once. A schema a
/// newer toolgate wrote is refused, naming both versions.
async fn migrate(pool: &Pool, schema: &str) -> Result<(), StoreError> {
    let mut client = pool.get().await.map_err(unavailable)?;
    let s = format!("\"{schema}\"");
    let transaction = client.transaction().await.map_err(unavailable)?;
    transaction
        .execute("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", &[&format!("toolgate-migrate:{schema}")])
        .await
        .map_err(unavailable)?;
    transaction
        .batch_execute(&format!(
            "CREATE SCHEMA IF NOT EXISTS {s}; \
             CREATE TABLE IF NOT EXISTS {s}.migrations (version bigint PRIMARY KEY, toolgate text NOT NULL, \
             applied_at timestamptz NOT NULL DEFAULT now());"
        ))
        .await
        .map_err(unavailable)?;
    let row = transaction
        .query_one(&format!("SELECT version, toolgate FROM {s}.migrations ORDER BY version DESC LIMIT 1"), &[])
        .await
        .ok();
    let (applied, by): (i64, String) = row.map_or((0, String::new()), |row| (row.get(0), row.get(1)));
    if applied > POSTGRES_SCHEMA_VERSION {
        return Err(unavailable(format!(
            "the Postgres schema `{schema}` is at version {applied}, written by toolgate {by}; this toolgate ({}) \
             knows versions up to {POSTGRES_SCHEMA_VERSION}: run the newer toolgate, or point this one at another schema",
            env!("CARGO_PKG_VERSION")
        )));
    }
    for (index, migration) in MIGRATIONS.iter().enumerate().skip(applied as usize) {
        transaction.batch_execute(&migration.replace("{s}", &s)).await.map_err(unavailable)?;
        transaction
            .execute(
                &format!("INSERT INTO {s}.migrations (version, toolgate) VALUES ($1, $2)"),
                &[&(index as i64 + 1), &env!("CARGO_PKG_VERSION")],
            )
            .await
            .map_err(unavailable)?;
        tracing::info!(schema, version = index + 1, "migrated the Postgres store");
    }
    transaction.commit().await.map_err(unavailable)
}

/// Follows the schema's commit channel on a connection of its own, and hands each key to
/// `commits` (this process's own commits too); reconnects after a failure, and ends when
/// the store is gone.
async fn announce_commits(url: String, channel: String, commits: tokio::sync::broadcast::WeakSender<StoreKey>) {
    use futures_util::StreamExt;
    loop {
        let Ok(config) = url.parse::<tokio_postgres::Config>() else { return };
        match config.connect(NoTls).await {
            Ok((client, mut connection)) => {
                let mut messages = futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
                let statement = format!("LISTEN \"{channel}\"");
                let listen = client.batch_execute(&statement);
                let mut listen = std::pin::pin!(listen);
                // The connection must be driven for the LISTEN to complete.
                let listened = loop {
                    tokio::select! {
                        done = &mut listen => break done.is_ok(),
                        message = messages.next() => if message.is_none() { break false },
                    }
                };
                if listened {
                    while let Some(message) = messages.next().await {
                        let Some(sender) = commits.upgrade() else { return };
                        match message {
                            Ok(tokio_postgres::AsyncMessage::Notification(notice)) => {
                                let _ = sender.send(StoreKey::from_stored(notice.payload().to_string()));
                            }
                            Ok(_) => {}
                            Err(_) => break,
                        }
                    }
                }
            }
            Err(error) => tracing::debug!(%error, "cannot follow the Postgres store's commits; retrying"),
        }
        if commits.upgrade().is_none() {
            return;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

#[async_trait]
impl FlowStore for PostgresStore {
    async fn load(&self, key: &StoreKey) -> Result<Snapshot, StoreError> {
        let client = self.client().await?;
        let statement = client.prepare_cached(&self.sql.load).await.map_err(unavailable)?;
        let row = client.query_opt(&statement, &[&key.as_str(), &(now_ms() as i64)]).await.map_err(unavailable)?;
        match row {
            Some(row) => {
                let (version, text): (i64, String) = (row.get(0), row.get(1));
                let snapshot: Snapshot = serde_json::from_str(&text).map_err(unavailable)?;
                Ok(Snapshot { version: version as u64, ..snapshot })
            }
            None => Ok(Snapshot::default()),
        }
    }

    async fn compare_and_set(&self, key: &StoreKey, expected_version: u64, next: &Snapshot) -> Result<u64, StoreError> {
        self.commit(key, expected_version, next, None, None).await
    }

    async fn commit_leased(
        &self,
        key: &StoreKey,
        expected_version: u64,
        next: &Snapshot,
        lease: &FlowLease,
    ) -> Result<u64, StoreError> {
        // A lease of this store always has its token; one without is not this store's.
        let fence = lease.fence().ok_or(StoreError::LeaseLost)?;
        self.commit(key, expected_version, next, Some(fence), None).await
    }

    fn keeps_history(&self) -> bool {
        true
    }

    async fn commit_with_history(
        &self,
        key: &StoreKey,
        expected_version: u64,
        next: &Snapshot,
        lease: Option<&FlowLease>,
        entry: &HistoryEntry,
        retention: HistoryRetention,
    ) -> Result<u64, StoreError> {
        let fence = match lease {
            Some(lease) => Some(lease.fence().ok_or(StoreError::LeaseLost)?),
            None => None,
        };
        self.commit(key, expected_version, next, fence, Some((entry, retention))).await
    }

    async fn history(&self, key: &StoreKey) -> Result<Option<Vec<HistoryEntry>>, StoreError> {
        let client = self.client().await?;
        let statement = client.prepare_cached(&self.sql.history).await.map_err(unavailable)?;
        let rows = client.query(&statement, &[&key.as_str(), &(now_ms() as i64)]).await.map_err(unavailable)?;
        let entries = rows.iter().map(|row| serde_json::from_str(row.get::<_, &str>(0))).collect::<Result<_, _>>();
        entries.map(Some).map_err(unavailable)
    }

    async fn lease(&self, key: &StoreKey) -> Result<FlowLease, StoreError> {
        self.take_lease(key).await
    }

    async fn lease_and_load(&self, key: &StoreKey) -> Result<(FlowLease, Snapshot), StoreError> {
        self.take_lease_and_load(key).await
    }

    async fn remove(&self, key: &StoreKey) -> Result<(), StoreError> {
        let mut client = self.client().await?;
        let transaction = client.transaction().await.map_err(unavailable)?;
        transaction.execute(&self.sql.remove, &[&key.as_str()]).await.map_err(unavailable)?;
        transaction.execute(&self.sql.remove_history, &[&key.as_str()]).await.map_err(unavailable)?;
        transaction.commit().await.map_err(unavailable)
    }

    async fn due(&self, now_ms: u64, limit: usize) -> Result<Vec<StoreKey>, StoreError> {
        let client = self.client().await?;
        let statement = client.prepare_cached(&self.sql.due).await.map_err(unavailable)?;
        let rows = client.query(&statement, &[&(now_ms as i64), &(limit as i64)]).await.map_err(unavailable)?;
        Ok(rows.iter().map(|row| StoreKey::from_stored(row.get::<_, String>(0))).collect())
    }

    async fn due_changed(&self, key: &StoreKey, due_at_ms: Option<u64>) -> Result<(), StoreError> {
        let client = self.client().await?;
        let statement = client.prepare_cached(&self.sql.due_changed).await.map_err(unavailable)?;
        client.execute(&statement, &[&key.as_str(), &due_at_ms.map(|ms| ms as i64)]).await.map_err(unavailable)?;
        Ok(())
    }

    fn keeps_your_tables(&self) -> bool {
        true
    }

    async fn begin(&self) -> Result<Option<Box<dyn StoreTransaction>>, StoreError> {
        let client = self.client().await?;
        client.batch_execute("BEGIN").await.map_err(unavailable)?;
        let announce = self.announce.clone();
        Ok(Some(Box::new(PostgresTransaction { sql: self.sql.clone(), announce, client: Some(client) })))
    }

    fn is_shared(&self) -> bool {
        true
    }

    /// Counted over the live records' keys at each scrape (every replica counts the same
    /// records: aggregate with `max`, not `sum`).
    async fn count_live(&self) -> Result<Option<LiveRecords>, StoreError> {
        let client = self.client().await?;
        let rows = client.query(&self.sql.live_keys, &[&(now_ms() as i64)]).await.map_err(unavailable)?;
        let mut live = LiveRecords::default();
        for row in &rows {
            live.count(row.get::<_, &str>(0));
        }
        Ok(Some(live))
    }

    fn commits(&self) -> Option<tokio::sync::broadcast::Receiver<StoreKey>> {
        Some(self.commits.subscribe())
    }

    /// A sliding-window log on the database's clock, one transaction under an advisory
    /// lock on the window: at most `calls` in every window of `per_ms`, and the exact wait
    /// when over.
    async fn spend_window(
        &self,
        window: &str,
        calls: u32,
        per_ms: u64,
    ) -> Result<Option<Result<String, u64>>, StoreError> {
        let mut client = self.client().await?;
        let sql = &self.sql;
        let transaction = client.transaction().await.map_err(unavailable)?;
        let per = per_ms.max(1) as i64;
        transaction.execute(&sql.window_lock, &[&window]).await.map_err(unavailable)?;
        transaction.execute(&sql.window_clear, &[&window, &per]).await.map_err(unavailable)?;
        let count: i64 = transaction.query_one(&sql.window_count, &[&window]).await.map_err(unavailable)?.get(0);
        let outcome = if count < i64::from(calls) {
            let ticket = uuid::Uuid::new_v4().simple().to_string();
            transaction.execute(&sql.window_spend, &[&window, &ticket]).await.map_err(unavailable)?;
            Ok(ticket)
        } else {
            let wait: Option<i64> =
                transaction.query_one(&sql.window_oldest, &[&window, &per]).await.map_err(unavailable)?.get(0);
            Err(wait.unwrap_or(1).max(1) as u64)
        };
        transaction.commit().await.map_err(unavailable)?;
        Ok(Some(outcome))
    }

    async fn refund_window(&self, window: &str, ticket: &str) -> Result<(), StoreError> {
        let client = self.client().await?;
        client.execute(&self.sql.window_refund, &[&window, &ticket]).await.map_err(unavailable)?;
        Ok(())
    }
}

/// A held Postgres lease: renewed until dropped, then released if still this holder's.
struct PostgresLease {
    store: PostgresStore,
    key: String,
    token: String,
    renewal: tokio::task::JoinHandle<()>,
}

impl Drop for PostgresLease {
    fn drop(&mut self) {
        self.renewal.abort();
        // Released with whatever else was dropped meanwhile, in one statement.
        let _ = self.store.release.send((std::mem::take(&mut self.key), std::mem::take(&mut self.token)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::conformance;

    /// The Postgres the tests use (`TOOLGATE_TEST_POSTGRES_URL`); without it they are
    /// skipped, saying so.
    fn test_url() -> Option<String> {
        let url = std::env::var("TOOLGATE_TEST_POSTGRES_URL").ok();
        if url.is_none() {
            eprintln!("skipped: set TOOLGATE_TEST_POSTGRES_URL to run the Postgres store's tests");
        }
        url
    }

    /// A store in a schema of its own, so that tests (and their runs) never share records.
    async fn fresh_store(url: &str) -> PostgresStore {
        let schema = format!("toolgate_test_{}", uuid::Uuid::new_v4().simple());
        PostgresStore::connect_in_schema(url, &schema).await.expect("connect")
    }

    #[tokio::test]
    async fn passes_the_store_conformance_suite() {
        let Some(url) = test_url() else { return };
        let store = fresh_store(&url).await;
        conformance::check(&store).await;
        conformance::check_live_counts(&store).await;
    }

    #[tokio::test]
    async fn a_holder_that_lost_its_lease_cannot_commit() {
        let Some(url) = test_url() else { return };
        let store = fresh_store(&url).await.with_lease_ttl(Duration::from_millis(300));
        let key = StoreKey::instance("invoice", "lost-lease");
        let held = store.lease(&key).await.unwrap();
        // Paused past its time: renewals stop, another holder takes the lease.
        let expire = format!("DELETE FROM \"{}\".leases WHERE token = $1", store.sql.schema);
        store.client().await.unwrap().execute(&expire, &[&held.fence().unwrap()]).await.unwrap();
        let other = tokio::time::timeout(Duration::from_secs(2), store.lease(&key)).await.expect("taken over").unwrap();
        let next = Snapshot::default().with_state("invoice", "paid");
        assert_eq!(store.commit_leased(&key, 0, &next, &held).await, Err(StoreError::LeaseLost));
        assert_eq!(store.commit_leased(&key, 0, &next, &other).await, Ok(1));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_schema_an_older_toolgate_wrote_is_migrated_and_keeps_its_records() {
        let Some(url) = test_url() else { return };
        // The schema as the first version left it, with a record in it.
        let schema = format!("toolgate_test_{}", uuid::Uuid::new_v4().simple());
        let (client, connection) = tokio_postgres::connect(&url, NoTls).await.unwrap();
        tokio::spawn(connection);
        let s = format!("\"{schema}\"");
        client
            .batch_execute(&format!(
                "CREATE SCHEMA {s}; CREATE TABLE {s}.migrations (version bigint PRIMARY KEY, toolgate text NOT NULL, \
                 applied_at timestamptz NOT NULL DEFAULT now()); INSERT INTO {s}.migrations VALUES (1, '0.0.1'); {}",
                MIGRATIONS[0].replace("{s}", &s)
            ))
            .await
            .unwrap();
        let key = StoreKey::instance("invoice", "INV-1");
        let old = r#"{"states":{"invoice":"approved"},"active_domain":null,"version":0,"updated_at_ms":1}"#;
        client
            .execute(
                &format!("INSERT INTO {s}.records (key, version, snapshot) VALUES ($1, 4, $2)"),
                &[&key.as_str(), &old],
            )
            .await
            .unwrap();

        let store = PostgresStore::connect_in_schema(&url, &schema).await.expect("migrated");
        let applied: Vec<i64> = client
            .query(&format!("SELECT version FROM {s}.migrations ORDER BY version"), &[])
            .await
            .unwrap()
            .iter()
            .map(|row| row.get(0))
            .collect();
        assert_eq!(applied, (1..=POSTGRES_SCHEMA_VERSION).collect::<Vec<_>>());
        let before = store.load(&key).await.unwrap();
        assert_eq!((before.version, before.states["invoice"].as_str()), (4, "approved"));
        let next = before.with_state("invoice", "discharged");
        assert_eq!(store.compare_and_set(&key, 4, &next).await.unwrap(), 5);
        client.batch_execute(&format!("DROP SCHEMA {s} CASCADE")).await.unwrap();
    }

    #[tokio::test]
    async fn a_newer_schema_is_refused_naming_both_versions() {
        let Some(url) = test_url() else { return };
        let store = fresh_store(&url).await;
        let schema = store.sql.schema.clone();
        let client = store.client().await.unwrap();
        client
            .execute(
                &format!("INSERT INTO \"{schema}\".migrations (version, toolgate) VALUES ($1, '9.9.9')"),
                &[&(POSTGRES_SCHEMA_VERSION + 1)],
            )
            .await
            .unwrap();
        let refused = PostgresStore::connect_in_schema(&url, &schema).await.expect_err("a newer schema");
        let message = refused.to_string();
        assert!(message.contains(&format!("version {}", POSTGRES_SCHEMA_VERSION + 1)), "{message}");
        assert!(message.contains("9.9.9") && message.contains(env!("CARGO_PKG_VERSION")), "{message}");
    }

    #[tokio::test]
    async fn commits_are_announced_to_every_store_on_the_schema() {
        let Some(url) = test_url() else { return };
        let store = fresh_store(&url).await;
        let schema = store.sql.schema.clone();
        let replica = PostgresStore::connect_in_schema(&url, &schema).await.unwrap();
        let mut heard = replica.commits().unwrap();
        let key = StoreKey::instance("invoice", "announced");
        // The replica's LISTEN may not be in place yet: commit until it hears one.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        let mut version = 0;
        loop {
            version =
                store.compare_and_set(&key, version, &Snapshot::default().with_state("invoice", "x")).await.unwrap();
            if let Ok(Ok(announced)) = tokio::time::timeout(Duration::from_millis(200), heard.recv()).await {
                assert_eq!(announced, key);
                break;
            }
            assert!(tokio::time::Instant::now() < deadline, "no commit was announced");
        }
    }
}
