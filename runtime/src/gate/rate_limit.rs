//! Declared rate limits, enforced exactly: "at most N calls per period" holds over every
//! window of that length, because each key keeps the times of the calls it admitted in
//! the last period (a sliding-window log) rather than a burst plus a refill rate, which
//! admits up to twice N in some windows.
//!
//! The pipeline spends allowance only after every check that can refuse a call for what
//! it is (domain, state, arguments) has passed, and gives it back ([`Spent::refund`]) when
//! the state it judged changed before it took its lease: a refused call spends nothing.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::time::Instant;

use crate::action::RateLimit;
use crate::error::ToolError;
use crate::store::RateWindows;

/// A call over its limit: when the next one will be admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct OverLimit {
    pub(crate) retry_after_ms: u64,
}

/// Forget idle keys once every this many admissions, so the table does not grow forever.
const SWEEP_EVERY: u64 = 4096;

/// One limit, over any number of keys (clients, instances, or the one tool).
pub(crate) struct Limiter {
    limit: RateLimit,
    window: Duration,
    /// Per key, the admitted calls of the last window, oldest first, each with a serial
    /// that tells it apart for a refund.
    log: Mutex<HashMap<String, VecDeque<(Instant, u64)>>>,
    serial: AtomicU64,
}

impl std::fmt::Debug for Limiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Limiter({})", self.limit)
    }
}

/// A call's spent allowance: in the store (which every replica sharing it counts in), or
/// in this process's [`Limiter`] for a store that keeps no windows.
#[must_use = "a refused call gives its allowance back with `refund`"]
pub(crate) enum Spent<'a> {
    /// Counted by this process.
    Local { limiter: &'a Limiter, key: String, serial: u64 },
    /// Counted in the store.
    Stored { windows: &'a dyn RateWindows, window: String, ticket: String },
}

impl Spent<'_> {
    /// Gives the allowance back (the call was refused after spending it).
    pub(crate) async fn refund(self) {
        match self {
            Self::Local { limiter, key, serial } => {
                let mut log = limiter.lock();
                if let Some(calls) = log.get_mut(&key) {
                    calls.retain(|&(_, s)| s != serial);
                    if calls.is_empty() {
                        log.remove(&key);
                    }
                }
            }
            Self::Stored { windows, window, ticket } => {
                if let Err(error) = windows.refund(&window, &ticket).await {
                    tracing::warn!(%error, "cannot give a refused call's allowance back");
                }
            }
        }
    }
}

impl Limiter {
    pub(crate) fn new(limit: RateLimit) -> Self {
        Self {
            limit,
            window: Duration::from_millis(limit.per_ms.max(1)),
            log: Mutex::default(),
            serial: AtomicU64::new(0),
        }
    }

    /// The limit this limiter enforces.
    pub(crate) fn limit(&self) -> RateLimit {
        self.limit
    }

    /// Admits one call for `key` and records it, or says exactly when the next call for
    /// `key` will be admitted: when the oldest call in the window leaves it.
    pub(crate) fn spend(&self, key: &str) -> Result<Spent<'_>, OverLimit> {
        let now = Instant::now();
        let serial = self.serial.fetch_add(1, Ordering::Relaxed);
        let mut log = self.lock();
        if serial % SWEEP_EVERY == SWEEP_EVERY - 1 {
            log.retain(|_, calls| calls.back().is_some_and(|&(at, _)| now.duration_since(at) < self.window));
        }
        let calls = match log.get_mut(key) {
            Some(calls) => calls,
            None => log.entry(key.to_string()).or_default(),
        };
        while calls.front().is_some_and(|&(at, _)| now.duration_since(at) >= self.window) {
            calls.pop_front();
        }
        if calls.len() >= self.limit.calls as usize {
            let oldest = calls.front().map_or(now, |&(at, _)| at);
            let wait = (oldest + self.window).saturating_duration_since(now);
            let retry_after_ms = u64::try_from(wait.as_nanos().div_ceil(1_000_000)).unwrap_or(u64::MAX).max(1);
            return Err(OverLimit { retry_after_ms });
        }
        calls.push_back((now, serial));
        Ok(Spent::Local { limiter: self, key: key.to_string(), serial })
    }

    /// [`Limiter::spend`] for a tool call: over the limit is `RATE_LIMITED`.
    pub(crate) fn admit(&self, key: &str) -> Result<Spent<'_>, ToolError> {
        self.spend(key)
            .map_err(|OverLimit { retry_after_ms }| ToolError::rate_limited(self.limit.to_string(), retry_after_ms))
    }

    /// Admits one call of `tool` for `key`: in the store's `windows` when it keeps them
    /// (every replica sharing it counts together), else in this process.
    pub(crate) async fn admit_in<'a>(
        &'a self,
        windows: Option<&'a dyn RateWindows>,
        tool: &str,
        key: &str,
    ) -> Result<Spent<'a>, ToolError> {
        let Some(windows) = windows else { return self.admit(key) };
        let window = format!("{tool}:{key}");
        match windows.spend(&window, self.limit.calls, self.limit.per_ms).await {
            Ok(Ok(ticket)) => Ok(Spent::Stored { windows, window, ticket }),
            Ok(Err(retry_after_ms)) => Err(ToolError::rate_limited(self.limit.to_string(), retry_after_ms)),
            Err(error) => Err(ToolError::store_unavailable(error, 1_000)),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, VecDeque<(Instant, u64)>>> {
        self.log.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::action::RatePer;

    fn limiter(calls: u32, per_ms: u64) -> Limiter {
        Limiter::new(RateLimit { calls, per_ms, per: RatePer::Client })
    }

    fn retry_after(over: OverLimit) -> u64 {
        over.retry_after_ms
    }

    #[tokio::test(start_paused = true)]
    async fn at_most_n_in_every_window_and_retry_after_is_exact() {
        let limiter = limiter(3, 60_000);
        for _ in 0..3 {
            let _ = limiter.spend("a").unwrap();
            tokio::time::advance(Duration::from_secs(10)).await;
        }
        // 30 s after the first call: the window holds three calls until the first leaves it.
        let wait = retry_after(limiter.spend("a").err().unwrap());
        assert_eq!(wait, 30_000);
        // A refill rate would admit one more after per/N = 20 s; a window does not.
        tokio::time::advance(Duration::from_secs(20)).await;
        assert_eq!(retry_after(limiter.spend("a").err().unwrap()), 10_000);
        tokio::time::advance(Duration::from_millis(9_999)).await;
        assert_eq!(retry_after(limiter.spend("a").err().unwrap()), 1);
        tokio::time::advance(Duration::from_millis(1)).await;
        let _ = limiter.spend("a").unwrap();
        // Other keys have their own allowance.
        let _ = limiter.spend("b").unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn a_refund_gives_the_allowance_back() {
        let limiter = limiter(1, 1_000);
        limiter.spend("a").unwrap().refund().await;
        let kept = limiter.spend("a").unwrap();
        assert!(limiter.spend("a").is_err());
        drop(kept);
        assert!(limiter.spend("a").is_err(), "dropping a spent allowance does not refund it");
    }
}
