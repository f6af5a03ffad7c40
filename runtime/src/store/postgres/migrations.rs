//! toolgate's tables in Postgres: the migrations that create and change them, one
//! transaction each, applied at start-up.

use deadpool_postgres::Pool;

use crate::store::counts::{self, Counted};
use crate::store::owned_keys::{self, Counters, MAX_SUFFIX, Rekey};
use crate::store::{Snapshot, StoreError, StoreKey, unavailable};

/// The schema version this toolgate writes and reads: the number of its migrations.
pub const POSTGRES_SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// One migration: its SQL (`{s}` the schema, quoted), then, where data is rewritten, a
/// step in Rust, in the same transaction; and whether a build that knows fewer migrations
/// can still run on the schema it leaves.
pub(super) struct Migration {
    /// The statements, from `migrations/NNN_name.sql`.
    pub(super) sql: &'static str,
    /// What runs after them.
    then: Option<Rewrite>,
    /// Whether it only adds, or changes what older builds read.
    pub(super) change: Change,
}

/// What a migration does to the builds that know fewer migrations (expand, then contract:
/// a rolling upgrade runs the previous build beside the new one on one schema).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Change {
    /// It only adds — a table, a nullable column or one with a default, an index, a
    /// function of a new name — so an older build reads and writes as before, beside the
    /// new one (`tests::expanding_migrations_only_add` checks its statements).
    Expand,
    /// It drops, renames or rewrites what older builds read: they are refused on it.
    /// Contract only once no running build reads the old shape (a later commit than the
    /// one that stopped reading it).
    Contract,
}

/// The lowest schema version a build must know to run on a schema at `version`: the
/// last contracting migration up to it.
pub(super) const fn oldest_reader(version: usize) -> i64 {
    let mut oldest = 0;
    let mut at = 0;
    while at < version && at < MIGRATIONS.len() {
        if matches!(MIGRATIONS[at].change, Change::Contract) {
            oldest = at as i64 + 1;
        }
        at += 1;
    }
    oldest
}

/// The migration that added `oldest_reader` to the table of migrations: rows from it on
/// say which builds may run on the schema.
const SAYS_OLDEST_READER: i64 = 11;

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
pub(super) const MIGRATIONS: [Migration; 11] = [
    Migration { sql: include_str!("migrations/001_tables.sql"), then: None, change: Change::Contract },
    Migration { sql: include_str!("migrations/002_commit_function.sql"), then: None, change: Change::Contract },
    Migration { sql: include_str!("migrations/003_unlogged_leases.sql"), then: None, change: Change::Contract },
    Migration { sql: include_str!("migrations/004_lease_and_load.sql"), then: None, change: Change::Contract },
    Migration { sql: include_str!("migrations/005_batches.sql"), then: None, change: Change::Contract },
    Migration { sql: include_str!("migrations/006_keys_collate_c.sql"), then: None, change: Change::Contract },
    Migration {
        sql: include_str!("migrations/007_counts.sql"),
        then: Some(Rewrite::CountStoredInstances),
        change: Change::Contract,
    },
    Migration { sql: include_str!("migrations/008_counts_per_connection.sql"), then: None, change: Change::Contract },
    Migration { sql: include_str!("migrations/009_sweep.sql"), then: None, change: Change::Contract },
    Migration {
        sql: include_str!("migrations/010_owned_keys.sql"),
        then: Some(Rewrite::RekeyOwnedInstances),
        change: Change::Contract,
    },
    Migration { sql: include_str!("migrations/011_oldest_reader.sql"), then: None, change: Change::Expand },
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
/// newer toolgate migrated is served if that toolgate only extended it (its last row's
/// `oldest_reader` is a version this one knows), else refused, naming both versions.
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
        // A newer build migrated it: this one runs on it only if that build only extended
        // what this one reads.
        let said = format!("SELECT oldest_reader FROM {s}.migrations WHERE version = $1");
        let oldest: Option<i64> = match transaction.query_one(&said, &[&applied]).await {
            Ok(row) => row.get(0),
            Err(_) => None,
        };
        return match oldest {
            Some(oldest) if oldest <= POSTGRES_SCHEMA_VERSION => {
                tracing::warn!(
                    schema,
                    applied,
                    by = %by,
                    knows = POSTGRES_SCHEMA_VERSION,
                    "the Postgres schema was migrated by a newer toolgate that only extended it: serving on it"
                );
                transaction.commit().await.map_err(unavailable)
            }
            _ => Err(unavailable(format!(
                "the Postgres schema `{schema}` is at version {applied}, written by toolgate {by}, which changed what \
                 this toolgate ({}, schema versions up to {POSTGRES_SCHEMA_VERSION}) reads: run the newer toolgate, \
                 or point this one at another schema",
                env!("CARGO_PKG_VERSION")
            ))),
        };
    }
    for (index, migration) in MIGRATIONS.iter().enumerate().skip(applied as usize) {
        transaction.batch_execute(&migration.sql.replace("{s}", &s)).await.map_err(unavailable)?;
        let version = index as i64 + 1;
        let applied = if version >= SAYS_OLDEST_READER {
            let insert = format!("INSERT INTO {s}.migrations (version, toolgate, oldest_reader) VALUES ($1, $2, $3)");
            transaction.execute(&insert, &[&version, &env!("CARGO_PKG_VERSION"), &oldest_reader(index + 1)]).await
        } else {
            let insert = format!("INSERT INTO {s}.migrations (version, toolgate) VALUES ($1, $2)");
            transaction.execute(&insert, &[&version, &env!("CARGO_PKG_VERSION")]).await
        };
        applied.map_err(unavailable)?;
        match migration.then {
            Some(Rewrite::CountStoredInstances) => count_stored_instances(&transaction, &s).await?,
            Some(Rewrite::RekeyOwnedInstances) => rekey_owned_instances(&transaction, &s).await?,
            None => {}
        }
        tracing::info!(schema, version = index + 1, "migrated the Postgres store");
    }
    transaction.commit().await.map_err(unavailable)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What an expanding migration must not do to what older builds read, found in its
    /// statements (comments left out): each a reason.
    fn takes_away(sql: &str, earlier_functions: &[String]) -> Vec<String> {
        let statements: String = sql
            .lines()
            .map(|line| line.split("--").next().unwrap_or_default())
            .collect::<Vec<_>>()
            .join(" ")
            .to_ascii_lowercase();
        let mut found = Vec::new();
        for forbidden in
            ["drop ", "rename ", "alter column", "set not null", "truncate ", "delete from", "update ", "alter type"]
        {
            if statements.contains(forbidden) {
                found.push(format!("`{}`", forbidden.trim()));
            }
        }
        for statement in statements.split(';') {
            if statement.contains("add column") && statement.contains("not null") && !statement.contains("default") {
                found.push("a column `not null` without a default".into());
            }
            if let Some(name) = statement.split("create or replace function").nth(1).map(function_name)
                && earlier_functions.contains(&name)
            {
                found.push(format!("the function `{name}` an earlier migration defined, replaced"));
            }
        }
        found
    }

    fn function_name(after: &str) -> String {
        after.trim().split('(').next().unwrap_or_default().trim().to_string()
    }

    #[test]
    fn expanding_migrations_only_add() {
        let mut functions: Vec<String> = Vec::new();
        for (index, migration) in MIGRATIONS.iter().enumerate() {
            if migration.change == Change::Expand {
                let found = takes_away(migration.sql, &functions);
                assert!(
                    found.is_empty(),
                    "migration {} is marked Expand but takes away what older builds read: {}; mark it Contract \
                     (in a later commit than the one that stopped reading it), or only add",
                    index + 1,
                    found.join(", ")
                );
            }
            let lower = migration.sql.to_ascii_lowercase();
            functions.extend(lower.split("create or replace function").skip(1).map(function_name));
        }
    }

    #[test]
    fn the_check_finds_what_takes_away() {
        let earlier = vec!["{s}.commit_record".to_string()];
        for sql in [
            "ALTER TABLE {s}.records DROP COLUMN counted;",
            "ALTER TABLE {s}.records RENAME COLUMN snapshot TO body;",
            "ALTER TABLE {s}.records ALTER COLUMN version TYPE text;",
            "ALTER TABLE {s}.records ADD COLUMN owner text NOT NULL;",
            "CREATE OR REPLACE FUNCTION {s}.commit_record(k text) RETURNS void AS $$ $$ LANGUAGE sql;",
            "UPDATE {s}.records SET snapshot = NULL;",
        ] {
            assert!(!takes_away(sql, &earlier).is_empty(), "{sql}");
        }
        for sql in [
            "ALTER TABLE {s}.migrations ADD COLUMN IF NOT EXISTS oldest_reader bigint; -- drop nothing",
            "ALTER TABLE {s}.records ADD COLUMN owner text NOT NULL DEFAULT '';",
            "CREATE TABLE IF NOT EXISTS {s}.notes (key text PRIMARY KEY);",
            "CREATE OR REPLACE FUNCTION {s}.new_thing() RETURNS void AS $$ $$ LANGUAGE sql;",
        ] {
            assert!(takes_away(sql, &earlier).is_empty(), "{sql}: {:?}", takes_away(sql, &earlier));
        }
    }

    #[test]
    fn the_oldest_reader_is_the_last_contracting_migration() {
        assert_eq!(oldest_reader(10), 10);
        assert_eq!(oldest_reader(11), 10, "migration 11 only adds");
        assert_eq!(SAYS_OLDEST_READER, 11);
        assert_eq!(MIGRATIONS[SAYS_OLDEST_READER as usize - 1].change, Change::Expand);
    }

    /// A newer build that only extended the schema (its row says this build's version is
    /// enough) leaves this build starting and serving on it; one that contracted it has
    /// this build refused, naming both versions.
    #[tokio::test]
    async fn an_older_build_runs_on_a_schema_a_newer_one_only_extended() {
        use crate::store::FlowStore;
        let Some(url) = super::super::testing::test_url() else { return };
        let schema = format!("toolgate_test_{}", uuid::Uuid::new_v4().simple());
        let store = super::super::PostgresStore::connect_in_schema(&url, &schema).await.unwrap();
        let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await.unwrap();
        tokio::spawn(connection);
        let newer = POSTGRES_SCHEMA_VERSION + 1;
        client
            .batch_execute(&format!(
                "CREATE TABLE \"{schema}\".newer_things (key text PRIMARY KEY); \
                 INSERT INTO \"{schema}\".migrations (version, toolgate, oldest_reader) \
                 VALUES ({newer}, '9.9.9', {POSTGRES_SCHEMA_VERSION})"
            ))
            .await
            .unwrap();
        drop(store);
        let store = super::super::PostgresStore::connect_in_schema(&url, &schema).await.expect("starts on it");
        let key = crate::store::StoreKey::instance("invoice", "INV-1");
        let next = crate::store::Snapshot { version: 1, ..Default::default() };
        assert_eq!(store.commit(&key, 0, &next, None, None).await.unwrap(), 1);

        let contracted = newer + 1;
        client
            .batch_execute(&format!(
                "INSERT INTO \"{schema}\".migrations (version, toolgate, oldest_reader) \
                 VALUES ({contracted}, '9.9.10', {contracted})"
            ))
            .await
            .unwrap();
        let refused = super::super::PostgresStore::connect_in_schema(&url, &schema).await.unwrap_err().to_string();
        assert!(refused.contains(&format!("version {contracted}")) && refused.contains("changed what"), "{refused}");
        client.batch_execute(&format!("DROP SCHEMA \"{schema}\" CASCADE")).await.unwrap();
    }
}
