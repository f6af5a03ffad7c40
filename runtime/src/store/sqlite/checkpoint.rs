//! Checkpoints apart from commits. In WAL mode SQLite copies the log back into the
//! database file (a checkpoint) once the log holds [`CHECKPOINT_AFTER_PAGES`] pages, and by
//! default the commit that crossed the mark does it before it returns: a thousand pages
//! written and the file synced, while every commit queued behind it waits. Here the
//! writer only says that the mark was crossed, and a thread of the store's own checkpoints
//! on a connection of its own (a passive checkpoint, which never blocks a writer or a
//! reader), while commits go on.
//!
//! The log starts over from its beginning only when a write begins with every page of it
//! checkpointed, which a checkpoint racing a steady stream of commits may never see: the
//! log would grow without bound (measured: 200 MB in 3 s of commits in a test). So once
//! it holds [`WRITER_CHECKPOINTS_AFTER_PAGES`], the writer checkpoints itself, as SQLite
//! would: only the pages written since the thread's last checkpoint, and the next write
//! starts the log over.

use std::path::Path;
use std::sync::mpsc::Receiver;

use rusqlite::Connection;
use rusqlite::wal::CheckpointMode;

/// How many pages the log holds before it is checkpointed: SQLite's own default.
const CHECKPOINT_AFTER_PAGES: i32 = 1000;

/// How many pages the log holds before the writer checkpoints it itself.
const WRITER_CHECKPOINTS_AFTER_PAGES: i32 = 4 * CHECKPOINT_AFTER_PAGES;

/// Hands `writer`'s checkpoints to a thread with its own connection to the file at
/// `path`. The thread ends when `writer` closes.
pub(super) fn apart(writer: &mut Connection, path: &Path) -> Result<(), Box<dyn std::error::Error>> {
    let checkpointer = Connection::open(path)?;
    // A connection learns that the file is in WAL mode when it first reads it; until then
    // it finds no log to checkpoint.
    checkpointer.query_row("PRAGMA journal_mode", [], |_| Ok(()))?;
    let (crossed, wakes) = std::sync::mpsc::sync_channel::<()>(1);
    // Replaces the writer's automatic checkpoint (SQLite's is this same hook).
    // What the hook returns is the committing statement's error, though it committed: a
    // checkpoint that cannot run now (the thread's is running) is left to the next commit.
    writer.wal_hook(Some(move |wal: &mut rusqlite::hooks::Wal, pages: i32| {
        if pages >= WRITER_CHECKPOINTS_AFTER_PAGES {
            let _ = wal.checkpoint();
        } else if pages >= CHECKPOINT_AFTER_PAGES {
            // A wake already waiting is enough; with the thread gone, there is none to wake.
            let _ = crossed.try_send(());
        }
        Ok(())
    }))?;
    std::thread::Builder::new()
        .name("toolgate-sqlite-checkpoint".into())
        .spawn(move || checkpoint_when_asked(checkpointer, wakes))?;
    Ok(())
}

/// Checkpoints each time it is woken, until the writer is gone.
fn checkpoint_when_asked(checkpointer: Connection, wakes: Receiver<()>) {
    while wakes.recv().is_ok() {
        match checkpointer.wal_checkpoint_v2(None::<&str>, CheckpointMode::PASSIVE) {
            Ok(_) => {}
            // The writer checkpointing itself: the log is being copied already.
            Err(rusqlite::Error::SqliteFailure(busy, _)) if busy.code == rusqlite::ErrorCode::DatabaseBusy => {}
            Err(error) => tracing::warn!(%error, "cannot checkpoint the state file's log"),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::super::SqliteStore;
    use super::super::store::tests::{cleanup, temp_path};

    /// Fills the log past the mark (and short of the writer's own), then stops committing:
    /// the store's thread copies the log into the database file.
    #[test]
    fn a_log_past_the_mark_is_checkpointed_by_the_stores_thread() {
        let path = temp_path("checkpoint-thread");
        let store = SqliteStore::open(&path).unwrap();
        store.connection().execute_batch("CREATE TABLE filler (n INTEGER PRIMARY KEY, bytes BLOB)").unwrap();
        let before = std::fs::metadata(&path).unwrap().len();
        let page = 4096;
        for n in 0..(super::CHECKPOINT_AFTER_PAGES + 200) / 5 {
            store.connection().execute("INSERT INTO filler VALUES (?1, zeroblob(?2))", (n, 4 * page)).unwrap();
        }
        let grown = |at_least: u64| std::fs::metadata(&path).unwrap().len() >= at_least;
        // Most of the rows written: the log holds their pages and some of the index's.
        let copied = before + 4 * super::CHECKPOINT_AFTER_PAGES as u64 * page as u64 / 5;
        let waited = Instant::now();
        while !grown(copied) && waited.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(
            grown(copied),
            "the database file holds what the log held: {} bytes",
            std::fs::metadata(&path).unwrap().len()
        );
        drop(store);
        cleanup(&path);
    }

    /// Commits go on for a while, each a few pages, with no pause for the log to start
    /// over: it stays within the writer's own mark (without the writer's checkpoint it
    /// would hold every page written).
    #[test]
    fn the_log_is_checkpointed_apart_and_stays_bounded() {
        let path = temp_path("checkpoint-bounded");
        let store = SqliteStore::open(&path).unwrap();
        let wal = path.with_extension("db-wal");
        store.connection().execute_batch("CREATE TABLE filler (n INTEGER PRIMARY KEY, bytes BLOB)").unwrap();
        let page = 4096;
        let mut written = 0;
        let mut largest = 0;
        let started = Instant::now();
        let mut n = 0i64;
        while started.elapsed() < Duration::from_millis(1500) {
            n += 1;
            store.connection().execute("INSERT INTO filler VALUES (?1, zeroblob(?2))", (n, 4 * page)).unwrap();
            written += 5 * page;
            largest = largest.max(std::fs::metadata(&wal).map_or(0, |m| m.len()));
        }
        drop(store);
        let mark = super::CHECKPOINT_AFTER_PAGES as u64 * page as u64;
        eprintln!("{n} commits, {written} bytes written, the log at most {largest} bytes");
        assert!(written as u64 > 8 * mark, "enough was written to need checkpoints: {written}");
        assert!(largest < 5 * mark, "the log grew to {largest} bytes");
        cleanup(&path);
    }
}
