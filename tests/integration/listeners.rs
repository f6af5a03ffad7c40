//! Every listener the process opens — the MCP endpoint, the operator's console, the
//! metrics — goes through one accept path, each with its own limits (issue 53, item 1):
//!
//! - idle connections to the console, from many addresses, are closed past the console's
//!   own cap and after the read timeout, and never take the descriptors MCP calls need;
//! - the console answers only the hosts the server is told to answer (DNS rebinding);
//! - the metrics answer a scraper or a probe that names the pod by its address, or sends
//!   no `Host` at all.

use std::time::{Duration, Instant};

use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};
use tokio::process::{Child, Command};

use crate::common::raw::SessionlessClient;
use crate::common::servers::serving;
use crate::common::{PATIENCE, example_binary, scratch_dir};

const OPERATOR: &str = "listeners-operator-token-00000001";

/// A free loopback address to listen on.
fn free_address() -> String {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().to_string()
}

/// The invoice example with an operator, its console and its metrics, limited to `nofile`
/// open files (as `ulimit -n` limits a real deployment): the server, its MCP endpoint, its
/// console and its metrics address.
async fn serve(nofile: u64, extra: &[&str]) -> (Child, String, String, String) {
    let dir = scratch_dir("listeners");
    let tokens = dir.join("tokens.toml");
    let file = format!(
        "[[token]]\nsecret = \"{OPERATOR}\"\nprincipal = \"olga\"\ntenant = \"acme\"\nscopes = [\"toolgate:operator\"]\n"
    );
    std::fs::write(&tokens, file).unwrap();
    let (console, metrics) = (free_address(), free_address());
    let limit = format!("--nofile={nofile}:{nofile}");
    let mut command = Command::new("prlimit");
    command.arg(&limit).arg("--").arg(example_binary("invoice"));
    command.args(["--http", "127.0.0.1:0", "--store", "memory", "--tokens", tokens.to_str().unwrap()]);
    command.args(["--console", &console, "--metrics", &metrics]).args(extra);
    let (child, url) = serving(&mut command).await;
    (child, url, console, metrics)
}

/// Opens `count` connections to `address`, from `sources` addresses of 127.0.0.0/8 in
/// turn (127.0.1.1, 127.0.1.2, …), and sends nothing on them. Gives up after 20 failures
/// in a row (a server that no longer accepts: its queue is full).
async fn idle_connections(address: &str, count: usize, sources: u8) -> Vec<TcpStream> {
    let target: std::net::SocketAddr = address.parse().unwrap();
    let mut held = Vec::with_capacity(count);
    let mut failed_in_a_row = 0;
    for n in 0..count {
        if failed_in_a_row == 20 {
            break;
        }
        let source = std::net::Ipv4Addr::new(127, 0, 1, 1 + (n % usize::from(sources)) as u8);
        let socket = TcpSocket::new_v4().unwrap();
        socket.bind((source, 0).into()).unwrap();
        match tokio::time::timeout(Duration::from_secs(1), socket.connect(target)).await {
            Ok(Ok(stream)) => {
                held.push(stream);
                failed_in_a_row = 0;
            }
            // The kernel's accept queue is full: the server is not accepting.
            Ok(Err(_)) | Err(_) => failed_in_a_row += 1,
        }
    }
    held
}

/// How many of `connections` the server has closed: a read ends (EOF or reset) at once.
async fn closed(connections: &mut [TcpStream]) -> usize {
    let mut count = 0;
    for connection in connections {
        let mut buffer = [0u8; 64];
        if let Ok(Ok(0) | Err(_)) = tokio::time::timeout(Duration::from_millis(1), connection.read(&mut buffer)).await {
            count += 1;
        }
    }
    count
}

/// A sessionless `invoice_submit`, within `PATIENCE`: whether it was served.
async fn mcp_call_served(url: &str, id: &str) -> bool {
    let client = SessionlessClient::new(url);
    let call = client.call("invoice_submit", json!({ "domain": "invoice", "id": id }));
    match tokio::time::timeout(PATIENCE, call).await {
        Ok((result, false)) if result["state"] == "review" => true,
        Ok(other) => panic!("the call was answered, wrongly: {other:?}"),
        Err(_) => false,
    }
}

/// The flood: idle connections to the console from 150 addresses, more than the server
/// has descriptors (`TOOLGATE_LISTENER_FLOOD`, default 3,000, against 2,048 open files; the
/// issue's 20,000 against 20,000 is the same test with both set higher, as root:
/// `prlimit --nofile=50000:50000 cargo test …` with `TOOLGATE_LISTENER_FLOOD=20000
/// TOOLGATE_LISTENER_NOFILE=20000`). Before the console had limits of its own, the server
/// ran out of descriptors and MCP calls failed (`accept error: Too many open files`); now
/// the console keeps at most 256 of them, closes the rest at once and every idle one after
/// the read timeout, and MCP calls are served throughout.
#[tokio::test]
async fn idle_console_connections_from_many_addresses_never_starve_mcp_calls() {
    let env = |name: &str, default: usize| std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default);
    let (flood, nofile) = (env("TOOLGATE_LISTENER_FLOOD", 3_000), env("TOOLGATE_LISTENER_NOFILE", 2_048));
    let (_server, url, console, _) = serve(nofile as u64, &["--request-read-timeout", "3"]).await;
    assert!(mcp_call_served(&url, "INV-9100").await, "the server serves before the flood");

    let started = Instant::now();
    let mut held = idle_connections(&console, flood, 150).await;
    let opened = held.len();
    // The server's answer to a connection past a cap is to close it at once.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let closed_at_once = closed(&mut held).await;
    assert!(mcp_call_served(&url, "INV-9101").await, "an MCP call failed with {opened} console connections open");
    eprintln!(
        "{opened} of {flood} idle console connections opened from 150 addresses in {:?}; {closed_at_once} closed at once",
        started.elapsed()
    );
    assert!(opened + 64 >= flood, "the console stopped accepting: only {opened} of {flood} connected");
    assert!(closed_at_once + 256 >= opened, "the console kept more than its 256 connections: {closed_at_once} closed");

    // The ones it kept send nothing: closed after the read timeout.
    let deadline = Instant::now() + PATIENCE;
    while closed(&mut held).await < opened {
        assert!(Instant::now() < deadline, "idle console connections stayed open past the read timeout");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert!(mcp_call_served(&url, "INV-9102").await, "an MCP call failed after the flood");
}

/// A raw HTTP/1 GET of `path` with exactly `headers`: the status code.
async fn status_of(address: &str, path: &str, version: &str, headers: &[(&str, &str)]) -> u16 {
    let mut connection = TcpStream::connect(address).await.unwrap();
    let mut request = format!("GET {path} HTTP/{version}\r\n");
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("Connection: close\r\n\r\n");
    connection.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(PATIENCE, connection.read_to_end(&mut answer)).await.unwrap().unwrap();
    let answer = String::from_utf8_lossy(&answer);
    answer.split_whitespace().nth(1).and_then(|code| code.parse().ok()).unwrap_or_else(|| panic!("{answer}"))
}

/// The console answers the hosts the server answers (loopback by default), so a page of
/// another site that rebinds its name to 127.0.0.1 reads nothing — even with the
/// operator's credentials, which a browser would send with the cookie. The metrics answer
/// a scraper that names the pod by its address (`Host: 10.0.3.7:9090`), or sends no
/// `Host` (HTTP/1.0), but not a name the server was not told.
#[tokio::test]
async fn the_console_answers_its_hosts_only_and_the_metrics_answer_a_probe() {
    let (_server, _, console, metrics) = serve(4_096, &[]).await;
    let bearer = format!("Bearer {OPERATOR}");
    let operator = |host| [("Host", host), ("Authorization", bearer.as_str())];
    assert_eq!(status_of(&console, "/", "1.1", &operator("127.0.0.1")).await, 200);
    assert_eq!(status_of(&console, "/", "1.1", &operator("localhost:1234")).await, 200);
    assert_eq!(status_of(&console, "/", "1.1", &operator("evil.example")).await, 403);
    assert_eq!(status_of(&console, "/api/machines", "1.1", &operator("evil.example:80")).await, 403);
    assert_eq!(status_of(&console, "/", "1.1", &[("Host", "evil.example")]).await, 403);
    assert_eq!(status_of(&console, "/", "1.0", &[("Authorization", bearer.as_str())]).await, 400);

    assert_eq!(status_of(&metrics, "/metrics", "1.1", &[("Host", "127.0.0.1")]).await, 200);
    assert_eq!(status_of(&metrics, "/metrics", "1.1", &[("Host", "10.0.3.7:9090")]).await, 200);
    assert_eq!(status_of(&metrics, "/metrics", "1.1", &[("Host", "[fd00::7]:9090")]).await, 200);
    assert_eq!(status_of(&metrics, "/metrics", "1.0", &[]).await, 200);
    assert_eq!(status_of(&metrics, "/metrics", "1.1", &[("Host", "evil.example")]).await, 403);
}
