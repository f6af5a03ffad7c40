//! What a Streamable HTTP deployment of the server allows: hosts, origins, sessions,
//! request sizes and rates, connections.

use super::server_builder::ServerBuilder;
use std::time::Duration;

impl ServerBuilder {
    /// The `Host` names (or `host:port`s) Streamable HTTP answers; loopback by default
    /// (DNS-rebinding protection). A public deployment lists its own names.
    pub fn allowed_hosts(mut self, hosts: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.http.allowed_hosts = hosts.into_iter().map(Into::into).collect();
        self
    }

    /// The browser `Origin`s Streamable HTTP accepts (`https://app.example.com:443`,
    /// `http://localhost:*`); pages from loopback by default. A request whose `Origin` is
    /// not listed gets 403; requests without `Origin` (non-browser clients) pass.
    pub fn allowed_origins(mut self, origins: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.http.allowed_origins = origins.into_iter().map(Into::into).collect();
        self
    }

    /// How many Streamable HTTP sessions may live at once (default 1,000); a request that
    /// would open another gets 503 with `Retry-After`, while live sessions keep working.
    /// Every session counts, whatever the request that opened it said in its headers.
    pub fn max_sessions(mut self, max: usize) -> Self {
        self.http.max_sessions = max;
        self
    }

    /// How long a session may stay idle before the server closes it (default 5 minutes).
    pub fn session_idle_timeout(mut self, timeout: Duration) -> Self {
        self.http.session_idle_timeout = timeout;
        self
    }

    /// The largest request body Streamable HTTP accepts (default 4 MiB); a larger one gets
    /// 413 with a JSON-RPC error.
    pub fn max_request_body_bytes(mut self, bytes: usize) -> Self {
        self.http.max_request_body_bytes = bytes;
        self
    }

    /// How many `subscriptions/listen` streams (MCP 2026-07-28) may be open at once: `total`
    /// on the server (default 1,000) and `per_client` for one client (default 16), a client
    /// being its principal, or its peer address when it sends no token. A stream past
    /// either gets 503 with `Retry-After`.
    pub fn max_listen_streams(mut self, total: usize, per_client: usize) -> Self {
        self.http.max_listen_streams = total;
        self.http.max_listen_streams_per_client = per_client;
        self
    }

    /// How long a request's headers, and then its body, have to arrive (default 10
    /// seconds). A connection whose headers do not arrive in time is closed (also one
    /// idling between requests); a body that does not gets 408 with a JSON-RPC error.
    pub fn request_read_timeout(mut self, timeout: Duration) -> Self {
        self.http.request_read_timeout = timeout;
        self
    }

    /// How long a stopping server keeps serving new requests, `/readyz` failing, before it
    /// stops accepting (default 5 seconds): the time load balancers take to stop sending
    /// here. Meanwhile every response says `Connection: close`.
    pub fn drain_delay(mut self, delay: Duration) -> Self {
        self.http.drain_delay = delay;
        self
    }

    /// How long a stopping server waits, once it stops accepting, for the calls and tasks
    /// in flight to finish (default 30 seconds). A task still running then is given up:
    /// reported failed, nothing committed, its instance released at once.
    pub fn shutdown_grace(mut self, grace: Duration) -> Self {
        self.http.shutdown_grace = grace;
        self
    }

    /// How many connections one peer address may hold open at once (default 256); a
    /// further one is closed as soon as it is accepted. Applies to [`Server::serve_http`](crate::Server::serve_http).
    /// Behind a reverse proxy every connection comes from the proxy: raise it, and bound
    /// clients there.
    pub fn max_connections_per_client(mut self, max: usize) -> Self {
        self.http.max_connections_per_client = max;
        self
    }

    /// How many connections the MCP endpoint holds open in all (default 10,000); a further
    /// one is closed as soon as it is accepted. Keep it under the process's limit on open
    /// files (`ulimit -n`), less what the store's pool, the console (256 at most) and the
    /// metrics endpoint (64 at most) hold. Applies to [`Server::serve_http`](crate::Server::serve_http).
    pub fn max_connections(mut self, max: usize) -> Self {
        self.http.max_connections = max;
        self
    }

    /// A server-wide limit on the HTTP requests one client (one peer IP address) may send:
    /// at most `calls` in any window of `per`. Past it the request gets HTTP 429 with
    /// `Retry-After` before anything else runs. Off by default; the per-tool limits of
    /// `#[action(rate_limit = …)]` apply either way. Behind a reverse proxy every request
    /// comes from the proxy's address: limit there instead.
    ///
    /// ```
    /// use std::time::Duration;
    /// # use toolgate_runtime::Server;
    /// let builder = Server::from_registry("books").client_rate_limit(600, Duration::from_secs(60));
    /// ```
    pub fn client_rate_limit(mut self, calls: u32, per: Duration) -> Self {
        let per_ms = u64::try_from(per.as_millis()).unwrap_or(u64::MAX).max(1);
        self.http.client_rate_limit =
            Some(crate::action::RateLimit { calls: calls.max(1), per_ms, per: crate::action::RatePer::Client });
        self
    }
}
