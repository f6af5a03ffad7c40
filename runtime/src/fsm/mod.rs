//! Workflow state machines at run time: the validated [`Machine`] the gate consults, and
//! the XState v5 JSON loader for machines authored outside Rust.
//!
//! The rules themselves live in `toolgate-machine`, shared with the macros, so a machine
//! declared with `machine!` and the same machine loaded from JSON are judged identically.

mod caller;
mod context_type;
mod guard;
mod machine;
mod time;
mod xstate;

pub use caller::Caller;
pub use context_type::ContextType;
pub use guard::{Guard, GuardFn, GuardRegistration, TakesCaller, Verdict, judge};
pub(crate) use machine::GuardRefusal;
pub use machine::Machine;
pub use toolgate_machine::{BindingError, Delayed, MachineError, MachineSpec, Mint, StateSpec, Transition};
pub use xstate::MachineLoadError;
