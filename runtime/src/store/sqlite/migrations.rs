//! The file's schema, created or brought up to date as the store opens.

use rusqlite::{Connection, params};

use crate::store::counts::{self, Counted};
use crate::store::{Snapshot, StoreKey};

/// Creates the tables a new file lacks and brings an older file's up to date.
pub(super) fn migrate(connection: &Connection) -> rusqlite::Result<()> {
    connection.execute_batch(
        "CREATE TABLE IF NOT EXISTS records (
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
    )?;
    add_due_column(connection)?;
    add_counters(connection)
}

/// Adds the column of instances' deadlines (and its index) to a database made before
/// it existed.
fn add_due_column(connection: &Connection) -> rusqlite::Result<()> {
    let has_column =
        connection.prepare("SELECT 1 FROM pragma_table_info('records') WHERE name = 'due_at_ms'")?.exists([])?;
    if !has_column {
        connection.execute_batch("ALTER TABLE records ADD COLUMN due_at_ms INTEGER;")?;
    }
    connection
        .execute_batch("CREATE INDEX IF NOT EXISTS records_due ON records (due_at_ms) WHERE due_at_ms IS NOT NULL;")
}

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
