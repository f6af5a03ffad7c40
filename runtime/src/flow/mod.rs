//! Flows: conversations with one client, and how a call names its own.
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
mod id;

use crate::auth::Principal;
use std::time::Duration;

pub use handle::{HandleSigner, WeakKey};
pub use id::FlowId;
use serde_json::{Map, Value};

use crate::error::{Code, ToolError};
use crate::store::{StoreKey, now_ms};
use handle::HandleError;

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

/// How this server names conversations where no session does: the signer and the
/// argument its handles travel in.
#[derive(Debug, Clone)]
pub(crate) struct Flows {
    signer: HandleSigner,
    argument: String,
}

impl Flows {
    pub(crate) fn new(signer: HandleSigner, argument: String) -> Self {
        Self { signer, argument }
    }

    /// The signer, for other tokens the server seals with the same keys.
    pub(crate) fn signer(&self) -> &HandleSigner {
        &self.signer
    }

    /// The argument that carries handles.
    pub(crate) fn argument(&self) -> &str {
        &self.argument
    }

    /// How long a flow lives after its last use.
    pub(crate) fn ttl(&self) -> Duration {
        self.signer.ttl()
    }

    /// When a flow committed at `now_ms` expires.
    pub(crate) fn expiry_from(&self, now_ms: u64) -> u64 {
        self.signer.expiry_from(now_ms)
    }

    /// The handle to return for flow `flow_id`, expiring with it.
    pub(crate) fn handle(&self, flow_id: &str, expires_at_ms: u64, principal: Option<&Principal>) -> String {
        self.signer.mint(flow_id, expires_at_ms, principal)
    }

    /// The flow a call runs in: the handle in its arguments, else its connection, else a
    /// new flow. (The handle stays in the arguments until they are checked.)
    /// A handle serves only the principal it was minted for.
    pub(crate) fn identify(
        &self,
        origin: &Origin,
        arguments: &Map<String, Value>,
        principal: Option<&Principal>,
    ) -> Result<FlowRef, ToolError> {
        let argument = self.argument.as_str();
        match (field::read(arguments, argument)?, origin) {
            (Some(handle), _) => match self.signer.verify(handle, now_ms(), principal) {
                Ok(verified) => Ok(FlowRef::handle(verified.flow_id, false)),
                Err(HandleError::Invalid) => Err(ToolError::invalid_handle(
                    format!("`{argument}` is not a state handle this server issued to this caller"),
                    self.restart_hint(),
                )),
                Err(HandleError::Expired) => {
                    Err(ToolError::handle_expired(format!("the `{argument}` handle has expired"), self.restart_hint()))
                }
            },
            (None, Origin::Connection(key)) => Ok(FlowRef::connection(key.clone())),
            (None, Origin::Sessionless) => Ok(FlowRef::handle(HandleSigner::new_flow_id(), true)),
        }
    }

    /// What to do about a refused or gone handle.
    pub(crate) fn restart_hint(&self) -> String {
        let argument = &self.argument;
        format!(
            "pass the exact `{argument}` value of this conversation's latest result. If the conversation ended or its handle expired, start a new one: call again without `{argument}` (select the domain with switch_domain first where the server has several) and use the `{argument}` its result returns"
        )
    }

    /// Tells a sessionless caller without a handle why it was refused as if new.
    pub(crate) fn explain_new_flow(&self, error: &ToolError, content: &mut Value) {
        if !matches!(error.reserved_code(), Some(Code::Forbidden | Code::DomainNotSelected | Code::DomainMismatch)) {
            return;
        }
        let argument = &self.argument;
        let note = format!(
            "This call carried no `{argument}` handle, so it ran in a new conversation. A call that starts one (such as switch_domain) returns `{argument}`: pass its latest value as `{argument}` in every later call."
        );
        if let Value::Object(fields) = content {
            let hint = match fields.get("hint").and_then(Value::as_str) {
                Some(hint) => format!("{note} {hint}"),
                None => note,
            };
            fields.insert("hint".into(), hint.into());
        }
    }
}
