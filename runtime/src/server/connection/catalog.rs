//! The catalog's requests on one connection: `prompts/get` (a round that may ask the
//! client) and what a resource subscription names.

use std::collections::BTreeMap;

use rmcp::RoleServer;
use rmcp::model::{ErrorData, GetPromptRequestParams, GetPromptResponse};
use rmcp::service::RequestContext;
use serde_json::{Value, json};

use super::state::Connection;
use crate::auth::Principal;
use crate::flow::Origin;
use crate::prompt::PromptCall;
use crate::server::catalog::Named;
use crate::server::rounds::Retry;
use crate::store::StoreKey;

impl Connection {
    /// `prompts/get`: the prompt's messages, or a round that asks the client.
    pub(super) async fn prompt_get(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let principal = self.principal(&context);
        let prompt = self.shared.prompt(&request.name, principal.as_ref())?;
        let raw = request.arguments.unwrap_or_default();
        let mut arguments = BTreeMap::new();
        for (name, value) in &raw {
            let Value::String(value) = value else {
                return Err(ErrorData::invalid_params(
                    format!("argument `{name}` of prompt `{}` must be a string", request.name),
                    Some(json!({ "prompt": request.name, "argument": name })),
                ));
            };
            arguments.insert(name.clone(), value.clone());
        }
        if let Some(missing) = prompt.missing(&arguments).first() {
            return Err(ErrorData::invalid_params(
                format!("prompt `{}` requires the argument `{missing}`", request.name),
                Some(json!({ "prompt": request.name, "argument": missing })),
            ));
        }
        let kept = matches!(self.origin(), Origin::Connection(_));
        let retry = Retry {
            method: "prompts/get",
            name: request.name.clone().into(),
            request_state: request.request_state,
            input_responses: request.input_responses,
        };
        let round = self.shared.round(&context, kept, principal.as_ref(), &raw, retry)?;
        let call = PromptCall { arguments, principal: principal.clone(), inputs: round.inputs.clone() };
        match self.shared.render(&prompt, call).await {
            Ok(result) => Ok(result.into()),
            Err(error) => match round.unanswered(&self.shared) {
                Some(asked) => asked.map(Into::into),
                None => Err(prompt_failed(&request.name, &error)),
            },
        }
    }
}

impl Connection {
    /// What subscribing to `uri` means for `principal`: the URI, and the instance it names
    /// for a template bound to instances; `None` for a URI the principal may not read.
    pub(super) fn subscription(
        &self,
        uri: String,
        principal: Option<&Principal>,
    ) -> Option<(String, Option<StoreKey>)> {
        let instance = match self.shared.resolve(&uri, principal)? {
            Named::Resource(_) => None,
            Named::Template { instance, .. } => instance.map(|instance| instance.key),
        };
        Some((uri, instance))
    }
}

/// A prompt's renderer failed: the structured error as the JSON-RPC error's data.
fn prompt_failed(name: &str, error: &crate::error::ToolError) -> ErrorData {
    let mut data = error.to_structured();
    if let Value::Object(fields) = &mut data {
        fields.insert("prompt".into(), name.into());
    }
    match error.code() {
        "INVALID_ARGUMENT" | "NOT_FOUND" => ErrorData::invalid_params(error.to_string(), Some(data)),
        _ => ErrorData::internal_error(error.to_string(), Some(data)),
    }
}
