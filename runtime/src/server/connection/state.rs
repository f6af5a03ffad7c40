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
use crate::server::{ConnectionState, Shared};
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
            // Another principal's instance (the id was free when the session focused on it)
            // lists as one never created; what time has made due is applied to what is read.
            let state = visibility::seen_by(m, state, principal);
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
