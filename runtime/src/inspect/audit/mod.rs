//! The routing checklist of the source documents, applied to every tool: what a model
//! needs from a tool's name, description and schema to route to it and call it right, and
//! what the server needs to stop a wrong call.

mod checklist;
mod judge;
mod report;

pub use checklist::{Rule, Verdict};
pub use report::{Audit, Finding};
