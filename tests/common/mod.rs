//! What the integration tests and the benchmarks share, in one place:
//!
//! - [`servers`]: servers to talk to — an example binary spawned with `--http`, a
//!   toolgate [`toolgate::Server`] or any axum router served in this process — and
//!   running commands (the SDK clients' tools) with a bound on their time.
//! - [`clients`]: rmcp's client, as [`TestClient`] (records notifications, asserts on
//!   results) or bare (`connect_http`, `connect_in_memory`, for the benchmarks).
//! - [`confirm`]: one-time codes from a development outbox, for confirmed tools.
//! - [`raw`]: raw HTTP requests, for what rmcp's client does not let a test control
//!   (headers, statuses, a session id, sessionless requests one by one).
//! - [`sdk`]: what the official SDK clients' flows share (revisions, transports, the
//!   `stdio:` argument that launches an example).
//! - [`stores`]: a memory store that tells a test of each commit, and may hold it.
//!
//! The benchmarks include this module with `#[path = "../tests/common/mod.rs"]`.

#![allow(dead_code)] // each test binary uses a different part
#![allow(unreachable_pub)] // shared by test binaries, which are crates of their own

pub mod clients;
pub mod confirm;
pub mod raw;
pub mod sdk;
pub mod servers;
pub mod stores;

use std::time::Duration;

// What most tests use, at the top; each test binary uses a different part.
#[allow(unused_imports)]
pub use clients::TestClient;
#[allow(unused_imports)]
pub use servers::{example_binary, run_command, serve_in_process, spawn_http_example, spawn_stdio_example, target_dir};

/// Long enough for a loaded CI machine; only ever a bound on a failure.
pub const PATIENCE: Duration = Duration::from_secs(20);

/// The transitions time fired (principal `timer`), as the audit log at `path` holds them.
#[allow(dead_code)]
pub fn timer_lines(path: impl AsRef<std::path::Path>) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .filter(|record| record["principal"] == "timer")
        .collect()
}

/// How many lines of the log at `path` name `needle` (a quote, a payment): read once one
/// does (waited for up to 5 s) and `then` more has passed, so a repeat arriving late is
/// counted too. For the logs the examples' effects write (`--holds-log`, `--notices-log`).
#[allow(dead_code)]
pub async fn lines_naming(path: impl AsRef<std::path::Path>, needle: &str, then: Duration) -> usize {
    let count = || {
        let text = std::fs::read_to_string(path.as_ref()).unwrap_or_default();
        text.lines().filter(|line| line.contains(needle)).count()
    };
    for _ in 0..50 {
        if count() > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(then).await;
    count()
}

/// A fresh directory under the system's temporary one, `toolgate-{name}-{pid}-{nanos}`,
/// made: a test's own, never another's.
#[allow(dead_code)]
pub fn scratch_dir(name: &str) -> std::path::PathBuf {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    let dir = std::env::temp_dir().join(format!("toolgate-{name}-{}-{nanos}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
