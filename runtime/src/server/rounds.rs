//! The rounds of a request that asks the client (MCP 2026-07-28's multi round-trip
//! requests): a retry's sealed `requestState` opened and checked against the call, and a
//! round that stopped to ask ended with an `InputRequiredResult` (see [`crate::input`]).

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::model::{ClientCapabilities, ErrorData, InputRequiredResult, InputResponses};
use rmcp::service::RequestContext;
use serde_json::{Map, Value, json};

use super::Shared;
use super::rmcp_client::RmcpClient;
use crate::auth::Principal;
use crate::client::ClientLink;
use crate::input::{self, Inputs, Unanswered};

/// One round of a request: how its handler asks, and which call it is.
pub(super) struct Round {
    pub(super) inputs: Arc<Inputs>,
    /// What the round's state is bound to, kept only where rounds exist (MCP 2026-07-28):
    /// its digest ([`input::call_digest`]) is computed only if the round seals a state.
    call: Option<Call>,
}

struct Call {
    principal: Option<Principal>,
    method: &'static str,
    name: Cow<'static, str>,
    arguments: Map<String, Value>,
}

impl Call {
    fn digest(&self) -> String {
        input::call_digest(self.principal.as_ref(), &format!("{}:{}", self.method, self.name), &self.arguments)
    }
}

/// What a request's retry brings: its sealed state and its answers.
pub(super) struct Retry {
    /// The method and name the round belongs to (`tools/call`, `invoice_pay`).
    pub(super) method: &'static str,
    pub(super) name: Cow<'static, str>,
    pub(super) request_state: Option<String>,
    pub(super) input_responses: Option<InputResponses>,
}

impl Shared {
    /// Starts a round of the request `retry` names, with `arguments`, made by `principal`:
    /// a retry's sealed state must be this server's, for this very call, and unexpired, or
    /// the request is refused (`-32602`) before anything runs.
    pub(super) fn round(
        &self,
        context: &RequestContext<RoleServer>,
        kept: bool,
        principal: Option<&Principal>,
        arguments: &Map<String, Value>,
        retry: Retry,
    ) -> Result<Round, ErrorData> {
        let rounds = context.protocol_version().is_some_and(|version| !version.has_initialize());
        let link: Arc<dyn ClientLink> = Arc::new(RmcpClient(context.peer.clone()));
        let client = (context.client_capabilities().unwrap_or_default(), &link);
        self.round_of(client, rounds, kept, principal, arguments, retry)
    }

    /// [`round`](Self::round), from the client's capabilities and link rather than rmcp's
    /// context; `rounds`: whether the request is of a revision that asks in rounds.
    pub(super) fn round_of(
        &self,
        (capabilities, link): (ClientCapabilities, &Arc<dyn ClientLink>),
        rounds: bool,
        kept: bool,
        principal: Option<&Principal>,
        arguments: &Map<String, Value>,
        retry: Retry,
    ) -> Result<Round, ErrorData> {
        let call = rounds.then(|| Call {
            principal: principal.cloned(),
            method: retry.method,
            name: retry.name,
            arguments: arguments.clone(),
        });
        let mut answers = match (&retry.request_state, &call) {
            (Some(state), Some(call)) => input::open(self.engine.flows.signer(), state, &call.digest()).ok_or_else(|| {
                ErrorData::invalid_params(
                    "requestState failed its integrity check, expired, or belongs to another call: call again without it",
                    Some(json!({ "code": "INVALID_REQUEST_STATE" })),
                )
            })?,
            _ => BTreeMap::new(),
        };
        // This round's answers; an answer to a question no round asked is never read.
        answers.extend(retry.input_responses.unwrap_or_default());
        Ok(Round { inputs: Arc::new(Inputs::of_client(capabilities, link, rounds, kept, answers)), call })
    }
}

impl Round {
    /// Whether the request is of a revision that asks in rounds (MCP 2026-07-28), where the
    /// server sends only the notifications a listening stream asked for.
    pub(super) fn in_rounds(&self) -> bool {
        self.call.is_some()
    }

    /// After a handler that did not finish: the round's end if it stopped to ask — the
    /// questions with the answers so far sealed, or the capability the client lacks.
    pub(super) fn unanswered(&self, shared: &Shared) -> Option<Result<InputRequiredResult, ErrorData>> {
        Some(match self.inputs.unanswered()? {
            Unanswered::Questions { requests, answered } => {
                let call = self.call.as_ref()?;
                let state = input::seal(shared.engine.flows.signer(), call.digest(), answered);
                Ok(InputRequiredResult::new(Some(requests), Some(state)))
            }
            Unanswered::Missing(capabilities) => Err(ErrorData::missing_required_client_capability(capabilities)),
        })
    }
}
