//! What a connection answers when a request cannot be served: a method the server does not
//! offer, a task it does not know, a store it cannot reach.

use rmcp::model::ErrorData;
use serde_json::json;

use crate::engine::TaskError;

/// The server declares exactly what it serves: a method of a capability it does not
/// declare (no prompts, say) is one it does not have (`-32601`), not an empty answer.
pub(super) fn offered(offered: bool, method: &str) -> Result<(), ErrorData> {
    match offered {
        true => Ok(()),
        false => Err(ErrorData::new(
            rmcp::model::ErrorCode::METHOD_NOT_FOUND,
            "Method not found",
            Some(json!({ "method": method })),
        )),
    }
}

/// A task request refused: an id unknown to this caller (never made, expired, or
/// another's) is `-32602`, as the extension says.
pub(super) fn task_error(error: TaskError) -> ErrorData {
    match error {
        TaskError::Unknown => ErrorData::invalid_params("unknown task", None),
        TaskError::Store(error) => {
            tracing::warn!(%error, "a task request cannot reach the store");
            ErrorData::internal_error("the state store is unavailable", Some(json!({ "code": "STORE_UNAVAILABLE" })))
        }
        TaskError::Lost => ErrorData::internal_error("the call stopped before it could run as a task", None),
    }
}

pub(super) fn store_unavailable(error: crate::store::StoreError) -> ErrorData {
    tracing::warn!(%error, "tools/list cannot load the flow");
    ErrorData::internal_error("the flow store is unavailable", Some(json!({ "code": "STORE_UNAVAILABLE" })))
}
