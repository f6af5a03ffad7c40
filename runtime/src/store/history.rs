//! What a keyed machine's instance remembers of its transitions: [`HistoryEntry`], one per
//! committed transition, kept by the store beside the instance and appended in the same
//! atomic step as the transition's commit, trimmed by a [`HistoryRetention`].
//!
//! A model that is refused `invoice_pay` on INV-7 can then be told *why* ("rejected by
//! `carol` at 10:02: amount mismatch") instead of guessing.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// One committed transition of a keyed machine's instance: who fired it, when, with which
/// tool and event, from which state to which, and the reason the handler gave.
///
/// Only the server makes entries (one per committed transition on an instance); handlers
/// read them with [`Ctx::history`](crate::Ctx::history).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistoryEntry {
    /// The subject of the principal that called (`carol`; never a credential), or `None`
    /// for a caller that did not authenticate.
    pub principal: Option<String>,
    /// The principal's tenant, if it has one.
    pub tenant: Option<String>,
    /// The state the instance was in.
    pub from: String,
    /// The state the transition moved it to.
    pub to: String,
    /// The event the transition fired (`REJECT`).
    pub event: String,
    /// The tool whose call fired it (`invoice_reject`); empty for a transition time fired
    /// (`after`), whose principal is `timer`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tool: String,
    /// When it was committed: RFC 3339, UTC, to the millisecond (`2026-05-01T10:02:11.042Z`).
    pub time: String,
    /// The call's id: random, fresh per call, and in the server's log line for the commit
    /// (`transition committed … call_id=…`).
    pub call_id: String,
    /// A short reason the handler attached ([`Ctx::note`](crate::Ctx::note)): `amount
    /// mismatch`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Whether the call changed the instance's data (its context) with the transition.
    /// The data itself is not kept here.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub context_changed: bool,
    /// The data the transition committed, for a machine whose history keeps it
    /// (`ServerBuilder::history_with_data`); `None` otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<serde_json::Value>,
    /// [`HistoryEntry::time`] in milliseconds since the Unix epoch, what retention by age
    /// compares.
    at_ms: u64,
}

/// The longest note kept, in characters; a longer one is cut.
pub const MAX_NOTE_CHARS: usize = 500;

/// What a transition was, for [`HistoryEntry::new`].
pub(crate) struct Transition<'a> {
    pub(crate) principal: Option<&'a crate::auth::Principal>,
    pub(crate) from: &'a str,
    pub(crate) to: &'a str,
    pub(crate) event: &'a str,
    pub(crate) tool: &'a str,
    pub(crate) call_id: String,
    pub(crate) note: Option<String>,
    pub(crate) context_changed: bool,
}

/// The principal of a transition time fired.
pub const TIMER_PRINCIPAL: &str = "timer";

impl HistoryEntry {
    /// The entry of `transition`, committed at `at_ms`.
    pub(crate) fn new(transition: Transition<'_>, at_ms: u64) -> Self {
        Self {
            principal: transition.principal.map(|p| p.subject().to_string()),
            tenant: transition.principal.and_then(|p| p.tenant()).map(str::to_string),
            from: transition.from.to_string(),
            to: transition.to.to_string(),
            event: transition.event.to_string(),
            tool: transition.tool.to_string(),
            time: rfc3339(at_ms),
            call_id: transition.call_id,
            note: transition.note.map(|note| shortened(&note)),
            context_changed: transition.context_changed,
            context: None,
            at_ms,
        }
    }

    /// The entry of a transition time fired: `after` in `from` moved the instance to `to`
    /// at `at_ms` (when it was due, whenever it was committed). Its principal is `timer`.
    pub(crate) fn timer(from: &str, to: &str, after_ms: u64, at_ms: u64) -> Self {
        Self {
            principal: Some(TIMER_PRINCIPAL.to_string()),
            tenant: None,
            from: from.to_string(),
            to: to.to_string(),
            event: format!("after {}", toolgate_machine::grammar::iso_duration(after_ms)),
            tool: String::new(),
            time: rfc3339(at_ms),
            call_id: uuid::Uuid::new_v4().simple().to_string(),
            note: None,
            context_changed: false,
            context: None,
            at_ms,
        }
    }

    /// When it was committed, in milliseconds since the Unix epoch.
    pub fn at_ms(&self) -> u64 {
        self.at_ms
    }

    /// The entry in one line a model can quote: ``2026-05-01T10:02:11.042Z: `carol` called
    /// `invoice_reject` (REJECT), from `review` to `draft`: amount mismatch``.
    pub fn summary(&self) -> String {
        let who = match &self.principal {
            Some(subject) => format!("`{subject}`"),
            None => "a caller who did not authenticate".to_string(),
        };
        let mut line = if self.tool.is_empty() {
            // Time fired it (`after`): no one called.
            format!("{}: time moved it ({}), from `{}` to `{}`", self.time, self.event, self.from, self.to)
        } else {
            format!(
                "{}: {who} called `{}` ({}), from `{}` to `{}`",
                self.time, self.tool, self.event, self.from, self.to
            )
        };
        if let Some(note) = &self.note {
            line.push_str(": ");
            line.push_str(note);
        }
        line
    }
}

/// `at_ms` as RFC 3339 in UTC, to the millisecond.
pub(crate) fn rfc3339(at_ms: u64) -> String {
    chrono::DateTime::from_timestamp_millis(i64::try_from(at_ms).unwrap_or(i64::MAX))
        .unwrap_or_default()
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// A note cut to [`MAX_NOTE_CHARS`] characters.
fn shortened(note: &str) -> String {
    match note.char_indices().nth(MAX_NOTE_CHARS) {
        Some((end, _)) => note[..end].to_string(),
        None => note.to_string(),
    }
}

/// How much of each instance's history a store keeps: at most the last N entries, only
/// those younger than an age, or both (an entry goes when either says so). Enforced each
/// time an entry is appended, against that entry's time: between two transitions of an
/// instance its history is not trimmed.
///
/// The default keeps the last [`HistoryRetention::DEFAULT_ENTRIES`] entries per instance.
///
/// ```
/// use std::time::Duration;
/// use toolgate_runtime::store::HistoryRetention;
/// let retention = HistoryRetention::last(20).and_within(Duration::from_secs(30 * 24 * 3600));
/// assert_eq!(retention.entries(), Some(20));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HistoryRetention {
    entries: Option<u32>,
    age: Option<Duration>,
}

impl Default for HistoryRetention {
    fn default() -> Self {
        Self::last(Self::DEFAULT_ENTRIES)
    }
}

impl HistoryRetention {
    /// How many entries per instance the default retention keeps.
    pub const DEFAULT_ENTRIES: u32 = 100;

    /// Keeps the last `entries` entries of each instance (`0`: keeps none, so instances
    /// have no history).
    pub fn last(entries: u32) -> Self {
        Self { entries: Some(entries), age: None }
    }

    /// Keeps the entries younger than `age`, however many.
    pub fn within(age: Duration) -> Self {
        Self { entries: None, age: Some(age) }
    }

    /// This retention, and at most the last `entries` entries too.
    #[must_use]
    pub fn and_last(self, entries: u32) -> Self {
        Self { entries: Some(entries), ..self }
    }

    /// This retention, and only entries younger than `age` too.
    #[must_use]
    pub fn and_within(self, age: Duration) -> Self {
        Self { age: Some(age), ..self }
    }

    /// How many entries per instance are kept at most, if that is bounded.
    pub fn entries(&self) -> Option<u32> {
        self.entries
    }

    /// How old an entry may be, if that is bounded.
    pub fn age(&self) -> Option<Duration> {
        self.age
    }

    /// Whether it keeps no entry at all (`last(0)`).
    pub fn keeps_none(&self) -> bool {
        self.entries == Some(0)
    }

    /// The oldest time (milliseconds since the Unix epoch) an entry may have to be kept
    /// when an entry at `now_ms` is appended; `0` without a bound on age.
    pub fn oldest_kept_ms(&self, now_ms: u64) -> u64 {
        self.age.map_or(0, |age| now_ms.saturating_sub(age.as_millis().try_into().unwrap_or(u64::MAX)))
    }

    /// Whether an entry at `at_ms`, with `newer` entries after it, is kept when an entry
    /// at `now_ms` is appended: what a store backend applies, oldest entry first.
    pub fn keeps(&self, newer: usize, at_ms: u64, now_ms: u64) -> bool {
        self.entries.is_none_or(|most| newer < most as usize) && at_ms >= self.oldest_kept_ms(now_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(note: Option<&str>) -> HistoryEntry {
        let principal = crate::auth::Principal::new("carol").with_tenant("a");
        let transition = Transition {
            principal: Some(&principal),
            from: "review",
            to: "draft",
            event: "REJECT",
            tool: "invoice_reject",
            call_id: "c1".into(),
            note: note.map(str::to_string),
            context_changed: false,
        };
        HistoryEntry::new(transition, 1_777_629_731_042)
    }

    #[test]
    fn an_entry_reads_as_one_line() {
        let rejected = entry(Some("amount mismatch"));
        assert_eq!(rejected.time, "2026-05-01T10:02:11.042Z");
        assert_eq!((rejected.principal.as_deref(), rejected.tenant.as_deref()), (Some("carol"), Some("a")));
        assert_eq!(
            rejected.summary(),
            "2026-05-01T10:02:11.042Z: `carol` called `invoice_reject` (REJECT), from `review` to `draft`: amount mismatch"
        );
        assert!(!entry(None).summary().ends_with(':'));
        let long = entry(Some(&"é".repeat(MAX_NOTE_CHARS + 10)));
        assert_eq!(long.note.unwrap().chars().count(), MAX_NOTE_CHARS);
    }

    #[test]
    fn retention_keeps_the_newest_and_the_young() {
        let count = HistoryRetention::last(3);
        assert!(count.keeps(2, 0, 10) && !count.keeps(3, 10, 10));
        let age = HistoryRetention::within(Duration::from_millis(100));
        assert!(age.keeps(1_000, 900, 1_000) && !age.keeps(0, 899, 1_000));
        let both = HistoryRetention::last(2).and_within(Duration::from_millis(100));
        assert!(!both.keeps(2, 1_000, 1_000) && !both.keeps(0, 0, 1_000) && both.keeps(1, 950, 1_000));
        assert!(HistoryRetention::last(0).keeps_none());
        assert_eq!(HistoryRetention::default().entries(), Some(100));
    }
}
