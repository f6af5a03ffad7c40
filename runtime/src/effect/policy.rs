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
    /// The wait after the first failed attempt, doubled after each (default 1 s). Each
    /// wait is drawn between its half and its whole, so that effects that failed together
    /// (a destination that was down) are not all tried again at the same moment.
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
    /// The wait after the `attempts`-th failed attempt: `first_backoff` doubled after each
    /// failure up to `max_backoff`, of which a random half or more. Effects a destination's
    /// outage failed together spread over the second half of each wait, rather than being
    /// tried again together, failing together, and coming back as one herd after each
    /// doubling ("equal jitter": never under half the wait, so the backoff still backs off).
    pub(crate) fn backoff(&self, attempts: u32) -> Duration {
        let ceiling = self.backoff_ceiling(attempts);
        let half = ceiling / 2;
        half + (ceiling - half).mul_f64(fastrand::f64())
    }

    /// The longest wait after the `attempts`-th failed attempt.
    fn backoff_ceiling(&self, attempts: u32) -> Duration {
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
        let ceilings: Vec<u64> = (1..=5).map(|n| policy.backoff_ceiling(n).as_secs()).collect();
        assert_eq!(ceilings, [1, 2, 4, 5, 5]);
    }

    #[test]
    fn each_wait_is_drawn_between_the_half_and_the_whole_of_its_ceiling_and_spread() {
        let policy = EffectPolicy::default();
        for attempts in 1..=12 {
            let ceiling = policy.backoff_ceiling(attempts);
            let waits: Vec<Duration> = (0..200).map(|_| policy.backoff(attempts)).collect();
            for wait in &waits {
                assert!(*wait >= ceiling / 2 && *wait <= ceiling, "{wait:?} after {attempts} (ceiling {ceiling:?})");
            }
            // 200 effects that failed together are not tried again together: their waits
            // spread over the second half, a quarter of them in each eighth of the ceiling.
            let eighth = |wait: &Duration| (wait.as_secs_f64() / ceiling.as_secs_f64() * 8.0) as usize;
            for part in 4..8 {
                let inside = waits.iter().filter(|w| eighth(w) == part).count();
                assert!((20..=80).contains(&inside), "{inside} of 200 waits in eighth {part} after {attempts}");
            }
        }
    }
}
