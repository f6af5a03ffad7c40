//! What a Streamable HTTP deployment decides: which hosts and browser origins may call,
//! how many sessions may live at once and for how long idle, how large a request may be,
//! and how many requests one client may send — with safe defaults for a server on loopback.

use std::time::Duration;

use rmcp::transport::StreamableHttpServerConfig;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;

use crate::action::RateLimit;
use crate::server::accept::{Admission, AllowedHost, Hosts};

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
    pub(crate) max_connections: usize,
    /// How long a stopping server still serves new requests (`/readyz` failing).
    pub(crate) drain_delay: Duration,
    /// How long a stopping server waits for calls and tasks in flight.
    pub(crate) shutdown_grace: Duration,
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
            drain_delay: crate::server::DEFAULT_DRAIN_DELAY,
            shutdown_grace: crate::server::DEFAULT_SHUTDOWN_GRACE,
            max_listen_streams_per_client: DEFAULT_MAX_LISTEN_STREAMS_PER_CLIENT,
            request_read_timeout: DEFAULT_REQUEST_READ_TIMEOUT,
            max_connections_per_client: DEFAULT_MAX_CONNECTIONS_PER_CLIENT,
            max_connections: DEFAULT_MAX_CONNECTIONS,
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
            .with_sse_keep_alive(Some(SSE_KEEP_ALIVE))
            .with_allowed_hosts(self.allowed_hosts.clone())
            .with_allowed_origins(self.allowed_origins.clone())
            .enforce_origin_validation()
            .with_max_request_body_bytes(self.max_request_body_bytes)
    }

    /// What the MCP listener admits: the builder's settings.
    pub(crate) fn mcp_admission(&self) -> Admission {
        Admission {
            name: "the MCP endpoint",
            read_timeout: self.request_read_timeout,
            max_per_client: self.max_connections_per_client,
            max_connections: self.max_connections,
            hosts: Hosts::Named(AllowedHost::all(&self.allowed_hosts)),
        }
    }

    /// What the operator's console admits: the MCP endpoint's read timeout and hosts (the
    /// console is a browser's page: DNS rebinding aims at it first), and few connections,
    /// since it has few users — so that it never holds the descriptors MCP calls need.
    pub(crate) fn console_admission(&self) -> Admission {
        Admission {
            name: "the console",
            read_timeout: self.request_read_timeout,
            max_per_client: CONSOLE_MAX_CONNECTIONS_PER_CLIENT.min(self.max_connections_per_client),
            max_connections: CONSOLE_MAX_CONNECTIONS,
            hosts: Hosts::Named(AllowedHost::all(&self.allowed_hosts)),
        }
    }

    /// What the metrics listener admits: a scraper or a probe, which names the pod by its
    /// address (`Host: 10.0.3.7:9090`) or sends no `Host` — both answered, beside the MCP
    /// endpoint's hosts — and few connections.
    pub(crate) fn probe_admission(&self) -> Admission {
        Admission {
            name: "the metrics endpoint",
            read_timeout: self.request_read_timeout,
            max_per_client: PROBE_MAX_CONNECTIONS_PER_CLIENT.min(self.max_connections_per_client),
            max_connections: PROBE_MAX_CONNECTIONS,
            hosts: Hosts::NamedOrAddress(AllowedHost::all(&self.allowed_hosts)),
        }
    }

    /// A session manager whose sessions close after the idle timeout.
    pub(crate) fn session_manager(&self) -> LocalSessionManager {
        let mut manager = LocalSessionManager::default();
        manager.session_config.keep_alive = Some(self.session_idle_timeout);
        manager
    }
}

/// How long an SSE stream may stay silent before a keep-alive comment is written on it
/// (rmcp's default, applied to rmcp's streams and the owned path's alike).
pub(crate) const SSE_KEEP_ALIVE: std::time::Duration = std::time::Duration::from_secs(15);

/// The default cap on live `subscriptions/listen` streams, server-wide.
pub const DEFAULT_MAX_LISTEN_STREAMS: usize = 1_000;

/// The default cap on live `subscriptions/listen` streams of one client (a principal, or
/// a peer address for anonymous requests).
pub const DEFAULT_MAX_LISTEN_STREAMS_PER_CLIENT: usize = 16;

/// The default time a request's headers, and then its body, have to arrive.
pub const DEFAULT_REQUEST_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// The default cap on open connections from one peer address.
pub const DEFAULT_MAX_CONNECTIONS_PER_CLIENT: usize = 256;

/// The default cap on the MCP endpoint's open connections in all.
pub const DEFAULT_MAX_CONNECTIONS: usize = 10_000;

/// The console's caps: open connections from one address, and in all.
const CONSOLE_MAX_CONNECTIONS_PER_CLIENT: usize = 32;
const CONSOLE_MAX_CONNECTIONS: usize = 256;

/// The metrics listener's caps: open connections from one address, and in all.
const PROBE_MAX_CONNECTIONS_PER_CLIENT: usize = 8;
const PROBE_MAX_CONNECTIONS: usize = 64;
