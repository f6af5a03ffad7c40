//! [`RedisStore`] (feature `redis`): the store replicas share.
//!
//! - A record is a hash (`v`: its version, `s`: the snapshot as JSON) at
//!   `toolgate:{<key>}:record`; its version counter at `toolgate:{<key>}:revision` outlives
//!   removals, so versions never go back. Both keys share the Cluster hash tag `{<key>}`.
//! - Compare-and-set is one Lua script: the version check, the new version and the write
//!   happen atomically in Redis — and, for a transition, the [`HistoryEntry`](crate::store::HistoryEntry) appended to
//!   the instance's history (a list at `toolgate:{<key>}:history`, oldest first) and the
//!   list trimmed by the retention, so no entry exists without its transition.
//! - A record with an expiry (a handle's flow, a challenge, an idempotency record) gets it as
//!   the key's `PEXPIREAT`; instances persist.
//! - A lease is `SET toolgate:{<key>}:lease <token> NX PX <ttl>`, renewed while held and
//!   released by a script that deletes it only if it still holds this holder's token. A
//!   replica that crashed holding one loses it when its time runs out; the commit's
//!   version check refuses what a holder that lost its lease tries to write.
//! - What Redis keeps across a restart is read when the store connects, and a marker tells
//!   a running store when the data under it vanished ([`durability`]), a clock when it went
//!   back to an earlier state ([`rollback`]); after a restore from a backup, [`restore`]
//!   keeps keys from being minted twice. A commit is one script ([`commit`]).
//! - Instances are counted by state ([`counts`](super::counts)): the commit script moves an
//!   instance's names (kept in its record's hash, `ck` and `cn`) between counters, a hash
//!   per machine and scope at `toolgate:{counts:<scope and machine>}`; removal takes them
//!   off. Every key the store writes begins `toolgate:{` but the marker and the index of
//!   deadlines (`toolgate:marker`, `toolgate:due`): what an ACL grants it (the clock and
//!   the counters' floor, `toolgate:{clock}` and `toolgate:{mint-floor}`, are under it).
//!
//! Its rooms, as every backend's: `store.rs` (the struct, connecting, leases, the
//! [`FlowStore`](crate::store::FlowStore) impl), `open.rs` (its line of
//! [`open`](fn@crate::store::open)), `commit.rs` (the commit path), `keys.rs` (every Redis key
//! it names), `scripts.rs` (its Lua), `announce.rs` (the commits feed), `read.rs` (a record
//! read with its marker and clock), `durability.rs`, `rollback.rs` and `restore.rs` (what
//! Redis keeps, and going back), `migrate.rs` (what an older toolgate wrote, rewritten
//! once when the store connects). It has no schema, and no sweep: Redis expires what
//! expires.

mod announce;
mod commit;
mod durability;
mod keys;
mod migrate;
mod open;
mod read;
mod restore;
mod rollback;
mod scripts;
mod store;

pub use durability::RedisDurability;
pub(crate) use open::open;
pub use restore::{DEFAULT_MINT_MARGIN, Restored};
pub use store::{LEASE_TTL, MIN_LEASE_TTL, RedisStore, RedisStoreBuilder};
