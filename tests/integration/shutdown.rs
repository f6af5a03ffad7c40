//! Deploying and rolling (issue 56): a replica stopped with SIGTERM drains — `/readyz`
//! fails at once, new requests are still served for the drain delay with
//! `Connection: close`, the calls in flight finish — and exits 0; `/healthz` and `/readyz`
//! answer before the `Host` check, and readiness follows the store.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::common::TestClient;
use crate::common::clients::Lifecycle;
use crate::own_redis::OwnRedis;
use crate::replicas::{fresh_invoice, inv, postgres_url, replica_with};

/// Sends `signal` (`TERM`, `INT`) to the process `child`.
pub(crate) fn signal(child: &tokio::process::Child, signal: &str) {
    let pid = child.id().expect("the server still runs").to_string();
    let sent = std::process::Command::new("kill").args([&format!("-{signal}"), &pid]).status().unwrap();
    assert!(sent.success(), "kill -{signal} {pid}");
}

/// One raw HTTP/1.1 `GET path` to `url`'s address with these `Host` headers (none: no
/// `Host` at all); returns the status and the response's head, lowercased.
pub(crate) async fn get(url: &str, path: &str, host: Option<&str>) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let address = url.trim_start_matches("http://").split('/').next().unwrap().to_string();
    let mut stream = tokio::net::TcpStream::connect(&address).await.unwrap();
    let host = host.map(|host| format!("Host: {host}\r\n")).unwrap_or_default();
    stream.write_all(format!("GET {path} HTTP/1.1\r\n{host}\r\n").as_bytes()).await.unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if stream.read(&mut byte).await.unwrap() == 0 {
            break;
        }
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head).to_ascii_lowercase();
    let status = head.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    (status, head)
}

/// How many discharges are in flight on the stopping replica when SIGTERM arrives.
const IN_FLIGHT: usize = 12;

/// SIGTERM while 12 discharges pause in their handler (1.5 s): readiness fails at once
/// while the other replica stays ready; a call sent during the drain is served, and its
/// response says `Connection: close`; every call in flight is answered, committed; the
/// process exits 0 once they are.
async fn sigterm_drains_and_finishes_the_calls_in_flight_on(store: &str) {
    let slow = [("INVOICE_TEST_DISCHARGE_PAUSE_MS", "1500")];
    let drain = ["--drain-delay", "800ms", "--shutdown-grace", "10"];
    let ((mut a, url_a), (_b, url_b)) =
        tokio::join!(replica_with("invoice", store, &drain, &slow), replica_with("invoice", store, &drain, &[]));
    let setup = TestClient::http_as(&url_b, Lifecycle::Sessionless, None).await;
    let first = fresh_invoice();
    let first: u64 = first.trim_start_matches("INV-").parse().unwrap();
    let ids: Vec<String> = (0..=IN_FLIGHT as u64).map(|n| format!("INV-{}", first + n)).collect();
    for id in &ids {
        setup.ok("invoice_submit", inv(id)).await;
        setup.ok("invoice_approve", inv(id)).await;
    }
    assert_eq!(get(&url_a, "/readyz", Some("127.0.0.1")).await.0, 200);

    let discharge = |url: String, id: String| {
        tokio::spawn(async move {
            let client = TestClient::http_as(&url, Lifecycle::Sessionless, None).await;
            client.try_call("invoice_discharge", inv(&id)).await
        })
    };
    let in_flight: Vec<_> = ids[..IN_FLIGHT].iter().map(|id| discharge(url_a.clone(), id.clone())).collect();
    tokio::time::sleep(Duration::from_millis(400)).await;
    let asked = Instant::now();
    signal(&a, "TERM");
    tokio::time::sleep(Duration::from_millis(100)).await;

    // Draining: not ready, but still serving, and saying so.
    let (status, head) = get(&url_a, "/readyz", Some("127.0.0.1")).await;
    assert_eq!(status, 503, "{head}");
    assert!(head.contains("connection: close"), "{head}");
    assert_eq!(get(&url_b, "/readyz", Some("127.0.0.1")).await.0, 200, "the other replica stays ready");
    let during_drain = discharge(url_a.clone(), ids[IN_FLIGHT].clone());

    let mut answered = 0;
    for call in in_flight.into_iter().chain([during_drain]) {
        let result = call.await.unwrap().unwrap_or_else(|error| panic!("a call in flight got no answer: {error}"));
        let content = result.structured_content.unwrap_or_default();
        assert_eq!(content["state"], "discharged", "{content}");
        answered += 1;
    }
    let status = tokio::time::timeout(Duration::from_secs(15), a.wait()).await.expect("it exits").unwrap();
    let took = asked.elapsed();
    assert!(status.success(), "exited {status:?}");
    eprintln!(
        "SIGTERM with {IN_FLIGHT} calls in flight and 1 sent during the drain: {answered} answered, 0 without an \
         answer; exited 0 after {} ms",
        took.as_millis()
    );
    // Committed: the other replica sees each one discharged.
    for id in &ids {
        let refused = setup.refused("invoice_discharge", inv(id)).await;
        assert_eq!(refused["current_state"], "discharged", "{refused}");
    }
}

#[tokio::test]
async fn sigterm_drains_and_finishes_the_calls_in_flight_on_redis() {
    let Some(redis) = OwnRedis::start() else { return };
    sigterm_drains_and_finishes_the_calls_in_flight_on(&redis.url()).await;
}

#[tokio::test]
async fn sigterm_drains_and_finishes_the_calls_in_flight_on_postgres() {
    let Some(postgres) = postgres_url() else { return };
    sigterm_drains_and_finishes_the_calls_in_flight_on(&postgres).await;
}

/// `/healthz` and `/readyz` are answered whatever the `Host` (an orchestrator sends the
/// pod's address, or none) while `/mcp` still refuses a name it does not answer; readiness
/// fails while Redis is down, and while the data under the server vanished, and comes back
/// with it; liveness answers throughout.
#[tokio::test]
async fn readiness_follows_the_store_and_probes_ignore_the_host() {
    let Some(redis) = OwnRedis::start() else { return };
    let (_server, url) = replica_with("invoice", &redis.url(), &[], &[]).await;
    for host in [Some("10.9.8.7:8080"), None, Some("evil.example")] {
        assert_eq!(get(&url, "/readyz", host).await.0, 200, "{host:?}");
        assert_eq!(get(&url, "/healthz", host).await.0, 200, "{host:?}");
    }
    assert_eq!(get(&url, "/mcp", Some("evil.example")).await.0, 403);
    let (status, head) = get(&url, "/readyz", None).await;
    assert!(status == 200 && head.contains("cache-control: no-store"), "{head}");

    redis.stop();
    let down = Instant::now();
    assert_eq!(get(&url, "/readyz", None).await.0, 503, "Redis is down");
    assert!(down.elapsed() < Duration::from_secs(5), "readiness answers in time: {:?}", down.elapsed());
    assert_eq!(get(&url, "/healthz", None).await.0, 200);
    redis.run();
    let mut ready = 0;
    for _ in 0..50 {
        ready = get(&url, "/readyz", None).await.0;
        if ready == 200 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(ready, 200, "ready again once Redis is back");

    // The data vanished (FLUSHALL): the marker is gone, and so is readiness.
    redis.ask(&["flushall"]);
    assert_eq!(get(&url, "/readyz", None).await.0, 503, "the data under the server vanished");
    let client = TestClient::http_as(&url, Lifecycle::Sessionless, None).await;
    let refused = client.refused("invoice_submit", json!({ "domain": "invoice", "id": fresh_invoice() })).await;
    assert_eq!(refused["code"], "STORE_UNAVAILABLE", "{refused}");
}

/// A second signal during the drain ends the process at once (128 + the signal); the
/// probes are served on the metrics listener too, whatever its `Host`.
#[tokio::test]
async fn a_second_signal_exits_at_once_and_the_metrics_listener_has_the_probes() {
    let metrics = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().to_string();
    let (mut server, _url) = crate::common::spawn_http_example(
        "invoice",
        &["--drain-delay", "30", "--metrics", &metrics],
        &[("RUST_LOG", "warn")],
    )
    .await;
    let on_metrics = format!("http://{metrics}/metrics");
    assert_eq!(get(&on_metrics, "/readyz", Some("10.0.0.7:9090")).await.0, 200);
    assert_eq!(get(&on_metrics, "/healthz", None).await.0, 200);
    signal(&server, "TERM");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(get(&on_metrics, "/readyz", Some("10.0.0.7:9090")).await.0, 503, "draining");
    let asked = Instant::now();
    signal(&server, "INT");
    let status = tokio::time::timeout(Duration::from_secs(5), server.wait()).await.expect("it exits").unwrap();
    assert_eq!(status.code(), Some(130), "{status:?}");
    assert!(asked.elapsed() < Duration::from_secs(2), "at once, not after the 30 s drain: {:?}", asked.elapsed());
}

/// A connection that never sent a request (a client's pool may open one it never uses) is
/// closed as soon as the server closes: the stop does not wait for it. It waited for the
/// read timeout, or the whole shutdown grace past it (the scale harness's stop took 30 s
/// in one run of six, with three such connections open).
#[tokio::test]
async fn a_connection_that_sent_nothing_does_not_hold_the_stop() {
    let args = ["--drain-delay", "1ms", "--request-read-timeout", "60"];
    let (mut server, url) = crate::common::spawn_http_example("invoice", &args, &[("RUST_LOG", "warn")]).await;
    let address = url.trim_start_matches("http://").split('/').next().unwrap().to_string();
    let silent = tokio::net::TcpStream::connect(&address).await.unwrap();
    // A round trip on another connection, accepted after the silent one.
    assert_eq!(get(&url, "/healthz", Some("127.0.0.1")).await.0, 200);
    let asked = Instant::now();
    signal(&server, "TERM");
    let status = tokio::time::timeout(Duration::from_secs(45), server.wait()).await.expect("it exits").unwrap();
    assert!(status.success(), "{status:?}");
    let took = asked.elapsed();
    assert!(took < Duration::from_secs(10), "the silent connection held the stop for {took:?} (read timeout 60 s)");
    drop(silent);
}

/// Over stdio, SIGTERM ends the server cleanly (exit 0), as its input closing does.
#[tokio::test]
async fn stdio_stops_on_sigterm_with_exit_0() {
    let mut server = tokio::process::Command::new(crate::common::example_binary("invoice"))
        .args(["--store", "memory"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = server.stdin.take().unwrap();
    let stdout = server.stdout.take().unwrap();
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let initialize = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": { "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } },
    });
    stdin.write_all(format!("{initialize}\n").as_bytes()).await.unwrap();
    let mut lines = tokio::io::BufReader::new(stdout).lines();
    let answered = tokio::time::timeout(Duration::from_secs(10), lines.next_line()).await.unwrap().unwrap().unwrap();
    assert!(answered.contains("\"id\":1"), "{answered}");
    signal(&server, "TERM");
    let status = tokio::time::timeout(Duration::from_secs(5), server.wait()).await.expect("it exits").unwrap();
    assert!(status.success(), "{status:?}");
}
