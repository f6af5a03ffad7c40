//! toolgate's tables in Postgres: the migrations that create and change them, one
//! transaction each, applied at start-up.

use deadpool_postgres::Pool;

use crate::store::counts::{self, Counted};
use crate::store::owned_keys::{self, Counters, MAX_SUFFIX, Rekey};
use crate::store::{Snapshot, StoreError, StoreKey, unavailable};

/// The schema version this toolgate writes and reads: the number of its migrations.
pub const POSTGRES_SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// One migration: its SQL (`{s}` the schema, quoted), then, where data is rewritten, a
/// step in Rust, in the same transaction.
pub(super) struct Migration {
    /// The statements, from `migrations/NNN_name.sql`.
    pub(super) sql: &'static str,
    /// What runs after them.
    then: Option<Rewrite>,
}

/// The steps in Rust some migrations end with.
#[derive(Clone, Copy)]
enum Rewrite {
    /// Counts the instances stored before they were counted ([`count_stored_instances`]).
    CountStoredInstances,
    /// Moves owned instances to their tenant's key ([`rekey_owned_instances`]).
    RekeyOwnedInstances,
}

/// The migrations, in order (`migrations/`, embedded in the binary). Applied ones are
/// never edited: a change is a new migration.
pub(super) const MIGRATIONS: [Migration; 10] = [
    Migration { sql: include_str!("migrations/001_tables.sql"), then: None },
    Migration { sql: include_str!("migrations/002_commit_function.sql"), then: None },
    Migration { sql: include_str!("migrations/003_unlogged_leases.sql"), then: None },
    Migration { sql: include_str!("migrations/004_lease_and_load.sql"), then: None },
    Migration { sql: include_str!("migrations/005_batches.sql"), then: None },
    Migration { sql: include_str!("migrations/006_keys_collate_c.sql"), then: None },
    Migration { sql: include_str!("migrations/007_counts.sql"), then: Some(Rewrite::CountStoredInstances) },
    Migration { sql: include_str!("migrations/008_counts_per_connection.sql"), then: None },
    Migration { sql: include_str!("migrations/009_sweep.sql"), then: None },
    Migration { sql: include_str!("migrations/010_owned_keys.sql"), then: Some(Rewrite::RekeyOwnedInstances) },
];

/// Counts the instances a schema held before it counted them (migration 7): each live
/// instance's names written beside it, which the triggers count.
async fn count_stored_instances(transaction: &deadpool_postgres::Transaction<'_>, s: &str) -> Result<(), StoreError> {
    let rows = transaction
        .query(
            &format!(
                "SELECT key, snapshot FROM {s}.records WHERE snapshot IS NOT NULL AND counted IS NULL AND {}",
                StoreKey::sql_is_instance("key")
            ),
            &[],
        )
        .await
        .map_err(unavailable)?;
    let update = format!("UPDATE {s}.records SET counted = $2 WHERE key = $1");
    for row in rows {
        let key = StoreKey::from_stored(row.get(0));
        let Ok(snapshot) = serde_json::from_str::<Snapshot>(row.get(1)) else { continue };
        let counted = Counted::json(counts::counted(&key, &snapshot).as_ref());
        transaction.execute(&update, &[&key.as_str(), &counted]).await.map_err(unavailable)?;
    }
    Ok(())
}

/// Moves the instances an older toolgate keyed by their owner to their tenant's key, with
/// their owner in the record and their history, and folds the per-owner key counters into
/// the per-tenant ones (migration 10, [`owned_keys`]): in key order, so of two owners with
/// one id in one tenant, the first keeps it. A moved record's version stays above any its
/// new key had before it was swept (migration 9's `swept`).
async fn rekey_owned_instances(transaction: &deadpool_postgres::Transaction<'_>, s: &str) -> Result<(), StoreError> {
    let [instances, minted] = StoreKey::LEGACY_OWNED_PREFIXES;
    let rows = transaction
        .query(
            &format!(
                "SELECT key, snapshot FROM {s}.records WHERE snapshot IS NOT NULL \
                 AND (left(key, $1) = $2 OR left(key, $3) = $4) ORDER BY key"
            ),
            &[&(instances.len() as i32), &instances, &(minted.len() as i32), &minted],
        )
        .await
        .map_err(unavailable)?;
    let mut counters = Counters::default();
    let (mut moves, mut old_counters) = (Vec::new(), Vec::new());
    for row in rows {
        let key = StoreKey::from_stored(row.get(0));
        let text: String = row.get(1);
        if counters.saw_counter(&key, &text) {
            old_counters.push(key);
        } else if let Some(rekey) = Rekey::of(&key, &text) {
            moves.push(rekey);
        }
    }
    let taken = format!("SELECT 1 FROM {s}.records WHERE key = $1");
    let update = format!(
        "UPDATE {s}.records SET key = $2, snapshot = $3, counted = $4, \
         version = greatest(version, (SELECT highest FROM {s}.swept WHERE id = 1) + 1) WHERE key = $1"
    );
    let history = format!("UPDATE {s}.history SET key = $2 WHERE key = $1");
    for rekey in moves {
        let mut attempt = 0;
        let key = loop {
            let key = rekey.key(attempt);
            if transaction.query_opt(&taken, &[&key.as_str()]).await.map_err(unavailable)?.is_none() {
                break key;
            }
            attempt += 1;
            if attempt == MAX_SUFFIX {
                return Err(unavailable(format!("no free id for the owned instance `{}`", rekey.old)));
            }
        };
        let counted = Counted::json(rekey.counted(&key).as_ref());
        let (old, new) = (rekey.old.as_str(), key.as_str());
        transaction.execute(&update, &[&old, &new, &rekey.snapshot, &counted]).await.map_err(unavailable)?;
        transaction.execute(&history, &[&old, &new]).await.map_err(unavailable)?;
        rekey.moved(&key, attempt);
        counters.saw_instance(&rekey);
    }
    let current = format!("SELECT snapshot FROM {s}.records WHERE key = $1");
    let raise = format!(
        "INSERT INTO {s}.records (key, version, snapshot) VALUES ($1, 1, $2) ON CONFLICT (key) DO UPDATE \
         SET snapshot = EXCLUDED.snapshot, version = {s}.records.version + 1, expires_at_ms = NULL"
    );
    for (key, floor) in counters.floors() {
        let row = transaction.query_opt(&current, &[&key.as_str()]).await.map_err(unavailable)?;
        let current: Option<String> = row.and_then(|row| row.get(0));
        if let Some(raised) = owned_keys::raised(current.as_deref(), floor) {
            transaction.execute(&raise, &[&key.as_str(), &raised]).await.map_err(unavailable)?;
        }
    }
    let remove = format!("DELETE FROM {s}.records WHERE key = $1");
    for key in old_counters {
        transaction.execute(&remove, &[&key.as_str()]).await.map_err(unavailable)?;
    }
    Ok(())
}

/// Creates the schema and applies the migrations it lacks, one transaction each, under a
/// transaction-level advisory lock: replicas starting together migrate once. A schema a
/// newer toolgate wrote is refused, naming both versions.
pub(super) async fn migrate(pool: &Pool, schema: &str) -> Result<(), StoreError> {
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
        transaction.batch_execute(&migration.sql.replace("{s}", &s)).await.map_err(unavailable)?;
        transaction
            .execute(
                &format!("INSERT INTO {s}.migrations (version, toolgate) VALUES ($1, $2)"),
                &[&(index as i64 + 1), &env!("CARGO_PKG_VERSION")],
            )
            .await
            .map_err(unavailable)?;
        match migration.then {
            Some(Rewrite::CountStoredInstances) => count_stored_instances(&transaction, &s).await?,
            Some(Rewrite::RekeyOwnedInstances) => rekey_owned_instances(&transaction, &s).await?,
            None => {}
        }
        tracing::info!(schema, version = index + 1, "migrated the Postgres store");
    }
    transaction.commit().await.map_err(unavailable)
}
