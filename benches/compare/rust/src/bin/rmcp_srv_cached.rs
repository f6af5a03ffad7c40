//! A2: same as rmcp_srv but #[tool_handler(router = self.tool_router)] (router built once, not per request). usage: rmcp_srv <port> [stateless|stateful] [json|sse]
use std::sync::Arc;
use rmcp::{
    ErrorData, Json, ServerHandler,
    handler::server::{router::tool::ToolRouter, wrapper::Parameters},
    model::*,
    schemars::JsonSchema,
    tool, tool_handler, tool_router,
};
use rmcp::transport::streamable_http_server::{
    StreamableHttpServerConfig, StreamableHttpService,
    session::{local::LocalSessionManager, never::NeverSessionManager},
};
use serde::{Deserialize, Serialize};

#[derive(Clone)]
struct Inv {
    tool_router: ToolRouter<Inv>,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct ViewArgs {
    id: String,
}

#[derive(Debug, Serialize, JsonSchema)]
struct ViewOut {
    id: String,
    state: String,
}

#[tool_router]
impl Inv {
    fn new() -> Self { Self { tool_router: Self::tool_router() } }

    #[tool(description = "View an invoice")]
    async fn invoice_view(&self, Parameters(ViewArgs { id }): Parameters<ViewArgs>) -> Result<Json<ViewOut>, ErrorData> {
        Ok(Json(ViewOut { id, state: "draft".into() }))
    }

    // The keyed-transition scenario's baseline: the same request as toolgate's `invoice_submit`
    // (only the tool name differs from `invoice_view`), answered like `invoice_view` (an echo, no state).
    #[tool(description = "Submit an invoice")]
    async fn invoice_submit(&self, Parameters(ViewArgs { id }): Parameters<ViewArgs>) -> Result<Json<ViewOut>, ErrorData> {
        Ok(Json(ViewOut { id, state: "review".into() }))
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Inv {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("perf-rmcp-cached", "0.1.0"))
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let port: u16 = args.get(1).map(|s| s.parse().unwrap()).unwrap_or(8101);
    let stateful = args.get(2).map(|s| s == "stateful").unwrap_or(false);
    let json = args.get(3).map(|s| s != "sse").unwrap_or(true);
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(stateful)
        .with_json_response(json);
    let router = if stateful {
        let svc = StreamableHttpService::new(|| Ok(Inv::new()), Arc::new(LocalSessionManager::default()), config);
        axum::Router::new().nest_service("/mcp", svc)
    } else {
        let shared = Inv::new();
        let svc = StreamableHttpService::new(move || Ok(shared.clone()), Arc::new(NeverSessionManager::default()), config);
        axum::Router::new().nest_service("/mcp", svc)
    };
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    // TCP_NODELAY (default on; NODELAY=0 to disable). Node's http server and uvicorn/asyncio set it by default;
    // axum::serve does not, and chunked SSE responses then hit Nagle + delayed-ACK stalls (~40 ms).
    let nodelay = std::env::var("NODELAY").map(|v| v != "0").unwrap_or(true);
    let listener = {
        use axum::serve::ListenerExt;
        listener.tap_io(move |tcp| { if nodelay { let _ = tcp.set_nodelay(true); } })
    };
    eprintln!("nodelay={nodelay}");
    eprintln!("rmcp_srv_cached listening 127.0.0.1:{port} stateful={stateful} json={json}");
    axum::serve(listener, router).await?;
    Ok(())
}
