//! [`Refusals`]: the calls this process refused in the last day, minute by minute, by
//! tenant, code, tool and principal — what the console's refusals page answers from. A
//! call asked for its confirmation (`CONFIRMATION_REQUIRED`) is a step of the call, not a
//! refusal: it is counted apart, as a confirmation asked.
//!
//! Kept in memory, per process: a refusal writes nothing to the store (that is the point of
//! one), and counting it there would give every refused call a write. With replicas, each
//! replica's console shows the refusals it answered.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

/// How many minutes are kept: a day.
const KEPT_MINUTES: u64 = 24 * 60;

/// At most this many distinct (tenant, code, tool, principal) rows per minute; past it, a
/// minute counts its refusals under the code and tool alone (a flood of principals cannot
/// grow the tally without bound).
const MOST_ROWS_PER_MINUTE: usize = 1_024;

/// Who was refused what: one row of a minute.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Row {
    tenant: String,
    code: String,
    tool: &'static str,
    principal: Option<String>,
}

#[derive(Debug)]
struct Minute {
    /// Minutes since the Unix epoch.
    at: u64,
    counts: HashMap<Row, u64>,
}

/// The refusals of the last day ([module docs](self)).
#[derive(Debug, Default)]
pub(crate) struct Refusals {
    minutes: Mutex<VecDeque<Minute>>,
}

/// The refusals one tenant drew over a window, as the console shows them.
#[derive(Debug, Default, serde::Serialize)]
pub(crate) struct RefusalReport {
    pub(crate) total: u64,
    pub(crate) by_code: Vec<(String, u64)>,
    pub(crate) by_tool: Vec<(String, u64)>,
    /// By principal's subject (`null`: a caller that did not authenticate).
    pub(crate) by_principal: Vec<(Option<String>, u64)>,
    /// Each minute of the window with a refusal: its start (ms since the epoch) and count.
    pub(crate) per_minute: Vec<(u64, u64)>,
    /// The calls asked for their confirmation over the window (not refusals: steps).
    pub(crate) confirmations_asked: u64,
}

impl Refusals {
    /// Counts a refusal of `tool` with `code`, at `now_ms`, for `principal` (its tenant and
    /// subject; `None` for a caller that did not authenticate).
    pub(crate) fn record(
        &self,
        now_ms: u64,
        tool: &'static str,
        code: &str,
        principal: Option<&crate::auth::Principal>,
    ) {
        let at = now_ms / 60_000;
        let tenant = principal.and_then(crate::auth::Principal::tenant).unwrap_or_default().to_string();
        let mut row =
            Row { tenant, code: code.to_string(), tool, principal: principal.map(|p| p.subject().to_string()) };
        let mut minutes = self.minutes.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if minutes.back().is_none_or(|minute| minute.at < at) {
            minutes.push_back(Minute { at, counts: HashMap::new() });
        }
        while minutes.front().is_some_and(|minute| minute.at + KEPT_MINUTES <= at) {
            minutes.pop_front();
        }
        let Some(minute) = minutes.back_mut() else { return };
        if minute.counts.len() >= MOST_ROWS_PER_MINUTE && !minute.counts.contains_key(&row) {
            row.principal = None;
        }
        *minute.counts.entry(row).or_default() += 1;
    }

    /// What `tenant` (`""`: no tenant) drew in the `window_minutes` up to `now_ms`.
    pub(crate) fn report(&self, now_ms: u64, tenant: &str, window_minutes: u64) -> RefusalReport {
        let since = (now_ms / 60_000).saturating_sub(window_minutes.clamp(1, KEPT_MINUTES) - 1);
        let (mut codes, mut tools, mut principals) = (HashMap::new(), HashMap::new(), HashMap::new());
        let mut report = RefusalReport::default();
        let minutes = self.minutes.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        for minute in minutes.iter().filter(|minute| minute.at >= since) {
            let mut in_minute = 0;
            for (row, &count) in minute.counts.iter().filter(|(row, _)| row.tenant == tenant) {
                if crate::error::is_a_step(&row.code) {
                    report.confirmations_asked += count;
                    continue;
                }
                in_minute += count;
                *codes.entry(row.code.clone()).or_default() += count;
                *tools.entry(row.tool.to_string()).or_default() += count;
                *principals.entry(row.principal.clone()).or_default() += count;
            }
            if in_minute > 0 {
                report.per_minute.push((minute.at * 60_000, in_minute));
                report.total += in_minute;
            }
        }
        report.by_code = most_first(codes);
        report.by_tool = most_first(tools);
        report.by_principal = most_first(principals);
        report
    }
}

/// The counts, the largest first (ties by name).
fn most_first<K: Ord>(counts: HashMap<K, u64>) -> Vec<(K, u64)> {
    let mut counts: Vec<_> = counts.into_iter().collect();
    counts.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    counts
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::Principal;

    #[test]
    fn a_tenant_sees_its_own_refusals_over_its_window_only() {
        let refusals = Refusals::default();
        let (carl, gina) = (Principal::new("carl").with_tenant("acme"), Principal::new("gina").with_tenant("globex"));
        let now = 1_000 * 60_000;
        refusals.record(now - 90 * 60_000, "invoice_pay", "FORBIDDEN", Some(&carl));
        for _ in 0..3 {
            refusals.record(now, "invoice_approve", "FORBIDDEN", Some(&carl));
        }
        refusals.record(now, "invoice_approve", "RATE_LIMITED", Some(&carl));
        refusals.record(now, "invoice_approve", "GUARD_FAILED", Some(&gina));
        refusals.record(now, "invoice_view", "UNAUTHENTICATED", None);
        refusals.record(now, "invoice_pay", "CONFIRMATION_REQUIRED", Some(&carl));

        let acme = refusals.report(now, "acme", 60);
        assert_eq!(acme.total, 4, "the refusal 90 minutes ago is outside the hour");
        assert_eq!(acme.by_code, [("FORBIDDEN".to_string(), 3), ("RATE_LIMITED".to_string(), 1)]);
        assert_eq!(acme.by_principal, [(Some("carl".to_string()), 4)]);
        assert_eq!(acme.per_minute, [(now, 4)]);
        assert_eq!(acme.confirmations_asked, 1, "a confirmation asked is counted apart");
        assert_eq!(refusals.report(now, "acme", 120).total, 5);
        assert_eq!(refusals.report(now, "globex", 60).by_code, [("GUARD_FAILED".to_string(), 1)]);
        assert_eq!(refusals.report(now, "", 60).by_principal, [(None, 1)]);
        // A day later, the old minutes are gone.
        refusals.record(now + KEPT_MINUTES * 60_000, "invoice_view", "FORBIDDEN", Some(&carl));
        assert_eq!(refusals.report(now + KEPT_MINUTES * 60_000, "acme", KEPT_MINUTES).total, 1);
    }
}
