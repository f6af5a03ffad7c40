//! The error contract: every refusal and failure a model can see, with a stable `code`.
//!
//! Refusals and handler failures become *tool results* (`isError: true`) whose
//! `structuredContent` always has `code` and `message` plus the fields the code promises.
//! [`ToolError::to_structured`] is the one place that mapping lives; each code's fields
//! are the serialization of its own type (`refusal`, [`Failure`]).
//!
//! A handler can say `INVALID_ARGUMENT`, `NOT_FOUND`, `INTERNAL` or a code of its own; the
//! other codes are the gate's, and only the runtime can build them.

mod code;
mod correlation;
pub(crate) mod echo;
mod failure;
mod field;
pub(crate) mod jsonrpc;
mod refusal;
mod reserved;
mod structured;
mod tool_error;

pub(crate) use code::{Code, is_a_step, verdict};
pub(crate) use correlation::CorrelationId;
pub use failure::{Failure, Retry};
pub use field::FieldError;
pub(crate) use refusal::{DomainMismatch, DomainNotSelected, Forbidden, GuardFailed};
pub(crate) use reserved::store_failure;
pub use tool_error::ToolError;
