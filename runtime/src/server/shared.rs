//! [`Shared`]: what every connection and transport of one server shares — the engine, the
//! HTTP settings, who may call, the sessions and listeners — and [`AuthOptions`].

use std::sync::Arc;

use rmcp::model::Implementation;

use super::front::options::HttpOptions;
use super::{catalog, connection, listeners, watchers};
use crate::auth::Authenticator;
use crate::auth::metadata::ProtectedResource;
use crate::auth::{Principal, Roster};
use crate::engine::Engine;

pub(crate) struct Shared {
    /// What judges, runs and commits calls.
    pub(crate) engine: Arc<Engine>,
    pub(crate) implementation: Implementation,
    pub(crate) instructions: Option<String>,
    /// Serve Streamable HTTP without sessions.
    pub(crate) sessionless: bool,
    pub(crate) http: HttpOptions,
    /// How callers authenticate.
    pub(crate) auth: AuthOptions,
    /// Which kept sessions list from which keyed instance.
    pub(crate) watchers: watchers::Watchers<connection::ConnectionState>,
    /// The open `subscriptions/listen` streams.
    pub(crate) listeners: listeners::Listeners,
    /// Resources, resource templates and prompts.
    pub(crate) catalog: catalog::Catalog,
    /// The kept sessions (stdio, stateful HTTP), for what every one of them hears.
    pub(crate) sessions: std::sync::Mutex<Vec<std::sync::Weak<connection::ConnectionState>>>,
    /// The stateful HTTP sessions by the id rmcp gave them, for the calls the owned path
    /// serves on them (`owned.rs`).
    pub(crate) by_session_id:
        std::sync::Mutex<std::collections::HashMap<Arc<str>, std::sync::Weak<connection::ConnectionState>>>,
    /// Which sessions subscribed to a resource of which keyed instance.
    pub(crate) resource_watchers: watchers::Watchers<connection::ConnectionState>,
}

/// How a server learns who is calling.
#[derive(Default)]
pub(crate) struct AuthOptions {
    /// Resolves the bearer tokens of HTTP requests.
    pub(crate) authenticator: Option<Arc<dyn Authenticator>>,
    /// Whether an HTTP request without credentials is refused with 401.
    pub(crate) required: bool,
    /// Who a stdio (or other kept, non-HTTP) connection is.
    pub(crate) stdio_principal: Option<Principal>,
    /// This server as an OAuth protected resource: `(resource, authorization servers)`.
    pub(crate) protected_resource: Option<(String, Vec<String>)>,
    /// Its metadata, once the registry's scopes are known.
    pub(crate) metadata: Option<ProtectedResource>,
    /// Who stdio is, with every scope the tools declare (`--stdio-principal`).
    pub(crate) stdio_every_scope: Option<String>,
    /// Bearer tokens standing for a principal with every scope the tools declare:
    /// `(principal, secret)`, resolved once the registry is known.
    pub(crate) every_scope_tokens: Vec<(String, String)>,
}

impl AuthOptions {
    /// Every principal that can call, as far as the server can list them: the
    /// authenticator's, the stdio principal, and those still to be given every scope of
    /// `declared` (before [`ServerBuilder::build`] resolves them).
    pub(crate) fn roster(&self, declared: &[&str]) -> Roster {
        let every_scope = |subject: &str| Principal::new(subject).with_scopes(declared.iter().copied());
        let roster = self.authenticator.as_ref().map_or_else(Roster::empty, |auth| auth.roster());
        roster
            .and(Roster::of(self.stdio_principal.clone()))
            .and(Roster::of(self.stdio_every_scope.as_deref().map(every_scope)))
            .and(Roster::of(self.every_scope_tokens.iter().map(|(subject, _)| every_scope(subject))))
    }
}
