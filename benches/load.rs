//! The load generator: concurrent rmcp clients over Streamable HTTP (stateful sessions,
//! loopback) against a plain rmcp server and a toolgate server, side by side in one run.
//!
//! ```text
//! cargo bench -p toolgate --bench load                   # 16 clients, 5 s per scenario
//! CLIENTS=64 SECONDS=10 cargo bench -p toolgate --bench load
//! ```
//!
//! Stateful scenarios: each client is one session (one toolgate flow) calling in a loop:
//! `plain_rmcp` (echo), `toolgate_unbound` (echo through the gate), `toolgate_transition`
//! (alternating `light_on`/`light_off`: lease, gate, commit and `list_changed` per call).
//!
//! Sessionless scenarios (MCP 2026-07-28, rmcp's client in the discover lifecycle, every
//! request standing alone): plain rmcp answering each call as a one-event SSE stream
//! (rmcp's default) and as plain JSON (`json_response`), and toolgate's sessionless
//! service (`ServerBuilder::sessionless`), which answers in JSON.
//!
//! It prints calls/s and the ratio to the plain rmcp baseline of the same kind; figures go
//! to BENCHMARKS.md.

#[path = "../tests/common/mod.rs"]
mod common;
mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use common::clients::{Lifecycle, connect_http};
use common::servers::serve_router;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use support::{Plain, request};

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// Runs `clients` clients calling `tools` round-robin for `seconds`; returns calls/s.
async fn drive(url: &str, lifecycle: Lifecycle, tools: &'static [&'static str], clients: u64, seconds: u64) -> f64 {
    let stop = Arc::new(AtomicBool::new(false));
    let calls = Arc::new(AtomicU64::new(0));
    let mut sessions = Vec::new();
    for _ in 0..clients {
        sessions.push(connect_http((), url, lifecycle).await);
    }
    let started = Instant::now();
    let workers: Vec<_> = sessions
        .into_iter()
        .map(|client| {
            let (stop, calls) = (stop.clone(), calls.clone());
            tokio::spawn(async move {
                for tool in tools.iter().cycle() {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    let result = client.call_tool(request(tool)).await.expect("call");
                    assert_ne!(result.is_error, Some(true), "{tool}: {result:?}");
                    calls.fetch_add(1, Ordering::Relaxed);
                }
                let _ = client.cancel().await;
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_secs(seconds)).await;
    stop.store(true, Ordering::Relaxed);
    let elapsed = started.elapsed().as_secs_f64();
    let done = calls.load(Ordering::Relaxed);
    for worker in workers {
        worker.await.unwrap();
    }
    done as f64 / elapsed
}

#[tokio::main]
async fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` would pass nothing. Either way
    // only run when asked to benchmark, so `cargo test` stays fast.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let (clients, seconds) = (env_or("CLIENTS", 16), env_or("SECONDS", 5));
    let plain = StreamableHttpService::new(
        || Ok(Plain),
        LocalSessionManager::default().into(),
        StreamableHttpServerConfig::default(),
    );
    let plain_url = serve_router(axum::Router::new().fallback_service(plain)).await;
    let server = toolgate::Server::from_registry("load").build().expect("registry");
    let gated_url = serve_router(server.http_service()).await;

    let plain_sessionless = |json_response| {
        let config = StreamableHttpServerConfig::default().with_legacy_session_mode(false);
        let service = StreamableHttpService::new(
            || Ok(Plain),
            NeverSessionManager::default().into(),
            config.with_json_response(json_response),
        );
        axum::Router::new().fallback_service(service)
    };
    let plain_sse_url = serve_router(plain_sessionless(false)).await;
    let plain_json_url = serve_router(plain_sessionless(true)).await;
    let sessionless = toolgate::Server::from_registry("load").sessionless().build().expect("registry");
    let gated_sessionless_url = serve_router(sessionless.http_service()).await;

    println!("load: {clients} clients, {seconds} s per scenario, Streamable HTTP on loopback");
    let echo = &["light_echo"][..];
    let baseline = drive(&plain_url, Lifecycle::Session, echo, clients, seconds).await;
    println!("{:<30} {:>9.0} calls/s", "plain_rmcp", baseline);
    for (name, tools) in [("toolgate_unbound", echo), ("toolgate_transition", &["light_on", "light_off"][..])] {
        let rate = drive(&gated_url, Lifecycle::Session, tools, clients, seconds).await;
        println!("{name:<30} {rate:>9.0} calls/s   {:.2}x plain rmcp", rate / baseline);
    }
    let baseline = drive(&plain_sse_url, Lifecycle::Sessionless, echo, clients, seconds).await;
    println!("{:<30} {:>9.0} calls/s", "plain_rmcp_sessionless_sse", baseline);
    for (name, url) in
        [("plain_rmcp_sessionless_json", &plain_json_url), ("toolgate_sessionless_json", &gated_sessionless_url)]
    {
        let rate = drive(url, Lifecycle::Sessionless, echo, clients, seconds).await;
        println!("{name:<30} {rate:>9.0} calls/s   {:.2}x plain rmcp sessionless SSE", rate / baseline);
    }
}
