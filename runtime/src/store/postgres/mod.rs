//! [`PostgresStore`]: flows, instances, histories, leases, rate-limit windows and due
//! timers in Postgres, shared by every replica that points at the same database — a
//! deployment on Postgres needs no Redis: other replicas hear of commits through
//! `LISTEN`/`NOTIFY`.
//!
//! Its tables live in a schema of their own (`toolgate` unless told otherwise), created and
//! migrated at start-up by versioned migrations, one transaction each, under an advisory
//! lock (replicas starting together migrate once). It never touches another schema. A
//! schema written by a newer toolgate is refused with a message naming both versions.
//!
//! The calls of a moment share their statements ([`batch`]): their loads one `SELECT`,
//! their leases one `INSERT`, their commits one transaction — its rows locked in key
//! order, the leases' fencing tokens checked, versions compared and bumped, histories
//! appended and trimmed, in one statement — and one disk flush. Once committed, commits
//! are announced by the next reads batch (`pg_notify`, a JSON array of keys a
//! notification: [`announce`]; outside the commit, whose disk flush it would otherwise
//! hold Postgres's global notify lock through). Versions never go back for a key: a
//! record removed or expired keeps its row's version until the sweep ([`sweep`]) deletes
//! the row, and a key inserted again is given a version above any the sweep deleted.
//!
//! A call whose handler writes tables of yours ([`Transaction`](crate::Transaction)) runs
//! its statements in a transaction opened for it, and its records are written in that same
//! transaction: your rows and the state commit together, or neither does.
//!
//! Its rooms, as every backend's: `store.rs` (the struct, connecting, the
//! [`FlowStore`](crate::store::FlowStore) impl), `open.rs` (its line of
//! [`open`](fn@crate::store::open)), `migrations.rs` (the versioned schema,
//! `migrations/NNN_name.sql`), `sql.rs` (its statements, written once per schema),
//! `batch.rs` (the calls of a moment sharing statements: the commit path), `announce.rs`
//! (the commits feed), `sweep.rs` (deleting what expired), `transaction.rs` (a handler's
//! transaction) and `values.rs` (its [`SqlValue`](crate::store::SqlValue)s bound, its rows
//! read).

mod announce;
mod batch;
mod migrations;
mod open;
mod sql;
mod store;
mod sweep;
#[cfg(test)]
mod testing;
mod transaction;
mod values;

pub use migrations::POSTGRES_SCHEMA_VERSION;
pub(crate) use open::open;
pub use store::{DEFAULT_POSTGRES_SCHEMA, PostgresStore};
