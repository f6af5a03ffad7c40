//! When a right code is spent: in the commit of the record its challenge is bound to, or,
//! for a call that holds no lease of that record, on the challenge itself before the
//! handler runs.

use super::stored::{Challenge, gone};
use crate::error::ToolError;
use crate::store::{FlowStore, Snapshot, SpentChallenge, StoreError, StoreKey, now_ms};

/// A right code, checked at step 8 and not yet spent: the gate spends it in the commit of
/// the record the challenge is bound to ([`Accepted::subject`]) when the call holds that
/// record's lease, or else at once, on the challenge, before the handler runs ([`place`]).
#[derive(Debug, Clone)]
pub(crate) struct Accepted {
    pub(crate) challenge_id: String,
    /// When the challenge expires (ms since the Unix epoch).
    pub(crate) expires_at_ms: u64,
    /// The store key of the instance or flow the challenge was issued for (empty: none).
    pub(crate) subject: String,
}

impl Accepted {
    /// The entry a commit that consumes the challenge writes in its record.
    pub(crate) fn spent(&self) -> SpentChallenge {
        SpentChallenge { id: self.challenge_id.clone(), expires_at_ms: self.expires_at_ms }
    }
}

/// The record whose commit spends a confirming call's code (the challenge's entry,
/// [`Snapshot::spent_challenges`]): the one the challenge is bound to, whose lease the call
/// holds.
#[derive(Debug, Clone)]
pub(crate) enum Spend {
    /// The instance the call names.
    Instance(SpentChallenge),
    /// The call's flow.
    Flow(SpentChallenge),
}

/// Where the `accepted` code of a call to `tool` is spent, once the call holds its
/// leases (`leased`: the instance's key and the flow's, where it holds them).
///
/// In the commit of the record its challenge is bound to, when the call holds that
/// record's lease: the code is consumed in the same compare-and-set as the transition
/// it confirms, on every store. A call that never commits leaves it live; of two calls
/// presenting it, the second reads under the lease (`record`) that the first's commit
/// spent it, and is refused before its handler runs. A call that holds no such lease (a
/// creation under a minted key, a call that writes no record) has no commit to spend
/// it in: it is spent on the challenge now, before the handler runs (fail closed: a
/// failure after that costs the code).
pub(crate) async fn place(
    store: &dyn FlowStore,
    tool: &str,
    accepted: &Accepted,
    leased: [Option<&StoreKey>; 2],
    record: &Snapshot,
) -> Result<Option<Spend>, ToolError> {
    let bound = |key: Option<&StoreKey>| key.is_some_and(|key| key.as_str() == accepted.subject);
    let spend = match leased {
        [instance, _] if bound(instance) => Spend::Instance(accepted.spent()),
        [_, flow] if bound(flow) => Spend::Flow(accepted.spent()),
        _ => {
            spend_now(store, tool, accepted).await?;
            return Ok(None);
        }
    };
    if record.spent_challenge(&accepted.challenge_id, now_ms()) {
        return Err(gone(tool));
    }
    Ok(Some(spend))
}

/// Spends an accepted challenge now, on its own record (compare-and-set): for a call
/// that holds no lease of the record the challenge is bound to, and so has no commit
/// to spend it in (a creation under a minted key, a call that writes no record). Of two
/// calls presenting the same code, only one spends it; the other is refused as used.
async fn spend_now(store: &dyn FlowStore, tool: &str, accepted: &Accepted) -> Result<(), ToolError> {
    let key = StoreKey::challenge(&accepted.challenge_id);
    for _ in 0..8 {
        let snapshot = store.load(&key).await.map_err(unavailable)?;
        let Some(mut challenge) = snapshot
            .record
            .as_ref()
            .filter(|_| snapshot.version > 0 && !snapshot.is_expired(now_ms()))
            .and_then(|record| serde_json::from_value::<Challenge>(record.clone()).ok())
            .filter(|challenge| !challenge.spent)
        else {
            return Err(gone(tool));
        };
        challenge.spent = true;
        let record = serde_json::to_value(&challenge).expect("a challenge serializes");
        let written = Snapshot { record: Some(record), ..snapshot.next() };
        match store.commit(&key, snapshot.version, &written, None, None).await {
            Ok(_) => return Ok(()),
            // A concurrent wrong code, or a concurrent spend: judged again.
            Err(StoreError::Conflict { .. }) => continue,
            Err(error) => return Err(unavailable(error)),
        }
    }
    Err(gone(tool))
}

fn unavailable(error: StoreError) -> ToolError {
    ToolError::store_unavailable(error, 1_000)
}
