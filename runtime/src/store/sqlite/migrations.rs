//! The file's schema: versioned migrations, each a `.sql` file embedded in the binary
//! (`migrations/NNN_name.sql`), some followed by a step in Rust where data is rewritten;
//! one transaction each, the file's version (`PRAGMA user_version`) raised with it.
//!
//! A file written before migrations were versioned (version 0 with toolgate's tables in
//! it) is recognized by what it holds and stamped at the version it is at: migration 1
//! (all `IF NOT EXISTS`) runs again, and the columns the later ones add tell how far it
//! went.

use rusqlite::{Connection, OptionalExtension, params};

use crate::store::counts::{self, Counted};
use crate::store::owned_keys::{self, Counters, MAX_SUFFIX, Rekey};
use crate::store::{Snapshot, StoreKey};

/// The schema version this toolgate writes and reads: the number of its migrations.
pub const SQLITE_SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// One migration: its SQL, then, where data is rewritten, a step in Rust, in the same
/// transaction.
struct Migration {
    sql: &'static str,
    then: Option<fn(&Connection) -> rusqlite::Result<()>>,
}

/// The migrations, in order. Applied ones are never edited: a change is a new migration.
const MIGRATIONS: [Migration; 4] = [
    Migration { sql: include_str!("migrations/001_tables.sql"), then: None },
    Migration { sql: include_str!("migrations/002_due.sql"), then: None },
    Migration { sql: include_str!("migrations/003_counts.sql"), then: Some(count_stored_instances) },
    Migration { sql: include_str!("migrations/004_owned_keys.sql"), then: Some(rekey_owned_instances) },
];

/// Brings the file to [`SQLITE_SCHEMA_VERSION`]: the migrations it lacks, one transaction
/// each. A file a newer toolgate wrote is refused, naming both versions.
pub(super) fn migrate(connection: &Connection) -> Result<(), String> {
    let error = |e: rusqlite::Error| e.to_string();
    let mut version: i64 = connection.query_row("PRAGMA user_version", [], |row| row.get(0)).map_err(error)?;
    if version > SQLITE_SCHEMA_VERSION {
        return Err(format!(
            "the file is at version {version}, written by a newer toolgate; this toolgate ({}) knows versions \
             up to {SQLITE_SCHEMA_VERSION}: run the newer toolgate, or give this one another file",
            env!("CARGO_PKG_VERSION")
        ));
    }
    if version == 0 {
        version = stamp_unversioned(connection).map_err(error)?;
    }
    for (index, migration) in MIGRATIONS.iter().enumerate().skip(version as usize) {
        let transaction = connection.unchecked_transaction().map_err(error)?;
        transaction.execute_batch(migration.sql).map_err(error)?;
        if let Some(then) = migration.then {
            then(&transaction).map_err(error)?;
        }
        transaction.pragma_update(None, "user_version", index as i64 + 1).map_err(error)?;
        transaction.commit().map_err(error)?;
        tracing::debug!(version = index + 1, "migrated the SQLite store");
    }
    Ok(())
}

/// The version of a file at version 0: 0 for a new (empty) file; for one toolgate wrote
/// before its migrations were versioned, the version it is at, stamped (after migration 1
/// ran again: it changes nothing a file has, and gives it whatever table it lacked).
fn stamp_unversioned(connection: &Connection) -> rusqlite::Result<i64> {
    let has = |sql: &str| connection.prepare(sql)?.exists([]);
    if !has("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'records'")? {
        return Ok(0);
    }
    let column = |name: &str| has(&format!("SELECT 1 FROM pragma_table_info('records') WHERE name = '{name}'"));
    // The columns were added in this order, each by the function that became its migration.
    let version = match (column("due_at_ms")?, column("counted")?) {
        (false, _) => 1,
        (true, false) => 2,
        (true, true) => 3,
    };
    let transaction = connection.unchecked_transaction()?;
    transaction.execute_batch(MIGRATIONS[0].sql)?;
    transaction.pragma_update(None, "user_version", version)?;
    transaction.commit()?;
    tracing::info!(version, "stamped a SQLite store written before its migrations were versioned");
    Ok(version)
}

/// Counts the instances a file held before it counted them (migration 3): each one's
/// names written beside it, which the triggers count.
fn count_stored_instances(connection: &Connection) -> rusqlite::Result<()> {
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

/// Moves the instances an older toolgate keyed by their owner to their tenant's key, with
/// their owner in the record and their history, and folds the per-owner key counters into
/// the per-tenant ones (migration 4, [`owned_keys`]): in key order, so of two owners with
/// one id in one tenant, the first keeps it.
fn rekey_owned_instances(connection: &Connection) -> rusqlite::Result<()> {
    let [instances, minted] = StoreKey::LEGACY_OWNED_PREFIXES;
    let mut counters = Counters::default();
    let (mut moves, mut old_counters) = (Vec::new(), Vec::new());
    {
        let mut select = connection.prepare(
            "SELECT key, snapshot FROM records WHERE substr(key, 1, ?1) = ?2 OR substr(key, 1, ?3) = ?4 ORDER BY key",
        )?;
        let mut rows = select.query(params![instances.len() as i64, instances, minted.len() as i64, minted])?;
        while let Some(row) = rows.next()? {
            let key = StoreKey::from_stored(row.get(0)?);
            let text: String = row.get(1)?;
            if counters.saw_counter(&key, &text) {
                old_counters.push(key);
            } else if let Some(rekey) = Rekey::of(&key, &text) {
                moves.push(rekey);
            }
        }
    }
    for rekey in moves {
        let taken = |key: &StoreKey| connection.prepare("SELECT 1 FROM records WHERE key = ?1")?.exists([key.as_str()]);
        let mut attempt = 0;
        let key = loop {
            let key = rekey.key(attempt);
            if !taken(&key)? {
                break key;
            }
            attempt += 1;
            if attempt == MAX_SUFFIX {
                let why = format!("no free id for the owned instance `{}`", rekey.old);
                return Err(rusqlite::Error::SqliteFailure(
                    rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_ERROR),
                    Some(why),
                ));
            }
        };
        let counted = Counted::json(rekey.counted(&key).as_ref());
        connection.execute(
            "UPDATE records SET key = ?2, snapshot = ?3, counted = ?4 WHERE key = ?1",
            params![rekey.old.as_str(), key.as_str(), rekey.snapshot, counted],
        )?;
        connection.execute("UPDATE history SET key = ?2 WHERE key = ?1", params![rekey.old.as_str(), key.as_str()])?;
        rekey.moved(&key, attempt);
        counters.saw_instance(&rekey);
    }
    for (key, floor) in counters.floors() {
        let current: Option<String> = connection
            .query_row("SELECT snapshot FROM records WHERE key = ?1", [key.as_str()], |row| row.get(0))
            .optional()?;
        if let Some(raised) = owned_keys::raised(current.as_deref(), floor) {
            let version: i64 =
                connection.query_row("UPDATE revision SET last = last + 1 WHERE id = 1 RETURNING last", [], |row| {
                    row.get(0)
                })?;
            connection.execute(
                "INSERT INTO records (key, version, snapshot) VALUES (?1, ?2, ?3)
                 ON CONFLICT (key) DO UPDATE SET version = excluded.version, snapshot = excluded.snapshot",
                params![key.as_str(), version, raised],
            )?;
        }
    }
    for key in old_counters {
        connection.execute("DELETE FROM records WHERE key = ?1", [key.as_str()])?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn version(connection: &Connection) -> i64 {
        connection.query_row("PRAGMA user_version", [], |row| row.get(0)).unwrap()
    }

    #[test]
    fn a_new_file_gets_every_migration_and_a_second_run_changes_nothing() {
        let connection = Connection::open_in_memory().unwrap();
        migrate(&connection).unwrap();
        assert_eq!(version(&connection), SQLITE_SCHEMA_VERSION);
        migrate(&connection).unwrap();
        assert_eq!(version(&connection), SQLITE_SCHEMA_VERSION);
    }

    #[test]
    fn an_unversioned_file_is_stamped_at_the_version_its_columns_show() {
        let connection = Connection::open_in_memory().unwrap();
        // What toolgate wrote before the deadlines' column: migration 1 alone.
        connection.execute_batch(MIGRATIONS[0].sql).unwrap();
        assert_eq!(stamp_unversioned(&connection).unwrap(), 1);
        migrate(&connection).unwrap();
        assert_eq!(version(&connection), SQLITE_SCHEMA_VERSION);
        let connection = Connection::open_in_memory().unwrap();
        for migration in &MIGRATIONS {
            connection.execute_batch(migration.sql).unwrap();
        }
        connection.pragma_update(None, "user_version", 0).unwrap();
        migrate(&connection).unwrap();
        assert_eq!(version(&connection), SQLITE_SCHEMA_VERSION);
    }

    #[test]
    fn a_file_a_newer_toolgate_wrote_is_refused() {
        let connection = Connection::open_in_memory().unwrap();
        connection.pragma_update(None, "user_version", SQLITE_SCHEMA_VERSION + 1).unwrap();
        let refused = migrate(&connection).unwrap_err();
        assert!(refused.contains(&format!("version {}", SQLITE_SCHEMA_VERSION + 1)), "{refused}");
    }
}
