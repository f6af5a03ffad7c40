//! [`EffectPolicy`]: how often, and how far apart, an effect is tried.

use std::time::Duration;

/// How often, and how far apart, an effect is tried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EffectPolicy {
    /// Attempts that end (in an error, or past `attempt_timeout`) before the effect is
    /// dead-lettered (default 5). Attempts cut off do not count here.
    pub max_attempts: u32,
    /// Attempts cut off — claimed, and not ended because the process running them stopped
    /// first — before the effect is dead-lettered (default 10; 0 is taken as 1). Counted
    /// apart, and allowed more, because a deploy or a lost machine is seldom the effect's
    /// fault; bounded, because an effect that stops every process running it would
    /// otherwise be tried forever (`docs/effects.md` says more).
    pub max_cut_offs: u32,
    /// The wait after the first failed attempt, doubled after each (default 1 s).
    pub first_backoff: Duration,
    /// The longest wait between attempts (default 5 minutes).
    pub max_backoff: Duration,
    /// How long one attempt may run; one that has not ended by then is tried again
    /// (default 30 s). It is also how long, and a second more, the claim of an attempt
    /// whose process died holds the effect from the others.
    pub attempt_timeout: Duration,
}

impl Default for EffectPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 5,
            max_cut_offs: 10,
            first_backoff: Duration::from_secs(1),
            max_backoff: Duration::from_secs(300),
            attempt_timeout: Duration::from_secs(30),
        }
    }
}

impl EffectPolicy {
    /// The wait after the `attempts`-th failed attempt.
    pub(crate) fn backoff(&self, attempts: u32) -> Duration {
        let doubled = self.first_backoff.saturating_mul(1u32 << attempts.saturating_sub(1).min(20));
        doubled.min(self.max_backoff)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_its_ceiling() {
        let policy = EffectPolicy { max_backoff: Duration::from_secs(5), ..EffectPolicy::default() };
        let waits: Vec<u64> = (1..=5).map(|n| policy.backoff(n).as_secs()).collect();
        assert_eq!(waits, [1, 2, 4, 5, 5]);
    }
}
