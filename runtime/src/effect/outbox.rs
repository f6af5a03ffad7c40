//! [`Outbox`]: dispatching the effects commits recorded in an instance's record. The
//! engine's sweep hands it an instance whose lease it holds; each due attempt is claimed
//! under that lease first, run outside it, and its end committed under the lease again
//! (the [module docs](super) say why that makes an effect happen once across replicas
//! and crashes).
//!
//! It reaches the store through the store alone — lease, load, commit over the version
//! read, and the index of deadlines — with no history entry and no flow to refresh: an
//! effect's bookkeeping is no transition.

use std::sync::Arc;
use std::time::Duration;

use super::attempts::{self, Next};
use super::{EffectCall, EffectError, Effects};
use crate::calls_first::{CallsFirst, Lane};
use crate::error::{ToolError, store_failure};
use crate::store::{FlowLease, FlowStore, Hold, PendingEffect, Snapshot, Step, StoreKey, now_ms};
use crate::telemetry::{self, DeadLetterLog};

/// An attempt claimed, with the place it holds while it runs.
pub(crate) struct Claimed {
    effect: PendingEffect,
    slot: tokio::sync::OwnedSemaphorePermit,
}

/// How long recording an attempt's end waits for the instance's lease at a time.
const END_LEASE_TRY: Duration = Duration::from_millis(50);

/// What dispatching needs: the store, the functions and their policy, where dead letters
/// are remembered, and the gate background work passes.
#[derive(Clone)]
pub(crate) struct Outbox {
    pub(crate) store: Arc<dyn FlowStore>,
    pub(crate) effects: Arc<Effects>,
    pub(crate) dead_letters: Arc<DeadLetterLog>,
    /// Recording an attempt's end yields to the calls in flight.
    pub(crate) calls_first: CallsFirst,
}

/// What a claim took: the attempts to run, each with its place, and the effects out of
/// attempts, dead-lettered. Neither counts until the snapshot it was claimed in commits
/// ([`Outbox::committed`]); dropped, it gives the places back.
#[derive(Default)]
pub(crate) struct Claims {
    run: Vec<Claimed>,
    dead: Vec<PendingEffect>,
}

impl Claims {
    /// Whether the claim changed the snapshot, which must then commit.
    fn is_empty(&self) -> bool {
        self.run.is_empty() && self.dead.is_empty()
    }
}

impl Outbox {
    /// Claims the instance's due effects, under its `lease`, as many as there are places
    /// free for their attempts ([`AttemptSlots`](super::AttemptSlots); the rest stay due,
    /// unclaimed): each one's attempt counted and its next due time set to the attempt's
    /// deadline, committed before any runs — so a process that dies while dispatching
    /// leaves it to be tried again then, by whoever sweeps, which records the attempt it
    /// finds still claimed as cut off. One out of attempts or of cut-offs, or whose
    /// function this server lacks, is dead-lettered (`attempts.rs`). Returns the instance
    /// as committed, and the attempts to run, each with its place.
    pub(crate) async fn claim(
        &self,
        key: &StoreKey,
        before: Snapshot,
        lease: &FlowLease,
    ) -> Result<(Snapshot, Vec<Claimed>), ToolError> {
        let now = now_ms();
        if !before.effects.iter().any(|effect| effect.due_at_ms <= now) {
            return Ok((before, Vec::new()));
        }
        let mut next = before.next();
        let claims = self.claim_into(key, &mut next);
        if claims.is_empty() {
            // Nothing due, or every place taken: nothing to commit.
            return Ok((before, Vec::new()));
        }
        let after = self.commit(key, &before, next, lease).await?;
        Ok((after, self.committed(key, claims)))
    }

    /// Claims `next`'s due effects in `next` itself, as [`Outbox::claim`] does, for a
    /// commit that writes more (the move of a timer that recorded them): the caller
    /// commits `next` under the instance's lease, then hands the claims to
    /// [`Outbox::committed`].
    pub(crate) fn claim_into(&self, key: &StoreKey, next: &mut Snapshot) -> Claims {
        let now = now_ms();
        let mut claims = Claims::default();
        if !next.effects.iter().any(|effect| effect.due_at_ms <= now) {
            return claims;
        }
        let policy = self.effects.policy;
        next.effects.retain_mut(|effect| {
            if effect.due_at_ms > now {
                return true;
            }
            // No place free: it stays due, for a later sweep.
            let Some(slot) = self.effects.slots.try_take() else { return true };
            let cut_off = effect.claimed_at_ms.is_some();
            let next = attempts::claim(effect, &policy, self.effects.has(&effect.name), now);
            if cut_off {
                telemetry::record_effect(&effect.name, "cut_off");
                let why = effect.last_error.as_deref().unwrap_or_default();
                tracing::warn!(on = %key, effect = %effect.key, cut_offs = effect.cut_offs, why, "an effect's attempt was cut off");
            }
            match next {
                Next::Run => claims.run.push(Claimed { effect: effect.clone(), slot }),
                Next::Dead => claims.dead.push(effect.clone()),
                Next::Wait => {}
            }
            next != Next::Dead
        });
        next.dead_effects.extend(claims.dead.iter().cloned());
        claims
    }

    /// The claims made in a snapshot now committed: the dead letters logged, and the
    /// attempts to run.
    pub(crate) fn committed(&self, key: &StoreKey, claims: Claims) -> Vec<Claimed> {
        for effect in &claims.dead {
            self.dead_lettered(key, effect);
        }
        claims.run
    }

    /// Runs one claimed attempt outside the lease, then commits how it ended; its place is
    /// kept until then.
    pub(crate) fn dispatch(&self, key: StoreKey, Claimed { effect, slot }: Claimed) {
        let Some(function) = self.effects.functions.get(&effect.name).cloned() else { return };
        let instance = key.instance_parts().map(|(_, _, id)| id.to_string()).unwrap_or_default();
        let call = EffectCall {
            name: effect.name.clone(),
            key: effect.key.clone(),
            instance,
            attempt: effect.attempts,
            input: effect.input.clone(),
            states: self.effects.states.clone(),
        };
        let timeout = self.effects.policy.attempt_timeout;
        let outbox = self.clone();
        self.effects.attempts.spawn(async move {
            let ended = match tokio::time::timeout(timeout, function(call)).await {
                Ok(ended) => ended,
                Err(_) => Err(EffectError::new(format!("the attempt did not end within {} ms", timeout.as_millis()))),
            };
            if let Err(error) = outbox.ended(&key, &effect, ended).await {
                // Claimed, its end unrecorded: at the attempt's deadline a sweep records it as
                // cut off, and tries it again.
                tracing::warn!(on = %key, effect = %effect.key, %error, "cannot record how an effect's attempt ended");
            }
            drop(slot);
        });
    }

    /// Commits how an attempt of `effect` ended: done (it leaves the outbox), or failed
    /// (tried again after the backoff, or dead-lettered after the last attempt).
    async fn ended(
        &self,
        key: &StoreKey,
        effect: &PendingEffect,
        ended: Result<(), EffectError>,
    ) -> Result<(), ToolError> {
        let (_lane, lease, before) = self.leased_for_end(key, effect).await?;
        let Some(place) = before.effects.iter().position(|e| e.key == effect.key && e.attempts == effect.attempts)
        else {
            // This attempt outlived its deadline: a sweep recorded it as cut off meanwhile.
            return Ok(());
        };
        let mut next = before.next();
        let mut current = next.effects.remove(place);
        match ended {
            Ok(()) => {
                telemetry::record_effect(&current.name, "done");
                tracing::info!(on = %key, effect = %current.key, attempt = current.attempts, "effect dispatched");
            }
            Err(error) => {
                tracing::warn!(on = %key, effect = %current.key, attempt = current.attempts, %error, "an effect's attempt failed");
                telemetry::record_effect(&current.name, "failed");
                if attempts::failed(&mut current, &self.effects.policy, &error, now_ms()) == Next::Dead {
                    self.dead_lettered(key, &current);
                    next.dead_effects.push(current);
                } else {
                    next.effects.insert(place, current);
                }
            }
        }
        // The commit indexes when the instance is next due, if ever, with the record.
        self.commit(key, &before, next, &lease).await.map(drop)
    }

    /// The instance's lease and record, to record how an attempt of `effect` ended, with a
    /// lane of the calls-first gate (`crate::calls_first`) kept until the end is committed.
    /// Tried until the attempt's deadline (after it, a sweep records the attempt as cut
    /// off and tries it again): no client waits on it. Between tries the lane is given
    /// back, so that a call holding the lease keeps no background work waiting.
    async fn leased_for_end(
        &self,
        key: &StoreKey,
        effect: &PendingEffect,
    ) -> Result<(Lane, FlowLease, Snapshot), ToolError> {
        loop {
            let lane = self.calls_first.lane().await;
            if let Some(step) = crate::wait::within(END_LEASE_TRY, self.store.begin(key, Hold::Wait)).await {
                let (lease, before) = step.and_then(Step::leased).map_err(store_failure)?;
                return Ok((lane, lease, before));
            }
            if now_ms() >= effect.due_at_ms {
                return Err(ToolError::flow_busy("instance", END_LEASE_TRY.as_millis() as u64));
            }
        }
    }

    /// Commits `next` over `before` under the instance's `lease`.
    async fn commit(
        &self,
        key: &StoreKey,
        before: &Snapshot,
        mut next: Snapshot,
        lease: &FlowLease,
    ) -> Result<Snapshot, ToolError> {
        let started = telemetry::store_clock();
        let committed = self.store.commit(key, before.version, &next, Some(lease), None).await;
        telemetry::record_store("commit", started);
        next.version = committed.map_err(store_failure)?;
        Ok(next)
    }

    /// Logs and counts an effect that will not be tried again, and remembers its instance
    /// for the console's effects page.
    fn dead_lettered(&self, key: &StoreKey, effect: &PendingEffect) {
        self.dead_letters.record(key);
        telemetry::record_effect(&effect.name, "dead");
        tracing::error!(
            on = %key,
            effect = %effect.key,
            attempts = effect.attempts,
            error = effect.last_error.as_deref().unwrap_or("unknown"),
            "an effect was dead-lettered: it will not be tried again"
        );
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::store::MemoryStore;

    /// A call holds the instance for longer than a call's own lease wait (5 s): the
    /// attempt's end waits for it, and is recorded, before the attempt's deadline — not
    /// left for a sweep to record as cut off and run again.
    #[tokio::test(start_paused = true)]
    async fn an_attempts_end_waits_for_a_call_holding_the_instance_until_its_deadline() {
        let store: Arc<dyn FlowStore> = Arc::new(MemoryStore::new());
        let key = StoreKey::tenant_instance("t", "payment", "p-1");
        let outbox = Outbox {
            store: store.clone(),
            effects: Arc::default(),
            dead_letters: Arc::default(),
            calls_first: CallsFirst::default(),
        };
        let effect = PendingEffect {
            name: "release".into(),
            key: "p-1:release".into(),
            input: serde_json::Value::Null,
            attempts: 1,
            cut_offs: 0,
            claimed_at_ms: Some(now_ms()),
            due_at_ms: now_ms() + 60_000,
            last_error: None,
        };
        let (lease, empty) = store.begin(&key, Hold::Wait).await.and_then(Step::leased).unwrap();
        let mut claimed = empty.next();
        claimed.effects.push(effect.clone());
        let claimed = outbox.commit(&key, &empty, claimed, &lease).await.unwrap();
        assert_eq!(claimed.effects.len(), 1);

        let ending = tokio::spawn({
            let (outbox, key, effect) = (outbox.clone(), key.clone(), effect.clone());
            async move { outbox.ended(&key, &effect, Ok(())).await }
        });
        // The call holds the instance for 8 s.
        tokio::time::sleep(Duration::from_secs(8)).await;
        assert!(!ending.is_finished(), "the end waits for the lease");
        drop(lease);
        ending.await.unwrap().expect("the end is recorded once the call lets go");
        let after = store.load(&key).await.unwrap();
        assert!(after.effects.is_empty(), "the attempt's end left the outbox: {:?}", after.effects);
    }
}
