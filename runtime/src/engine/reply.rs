//! A finished call, as the engine hands it to the transport that asked.

use serde_json::Value;

use crate::store::StoreKey;

/// A finished call: the `structuredContent` to return, whether it is an error, and
/// whether the session's tool list changed.
pub(crate) struct Reply {
    pub(crate) content: Value,
    /// The content blocks of a handler that returned [`Content`](crate::content::Content).
    pub(crate) blocks: Option<Vec<rmcp::model::ContentBlock>>,
    pub(crate) is_error: bool,
    pub(crate) listing_changed: bool,
    /// The keyed instance whose state the call moved, if it fired a transition on one.
    pub(crate) moved: Option<StoreKey>,
}

impl Reply {
    /// A refusal's reply, its content the error's structured content.
    pub(crate) fn refusal(content: Value) -> Self {
        Self { content, blocks: None, is_error: true, listing_changed: false, moved: None }
    }

    /// The MCP result: the structured content (and, for a handler that returned
    /// [`Content`](crate::content::Content), its blocks as the content).
    pub(crate) fn into_result(self) -> rmcp::model::CallToolResult {
        use rmcp::model::CallToolResult;
        match self.blocks {
            _ if self.is_error => CallToolResult::structured_error(self.content),
            None => CallToolResult::structured(self.content),
            // Content blocks are the result's content; toolgate's own fields, if the tool
            // has any, its structured content.
            Some(blocks) => {
                let mut result = CallToolResult::success(blocks);
                result.structured_content = Some(self.content).filter(|c| c.as_object().is_some_and(|o| !o.is_empty()));
                result
            }
        }
    }
}
