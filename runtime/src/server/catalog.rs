//! What a server offers beside tools — resources, resource templates, prompts — and how
//! each is listed, read, rendered and completed for one principal.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock, RwLockReadGuard};

use rmcp::model::{CacheScope, ErrorData};
use serde_json::Value;

use crate::auth::Principal;
use crate::error::ToolError;
use crate::prompt::Prompt;
use crate::resource::{Resource, ResourceTemplate};
use crate::store::StoreKey;

/// How long a client may keep a list, or a fixed resource, before asking again. The lists
/// change only through [`Server::add_prompt`](super::Server::add_prompt) and its kin,
/// which tell listening clients at once.
pub(super) const LIST_TTL_MS: u64 = 5 * 60 * 1000;

/// The most values one completion returns (MCP's limit).
pub(super) const MAX_COMPLETIONS: usize = 100;

/// The resources, templates and prompts of a server.
#[derive(Default)]
pub(crate) struct Catalog {
    /// Shared, so that a read holds its resource without copying its content.
    pub(crate) resources: RwLock<Vec<Arc<Resource>>>,
    pub(crate) templates: Vec<ResourceTemplate>,
    pub(crate) prompts: RwLock<Vec<Prompt>>,
}

pub(super) fn read<T>(lock: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Whether `principal` holds every one of `scopes`.
pub(super) fn may_see(scopes: &[String], principal: Option<&Principal>) -> bool {
    scopes.iter().all(|scope| principal.is_some_and(|p| p.has_scope(scope)))
}

/// `Public` for what is the same for every caller, `Private` for what varies by who asks.
pub(super) fn cache_scope(varies: bool) -> CacheScope {
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

/// A reader's error, as the protocol carries it: "not found" as such, a bad argument as
/// invalid params, anything else as an internal error — each with the structured error.
pub(super) fn read_failed(uri: &str, error: &ToolError) -> ErrorData {
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
