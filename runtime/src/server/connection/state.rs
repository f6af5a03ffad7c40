//! [`Connection`] and what it keeps of its client: its flow's id, focus, log level,
//! opener, peer, the tool list it last showed, its subscriptions and owned calls.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rmcp::RoleServer;
use rmcp::model::{ErrorData, Tool};
use rmcp::service::RequestContext;

use super::errors::store_unavailable;
use crate::action::LogThreshold;
use crate::auth::Principal;
use crate::engine::{SessionFocus, focus_states};
use crate::flow::Origin;
use crate::server::Shared;
use crate::store::StoreKey;
use crate::visibility::{self, Visibility};

/// Where a call's messages go while its response stream is open: handed to the call in
/// its request's extensions by the transport that gives it a stream of its own
/// (`front/rmcp/sessions.rs`).
#[derive(Debug, Clone)]
pub(crate) struct CallSink(pub(crate) tokio::sync::mpsc::UnboundedSender<rmcp::model::ServerJsonRpcMessage>);

/// The id of the session an `initialize` opens, in the request's extensions.
#[derive(Debug, Clone)]
pub(crate) struct SessionTag(pub(crate) rmcp::transport::streamable_http_server::session::SessionId);

/// Serves one client connection. A connection the server keeps (stdio, or a stateful
/// HTTP session, which it knows by the `initialize` that created it) has a flow of its own
/// and a per-connection tool list; a sessionless request (rmcp builds a fresh handler per
/// request) has neither: its flow comes from a handle, and it lists every tool.
#[derive(Clone)]
pub struct Connection {
    pub(super) shared: Arc<Shared>,
    pub(super) state: Arc<ConnectionState>,
}

pub(crate) struct ConnectionState {
    pub(super) shared: Arc<Shared>,
    /// Random, so no client can name it and replicas sharing a store never collide; made
    /// when first needed (a sessionless request, served by a handler of its own, never
    /// needs one).
    pub(super) id: std::sync::OnceLock<String>,
    /// Whether the server keeps this connection (stdio, or a session it initialized).
    pub(super) kept: AtomicBool,
    pub(super) focus: SessionFocus,
    /// The focus's move count when this session last watched its focus instances.
    pub(super) watched_moves: std::sync::atomic::AtomicU64,
    /// The lowest log level the client asked for.
    pub(super) log_threshold: LogThreshold,
    /// The principal that opened the session, for its listings when another session's
    /// commit moves an instance it lists from.
    pub(super) opener: std::sync::OnceLock<Option<Principal>>,
    /// The client, for notifications no call of its own causes.
    pub(super) peer: std::sync::OnceLock<rmcp::service::Peer<RoleServer>>,
    /// The names its latest `tools/list` (or notification) showed, to tell it only of a
    /// change; `None` before it listed.
    pub(super) listed: std::sync::Mutex<Option<Vec<String>>>,
    /// One refresh at a time, so two commits never both tell it of one change.
    pub(super) refreshing: tokio::sync::Mutex<()>,
    /// The resources it subscribed to (`resources/subscribe`, MCP 2025-11-25), each with
    /// the instance it names, for a template bound to instances.
    pub(super) subscribed: std::sync::Mutex<BTreeMap<String, Option<StoreKey>>>,
    /// Cancelled when the transport ends (stdin closed): its listening streams stop. Made
    /// only for a transport that says when it ends (stdio).
    pub(super) ended: std::sync::OnceLock<tokio_util::sync::CancellationToken>,
    /// The calls the owned path serves on this session, by request id, for the client's
    /// `notifications/cancelled` (which rmcp hands to `on_cancelled`).
    pub(super) owned_calls:
        std::sync::Mutex<std::collections::HashMap<rmcp::model::RequestId, tokio_util::sync::CancellationToken>>,
    /// When the owned path last told rmcp's session that it is in use (ms since the epoch):
    /// rmcp closes a session idle for its timeout, and sees none of the calls served here.
    pub(super) owned_touch_ms: std::sync::atomic::AtomicU64,
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
    pub(super) fn id(&self) -> &str {
        self.id.get_or_init(|| uuid::Uuid::new_v4().simple().to_string())
    }
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection").field("id", &self.state.id.get()).finish_non_exhaustive()
    }
}

impl Connection {
    /// `kept`: the connection is known to be kept from the start (stdio); an HTTP handler
    /// becomes kept when it initializes a session.
    pub(in crate::server) fn new(shared: Arc<Shared>, kept: bool) -> Self {
        let state = ConnectionState {
            shared: shared.clone(),
            id: std::sync::OnceLock::new(),
            kept: AtomicBool::new(kept),
            focus: SessionFocus::default(),
            watched_moves: Default::default(),
            log_threshold: LogThreshold::default(),
            opener: std::sync::OnceLock::new(),
            peer: std::sync::OnceLock::new(),
            listed: std::sync::Mutex::new(None),
            refreshing: tokio::sync::Mutex::new(()),
            subscribed: std::sync::Mutex::new(BTreeMap::new()),
            ended: std::sync::OnceLock::new(),
            owned_calls: Default::default(),
            owned_touch_ms: Default::default(),
        };
        Self { shared, state: Arc::new(state) }
    }

    /// Cancelled when this connection's transport ends.
    pub(in crate::server) fn ended(&self) -> tokio_util::sync::CancellationToken {
        self.state.ended.get_or_init(tokio_util::sync::CancellationToken::new).clone()
    }

    pub(super) fn origin(&self) -> Origin {
        if self.state.kept.load(Ordering::Acquire) {
            Origin::Connection(StoreKey::connection(self.state.id()))
        } else {
            Origin::Sessionless
        }
    }

    /// The principal of the request `context` serves. An HTTP request is only ever who its
    /// own credentials say; the configured stdio principal is for connections without HTTP.
    pub(super) fn principal(&self, context: &RequestContext<RoleServer>) -> Option<Principal> {
        match context.extensions.get::<http::request::Parts>() {
            Some(parts) => parts.extensions.get::<Principal>().cloned(),
            None => self.shared.auth.stdio_principal.clone(),
        }
    }

    /// What a kept connection lists: its flow, with the current state of each instance it
    /// focuses on (another client may have moved it since).
    pub(super) async fn listing(&self, flow: &StoreKey, principal: Option<&Principal>) -> Result<Vec<Tool>, ErrorData> {
        let store = &self.shared.engine.store;
        let snapshot = store.load(flow).await.map_err(store_unavailable)?;
        let mut focus = self.state.focus.current();
        for (machine, entry) in &mut focus {
            let Some(m) = self.shared.engine.registry.machines().find(|m| m.id() == machine) else { continue };
            let key = visibility::instance_key(m, &entry.instance, principal);
            let state = store.load(&key).await.map_err(store_unavailable)?;
            // What time has made due is applied to what is read.
            let state = m.settle(&state, crate::store::now_ms()).map_or(state, |(settled, _)| settled);
            entry.state = state.state_of(machine, m.initial()).to_string();
            self.state.focus.refresh(machine, &entry.instance, &entry.state);
        }
        Ok(Visibility::new(&self.shared.engine.registry, &visibility::view(&snapshot, focus_states(&focus)))
            .seen_by(principal)
            .tools())
    }
}

pub(super) fn lock<T>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}
