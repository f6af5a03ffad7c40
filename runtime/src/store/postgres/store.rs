//! [`PostgresStore`]: the struct, connecting, leases, and the [`FlowStore`] it is.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use deadpool_postgres::{GenericClient, Manager, ManagerConfig, Pool, RecyclingMethod};
use tokio_postgres::NoTls;

use super::announce::announce_commits;
use super::batch::{self, Announcer, Batcher, LeaseRequest, Read, ReadAnswer, Taken};
use super::migrations::migrate;
use super::sql::Sql;
use super::sweep;
use super::transaction::PostgresTransaction;
use crate::store::{
    Capabilities, Counts, FlowLease, FlowStore, Histories, HistoryEntry, HistoryRetention, Hold, InstanceCounts,
    LiveRecords, RateWindows, RecordWrite, Replicas, Snapshot, Step, StoreError, StoreKey, StoreTransaction,
    YourTables, counts, now_ms, unavailable,
};

/// The schema toolgate's tables live in, unless [`PostgresStore::connect_in_schema`] names
/// another.
pub const DEFAULT_POSTGRES_SCHEMA: &str = "toolgate";

/// How long a lease lives unless renewed (renewed every third of it while held).
const LEASE_TTL: Duration = Duration::from_secs(10);

/// How often a waiter asks for a held lease again.
const LEASE_POLL: Duration = Duration::from_millis(5);

/// How the pool's connections plan toolgate's statements: once (generic plans), by their
/// indexes (a scan of a whole table is never what they want), and never compiled (JIT).
/// A plan's cost is an estimate, which a disabled scan (`enable_seqscan=off` adds ten
/// billion to it) or a table's stale statistics push past `jit_above_cost`: Postgres
/// then compiled the statement anew at every run, 80–250 ms for a read of a few hundred
/// rows that takes 2 ms (the sweep's due read, its expired leases' delete: `auto_explain`
/// through a sweep of 100,000, `BENCHMARKS.md`).
const OUR_SETTINGS: &str = "-c plan_cache_mode=force_generic_plan -c enable_seqscan=off -c jit=off";

/// What a handler's transaction runs after its `BEGIN`: its own statements planned as
/// Postgres plans by default, until toolgate's writes at its commit
/// ([`OUR_PLANS`](super::transaction::OUR_PLANS)).
const YOUR_PLANS: &str = "SET LOCAL plan_cache_mode = auto; SET LOCAL enable_seqscan = on; SET LOCAL jit = on";

/// Connections in the pool.
const POOL_SIZE: usize = 16;

/// Flows, instances, challenges, idempotency records, histories, leases, rate-limit
/// windows and due timers in Postgres, shared by every replica that points at the same
/// database and schema. Cheap to clone.
#[derive(Clone)]
pub struct PostgresStore {
    pool: Pool,
    pub(super) sql: Arc<Sql>,
    /// Every commit any replica makes, as the schema's channel announces it.
    commits: tokio::sync::broadcast::Sender<StoreKey>,
    /// Announces commits made in a handler's transaction, after they committed.
    announce: Announcer,
    /// The batches of reads (loads, leases, releases) and of commits ([`batch`]).
    reads: Batcher<Read, ReadAnswer>,
    writes: Batcher<RecordWrite, i64>,
    lease_ttl: Duration,
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStore").field("schema", &self.sql.schema).finish_non_exhaustive()
    }
}

/// Whether Postgres can hold `key`: its `text` holds no NUL character, and a statement
/// with one fails whole — in a batch, for every call in it. So such a key (an id a client
/// sent) never joins a batch: it loads as absent, and cannot be leased or written.
fn storable(key: &StoreKey) -> Result<(), StoreError> {
    match key.as_str().contains('\0') {
        true => Err(unavailable("Postgres cannot hold a key with a NUL character")),
        false => Ok(()),
    }
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
        let mut config: tokio_postgres::Config = url.parse().map_err(unavailable)?;
        // toolgate's statements are prepared once per connection and planned once
        // (generic plans): planning one afresh for each call cost more than running it.
        // Each finds its rows by key, through an index, at any size: a plan made while the
        // tables were empty (a new schema) would scan them whole, for as long as the
        // connection lives. A handler's transaction plans its own statements as Postgres
        // would by default ([`YOUR_PLANS`]).
        let options = format!("{} {OUR_SETTINGS}", config.get_options().unwrap_or_default());
        config.options(options.trim());
        let manager = Manager::from_config(config, NoTls, ManagerConfig { recycling_method: RecyclingMethod::Fast });
        let pool = Pool::builder(manager).max_size(POOL_SIZE).build().map_err(unavailable)?;
        migrate(&pool, schema).await?;
        let sql = Arc::new(Sql::new(schema));
        let (commits, _) = tokio::sync::broadcast::channel(1024);
        tokio::spawn(announce_commits(url.to_string(), sql.channel.clone(), commits.downgrade()));
        tokio::spawn(sweep::periodically(pool.clone(), sql.clone(), commits.downgrade()));
        let reads = batch::reads(pool.clone(), sql.clone());
        let announce = reads.announcer();
        let writes = batch::commits(pool.clone(), sql.clone(), announce.clone());
        Ok(Self { pool, sql, commits, announce, reads, writes, lease_ttl: LEASE_TTL })
    }

    /// Leases live `ttl` unless renewed (at least 300 ms).
    pub fn with_lease_ttl(mut self, ttl: Duration) -> Self {
        self.lease_ttl = ttl.max(Duration::from_millis(300));
        self
    }

    /// Deletes, now, the records that expired or were removed, with their histories, and
    /// leases abandoned a minute ago or more: one pass of the sweep every store runs as it
    /// connects and then every 10 seconds, at most 10 statements of 1,000 records each.
    /// Answers how many records it deleted.
    pub async fn sweep(&self) -> Result<u64, StoreError> {
        sweep::sweep(&self.pool, &self.sql).await
    }

    pub(super) async fn client(&self) -> Result<deadpool_postgres::Object, StoreError> {
        self.pool.get().await.map_err(unavailable)
    }

    /// Compare-and-set, in the next batch's transaction; with `fence`, only while the
    /// key's lease holds it; with `entry`, appending it to the key's history (trimmed by
    /// the retention).
    async fn write(
        &self,
        key: &StoreKey,
        expected_version: u64,
        next: &Snapshot,
        fence: Option<&str>,
        entry: Option<(&HistoryEntry, HistoryRetention)>,
    ) -> Result<u64, StoreError> {
        storable(key)?;
        let write = RecordWrite {
            key: key.clone(),
            expected: expected_version,
            next: next.clone(),
            fence: fence.map(str::to_string),
            entry: entry.map(|(entry, retention)| (entry.clone(), retention)),
            if_absent: false,
        };
        let code = self.writes.call(write).await?;
        Ok(batch::outcome(expected_version, code)?.unwrap_or_default())
    }

    /// Takes `key`'s lease, with the record as committed once it is held: waits until the
    /// row is free (or its holder's time ran out), asking again every [`LEASE_POLL`], then
    /// renews it until dropped.
    async fn take_lease_and_load(&self, key: &StoreKey) -> Result<(FlowLease, Snapshot), StoreError> {
        storable(key)?;
        let token = uuid::Uuid::new_v4().simple().to_string();
        loop {
            if let (Some(lease), stored) = self.try_lease_and_load(key, token.clone()).await? {
                return Ok((lease, stored));
            }
            // The caller bounds the wait (dropping this future gives up the place).
            tokio::time::sleep(LEASE_POLL).await;
        }
    }

    /// One try at `key`'s lease (as `token`'s holder), and the record as committed: read
    /// under the lease when it was taken.
    async fn try_lease_and_load(
        &self,
        key: &StoreKey,
        token: String,
    ) -> Result<(Option<FlowLease>, Snapshot), StoreError> {
        let ttl_ms = self.lease_ttl.as_millis() as i64;
        match self.reads.call(Read::Lease(LeaseRequest { key: key.clone(), token, ttl_ms })).await? {
            ReadAnswer::Leased(taken, stored) => Ok((taken.map(|taken| self.held(taken)), batch::snapshot(stored)?)),
            _ => Err(unavailable("the Postgres store answered a lease with something else")),
        }
    }

    /// Takes `key`'s lease from whoever holds it, at once.
    async fn take_over_lease(&self, key: &StoreKey) -> Result<FlowLease, StoreError> {
        storable(key)?;
        let token = uuid::Uuid::new_v4().simple().to_string();
        let ttl_ms = self.lease_ttl.as_millis() as i64;
        let client = self.client().await?;
        let statement = client.prepare_cached(&self.sql.take_over_lease).await.map_err(unavailable)?;
        client.execute(&statement, &[&key.as_str(), &token, &ttl_ms]).await.map_err(unavailable)?;
        Ok(self.held(self.reads.taken(key.as_str().to_string(), token)))
    }

    /// The lease `taken` holds, renewed until dropped.
    fn held(&self, taken: Taken) -> FlowLease {
        let ttl_ms = self.lease_ttl.as_millis() as i64;
        let (store, renewed_key, renewed_token) = (self.clone(), taken.key.clone(), taken.token.clone());
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
        let fence = taken.token.clone();
        FlowLease::fenced(PostgresLease { _taken: taken, renewal }, fence)
    }
}

#[async_trait]
impl FlowStore for PostgresStore {
    async fn load(&self, key: &StoreKey) -> Result<Snapshot, StoreError> {
        if storable(key).is_err() {
            // No record can have it.
            return Ok(Snapshot::default());
        }
        match self.reads.call(Read::Load(key.clone())).await? {
            ReadAnswer::Loaded(stored) => batch::snapshot(stored),
            _ => Err(unavailable("the Postgres store answered a load with something else")),
        }
    }

    async fn begin(&self, key: &StoreKey, hold: Hold) -> Result<Step, StoreError> {
        match hold {
            Hold::Wait => {
                let (lease, loaded) = self.take_lease_and_load(key).await?;
                Ok(Step { loaded, lease: Some(lease) })
            }
            Hold::IfFree => {
                if storable(key).is_err() {
                    // No record can have it, nor a lease: the call's commit refuses it.
                    return Ok(Step { loaded: Snapshot::default(), lease: None });
                }
                let token = uuid::Uuid::new_v4().simple().to_string();
                let (lease, loaded) = self.try_lease_and_load(key, token).await?;
                Ok(Step { loaded, lease })
            }
            Hold::TakeOver => {
                let lease = self.take_over_lease(key).await?;
                Ok(Step { loaded: self.load(key).await?, lease: Some(lease) })
            }
        }
    }

    async fn commit(
        &self,
        key: &StoreKey,
        expected_version: u64,
        next: &Snapshot,
        lease: Option<&FlowLease>,
        entry: Option<(&HistoryEntry, HistoryRetention)>,
    ) -> Result<u64, StoreError> {
        // A lease of this store always has its token; one without is not this store's.
        let fence = match lease {
            Some(lease) => Some(lease.fence().ok_or(StoreError::LeaseLost)?),
            None => None,
        };
        self.write(key, expected_version, next, fence, entry).await
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

    async fn close(&self) -> Result<(), StoreError> {
        // The releases of dropped leases travel in the reads' batches, in order, on one
        // connection: once a read sent after them is answered, they are done.
        self.reads.call(Read::Load(StoreKey::readiness_probe())).await.map(|_| ())
    }

    fn capabilities(&self) -> Capabilities<'_> {
        Capabilities {
            replicas: Some(self),
            history: Some(self),
            windows: Some(self),
            tables: Some(self),
            counts: Some(self),
        }
    }
}

impl Replicas for PostgresStore {
    fn commits(&self) -> tokio::sync::broadcast::Receiver<StoreKey> {
        self.commits.subscribe()
    }
}

#[async_trait]
impl Histories for PostgresStore {
    async fn history(&self, key: &StoreKey) -> Result<Vec<HistoryEntry>, StoreError> {
        let client = self.client().await?;
        let statement = client.prepare_cached(&self.sql.history).await.map_err(unavailable)?;
        let rows = client.query(&statement, &[&key.as_str(), &(now_ms() as i64)]).await.map_err(unavailable)?;
        let entries = rows.iter().map(|row| serde_json::from_str(row.get::<_, &str>(0))).collect::<Result<_, _>>();
        entries.map_err(unavailable)
    }
}

#[async_trait]
impl YourTables for PostgresStore {
    async fn transaction(&self) -> Result<Box<dyn StoreTransaction>, StoreError> {
        let client = self.client().await?;
        client.batch_execute(&format!("BEGIN; {YOUR_PLANS}")).await.map_err(unavailable)?;
        let announce = self.announce.clone();
        Ok(Box::new(PostgresTransaction { sql: self.sql.clone(), announce, client: Some(client), lent: false }))
    }
}

#[async_trait]
impl Counts for PostgresStore {
    async fn live(&self) -> Result<LiveRecords, StoreError> {
        let client = self.client().await?;
        let rows = client.query(&self.sql.live_keys, &[&(now_ms() as i64)]).await.map_err(unavailable)?;
        let mut live = LiveRecords::default();
        for row in &rows {
            live.count(row.get::<_, &str>(0));
        }
        Ok(live)
    }

    /// Counted over the live records' keys at each scrape (every replica counts the same
    /// records: aggregate with `max`, not `sum`).
    async fn instances(&self, scope: &str, machine: &str) -> Result<InstanceCounts, StoreError> {
        let (low, high) = counts::range(scope, machine);
        let client = self.client().await?;
        let statement = client.prepare_cached(&self.sql.count_instances).await.map_err(unavailable)?;
        let rows = client.query(&statement, &[&low, &high]).await.map_err(unavailable)?;
        Ok(counts::tally(&low, rows.iter().map(|row| (row.get(0), row.get(1)))))
    }
}

#[async_trait]
impl RateWindows for PostgresStore {
    /// A sliding-window log on the database's clock, one transaction under an advisory
    /// lock on the window: at most `calls` in every window of `per_ms`, and the exact wait
    /// when over.
    async fn spend(&self, window: &str, calls: u32, per_ms: u64) -> Result<Result<String, u64>, StoreError> {
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
        Ok(outcome)
    }

    async fn refund(&self, window: &str, ticket: &str) -> Result<(), StoreError> {
        let client = self.client().await?;
        client.execute(&self.sql.window_refund, &[&window, &ticket]).await.map_err(unavailable)?;
        Ok(())
    }
}

/// A held Postgres lease: renewed until dropped, then released if still this holder's.
struct PostgresLease {
    _taken: Taken,
    renewal: tokio::task::JoinHandle<()>,
}

impl Drop for PostgresLease {
    fn drop(&mut self) {
        // The renewals stop; the lease is released as `Taken` drops.
        self.renewal.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::super::migrations::{MIGRATIONS, POSTGRES_SCHEMA_VERSION};
    use super::super::testing::{fresh_store, test_url};
    use super::*;
    use crate::store::conformance;

    #[tokio::test]
    async fn passes_the_store_conformance_suite() {
        let Some(url) = test_url() else { return };
        let store = fresh_store(&url).await;
        conformance::check(&store).await;
        conformance::check_live_counts(&store).await;
        conformance::check_instance_counts(&store).await;
    }

    /// toolgate's statements are planned once, by their indexes, and never compiled; a
    /// handler's transaction plans its own as Postgres does by default.
    #[tokio::test]
    async fn our_statements_are_never_compiled_and_yours_are_planned_as_postgres_plans() {
        let Some(url) = test_url() else { return };
        let store = fresh_store(&url).await;
        let settings = "SELECT current_setting('jit') || ' ' || current_setting('enable_seqscan') || ' ' \
                        || current_setting('plan_cache_mode') AS planned";
        let ours: String = store.client().await.unwrap().query_one(settings, &[]).await.unwrap().get(0);
        assert_eq!(ours, "off off force_generic_plan");
        let mut yours = store.transaction().await.unwrap();
        let rows = yours.query(settings, &[]).await.unwrap();
        assert_eq!(rows[0]["planned"], "on on auto");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_key_postgres_cannot_hold_fails_its_own_call_not_its_batch() {
        let Some(url) = test_url() else { return };
        let store = fresh_store(&url).await;
        let next = Snapshot::default().with_state("invoice", "draft");
        let calls: Vec<_> = (0..32)
            .map(|n| {
                let store = store.clone();
                let next = next.clone();
                tokio::spawn(async move {
                    let fine = StoreKey::instance("invoice", &format!("INV-{n}"));
                    let nul = StoreKey::instance("invoice", &format!("INV-{n}\0"));
                    let (loaded, leased, written, committed) = tokio::join!(
                        store.load(&nul),
                        store.begin(&nul, Hold::Wait),
                        store.commit(&nul, 0, &next, None, None),
                        store.commit(&fine, 0, &next, None, None),
                    );
                    assert_eq!(loaded.unwrap().version, 0);
                    assert!(matches!(leased, Err(StoreError::Unavailable(_))));
                    assert!(matches!(written, Err(StoreError::Unavailable(_))));
                    committed.unwrap()
                })
            })
            .collect();
        for call in calls {
            assert_eq!(call.await.unwrap(), 1, "a call beside a key Postgres cannot hold must commit");
        }
    }

    /// Two replicas whose batches take and release leases of the same keys at once never
    /// deadlock: both lock the rows in key order. (A release that locked them in no set
    /// order deadlocked with the other replica's take: found with three replicas by
    /// `benches/scale`'s backlog.)
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn replicas_taking_and_releasing_the_same_leases_at_once_never_deadlock() {
        let Some(url) = test_url() else { return };
        let one = fresh_store(&url).await;
        let other = PostgresStore::connect_in_schema(&url, &one.sql.schema).await.expect("a second replica");
        let until = std::time::Instant::now() + Duration::from_secs(3);
        let tasks: Vec<_> = (0..48)
            .map(|n| {
                let store = if n % 2 == 0 { one.clone() } else { other.clone() };
                tokio::spawn(async move {
                    let mut failures = Vec::new();
                    let mut turn = n;
                    while std::time::Instant::now() < until {
                        turn += 7;
                        let key = StoreKey::instance("invoice", &format!("INV-{}", turn % 6));
                        match tokio::time::timeout(Duration::from_secs(2), store.begin(&key, Hold::Wait)).await {
                            Ok(Ok(step)) => drop(step),
                            Ok(Err(error)) => failures.push(error.to_string()),
                            Err(_) => failures.push(format!("{key}: no lease within 2 s (one never released)")),
                        }
                    }
                    failures
                })
            })
            .collect();
        let mut failures = Vec::new();
        for task in tasks {
            failures.extend(task.await.unwrap());
        }
        assert!(failures.is_empty(), "{} failed, the first: {}", failures.len(), failures[0]);
    }

    #[tokio::test]
    async fn a_holder_that_lost_its_lease_cannot_commit() {
        let Some(url) = test_url() else { return };
        let store = fresh_store(&url).await.with_lease_ttl(Duration::from_millis(300));
        let key = StoreKey::instance("invoice", "lost-lease");
        let held = store.begin(&key, Hold::Wait).await.unwrap().lease.unwrap();
        // Paused past its time: renewals stop, another holder takes the lease.
        let expire = format!("DELETE FROM \"{}\".leases WHERE token = $1", store.sql.schema);
        store.client().await.unwrap().execute(&expire, &[&held.fence().unwrap()]).await.unwrap();
        let other =
            tokio::time::timeout(Duration::from_secs(2), store.begin(&key, Hold::Wait)).await.expect("taken over");
        let other = other.unwrap().lease.unwrap();
        let next = Snapshot::default().with_state("invoice", "paid");
        assert_eq!(store.commit(&key, 0, &next, Some(&held), None).await, Err(StoreError::LeaseLost));
        assert_eq!(store.commit(&key, 0, &next, Some(&other), None).await, Ok(1));
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
                MIGRATIONS[0].sql.replace("{s}", &s)
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
        // The instance stored before counters existed is counted, and moves with its commits.
        let counted = |state: &str| {
            let state = state.to_string();
            let store = store.clone();
            async move { store.instances("", "invoice").await.unwrap().states.get(&state).copied() }
        };
        assert_eq!(counted("approved").await, Some(1));
        let next = before.with_state("invoice", "discharged");
        assert_eq!(store.commit(&key, 4, &next, None, None).await.unwrap(), 5);
        assert_eq!((counted("approved").await, counted("discharged").await), (None, Some(1)));
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
        let mut heard = replica.commits();
        let key = StoreKey::instance("invoice", "announced");
        // The replica's LISTEN may not be in place yet: commit until it hears one.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        let mut version = 0;
        loop {
            version =
                store.commit(&key, version, &Snapshot::default().with_state("invoice", "x"), None, None).await.unwrap();
            if let Ok(Ok(announced)) = tokio::time::timeout(Duration::from_millis(200), heard.recv()).await {
                assert_eq!(announced, key);
                break;
            }
            assert!(tokio::time::Instant::now() < deadline, "no commit was announced");
        }
    }
}
