//! Transports: stdio, and Streamable HTTP at `/mcp` — stateful (sessions, which also
//! serve sessionless 2026-07-28 requests) or sessionless.

use rmcp::ServiceExt;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::TcpListener;

use super::{Connection, ServeError, Server};

impl Server {
    /// Serves one client over this process's stdin/stdout until it disconnects.
    pub async fn serve_stdio(&self) -> Result<(), ServeError> {
        let running =
            self.connection().serve(rmcp::transport::stdio()).await.map_err(|e| ServeError::Session(e.to_string()))?;
        running.waiting().await.map_err(|e| ServeError::Session(e.to_string()))?;
        Ok(())
    }

    /// The stateful Streamable HTTP service (one [`Connection`] per session, and one per
    /// sessionless 2026-07-28 request), to mount in your own `axum` router.
    ///
    /// Only loopback `Host` headers are accepted by default (DNS-rebinding protection);
    /// build your own service with `allowed_hosts` for a public deployment.
    pub fn http_service(&self) -> StreamableHttpService<Connection, LocalSessionManager> {
        let server = self.clone();
        StreamableHttpService::new(
            move || Ok(server.http_connection()),
            LocalSessionManager::default().into(),
            config(),
        )
    }

    /// The sessionless Streamable HTTP service (MCP 2026-07-28): one [`Connection`] per
    /// request, conversations named by state handles.
    pub fn http_service_sessionless(&self) -> StreamableHttpService<Connection, NeverSessionManager> {
        let server = self.clone();
        StreamableHttpService::new(
            move || Ok(server.http_connection()),
            NeverSessionManager::default().into(),
            config().with_legacy_session_mode(false),
        )
    }

    /// Serves Streamable HTTP at `/mcp` on `listener` until Ctrl-C: sessionless if the
    /// server was built with [`super::ServerBuilder::sessionless`], else stateful.
    pub async fn serve_http(&self, listener: TcpListener) -> Result<(), ServeError> {
        use axum::serve::ListenerExt;
        let addr = listener.local_addr()?;
        let router = if self.shared.sessionless {
            axum::Router::new().nest_service("/mcp", self.http_service_sessionless())
        } else {
            axum::Router::new().nest_service("/mcp", self.http_service())
        };
        // Without TCP_NODELAY each SSE reply waits ~40 ms on Nagle + delayed ACK.
        let listener = listener.tap_io(|tcp| {
            if let Err(error) = tcp.set_nodelay(true) {
                tracing::debug!(%error, "cannot set TCP_NODELAY");
            }
        });
        let mode = if self.shared.sessionless { " (sessionless)" } else { "" };
        eprintln!("toolgate: serving Streamable HTTP at http://{addr}/mcp{mode}");
        axum::serve(listener, router)
            .with_graceful_shutdown(async {
                let _ = tokio::signal::ctrl_c().await;
            })
            .await?;
        Ok(())
    }
}

/// A sessionless request's call causes no server-to-client message (its tool list never
/// changes), so its reply is plain JSON rather than a one-event SSE stream. Sessions are
/// unaffected: rmcp applies `json_response` to sessionless requests only.
fn config() -> StreamableHttpServerConfig {
    StreamableHttpServerConfig::default().with_json_response(true)
}
