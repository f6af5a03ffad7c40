//! [`SqliteStore`]: flows, instances, challenges and idempotency records in one file, with
//! no server to install — what a server started from the command line keeps its state in
//! unless told otherwise (`ARCHITECTURE.md`, "Stores", says why SQLite).
//!
//! - **Everything in one file**: records (instances, flows, challenges, idempotency
//!   records) and the calls of declared rate limits, so neither a paid invoice nor a
//!   limit's spent calls are forgotten by a restart.
//! - **Durable before the reply.** Commits are SQLite transactions in WAL mode with
//!   `synchronous = FULL`: a commit is on disk when `compare_and_set` returns, so when the
//!   reply says a transition happened, a crash cannot take it back; a crash mid-commit
//!   leaves the old record or the new one, never a mix.
//! - **Group commit.** Commits that arrive while another is syncing wait for it, then go
//!   to disk together: one transaction, one sync, each commit in a savepoint of its own (a
//!   conflict undoes only its own). Each caller still hears of its commit only once the
//!   sync that holds it returned. So transitions on many instances at once share the
//!   disk's syncs instead of queueing for one each (`BENCHMARKS.md`, "Group commit").
//! - **Checkpoints apart.** The log is copied back into the file by a thread of the
//!   store's own, not by the commit that found it full, which every commit queued behind
//!   it would wait for (`checkpoint.rs`).
//! - **One process per file.** A second process opening the same file — by its name, a
//!   symbolic link or a hard link — is refused with a clear message (an exclusive `flock`
//!   on the database file itself, which SQLite's own POSIX locks do not touch): leases
//!   are this process's.
//! - **Versions never go back**, across removals and restarts: one counter, stored with the
//!   records, assigns them.
//! - **Reads from memory.** The file is this process's alone, so what it last read or
//!   wrote of a key is what the file holds: loads are answered from a cache kept in step
//!   with every commit and removal (a call that only reads costs no SQL), bounded to
//!   [`CACHED_KEYS`] keys (present or absent), emptied when full.
//! - **Histories in the same transaction.** An instance's transition and its
//!   [`HistoryEntry`](crate::store::HistoryEntry) (a `history` table row, numbered by the commit's version) are written
//!   by one SQLite transaction, trimmed by the retention in it too.
//! - **Bounded.** Reads store nothing (a million `invoice_view`s of made-up ids add no
//!   record); expired records — flows named by handles, confirmation challenges,
//!   idempotency records — and calls that left their rate-limit window are deleted when
//!   the store opens and then every [`SWEEP_EVERY`] commits. Instances in a final state are kept: forgetting one would
//!   make a paid invoice payable again.
//!
//! Its rooms, as every backend's: `store.rs` (the struct, opening, the
//! [`FlowStore`](crate::store::FlowStore) impl), `open.rs` (its line of
//! [`open`](fn@crate::store::open)), `migrations.rs` (the versioned schema,
//! `migrations/NNN_name.sql`), `commit.rs` (the group commit), `checkpoint.rs` (checkpoints
//! apart from commits), `queue.rs` (what waits for a
//! group), `sweep.rs` (deleting what expired), `windows.rs` (rate-limit windows),
//! `transaction.rs` (a handler's transaction) and `values.rs` (its
//! [`SqlValue`](crate::store::SqlValue)s bound, its rows read).

mod checkpoint;
mod commit;
mod driver;
mod migrations;
mod open;
mod queue;
mod store;
mod sweep;
mod transaction;
mod values;
mod windows;

pub use driver::SQLITE_WORK_LIMIT;
pub use migrations::SQLITE_SCHEMA_VERSION;
pub(crate) use open::open;
pub use store::{CACHED_KEYS, OpenError, SqliteStore};
pub use sweep::SWEEP_EVERY;
