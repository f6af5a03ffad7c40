//! What a server offers beside tools — resources, resource templates, prompts — and how
//! each is listed, read, rendered and completed for one principal.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock, RwLockReadGuard};

use rmcp::model::{
    CacheScope, CompleteRequestParams, CompleteResult, CompletionInfo, ErrorData, GetPromptResult, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ReadResourceResult, Reference,
};
use serde_json::{Value, json};

use super::Shared;
use crate::auth::Principal;
use crate::completion::Completion;
use crate::error::ToolError;
use crate::prompt::{Prompt, PromptCall};
use crate::resource::{ReadRequest, Resource, ResourceBody, ResourceTemplate};
use crate::store::{StoreKey, now_ms};

/// How long a client may keep a list, or a fixed resource, before asking again. The lists
/// change only through [`Server::add_prompt`](super::Server::add_prompt) and its kin,
/// which tell listening clients at once.
const LIST_TTL_MS: u64 = 5 * 60 * 1000;

/// The most values one completion returns (MCP's limit).
const MAX_COMPLETIONS: usize = 100;

/// The resources, templates and prompts of a server.
#[derive(Default)]
pub(crate) struct Catalog {
    /// Shared, so that a read holds its resource without copying its content.
    pub(crate) resources: RwLock<Vec<Arc<Resource>>>,
    pub(crate) templates: Vec<ResourceTemplate>,
    pub(crate) prompts: RwLock<Vec<Prompt>>,
}

fn read<T>(lock: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Whether `principal` holds every one of `scopes`.
fn may_see(scopes: &[String], principal: Option<&Principal>) -> bool {
    scopes.iter().all(|scope| principal.is_some_and(|p| p.has_scope(scope)))
}

/// `Public` for what is the same for every caller, `Private` for what varies by who asks.
fn cache_scope(varies: bool) -> CacheScope {
    if varies { CacheScope::Private } else { CacheScope::Public }
}

/// What a URI names, for one principal.
pub(crate) enum Named<'a> {
    Resource(Arc<Resource>),
    Template { template: &'a ResourceTemplate, variables: BTreeMap<String, String>, instance: Option<InstanceRef> },
}

/// The instance a template URI names: its key's canonical spelling and store key.
pub(crate) struct InstanceRef {
    pub(crate) id: String,
    pub(crate) key: StoreKey,
}

impl Catalog {
    pub(crate) fn has_resources(&self) -> bool {
        !read(&self.resources).is_empty() || !self.templates.is_empty()
    }

    pub(crate) fn has_prompts(&self) -> bool {
        !read(&self.prompts).is_empty()
    }

    pub(crate) fn has_completions(&self) -> bool {
        read(&self.prompts).iter().any(|p| !p.completions.is_empty())
            || self.templates.iter().any(|t| !t.completions.is_empty())
    }

    /// Every scope a resource, template or prompt requires.
    pub(crate) fn scopes(&self) -> Vec<String> {
        let resources = read(&self.resources).iter().flat_map(|r| r.scopes.clone()).collect::<Vec<_>>();
        let prompts = read(&self.prompts).iter().flat_map(|p| p.scopes.clone()).collect::<Vec<_>>();
        resources.into_iter().chain(prompts).chain(self.templates.iter().flat_map(|t| t.scopes.clone())).collect()
    }
}

impl Shared {
    /// Whether `uri` is one of the server's resources, or matches one of its templates
    /// (whoever may read it).
    pub(super) fn knows(&self, uri: &str) -> bool {
        read(&self.catalog.resources).iter().any(|r| r.definition.uri == uri)
            || self.catalog.templates.iter().any(|t| t.pattern.matches(uri).is_some())
    }

    pub(super) fn list_resources(&self, principal: Option<&Principal>) -> ListResourcesResult {
        let resources = read(&self.catalog.resources);
        let varies = resources.iter().any(|r| !r.scopes.is_empty());
        let visible = resources.iter().filter(|r| may_see(&r.scopes, principal)).map(|r| r.definition.clone());
        ListResourcesResult::with_all_items(visible.collect())
            .with_ttl_ms(LIST_TTL_MS)
            .with_cache_scope(cache_scope(varies))
    }

    pub(super) fn list_resource_templates(&self, principal: Option<&Principal>) -> ListResourceTemplatesResult {
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
    pub(super) fn resolve(&self, uri: &str, principal: Option<&Principal>) -> Option<Named<'_>> {
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
    pub(super) async fn read_resource(
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
                        // What time has made due is applied to what is read.
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

    pub(super) fn list_prompts(&self, principal: Option<&Principal>) -> ListPromptsResult {
        let prompts = read(&self.catalog.prompts);
        let varies = prompts.iter().any(|p| !p.scopes.is_empty());
        let visible = prompts.iter().filter(|p| may_see(&p.scopes, principal)).map(|p| p.definition.clone());
        ListPromptsResult::with_all_items(visible.collect())
            .with_ttl_ms(LIST_TTL_MS)
            .with_cache_scope(cache_scope(varies))
    }

    /// `prompts/get`: the prompt's messages, or `-32602` for an unknown prompt or a missing
    /// required argument.
    pub(super) fn prompt(&self, name: &str, principal: Option<&Principal>) -> Result<Prompt, ErrorData> {
        let prompts = read(&self.catalog.prompts);
        prompts.iter().find(|p| p.definition.name == name && may_see(&p.scopes, principal)).cloned().ok_or_else(|| {
            let name = crate::error::echo::name(name);
            ErrorData::invalid_params(format!("unknown prompt `{name}`"), Some(json!({ "prompt": name })))
        })
    }

    pub(super) async fn render(&self, prompt: &Prompt, call: PromptCall) -> Result<GetPromptResult, ToolError> {
        let messages = (prompt.render)(call).await?;
        let mut result = GetPromptResult::new(messages.messages);
        result.description = messages.description.or_else(|| prompt.definition.description.clone());
        Ok(result)
    }

    /// `completion/complete`: the completer's first 100 values, or none for an argument
    /// without one.
    pub(super) fn complete(
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

/// A reader's error, as the protocol carries it: "not found" as such, a bad argument as
/// invalid params, anything else as an internal error — each with the structured error.
fn read_failed(uri: &str, error: &ToolError) -> ErrorData {
    let mut data = error.to_structured();
    if let Value::Object(fields) = &mut data {
        fields.insert("uri".into(), uri.into());
    }
    match error.code() {
        "NOT_FOUND" => ErrorData::resource_not_found(error.to_string(), Some(data)),
        "INVALID_ARGUMENT" => ErrorData::invalid_params(error.to_string(), Some(data)),
        _ => ErrorData::internal_error(error.to_string(), Some(data)),
    }
}
