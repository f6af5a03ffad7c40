//! The anchor of the transition scenario: what a user without toolgate writes by hand — the
//! plain rmcp server of `rmcp_srv_cached`, whose `invoice_submit` commits the invoice's state
//! row to the same store toolgate uses (one durable statement per call: draft -> review, only
//! from draft), refusing a call on an invoice not in draft.
//! usage: rmcp_state <port> sqlite:<path> | postgres://USER@HOST:PORT/DB   (sessionless, JSON replies)
use std::sync::{Arc, Mutex};

use rmcp::transport::streamable_http_server::{
    StreamableHttpServerConfig, StreamableHttpService, session::never::NeverSessionManager,
};
use rmcp::{
    ErrorData, Json, ServerHandler,
    handler::server::{router::tool::ToolRouter, wrapper::Parameters},
    model::*,
    schemars::JsonSchema,
    tool, tool_handler, tool_router,
};
use serde::{Deserialize, Serialize};

/// Moves `id` from draft to review; `false` if it is not in draft.
const SUBMIT_SQLITE: &str = "INSERT INTO invoice_state (id, state) VALUES (?1, 'review') \
     ON CONFLICT (id) DO UPDATE SET state = 'review' WHERE invoice_state.state = 'draft'";
const SUBMIT_POSTGRES: &str = "INSERT INTO anchor.invoice_state (id, state) VALUES ($1, 'review') \
     ON CONFLICT (id) DO UPDATE SET state = 'review' WHERE invoice_state.state = 'draft'";

#[derive(Clone)]
enum Db {
    Sqlite(Arc<Mutex<rusqlite::Connection>>),
    Postgres(deadpool_postgres::Pool),
}

impl Db {
    async fn submit(&self, id: String) -> anyhow::Result<bool> {
        match self {
            Db::Sqlite(connection) => {
                let connection = connection.clone();
                tokio::task::spawn_blocking(move || {
                    let connection = connection.lock().unwrap();
                    Ok(connection.prepare_cached(SUBMIT_SQLITE)?.execute([&id])? == 1)
                })
                .await?
            }
            Db::Postgres(pool) => {
                let client = pool.get().await?;
                let statement = client.prepare_cached(SUBMIT_POSTGRES).await?;
                Ok(client.execute(&statement, &[&id]).await? == 1)
            }
        }
    }
}

#[derive(Clone)]
struct Inv {
    tool_router: ToolRouter<Inv>,
    db: Db,
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
    #[tool(description = "Submit an invoice")]
    async fn invoice_submit(&self, Parameters(ViewArgs { id }): Parameters<ViewArgs>) -> Result<Json<ViewOut>, ErrorData> {
        match self.db.submit(id.clone()).await {
            Ok(true) => Ok(Json(ViewOut { id, state: "review".into() })),
            Ok(false) => Err(ErrorData::invalid_params("the invoice is not in draft", None)),
            Err(error) => Err(ErrorData::internal_error(error.to_string(), None)),
        }
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Inv {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("perf-rmcp-state", "0.1.0"))
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let port: u16 = args.get(1).map(|s| s.parse().unwrap()).unwrap_or(8102);
    let store = args.get(2).cloned().unwrap_or_else(|| "sqlite:anchor.db".into());
    let db = if let Some(path) = store.strip_prefix("sqlite:") {
        let connection = rusqlite::Connection::open(path)?;
        connection.execute_batch(
            "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL;
             CREATE TABLE IF NOT EXISTS invoice_state (id TEXT PRIMARY KEY, state TEXT NOT NULL);",
        )?;
        Db::Sqlite(Arc::new(Mutex::new(connection)))
    } else {
        let config: tokio_postgres::Config = store.parse()?;
        let manager = deadpool_postgres::Manager::new(config, tokio_postgres::NoTls);
        let pool = deadpool_postgres::Pool::builder(manager).max_size(16).build()?;
        pool.get().await?.batch_execute(
            "CREATE SCHEMA IF NOT EXISTS anchor;
             CREATE TABLE IF NOT EXISTS anchor.invoice_state (id text PRIMARY KEY, state text NOT NULL);",
        ).await?;
        Db::Postgres(pool)
    };
    let config = StreamableHttpServerConfig::default().with_legacy_session_mode(false).with_json_response(true);
    let shared = Inv { tool_router: Inv::tool_router(), db };
    let svc = StreamableHttpService::new(move || Ok(shared.clone()), Arc::new(NeverSessionManager::default()), config);
    let router = axum::Router::new().nest_service("/mcp", svc);
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    let listener = {
        use axum::serve::ListenerExt;
        listener.tap_io(|tcp| { let _ = tcp.set_nodelay(true); })
    };
    eprintln!("rmcp_state listening 127.0.0.1:{port} on {store}");
    axum::serve(listener, router).await?;
    Ok(())
}
