//! A challenge as the store keeps it, and the refusal of one that is gone.

use serde::{Deserialize, Serialize};

use crate::error::ToolError;

/// A challenge as the store keeps it: digests only, never the code.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct Challenge {
    /// The principal's digest.
    pub(super) principal: String,
    /// The transaction's digest.
    pub(super) transaction: String,
    /// SHA-256 of the challenge id and the code; `None` for TOTP.
    pub(super) code: Option<String>,
    /// Wrong codes it still takes.
    pub(super) attempts_left: u32,
    /// Spent on its own record (by a call that holds no lease of the record it is bound
    /// to, `spend.rs`), or void: it confirms nothing more. (A code spent in the commit of
    /// the record it is bound to is marked there,
    /// [`Snapshot::spent_challenges`](crate::store::Snapshot::spent_challenges).)
    pub(super) spent: bool,
}

/// The refusal of a challenge that is gone: expired, used, voided, another principal's, or
/// never issued — the same words for each, so that nothing is learnt by probing ids.
pub(crate) fn gone(tool: &str) -> ToolError {
    ToolError::confirmation_failed(
        tool,
        "no live challenge of yours has this id: it expired, was used, or never existed",
        0,
    )
}
