//! [`Shared`]: what every connection and transport of one server shares — the engine, the
//! HTTP settings, who may call, the sessions and listeners — and [`AuthOptions`].

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use rmcp::model::Implementation;

use super::http_options::HttpOptions;
use super::{catalog, listeners, watchers};
use crate::action::LogThreshold;
use crate::auth::Authenticator;
use crate::auth::metadata::ProtectedResource;
use crate::auth::{Principal, Roster};
use crate::engine::{Engine, SessionFocus};
use crate::store::StoreKey;

pub(crate) struct Shared {
    /// What judges, runs and commits calls.
    pub(crate) engine: Arc<Engine>,
    pub(crate) implementation: Implementation,
    pub(crate) instructions: Option<String>,
    /// Serve Streamable HTTP without sessions.
    pub(crate) sessionless: bool,
    pub(crate) http: HttpOptions,
    /// Serving, draining or closing: one shutdown for every listener.
    pub(crate) lifecycle: Arc<super::lifecycle::Lifecycle>,
    /// How callers authenticate.
    pub(crate) auth: AuthOptions,
    /// Which kept sessions list from which keyed instance.
    pub(crate) watchers: watchers::Watchers<ConnectionState>,
    /// The open `subscriptions/listen` streams.
    pub(crate) listeners: listeners::Listeners,
    /// Resources, resource templates and prompts.
    pub(crate) catalog: catalog::Catalog,
    /// The kept sessions (stdio, stateful HTTP), for what every one of them hears.
    pub(crate) sessions: std::sync::Mutex<Vec<std::sync::Weak<ConnectionState>>>,
    /// The stateful HTTP sessions by the id rmcp gave them, for the calls the owned path
    /// serves on them (`owned.rs`).
    pub(crate) by_session_id: std::sync::Mutex<std::collections::HashMap<Arc<str>, std::sync::Weak<ConnectionState>>>,
    /// Which sessions subscribed to a resource of which keyed instance.
    pub(crate) resource_watchers: watchers::Watchers<ConnectionState>,
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

/// What the server keeps of one kept connection (stdio, or a stateful HTTP session): its
/// flow, focus and log level, who opened it, how to reach its client, what it last listed,
/// what it subscribed to, and the calls the owned path serves on it.
pub(crate) struct ConnectionState {
    pub(in crate::server) shared: Arc<Shared>,
    /// Random, so no client can name it and replicas sharing a store never collide; made
    /// when first needed (a sessionless request, served by a handler of its own, never
    /// needs one).
    pub(in crate::server) id: std::sync::OnceLock<String>,
    /// Whether the server keeps this connection (stdio, or a session it initialized).
    pub(in crate::server) kept: AtomicBool,
    pub(in crate::server) focus: SessionFocus,
    /// The focus's move count when this session last watched its focus instances.
    pub(in crate::server) watched_moves: std::sync::atomic::AtomicU64,
    /// The lowest log level the client asked for.
    pub(in crate::server) log_threshold: LogThreshold,
    /// The principal that opened the session, for its listings when another session's
    /// commit moves an instance it lists from.
    pub(in crate::server) opener: std::sync::OnceLock<Option<Principal>>,
    /// The client, for notifications no call of its own causes.
    pub(in crate::server) peer: std::sync::OnceLock<rmcp::service::Peer<rmcp::RoleServer>>,
    /// The names its latest `tools/list` (or notification) showed, to tell it only of a
    /// change; `None` before it listed.
    pub(in crate::server) listed: std::sync::Mutex<Option<Vec<String>>>,
    /// One refresh at a time, so two commits never both tell it of one change.
    pub(in crate::server) refreshing: tokio::sync::Mutex<()>,
    /// The resources it subscribed to (`resources/subscribe`, MCP 2025-11-25), each with
    /// the instance it names, for a template bound to instances.
    pub(in crate::server) subscribed: std::sync::Mutex<BTreeMap<String, Option<StoreKey>>>,
    /// Cancelled when the transport ends (stdin closed): its listening streams stop. Made
    /// only for a transport that says when it ends (stdio).
    pub(in crate::server) ended: std::sync::OnceLock<tokio_util::sync::CancellationToken>,
    /// The calls the owned path serves on this session, by request id, for the client's
    /// `notifications/cancelled` (which rmcp hands to `on_cancelled`).
    pub(in crate::server) owned_calls:
        std::sync::Mutex<std::collections::HashMap<rmcp::model::RequestId, tokio_util::sync::CancellationToken>>,
    /// When the owned path last told rmcp's session that it is in use (ms since the epoch):
    /// rmcp closes a session idle for its timeout, and sees none of the calls served here.
    pub(in crate::server) owned_touch_ms: std::sync::atomic::AtomicU64,
}

/// A kept connection's flow is its own: removed from the store when the connection ends,
/// by this connection only.
impl Drop for ConnectionState {
    fn drop(&mut self) {
        // A connection that never named its flow stored none.
        let (true, Some(id)) = (*self.kept.get_mut(), self.id.get()) else { return };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        let (store, key) = (self.shared.engine.store.clone(), StoreKey::connection(id));
        runtime.spawn(async move {
            if let Err(error) = store.remove(&key).await {
                tracing::warn!(%key, %error, "cannot remove a finished connection's flow");
            }
        });
    }
}

impl ConnectionState {
    pub(in crate::server) fn id(&self) -> &str {
        self.id.get_or_init(|| uuid::Uuid::new_v4().simple().to_string())
    }
}
