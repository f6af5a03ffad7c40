//! Audit sinks: every committed transition, handed to whoever keeps the record — a
//! JSON-lines file ([`JsonLinesSink`], `--audit-log PATH`), or a sink of your own.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::Serialize;

use crate::store::HistoryEntry;

/// One committed transition, as an audit sink receives it: which machine, which instance
/// (its key) or conversation (a digest of its flow, never a handle), and the transition
/// itself — who, from, to, event, tool, time, call id, note.
#[derive(Debug, Clone, Serialize)]
pub struct AuditRecord {
    /// The machine's id.
    pub machine: String,
    /// The instance's key, for a keyed machine.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instance: Option<String>,
    /// A digest naming the conversation, for a machine per conversation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flow: Option<String>,
    /// The transition.
    #[serde(flatten)]
    pub transition: HistoryEntry,
}

/// Receives every committed transition, after its commit. It runs on the call's task:
/// keep it quick (hand the record to a channel for anything slow). A sink cannot fail the
/// call; it reports its own failures.
pub trait AuditSink: Send + Sync + 'static {
    /// Records one transition.
    fn record(&self, record: &AuditRecord);
}

/// Appends each record as one JSON line to a file.
#[derive(Debug)]
pub struct JsonLinesSink {
    path: PathBuf,
    file: Mutex<std::fs::File>,
}

impl JsonLinesSink {
    /// Opens (or creates) `path` for appending.
    pub fn open(path: impl AsRef<Path>) -> std::io::Result<Self> {
        let path = path.as_ref().to_path_buf();
        let file = std::fs::OpenOptions::new().create(true).append(true).open(&path)?;
        Ok(Self { path, file: Mutex::new(file) })
    }
}

impl AuditSink for JsonLinesSink {
    fn record(&self, record: &AuditRecord) {
        let Ok(mut line) = serde_json::to_vec(record) else { return };
        line.push(b'\n');
        let mut file = self.file.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Err(error) = file.write_all(&line).and_then(|()| file.flush()) {
            tracing::error!(path = %self.path.display(), %error, "cannot append to the audit log");
        }
    }
}
