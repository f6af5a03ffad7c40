//! The examples through the official MCP Python SDK's default high-level client
//! (`mcp.client.Client(url)`, pinned in `tests/python/requirements.txt`), over Streamable
//! HTTP in both the stateful and the `--stateless` mode.
//!
//! The flows themselves are the scripts in `tests/python/`; this file provides what they
//! need: a virtualenv with the pinned SDK at `<target dir>/python-sdk-venv` (created on
//! first use, which needs `python3` with `venv` and pip, and network access to PyPI), and
//! the example servers they talk to.

mod common;

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use common::{run_command as run, target_dir};
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

/// Runs `tests/python/<script>` with the venv's Python; panics with its output on failure.
async fn run_script(script: &str, args: &[&str]) {
    let python = venv_python().await;
    let mut command = Command::new(python);
    command.arg(scripts_dir().join(script)).args(args).env("PYTHONDONTWRITEBYTECODE", "1");
    if let Err(failure) = run(&mut command, SCRIPT_PATIENCE, script).await {
        panic!("{failure}");
    }
}

/// The invoice workflow, with state kept per invoice id and a `tools/list` that never changes.
async fn invoice(mode: &[&str]) {
    let server = serve("invoice", HANDLE_KEY, mode).await;
    run_script("invoice_flow.py", &[server.url.as_str()]).await;
}

/// The travel intent lock with signed flow handles: refused drift, refused forged, foreign
/// and expired handles, and a `tools/list` that never changes.
async fn travel(mode: &[&str]) {
    let outbox = target_dir().join(format!("python-sdk-travel-otp-{}-{}.jsonl", std::process::id(), mode.len()));
    let _ = std::fs::remove_file(&outbox);
    let token = format!("traveller={TRAVELLER_TOKEN}");
    let booking: Vec<&str> =
        mode.iter().copied().chain(["--token", token.as_str(), "--otp-outbox", outbox.to_str().unwrap()]).collect();
    let short_ttl: Vec<&str> = mode.iter().copied().chain(["--handle-ttl", "100ms"]).collect();
    let (server, other_key, short_lived) = tokio::join!(
        serve("travel", HANDLE_KEY, &booking),
        serve("travel", OTHER_HANDLE_KEY, mode),
        serve("travel", HANDLE_KEY, &short_ttl),
    );
    let args = [
        server.url.as_str(),
        TRAVELLER_TOKEN,
        outbox.to_str().unwrap(),
        other_key.url.as_str(),
        short_lived.url.as_str(),
    ];
    run_script("travel_flow.py", &args).await;
    let _ = std::fs::remove_file(&outbox);
}

/// The bearer token of the travel example's traveller.
const TRAVELLER_TOKEN: &str = "python-sdk-traveller-token-0001";

/// The bearer token of the payments example's clerk.
const CLERK_TOKEN: &str = "python-sdk-clerk-token-0001";

async fn payments(mode: &[&str]) {
    let outbox = target_dir().join(format!("python-sdk-otp-{}-{}.jsonl", std::process::id(), mode.len()));
    let _ = std::fs::remove_file(&outbox);
    let token = format!("clerk={CLERK_TOKEN}");
    let args: Vec<&str> =
        mode.iter().copied().chain(["--token", token.as_str(), "--otp-outbox", outbox.to_str().unwrap()]).collect();
    let server = serve("payments", HANDLE_KEY, &args).await;
    run_script("payments_flow.py", &[server.url.as_str(), CLERK_TOKEN, outbox.to_str().unwrap()]).await;
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
async fn python_sdk_invoice_stateful() {
    invoice(&[]).await;
}

#[tokio::test]
async fn python_sdk_invoice_stateless() {
    invoice(&["--stateless"]).await;
}

#[tokio::test]
async fn python_sdk_travel_stateful() {
    travel(&[]).await;
}

#[tokio::test]
async fn python_sdk_travel_stateless() {
    travel(&["--stateless"]).await;
}
