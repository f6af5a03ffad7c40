//! What a Streamable HTTP deployment decides: which hosts and browser origins may call,
//! how many sessions may live at once and for how long idle, how large a request may be,
//! and how many requests one client may send — with safe defaults for a server on loopback.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{ConnectInfo, Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::transport::StreamableHttpServerConfig;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use serde_json::json;

use crate::action::RateLimit;
use crate::error::ToolError;
use crate::gate::Limiter;

/// The HTTP settings of a server; see the `ServerBuilder` methods that set them.
#[derive(Debug, Clone)]
pub(crate) struct HttpOptions {
    pub(crate) allowed_hosts: Vec<String>,
    pub(crate) allowed_origins: Vec<String>,
    pub(crate) max_sessions: usize,
    pub(crate) session_idle_timeout: Duration,
    pub(crate) max_request_body_bytes: usize,
    pub(crate) client_rate_limit: Option<RateLimit>,
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

/// What the session cap needs: the live sessions, and the cap.
#[derive(Clone)]
pub(crate) struct SessionCap {
    pub(crate) sessions: Arc<LocalSessionManager>,
    pub(crate) max: usize,
}

/// Refuses a request that would open a session past the cap with 503 and `Retry-After`,
/// before rmcp creates it; requests of live sessions and sessionless (2026-07-28) requests
/// pass. Two `initialize`s racing for the last place may both get it: the cap bounds
/// memory, it is not a quota.
pub(crate) async fn cap_sessions(State(cap): State<SessionCap>, request: Request, next: Next) -> Response {
    let headers = request.headers();
    let opens_session = request.method() == http::Method::POST
        && !headers.contains_key("mcp-session-id")
        && headers
            .get("mcp-protocol-version")
            .and_then(|v| v.to_str().ok())
            .is_none_or(|version| version < "2026-07-28");
    if opens_session && cap.sessions.sessions.read().await.len() >= cap.max {
        tracing::warn!(max_sessions = cap.max, "refused a new session: the server holds its maximum");
        let body = json!({
            "jsonrpc": "2.0",
            "id": null,
            "error": {
                "code": -32000,
                "message": format!("this server holds its maximum of {} sessions; retry later, or close an idle session", cap.max),
            },
        });
        return (
            http::StatusCode::SERVICE_UNAVAILABLE,
            [(http::header::RETRY_AFTER, "5"), (http::header::CONTENT_TYPE, "application/json")],
            Body::from(body.to_string()),
        )
            .into_response();
    }
    next.run(request).await
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
    let refusal = limiter.check(&client).err();
    let Some((limit, retry_after_ms)) = refusal.as_ref().and_then(ToolError::as_rate_limited) else {
        return next.run(request).await;
    };
    let retry_after_s = retry_after_ms.div_ceil(1_000).max(1);
    tracing::debug!(%client, %limit, "refused a request: the client is over its rate limit");
    let body = json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {
            "code": -32000,
            "message": format!("too many requests from this client (at most {limit}); retry after {retry_after_s} s"),
            "data": { "limit": limit, "retry_after_ms": retry_after_ms },
        },
    });
    (
        http::StatusCode::TOO_MANY_REQUESTS,
        [
            (http::header::RETRY_AFTER, retry_after_s.to_string()),
            (http::header::CONTENT_TYPE, "application/json".to_string()),
        ],
        Body::from(body.to_string()),
    )
        .into_response()
}
