//! Flows: conversations with one client (design §4), and how a call names its own.
//!
//! A flow holds the conversation machines' states (machines without a `key`) and the
//! active intent domain. Per call it is identified, in this order, by
//!
//! 1. a signed state handle in the call's arguments (the `flow` argument by default; see
//!    [`handle`]), minted by this server when the flow started;
//! 2. the connection the call arrived on: stdio, or the stateful Streamable HTTP session
//!    the server created for it (recorded when the session was initialized, never read
//!    back from a header a request carries);
//! 3. nothing: a sessionless request (MCP 2026-07-28) without a handle runs in a new flow,
//!    which is stored, and its handle returned, only if the call commits something.
//!
//! Keyed machines' states are not in any flow: they belong to their instance.

pub(crate) mod field;
pub mod handle;

use std::time::Duration;

pub use handle::{HandleSigner, WeakKey};

use crate::store::StoreKey;

/// Where a call arrived from, as far as flows are concerned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Origin {
    /// A connection the server keeps: its flow is stored under this key.
    Connection(StoreKey),
    /// A sessionless request: only a handle can name its flow.
    Sessionless,
}

/// The flow a call runs in, once identified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FlowRef {
    pub(crate) key: StoreKey,
    /// The handle's flow id when the flow is named by a handle (then results carry a
    /// refreshed handle), `None` for a connection's flow.
    pub(crate) handle_id: Option<String>,
    /// A sessionless call without a handle: the flow does not exist yet.
    pub(crate) is_new: bool,
}

impl FlowRef {
    pub(crate) fn connection(key: StoreKey) -> Self {
        Self { key, handle_id: None, is_new: false }
    }

    pub(crate) fn handle(flow_id: String, is_new: bool) -> Self {
        Self { key: StoreKey::handle(&flow_id), handle_id: Some(flow_id), is_new }
    }
}

/// The default life of a handle and its flow after their last use.
pub const DEFAULT_HANDLE_TTL: Duration = Duration::from_secs(60 * 60);

/// The default name of the handle argument.
pub const DEFAULT_HANDLE_ARGUMENT: &str = "flow";
