//! [`StoreError`]: why a store operation failed.

/// Why a store operation failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// The backend cannot be reached or answered with an error; nothing was written.
    #[error("store unavailable: {0}")]
    Unavailable(String),
    /// The store stopped answering after a commit was sent: it may or may not have been
    /// applied.
    #[error("the commit's outcome is unknown: {0}")]
    OutcomeUnknown(String),
    /// The commit's lease was no longer held (it expired and perhaps another holder took
    /// it); nothing was written.
    #[error("the lease on the record was lost before the commit")]
    LeaseLost,
    /// A statement of a handler's own ([`Transaction`](crate::Transaction)) failed, as the
    /// database says; nothing of the call was written.
    #[error("a statement failed: {0}")]
    Statement(String),
    /// A compare-and-set found another version than expected; nothing was written.
    #[error("version conflict: expected {expected}, found {found}")]
    Conflict {
        /// The version the caller read.
        expected: u64,
        /// The version the store holds.
        found: u64,
    },
}

/// A backend's error (a connection refused, a statement SQL rejected) as
/// [`StoreError::Unavailable`]: nothing was written.
pub(crate) fn unavailable(error: impl std::fmt::Display) -> StoreError {
    StoreError::Unavailable(error.to_string())
}
