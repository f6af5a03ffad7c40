//! How one effect's attempts go, as its record keeps them: each claimed by a sweep, then
//! ended by its function (done, or failed and tried again after a backoff) or cut off (its
//! process stopped first); and, once out of attempts, dead-lettered with the reason.
//!
//! The two ways an attempt goes wrong are counted apart. An attempt that *ended* in an
//! error (or ran past its timeout in a live process) is the effect's or its receiver's
//! doing: [`EffectPolicy::max_attempts`] of them and it is dead. An attempt *cut off* is
//! almost always not: a deploy, a scale-down, a kill or a lost machine stopped the process
//! that ran it. Counted with the failures, a few restarts during a slow effect would
//! dead-letter a healthy one. Not counted at all, an effect that itself stops the process
//! running it (it aborts, overflows its stack, exhausts the memory) would be claimed again
//! after every restart and stop every process that claims it, forever. So cut-offs have a
//! bound of their own, larger: [`EffectPolicy::max_cut_offs`].

use std::time::Duration;

use super::{EffectError, EffectPolicy};
use crate::store::{PendingEffect, rfc3339};

/// How long past an attempt's timeout its claim stands. The process running an attempt
/// ends it at the timeout itself and records it as failed; only a claim still standing this
/// much later is taken for one whose process stopped (cut off), so that a live process a
/// little slow to record its attempt's end is not taken for a dead one.
pub(crate) const CLAIM_GRACE: Duration = Duration::from_secs(1);

/// What an effect does next, after the sweep or an attempt's end looked at it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Next {
    /// Its next attempt is claimed: dispatch it now.
    Run,
    /// It waits in the outbox until it is due again (a backoff after a failure).
    Wait,
    /// It is dead-lettered: it will not be tried again, and its `last_error` says why.
    Dead,
}

/// Takes `effect`, found due at `now` by a sweep. If it is still claimed, the attempt under
/// way did not end by its deadline: it was cut off, and is recorded as such. Then the next
/// attempt is claimed — counted, stamped, its deadline set — unless the effect has no
/// function here (`known` false) or is out of attempts or of cut-offs: then it is
/// dead-lettered, with its reason.
pub(crate) fn claim(effect: &mut PendingEffect, policy: &EffectPolicy, known: bool, now: u64) -> Next {
    if let Some(claimed_at) = effect.claimed_at_ms.take() {
        effect.cut_offs = effect.cut_offs.saturating_add(1);
        effect.last_error = Some(format!(
            "attempt {} was cut off: the process running it stopped (or lost the store) before it ended \
             (claimed at {}, deadline {})",
            effect.attempts,
            rfc3339(claimed_at),
            rfc3339(effect.due_at_ms),
        ));
    }
    if !known {
        return dead_letter(effect, Some(format!("no effect is registered as `{}`", effect.name)));
    }
    if effect.cut_offs > 0 && effect.cut_offs >= policy.max_cut_offs {
        let why = format!(
            "{}; {} of its attempts were cut off, the most allowed: an effect whose attempts keep stopping \
             the process that runs them is not tried again",
            effect.last_error.as_deref().unwrap_or("its attempts were cut off"),
            effect.cut_offs,
        );
        return dead_letter(effect, Some(why));
    }
    if ended(effect) >= policy.max_attempts {
        return dead_letter(effect, None);
    }
    effect.attempts = effect.attempts.saturating_add(1);
    effect.claimed_at_ms = Some(now);
    let deadline = policy.attempt_timeout.saturating_add(CLAIM_GRACE);
    effect.due_at_ms = now.saturating_add(deadline.as_millis() as u64);
    Next::Run
}

/// Records that the claimed attempt of `effect` ended at `now` with `error`: it waits for
/// the backoff and is tried again, or, after its last attempt, is dead-lettered with it.
pub(crate) fn failed(effect: &mut PendingEffect, policy: &EffectPolicy, error: &EffectError, now: u64) -> Next {
    effect.claimed_at_ms = None;
    effect.last_error = Some(error.to_string());
    if ended(effect) >= policy.max_attempts {
        return dead_letter(effect, None);
    }
    effect.due_at_ms = now.saturating_add(policy.backoff(ended(effect)).as_millis() as u64);
    Next::Wait
}

/// How many of `effect`'s attempts ended (rather than being cut off).
fn ended(effect: &PendingEffect) -> u32 {
    effect.attempts.saturating_sub(effect.cut_offs)
}

/// Makes `effect` a dead letter, `why` (or its last error) saying why: a dead letter always
/// carries its reason, so that an operator reading it knows what to do.
fn dead_letter(effect: &mut PendingEffect, why: Option<String>) -> Next {
    effect.claimed_at_ms = None;
    let out_of_attempts = || {
        format!(
            "out of attempts: {} started ({} of them cut off), none of which recorded how it ended",
            effect.attempts, effect.cut_offs
        )
    };
    effect.last_error = Some(why.or_else(|| effect.last_error.take()).unwrap_or_else(out_of_attempts));
    Next::Dead
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> EffectPolicy {
        EffectPolicy { max_attempts: 3, max_cut_offs: 4, ..EffectPolicy::default() }
    }

    fn effect() -> PendingEffect {
        PendingEffect::new("release_hold".into(), "k".into(), serde_json::Value::Null, 0)
    }

    /// What can happen to a claimed attempt.
    #[derive(Debug, Clone, Copy)]
    enum Event {
        Fails,
        CutOff,
    }

    #[test]
    fn an_attempt_its_process_did_not_end_is_recorded_as_cut_off_with_when() {
        let mut effect = effect();
        let policy = EffectPolicy { attempt_timeout: Duration::from_secs(2), ..policy() };
        assert_eq!(claim(&mut effect, &policy, true, 1_000), Next::Run);
        assert_eq!((effect.attempts, effect.claimed_at_ms, effect.due_at_ms), (1, Some(1_000), 4_000));
        // The process stopped; the next sweep finds the claim past its deadline.
        assert_eq!(claim(&mut effect, &policy, true, 4_250), Next::Run);
        assert_eq!((effect.attempts, effect.cut_offs, effect.claimed_at_ms), (2, 1, Some(4_250)));
        assert_eq!(
            effect.last_error.as_deref(),
            Some(
                "attempt 1 was cut off: the process running it stopped (or lost the store) before it ended \
                 (claimed at 1970-01-01T00:00:01.000Z, deadline 1970-01-01T00:00:04.000Z)"
            )
        );
    }

    #[test]
    fn cut_off_attempts_do_not_use_up_the_attempts_that_end() {
        let mut effect = effect();
        let policy = policy();
        // Three cut-offs (under the four allowed), then three failures: the third is the
        // last attempt to end, and the effect is dead with its error.
        for now in 0..3 {
            assert_eq!(claim(&mut effect, &policy, true, now), Next::Run);
        }
        for now in 3..5 {
            assert_eq!(claim(&mut effect, &policy, true, now), Next::Run);
            assert_eq!(failed(&mut effect, &policy, &EffectError::new("refused"), now), Next::Wait);
        }
        assert_eq!(claim(&mut effect, &policy, true, 10), Next::Run);
        assert_eq!(failed(&mut effect, &policy, &EffectError::new("refused"), 10), Next::Dead);
        assert_eq!((effect.attempts, effect.cut_offs, effect.last_error.as_deref()), (6, 3, Some("refused")));
    }

    #[test]
    fn an_effect_that_stops_every_process_running_it_is_dead_after_its_cut_offs() {
        let mut effect = effect();
        let policy = policy();
        let mut claims = 0;
        while claim(&mut effect, &policy, true, claims) == Next::Run {
            claims += 1;
            assert!(claims <= 10, "claimed again and again: {effect:?}");
        }
        assert_eq!((claims, effect.attempts, effect.cut_offs), (4, 4, 4));
        let why = effect.last_error.unwrap();
        assert!(why.starts_with("attempt 4 was cut off: the process running it stopped"), "{why}");
        assert!(why.ends_with("4 of its attempts were cut off, the most allowed: an effect whose attempts keep stopping the process that runs them is not tried again"), "{why}");
    }

    /// The invariant: whatever happens to its attempts, in any order, an effect is
    /// dead-lettered with its reason, never with `last_error: None`, and within the two
    /// bounds.
    #[test]
    fn a_dead_letter_always_carries_its_reason() {
        let policy = policy();
        let mut histories: Vec<Vec<Event>> = vec![Vec::new()];
        let mut dead = 0;
        while let Some(history) = histories.pop() {
            // An effect without a function is dead at its first claim: no history follows.
            for known in [true, false].into_iter().filter(|known| *known || history.is_empty()) {
                let mut effect = effect();
                let mut next = claim(&mut effect, &policy, known, 0);
                for event in &history {
                    assert_eq!(next, Next::Run, "{history:?}");
                    next = match event {
                        Event::Fails => match failed(&mut effect, &policy, &EffectError::new("no"), 1) {
                            Next::Wait => claim(&mut effect, &policy, known, 2),
                            other => other,
                        },
                        Event::CutOff => claim(&mut effect, &policy, known, 3),
                    };
                }
                if next == Next::Dead {
                    dead += 1;
                    assert!(effect.last_error.is_some(), "dead with no reason after {history:?}: {effect:?}");
                    assert!(effect.claimed_at_ms.is_none(), "{effect:?}");
                }
                assert!(effect.attempts <= policy.max_attempts + policy.max_cut_offs, "{history:?}: {effect:?}");
                if known && next == Next::Run {
                    for event in [Event::Fails, Event::CutOff] {
                        histories.push(history.iter().copied().chain([event]).collect());
                    }
                }
            }
        }
        assert!(dead > 20, "only {dead} histories ended in a dead letter");
    }

    #[test]
    fn a_record_out_of_attempts_with_no_error_is_dead_lettered_with_a_reason() {
        // As a claim cut off by a version that did not record cut-offs left it.
        let mut effect = PendingEffect { attempts: 3, ..effect() };
        assert_eq!(claim(&mut effect, &policy(), true, 0), Next::Dead);
        assert_eq!(
            effect.last_error.as_deref(),
            Some("out of attempts: 3 started (0 of them cut off), none of which recorded how it ended")
        );
    }
}
