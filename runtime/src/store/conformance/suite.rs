//! The suite's entry points: [`check`], [`check_live_counts`], [`check_instance_counts`].

use std::time::Duration;

use super::fixtures::key;
use super::history::{
    a_failed_commit_appends_no_history, a_store_without_history_says_so,
    concurrent_transitions_from_one_version_append_one_entry, histories_are_independent_and_go_with_their_record,
    history_keeps_the_entries_young_enough, history_keeps_the_last_entries_retention_allows,
    history_reads_back_in_commit_order, transitions_on_many_records_at_once_each_keep_their_own,
};
use super::instances::{an_instance_context_commits_with_its_state, due_instances_are_named_soonest_first};
use super::leases::{
    a_held_lease_commits_over_the_version_it_read, a_lease_taken_over_fences_its_holder,
    a_lease_taken_with_its_record_sees_every_commit_before_it, a_lease_tried_is_taken_only_when_free,
    leases_are_exclusive_per_key, removing_never_breaks_a_lease,
};
use super::records::{
    a_challenge_is_spent_once, absent_records_load_as_version_zero,
    compare_and_set_applies_only_over_the_expected_version, concurrent_writers_from_one_version_have_one_winner,
    expired_records_load_as_absent, records_are_independent, records_keep_their_payload,
    removed_records_load_as_absent, versions_never_go_back,
};
use super::windows::{concurrent_spenders_share_one_window, rate_limit_windows_admit_n_per_period};
#[cfg(doc)]
use crate::store::{Capabilities, Counts};
use crate::store::{FlowStore, LiveRecords, Snapshot, StoreError, StoreKey, now_ms};

/// Runs the conformance suite against `store`, panicking on the first violation.
///
/// It uses keys whose ids start with `conformance-`; run it on a store without such keys.
pub async fn check<S: FlowStore + Clone>(store: &S) {
    absent_records_load_as_version_zero(store).await;
    compare_and_set_applies_only_over_the_expected_version(store).await;
    records_are_independent(store).await;
    leases_are_exclusive_per_key(store).await;
    removed_records_load_as_absent(store).await;
    removing_never_breaks_a_lease(store).await;
    versions_never_go_back(store).await;
    expired_records_load_as_absent(store).await;
    concurrent_writers_from_one_version_have_one_winner(store).await;
    records_keep_their_payload(store).await;
    a_challenge_is_spent_once(store).await;
    a_held_lease_commits_over_the_version_it_read(store).await;
    a_lease_taken_with_its_record_sees_every_commit_before_it(store).await;
    a_lease_tried_is_taken_only_when_free(store).await;
    a_lease_taken_over_fences_its_holder(store).await;
    rate_limit_windows_admit_n_per_period(store).await;
    concurrent_spenders_share_one_window(store).await;
    an_instance_context_commits_with_its_state(store).await;
    due_instances_are_named_soonest_first(store).await;
    if !a_store_without_history_says_so(store).await {
        return;
    }
    history_reads_back_in_commit_order(store).await;
    a_failed_commit_appends_no_history(store).await;
    concurrent_transitions_from_one_version_append_one_entry(store).await;
    transitions_on_many_records_at_once_each_keep_their_own(store).await;
    history_keeps_the_last_entries_retention_allows(store).await;
    history_keeps_the_entries_young_enough(store).await;
    histories_are_independent_and_go_with_their_record(store).await;
}

/// Checks [`Counts::live`], if the store counts ([`Capabilities::counts`]; one that does
/// not passes untested: assert that yours counts, if it should): flows and instances by kind, expired
/// records not at all, removed ones no more. It compares counts before and after
/// its own writes, so nothing else may write to the store while it runs.
pub async fn check_live_counts<S: FlowStore>(store: &S) {
    let Some(counter) = store.capabilities().counts else { return };
    let before = counter.live().await.expect("count");
    let instance = |kind: &str| StoreKey::instance("conformance-count", kind);
    // Long enough for the writes and the first count on a loaded machine (50 ms was not).
    let expires_at_ms = now_ms() + 1_500;
    let written = [
        (key("count-flow"), None),
        (StoreKey::handle("conformance-count-expiring"), Some(expires_at_ms)),
        (instance("a"), None),
        (StoreKey::tenant_instance("conformance-tenant", "conformance-count", "b"), None),
        (StoreKey::challenge("conformance-count"), None),
    ];
    for (record, expires_at_ms) in &written {
        let snapshot = Snapshot { expires_at_ms: *expires_at_ms, ..Snapshot::default().with_state("m", "x") };
        store.commit(record, 0, &snapshot, None, None).await.unwrap();
    }
    let counted = |live: LiveRecords| (live.flows - before.flows, live.instances - before.instances);
    assert_eq!(counted(counter.live().await.unwrap()), (2, 2), "two flows and two instances (not the challenge)");
    tokio::time::sleep(Duration::from_millis(expires_at_ms.saturating_sub(now_ms()) + 50)).await;
    assert_eq!(counted(counter.live().await.unwrap()), (1, 2), "an expired flow is not live");
    for (record, _) in &written {
        store.remove(record).await.unwrap();
    }
    assert_eq!(counted(counter.live().await.unwrap()), (0, 0), "removed records are not live");
}

/// Checks [`Counts::instances`], if the store counts ([`Capabilities::counts`]; one that
/// does not passes untested): instances by state, timer and task, per machine and scope, moved by
/// each commit and removal, untouched by a refused one, and never another scope's or
/// machine's. It compares counts before and after its own writes, so nothing else may
/// write its machines (`conformance-counted`, `conformance-owned`) while it runs.
pub async fn check_instance_counts<S: FlowStore>(store: &S) {
    const MACHINE: &str = "conformance-counted";
    const OWNED: &str = "conformance-owned";
    let Some(counter) = store.capabilities().counts else { return };
    let start = counter.instances("acme", MACHINE).await.expect("count");
    let counts = || async {
        let now = counter.instances("acme", MACHINE).await.unwrap();
        let states = ["", "draft", "sent"]
            .map(|state| now.states.get(state).copied().unwrap_or(0) - start.states.get(state).copied().unwrap_or(0));
        (states, now.timers - start.timers, now.tasks - start.tasks)
    };
    let key = |id: &str| StoreKey::tenant_instance("acme", MACHINE, id);
    let draft = Snapshot::default().with_state(MACHINE, "draft");
    let a = store.commit(&key("a"), 0, &draft, None, None).await.unwrap();
    let timed = Snapshot { due_at_ms: Some(now_ms() + 3_600_000), ..draft.clone() };
    let b = store.commit(&key("b"), 0, &timed, None, None).await.unwrap();
    let held = Snapshot { task: Some("conformance-task".into()), ..Snapshot::default() };
    store.commit(&key("c"), 0, &held, None, None).await.unwrap();
    assert_eq!(counts().await, ([1, 2, 0], 1, 1), "one in the initial state (held by a task), two drafts (one timed)");

    let sent = Snapshot { version: a, ..draft.with_state(MACHINE, "sent") };
    store.commit(&key("a"), a, &sent, None, None).await.unwrap();
    assert_eq!(counts().await, ([1, 1, 1], 1, 1), "a transition moves one instance from draft to sent");
    let refused = store.commit(&key("b"), b + 1_000_000_000, &sent, None, None).await;
    assert!(matches!(refused, Err(StoreError::Conflict { .. })), "{refused:?}");
    assert_eq!(counts().await, ([1, 1, 1], 1, 1), "a refused commit moves nothing");
    store.commit(&key("b"), b, &draft, None, None).await.unwrap();
    assert_eq!(counts().await, ([1, 1, 1], 0, 1), "a timer no longer pending is no longer counted");

    // Other scopes, machines and kinds of record count apart, or not at all.
    store.commit(&StoreKey::tenant_instance("globex", MACHINE, "a"), 0, &draft, None, None).await.unwrap();
    store.commit(&StoreKey::instance(MACHINE, "a"), 0, &draft, None, None).await.unwrap();
    store.commit(&StoreKey::connection("conformance-counted"), 0, &draft, None, None).await.unwrap();
    let owned = Snapshot { owner: Some("digest".into()), ..Snapshot::default().with_state(OWNED, "quoted") };
    store.commit(&StoreKey::tenant_instance("acme", OWNED, "q"), 0, &owned, None, None).await.unwrap();
    let loaded = store.load(&StoreKey::tenant_instance("acme", OWNED, "q")).await.unwrap();
    assert_eq!(loaded.owner.as_deref(), Some("digest"), "an owned instance's owner is kept with it");
    assert_eq!(counts().await, ([1, 1, 1], 0, 1), "another tenant's, everyone's and a flow are not acme's");
    let everyone = counter.instances("", MACHINE).await.unwrap();
    assert!(everyone.states.get("draft").is_some_and(|n| *n >= 1), "{everyone:?}");
    let quotes = counter.instances("acme", OWNED).await.unwrap();
    assert!(quotes.states.get("quoted").is_some_and(|n| *n >= 1), "an owned instance counts in its owner's tenant");

    for removed in [key("a"), key("b"), key("c")] {
        store.remove(&removed).await.unwrap();
    }
    assert_eq!(counts().await, ([0, 0, 0], 0, 0), "removed instances are counted no more");
    for removed in [
        StoreKey::tenant_instance("globex", MACHINE, "a"),
        StoreKey::instance(MACHINE, "a"),
        StoreKey::connection("conformance-counted"),
        StoreKey::tenant_instance("acme", OWNED, "q"),
    ] {
        store.remove(&removed).await.unwrap();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Capabilities, FlowLease, HistoryEntry, HistoryRetention, Hold, MemoryStore, Step};

    /// A store of someone else's that keeps no history: the core, and no capabilities.
    #[derive(Clone, Default)]
    struct WithoutHistory(MemoryStore);

    #[async_trait::async_trait]
    impl FlowStore for WithoutHistory {
        async fn load(&self, key: &StoreKey) -> Result<Snapshot, StoreError> {
            self.0.load(key).await
        }

        async fn begin(&self, key: &StoreKey, hold: Hold) -> Result<Step, StoreError> {
            self.0.begin(key, hold).await
        }

        async fn commit(
            &self,
            key: &StoreKey,
            expected: u64,
            next: &Snapshot,
            lease: Option<&FlowLease>,
            _entry: Option<(&HistoryEntry, HistoryRetention)>,
        ) -> Result<u64, StoreError> {
            self.0.commit(key, expected, next, lease, None).await
        }

        async fn remove(&self, key: &StoreKey) -> Result<(), StoreError> {
            self.0.remove(key).await
        }

        async fn due(&self, now_ms: u64, limit: usize) -> Result<Vec<StoreKey>, StoreError> {
            self.0.due(now_ms, limit).await
        }

        async fn due_changed(&self, key: &StoreKey, due_at_ms: Option<u64>) -> Result<(), StoreError> {
            self.0.due_changed(key, due_at_ms).await
        }

        fn capabilities(&self) -> Capabilities<'_> {
            Capabilities::default()
        }
    }

    #[tokio::test]
    async fn a_store_that_keeps_no_history_says_so_and_passes() {
        let store = WithoutHistory::default();
        check(&store).await;
        assert!(store.capabilities().history.is_none());
    }
}
