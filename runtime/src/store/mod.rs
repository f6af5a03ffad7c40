//! Stores: where flows and keyed machines' instances live, with versioned compare-and-set
//! and per-key leases.
//!
//! Linearizability per instance and per flow (`ARCHITECTURE.md`, "Invariants") rests on two operations every
//! backend provides:
//!
//! - [`FlowStore::begin`] — a step's exclusive lease, per key, held by a *transitioning*
//!   call from its gate check to its commit, so two such calls on one key never both run
//!   their handlers; the loser waits (boundedly: the caller gives up with `FLOW_BUSY`),
//!   then sees the winner's committed state;
//! - [`FlowStore::commit`] — a compare-and-set: a commit applies only over the version it
//!   read, so even a lease that expired (a slow handler on a shared backend) cannot lose
//!   an update.
//!
//! Versions are assigned by the store and never go back for a key, removals included: a
//! key removed at version 5 and written again gets a version above 5, so a writer that
//! read the record before it was removed can never commit over its successor.
//!
//! Calls that fire no transition take no lease and never wait on one another.
//!
//! A keyed instance also keeps its **history** ([`HistoryEntry`], one per transition), which
//! a store that keeps one appends in the same atomic step as the transition's commit
//! ([`FlowStore::commit`] with its entry): a commit that fails leaves no entry, and no entry
//! exists without its transition.

mod capabilities;
#[cfg(any(test, feature = "conformance"))]
pub mod conformance;
mod counts;
mod error;
mod flow_store;
mod history;
mod key;
mod lease;
mod leases;
mod memory;
mod open;
mod options;
mod owned_keys;
#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "redis")]
mod redis;
mod snapshot;
mod sql;
mod sql_decimal;
mod sqlite;
mod tables;
mod transaction;

#[cfg(feature = "postgres")]
pub use self::postgres::{DEFAULT_POSTGRES_SCHEMA, POSTGRES_SCHEMA_VERSION, PostgresStore};
#[cfg(feature = "redis")]
pub use self::redis::{
    DEFAULT_MINT_MARGIN, LEASE_TTL, MIN_LEASE_TTL, RedisDurability, RedisStore, RedisStoreBuilder, Restored,
};
pub use capabilities::{Capabilities, Counts, Histories, RateWindows, Replicas, YourTables};
pub use counts::{InstanceCounts, LiveRecords};
pub use error::StoreError;
pub(crate) use error::unavailable;
pub use flow_store::{FlowStore, Hold, Step};
pub use history::{HistoryEntry, HistoryRetention, MAX_NOTE_CHARS, TIMER_PRINCIPAL};
pub(crate) use history::{Transition, rfc3339};
pub use key::StoreKey;
pub use lease::FlowLease;
pub use memory::MemoryStore;
pub use open::open;
pub use options::{OpenStoreError, Opened, StoreOptions};
pub(crate) use snapshot::now_ms;
pub use snapshot::{PendingEffect, Snapshot, SpentChallenge};
pub(crate) use sql::SqlRow;
pub use sql::{NotADecimal, SqlDecimal, SqlValue};
pub use sqlite::{CACHED_KEYS, OpenError, SQLITE_SCHEMA_VERSION, SQLITE_WORK_LIMIT, SWEEP_EVERY, SqliteStore};
pub(crate) use tables::Tables;
pub use transaction::{RecordWrite, SqliteWork, StoreTransaction};
