//! What a Redis server keeps when it restarts, read once when the store connects, and the
//! marker that tells a running server when the data under it vanished.
//!
//! - **Persistence.** toolgate acknowledges a transition only once Redis will keep it:
//!   with an append-only file synced on every write (`appendonly yes`, `appendfsync
//!   always`), or once a replica has it (`WAIT 1` after each write). A Redis that does
//!   neither is refused at start-up, naming the setting to change, unless the user accepts
//!   losing state ([`RedisStoreBuilder::accept_volatile`](super::RedisStoreBuilder::accept_volatile),
//!   `--redis-volatile`). `appendfsync everysec` is refused too: a transition acknowledged
//!   in the second before the next sync could still be lost. (Redis 7.2's `WAITAOF` would
//!   wait for that sync; it blocks the connection it is sent on, which every call shares,
//!   and Debian's Redis 7.0 has none: toolgate asks for `always` instead.)
//! - **The marker.** The first store to connect to an empty Redis writes a random id at
//!   `toolgate:marker`; every store remembers the id it found. Each write checks it in the
//!   same script that writes, each read in the same round trip, and a watch reads it every
//!   second. When it is gone or different — Redis restarted empty, or a failover promoted a
//!   replica that never had the data — the store fails closed: every call gets
//!   `STORE_UNAVAILABLE` (retryable), so no key is minted twice and no old key starts
//!   afresh, until the data is back (the marker with it: the store serves again by itself)
//!   or an operator restarts the servers, accepting a new, empty store.
//! - **At run time.** The watch also reads Redis's clock ([`rollback`](super::rollback):
//!   Redis gone back to an earlier state, the marker the same) and `INFO persistence`: a
//!   Redis that kept the append-only file the store required and stops (`CONFIG SET
//!   appendonly no`) would lose what it acknowledges from then on at its next restart, so
//!   the store fails closed until the file is kept again. Only `INFO` is asked at run time:
//!   a managed Redis may forbid `CONFIG GET`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use redis::aio::ConnectionManager;

use super::rollback::{CLOCK_KEY, Clock};
use crate::store::{StoreError, unavailable};

/// Where the marker lives.
pub(super) const MARKER_KEY: &str = "toolgate:marker";

/// How often a running store reads the marker.
const WATCH_EVERY: Duration = Duration::from_secs(1);

/// How long a write waits for a replica to acknowledge it (`WAIT`): under the connection's
/// response timeout.
pub(super) const REPLICA_WAIT: Duration = Duration::from_secs(1);

/// What the store waits for before it acknowledges a write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RedisDurability {
    /// Nothing more: Redis syncs its append-only file before it answers a write
    /// (`appendfsync always`).
    AppendOnlyFile,
    /// A replica's acknowledgement (`WAIT 1`): a write no replica acknowledges in time is
    /// reported as of unknown outcome, never as done.
    Replica,
    /// Nothing: the user accepted that a restart of Redis loses what it held.
    Volatile,
}

/// What Redis says about its persistence.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Persistence {
    append_only: bool,
    /// `appendfsync`, when `CONFIG GET` may be asked (a managed Redis may forbid it).
    append_fsync: Option<String>,
    replicas: u32,
}

impl Persistence {
    /// Reads `INFO persistence`, `INFO replication` and `appendfsync`.
    pub(super) async fn read(connection: &mut ConnectionManager) -> Result<Self, StoreError> {
        let info = |section: &'static str| redis::cmd("INFO").arg(section).clone();
        let persistence: String = info("persistence").query_async(connection).await.map_err(unavailable)?;
        let replication: String = info("replication").query_async(connection).await.map_err(unavailable)?;
        let fsync: redis::RedisResult<Vec<String>> =
            redis::cmd("CONFIG").arg("GET").arg("appendfsync").query_async(connection).await;
        Ok(Self {
            append_only: field(&persistence, "aof_enabled") == Some("1"),
            append_fsync: fsync.ok().and_then(|pair| pair.get(1).cloned()),
            replicas: field(&replication, "connected_slaves").and_then(|n| n.parse().ok()).unwrap_or(0),
        })
    }

    /// What to wait for, or why this Redis is refused (`accept_volatile`: never refused).
    pub(super) fn durability(&self, accept_volatile: bool) -> Result<RedisDurability, String> {
        if self.append_only && self.append_fsync.as_deref() == Some("always") {
            return Ok(RedisDurability::AppendOnlyFile);
        }
        if self.replicas > 0 {
            return Ok(RedisDurability::Replica);
        }
        if accept_volatile {
            return Ok(RedisDurability::Volatile);
        }
        let accept = "or accept losing state with `--redis-volatile` (`RedisStore::builder(url).accept_volatile()`)";
        Err(if self.append_only {
            let fsync = self.append_fsync.as_deref().unwrap_or("unknown: `CONFIG GET` is not allowed");
            format!(
                "Redis syncs its append-only file with `appendfsync {fsync}`, and has no replica: a transition \
                 toolgate acknowledged could still be lost if Redis stops before the next sync. Set `appendfsync \
                 always` (`CONFIG SET appendfsync always`, and in redis.conf), or give it a replica, {accept}"
            )
        } else {
            format!(
                "Redis keeps no append-only file (`appendonly no`) and has no replica: when it restarts it forgets \
                 every instance, task and minted key, and toolgate would mint those keys again. Set `appendonly yes` \
                 and `appendfsync always` (`CONFIG SET`, and in redis.conf), or give it a replica, {accept}"
            )
        })
    }
}

/// `name:value` in an `INFO` answer.
fn field<'a>(info: &'a str, name: &str) -> Option<&'a str> {
    info.lines().find_map(|line| line.strip_prefix(name)?.strip_prefix(':')).map(str::trim)
}

/// The marker this store found, and what is known of the data under it: vanished, gone
/// back ([`Clock`]), or no longer kept as the store requires.
#[derive(Debug)]
pub(super) struct Marker {
    pub(super) id: String,
    lost: AtomicBool,
    /// The highest value of Redis's clock this store saw.
    pub(super) clock: Clock,
    /// What the store waits for before it acknowledges a write.
    durability: RedisDurability,
    /// Redis stopped keeping the append-only file the store required.
    unkept: AtomicBool,
}

/// What a call gets while the marker is gone.
pub(super) fn vanished() -> StoreError {
    StoreError::Unavailable(
        "the data under this server vanished from Redis (its marker `toolgate:marker` is gone or changed: Redis \
         restarted empty, or a replica without the data was promoted); toolgate refuses every call until the data \
         is restored, or an operator restarts the servers to begin an empty store"
            .into(),
    )
}

/// What a call gets while Redis keeps no append-only file, the store having required one.
fn unkept() -> StoreError {
    StoreError::Unavailable(
        "Redis stopped keeping its append-only file (`appendonly no`): what it acknowledged could be lost at its next \
         restart, so toolgate refuses every call until it keeps the file again (`CONFIG SET appendonly yes`)"
            .into(),
    )
}

impl Marker {
    /// The marker in place, written first if Redis has none (an empty Redis: a new store).
    pub(super) async fn claim(
        connection: &mut ConnectionManager,
        durability: RedisDurability,
    ) -> Result<Arc<Self>, StoreError> {
        let mine = uuid::Uuid::new_v4().simple().to_string();
        let written: Option<String> = redis::cmd("SET")
            .arg(MARKER_KEY)
            .arg(&mine)
            .arg("NX")
            .query_async(connection)
            .await
            .map_err(unavailable)?;
        let id = if written.is_some() {
            tracing::info!(marker = %mine, "a new toolgate store on this Redis");
            mine
        } else {
            let found: Option<String> =
                redis::cmd("GET").arg(MARKER_KEY).query_async(connection).await.map_err(unavailable)?;
            found.ok_or_else(vanished)?
        };
        let clock = Clock::new(durability != RedisDurability::Replica);
        Ok(Arc::new(Self { id, lost: AtomicBool::new(false), clock, durability, unkept: AtomicBool::new(false) }))
    }

    /// Fails closed while the data is known to have vanished, gone back, or not be kept.
    pub(super) fn check(&self) -> Result<(), StoreError> {
        if self.lost.load(Ordering::Acquire) {
            return Err(vanished());
        }
        self.clock.check()?;
        if self.unkept.load(Ordering::Acquire) { Err(unkept()) } else { Ok(()) }
    }

    /// What a read found: the marker, then (the marker intact: the same data) the clock,
    /// read when the highest value seen was `before`.
    pub(super) fn read(&self, before: u64, marker: Option<&str>, clock: Option<u64>) -> Result<(), StoreError> {
        self.seen(marker)?;
        self.clock.read(before, clock)?;
        self.check()
    }

    /// What `INFO persistence` says: a Redis that stopped keeping the file the store
    /// required is logged once, naming the setting, and refused until it keeps it again.
    fn persistence(&self, info: &str) {
        if self.durability != RedisDurability::AppendOnlyFile {
            return;
        }
        let kept = field(info, "aof_enabled") != Some("0");
        match (self.unkept.swap(!kept, Ordering::AcqRel), kept) {
            (false, false) => tracing::error!(
                "Redis stopped keeping its append-only file (`appendonly no`, set at run time): what it acknowledges \
                 could be lost at its next restart, and toolgate would mint those keys again; every call is refused \
                 until it keeps the file again (`CONFIG SET appendonly yes`, and `appendonly yes` in redis.conf)"
            ),
            (true, true) => tracing::warn!("Redis keeps its append-only file again; serving again"),
            _ => {}
        }
    }

    /// What a read of the marker found: this store's id, or not.
    pub(super) fn seen(&self, found: Option<&str>) -> Result<(), StoreError> {
        let intact = found == Some(self.id.as_str());
        let was_lost = self.lost.swap(!intact, Ordering::AcqRel);
        match (was_lost, intact) {
            (false, false) => tracing::error!(
                marker = %self.id,
                found = found.unwrap_or("nothing"),
                "the data under this server vanished from Redis; every call is refused until it is back"
            ),
            (true, true) => tracing::warn!(marker = %self.id, "the data under this server is back; serving again"),
            _ => {}
        }
        if intact { Ok(()) } else { Err(vanished()) }
    }

    /// Reads the marker, the clock and `INFO persistence` every second (one round trip)
    /// for as long as the store lives.
    pub(super) fn watch(self: &Arc<Self>, connection: ConnectionManager) {
        let marker = Arc::downgrade(self);
        tokio::spawn(async move {
            let mut connection = connection;
            loop {
                tokio::time::sleep(WATCH_EVERY).await;
                let Some(marker) = marker.upgrade() else { return };
                let before = marker.clock.highest();
                let found: redis::RedisResult<(Option<String>, Option<u64>, String)> = redis::pipe()
                    .cmd("GET")
                    .arg(MARKER_KEY)
                    .cmd("GET")
                    .arg(CLOCK_KEY)
                    .cmd("INFO")
                    .arg("persistence")
                    .query_async(&mut connection)
                    .await;
                // An unreachable Redis is not a vanished one: its calls fail by themselves.
                if let Ok((found, clock, persistence)) = found {
                    marker.persistence(&persistence);
                    let _ = marker.read(before, found.as_deref(), clock);
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn persistence(append_only: bool, fsync: Option<&str>, replicas: u32) -> Persistence {
        Persistence { append_only, append_fsync: fsync.map(str::to_string), replicas }
    }

    #[test]
    fn only_a_redis_that_keeps_each_write_is_accepted_without_consent() {
        assert_eq!(persistence(true, Some("always"), 0).durability(false), Ok(RedisDurability::AppendOnlyFile));
        assert_eq!(persistence(false, None, 1).durability(false), Ok(RedisDurability::Replica));
        assert_eq!(persistence(true, Some("everysec"), 2).durability(false), Ok(RedisDurability::Replica));
        let volatile = persistence(false, Some("everysec"), 0).durability(false).unwrap_err();
        assert!(volatile.contains("`appendonly no`") && volatile.contains("--redis-volatile"), "{volatile}");
        let everysec = persistence(true, Some("everysec"), 0).durability(false).unwrap_err();
        assert!(everysec.contains("`appendfsync everysec`") && everysec.contains("appendfsync always"), "{everysec}");
        assert_eq!(persistence(false, None, 0).durability(true), Ok(RedisDurability::Volatile));
    }

    #[test]
    fn info_fields_are_read_by_name() {
        let info = "# Persistence\r\nloading:0\r\naof_enabled:1\r\naof_rewrite_in_progress:0\r\n";
        assert_eq!(field(info, "aof_enabled"), Some("1"));
        assert_eq!(field(info, "aof"), None);
    }
}
