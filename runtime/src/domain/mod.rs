//! The intent lock: every flow has one active domain, and a call into another
//! domain is refused until the model makes the switch explicit with `switch_domain`.
//!
//! Three parts, one file each: the lock's rules ([`IntentLock`], `lock.rs`), the mandatory
//! `domain` field every domain tool's arguments carry and every result echoes (`field`),
//! and the generated `switch_domain` tool (`switch`).

pub(crate) mod field;
mod lock;
pub(crate) mod switch;

pub use lock::DomainPolicy;
pub(crate) use lock::IntentLock;
