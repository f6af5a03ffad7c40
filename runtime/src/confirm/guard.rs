//! What stops guessing across challenges: wrong codes are counted per principal and tool,
//! and per instance and tool (whoever the principal), in the store — so every replica
//! counts together and a restart forgets nothing — not per challenge, which a guesser
//! simply replaces. Past the threshold confirmations lock, each lock twice as long as the
//! one before (for a day). Challenges issued are counted too: at most so many per
//! principal and tool in a window (by default [`MAX_CHALLENGES`] in [`CHALLENGE_WINDOW`];
//! `ServerBuilder::challenges_per`), whether or not the tool declares a rate limit (which
//! is spent only after the confirmation).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use toolgate_machine::grammar::duration_in_words;

use crate::error::ToolError;
use crate::store::{FlowStore, Snapshot, StoreError, StoreKey, now_ms};

/// Challenges one principal may be issued for one tool in [`CHALLENGE_WINDOW`], by default.
pub(crate) const MAX_CHALLENGES: u32 = 10;
/// The window [`MAX_CHALLENGES`] counts in.
pub(crate) const CHALLENGE_WINDOW: Duration = Duration::from_secs(10 * 60);
/// How long a guard remembers its strikes and locks after its last change.
const MEMORY: Duration = Duration::from_secs(24 * 60 * 60);
/// The longest a lock lasts, however many came before it.
const LONGEST_LOCK: Duration = Duration::from_secs(24 * 60 * 60);
/// Wrong codes on one instance's tool, from any principals, per wrong code one principal
/// may give: an instance locks after this many times the principal's threshold.
const INSTANCE_FACTOR: u32 = 4;

/// One guard's record.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
struct Guard {
    /// Wrong codes since the last lock (or the last confirmation).
    wrong: u32,
    /// Locks so far: the next lasts `lock × 2^locks`.
    locks: u32,
    /// Locked until then (ms since the epoch); 0 when not locked.
    locked_until_ms: u64,
    /// When the challenges of the current window were issued.
    issued_ms: Vec<u64>,
}

/// The guards one confirmation is judged by.
pub(crate) struct Guards {
    /// The principal's guard on the tool.
    principal: StoreKey,
    /// The instance's (or flow's) guard on the tool, if the call acts on one.
    instance: Option<StoreKey>,
    /// Wrong codes before the principal's guard locks.
    max_wrong: u32,
    /// The first lock's length.
    lock: Duration,
    /// Challenges one principal may be issued for the tool, and the window they count in.
    challenges: (u32, Duration),
}

/// What the guards said of a wrong code.
pub(crate) enum Strike {
    /// This many more wrong codes are taken before confirmations lock.
    Left(u32),
    /// Confirmations locked for this long.
    Locked(u64),
}

fn unavailable(error: StoreError) -> ToolError {
    ToolError::store_unavailable(error, 1_000)
}

impl Guards {
    /// The guards of `tool` for `principal` (and `subject`, the instance or flow it acts
    /// on): locked after `max_wrong` wrong codes for `lock`, and issuing at most
    /// `challenges` (so many in a window).
    pub(crate) fn new(
        principal: &str,
        subject: &str,
        tool: &str,
        max_wrong: u32,
        lock: Duration,
        challenges: (u32, Duration),
    ) -> Self {
        Self {
            principal: StoreKey::confirmation_guard(&format!("principal:{principal}"), tool),
            instance: (!subject.is_empty()).then(|| StoreKey::confirmation_guard(&format!("subject:{subject}"), tool)),
            max_wrong: max_wrong.max(1),
            lock,
            challenges,
        }
    }

    /// How long confirmations of the tool stay locked for this call, if they are.
    pub(crate) async fn locked_for(&self, store: &dyn FlowStore) -> Result<Option<u64>, ToolError> {
        let now = now_ms();
        let mut longest = None;
        for key in std::iter::once(&self.principal).chain(&self.instance) {
            let (guard, _) = load(store, key).await?;
            if guard.locked_until_ms > now {
                longest = longest.max(Some(guard.locked_until_ms - now));
            }
        }
        Ok(longest)
    }

    /// Counts a challenge about to be issued; refuses past the limit in the window.
    pub(crate) async fn issue(&self, store: &dyn FlowStore) -> Result<(), ToolError> {
        let (most, window) = self.challenges;
        let window_ms = window.as_millis().max(1) as u64;
        let mut refused = None;
        update(store, &self.principal, |guard, now| {
            guard.issued_ms.retain(|&at| at + window_ms > now);
            if guard.issued_ms.len() >= most.max(1) as usize {
                refused = Some(guard.issued_ms[0] + window_ms - now);
                return false;
            }
            refused = None;
            guard.issued_ms.push(now);
            true
        })
        .await?;
        match refused {
            Some(retry_after_ms) => Err(ToolError::rate_limited(
                format!("{most} confirmation challenges per {}", duration_in_words(window_ms)),
                retry_after_ms.max(1),
            )),
            None => Ok(()),
        }
    }

    /// Counts a wrong code against every guard; says how many more are taken, or that the
    /// tool is now locked (and for how long).
    pub(crate) async fn strike(&self, store: &dyn FlowStore) -> Result<Strike, ToolError> {
        let mut verdict = Strike::Left(u32::MAX);
        let guards =
            [(Some(&self.principal), self.max_wrong), (self.instance.as_ref(), self.max_wrong * INSTANCE_FACTOR)];
        for (key, threshold) in guards {
            let Some(key) = key else { continue };
            let mut this = Strike::Left(0);
            update(store, key, |guard, now| {
                guard.wrong += 1;
                if guard.wrong >= threshold {
                    let lock = self.lock.saturating_mul(1 << guard.locks.min(16)).min(LONGEST_LOCK);
                    let lock_ms = lock.as_millis() as u64;
                    guard.locked_until_ms = now + lock_ms;
                    guard.locks += 1;
                    guard.wrong = 0;
                    this = Strike::Locked(lock_ms);
                } else {
                    this = Strike::Left(threshold - guard.wrong);
                }
                true
            })
            .await?;
            verdict = match (verdict, this) {
                (Strike::Locked(a), Strike::Locked(b)) => Strike::Locked(a.max(b)),
                (Strike::Locked(a), _) | (_, Strike::Locked(a)) => Strike::Locked(a),
                (Strike::Left(a), Strike::Left(b)) => Strike::Left(a.min(b)),
            };
        }
        Ok(verdict)
    }

    /// A confirmed call clears the principal's wrong codes (its locks stay remembered).
    pub(crate) async fn confirmed(&self, store: &dyn FlowStore) -> Result<(), ToolError> {
        update(store, &self.principal, |guard, _| std::mem::take(&mut guard.wrong) > 0).await
    }
}

async fn load(store: &dyn FlowStore, key: &StoreKey) -> Result<(Guard, Snapshot), ToolError> {
    let snapshot = store.load(key).await.map_err(unavailable)?;
    let guard = snapshot
        .record
        .as_ref()
        .filter(|_| snapshot.version > 0 && !snapshot.is_expired(now_ms()))
        .and_then(|record| serde_json::from_value(record.clone()).ok())
        .unwrap_or_default();
    Ok((guard, snapshot))
}

/// Applies `change` to the guard at `key` and writes it back (compare-and-set, again on a
/// conflict); `change` returns whether it changed anything.
async fn update(
    store: &dyn FlowStore,
    key: &StoreKey,
    mut change: impl FnMut(&mut Guard, u64) -> bool,
) -> Result<(), ToolError> {
    for _ in 0..16 {
        let (mut guard, snapshot) = load(store, key).await?;
        let now = now_ms();
        if !change(&mut guard, now) {
            return Ok(());
        }
        let expires_at_ms = now + MEMORY.as_millis() as u64;
        let record = serde_json::to_value(&guard).expect("a guard serializes");
        let written = Snapshot { expires_at_ms: Some(expires_at_ms), record: Some(record), ..snapshot.next() };
        match store.commit(key, snapshot.version, &written, None, None).await {
            Ok(_) => return Ok(()),
            Err(StoreError::Conflict { .. }) => continue,
            Err(error) => return Err(unavailable(error)),
        }
    }
    Err(ToolError::flow_busy("confirmation", 100))
}
