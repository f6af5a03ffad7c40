//! Transports: stdio, and Streamable HTTP at `/mcp` with stateful sessions.

use rmcp::ServiceExt;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::TcpListener;

use super::{ServeError, Server};

impl Server {
    /// Serves one client over this process's stdin/stdout until it disconnects.
    pub async fn serve_stdio(&self) -> Result<(), ServeError> {
        let running =
            self.connection().serve(rmcp::transport::stdio()).await.map_err(|e| ServeError::Session(e.to_string()))?;
        running.waiting().await.map_err(|e| ServeError::Session(e.to_string()))?;
        Ok(())
    }

    /// The Streamable HTTP service (stateful sessions, one [`super::Connection`] per
    /// session), to mount in your own `axum` router at the path of your choice.
    ///
    /// Only loopback `Host` headers are accepted by default (DNS-rebinding protection);
    /// build your own service with `allowed_hosts` for a public deployment.
    pub fn http_service(&self) -> StreamableHttpService<super::Connection, LocalSessionManager> {
        let server = self.clone();
        StreamableHttpService::new(
            move || Ok(server.connection()),
            LocalSessionManager::default().into(),
            StreamableHttpServerConfig::default(),
        )
    }

    /// Serves Streamable HTTP at `/mcp` on `listener` until Ctrl-C.
    pub async fn serve_http(&self, listener: TcpListener) -> Result<(), ServeError> {
        use axum::serve::ListenerExt;
        let addr = listener.local_addr()?;
        let router = axum::Router::new().nest_service("/mcp", self.http_service());
        // Without TCP_NODELAY each SSE reply waits ~40 ms on Nagle + delayed ACK.
        let listener = listener.tap_io(|tcp| {
            if let Err(error) = tcp.set_nodelay(true) {
                tracing::debug!(%error, "cannot set TCP_NODELAY");
            }
        });
        eprintln!("toolgate: serving Streamable HTTP at http://{addr}/mcp");
        axum::serve(listener, router)
            .with_graceful_shutdown(async {
                let _ = tokio::signal::ctrl_c().await;
            })
            .await?;
        Ok(())
    }
}
