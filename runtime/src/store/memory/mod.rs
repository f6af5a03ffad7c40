//! The in-process store: for tests, and for a server told `--store memory`.
//!
//! Its rooms, as every backend's: `store.rs` (the struct and the
//! [`FlowStore`](crate::store::FlowStore) impl), `open.rs` (its line of
//! [`open`](fn@crate::store::open)) and `windows.rs` (rate-limit windows). It has no schema
//! to migrate and sweeps what expired as it commits.

mod open;
mod store;
mod windows;

pub(crate) use open::open;
pub use store::MemoryStore;
