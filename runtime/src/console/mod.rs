//! The operator's console (`--console ADDR`): read-only pages, served by the server itself,
//! on a listener of its own, about what the server's agents are doing. Every address asks
//! for an operator's credentials (`access.rs`); every asset is embedded in the binary
//! (`assets.rs`), served under a strict Content-Security-Policy.
//!
//! It serves the machines' diagram (`describe`'s SVG) with the live number of instances in
//! each state (`machines.rs`), one instance found by its key (`instance.rs`), and the
//! refusals of the last minutes and hours (`refusals.rs`), and the tasks running and ended
//! lately with the timers due next (`tasks.rs`), and the effects waiting to run and
//! dead-lettered (`effects.rs`).

mod access;
mod assets;
mod effects;
mod instance;
mod machines;
mod refusals;
mod router;
mod session;
mod shared;
mod tasks;

pub use access::OPERATOR_SCOPE;
pub(crate) use shared::Console;
use shared::malformed;
