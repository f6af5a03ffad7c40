//! [`Snapshot`]: one committed record — a flow's or an instance's.

use std::collections::BTreeMap;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::auth::Principal;

/// A committed record: the state of each machine it holds, the active domain (flows
/// only), and the version compare-and-set uses.
///
/// A flow holds its conversation machines and its active domain; a keyed machine's
/// instance holds that one machine's state.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Snapshot {
    /// Machine id → current state. A machine absent here is in its initial state.
    pub states: BTreeMap<String, String>,
    /// The active intent domain, if one was selected.
    pub active_domain: Option<String>,
    /// Assigned by the store on every commit; `0` means "never committed" (or removed).
    pub version: u64,
    /// Milliseconds since the Unix epoch of the last commit.
    pub updated_at_ms: u64,
    /// Milliseconds since the Unix epoch after which the record is gone (flows named by a
    /// state handle expire; `None` never does).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at_ms: Option<u64>,
    /// A keyed instance's data (`machine! { context: Payment, … }`), as JSON, committed
    /// with its state in the same compare-and-set; `None` until a call sets it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<serde_json::Value>,
    /// When time next moves the instance (the first `after` of its state), in milliseconds
    /// since the Unix epoch; `None` when its state has no `after`. Set when the instance
    /// enters a state, so the deadline is part of the instance: every read applies what is
    /// due, on any replica and after any restart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub due_at_ms: Option<u64>,
    /// When time moved the instance into its state (an `after` transition), in
    /// milliseconds since the Unix epoch; `None` when a call moved it there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timed_at_ms: Option<u64>,
    /// The MCP task holding the instance (its id), while one runs a call that changes it:
    /// set when the task starts, under the instance's lease, and cleared by the commit
    /// that ends it (or by its end without one). Other calls that would change the
    /// instance meanwhile are refused with `TASK_RUNNING`; reads still answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    /// What a record that is not a flow or an instance holds (a confirmation challenge, an
    /// idempotency record), as JSON; `None` for flows and instances.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub record: Option<serde_json::Value>,
    /// The effects the instance's commits recorded and that are not dispatched yet (its
    /// outbox): committed with the transition that caused them, dispatched after it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub effects: Vec<PendingEffect>,
    /// The effects that failed every attempt (dead letters), kept for an operator to see.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dead_effects: Vec<PendingEffect>,
    /// The tenant of a principal-owned machine's instance, as toolgate wrote it before such
    /// instances were keyed by their tenant (their key named the owner). Read only by the
    /// stores' migrations, which rewrite those records to tenant keys and clear it; `None`
    /// on every record written since.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// Who owns a principal-owned machine's instance: the digest of the principal whose
    /// call created it, written by that commit and never changed. The gate judges it on
    /// every call (another principal is told what a key never minted gets); `None` for
    /// every other record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// The confirmation challenges whose codes this record's commits consumed, each kept
    /// until the challenge itself expires: a code is spent in the same compare-and-set as
    /// the transition it confirmed (on every store, under the record's lease), so a call
    /// that never commits leaves it live, and no second call can commit with it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub spent_challenges: Vec<SpentChallenge>,
}

/// A confirmation challenge a record's commit consumed ([`Snapshot::spent_challenges`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpentChallenge {
    /// The challenge's id.
    pub id: String,
    /// When the challenge expires (ms since the Unix epoch): past it, the challenge
    /// confirms nothing anyway, and the entry is dropped at the record's next spend.
    pub expires_at_ms: u64,
}

/// An effect a commit recorded: what to run, with what, under which idempotency key, and
/// how its attempts went.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingEffect {
    /// The effect's registered name (`release_hold`).
    pub name: String,
    /// Its idempotency key, the same on every attempt: the instance, the commit that
    /// recorded it and its place there (`instance:6:travel:Q-1/<call id>/release_hold#0`).
    pub key: String,
    /// Its input, as the commit recorded it.
    pub input: serde_json::Value,
    /// How many attempts were started.
    #[serde(default)]
    pub attempts: u32,
    /// How many of those were cut off: claimed, and not ended by their deadline, because
    /// the process running them stopped (or lost the store) first. They are bounded apart
    /// from the attempts that ended (`EffectPolicy::max_cut_offs`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cut_offs: u32,
    /// When the attempt under way was claimed, in milliseconds since the Unix epoch;
    /// `None` between attempts. An effect found due while still claimed was cut off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claimed_at_ms: Option<u64>,
    /// When it is due (its next attempt; while claimed, the attempt's deadline), in
    /// milliseconds since the Unix epoch.
    pub due_at_ms: u64,
    /// Why the last attempt failed, or was cut off; on a dead letter, why it is one (never
    /// `None` there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
}

impl PendingEffect {
    /// The effect `name` with `input` under `key`, due at `due_at_ms`, not yet attempted.
    pub(crate) fn new(name: String, key: String, input: serde_json::Value, due_at_ms: u64) -> Self {
        Self { name, key, input, attempts: 0, cut_offs: 0, claimed_at_ms: None, due_at_ms, last_error: None }
    }
}

fn is_zero(count: &u32) -> bool {
    *count == 0
}

impl Snapshot {
    /// The state of `machine`, or `initial` when the record never moved it.
    pub fn state_of<'a>(&'a self, machine: &str, initial: &'a str) -> &'a str {
        self.states.get(machine).map(String::as_str).unwrap_or(initial)
    }

    /// The snapshot to change and commit after this one (stamped now; the store assigns
    /// its version on commit).
    pub fn next(&self) -> Self {
        Self { updated_at_ms: now_ms(), ..self.clone() }
    }

    /// The snapshot that follows this one with `machine` in `state`.
    pub fn with_state(&self, machine: &str, state: &str) -> Self {
        let mut next = self.next();
        next.states.insert(machine.to_string(), state.to_string());
        next
    }

    /// When the store's sweep should next look at the record: its deadline
    /// ([`Snapshot::due_at_ms`]) or its first effect's, whichever is first.
    pub fn wake_at_ms(&self) -> Option<u64> {
        let effects = self.effects.iter().map(|effect| effect.due_at_ms).min();
        match (self.due_at_ms, effects) {
            (Some(due), Some(effect)) => Some(due.min(effect)),
            (due, effect) => due.or(effect),
        }
    }

    /// Whether the record, an instance of a principal-owned machine (`owned`), exists and
    /// is not `principal`'s: what `principal` must be told of it is what a key never
    /// minted gets. Always the same work (the owner compared whatever the record holds).
    pub(crate) fn hidden_from(&self, owned: bool, principal: Option<&Principal>) -> bool {
        // Whether the machine is owned says nothing of the record: no digest for the rest.
        if !owned {
            return false;
        }
        let owns = principal.is_some_and(|principal| principal.owns(self.owner.as_deref()));
        (self.version != 0) & !owns
    }

    /// Whether a commit of this record consumed the challenge `id` (and it has not expired).
    pub(crate) fn spent_challenge(&self, id: &str, now_ms: u64) -> bool {
        self.spent_challenges.iter().any(|spent| spent.id == id && spent.expires_at_ms > now_ms)
    }

    /// Records `spent` as consumed by this commit, dropping the entries of challenges that
    /// have expired (they confirm nothing any more): the list holds only live challenges.
    pub(crate) fn spend_challenge(&mut self, spent: &SpentChallenge, now_ms: u64) {
        self.spent_challenges.retain(|kept| kept.expires_at_ms > now_ms && kept.id != spent.id);
        self.spent_challenges.push(spent.clone());
    }

    /// Whether the record has expired at `now_ms`.
    pub fn is_expired(&self, now_ms: u64) -> bool {
        self.expires_at_ms.is_some_and(|at| at <= now_ms)
    }
}

/// Milliseconds since the Unix epoch.
pub(crate) fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_keeps_only_the_spent_challenges_that_still_live() {
        let spent = |id: &str, expires_at_ms| SpentChallenge { id: id.into(), expires_at_ms };
        let mut record = Snapshot::default();
        record.spend_challenge(&spent("a", 1_000), 0);
        record.spend_challenge(&spent("b", 5_000), 0);
        assert!(record.spent_challenge("a", 999) && !record.spent_challenge("a", 1_000));
        // A later spend drops what expired; a challenge never spent here is not listed.
        record.spend_challenge(&spent("c", 9_000), 2_000);
        assert_eq!(record.spent_challenges, vec![spent("b", 5_000), spent("c", 9_000)]);
        assert!(!record.spent_challenge("z", 0));
        // Written only when there is one: records without any read and write as before.
        let text = serde_json::to_string(&Snapshot::default()).unwrap();
        assert!(!text.contains("spent_challenges"), "{text}");
    }

    #[test]
    fn an_owned_instance_is_hidden_from_all_but_its_owner() {
        let (alice, carol) = (Principal::new("alice").with_tenant("a"), Principal::new("carol").with_tenant("a"));
        let record = Snapshot { version: 3, owner: Some(alice.owner_id()), ..Snapshot::default() };
        assert!(!record.hidden_from(true, Some(&alice)));
        assert!(record.hidden_from(true, Some(&carol)));
        assert!(record.hidden_from(true, None));
        // Alice of another tenant is another principal.
        assert!(record.hidden_from(true, Some(&Principal::new("alice").with_tenant("b"))));
        // A record never created hides nothing (it is what every principal gets), and a
        // machine that is not principal-owned has no owner to judge.
        assert!(!Snapshot::default().hidden_from(true, Some(&carol)));
        assert!(!record.hidden_from(false, Some(&carol)));
        // One without an owner (a machine made owned after its instances were) is no one's.
        assert!(Snapshot { version: 1, ..Snapshot::default() }.hidden_from(true, Some(&alice)));
    }
}
