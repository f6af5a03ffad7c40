//! Idempotent retries: a `transactional` action that declares an idempotency-key argument
//! (`#[action(idempotency_key = "request_id")]`) runs once per key. A repeat with the same
//! key and the same canonical arguments gets the first result back without running the
//! handler (even after the transition it fired made the tool unavailable); the same key
//! with other arguments is refused (`IDEMPOTENCY_CONFLICT`). Records live in the store,
//! per principal and tool, for [`RECORD_TTL`].
//!
//! Only a successful call leaves a record: one that failed, timed out or was refused
//! moved nothing, so its retry runs again.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::auth::Principal;
use crate::confirm::{CHALLENGE_ARGUMENT, OTP_ARGUMENT, Transaction};
use crate::error::ToolError;
use crate::store::{FlowStore, RecordWrite, Snapshot, StoreError, StoreKey, now_ms};

/// How long an idempotency record is kept.
pub(crate) const RECORD_TTL: Duration = Duration::from_secs(24 * 60 * 60);

/// A call's idempotency: where its record lives and what it must match.
#[derive(Debug, Clone)]
pub(crate) struct Idempotency {
    key: StoreKey,
    /// The call's transaction digest: the same key with another digest is a conflict.
    digest: String,
}

/// What the store keeps of a first call.
#[derive(Debug, Serialize, Deserialize)]
struct Record {
    digest: String,
    content: Value,
    /// The content blocks of a handler that returned them, as the reply carried them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    blocks: Option<Value>,
}

/// A first call's result, as a retry gets it back.
#[derive(Debug)]
pub(crate) struct Recalled {
    /// Its structured content.
    pub(crate) content: Value,
    /// Its content blocks (JSON), for a handler that returned them.
    pub(crate) blocks: Option<Value>,
}

/// The idempotency of a call to `tool` whose key argument is `argument`: `None` when the
/// call carries no key. `arguments` are the call's as sent; the fields toolgate owns are
/// left out of the digest (`owned`), as are a confirmation's.
pub(crate) fn of_call(
    argument: &str,
    principal: &Principal,
    tool: &str,
    subject: &str,
    arguments: &Map<String, Value>,
    owned: &[&str],
) -> Result<Option<Idempotency>, ToolError> {
    let key = match arguments.get(argument) {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::String(key)) => key,
        // The argument check says what is wrong with it.
        Some(_) => return Ok(None),
    };
    let mut transaction_arguments = arguments.clone();
    for field in owned.iter().chain(&[CHALLENGE_ARGUMENT, OTP_ARGUMENT]) {
        transaction_arguments.remove(*field);
    }
    let principal_key = principal.key();
    let digest = Transaction { principal: &principal_key, tool, subject, arguments: &transaction_arguments }.digest();
    Ok(Some(Idempotency { key: StoreKey::idempotency(&principal.digest(), tool, key), digest }))
}

impl Idempotency {
    /// The first call's result, if there was one with these arguments; a refusal if the key
    /// was used with other arguments.
    pub(crate) async fn recall(&self, store: &dyn FlowStore, tool: &str) -> Result<Option<Recalled>, ToolError> {
        let snapshot = store.load(&self.key).await.map_err(|e| ToolError::store_unavailable(e, 1_000))?;
        if snapshot.version == 0 || snapshot.is_expired(now_ms()) {
            return Ok(None);
        }
        let Some(record) = snapshot.record.and_then(|r| serde_json::from_value::<Record>(r).ok()) else {
            return Ok(None);
        };
        if record.digest != self.digest {
            return Err(ToolError::idempotency_conflict(tool));
        }
        tracing::info!(tool, "an idempotent retry: the first result, the handler not run again");
        Ok(Some(Recalled { content: record.content, blocks: record.blocks }))
    }

    /// What the store keeps of a successful call's result (and its content blocks, JSON).
    fn snapshot(&self, content: &Value, blocks: Option<Value>) -> Snapshot {
        let record = Record { digest: self.digest.clone(), content: content.clone(), blocks };
        Snapshot {
            expires_at_ms: Some(now_ms() + RECORD_TTL.as_millis() as u64),
            record: Some(serde_json::to_value(record).expect("a record serializes")),
            ..Snapshot::default().next()
        }
    }

    /// The record of a successful call's result as a write of the call's own commit (its
    /// handler's transaction): written unless a first call's record stands.
    pub(crate) fn record_write(&self, content: &Value, blocks: Option<Value>) -> RecordWrite {
        let next = self.snapshot(content, blocks);
        RecordWrite { key: self.key.clone(), expected: 0, next, fence: None, entry: None, if_absent: true }
    }

    /// Keeps a successful call's result (and its content blocks, JSON) for its retries.
    pub(crate) async fn remember(&self, store: &dyn FlowStore, content: &Value, blocks: Option<Value>) {
        let snapshot = self.snapshot(content, blocks);
        match store.commit(&self.key, 0, &snapshot, None, None).await {
            Ok(_) => {}
            // A concurrent first call with the same key recorded first; its result stands.
            Err(StoreError::Conflict { .. }) => {}
            Err(error) => tracing::warn!(%error, "cannot keep an idempotent call's result; a retry would run again"),
        }
    }
}
