//! The Postgres store's sweep: the rows of records that expired or were removed are
//! deleted (with their histories), and so are leases long past their time, so that the
//! tables hold what is live and not every record ever written.
//!
//! A key's versions never go back, even once its row is gone: the highest version any
//! swept row had is kept (`swept.highest`, raised by the sweep in the transaction that
//! deletes the rows), and a row inserted for a key is given a version above it (by the
//! statement that writes records, and by a trigger for a toolgate older than the sweep,
//! still running beside a newer one). A writer that read a record before it expired or was removed
//! can therefore never commit over the record written again under its key.
//!
//! Every replica sweeps, as its store connects and then every [`SWEEP_INTERVAL`]: a pass
//! deletes at most [`SWEEP_BATCH`] rows a statement, each statement a short transaction of
//! its own, and at most [`SWEEP_STATEMENTS`] statements. Rows another transaction holds
//! (a commit writing the key, another replica's sweep) are skipped, left to a later pass:
//! two replicas sweeping at once delete different rows, and a sweep never waits for a
//! commit. A commit may wait for a sweep's statement that holds its key's row; when that
//! row is then gone, a commit sent alone reports a conflict (as with another writer) and
//! its caller reads again.

use std::time::Duration;

use deadpool_postgres::Pool;

use super::sql::Sql;
use crate::store::{StoreError, StoreKey, now_ms, unavailable};

/// How often a replica sweeps.
pub(super) const SWEEP_INTERVAL: Duration = Duration::from_secs(10);

/// The most rows one sweep statement deletes (one transaction).
pub(super) const SWEEP_BATCH: i64 = 1_000;

/// The most statements one pass runs: a pass deletes at most `SWEEP_BATCH` times this many
/// records, and the rest wait for the next.
pub(super) const SWEEP_STATEMENTS: usize = 10;

/// One pass: records expired or removed deleted, at most [`SWEEP_STATEMENTS`] statements
/// of [`SWEEP_BATCH`] (another only while the last one deleted some), then abandoned
/// leases.
/// Answers how many records it deleted.
pub(super) async fn sweep(pool: &Pool, sql: &Sql) -> Result<u64, StoreError> {
    let client = pool.get().await.map_err(unavailable)?;
    let records = client.prepare_cached(&sql.sweep_records).await.map_err(unavailable)?;
    let mut deleted = 0;
    for _ in 0..SWEEP_STATEMENTS {
        let now = now_ms() as i64;
        let row = client.query_one(&records, &[&now, &SWEEP_BATCH]).await.map_err(unavailable)?;
        let these: i64 = row.get(0);
        deleted += these as u64;
        // A statement deletes fewer than it may when another replica's sweep deleted or
        // holds rows it saw: another follows while any was left to this one.
        if these == 0 {
            break;
        }
    }
    let leases = client.prepare_cached(&sql.sweep_leases).await.map_err(unavailable)?;
    client.execute(&leases, &[&SWEEP_BATCH]).await.map_err(unavailable)?;
    Ok(deleted)
}

/// Sweeps now, then every [`SWEEP_INTERVAL`], until the store is gone (`alive` no longer
/// upgrades: every clone of the store dropped).
pub(super) async fn periodically(
    pool: Pool,
    sql: std::sync::Arc<Sql>,
    alive: tokio::sync::broadcast::WeakSender<StoreKey>,
) {
    let mut ticks = tokio::time::interval(SWEEP_INTERVAL);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        if alive.upgrade().is_none() {
            return;
        }
        match sweep(&pool, &sql).await {
            Ok(0) => {}
            Ok(deleted) => tracing::debug!(deleted, "swept expired and removed records from Postgres"),
            Err(error) => tracing::warn!(%error, "cannot sweep expired records from Postgres; trying again later"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{fresh_store, test_url};
    use super::*;
    use crate::store::{Counts, FlowStore, Histories, HistoryEntry, HistoryRetention, PostgresStore, Snapshot};

    /// How many rows `table` holds for `keys`, removed or expired records included.
    async fn rows(store: &PostgresStore, table: &str, keys: &[StoreKey]) -> i64 {
        let keys: Vec<&str> = keys.iter().map(StoreKey::as_str).collect();
        let sql = format!("SELECT count(*) FROM \"{}\".{table} WHERE key = ANY($1)", store.sql.schema);
        store.client().await.unwrap().query_one(&sql, &[&keys]).await.unwrap().get(0)
    }

    fn expiring(ms: u64) -> Snapshot {
        Snapshot { expires_at_ms: Some(now_ms() + ms), ..Snapshot::default().with_state("m", "x") }
    }

    /// Expired records (with their histories) and removed ones are deleted; live ones,
    /// their histories and their counts stay.
    #[tokio::test]
    async fn expired_and_removed_rows_are_deleted_and_live_ones_kept() {
        let Some(url) = test_url() else { return };
        let store = fresh_store(&url).await;
        let keys = |kind: &str, n: usize| -> Vec<StoreKey> {
            (0..n).map(|i| StoreKey::instance("m", &format!("{kind}-{i}"))).collect()
        };
        let (expired, removed, live) = (keys("expired", 30), keys("removed", 10), keys("live", 20));
        let entry = HistoryEntry::timer("a", "x", 1_000, now_ms());
        for key in &expired {
            store.commit(key, 0, &expiring(100), None, Some((&entry, HistoryRetention::default()))).await.unwrap();
        }
        for key in &removed {
            store.commit(key, 0, &Snapshot::default().with_state("m", "x"), None, None).await.unwrap();
            store.remove(key).await.unwrap();
        }
        for key in &live {
            let next = Snapshot::default().with_state("m", "x");
            store.commit(key, 0, &next, None, Some((&entry, HistoryRetention::default()))).await.unwrap();
        }
        let all = [expired.clone(), removed.clone(), live.clone()].concat();
        assert_eq!(rows(&store, "records", &all).await, 60);
        assert_eq!(rows(&store, "history", &all).await, 50);
        tokio::time::sleep(Duration::from_millis(150)).await;

        assert_eq!(store.sweep().await.unwrap(), 40);
        assert_eq!(rows(&store, "records", &[expired.clone(), removed.clone()].concat()).await, 0);
        assert_eq!(rows(&store, "history", &expired).await, 0, "a swept record's history is gone");
        assert_eq!((rows(&store, "records", &live).await, rows(&store, "history", &live).await), (20, 20));
        assert_eq!(store.load(&live[0]).await.unwrap().state_of("m", "?"), "x");
        assert_eq!(store.history(&live[0]).await.unwrap().len(), 1);
        // The counters move with the rows deleted: the live instances alone are counted.
        let counted = store.instances("", "m").await.unwrap();
        assert_eq!(counted.states.get("x").copied(), Some(20), "{counted:?}");
        assert_eq!(store.sweep().await.unwrap(), 0, "nothing left to sweep");
    }

    /// A key removed or expired, swept, and written again gets a version above every one
    /// it had: a writer that read it before cannot commit over its successor (ABA), even
    /// once the successor has moved as many times.
    #[tokio::test]
    async fn a_swept_key_comes_back_above_every_version_it_had() {
        let Some(url) = test_url() else { return };
        let store = fresh_store(&url).await;
        let state = |name: &str| Snapshot::default().with_state("m", name);
        for (key, last) in [(StoreKey::connection("removed"), state("c")), (StoreKey::handle("expired"), expiring(50))]
        {
            let v1 = store.commit(&key, 0, &state("a"), None, None).await.unwrap();
            let v2 = store.commit(&key, v1, &state("b"), None, None).await.unwrap();
            let v3 = store.commit(&key, v2, &last, None, None).await.unwrap();
            if last.expires_at_ms.is_none() {
                store.remove(&key).await.unwrap();
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
            store.sweep().await.unwrap();
            assert_eq!(rows(&store, "records", std::slice::from_ref(&key)).await, 0, "{key} was not swept");
            let mut again = store.commit(&key, 0, &state("again"), None, None).await.unwrap();
            assert!(again > v3, "{key} written again got version {again}, not above {v3}");
            for _ in 0..3 {
                again = store.commit(&key, again, &state("again"), None, None).await.unwrap();
            }
            let stale = store.commit(&key, v3, &state("stale"), None, None).await;
            assert_eq!(stale, Err(StoreError::Conflict { expected: v3, found: again }), "{key}");
        }
        // A toolgate older than the sweep inserts a new key at version 1: above it, too.
        let sql = format!("INSERT INTO \"{}\".records (key, version, snapshot) VALUES ($1, 1, $2)", store.sql.schema);
        let old = r#"{"states":{},"active_domain":null,"version":0,"updated_at_ms":1}"#;
        let key = StoreKey::connection("older");
        store.client().await.unwrap().execute(&sql, &[&key.as_str(), &old]).await.unwrap();
        assert!(store.load(&key).await.unwrap().version > 3, "an older toolgate's insert went below the swept");
    }

    /// Two replicas sweeping at once delete each row once, and neither fails.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn replicas_sweeping_at_once_share_the_rows() {
        let Some(url) = test_url() else { return };
        let store = fresh_store(&url).await;
        let replica = PostgresStore::connect_in_schema(&url, &store.sql.schema).await.unwrap();
        // Expired handles, written at once (as 3,000 commits would leave them).
        let sql = format!(
            "INSERT INTO \"{}\".records (key, version, snapshot, expires_at_ms) \
             SELECT 'handle:h-' || n, 1, '{{}}', 1 FROM generate_series(1, 3000) n",
            store.sql.schema
        );
        store.client().await.unwrap().execute(&sql, &[]).await.unwrap();
        let (a, b) = tokio::join!(store.sweep(), replica.sweep());
        assert_eq!(a.unwrap() + b.unwrap(), 3_000, "each expired row deleted once, all in one pass");
        assert_eq!(store.sweep().await.unwrap(), 0);
    }
}
