//! State that survives: the invoice example on its SQLite file, restarted and killed.
//! What a reply acknowledged is on disk; nothing half-written ever is.

use crate::common;

use std::path::PathBuf;
use std::time::Duration;

use crate::common::clients::Lifecycle;
use crate::common::{TestClient, spawn_http_example};
use serde_json::json;

/// A state file of its own, removed (with its lock and journal) when dropped.
struct StateFile(PathBuf);

impl StateFile {
    fn new(name: &str) -> Self {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
        Self(std::env::temp_dir().join(format!("toolgate-{name}-{}-{nanos}.db", std::process::id())))
    }

    fn store_arg(&self) -> String {
        format!("sqlite:{}", self.0.display())
    }
}

impl Drop for StateFile {
    fn drop(&mut self) {
        for suffix in ["", "-lock", "-wal", "-shm"] {
            let mut file = self.0.as_os_str().to_owned();
            file.push(suffix);
            let _ = std::fs::remove_file(file);
        }
    }
}

fn inv(id: &str) -> serde_json::Value {
    json!({ "domain": "invoice", "id": id })
}

#[tokio::test]
async fn a_discharged_invoice_stays_discharged_across_a_restart() {
    let file = StateFile::new("restart");
    let store = file.store_arg();
    let (mut server, url) = spawn_http_example("invoice", &["--store", &store], &[]).await;
    let client = TestClient::http_as(&url, Lifecycle::Sessionless, None).await;
    client.ok("invoice_submit", inv("INV-1")).await;
    client.ok("invoice_approve", inv("INV-1")).await;
    assert_eq!(client.ok("invoice_discharge", inv("INV-1")).await["state"], "discharged");
    drop(client);
    server.kill().await.unwrap();

    let (_server, url) = spawn_http_example("invoice", &["--store", &store], &[]).await;
    let session = TestClient::http_as(&url, Lifecycle::Session, None).await;
    assert_eq!(session.ok("invoice_view", inv("INV-1")).await["state"], "discharged");
    let again = session.refused("invoice_discharge", inv("INV-1")).await;
    assert_eq!((again["code"].as_str(), again["current_state"].as_str()), (Some("FORBIDDEN"), Some("discharged")));
}

#[tokio::test]
async fn a_second_server_on_the_same_file_is_refused_with_a_clear_message() {
    let file = StateFile::new("exclusive");
    let store = file.store_arg();
    let (_first, _url) = spawn_http_example("invoice", &["--store", &store], &[]).await;
    let second = tokio::process::Command::new(common::example_binary("invoice"))
        .args(["--http", "127.0.0.1:0", "--store", &store])
        .output();
    let output = tokio::time::timeout(common::PATIENCE, second).await.expect("the second server exits").unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("in use by another process"), "{stderr}");

    // The same file by another name: a symbolic link, a hard link.
    let path = std::path::PathBuf::from(store.trim_start_matches("sqlite:"));
    let symlink = path.with_extension("symlink.db");
    std::os::unix::fs::symlink(&path, &symlink).unwrap();
    let hard = path.with_extension("hard.db");
    std::fs::hard_link(&path, &hard).unwrap();
    for other in [&symlink, &hard] {
        let other_store = format!("sqlite:{}", other.display());
        let second = tokio::process::Command::new(common::example_binary("invoice"))
            .args(["--http", "127.0.0.1:0", "--store", &other_store])
            .output();
        let output = tokio::time::timeout(common::PATIENCE, second).await.expect("the second server exits").unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success() && stderr.contains("in use by another process"), "{other_store}: {stderr}");
    }
    let _ = std::fs::remove_file(symlink);
    let _ = std::fs::remove_file(hard);
}

/// SIGKILL in the middle of a stream of transitions: every transition a reply acknowledged
/// is there after the restart, and every invoice is in a state it could have reached.
#[tokio::test]
async fn every_acknowledged_transition_survives_a_kill() {
    let file = StateFile::new("crash");
    let store = file.store_arg();
    let (mut server, url) = spawn_http_example("invoice", &["--store", &store], &[]).await;
    let acknowledged = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let writers: Vec<_> = (0..4)
        .map(|writer| {
            let (url, acknowledged) = (url.clone(), acknowledged.clone());
            tokio::spawn(async move {
                let client = TestClient::http_as(&url, Lifecycle::Sessionless, None).await;
                for n in 0.. {
                    let id = format!("INV-{}", 1 + writer * 100_000 + n);
                    match client.try_call("invoice_submit", inv(&id)).await {
                        Ok(result) if result.is_error != Some(true) => acknowledged.lock().unwrap().push(id),
                        _ => return,
                    }
                }
            })
        })
        .collect();
    // Killed mid-stream: once a few transitions are acknowledged (a loaded machine is slow).
    for _ in 0..200 {
        if acknowledged.lock().unwrap().len() > 10 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    server.kill().await.unwrap();
    for writer in writers {
        let _ = writer.await;
    }
    let acknowledged = acknowledged.lock().unwrap().clone();
    assert!(acknowledged.len() > 10, "the stream ran: {} transitions", acknowledged.len());

    let (_server, url) = spawn_http_example("invoice", &["--store", &store], &[]).await;
    let client = TestClient::http_as(&url, Lifecycle::Sessionless, None).await;
    for id in &acknowledged {
        assert_eq!(client.ok("invoice_view", inv(id)).await["state"], "review", "{id} was acknowledged");
    }
}

/// A declared limit's spent calls are in the file too: a restart does not hand a client
/// a fresh allowance (`bus_search` allows 30 a minute per client).
#[tokio::test]
async fn a_rate_limit_stays_spent_across_a_restart() {
    let file = StateFile::new("rate-limit");
    let store = file.store_arg();
    let search = |flow: &str| {
        json!({
            "domain": "bus", "origin": "Madrid", "destination": "Valencia",
            "departure": "2026-12-04T08:00:00+01:00", "passengers": 2, "flow": flow,
        })
    };
    let switch = json!({ "domain": "bus", "reason": "the user wants a bus" });
    // A quote is its searcher's: searching takes a principal.
    const TOKEN: &str = "traveller-token-0123456789";
    let args = ["--stateless", "--store", &store, "--token", &format!("traveller={TOKEN}")];
    let (mut server, url) = spawn_http_example("travel", &args, &[]).await;
    let client = TestClient::http_as(&url, Lifecycle::Sessionless, Some(TOKEN)).await;
    let mut flow = client.ok("switch_domain", switch.clone()).await["flow"].as_str().unwrap().to_string();
    for _ in 0..30 {
        flow = client.ok("bus_search", search(&flow)).await["flow"].as_str().unwrap().to_string();
    }
    drop(client);
    server.kill().await.unwrap();

    let (_server, url) = spawn_http_example("travel", &args, &[]).await;
    let client = TestClient::http_as(&url, Lifecycle::Sessionless, Some(TOKEN)).await;
    let flow = client.ok("switch_domain", switch).await["flow"].as_str().unwrap().to_string();
    let refused = client.refused("bus_search", search(&flow)).await;
    assert_eq!(refused["code"], "RATE_LIMITED", "{refused}");
    assert!(refused["retry_after_ms"].as_u64().is_some_and(|ms| ms > 0 && ms <= 60_000), "{refused}");
}
