//! Listening clients through the load balancer: each holds a `subscriptions/listen` stream
//! (MCP 2026-07-28) and opens another as soon as one ends, as a client is told to when its
//! replica drains. Counted: streams opened and acknowledged, streams the server ended, streams
//! cut by an error, and attempts to open one that were refused or not answered.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;

use crate::common::raw::SessionlessClient;
use crate::faults::client::chain;

/// What the listening clients saw.
#[derive(Debug, Default)]
pub(super) struct Streams {
    pub(super) opened: usize,
    pub(super) acknowledged: usize,
    /// Ended by the server, cleanly (the end of the response).
    pub(super) ended: usize,
    /// Ended by an error reading the stream: why, each.
    pub(super) cut: Vec<String>,
    /// Attempts to open one that were refused or not answered: why, each.
    pub(super) not_opened: Vec<String>,
    /// Still open when the load stopped.
    pub(super) open_at_end: usize,
}

/// Holds a stream at `url` as `token`'s principal until `stop`.
pub(super) async fn listen(url: String, token: String, stop: Arc<AtomicBool>, streams: Arc<Mutex<Streams>>) {
    let http = reqwest::Client::new();
    let mut params = json!({ "notifications": { "toolsListChanged": true } });
    params["_meta"] = SessionlessClient::request_meta();
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen", "params": params }).to_string();
    let tally = |change: &dyn Fn(&mut Streams)| change(&mut streams.lock().unwrap());
    while !stop.load(Ordering::Relaxed) {
        let request = (http.post(&url))
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream")
            .header("MCP-Protocol-Version", "2026-07-28")
            .header("Mcp-Method", "subscriptions/listen")
            .bearer_auth(&token)
            .body(body.clone());
        let mut response = match tokio::time::timeout(Duration::from_secs(10), request.send()).await {
            Ok(Ok(response)) if response.status() == 200 => response,
            Ok(Ok(response)) => {
                let why = format!("HTTP {}", response.status());
                tally(&|s| s.not_opened.push(why.clone()));
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
            Ok(Err(error)) => {
                tally(&|s| s.not_opened.push(chain(&error)));
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
            Err(_) => {
                tally(&|s| s.not_opened.push("no answer within 10 s".into()));
                continue;
            }
        };
        tally(&|s| s.opened += 1);
        let mut acknowledged = false;
        loop {
            if stop.load(Ordering::Relaxed) {
                tally(&|s| s.open_at_end += 1);
                return;
            }
            // Looks at `stop` every 200 ms; a chunk not yet read stays in the response.
            match tokio::time::timeout(Duration::from_millis(200), response.chunk()).await {
                Err(_) => {}
                Ok(Ok(Some(chunk))) => {
                    let text = String::from_utf8_lossy(&chunk);
                    if !acknowledged && text.contains("notifications/subscriptions/acknowledged") {
                        acknowledged = true;
                        tally(&|s| s.acknowledged += 1);
                    }
                }
                Ok(Ok(None)) => {
                    tally(&|s| s.ended += 1);
                    break;
                }
                Ok(Err(error)) => {
                    let why = chain(&error);
                    tally(&|s| s.cut.push(why.clone()));
                    break;
                }
            }
        }
    }
}
