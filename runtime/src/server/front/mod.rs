//! The HTTP front: every Streamable HTTP request passes these layers, in this order, each
//! doing one job, and they are assembled in one place ([`Server::http_service`], with
//! [`Server::serve_http`] for the first):
//!
//! 1. **accept** (`server/accept.rs`, the one accept path of every listener): a
//!    connection's first request must arrive within the read timeout counted from accept,
//!    one peer address holds at most so many connections, the endpoint so many in all,
//!    and a request's `Host` must be one the endpoint answers;
//! 2. **limits** ([`limits`]): a client over the server-wide rate limit gets 429;
//! 3. **authentication** ([`authentication`]): `Authorization: Bearer …` resolved to the
//!    request's [`Principal`](crate::Principal), or 401;
//! 4. **session ownership** ([`session_owner`]): a request naming a session its caller did
//!    not open is answered as an unknown session;
//! 5. **JSON check** ([`json_check`]): one well-formed JSON-RPC message within the bounds,
//!    or 400 with its JSON-RPC error;
//! 6. **owned path** ([`owned`]): the calls and listening streams toolgate answers itself
//!    from the checked bytes;
//! 7. **rmcp** ([`rmcp`]): everything else, with the cap on sessions.
//!
//! What the layers share: the settings ([`options`]), the cap on listening streams
//! ([`streams`], taken by whichever of the last two serves a stream) and how refusals past
//! a cap are logged (`server/refusal_log.rs`).

pub(crate) mod authentication;
mod json_check;
mod limits;
mod owned;
mod rmcp;
mod session_owner;
mod streams;

use std::sync::Arc;

use ::rmcp::transport::StreamableHttpService;
use ::rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use axum::response::IntoResponse;
use tokio::net::TcpListener;

use self::rmcp::{CallStreamSessions, Rmcp, SessionCap};
use super::{ServeError, Server};
use crate::gate::Limiter;
use authentication::HttpAuth;
use json_check::{BodyLimits, JsonCheckLayer};
use owned::{OwnedLayer, OwnedPath};
use session_owner::{SessionOwnerLayer, SessionOwners};
use streams::StreamCap;

impl Server {
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
        let streams = Arc::new(StreamCap::new(options.max_listen_streams, options.max_listen_streams_per_client));
        // 7. rmcp, and the owned path (6.) that comes before it.
        let (owned, rmcp, owners) = if self.shared.sessionless {
            let config = options.rmcp_config().with_legacy_session_mode(false);
            let service = StreamableHttpService::new(factory, NeverSessionManager::default().into(), config);
            let owned = OwnedPath::new(self.shared.clone(), None, streams.clone());
            (owned, Rmcp::new(service, None, streams).into_router(), None)
        } else {
            let owners = Arc::new(SessionOwners::default());
            let sessions = Arc::new(CallStreamSessions {
                inner: options.session_manager(),
                cap: SessionCap::new(options.max_sessions),
                owners: owners.clone(),
            });
            let service = StreamableHttpService::new(factory, sessions.clone(), options.rmcp_config());
            let owned = OwnedPath::new(self.shared.clone(), Some(sessions.clone()), streams.clone());
            sessions.close_all_at_shutdown(&self.shared.lifecycle);
            (owned, Rmcp::new(service, Some(sessions), streams).into_router(), Some(owners))
        };
        // 2.–6., outermost first, in one `Router::layer` (axum boxes the route again at each).
        let layers = tower::ServiceBuilder::new()
            .option_layer(options.client_rate_limit.map(|limit| {
                axum::middleware::from_fn_with_state(Arc::new(Limiter::new(limit)), limits::limit_clients)
            }))
            .option_layer(
                HttpAuth::of(&self.shared)
                    .map(|auth| axum::middleware::from_fn_with_state(Arc::new(auth), authentication::authenticate)),
            )
            .option_layer(owners.map(SessionOwnerLayer))
            .layer(JsonCheckLayer(Arc::new(BodyLimits::new(options))))
            .layer(OwnedLayer(Arc::new(owned)));
        rmcp.layer(layers)
    }

    /// What this server publishes beside `/mcp`: its OAuth protected resource metadata
    /// (RFC 9728), when [`ServerBuilder::protected_resource`](super::ServerBuilder::protected_resource)
    /// declared one, and the confirmation page at `/confirm`, when
    /// [`ServerBuilder::confirmation_page`](super::ServerBuilder::confirmation_page) enabled
    /// it; and `/healthz` and `/readyz` (readiness fails once [`Server::shutdown`] is
    /// called, or while the store does not answer). Merge it at the root of a router that
    /// mounts [`Server::http_service`] yourself.
    pub fn well_known_router(&self) -> axum::Router {
        let mut router = axum::Router::new();
        let probes = super::probes::probes(self.shared.clone());
        for path in [super::probes::HEALTHZ, super::probes::READYZ] {
            let probes = probes.clone();
            let answer = move || {
                let probe = probes(path);
                async move {
                    match probe {
                        Some(probe) => probe.await,
                        None => http::StatusCode::NOT_FOUND.into_response(),
                    }
                }
            };
            router = router.route(path, axum::routing::get(answer));
        }
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

    /// Serves Streamable HTTP at `/mcp` on `listener`, with `/healthz` and `/readyz` beside
    /// it, until SIGTERM or SIGINT ([`terminate_signal`](super::terminate_signal)) — then
    /// stops gracefully, as [`Server::serve_http_until`] says. A connection's request
    /// headers, and then its body, must arrive within 10 seconds, one peer address holds
    /// at most 256 connections at once and the endpoint 10,000 in all, unless the builder
    /// says otherwise (`request_read_timeout`, `max_connections_per_client`,
    /// `max_connections`).
    pub async fn serve_http(&self, listener: TcpListener) -> Result<(), ServeError> {
        self.serve_http_until(listener, super::terminate_signal()).await
    }

    /// [`Server::serve_http`] until `signal` completes (or [`Server::shutdown`] is called),
    /// for a program that decides itself when to stop. Then, in order:
    ///
    /// 1. `/readyz` answers 503 at once, and new requests are still served for the drain
    ///    delay ([`ServerBuilder::drain_delay`](super::ServerBuilder::drain_delay), 5 s by
    ///    default), each HTTP/1 response saying `Connection: close` (HTTP/2 is sent
    ///    GOAWAY), so load balancers take the replica out without a failed call;
    /// 2. the listener stops accepting, idle connections close, listening streams end, and
    ///    the calls in flight finish, for up to the shutdown grace
    ///    ([`ServerBuilder::shutdown_grace`](super::ServerBuilder::shutdown_grace), 30 s);
    ///    then the stateful sessions close;
    /// 3. the tasks still running finish within what is left of the grace, or are given up
    ///    (reported failed, nothing committed, their instance free at once); the effects'
    ///    attempts end; the store releases every lease it holds.
    ///
    /// It returns `Ok` once all that is done.
    pub async fn serve_http_until(
        &self,
        listener: TcpListener,
        signal: impl Future<Output = ()>,
    ) -> Result<(), ServeError> {
        self.create_your_tables().await?;
        let addr = listener.local_addr()?;
        let router = axum::Router::new().nest_service("/mcp", self.http_service()).merge(self.well_known_router());
        tracing::info!(url = %format!("http://{addr}/mcp"), sessionless = self.shared.sessionless, "serving Streamable HTTP");
        let options = &self.shared.http;
        let lifecycle = self.shared.lifecycle.clone();
        let probes = Some(super::probes::probes(self.shared.clone()));
        let served = super::accept::serve(listener, router, options.mcp_admission(), lifecycle.clone(), probes);
        let (served, ()) = tokio::join!(served, self.close_when_asked(signal));
        served?;
        self.shared.engine.stop(lifecycle.deadline()).await;
        tracing::info!("stopped");
        Ok(())
    }

    /// Once `signal` completes and the drain delay has passed: the listening streams end,
    /// the calls in flight are waited for (up to the grace), then the sessions may close.
    async fn close_when_asked(&self, signal: impl Future<Output = ()>) {
        let lifecycle = &self.shared.lifecycle;
        self.begin_on(signal).await;
        lifecycle.closing().await;
        tracing::info!("stopped accepting; waiting for the calls in flight");
        if !self.shared.engine.calls_ended(lifecycle.deadline()).await {
            tracing::warn!("calls still ran when the shutdown grace ran out");
        }
        lifecycle.let_sessions_close();
    }
}
