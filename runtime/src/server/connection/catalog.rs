//! The catalog's requests: on one connection, `prompts/get` (a round that may ask the
//! client) and what a resource subscription names; and what the server's catalog lists,
//! reads, renders and completes for one principal.

use std::collections::BTreeMap;

use rmcp::RoleServer;
use rmcp::ServerHandler;
use rmcp::model::{
    CompleteRequestParams, CompleteResult, CompletionInfo, ErrorData, GetPromptRequestParams, GetPromptResponse,
    GetPromptResult, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ReadResourceResult,
    Reference, SubscriptionFilter,
};
use rmcp::service::RequestContext;
use serde_json::{Value, json};

use super::state::Connection;
use crate::auth::Principal;
use crate::completion::Completion;
use crate::error::ToolError;
use crate::flow::Origin;
use crate::prompt::{Prompt, PromptCall};
use crate::resource::{ReadRequest, ResourceBody};
use crate::server::Shared;
use crate::server::catalog::{
    InstanceRef, LIST_TTL_MS, MAX_COMPLETIONS, Named, cache_scope, may_see, read, read_failed,
};
use crate::server::rounds::Retry;
use crate::store::{StoreKey, now_ms};

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
    /// What this server honours of a listening stream's `requested` filter: whatever it
    /// advertises, and of the resources, only those it has (which of them a principal may
    /// read, [`Connection::subscription`] sees); a URI it does not know is dropped from the
    /// acknowledgement.
    pub(crate) fn honoured(&self, requested: &SubscriptionFilter) -> SubscriptionFilter {
        let mut accepted = requested.supported_by(&self.get_info().capabilities);
        if let Some(uris) = accepted.resource_subscriptions.as_mut() {
            uris.retain(|uri| self.shared.knows(uri));
        }
        accepted
    }

    /// What subscribing to `uri` means for `principal`: the URI, and the instance it names
    /// for a template bound to instances; `None` for a URI the principal may not read.
    pub(crate) fn subscription(
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

/// What the catalog answers, as the server's callers may see it.
impl Shared {
    /// Whether `uri` is one of the server's resources, or matches one of its templates
    /// (whoever may read it).
    pub(in crate::server) fn knows(&self, uri: &str) -> bool {
        read(&self.catalog.resources).iter().any(|r| r.definition.uri == uri)
            || self.catalog.templates.iter().any(|t| t.pattern.matches(uri).is_some())
    }

    pub(in crate::server) fn list_resources(&self, principal: Option<&Principal>) -> ListResourcesResult {
        let resources = read(&self.catalog.resources);
        let varies = resources.iter().any(|r| !r.scopes.is_empty());
        let visible = resources.iter().filter(|r| may_see(&r.scopes, principal)).map(|r| r.definition.clone());
        ListResourcesResult::with_all_items(visible.collect())
            .with_ttl_ms(LIST_TTL_MS)
            .with_cache_scope(cache_scope(varies))
    }

    pub(in crate::server) fn list_resource_templates(
        &self,
        principal: Option<&Principal>,
    ) -> ListResourceTemplatesResult {
        let templates = &self.catalog.templates;
        let varies = templates.iter().any(|t| !t.scopes.is_empty());
        let visible = templates.iter().filter(|t| may_see(&t.scopes, principal)).map(|t| t.definition.clone());
        ListResourceTemplatesResult::with_all_items(visible.collect())
            .with_ttl_ms(LIST_TTL_MS)
            .with_cache_scope(cache_scope(varies))
    }

    /// What `uri` names for `principal`: a resource, or a template's resource (for one bound
    /// to instances, with the instance, whatever its state); `None` if nothing this
    /// principal may see. A key the instances' key check refuses names nothing.
    pub(in crate::server) fn resolve(&self, uri: &str, principal: Option<&Principal>) -> Option<Named<'_>> {
        let resources = read(&self.catalog.resources);
        if let Some(resource) = resources.iter().find(|r| r.definition.uri == uri) {
            return may_see(&resource.scopes, principal).then(|| Named::Resource(resource.clone()));
        }
        drop(resources);
        self.catalog.templates.iter().filter(|t| may_see(&t.scopes, principal)).find_map(|template| {
            let mut variables = template.pattern.matches(uri)?;
            let instance = match &template.instances {
                None => None,
                Some(instances) => {
                    let (machine, key) = self.engine.registry.instance_key_of(&instances.machine)?;
                    let raw = variables.get(&instances.variable)?.clone();
                    let raw = if key.integer { Value::from(raw.parse::<i64>().ok()?) } else { Value::String(raw) };
                    let mut arguments = serde_json::Map::new();
                    arguments.insert(key.field.clone(), raw);
                    let id = key.read(&mut arguments).ok()?;
                    variables.insert(instances.variable.clone(), id.clone());
                    let key = crate::visibility::instance_key(machine, &id, principal);
                    Some(InstanceRef { id, key })
                }
            };
            Some(Named::Template { template, variables, instance })
        })
    }

    /// `resources/read`. Anything the principal may not read — unknown, hidden by a scope,
    /// an instance that does not exist yet, or exists in a state that does not show it, or
    /// in another tenant — is the same "resource not found".
    pub(in crate::server) async fn read_resource(
        &self,
        uri: &str,
        principal: Option<&Principal>,
    ) -> Result<ReadResourceResult, ErrorData> {
        let not_found = || {
            let uri = crate::error::echo::name(uri);
            ErrorData::resource_not_found(format!("no resource `{uri}`"), Some(json!({ "uri": uri })))
        };
        let named = self.resolve(uri, principal).ok_or_else(not_found)?;
        let request = |variables, instance, context| ReadRequest {
            uri: uri.to_string(),
            variables,
            principal: principal.cloned(),
            instance,
            context,
        };
        // What was read, and whether it is the same for every caller (a fixed resource no
        // scope hides) and may be cached as such.
        let (contents, shared) = match named {
            Named::Resource(resource) => match &resource.body {
                ResourceBody::Fixed(body) => (Ok(body.contents(uri)), resource.scopes.is_empty()),
                ResourceBody::Read(reader) => {
                    (reader(request(BTreeMap::new(), None, None)).await.map(|body| body.contents(uri)), false)
                }
            },
            Named::Template { template, variables, instance } => {
                let mut context = None;
                let instance = match (&template.instances, instance) {
                    (Some(binding), Some(instance)) => {
                        let Some(machine) = self.engine.registry.machines().find(|m| m.id() == binding.machine) else {
                            return Err(not_found());
                        };
                        let snapshot = self.engine.store.load(&instance.key).await.map_err(|error| {
                            tracing::warn!(%error, "resources/read cannot load an instance");
                            ErrorData::internal_error(
                                "the state store is unavailable",
                                Some(json!({ "code": "STORE_UNAVAILABLE" })),
                            )
                        })?;
                        // Another principal's instance is one that does not exist; what time has
                        // made due is applied to what is read.
                        let snapshot = crate::visibility::seen_by(machine, snapshot, principal);
                        let snapshot = machine.settle(&snapshot, now_ms()).map_or(snapshot, |(settled, _)| settled);
                        let state = snapshot.state_of(machine.id(), machine.initial());
                        let exists = snapshot.version > 0;
                        let shown = binding.states.is_empty() || binding.states.iter().any(|s| s == state);
                        if !exists || !shown {
                            return Err(not_found());
                        }
                        context = snapshot.context.clone().map(|value| (machine.id().to_string(), value));
                        Some((instance.id, state.to_string()))
                    }
                    _ => None,
                };
                ((template.read)(request(variables, instance, context)).await.map(|body| body.contents(uri)), false)
            }
        };
        let contents = contents.map_err(|error| read_failed(uri, &error))?;
        Ok(ReadResourceResult::new(vec![contents])
            .with_ttl_ms(if shared { LIST_TTL_MS } else { 0 })
            .with_cache_scope(cache_scope(!shared)))
    }

    pub(in crate::server) fn list_prompts(&self, principal: Option<&Principal>) -> ListPromptsResult {
        let prompts = read(&self.catalog.prompts);
        let varies = prompts.iter().any(|p| !p.scopes.is_empty());
        let visible = prompts.iter().filter(|p| may_see(&p.scopes, principal)).map(|p| p.definition.clone());
        ListPromptsResult::with_all_items(visible.collect())
            .with_ttl_ms(LIST_TTL_MS)
            .with_cache_scope(cache_scope(varies))
    }

    /// `prompts/get`: the prompt's messages, or `-32602` for an unknown prompt or a missing
    /// required argument.
    pub(in crate::server) fn prompt(&self, name: &str, principal: Option<&Principal>) -> Result<Prompt, ErrorData> {
        let prompts = read(&self.catalog.prompts);
        prompts.iter().find(|p| p.definition.name == name && may_see(&p.scopes, principal)).cloned().ok_or_else(|| {
            let name = crate::error::echo::name(name);
            ErrorData::invalid_params(format!("unknown prompt `{name}`"), Some(json!({ "prompt": name })))
        })
    }

    pub(in crate::server) async fn render(
        &self,
        prompt: &Prompt,
        call: PromptCall,
    ) -> Result<GetPromptResult, ToolError> {
        let messages = (prompt.render)(call).await?;
        let mut result = GetPromptResult::new(messages.messages);
        result.description = messages.description.or_else(|| prompt.definition.description.clone());
        Ok(result)
    }

    /// `completion/complete`: the completer's first 100 values, or none for an argument
    /// without one.
    pub(in crate::server) fn complete(
        &self,
        request: &CompleteRequestParams,
        principal: Option<&Principal>,
    ) -> Result<CompleteResult, ErrorData> {
        let completion = Completion {
            argument: request.argument.name.clone(),
            value: request.argument.value.clone(),
            context: request
                .context
                .as_ref()
                .and_then(|c| c.arguments.clone())
                .map(|arguments| arguments.into_iter().collect())
                .unwrap_or_default(),
        };
        let completer = match &request.r#ref {
            Reference::Prompt(reference) => {
                let prompt = self.prompt(&reference.name, principal)?;
                prompt.completions.get(&completion.argument).cloned()
            }
            Reference::Resource(reference) => {
                let template = self
                    .catalog
                    .templates
                    .iter()
                    .find(|t| t.definition.uri_template == reference.uri && may_see(&t.scopes, principal))
                    .ok_or_else(|| {
                        ErrorData::invalid_params(
                            format!("no resource template `{}`", reference.uri),
                            Some(json!({ "uri": reference.uri })),
                        )
                    })?;
                template.completions.get(&completion.argument).cloned()
            }
            _ => None,
        };
        let mut values = completer.map(|complete| complete(&completion)).unwrap_or_default();
        let total = values.len();
        values.truncate(MAX_COMPLETIONS);
        let has_more = total > values.len();
        let info = CompletionInfo::with_pagination(values, Some(u32::try_from(total).unwrap_or(u32::MAX)), has_more)
            .map_err(|problem| ErrorData::internal_error(problem, None))?;
        Ok(CompleteResult::new(info))
    }
}
