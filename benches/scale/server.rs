//! The server under load: an example binary (`target/release/examples/invoice` unless
//! `TG_EXAMPLES` names another directory) served sessionless on a port of its own, on the
//! store it is given, and stopped as an orchestrator stops it (SIGTERM).

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::process::{Child, Command};

/// A running example.
#[derive(Debug)]
pub(crate) struct Server {
    child: Child,
    /// `http://127.0.0.1:<port>/mcp`.
    pub(crate) url: String,
    port: u16,
}

/// Where the example binaries are: `TG_EXAMPLES`, else `target/release/examples`.
pub(crate) fn examples_dir() -> PathBuf {
    std::env::var_os("TG_EXAMPLES")
        .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/release/examples"), PathBuf::from)
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

impl Server {
    /// Starts `example` on `store` with `args`, and waits until it is ready (`/readyz`).
    pub(crate) async fn start(example: &str, store: &str, args: &[&str]) -> Self {
        Self::start_with(example, store, args, &[]).await
    }

    /// Starts `example` on `store` with `args` and the environment `env`, and waits until
    /// it is ready.
    pub(crate) async fn start_with(example: &str, store: &str, args: &[&str], env: &[(&str, String)]) -> Self {
        let binary = examples_dir().join(example);
        assert!(
            binary.exists(),
            "{} is missing: `cargo build --release -p toolgate-examples --example {example}` (or set TG_EXAMPLES)",
            binary.display()
        );
        let port = free_port();
        let child = Command::new(&binary)
            .args(["--http", &format!("127.0.0.1:{port}"), "--store", store])
            .args(args)
            .env("TOOLGATE_HANDLE_KEY", "scale-bench-handle-key-0000000000000001")
            .env("RUST_LOG", "warn")
            .envs(env.iter().map(|(name, value)| (*name, value.as_str())))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("the example starts");
        let mut server = Server { child, url: format!("http://127.0.0.1:{port}/mcp"), port };
        server.ready().await;
        server
    }

    async fn ready(&mut self) {
        let http = reqwest::Client::new();
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(120) {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("the server at {} exited before it was ready: {status}", self.url);
            }
            let probe = http.get(format!("http://127.0.0.1:{}/readyz", self.port)).send().await;
            if probe.is_ok_and(|r| r.status().is_success()) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("the server at {} was not ready within 120 s", self.url);
    }

    /// Its resident memory, in bytes.
    pub(crate) fn resident_bytes(&self) -> u64 {
        let pid = self.child.id().expect("running");
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        status
            .lines()
            .find_map(|line| line.strip_prefix("VmRSS:"))
            .and_then(|kb| kb.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map_or(0, |kb| kb * 1024)
    }

    /// Sends SIGTERM and waits for the exit; the time it took.
    pub(crate) async fn stop(mut self) -> Duration {
        let started = Instant::now();
        if let Some(pid) = self.child.id() {
            let _ = std::process::Command::new("kill").args(["-TERM", &pid.to_string()]).status();
        }
        let _ = tokio::time::timeout(Duration::from_secs(60), self.child.wait()).await;
        started.elapsed()
    }
}
