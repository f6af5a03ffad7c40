//! What a Streamable HTTP deployment decides: which hosts and browser origins may call,
//! how many sessions may live at once and for how long idle, how large a request may be,
//! and how many requests one client may send — with safe defaults for a server on loopback.

use crate::error::jsonrpc;
use std::cell::Cell;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{ConnectInfo, Request, State};
use axum::middleware::Next;
use axum::response::Response;
use rmcp::transport::StreamableHttpServerConfig;
use rmcp::transport::streamable_http_server::session::local::{LocalSessionManager, LocalSessionManagerError};
use serde_json::json;

use crate::action::RateLimit;
use crate::gate::{Limiter, OverLimit};

/// The HTTP settings of a server; see the `ServerBuilder` methods that set them.
#[derive(Debug, Clone)]
pub(crate) struct HttpOptions {
    pub(crate) allowed_hosts: Vec<String>,
    pub(crate) allowed_origins: Vec<String>,
    pub(crate) max_sessions: usize,
    pub(crate) session_idle_timeout: Duration,
    pub(crate) max_request_body_bytes: usize,
    pub(crate) client_rate_limit: Option<RateLimit>,
    pub(crate) max_listen_streams: usize,
    pub(crate) max_listen_streams_per_client: usize,
    pub(crate) request_read_timeout: Duration,
    pub(crate) max_connections_per_client: usize,
}

/// The loopback names a local server answers to (DNS-rebinding protection).
const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

/// The browser origins a local server accepts: pages served from loopback, any port.
const LOOPBACK_ORIGINS: [&str; 6] = [
    "http://localhost:*",
    "http://127.0.0.1:*",
    "http://[::1]:*",
    "https://localhost:*",
    "https://127.0.0.1:*",
    "https://[::1]:*",
];

/// The default cap on live sessions.
pub const DEFAULT_MAX_SESSIONS: usize = 1_000;

/// The default idle time after which a session is closed.
pub const DEFAULT_SESSION_IDLE_TIMEOUT: Duration = Duration::from_secs(5 * 60);

/// The default request body limit (rmcp's).
pub const DEFAULT_MAX_REQUEST_BODY_BYTES: usize = 4 * 1024 * 1024;

impl Default for HttpOptions {
    fn default() -> Self {
        Self {
            allowed_hosts: LOOPBACK_HOSTS.iter().map(|h| h.to_string()).collect(),
            allowed_origins: LOOPBACK_ORIGINS.iter().map(|o| o.to_string()).collect(),
            max_sessions: DEFAULT_MAX_SESSIONS,
            session_idle_timeout: DEFAULT_SESSION_IDLE_TIMEOUT,
            max_request_body_bytes: DEFAULT_MAX_REQUEST_BODY_BYTES,
            client_rate_limit: None,
            max_listen_streams: DEFAULT_MAX_LISTEN_STREAMS,
            max_listen_streams_per_client: DEFAULT_MAX_LISTEN_STREAMS_PER_CLIENT,
            request_read_timeout: DEFAULT_REQUEST_READ_TIMEOUT,
            max_connections_per_client: DEFAULT_MAX_CONNECTIONS_PER_CLIENT,
        }
    }
}

impl HttpOptions {
    /// rmcp's configuration. A sessionless call causes no server-to-client message (its
    /// tool list never changes), so its reply is plain JSON rather than a one-event SSE
    /// stream; sessions are unaffected (rmcp applies `json_response` to sessionless
    /// requests only). Origin validation is always on: an `Origin` outside the list gets
    /// 403, as the MCP specification asks.
    pub(crate) fn rmcp_config(&self) -> StreamableHttpServerConfig {
        StreamableHttpServerConfig::default()
            .with_json_response(true)
            .with_allowed_hosts(self.allowed_hosts.clone())
            .with_allowed_origins(self.allowed_origins.clone())
            .enforce_origin_validation()
            .with_max_request_body_bytes(self.max_request_body_bytes)
    }

    /// A session manager whose sessions close after the idle timeout.
    pub(crate) fn session_manager(&self) -> LocalSessionManager {
        let mut manager = LocalSessionManager::default();
        manager.session_config.keep_alive = Some(self.session_idle_timeout);
        manager
    }
}

/// The cap on live sessions. It is enforced where sessions are created, in toolgate's
/// session manager ([`super::call_stream::CallStreamSessions`]), and counts every session
/// rmcp holds: whether a request opens one is rmcp's decision (an `initialize` naming the
/// sessionless 2026-07-28 revision still opens one), so no header a request carries can
/// get around it. [`answer_session_refusals`] gives a refusal its HTTP answer.
#[derive(Debug)]
pub(crate) struct SessionCap {
    max: usize,
    /// Held from counting the live sessions until the new one is among them: two
    /// `initialize`s racing for the last place cannot both get it.
    creating: tokio::sync::Mutex<()>,
    refusals: RefusalLog,
}

impl SessionCap {
    /// Whether `sessions` holds the maximum now (a glance, for refusing early: not a
    /// reservation).
    fn is_full(&self, sessions: &LocalSessionManager) -> bool {
        sessions.sessions.try_read().is_ok_and(|live| live.len() >= self.max)
    }
}

/// Why toolgate's session manager did not do what rmcp asked.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SessionsError {
    /// Creating a session would pass the cap.
    #[error("this server holds its maximum of {0} sessions")]
    Full(usize),
    /// rmcp's own session manager failed.
    #[error(transparent)]
    Local(#[from] LocalSessionManagerError),
}

tokio::task_local! {
    /// Set while [`answer_session_refusals`] answers a request: whether the session
    /// manager refused to create a session for it. rmcp answers any error of
    /// `create_session` with a bare 500; the middleware turns this one into a 503. rmcp
    /// calls `create_session` inside the request's own future (no spawned task), so the
    /// manager sees the scope the middleware opened.
    static SESSION_REFUSED: Cell<bool>;
}

impl SessionCap {
    pub(crate) fn new(max: usize) -> Self {
        Self { max, creating: tokio::sync::Mutex::new(()), refusals: RefusalLog::default() }
    }

    /// Runs `create` if fewer than the cap of `sessions` live; otherwise creates nothing and
    /// refuses (the handler rmcp built for the session is dropped unused). Also for a
    /// session restored from a store: it is one more live session.
    pub(crate) async fn create<T>(
        &self,
        sessions: &LocalSessionManager,
        create: impl Future<Output = Result<T, LocalSessionManagerError>>,
    ) -> Result<T, SessionsError> {
        let _creating = self.creating.lock().await;
        if sessions.sessions.read().await.len() >= self.max {
            self.refusals.refused("refused new sessions: the server holds its maximum");
            // Outside the middleware (no scope) the refusal stands; only its status differs.
            let _ = SESSION_REFUSED.try_with(|refused| refused.set(true));
            return Err(SessionsError::Full(self.max));
        }
        Ok(create.await?)
    }
}

/// Answers a request the session manager refused a session past the cap with 503 and
/// `Retry-After` (rmcp would answer 500). Every other request passes untouched.
pub(crate) async fn answer_session_refusals(State(max): State<usize>, request: Request, next: Next) -> Response {
    let (response, refused) = SESSION_REFUSED
        .scope(Cell::new(false), async move {
            let response = next.run(request).await;
            (response, SESSION_REFUSED.with(Cell::get))
        })
        .await;
    if !refused {
        return response;
    }
    session_refusal(max, serde_json::Value::Null)
}

/// 503 with `Retry-After` for a session past the cap of `max`.
fn session_refusal(max: usize, id: serde_json::Value) -> Response {
    full(format!("this server holds its maximum of {max} sessions; retry later, or close an idle session"), id)
}

/// 503 with `Retry-After` and a JSON-RPC error answering `id`: what a request past a cap
/// (sessions, listening streams) gets.
fn full(message: String, id: serde_json::Value) -> Response {
    let error = jsonrpc::error(-32000, message, None);
    jsonrpc::answer(http::StatusCode::SERVICE_UNAVAILABLE, &id, &error, &[(http::header::RETRY_AFTER, "5")])
}

/// Answers a client past the server-wide per-client limit with 429 and `Retry-After`,
/// before anything else runs. The client is the peer's IP address as the socket reports
/// it (no header a request carries is trusted for it); a router served without connect
/// info (`into_make_service_with_connect_info::<SocketAddr>()`) counts every request as
/// one client.
pub(crate) async fn limit_clients(State(limiter): State<Arc<Limiter>>, request: Request, next: Next) -> Response {
    let client = request
        .extensions()
        .get::<ConnectInfo<std::net::SocketAddr>>()
        .map_or_else(|| "one client".to_string(), |ConnectInfo(addr)| addr.ip().to_string());
    let Err(OverLimit { retry_after_ms }) = limiter.spend(&client) else {
        return next.run(request).await;
    };
    let limit = limiter.limit().to_string();
    let limit = limit.trim_end_matches(" per client");
    let retry_after_s = retry_after_ms.div_ceil(1_000).max(1);
    tracing::debug!(%client, %limit, "refused a request: the client is over its rate limit");
    let error = jsonrpc::error(
        -32000,
        format!("too many requests from this client (at most {limit}); retry after {retry_after_s} s"),
        Some(json!({ "limit": limit, "retry_after_ms": retry_after_ms })),
    );
    let retry_after = retry_after_s.to_string();
    let headers = [(http::header::RETRY_AFTER, retry_after.as_str())];
    jsonrpc::answer(http::StatusCode::TOO_MANY_REQUESTS, &serde_json::Value::Null, &error, &headers)
}

/// The default cap on live `subscriptions/listen` streams, server-wide.
pub const DEFAULT_MAX_LISTEN_STREAMS: usize = 1_000;

/// The default cap on live `subscriptions/listen` streams of one client (a principal, or
/// a peer address for anonymous requests).
pub const DEFAULT_MAX_LISTEN_STREAMS_PER_CLIENT: usize = 16;

/// The default time a request's headers, and then its body, have to arrive.
pub const DEFAULT_REQUEST_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// The default cap on open connections from one peer address.
pub const DEFAULT_MAX_CONNECTIONS_PER_CLIENT: usize = 256;

/// What one request may take: how large its body, how long to arrive, and whether a
/// listening stream it opens, or a session, has a place.
pub(crate) struct RequestLimits {
    pub(crate) max_body_bytes: usize,
    pub(crate) read_timeout: Duration,
    pub(crate) streams: Arc<StreamCap>,
    /// The sessions of a stateful server: an `initialize` that would open one past the
    /// cap is answered here, before rmcp (which would log each refusal as an error).
    sessions: Option<Arc<super::call_stream::CallStreamSessions>>,
}

impl std::fmt::Debug for RequestLimits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestLimits")
            .field("max_body_bytes", &self.max_body_bytes)
            .field("read_timeout", &self.read_timeout)
            .field("streams", &self.streams)
            .finish_non_exhaustive()
    }
}

impl RequestLimits {
    pub(crate) fn new(options: &HttpOptions, sessions: Option<Arc<super::call_stream::CallStreamSessions>>) -> Self {
        Self {
            max_body_bytes: options.max_request_body_bytes,
            read_timeout: options.request_read_timeout,
            streams: Arc::new(StreamCap::new(options.max_listen_streams, options.max_listen_streams_per_client)),
            sessions,
        }
    }

    /// The answer to an `initialize` outside a session while the server holds its maximum
    /// of sessions: 503, as the session manager would give (it stays the authority for a
    /// race to the last place), without rmcp's error log line per refusal.
    pub(crate) fn refuse_new_session(
        &self,
        request: &http::request::Parts,
        id: &serde_json::Value,
    ) -> Option<Response> {
        let sessions = self.sessions.as_ref()?;
        if request.headers.contains_key("mcp-session-id") || !sessions.cap.is_full(&sessions.inner) {
            return None;
        }
        sessions.cap.refusals.refused("refused new sessions: the server holds its maximum");
        Some(session_refusal(sessions.cap.max, id.clone()))
    }

    /// The whole body, if it is no larger than the limit (413) and arrives within the read
    /// timeout (408); each refusal a JSON-RPC error.
    pub(crate) async fn read_body(&self, body: Body) -> Result<axum::body::Bytes, Response> {
        match tokio::time::timeout(self.read_timeout, axum::body::to_bytes(body, self.max_body_bytes)).await {
            Ok(Ok(bytes)) => Ok(bytes),
            Ok(Err(_)) => {
                Err(super::wire::Refusal::too_large(self.max_body_bytes).answer(http::StatusCode::PAYLOAD_TOO_LARGE))
            }
            Err(_) => {
                tracing::debug!("refused a request: its body did not arrive within the read timeout");
                Err(super::wire::Refusal::too_slow(self.read_timeout).answer(http::StatusCode::REQUEST_TIMEOUT))
            }
        }
    }
}

/// The caps on live `subscriptions/listen` streams: server-wide and per client. A stream
/// needs no token, and each holds a connection and a handler, so both are bounded.
#[derive(Debug)]
pub(crate) struct StreamCap {
    max: usize,
    max_per_client: usize,
    /// Live streams by client; the total is their sum.
    open: std::sync::Mutex<(usize, std::collections::HashMap<String, usize>)>,
    /// Refusals not yet logged, and when the last log line was written.
    refusals: RefusalLog,
}

/// A place among the live streams, freed when dropped (when the stream's reply ends).
#[derive(Debug)]
pub(crate) struct StreamPlace {
    cap: Arc<StreamCap>,
    client: String,
}

/// A stream refused past a cap.
#[derive(Debug)]
pub(crate) struct StreamsFull {
    message: String,
}

impl StreamCap {
    pub(crate) fn new(max: usize, max_per_client: usize) -> Self {
        Self { max, max_per_client, open: Default::default(), refusals: RefusalLog::default() }
    }

    fn counts(&self) -> std::sync::MutexGuard<'_, (usize, std::collections::HashMap<String, usize>)> {
        self.open.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// A place for the stream `request` opens, if both caps allow it. The client is the
    /// request's principal, else its peer address (never a header it carries).
    pub(crate) fn open(self: &Arc<Self>, request: &http::request::Parts) -> Result<StreamPlace, StreamsFull> {
        let client = match request.extensions.get::<crate::Principal>() {
            Some(principal) => format!("principal {}", principal.key()),
            None => request
                .extensions
                .get::<ConnectInfo<std::net::SocketAddr>>()
                .map_or_else(|| "one client".to_string(), |ConnectInfo(addr)| format!("address {}", addr.ip())),
        };
        let mut counts = self.counts();
        let (total, by_client) = &mut *counts;
        let of_client = by_client.get(&client).copied().unwrap_or(0);
        let message = if *total >= self.max {
            format!("this server holds its maximum of {} listening streams; retry later", self.max)
        } else if of_client >= self.max_per_client {
            format!("this client holds its maximum of {} listening streams; close one first", self.max_per_client)
        } else {
            *total += 1;
            by_client.insert(client.clone(), of_client + 1);
            return Ok(StreamPlace { cap: self.clone(), client });
        };
        drop(counts);
        self.refusals.refused("refused listening streams past the cap");
        Err(StreamsFull { message })
    }
}

impl Drop for StreamPlace {
    fn drop(&mut self) {
        let mut counts = self.cap.counts();
        let (total, by_client) = &mut *counts;
        *total = total.saturating_sub(1);
        if let Some(count) = by_client.get_mut(&self.client) {
            *count -= 1;
            if *count == 0 {
                by_client.remove(&self.client);
            }
        }
    }
}

impl StreamsFull {
    /// 503 with `Retry-After`, as a session past the session cap gets.
    pub(crate) fn answer(self, id: serde_json::Value) -> Response {
        full(self.message, id)
    }
}

/// Refusals past a cap are expected traffic under load or attack: logged at `warn` at
/// most once per interval, with how many there were since the last line.
#[derive(Debug, Default)]
pub(crate) struct RefusalLog {
    state: std::sync::Mutex<(u64, Option<std::time::Instant>)>,
}

/// The least time between two log lines about refusals of one kind.
const REFUSAL_LOG_INTERVAL: Duration = Duration::from_secs(10);

impl RefusalLog {
    /// Counts a refusal; logs `what` with the count when the interval has passed.
    pub(crate) fn refused(&self, what: &'static str) {
        let mut state = self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let (count, last) = &mut *state;
        *count += 1;
        let now = std::time::Instant::now();
        if last.is_none_or(|last| now.duration_since(last) >= REFUSAL_LOG_INTERVAL) {
            tracing::warn!(refused = *count, "{what}");
            *count = 0;
            *last = Some(now);
        }
    }
}
