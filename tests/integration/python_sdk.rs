//! The examples through the official MCP Python SDK's default high-level client
//! (`mcp.client.Client`, pinned in `tests/python/requirements.txt`), at both protocol
//! revisions, over stdio and Streamable HTTP.
//!
//! The flows themselves are the scripts in `tests/python/`, one per example; this file
//! provides what they need: a virtualenv with the pinned SDK at
//! `<target dir>/python-sdk-venv` (created on first use, which needs `python3` with `venv`
//! and pip, and network access to PyPI), and the example servers they talk to.
//!
//! # The matrix
//!
//! The invoice and travel flows each run over stdio (the SDK launches the example), over
//! HTTP against a stateful server, and at 2026-07-28 also against a `--stateless` one:
//!
//! | revision | stdio | HTTP | HTTP `--stateless` |
//! |---|---|---|---|
//! | 2025-11-25 | ✓ | ✓ | — |
//! | 2026-07-28 | ✓ | ✓ | ✓ |
//!
//! How the SDK (mcp 2.3.0) picks the revision: `Client(..., mode="legacy")` runs the
//! `initialize` handshake offering 2025-11-25; the default `mode="auto"` probes
//! `server/discover` at 2026-07-28 and adopts it (falling back to `initialize` on a server
//! that does not answer it); the same over stdio (`Client(stdio_client(...))`) and HTTP.
//! Every run checks the revision the client settled on.
//!
//! Every run covers `tools/list`; a gated refusal returned as a tool result with `isError`
//! and a structured code (`FORBIDDEN` for paying an invoice that is not approved;
//! `DOMAIN_NOT_SELECTED` and `DOMAIN_MISMATCH` in travel); transitions checked by the
//! result's `state`; and change notifications:
//!
//! - where the conversation is the connection (a 2025-11-25 session; stdio at either
//!   revision), the listing follows it, and the client's message handler must hear
//!   `notifications/tools/list_changed` after each transition that changes it (the flow
//!   then lists again, as a client does before calling what the change brought);
//! - at 2026-07-28 the client opens `subscriptions/listen` (`Client.listen`) and checks the
//!   acknowledged filter; on the invoice it listens to the invoice's receipt and must
//!   receive `ResourceUpdated` for it on the subscription when the invoice moves. (Over HTTP
//!   at 2026-07-28 every client gets the same listing, which never changes, so there is no
//!   `tools/list_changed` for a flow to hear; the flows check that the listing stayed.)
//!
//! No cell is left out: the SDK speaks both revisions over both transports.
//!
//! # Tasks
//!
//! `tasks_flow.py` runs the conformance example's `slow_compute` as a task (the 2026-07-28
//! Tasks extension, `io.modelcontextprotocol/tasks`, SEP-2663) over HTTP: to `completed`,
//! with its result, and cancelled while it works. mcp 2.3.0 has no tasks client of its own;
//! its public extension API carries one: a `ClientExtension` passed as
//! `Client(url, extensions=[...])` declares the extension in every request's `_meta`, its
//! `ResultClaim` for `resultType: "task"` lets `tools/call` answer with a task (resolved by
//! `client.call_tool`, or returned by `client.session.call_tool(..., allow_claimed=True)`),
//! and `tasks/get` and `tasks/cancel` go through `client.session.send_request` as
//! `mcp_types.Request` subclasses whose `name_param = "taskId"` puts the `Mcp-Name` header
//! on them.
//!
//! A run passes only if the client printed nothing but the script's `ok:` lines and
//! `PASS`: a warning the SDK logs (e.g. "Session termination failed", or "Tool X not listed
//! by server" when a result cannot be validated) fails it ([`common::servers::run_quiet_client`]).
//! A stdio server's own log goes to a file, shown when the run fails.
use crate::common;

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use crate::common::sdk::{self, LEGACY, MODERN, Transport, stdio_server};
use crate::common::servers::run_quiet_client;
use crate::common::{run_command as run, target_dir};
use tokio::process::{Child, Command};
use tokio::sync::OnceCell;

/// Creating the venv downloads the SDK and its dependencies from PyPI.
const VENV_PATIENCE: Duration = Duration::from_secs(180);
/// One script run (the travel flow waits 0.2 s to outlive a handle's 100 ms TTL).
const SCRIPT_PATIENCE: Duration = Duration::from_secs(60);

/// The handle-signing key of the servers under test.
const HANDLE_KEY: &str = "toolgate-python-sdk-test-handle-key-0001";
/// Another key: handles signed under [`HANDLE_KEY`] must not open under it.
const OTHER_HANDLE_KEY: &str = "toolgate-python-sdk-test-handle-key-0002";

/// The venv's Python, prepared once per test binary; an error is every test's failure.
static VENV_PYTHON: OnceCell<Result<PathBuf, String>> = OnceCell::const_new();

/// `tests/python`: the scripts and the SDK pin.
fn scripts_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests").join("python")
}

/// The interpreter inside a venv.
fn python_in(venv: &Path) -> PathBuf {
    if cfg!(windows) { venv.join("Scripts").join("python.exe") } else { venv.join("bin").join("python") }
}

/// The `mcp` version `requirements.txt` pins (`mcp==X`).
fn pinned_mcp_version() -> String {
    let requirements = std::fs::read_to_string(scripts_dir().join("requirements.txt")).expect("read requirements.txt");
    requirements
        .lines()
        .find_map(|line| line.trim().strip_prefix("mcp=="))
        .map(|version| version.trim().to_string())
        .expect("requirements.txt pins `mcp==VERSION`")
}

/// The `mcp` version installed for `python`, if it runs and has one.
async fn installed_mcp_version(python: &Path) -> Option<String> {
    if !python.exists() {
        return None;
    }
    let mut query = Command::new(python);
    query.args(["-c", "import importlib.metadata as m; print(m.version('mcp'))"]).stderr(Stdio::null());
    let output = run(&mut query, VENV_PATIENCE, "query the installed mcp version").await.ok()?;
    Some(String::from_utf8_lossy(&output.stdout).trim().to_string())
}

/// Takes an exclusive lock on `<target dir>/python-sdk-venv.lock`, so test processes
/// sharing a target directory never build the venv at once. Released when dropped.
async fn lock_venv(target: &Path) -> Result<File, String> {
    let path = target.join("python-sdk-venv.lock");
    tokio::task::spawn_blocking(move || {
        let file = OpenOptions::new().create(true).truncate(false).write(true).open(&path)?;
        file.lock()?;
        Ok::<_, std::io::Error>(file)
    })
    .await
    .expect("lock task")
    .map_err(|error| format!("lock the venv: {error}"))
}

/// Makes sure `<target dir>/python-sdk-venv` has the pinned `mcp` and returns its Python.
/// Does nothing when it already has; creates the venv only when it has no interpreter.
async fn prepare_venv() -> Result<PathBuf, String> {
    let target = target_dir();
    let venv = target.join("python-sdk-venv");
    let python = python_in(&venv);
    let pinned = pinned_mcp_version();
    let _lock = lock_venv(&target).await?;

    if installed_mcp_version(&python).await.as_deref() == Some(pinned.as_str()) {
        return Ok(python);
    }
    if !python.exists() {
        let mut create = Command::new(if cfg!(windows) { "python" } else { "python3" });
        create.arg("-m").arg("venv").arg("--clear").arg(&venv);
        run(&mut create, VENV_PATIENCE, "create the venv with `python3 -m venv`").await?;
    }
    let mut install = Command::new(&python);
    install
        .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-input", "-r"])
        .arg(scripts_dir().join("requirements.txt"));
    run(&mut install, VENV_PATIENCE, "pip install -r tests/python/requirements.txt").await?;

    match installed_mcp_version(&python).await {
        Some(installed) if installed == pinned => Ok(python),
        installed => Err(format!("{} has mcp {installed:?} after pip install, not {pinned}", venv.display())),
    }
}

/// The venv's Python, preparing the venv on first use.
async fn venv_python() -> PathBuf {
    VENV_PYTHON.get_or_init(prepare_venv).await.clone().unwrap_or_else(|error| panic!("{error}"))
}

/// An example serving Streamable HTTP on a free loopback port (killed when dropped),
/// signing handles with `key`.
struct Server {
    url: String,
    _child: Child,
}

async fn serve(name: &str, key: &str, extra: &[&str]) -> Server {
    let (child, url) = common::spawn_http_example(name, extra, &[("TOOLGATE_HANDLE_KEY", key)]).await;
    Server { url, _child: child }
}

/// A file of this test binary's own under the target directory, removed first.
fn scratch(tag: &str, suffix: &str) -> PathBuf {
    sdk::scratch("python-sdk", tag, suffix)
}

/// Runs `tests/python/<script>` with the venv's Python; panics with its output on failure,
/// on any line it printed beyond its progress, and with the stdio server's `log` if any.
async fn run_script(script: &str, args: &[&str], log: Option<&Path>) {
    let python = venv_python().await;
    let mut command = Command::new(python);
    command.arg(scripts_dir().join(script)).args(args).env("PYTHONDONTWRITEBYTECODE", "1");
    if let Err(failure) = run_quiet_client(&mut command, SCRIPT_PATIENCE, script).await {
        let log = log.map(|log| std::fs::read_to_string(log).unwrap_or_default()).unwrap_or_default();
        panic!("{failure}\n--- the stdio server's log ---\n{log}");
    }
    if let Some(log) = log {
        let _ = std::fs::remove_file(log);
    }
}

/// The invoice workflow, with state kept per invoice id.
async fn invoice(protocol: &str, transport: Transport) {
    if let Transport::Stdio = transport {
        let log = scratch(&format!("invoice-{protocol}"), "log");
        let server = stdio_server("invoice", &[], &log);
        return run_script("invoice_flow.py", &[protocol, &server], Some(&log)).await;
    }
    // Over HTTP the clerk presents a token: the clerk may amend, as stdio's person may.
    let clerk = format!("clerk={CLERK_TOKEN}");
    let args: Vec<&str> = transport.mode().iter().copied().chain(["--token", clerk.as_str()]).collect();
    let server = serve("invoice", HANDLE_KEY, &args).await;
    run_script("invoice_flow.py", &[protocol, server.url.as_str(), CLERK_TOKEN], None).await;
}

/// The travel intent lock; at 2026-07-28 over HTTP with signed flow handles, also refused
/// forged, foreign and expired ones.
async fn travel(protocol: &str, transport: Transport) {
    let tag = format!("travel-{protocol}-{transport:?}");
    let outbox = scratch(&tag, "jsonl");
    let outbox_arg = outbox.to_str().unwrap();
    if let Transport::Stdio = transport {
        // The stdio connection's principal is the example's traveller.
        let log = scratch(&tag, "log");
        let server = stdio_server("travel", &["--otp-outbox", outbox_arg], &log);
        run_script("travel_flow.py", &[protocol, &server, "-", outbox_arg], Some(&log)).await;
        let _ = std::fs::remove_file(&outbox);
        return;
    }
    let mode = transport.mode();
    let token = format!("traveller={TRAVELLER_TOKEN}");
    let booking: Vec<&str> =
        mode.iter().copied().chain(["--token", token.as_str(), "--otp-outbox", outbox_arg]).collect();
    let server = serve("travel", HANDLE_KEY, &booking).await;
    let mut args = vec![protocol, server.url.as_str(), TRAVELLER_TOKEN, outbox_arg];
    // Handles (and their checks against other servers) exist where HTTP has no session.
    // The traveller is known to them too: a quote is its searcher's, so searching takes a
    // principal, and what they must refuse is the handle.
    let as_traveller: Vec<&str> = mode.iter().copied().chain(["--token", token.as_str()]).collect();
    let short_ttl: Vec<&str> = as_traveller.iter().copied().chain(["--handle-ttl", "100ms"]).collect();
    let others = if protocol == MODERN {
        Some(tokio::join!(serve("travel", OTHER_HANDLE_KEY, &as_traveller), serve("travel", HANDLE_KEY, &short_ttl)))
    } else {
        None
    };
    if let Some((other_key, short_lived)) = &others {
        args.extend([other_key.url.as_str(), short_lived.url.as_str()]);
    }
    run_script("travel_flow.py", &args, None).await;
    let _ = std::fs::remove_file(&outbox);
}

/// The bearer token of the travel example's traveller.
const TRAVELLER_TOKEN: &str = "python-sdk-traveller-token-0001";

/// The bearer token of the payments and invoice examples' clerk.
const CLERK_TOKEN: &str = "python-sdk-clerk-token-0001";

async fn payments(mode: &[&str]) {
    let outbox = scratch(&format!("payments-{}", mode.len()), "jsonl");
    let token = format!("clerk={CLERK_TOKEN}");
    let args: Vec<&str> =
        mode.iter().copied().chain(["--token", token.as_str(), "--otp-outbox", outbox.to_str().unwrap()]).collect();
    let server = serve("payments", HANDLE_KEY, &args).await;
    run_script("payments_flow.py", &[server.url.as_str(), CLERK_TOKEN, outbox.to_str().unwrap()], None).await;
    let _ = std::fs::remove_file(&outbox);
}

#[tokio::test]
async fn python_sdk_payments_confirmed_capture_stateful() {
    payments(&[]).await;
}

#[tokio::test]
async fn python_sdk_payments_confirmed_capture_stateless() {
    payments(&["--stateless"]).await;
}

#[tokio::test]
async fn python_sdk_invoice_stdio_2025_11_25() {
    invoice(LEGACY, Transport::Stdio).await;
}

#[tokio::test]
async fn python_sdk_invoice_stdio_2026_07_28() {
    invoice(MODERN, Transport::Stdio).await;
}

#[tokio::test]
async fn python_sdk_invoice_http_2025_11_25() {
    invoice(LEGACY, Transport::Http).await;
}

#[tokio::test]
async fn python_sdk_invoice_http_2026_07_28() {
    invoice(MODERN, Transport::Http).await;
}

#[tokio::test]
async fn python_sdk_invoice_http_2026_07_28_stateless() {
    invoice(MODERN, Transport::Stateless).await;
}

#[tokio::test]
async fn python_sdk_travel_stdio_2025_11_25() {
    travel(LEGACY, Transport::Stdio).await;
}

#[tokio::test]
async fn python_sdk_travel_stdio_2026_07_28() {
    travel(MODERN, Transport::Stdio).await;
}

#[tokio::test]
async fn python_sdk_travel_http_2025_11_25() {
    travel(LEGACY, Transport::Http).await;
}

#[tokio::test]
async fn python_sdk_travel_http_2026_07_28() {
    travel(MODERN, Transport::Http).await;
}

#[tokio::test]
async fn python_sdk_travel_http_2026_07_28_stateless() {
    travel(MODERN, Transport::Stateless).await;
}

/// The desk example (a ticket in one domain, its credit in another), over HTTP at
/// `protocol`: `desk_flow.py`, whose client follows `next` and `next_after_switch` and must
/// never be refused — nor draw a warning from the SDK.
async fn desk(protocol: &str, mode: &[&str]) {
    let server = serve("desk", HANDLE_KEY, mode).await;
    run_script("desk_flow.py", &[protocol, server.url.as_str(), "follow"], None).await;
}

#[tokio::test]
async fn python_sdk_desk_follows_next_across_domains_2025_11_25() {
    desk("2025-11-25", &[]).await;
}

#[tokio::test]
async fn python_sdk_desk_follows_next_across_domains_2026_07_28_stateless() {
    desk("2026-07-28", &["--stateless"]).await;
}

/// The travel example served grouped, over HTTP at `protocol`: `travel_grouped.py`.
async fn travel_grouped(protocol: &str) {
    let tag = format!("travel-grouped-{protocol}");
    let outbox = scratch(&tag, "jsonl");
    let outbox_arg = outbox.to_str().unwrap();
    let token = format!("traveller={TRAVELLER_TOKEN}");
    let args = ["--exposition", "grouped", "--token", token.as_str(), "--otp-outbox", outbox_arg];
    let server = serve("travel", HANDLE_KEY, &args).await;
    run_script("travel_grouped.py", &[protocol, server.url.as_str(), TRAVELLER_TOKEN, outbox_arg], None).await;
    let _ = std::fs::remove_file(&outbox);
}

#[tokio::test]
async fn python_sdk_travel_grouped_http_2025_11_25() {
    travel_grouped(LEGACY).await;
}

#[tokio::test]
async fn python_sdk_travel_grouped_http_2026_07_28() {
    travel_grouped(MODERN).await;
}

/// A task on the conformance example's `slow_compute`, at 2026-07-28 over HTTP:
/// `tasks_flow.py` in `mode` (`complete` or `cancel`).
async fn task(mode: &str) {
    let server = serve("conformance", HANDLE_KEY, &[]).await;
    run_script("tasks_flow.py", &[server.url.as_str(), mode], None).await;
}

#[tokio::test]
async fn python_sdk_task_runs_to_completed() {
    task("complete").await;
}

#[tokio::test]
async fn python_sdk_task_is_cancelled() {
    task("cancel").await;
}
