//! [`RedisStore`]: the struct, connecting, leases, and the [`FlowStore`] it is.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use redis::aio::ConnectionManager;

use super::announce::announce_commits;
use super::durability::{Marker, Persistence, RedisDurability};
use super::keys::{DUE_KEY, counts_key, history_key, lease_key, record_key, window_key};
use super::read;
use super::scripts::Scripts;
use crate::store::{
    Capabilities, Counts, FlowLease, FlowStore, Histories, HistoryEntry, HistoryRetention, Hold, InstanceCounts,
    LiveRecords, RateWindows, Replicas, Snapshot, Step, StoreError, StoreKey, counts, unavailable,
};

/// How long a lease lives unless renewed; renewed every third of it while held.
pub const LEASE_TTL: Duration = Duration::from_secs(10);

/// The shortest lease time accepted: renewals every third of it must reach Redis in time.
pub const MIN_LEASE_TTL: Duration = Duration::from_millis(300);

/// How long the store waits for Redis to answer a command before the call fails
/// (`STORE_UNAVAILABLE`, or an unknown outcome for a commit).
const RESPONSE_TIMEOUT: Duration = Duration::from_secs(5);

/// How long closing waits for the last leases' releases.
const CLOSE_PATIENCE: Duration = Duration::from_secs(5);

/// How often a waiter asks for a held lease again.
const LEASE_POLL: Duration = Duration::from_millis(5);

/// Flows, instances, challenges and idempotency records in Redis, shared by every replica
/// that points at the same server and database. Cheap to clone.
#[derive(Clone)]
pub struct RedisStore {
    pub(super) connection: ConnectionManager,
    pub(super) scripts: Arc<Scripts>,
    /// Every commit any replica makes, as the `toolgate:commits` channel announces it.
    pub(super) commits: tokio::sync::broadcast::Sender<StoreKey>,
    /// How long a lease lives unless renewed.
    pub(super) lease_ttl: Duration,
    /// What a write waits for before it is acknowledged.
    pub(super) durability: RedisDurability,
    /// The marker of the data this store serves.
    pub(super) marker: Arc<Marker>,
    /// The releases of dropped leases still on their way ([`FlowStore::close`] waits for
    /// them).
    pub(super) releases: tokio_util::task::TaskTracker,
}

/// How to connect a [`RedisStore`]: [`RedisStore::builder`].
#[derive(Debug, Clone)]
pub struct RedisStoreBuilder {
    pub(super) url: String,
    pub(super) ca_pem: Option<Vec<u8>>,
    pub(super) accept_volatile: bool,
}

impl RedisStoreBuilder {
    /// Trusts only the certificate authorities in `ca_pem` (PEM) for a `rediss://` URL: a
    /// Redis whose certificate a private authority signed.
    pub fn trusting(mut self, ca_pem: &[u8]) -> Self {
        self.ca_pem = Some(ca_pem.to_vec());
        self
    }

    /// Connects to a Redis that would lose acknowledged writes when it restarts (no
    /// append-only file synced on each write, no replica) instead of refusing it: for
    /// development and tests, or state you can afford to lose.
    pub fn accept_volatile(mut self) -> Self {
        self.accept_volatile = true;
        self
    }

    /// Connects, reads what Redis keeps across a restart (refusing a Redis that would
    /// forget, unless accepted), and claims or checks the data's marker.
    pub async fn connect(self) -> Result<RedisStore, StoreError> {
        RedisStore::with_client(self.client()?, self.accept_volatile).await
    }

    /// The client for the URL, over TLS for `rediss://`.
    pub(super) fn client(&self) -> Result<redis::Client, StoreError> {
        Ok(match (&self.ca_pem, self.url.starts_with("rediss://")) {
            (Some(_), false) => {
                return Err(StoreError::Unavailable(
                    "a certificate authority to trust needs a TLS URL (`rediss://`)".into(),
                ));
            }
            #[cfg(feature = "redis-tls")]
            (ca_pem, true) => {
                crate::tls::install_crypto_provider();
                match ca_pem {
                    Some(ca_pem) => {
                        let certificates = redis::TlsCertificates { client_tls: None, root_cert: Some(ca_pem.clone()) };
                        redis::Client::build_with_tls(self.url.as_str(), certificates).map_err(unavailable)?
                    }
                    None => redis::Client::open(self.url.as_str()).map_err(unavailable)?,
                }
            }
            #[cfg(not(feature = "redis-tls"))]
            (_, true) => return Err(without_tls()),
            (None, false) => redis::Client::open(self.url.as_str()).map_err(unavailable)?,
        })
    }
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore").finish_non_exhaustive()
    }
}

/// `rediss://` in a build without the `redis-tls` feature.
#[cfg(not(feature = "redis-tls"))]
fn without_tls() -> StoreError {
    StoreError::Unavailable("this server was built without Redis over TLS (toolgate's `redis-tls` feature)".into())
}

impl RedisStore {
    /// Connects to `url`: `redis://HOST:PORT/DB`, or `rediss://HOST:PORT/DB` for TLS,
    /// verified against the system's certificate authorities. The connection reconnects
    /// by itself after a failure; calls made meanwhile get `STORE_UNAVAILABLE`.
    /// `rediss://` needs the `redis-tls` feature; without it the URL is refused, saying so.
    /// A Redis that would forget acknowledged writes when it restarts is refused, naming the
    /// setting to change ([`RedisStoreBuilder::accept_volatile`] accepts it).
    pub async fn connect(url: &str) -> Result<Self, StoreError> {
        Self::builder(url).connect().await
    }

    /// Connects to the `rediss://` `url` trusting only the certificate authorities in
    /// `ca_pem` (PEM): a Redis whose certificate a private authority signed.
    pub async fn connect_trusting(url: &str, ca_pem: &[u8]) -> Result<Self, StoreError> {
        Self::builder(url).trusting(ca_pem).connect().await
    }

    /// How to connect to `url`, when [`RedisStore::connect`]'s defaults do not fit.
    pub fn builder(url: &str) -> RedisStoreBuilder {
        RedisStoreBuilder { url: url.to_string(), ca_pem: None, accept_volatile: false }
    }

    pub(super) async fn with_client(client: redis::Client, accept_volatile: bool) -> Result<Self, StoreError> {
        let unreachable = |error: StoreError| match error {
            StoreError::Unavailable(error) => StoreError::Unavailable(format!("cannot reach Redis: {error}")),
            other => other,
        };
        // Redis syncs its file before it answers a write (`appendfsync always`): a busy disk
        // can hold an answer longer than the client's default half second.
        let config = redis::aio::ConnectionManagerConfig::new().set_response_timeout(Some(RESPONSE_TIMEOUT));
        let connected = ConnectionManager::new_with_config(client.clone(), config).await;
        let mut connection = connected.map_err(unavailable).map_err(unreachable)?;
        let persistence = Persistence::read(&mut connection).await.map_err(unreachable)?;
        let durability = persistence.durability(accept_volatile).map_err(StoreError::Unavailable)?;
        if durability == RedisDurability::Volatile {
            tracing::warn!("this Redis loses what it holds when it restarts, and the server was told to accept it");
        }
        let marker = Marker::claim(&mut connection, durability).await?;
        super::migrate::migrate(&mut connection).await?;
        marker.watch(connection.clone());
        let scripts = Scripts::new();
        let (commits, _) = tokio::sync::broadcast::channel(1024);
        tokio::spawn(announce_commits(client, commits.downgrade()));
        Ok(Self {
            connection,
            scripts: Arc::new(scripts),
            commits,
            lease_ttl: LEASE_TTL,
            durability,
            marker,
            releases: Default::default(),
        })
    }

    /// What this store waits for before it acknowledges a write.
    pub fn durability(&self) -> RedisDurability {
        self.durability
    }

    /// The same store, its leases living `ttl` unless renewed (default [`LEASE_TTL`], at
    /// least [`MIN_LEASE_TTL`]): how long a crashed replica can keep an instance from the
    /// others.
    pub fn with_lease_ttl(mut self, ttl: Duration) -> Self {
        self.lease_ttl = ttl.max(MIN_LEASE_TTL);
        self
    }

    /// Takes `key`'s lease and reads its record under it, in one round trip a try, as
    /// `hold` says: waits until `SET NX` succeeds ([`Hold::Wait`]), sets it over whoever
    /// holds it ([`Hold::TakeOver`]), or tries once and reads the record as committed if
    /// someone holds it ([`Hold::IfFree`]). A lease taken is renewed until dropped.
    async fn lease_and_load(&self, key: &StoreKey, hold: Hold) -> Result<Step, StoreError> {
        self.marker.check()?;
        // Released if this future is dropped from here on: a `SET` may be on its way.
        let held = Held { store: self.clone(), key: lease_key(key), token: uuid::Uuid::new_v4().simple().to_string() };
        let (lease, token) = (&held.key, &held.token);
        let ttl_ms = self.lease_ttl.as_millis() as u64;
        let mut connection = self.connection.clone();
        let from_holder = hold == Hold::TakeOver;
        let (before, read) = loop {
            let before = self.marker.clock.highest();
            let (taken, read) = read::lease_and_load(&mut connection, key, (lease, token, ttl_ms), from_holder).await?;
            match (taken, hold) {
                (true, _) => break (before, read),
                (false, Hold::IfFree) => {
                    held.not_taken();
                    return Ok(Step { loaded: self.loaded(before, read)?, lease: None });
                }
                // The caller bounds the wait (dropping this future gives up the place).
                (false, _) => tokio::time::sleep(LEASE_POLL).await,
            }
        };
        let loaded = self.loaded(before, read)?;
        let (store, renewed_key, renewed_token) = (self.clone(), lease.clone(), token.clone());
        let renewal = tokio::spawn(async move {
            let mut connection = store.connection.clone();
            loop {
                tokio::time::sleep(store.lease_ttl / 3).await;
                let renewed: redis::RedisResult<u8> = store
                    .scripts
                    .renew
                    .key(&renewed_key)
                    .arg(&renewed_token)
                    .arg(store.lease_ttl.as_millis() as u64)
                    .invoke_async(&mut connection)
                    .await;
                if !matches!(renewed, Ok(1)) {
                    tracing::warn!(lease = %renewed_key, "a lease could not be renewed; its commit will be refused if another holder wrote first");
                    return;
                }
            }
        });
        let fence = token.clone();
        Ok(Step { loaded, lease: Some(FlowLease::fenced(RedisLease { _held: held, renewal }, fence)) })
    }

    /// The snapshot a read found (`read::load`), once the marker and the clock read with it
    /// say it can be trusted; `before` is the highest clock value seen before the read.
    fn loaded(&self, before: u64, (record, marker, clock, floor): read::Loaded) -> Result<Snapshot, StoreError> {
        self.marker.read(before, marker.as_deref(), clock)?;
        match record {
            (Some(version), Some(text)) => {
                let snapshot: Snapshot = serde_json::from_str(&text).map_err(unavailable)?;
                Ok(Snapshot { version, ..snapshot })
            }
            _ => Ok(read::unused_counter(floor)),
        }
    }
}

#[async_trait]
impl FlowStore for RedisStore {
    async fn load(&self, key: &StoreKey) -> Result<Snapshot, StoreError> {
        self.marker.check()?;
        let before = self.marker.clock.highest();
        let mut connection = self.connection.clone();
        // The marker and the clock read in the same round trip: a record that vanished with
        // the rest of the data, or went back with it, is never read as it is now.
        let read = read::load(&mut connection, key).await?;
        self.loaded(before, read)
    }

    async fn begin(&self, key: &StoreKey, hold: Hold) -> Result<Step, StoreError> {
        self.lease_and_load(key, hold).await
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
            Some(lease) => lease.fence().ok_or(StoreError::LeaseLost)?,
            None => "",
        };
        self.write(key, expected_version, next, fence, entry).await
    }

    async fn remove(&self, key: &StoreKey) -> Result<(), StoreError> {
        let mut connection = self.connection.clone();
        (self.scripts.remove.key(record_key(key)).key(history_key(key)).key(DUE_KEY).arg(key.as_str()))
            .invoke_async::<()>(&mut connection)
            .await
            .map_err(unavailable)
    }

    async fn due(&self, now_ms: u64, limit: usize) -> Result<Vec<StoreKey>, StoreError> {
        let mut connection = self.connection.clone();
        let keys: Vec<String> = redis::cmd("ZRANGE")
            .arg(DUE_KEY)
            .arg("-inf")
            .arg(now_ms)
            .arg("BYSCORE")
            .arg("LIMIT")
            .arg(0)
            .arg(limit)
            .query_async(&mut connection)
            .await
            .map_err(unavailable)?;
        Ok(keys.into_iter().map(StoreKey::from_stored).collect())
    }

    async fn due_changed(&self, key: &StoreKey, due_at_ms: Option<u64>) -> Result<(), StoreError> {
        let mut connection = self.connection.clone();
        let command = match due_at_ms {
            Some(due) => redis::cmd("ZADD").arg(DUE_KEY).arg(due).arg(key.as_str()).clone(),
            None => redis::cmd("ZREM").arg(DUE_KEY).arg(key.as_str()).clone(),
        };
        command.query_async::<()>(&mut connection).await.map_err(unavailable)
    }

    async fn close(&self) -> Result<(), StoreError> {
        self.releases.close();
        tokio::time::timeout(CLOSE_PATIENCE, self.releases.wait())
            .await
            .map_err(|_| unavailable("the releases of the last leases did not finish in time"))
    }

    fn capabilities(&self) -> Capabilities<'_> {
        Capabilities {
            replicas: Some(self),
            history: Some(self),
            windows: Some(self),
            counts: Some(self),
            ..Capabilities::default()
        }
    }
}

impl Replicas for RedisStore {
    fn commits(&self) -> tokio::sync::broadcast::Receiver<StoreKey> {
        self.commits.subscribe()
    }
}

#[async_trait]
impl Histories for RedisStore {
    async fn history(&self, key: &StoreKey) -> Result<Vec<HistoryEntry>, StoreError> {
        let mut connection = self.connection.clone();
        let entries: Vec<String> = self
            .scripts
            .history
            .key(record_key(key))
            .key(history_key(key))
            .invoke_async(&mut connection)
            .await
            .map_err(unavailable)?;
        let entries = entries.iter().map(|text| serde_json::from_str(text)).collect::<Result<_, _>>();
        entries.map_err(unavailable)
    }
}

#[async_trait]
impl Counts for RedisStore {
    async fn instances(&self, scope: &str, machine: &str) -> Result<InstanceCounts, StoreError> {
        let prefix = counts::prefix(scope, machine);
        let mut connection = self.connection.clone();
        let counters: Vec<(String, i64)> =
            redis::cmd("HGETALL").arg(counts_key(&prefix)).query_async(&mut connection).await.map_err(unavailable)?;
        Ok(counts::tally(&prefix, counters))
    }

    /// Counted with `SCAN` over the records' keys: a pass over the keyspace, in batches, for
    /// each scrape (every replica counts the same records: aggregate with `max`, not `sum`).
    async fn live(&self) -> Result<LiveRecords, StoreError> {
        let mut connection = self.connection.clone();
        let mut live = LiveRecords::default();
        let mut cursor: u64 = 0;
        loop {
            let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
                .arg(cursor)
                .arg("MATCH")
                .arg("toolgate:{*}:record")
                .arg("COUNT")
                .arg(1000)
                .query_async(&mut connection)
                .await
                .map_err(unavailable)?;
            for key in &keys {
                let inner = key.strip_prefix("toolgate:{").and_then(|k| k.strip_suffix("}:record"));
                live.count(inner.unwrap_or_default());
            }
            if next == 0 {
                return Ok(live);
            }
            cursor = next;
        }
    }
}

#[async_trait]
impl RateWindows for RedisStore {
    async fn spend(&self, window: &str, calls: u32, per_ms: u64) -> Result<Result<String, u64>, StoreError> {
        let mut connection = self.connection.clone();
        let ticket = uuid::Uuid::new_v4().simple().to_string();
        let (admitted, wait): (u8, u64) = self
            .scripts
            .spend_window
            .key(window_key(window))
            .arg(per_ms.max(1))
            .arg(calls)
            .arg(&ticket)
            .invoke_async(&mut connection)
            .await
            .map_err(unavailable)?;
        Ok(if admitted == 1 { Ok(ticket) } else { Err(wait) })
    }

    async fn refund(&self, window: &str, ticket: &str) -> Result<(), StoreError> {
        let mut connection = self.connection.clone();
        redis::cmd("ZREM")
            .arg(window_key(window))
            .arg(ticket)
            .query_async::<()>(&mut connection)
            .await
            .map_err(unavailable)
    }
}

/// A held Redis lease: renewed until dropped, then released if still this holder's.
struct RedisLease {
    /// Released as the lease is dropped, after its renewals stop.
    _held: Held,
    renewal: tokio::task::JoinHandle<()>,
}

impl Drop for RedisLease {
    fn drop(&mut self) {
        self.renewal.abort();
    }
}

/// A lease's key and token, released when dropped if this holder holds it: from before its
/// `SET` is sent, so that a caller that gives up while the `SET` is on its way leaves no
/// lease held until it expires, to the end of the [`RedisLease`] it becomes.
struct Held {
    store: RedisStore,
    key: String,
    token: String,
}

impl Held {
    /// The `SET` answered that someone else holds the lease: nothing to release.
    fn not_taken(mut self) {
        self.key.clear();
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        let (store, key, token) = (self.store.clone(), std::mem::take(&mut self.key), std::mem::take(&mut self.token));
        if key.is_empty() || tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        let releases = store.releases.clone();
        releases.spawn(async move {
            let mut connection = store.connection.clone();
            let released: redis::RedisResult<u8> =
                store.scripts.release.key(&key).arg(&token).invoke_async(&mut connection).await;
            if let Err(error) = released {
                tracing::warn!(lease = %key, %error, "cannot release a lease; it expires by itself");
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Redis the tests use: `TOOLGATE_TEST_REDIS_URL` (`.ci/run` starts one and sets it).
    fn test_url() -> Option<String> {
        let url = std::env::var("TOOLGATE_TEST_REDIS_URL").ok().filter(|url| !url.is_empty());
        if url.is_none() {
            eprintln!(
                "SKIPPED: the Redis store tests need TOOLGATE_TEST_REDIS_URL (`.ci/run` starts a Redis and sets it)"
            );
        }
        url
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn passes_the_store_conformance_suite() {
        let Some(url) = test_url() else { return };
        let store = RedisStore::connect(&url).await.expect("connect to the test Redis");
        // The suite's own keys only (`conformance-*`): never anything else in that database.
        let mut connection = store.connection.clone();
        let mut keys: Vec<String> = Vec::new();
        for pattern in ["toolgate:{connection:conformance-*}:*", "toolgate:{window:conformance-*}:*"] {
            keys.extend(redis::cmd("KEYS").arg(pattern).query_async::<Vec<String>>(&mut connection).await.unwrap());
        }
        for key in keys {
            redis::cmd("DEL").arg(key).query_async::<()>(&mut connection).await.unwrap();
        }
        crate::store::conformance::check(&store).await;
    }

    /// In a database of its own (the test Redis's 7), which no other test writes to: the
    /// check compares counts of the whole database.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn counts_live_flows_and_instances() {
        let Some(url) = test_url() else { return };
        // `redis://host:port[/db]` → `redis://host:port/7`.
        let (scheme, rest) = url.split_once("://").expect("a Redis URL");
        let host = rest.split('/').next().unwrap_or(rest);
        let store = RedisStore::connect(&format!("{scheme}://{host}/7")).await.expect("connect to the test Redis");
        assert!(store.capabilities().counts.is_some(), "the Redis store counts its live records");
        crate::store::conformance::check_live_counts(&store).await;
        crate::store::conformance::check_instance_counts(&store).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_lease_nobody_releases_expires() {
        let Some(url) = test_url() else { return };
        let store = RedisStore::connect(&url).await.unwrap();
        let key = StoreKey::instance("invoice", "lease-expiry");
        let mut connection = store.connection.clone();
        // A crashed holder: its lease is there, and nobody renews it.
        redis::cmd("SET")
            .arg(lease_key(&key))
            .arg("crashed")
            .arg("PX")
            .arg(200)
            .query_async::<()>(&mut connection)
            .await
            .unwrap();
        let waited = tokio::time::timeout(Duration::from_secs(5), store.begin(&key, Hold::Wait)).await;
        assert!(waited.is_ok(), "the lease of a holder that stopped renewing expires");
    }

    /// A caller that gives up while its lease's `SET` is on its way to Redis (a sweep
    /// bounds its wait to 50 ms) leaves no lease held: the next caller takes it at once,
    /// not once it expires. (One left held for its 10 s makes every call on the instance
    /// wait, past the 5 s a call or an effect's end waits: the likely cause of an attempt
    /// whose end went unrecorded and ran twice on three replicas, `benches/scale` timers.)
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_lease_given_up_on_its_way_is_not_left_held() {
        let Some(url) = test_url() else { return };
        let store = RedisStore::connect(&url).await.unwrap();
        let key = StoreKey::instance("invoice", &format!("given-up-{}", uuid::Uuid::new_v4().simple()));
        for attempt in 0..20 {
            // Polled once (its `SET` sent), then given up.
            let given_up = futures_util::FutureExt::now_or_never(store.begin(&key, Hold::Wait));
            assert!(given_up.is_none(), "a round trip to Redis is not over on its first poll");
            let next = tokio::time::timeout(Duration::from_secs(2), store.begin(&key, Hold::Wait)).await;
            assert!(next.is_ok(), "attempt {attempt}: the lease given up on its way was left held");
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_window_counts_every_replica_and_gives_back_a_refund() {
        let Some(url) = test_url() else { return };
        let (a, b) = (RedisStore::connect(&url).await.unwrap(), RedisStore::connect(&url).await.unwrap());
        let window = format!("test:{}", uuid::Uuid::new_v4().simple());
        let mut tickets = Vec::new();
        for store in [&a, &b, &a] {
            tickets.push(store.spend(&window, 3, 60_000).await.unwrap().expect("within the limit"));
        }
        let wait = b.spend(&window, 3, 60_000).await.unwrap().expect_err("the fourth of 3/minute");
        assert!((59_000..=60_000).contains(&wait), "the oldest call leaves the window in about a minute: {wait}");
        a.refund(&window, &tickets[1]).await.unwrap();
        b.spend(&window, 3, 60_000).await.unwrap().expect("a refunded call frees its place");
    }

    /// A holder that lost its lease (it expired, and another took it) cannot commit, even
    /// over the version it read; the new holder can.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_holder_that_lost_its_lease_cannot_commit() {
        let Some(url) = test_url() else { return };
        let store = RedisStore::connect(&url).await.unwrap();
        let key = StoreKey::instance("invoice", &format!("fencing-{}", uuid::Uuid::new_v4().simple()));
        let v1 =
            store.commit(&key, 0, &Snapshot::default().with_state("invoice", "approved"), None, None).await.unwrap();
        let first = store.begin(&key, Hold::Wait).await.unwrap().lease.unwrap();
        // Its lease expires (as under a long pause) and a second holder takes the key.
        let mut connection = store.connection.clone();
        redis::cmd("DEL").arg(lease_key(&key)).query_async::<()>(&mut connection).await.unwrap();
        let second = store.begin(&key, Hold::Wait).await.unwrap().lease.unwrap();
        let paid = Snapshot::default().with_state("invoice", "discharged");
        assert_eq!(store.commit(&key, v1, &paid, Some(&first), None).await, Err(StoreError::LeaseLost));
        let principal = crate::auth::Principal::new("clerk");
        let transition = crate::store::Transition {
            principal: Some(&principal),
            from: "approved",
            to: "discharged",
            event: "DISCHARGE",
            tool: "invoice_discharge",
            call_id: "lost".into(),
            note: None,
            context_changed: false,
        };
        let entry = HistoryEntry::new(transition, crate::store::now_ms());
        let fenced = store.commit(&key, v1, &paid, Some(&first), Some((&entry, Default::default()))).await;
        assert_eq!(fenced, Err(StoreError::LeaseLost));
        assert_eq!(store.load(&key).await.unwrap().version, v1, "nothing was written");
        assert_eq!(store.history(&key).await.unwrap(), Vec::new(), "no entry without its transition");
        store.commit(&key, v1, &paid, Some(&second), None).await.expect("the holder commits");
        drop((first, second));
    }
}
