//! Servers for the tests to talk to — example binaries spawned with `--http`, a toolgate
//! server or any axum router served in this process — and commands run with a bound on
//! their time.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use super::PATIENCE;

/// The path of a built example binary. `cargo test --workspace` builds the examples
/// first; `cargo test -p toolgate --test NAME` does not, so run `cargo build --workspace
/// --examples` before it or the test talks to a stale binary.
pub fn example_binary(name: &str) -> PathBuf {
    let path = target_dir().join("examples").join(name);
    assert!(path.exists(), "{} is not built; run the tests with `cargo test --workspace`", path.display());
    path
}

/// `--store memory` unless `args` name a store: examples run in parallel and each would
/// otherwise open (and lock) `./<name>.db`; a test of durable state names its own file.
pub fn memory_unless_told(args: &[&str]) -> &'static [&'static str] {
    if args.contains(&"--store") { &[] } else { &["--store", "memory"] }
}

/// Spawns the example `name` with `--http 127.0.0.1:0`, then `extra_args`, with the `env`
/// variables set, and waits until it serves. Returns the child (killed when dropped) and its
/// endpoint, `http://127.0.0.1:PORT/mcp`.
pub async fn spawn_http_example(name: &str, extra_args: &[&str], env: &[(&str, &str)]) -> (Child, String) {
    let mut command = Command::new(example_binary(name));
    command.args(["--http", "127.0.0.1:0"]).args(memory_unless_told(extra_args)).args(extra_args);
    serving(command.envs(env.iter().copied())).await
}

/// Spawns `command`, a server that prints where it serves Streamable HTTP, and waits until
/// it serves (its stdout discarded, its stderr drained so it never blocks on a full pipe).
/// Returns the child (killed when dropped) and its endpoint, `http://127.0.0.1:PORT/mcp`.
pub async fn serving(command: &mut Command) -> (Child, String) {
    let mut child =
        command.stderr(Stdio::piped()).stdout(Stdio::null()).kill_on_drop(true).spawn().expect("spawn the server");
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let url = tokio::time::timeout(PATIENCE, async {
        while let Some(line) = lines.next_line().await.expect("read stderr") {
            // `… at http://ADDR/mcp`, perhaps followed by ` (sessionless)`.
            if let Some(url) =
                line.split("serving Streamable HTTP at ").nth(1).and_then(|r| r.split_whitespace().next())
            {
                return url.to_string();
            }
        }
        panic!("the server exited without serving");
    })
    .await
    .expect("the server did not start serving");
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (child, url)
}

/// The directory holding `deps/` and `examples/` (e.g. `target/debug`), derived from the
/// test binary's path (`target/debug/deps/NAME-HASH`).
pub fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    exe.parent().and_then(std::path::Path::parent).expect("target dir").to_path_buf()
}

/// Runs `command` to completion within `patience`; a failure (not started, timed out,
/// non-zero exit) is described with the command's output.
pub async fn run_command(
    command: &mut Command,
    patience: Duration,
    what: &str,
) -> Result<std::process::Output, String> {
    command.stdin(Stdio::null()).kill_on_drop(true);
    let output = tokio::time::timeout(patience, command.output())
        .await
        .map_err(|_| format!("{what}: still running after {patience:?}"))?
        .map_err(|error| format!("{what}: could not start: {error}"))?;
    if !output.status.success() {
        return Err(format!(
            "{what}: {}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    Ok(output)
}

/// Serves `server` over Streamable HTTP on a free loopback port, in this process.
pub async fn serve_in_process(server: toolgate::Server) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move { server.serve_http(listener).await.expect("serve") });
    url
}

/// Serves `service` at `/mcp` on a free loopback port with TCP_NODELAY (as
/// [`toolgate::Server::serve_http`] does), in this process; for servers that are not
/// toolgate's, such as the benchmarks' plain rmcp baseline.
pub async fn serve_router(service: axum::Router) -> String {
    use axum::serve::ListenerExt;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    let router = axum::Router::new().nest_service("/mcp", service);
    tokio::spawn(async move { axum::serve(listener, router).await.expect("serve") });
    url
}

/// Runs an SDK client script (`command`) like [`run_command`], and checks that it printed
/// nothing but its own progress: `ok: …` lines and a final `PASS` on stdout, nothing on
/// stderr. Any other line — a warning the SDK logged or printed, a runtime's deprecation
/// notice — is a failure, described with both streams.
pub async fn run_quiet_client(
    command: &mut Command,
    patience: Duration,
    what: &str,
) -> Result<std::process::Output, String> {
    let output = run_command(command, patience, what).await?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let stray: Vec<&str> =
        stdout.lines().filter(|line| !(line.starts_with("ok: ") || *line == "PASS")).chain(stderr.lines()).collect();
    if !stray.is_empty() || stdout.lines().last() != Some("PASS") {
        return Err(format!(
            "{what}: the client printed more than its progress (a warning?): {stray:?}\n--- stdout ---\n{stdout}\n--- stderr ---\n{stderr}"
        ));
    }
    Ok(output)
}

/// The example `name` serving stdio with the memory store, with its stdin and its stdout's
/// lines (its log discarded); killed when the child is dropped.
pub fn spawn_stdio_example(
    name: &str,
) -> (Child, tokio::process::ChildStdin, tokio::io::Lines<BufReader<tokio::process::ChildStdout>>) {
    let mut child = Command::new(example_binary(name))
        .args(["--store", "memory"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn example");
    let stdin = child.stdin.take().expect("stdin");
    let lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    (child, stdin, lines)
}
