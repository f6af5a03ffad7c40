//! Item 4: `SESSIONS` stateful sessions (MCP 2025-11-25) open at once, then as many idle
//! HTTP connections (each has made one request and stays open), then as many
//! `subscriptions/listen` streams (MCP 2026-07-28), each on a connection of its own, on one
//! invoice server: the resident memory each adds, `tools/list` and a call's p50/p99 with
//! all of them open, and how long the server takes to stop (SIGTERM) with them open. What
//! an idle connection costs is the HTTP server's (hyper's buffers, the connection's task),
//! which a stream on a connection of its own pays too. (Told apart by resident memory, the
//! two are not exact: the allocator reuses what one step freed in the next. `massif`
//! tells them apart exactly; see `BENCHMARKS.md`, item 4.)

use std::time::{Duration, Instant};

use futures::StreamExt;

use crate::Config;
use crate::driver::{Caller, Latencies};
use crate::server::Server;
use crate::stores::{Kind, Target};

/// Sessions or streams opened at once while they are being opened.
const OPENING: usize = 16;

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"scale","version":"1"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
const LIST: &str = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#;
const LISTEN: &str = r#"{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#;

fn post(http: &reqwest::Client, url: &str, body: &'static str) -> reqwest::RequestBuilder {
    (http.post(url))
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .body(body)
}

/// A sessionless (MCP 2026-07-28) request of `method`, answered with success.
async fn modern(http: &reqwest::Client, url: &str, method: &str, body: &'static str) -> reqwest::Response {
    let response = (post(http, url, body))
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", method)
        .send()
        .await
        .unwrap_or_else(|error| panic!("{method}: {error}"));
    assert!(response.status().is_success(), "{method}: HTTP {}", response.status());
    response
}

/// `open` run `count` times, [`OPENING`] at a time, each with a client of its own (so on a
/// connection of its own); what each returned.
async fn each_on_its_own_connection<T>(
    url: &str,
    count: usize,
    open: impl AsyncFn(reqwest::Client, String) -> T,
) -> Vec<T> {
    let open = &open;
    futures::stream::iter(0..count)
        .map(|_| open(reqwest::Client::builder().build().unwrap(), url.to_string()))
        .buffer_unordered(OPENING)
        .collect()
        .await
}

/// Opens a stateful session; its id.
async fn open_session(http: &reqwest::Client, url: &str) -> String {
    let response = post(http, url, INITIALIZE).send().await.expect("initialize");
    assert!(response.status().is_success(), "initialize: HTTP {}", response.status());
    let id = response.headers()["mcp-session-id"].to_str().unwrap().to_string();
    let _ = response.bytes().await;
    let done = (post(http, url, INITIALIZED))
        .header("MCP-Protocol-Version", "2025-11-25")
        .header("Mcp-Session-Id", &id)
        .send()
        .await
        .expect("initialized");
    assert!(done.status().is_success(), "notifications/initialized: HTTP {}", done.status());
    id
}

/// `tools/list` in session `id`, `calls` times; the latencies.
async fn list_tools(http: &reqwest::Client, url: &str, id: &str, calls: usize) -> Latencies {
    let mut latencies = Latencies::default();
    for _ in 0..calls {
        let started = Instant::now();
        let response = (post(http, url, r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#))
            .header("MCP-Protocol-Version", "2025-11-25")
            .header("Mcp-Session-Id", id)
            .send()
            .await
            .expect("tools/list");
        let text = response.text().await.expect("tools/list's answer");
        assert!(text.contains("invoice_view"), "tools/list: {text}");
        latencies.push(started.elapsed());
    }
    latencies
}

/// The resident memory once it has settled (the allocator returns what it can).
async fn settled(server: &Server) -> u64 {
    tokio::time::sleep(Duration::from_millis(500)).await;
    server.resident_bytes()
}

/// Runs item 4 on `kind`.
pub(crate) async fn run(kind: Kind, config: &Config) {
    let count = config.sessions;
    let target = Target::fresh(kind, 0, &config.dir).await;
    let max = (2 * count + 100).to_string();
    let args = [
        "--drain-delay",
        "1ms",
        "--max-sessions",
        &max,
        "--max-listen-streams",
        &max,
        "--max-client-streams",
        &max,
        "--max-client-connections",
        &max,
        "--max-connections",
        &max,
        // Idle connections stay open while the rest is opened.
        "--request-read-timeout",
        "600s",
    ];
    let server = Server::start("invoice", &target.url, &args).await;
    let http = reqwest::Client::builder().tcp_nodelay(true).build().unwrap();
    let url = server.url.clone();
    // Warm: a few sessions and calls, so that what grows next is the sessions' own.
    let warm = open_session(&http, &url).await;
    list_tools(&http, &url, &warm, 100).await;
    let mut caller = Caller::new(&url);
    for n in 1..=100 {
        caller.call("invoice_view", &format!(r#"{{"id":"INV-{n}","domain":"invoice"}}"#)).await.expect("a view");
    }
    let before = settled(&server).await;

    let started = Instant::now();
    let ids: Vec<String> =
        futures::stream::iter(0..count).map(|_| open_session(&http, &url)).buffer_unordered(OPENING).collect().await;
    let opening = started.elapsed();
    let with_sessions = settled(&server).await;
    let per_session = with_sessions.saturating_sub(before) / count as u64;
    let mut listed = list_tools(&http, &url, &ids[ids.len() / 2], config.calls).await;
    let mut viewed = Latencies::default();
    for n in 0..config.calls {
        let took = caller.call("invoice_view", &format!(r#"{{"id":"INV-{}","domain":"invoice"}}"#, n + 1)).await;
        viewed.push(took.expect("a view"));
    }

    // Idle connections: each has made one sessionless request, and its client keeps it.
    let started = Instant::now();
    let idle: Vec<reqwest::Client> = each_on_its_own_connection(&url, count, async |http, url| {
        let _ = modern(&http, &url, "tools/list", LIST).await.bytes().await;
        http
    })
    .await;
    let idling = started.elapsed();
    let with_idle = settled(&server).await;
    let per_idle = with_idle.saturating_sub(with_sessions) / count as u64;

    // Streams: each its own connection, held open.
    let started = Instant::now();
    let streams: Vec<reqwest::Response> = each_on_its_own_connection(&url, count, async |http, url| {
        let mut response = modern(&http, &url, "subscriptions/listen", LISTEN).await;
        // Its acknowledgement: the stream is open and the server holds it.
        let chunk = response.chunk().await.expect("the stream").expect("its first event");
        assert!(String::from_utf8_lossy(&chunk).contains("acknowledged"), "a listen stream's first event");
        response
    })
    .await;
    let streaming = started.elapsed();
    let with_streams = settled(&server).await;
    let per_stream = with_streams.saturating_sub(with_idle) / count as u64;
    let mut listed_streaming = list_tools(&http, &url, &ids[0], config.calls).await;

    let stopping = server.stop().await;
    drop(streams);
    drop(idle);
    println!(
        "\n| store | sessions, idle connections, streams | opened in (s) | RSS before / with sessions / idle connections / streams (MB) | per session | per idle connection | per stream, its connection included | tools/list p50 / p99 (ms), sessions open | with streams too | a view p50 / p99 (ms) | SIGTERM to exit |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    println!(
        "| {} | {count} | {:.1} / {:.1} / {:.1} | {:.0} / {:.0} / {:.0} / {:.0} | {:.1} KB | {:.1} KB | {:.1} KB | {:.2} / {:.2} | {:.2} / {:.2} | {:.2} / {:.2} | {:.2} s |",
        kind.name(),
        opening.as_secs_f64(),
        idling.as_secs_f64(),
        streaming.as_secs_f64(),
        before as f64 / 1e6,
        with_sessions as f64 / 1e6,
        with_idle as f64 / 1e6,
        with_streams as f64 / 1e6,
        per_session as f64 / 1e3,
        per_idle as f64 / 1e3,
        per_stream as f64 / 1e3,
        listed.quantile_ms(0.5),
        listed.quantile_ms(0.99),
        listed_streaming.quantile_ms(0.5),
        listed_streaming.quantile_ms(0.99),
        viewed.quantile_ms(0.5),
        viewed.quantile_ms(0.99),
        stopping.as_secs_f64(),
    );
    target.drop_store().await;
}
