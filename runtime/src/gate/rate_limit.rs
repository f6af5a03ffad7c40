//! Declared rate limits (`#[action(rate_limit = "30/minute")]`), enforced before a call
//! runs: per keyed instance for a tool that names one, else per flow, else per tool.

use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota};

use crate::action::RateLimit;
use crate::error::ToolError;

/// Forget idle keys once every this many checks, so the table does not grow forever.
const SWEEP_EVERY: u64 = 4096;

/// One tool's limiter.
pub(crate) struct Limiter {
    limit: RateLimit,
    limiter: DefaultKeyedRateLimiter<String>,
    checks: AtomicU64,
}

impl std::fmt::Debug for Limiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Limiter({})", self.limit)
    }
}

impl Limiter {
    /// `limit.calls` calls at once, one more every `per / calls` (GCRA: never more than
    /// `calls` in any window of `per`).
    pub(crate) fn new(limit: RateLimit) -> Self {
        let calls = NonZeroU32::new(limit.calls.max(1)).unwrap_or(NonZeroU32::MIN);
        let replenish = Duration::from_millis((limit.per_ms / u64::from(calls.get())).max(1));
        let quota = Quota::with_period(replenish).unwrap_or_else(|| Quota::per_second(calls)).allow_burst(calls);
        Self { limit, limiter: DefaultKeyedRateLimiter::keyed(quota), checks: AtomicU64::new(0) }
    }

    /// Admits one call for `key`, or says when to come back.
    pub(crate) fn check(&self, key: &str) -> Result<(), ToolError> {
        if self.checks.fetch_add(1, Ordering::Relaxed) % SWEEP_EVERY == SWEEP_EVERY - 1 {
            self.limiter.retain_recent();
        }
        self.limiter.check_key(&key.to_string()).map_err(|not_until| {
            let wait = not_until.wait_time_from(DefaultClock::default().now());
            ToolError::rate_limited(self.limit.to_string(), (wait.as_millis() as u64).max(1))
        })
    }
}
