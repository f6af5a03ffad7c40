//! What the SDK client tests (`python_sdk.rs`, `typescript_sdk.rs`) share: the protocol
//! revisions and transports a flow runs over, scratch files, and the `stdio:` argument
//! that tells a client script how to launch an example.

use std::path::{Path, PathBuf};

use super::{example_binary, target_dir};

/// The protocol revisions the flows run at.
pub const LEGACY: &str = "2025-11-25";
pub const MODERN: &str = "2026-07-28";

/// How a flow reaches its example.
#[derive(Clone, Copy, Debug)]
pub enum Transport {
    /// The SDK launches the example and talks over its stdin/stdout.
    Stdio,
    /// Streamable HTTP, with sessions (which also serve sessionless 2026-07-28 requests).
    Http,
    /// Streamable HTTP, `--stateless`.
    Stateless,
}

impl Transport {
    /// The example's flags for this transport's HTTP mode.
    pub fn mode(self) -> &'static [&'static str] {
        match self {
            Transport::Stateless => &["--stateless"],
            Transport::Stdio | Transport::Http => &[],
        }
    }
}

/// A file of the test binary `owner`'s own under the target directory, removed first.
pub fn scratch(owner: &str, tag: &str, suffix: &str) -> PathBuf {
    let path = target_dir().join(format!("{owner}-{tag}-{}.{suffix}", std::process::id()));
    let _ = std::fs::remove_file(&path);
    path
}

/// The scripts' SERVER argument for the example `name` launched over stdio with `args`
/// (and `--store memory`), its stderr going to `log`.
pub fn stdio_server(name: &str, args: &[&str], log: &Path) -> String {
    let mut argv = vec!["--store", "memory"];
    argv.extend_from_slice(args);
    let spec = serde_json::json!({ "command": example_binary(name), "args": argv, "stderr": log });
    format!("stdio:{spec}")
}
