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

/// With `history`: the entry and the count, after the move, in its transaction (SQLite), or
/// the three in one statement (Postgres).
const LOG_SQLITE: &str = "INSERT INTO invoice_history (id, at_ms, entry) VALUES (?1, ?2, ?3)";
const COUNT_SQLITE: &str = "INSERT INTO state_counts (state, n) VALUES ('review', 1) \
     ON CONFLICT (state) DO UPDATE SET n = n + 1";
const SUBMIT_LOGGED_POSTGRES: &str = "WITH moved AS ( \
     INSERT INTO anchor.invoice_state (id, state) VALUES ($1, 'review') \
     ON CONFLICT (id) DO UPDATE SET state = 'review' WHERE invoice_state.state = 'draft' RETURNING id \
   ), logged AS ( \
     INSERT INTO anchor.invoice_history (id, at_ms, entry) SELECT id, $2, $3 FROM moved \
   ), counted AS ( \
     INSERT INTO anchor.state_counts AS c (state, shard, n) SELECT 'review', pg_backend_pid() & 15, 1 FROM moved \
     ON CONFLICT (state, shard) DO UPDATE SET n = c.n + 1 \
   ) SELECT count(*) FROM moved";

/// A history entry of about the shape and size toolgate writes (who, from, to, event, tool,
/// when, which call).
fn entry(id: &str, at_ms: i64) -> String {
    static CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    serde_json::json!({
        "principal": null, "tenant": null, "from": "draft", "to": "review", "event": "SUBMIT",
        "tool": "invoice_submit", "invoice": id, "at_ms": at_ms, "call_id": format!("{call:032x}"),
    })
    .to_string()
}

fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
}

#[derive(Clone)]
enum Db {
    Sqlite(Arc<Mutex<rusqlite::Connection>>, bool),
    Postgres(deadpool_postgres::Pool, bool),
}

impl Db {
    async fn submit(&self, id: String) -> anyhow::Result<bool> {
        match self {
            Db::Sqlite(connection, false) => {
                let connection = connection.clone();
                tokio::task::spawn_blocking(move || {
                    let connection = connection.lock().unwrap();
                    Ok(connection.prepare_cached(SUBMIT_SQLITE)?.execute([&id])? == 1)
                })
                .await?
            }
            Db::Sqlite(connection, true) => {
                let connection = connection.clone();
                tokio::task::spawn_blocking(move || {
                    let mut connection = connection.lock().unwrap();
                    let transaction = connection.transaction()?;
                    if transaction.prepare_cached(SUBMIT_SQLITE)?.execute([&id])? != 1 {
                        return Ok(false);
                    }
                    let at_ms = now_ms();
                    transaction.prepare_cached(LOG_SQLITE)?.execute(rusqlite::params![id, at_ms, entry(&id, at_ms)])?;
                    transaction.prepare_cached(COUNT_SQLITE)?.execute([])?;
                    transaction.commit()?;
                    Ok(true)
                })
                .await?
            }
            Db::Postgres(pool, false) => {
                let client = pool.get().await?;
                let statement = client.prepare_cached(SUBMIT_POSTGRES).await?;
                Ok(client.execute(&statement, &[&id]).await? == 1)
            }
            Db::Postgres(pool, true) => {
                let client = pool.get().await?;
                let statement = client.prepare_cached(SUBMIT_LOGGED_POSTGRES).await?;
                let at_ms = now_ms();
                let moved: i64 = client.query_one(&statement, &[&id, &at_ms, &entry(&id, at_ms)]).await?.get(0);
                Ok(moved == 1)
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
    let history = args.get(3).is_some_and(|arg| arg == "history");
    let db = if let Some(path) = store.strip_prefix("sqlite:") {
        let connection = rusqlite::Connection::open(path)?;
        connection.execute_batch(
            "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL;
             CREATE TABLE IF NOT EXISTS invoice_state (id TEXT PRIMARY KEY, state TEXT NOT NULL);
             CREATE TABLE IF NOT EXISTS invoice_history (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL,
                 at_ms INTEGER NOT NULL, entry TEXT NOT NULL);
             CREATE INDEX IF NOT EXISTS invoice_history_id ON invoice_history (id, seq);
             CREATE TABLE IF NOT EXISTS state_counts (state TEXT PRIMARY KEY, n INTEGER NOT NULL);",
        )?;
        Db::Sqlite(Arc::new(Mutex::new(connection)), history)
    } else {
        let config: tokio_postgres::Config = store.parse()?;
        let manager = deadpool_postgres::Manager::new(config, tokio_postgres::NoTls);
        let pool = deadpool_postgres::Pool::builder(manager).max_size(16).build()?;
        pool.get().await?.batch_execute(
            "CREATE SCHEMA IF NOT EXISTS anchor;
             CREATE TABLE IF NOT EXISTS anchor.invoice_state (id text PRIMARY KEY, state text NOT NULL);
             CREATE TABLE IF NOT EXISTS anchor.invoice_history (id text NOT NULL, seq bigserial, at_ms bigint NOT NULL,
                 entry text NOT NULL, PRIMARY KEY (id, seq));
             CREATE TABLE IF NOT EXISTS anchor.state_counts (state text NOT NULL, shard integer NOT NULL,
                 n bigint NOT NULL, PRIMARY KEY (state, shard));",
        ).await?;
        Db::Postgres(pool, history)
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
    eprintln!("rmcp_state listening 127.0.0.1:{port} on {store}{}", if history { " (history)" } else { "" });
    axum::serve(listener, router).await?;
    Ok(())
}
