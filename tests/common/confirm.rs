//! One-time codes in tests: a development outbox per test (`--otp-outbox`), and the two
//! calls a confirmed tool takes.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::TestClient;

/// An outbox file of its own for one server under test, removed when dropped.
pub struct Outbox(PathBuf);

impl Outbox {
    /// A fresh path in the system's temporary directory.
    pub fn new() -> Self {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
        let unique = format!("toolgate-otp-{}-{nanos}-{}.jsonl", std::process::id(), rand_suffix());
        Self(std::env::temp_dir().join(unique))
    }

    /// The path, for `--otp-outbox`.
    pub fn path(&self) -> &str {
        self.0.to_str().expect("a UTF-8 temporary path")
    }

    /// The code the outbox holds for `challenge_id`.
    pub fn code(&self, challenge_id: &str) -> String {
        code_in(&self.0, challenge_id)
    }
}

impl Drop for Outbox {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn rand_suffix() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// The code `outbox` holds for `challenge_id`.
pub fn code_in(outbox: &Path, challenge_id: &str) -> String {
    let text = std::fs::read_to_string(outbox).expect("the outbox");
    let line = text
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).expect("a JSON line"))
        .find(|line| line["challenge_id"] == challenge_id)
        .expect("a code for the challenge");
    line["otp"].as_str().expect("the code").to_string()
}

/// Calls the confirmed `tool`: the first call must ask for a code, the second, with the
/// code from `outbox`, must succeed; returns its `structuredContent`.
pub async fn confirmed(client: &TestClient, tool: &str, arguments: Value, outbox: &Outbox) -> Value {
    let required = client.refused(tool, arguments.clone()).await;
    assert_eq!(required["code"], "CONFIRMATION_REQUIRED", "{tool}: {required}");
    let challenge_id = required["challenge_id"].as_str().expect("a challenge").to_string();
    let mut confirming = arguments;
    confirming["otp"] = outbox.code(&challenge_id).into();
    confirming["challenge_id"] = challenge_id.into();
    client.ok(tool, confirming).await
}
