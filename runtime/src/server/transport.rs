//! Transports: stdio, and Streamable HTTP — stateful (sessions, which also serve
//! sessionless 2026-07-28 requests) or sessionless.

use crate::auth::http::{HttpAuth, authenticate};
use crate::auth::metadata::ProtectedResource;
use std::sync::Arc;

use rmcp::ServiceExt;
use rmcp::transport::StreamableHttpService;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use tokio::net::TcpListener;

use super::call_stream::CallStreamSessions;
use super::http::{SessionCap, answer_session_refusals, limit_clients};
use super::owned::OwnedPath;
use super::session_owner::{SessionOwnerLayer, SessionOwners};
use super::{ServeError, Server};
use super::{json_check, stdio};
use crate::gate::Limiter;

/// A router answering every request with rmcp's `service`, held behind an `Arc`. Mounted
/// as a service, it would be cloned per request (twice by axum's routing, once more by its
/// own `call`), each clone copying its configuration — the allowed hosts and origins, ~15k
/// instructions a request; here a request clones a reference count and calls
/// [`StreamableHttpService::handle`].
fn shared_service<M>(service: StreamableHttpService<super::Connection, M>) -> axum::Router
where
    M: rmcp::transport::streamable_http_server::SessionManager,
{
    let service = Arc::new(service);
    axum::Router::new().fallback(move |request: axum::extract::Request| {
        let service = service.clone();
        async move { service.handle(request).await.map(axum::body::Body::new) }
    })
}

impl Server {
    /// Serves one client over this process's stdin/stdout until it disconnects.
    pub async fn serve_stdio(&self) -> Result<(), ServeError> {
        // rmcp's line transport, but a line that is not one JSON-RPC message is answered.
        let connection = self.connection();
        let ended = connection.ended();
        let running = connection.serve(stdio::CheckedStdio::new(ended)).await?;
        running.waiting().await?;
        Ok(())
    }

    /// The Streamable HTTP service, to mount in your own `axum` router
    /// (`Router::new().nest_service("/mcp", server.http_service())`): stateful (one
    /// [`super::Connection`] per session, and one per sessionless 2026-07-28 request), or
    /// sessionless if the server was built with [`super::ServerBuilder::sessionless`].
    ///
    /// It answers only loopback `Host` headers and loopback browser `Origin`s (403
    /// otherwise), holds at most 1,000 sessions (503 past them), closes sessions idle for
    /// 5 minutes and refuses bodies over 4 MiB, unless the builder says otherwise
    /// (`allowed_hosts`, `allowed_origins`, `max_sessions`, `session_idle_timeout`,
    /// `max_request_body_bytes`). With `client_rate_limit`, a client past it gets 429 with
    /// `Retry-After`. Clients are told apart by peer address — for that limit and for
    /// declared rate limits counted `per client` — so serve the router with
    /// `into_make_service_with_connect_info::<SocketAddr>()` (as [`Server::serve_http`]
    /// does); otherwise a session counts as one client, and every sessionless request as
    /// the same one.
    pub fn http_service(&self) -> axum::Router {
        let options = &self.shared.http;
        let server = self.clone();
        let factory = move || Ok(server.http_connection());
        // Innermost: only one well-formed JSON-RPC message per body reaches rmcp.
        let router = if self.shared.sessionless {
            let limits = super::http::RequestLimits::new(options, None);
            let front = Arc::new(json_check::HttpFront { limits, owned: OwnedPath::new(self.shared.clone(), None) });
            let checked = axum::middleware::from_fn_with_state(front, json_check::check_http);
            let config = options.rmcp_config().with_legacy_session_mode(false);
            let service = StreamableHttpService::new(factory, NeverSessionManager::default().into(), config);
            shared_service(service).layer(checked)
        } else {
            let owners = Arc::new(SessionOwners::default());
            let manager = Arc::new(CallStreamSessions {
                inner: options.session_manager(),
                cap: SessionCap::new(options.max_sessions),
                owners: owners.clone(),
            });
            let limits = super::http::RequestLimits::new(options, Some(manager.clone()));
            let owned = OwnedPath::new(self.shared.clone(), Some(manager.clone()));
            let front = Arc::new(json_check::HttpFront { limits, owned });
            let checked = axum::middleware::from_fn_with_state(front, json_check::check_http);
            let service = StreamableHttpService::new(factory, manager, options.rmcp_config());
            let refusals = axum::middleware::from_fn_with_state(options.max_sessions, answer_session_refusals);
            // After authentication, before everything that reads the session: its owner.
            // One `Router::layer` for the three: axum boxes the route again at each call.
            let front = tower::ServiceBuilder::new().layer(refusals).layer(SessionOwnerLayer(owners)).layer(checked);
            shared_service(service).layer(front)
        };
        // Who is calling, resolved before rmcp sees the request.
        let auth = &self.shared.auth;
        let router = match &auth.authenticator {
            Some(authenticator) => {
                let auth = HttpAuth {
                    authenticator: authenticator.clone(),
                    required: auth.required,
                    resource_metadata: auth.metadata.as_ref().map(ProtectedResource::metadata_url),
                    step_up: match &auth.metadata {
                        Some(_) => self
                            .shared
                            .engine
                            .registry
                            .tools()
                            .iter()
                            .filter(|t| !t.scopes().is_empty())
                            .map(|t| (t.name.to_string(), t.scopes().iter().map(|s| s.to_string()).collect()))
                            .collect(),
                        None => Default::default(),
                    },
                };
                router.layer(axum::middleware::from_fn_with_state(Arc::new(auth), authenticate))
            }
            None => router,
        };
        match options.client_rate_limit {
            // The outermost layer: a client over its limit costs nothing else.
            Some(limit) => {
                router.layer(axum::middleware::from_fn_with_state(Arc::new(Limiter::new(limit)), limit_clients))
            }
            None => router,
        }
    }

    /// What this server publishes beside `/mcp`: its OAuth protected resource metadata
    /// (RFC 9728), when [`ServerBuilder::protected_resource`](super::ServerBuilder::protected_resource)
    /// declared one, and the confirmation page at `/confirm`, when
    /// [`ServerBuilder::confirmation_page`](super::ServerBuilder::confirmation_page) enabled
    /// it. Merge it at the root of a router that mounts [`Server::http_service`] yourself.
    pub fn well_known_router(&self) -> axum::Router {
        let mut router = axum::Router::new();
        if let Some(metadata) = &self.shared.auth.metadata {
            let body = serde_json::to_value(metadata).expect("metadata serializes");
            router =
                router.route(&metadata.metadata_path(), axum::routing::get(move || async move { axum::Json(body) }));
        }
        if self.shared.engine.confirmations.page.is_some() {
            let page = || async {
                (
                    [
                        (http::header::CONTENT_TYPE, "text/html; charset=utf-8"),
                        (http::header::CACHE_CONTROL, "no-store"),
                        (http::header::REFERRER_POLICY, "no-referrer"),
                    ],
                    crate::confirm::CONFIRMATION_PAGE,
                )
            };
            router = router.route("/confirm", axum::routing::get(page));
        }
        router
    }

    /// Serves Streamable HTTP at `/mcp` on `listener` until Ctrl-C. A connection's request
    /// headers, and then its body, must arrive within 10 seconds, and one peer address
    /// holds at most 256 connections at once, unless the builder says otherwise
    /// (`request_read_timeout`, `max_connections_per_client`).
    pub async fn serve_http(&self, listener: TcpListener) -> Result<(), ServeError> {
        let addr = listener.local_addr()?;
        let router = axum::Router::new().nest_service("/mcp", self.http_service()).merge(self.well_known_router());
        tracing::info!(url = %format!("http://{addr}/mcp"), sessionless = self.shared.sessionless, "serving Streamable HTTP");
        let options = &self.shared.http;
        let ctrl_c = async {
            let _ = tokio::signal::ctrl_c().await;
        };
        super::accept::serve(
            listener,
            router,
            options.request_read_timeout,
            options.max_connections_per_client,
            ctrl_c,
        )
        .await?;
        Ok(())
    }
}
