//! The behaviour every [`FlowStore`](crate::store::FlowStore) must show; each backend's tests run [`check`].
//!
//! Enabled by the `conformance` feature, for backends kept outside this crate.
//!
//! Its rooms: `suite.rs` (the entry points), one file per concept checked (`records.rs`,
//! `leases.rs`, `windows.rs`, `instances.rs`, `history.rs`), and `fixtures.rs` (what they
//! share).

mod fixtures;
mod history;
mod instances;
mod leases;
mod records;
mod suite;
mod windows;

pub use suite::{check, check_instance_counts, check_live_counts};
