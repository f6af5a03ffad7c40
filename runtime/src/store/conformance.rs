//! The behaviour every [`FlowStore`] must show; each backend's tests run [`check`].
//!
//! Enabled by the `conformance` feature, for backends kept outside this crate.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use super::{FlowLease, FlowStore, HistoryEntry, HistoryRetention, Snapshot, StoreError, StoreKey, Transition, now_ms};

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

/// Checks [`FlowStore::count_live`], if the store counts (one that answers `None` passes
/// untested: assert that yours counts, if it should): flows and instances by kind, expired
/// records not at all, removed ones no more. It compares counts before and after
/// its own writes, so nothing else may write to the store while it runs.
pub async fn check_live_counts<S: FlowStore>(store: &S) {
    let Some(before) = store.count_live().await.expect("count") else { return };
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
        store.compare_and_set(record, 0, &snapshot).await.unwrap();
    }
    let counted = |live: Option<super::LiveRecords>| {
        let live = live.expect("a store that counted counts again");
        (live.flows - before.flows, live.instances - before.instances)
    };
    assert_eq!(counted(store.count_live().await.unwrap()), (2, 2), "two flows and two instances (not the challenge)");
    tokio::time::sleep(Duration::from_millis(expires_at_ms.saturating_sub(now_ms()) + 50)).await;
    assert_eq!(counted(store.count_live().await.unwrap()), (1, 2), "an expired flow is not live");
    for (record, _) in &written {
        store.remove(record).await.unwrap();
    }
    assert_eq!(counted(store.count_live().await.unwrap()), (0, 0), "removed records are not live");
}

/// Checks [`FlowStore::count_instances`], if the store counts (one that answers `None`
/// passes untested): instances by state, timer and task, per machine and scope, moved by
/// each commit and removal, untouched by a refused one, and never another scope's or
/// machine's. It compares counts before and after its own writes, so nothing else may
/// write its machines (`conformance-counted`, `conformance-owned`) while it runs.
pub async fn check_instance_counts<S: FlowStore>(store: &S) {
    const MACHINE: &str = "conformance-counted";
    const OWNED: &str = "conformance-owned";
    let Some(start) = store.count_instances("acme", MACHINE).await.expect("count") else { return };
    let counts = || async {
        let now = store.count_instances("acme", MACHINE).await.unwrap().expect("a store that counted counts again");
        let states = ["", "draft", "sent"]
            .map(|state| now.states.get(state).copied().unwrap_or(0) - start.states.get(state).copied().unwrap_or(0));
        (states, now.timers - start.timers, now.tasks - start.tasks)
    };
    let key = |id: &str| StoreKey::tenant_instance("acme", MACHINE, id);
    let draft = Snapshot::default().with_state(MACHINE, "draft");
    let a = store.compare_and_set(&key("a"), 0, &draft).await.unwrap();
    let timed = Snapshot { due_at_ms: Some(now_ms() + 3_600_000), ..draft.clone() };
    let b = store.compare_and_set(&key("b"), 0, &timed).await.unwrap();
    let held = Snapshot { task: Some("conformance-task".into()), ..Snapshot::default() };
    store.compare_and_set(&key("c"), 0, &held).await.unwrap();
    assert_eq!(counts().await, ([1, 2, 0], 1, 1), "one in the initial state (held by a task), two drafts (one timed)");

    let sent = Snapshot { version: a, ..draft.with_state(MACHINE, "sent") };
    store.compare_and_set(&key("a"), a, &sent).await.unwrap();
    assert_eq!(counts().await, ([1, 1, 1], 1, 1), "a transition moves one instance from draft to sent");
    let refused = store.compare_and_set(&key("b"), b + 1_000_000_000, &sent).await;
    assert!(matches!(refused, Err(StoreError::Conflict { .. })), "{refused:?}");
    assert_eq!(counts().await, ([1, 1, 1], 1, 1), "a refused commit moves nothing");
    store.compare_and_set(&key("b"), b, &draft).await.unwrap();
    assert_eq!(counts().await, ([1, 1, 1], 0, 1), "a timer no longer pending is no longer counted");

    // Other scopes, machines and kinds of record count apart, or not at all.
    store.compare_and_set(&StoreKey::tenant_instance("globex", MACHINE, "a"), 0, &draft).await.unwrap();
    store.compare_and_set(&StoreKey::instance(MACHINE, "a"), 0, &draft).await.unwrap();
    store.compare_and_set(&StoreKey::connection("conformance-counted"), 0, &draft).await.unwrap();
    let owned = Snapshot { tenant: Some("acme".into()), ..Snapshot::default().with_state(OWNED, "quoted") };
    store.compare_and_set(&StoreKey::owned_instance("digest", OWNED, "q"), 0, &owned).await.unwrap();
    assert_eq!(counts().await, ([1, 1, 1], 0, 1), "another tenant's, everyone's and a flow are not acme's");
    let everyone = store.count_instances("", MACHINE).await.unwrap().unwrap();
    assert!(everyone.states.get("draft").is_some_and(|n| *n >= 1), "{everyone:?}");
    let quotes = store.count_instances("acme", OWNED).await.unwrap().unwrap();
    assert!(quotes.states.get("quoted").is_some_and(|n| *n >= 1), "an owned instance counts in its owner's tenant");

    for removed in [key("a"), key("b"), key("c")] {
        store.remove(&removed).await.unwrap();
    }
    assert_eq!(counts().await, ([0, 0, 0], 0, 0), "removed instances are counted no more");
    for removed in [
        StoreKey::tenant_instance("globex", MACHINE, "a"),
        StoreKey::instance(MACHINE, "a"),
        StoreKey::connection("conformance-counted"),
        StoreKey::owned_instance("digest", OWNED, "q"),
    ] {
        store.remove(&removed).await.unwrap();
    }
}

fn key(name: &str) -> StoreKey {
    StoreKey::connection(&format!("conformance-{name}"))
}

const SHORT: Duration = Duration::from_millis(100);

async fn absent_records_load_as_version_zero<S: FlowStore>(store: &S) {
    let snapshot = store.load(&key("absent")).await.expect("load");
    assert_eq!(snapshot, Snapshot::default());
}

async fn compare_and_set_applies_only_over_the_expected_version<S: FlowStore>(store: &S) {
    let record = key("cas");
    let first = Snapshot::default().with_state("invoice", "review");
    let v1 = store.compare_and_set(&record, 0, &first).await.expect("first commit");
    assert!(v1 > 0, "a committed record has a version above 0");
    let loaded = store.load(&record).await.unwrap();
    assert_eq!((loaded.version, &loaded.states), (v1, &first.states));

    let stale = Snapshot::default().with_state("invoice", "draft");
    assert_eq!(store.compare_and_set(&record, 0, &stale).await, Err(StoreError::Conflict { expected: 0, found: v1 }));
    assert_eq!(store.load(&record).await.unwrap().states, first.states, "a failed CAS must write nothing");

    let v2 = store.compare_and_set(&record, v1, &first.with_state("invoice", "approved")).await.expect("second");
    assert!(v2 > v1, "versions grow: {v1} then {v2}");
    assert_eq!(store.load(&record).await.unwrap().version, v2);
}

async fn records_are_independent<S: FlowStore>(store: &S) {
    let (a, b) = (key("independent-a"), key("independent-b"));
    store.compare_and_set(&a, 0, &Snapshot::default().with_state("m", "x")).await.unwrap();
    assert_eq!(store.load(&b).await.unwrap(), Snapshot::default());
    // Holding one key's lease does not block another key's.
    let _held = store.lease(&a).await.unwrap();
    let _other = tokio::time::timeout(Duration::from_secs(5), store.lease(&b))
        .await
        .expect("a lease on another key must not wait")
        .unwrap();
}

async fn leases_are_exclusive_per_key<S: FlowStore + Clone>(store: &S) {
    let record = key("lease");
    let inside = Arc::new(AtomicUsize::new(0));
    let max_inside = Arc::new(AtomicUsize::new(0));
    let tasks: Vec<_> = (0..16)
        .map(|_| {
            let (store, record, inside, max_inside) =
                (store.clone(), record.clone(), inside.clone(), max_inside.clone());
            tokio::spawn(async move {
                let _lease = store.lease(&record).await.unwrap();
                let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                max_inside.fetch_max(now, Ordering::SeqCst);
                tokio::task::yield_now().await;
                inside.fetch_sub(1, Ordering::SeqCst);
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    assert_eq!(max_inside.load(Ordering::SeqCst), 1, "two holders of one key's lease at once");
}

async fn removed_records_load_as_absent<S: FlowStore>(store: &S) {
    let record = key("removed");
    store.compare_and_set(&record, 0, &Snapshot::default().with_state("m", "x")).await.unwrap();
    store.remove(&record).await.unwrap();
    assert_eq!(store.load(&record).await.unwrap(), Snapshot::default());
    store.remove(&record).await.expect("removing an absent record is not an error");
}

async fn removing_never_breaks_a_lease<S: FlowStore + Clone>(store: &S) {
    let record = key("remove-while-leased");
    store.compare_and_set(&record, 0, &Snapshot::default().with_state("m", "x")).await.unwrap();
    let held = store.lease(&record).await.unwrap();
    // Someone is already waiting when the record is removed...
    let waiter = {
        let (store, record) = (store.clone(), record.clone());
        tokio::spawn(async move { store.lease(&record).await.map(drop) })
    };
    tokio::time::sleep(SHORT).await;
    store.remove(&record).await.unwrap();
    // ...and neither that waiter nor a newcomer gets the lease while it is held.
    assert!(tokio::time::timeout(SHORT, store.lease(&record)).await.is_err(), "a newcomer took a held lease");
    assert!(!waiter.is_finished(), "a waiter took a held lease after the record was removed");
    drop(held);
    tokio::time::timeout(Duration::from_secs(5), waiter).await.expect("the waiter gets the lease").unwrap().unwrap();
}

async fn versions_never_go_back<S: FlowStore>(store: &S) {
    let record = key("versions");
    let v1 = store.compare_and_set(&record, 0, &Snapshot::default().with_state("m", "a")).await.unwrap();
    let v2 = store.compare_and_set(&record, v1, &Snapshot::default().with_state("m", "b")).await.unwrap();
    store.remove(&record).await.unwrap();
    let v3 = store.compare_and_set(&record, 0, &Snapshot::default().with_state("m", "c")).await.unwrap();
    assert!(v3 > v2, "a record written again after removal got version {v3}, not above {v2}");
    // A writer that read the record before the removal cannot commit over its successor.
    let stale = store.compare_and_set(&record, v2, &Snapshot::default().with_state("m", "stale")).await;
    assert_eq!(stale, Err(StoreError::Conflict { expected: v2, found: v3 }));
    assert_eq!(store.load(&record).await.unwrap().state_of("m", "?"), "c");
}

async fn expired_records_load_as_absent<S: FlowStore>(store: &S) {
    let record = key("expiring");
    let expiring = Snapshot { expires_at_ms: Some(now_ms() + 50), ..Snapshot::default().with_state("m", "x") };
    let v1 = store.compare_and_set(&record, 0, &expiring).await.unwrap();
    assert_eq!(store.load(&record).await.unwrap().version, v1);
    tokio::time::sleep(SHORT).await;
    assert_eq!(store.load(&record).await.unwrap(), Snapshot::default(), "an expired record still loads");
    let v2 = store.compare_and_set(&record, 0, &Snapshot::default()).await.expect("an expired record is absent");
    assert!(v2 > v1);
}

/// Many tasks commit over the same version at once (two confirmations of one challenge,
/// two transitions that lost their leases): exactly one wins, the rest conflict, and the
/// record is the winner's.
async fn concurrent_writers_from_one_version_have_one_winner<S: FlowStore + Clone>(store: &S) {
    let record = key("concurrent-writers");
    let base = store.compare_and_set(&record, 0, &Snapshot::default().with_state("m", "open")).await.unwrap();
    let writers: Vec<_> = (0..16)
        .map(|writer| {
            let (store, record) = (store.clone(), record.clone());
            tokio::spawn(async move {
                let next = Snapshot::default().with_state("m", &format!("writer-{writer}"));
                store.compare_and_set(&record, base, &next).await.map(|version| (writer, version))
            })
        })
        .collect();
    let mut winners = Vec::new();
    for writer in writers {
        match writer.await.unwrap() {
            Ok(won) => winners.push(won),
            Err(StoreError::Conflict { expected, .. }) => assert_eq!(expected, base),
            Err(other) => panic!("a writer failed: {other}"),
        }
    }
    assert_eq!(winners.len(), 1, "one commit over version {base}, not {winners:?}");
    let (writer, version) = winners[0];
    let loaded = store.load(&record).await.unwrap();
    assert_eq!((loaded.version, loaded.state_of("m", "?")), (version, format!("writer-{writer}").as_str()));
}

/// What a challenge or an idempotency record keeps comes back as it was written.
async fn records_keep_their_payload<S: FlowStore>(store: &S) {
    let record = key("payload");
    let payload =
        serde_json::json!({ "digest": "ab12", "attempts_left": 4, "spent": false, "nested": { "list": [1, "two"] } });
    let snapshot = Snapshot { record: Some(payload.clone()), ..Snapshot::default() };
    store.compare_and_set(&record, 0, &snapshot).await.unwrap();
    assert_eq!(store.load(&record).await.unwrap().record, Some(payload));
}

/// Many confirmations of one challenge at once, each reading it unspent and writing it
/// spent: exactly one succeeds, so a one-time code confirms one call.
async fn a_challenge_is_spent_once<S: FlowStore + Clone>(store: &S) {
    let record = key("challenge");
    let unspent = Snapshot { record: Some(serde_json::json!({ "spent": false })), ..Snapshot::default() };
    store.compare_and_set(&record, 0, &unspent).await.unwrap();
    let confirmations: Vec<_> = (0..16)
        .map(|_| {
            let (store, record) = (store.clone(), record.clone());
            tokio::spawn(async move {
                let read = store.load(&record).await.unwrap();
                if read.record != Some(serde_json::json!({ "spent": false })) {
                    return false;
                }
                let spent = Snapshot { record: Some(serde_json::json!({ "spent": true })), ..read.next() };
                store.compare_and_set(&record, read.version, &spent).await.is_ok()
            })
        })
        .collect();
    let mut confirmed = 0;
    for confirmation in confirmations {
        confirmed += usize::from(confirmation.await.unwrap());
    }
    assert_eq!(confirmed, 1, "one challenge confirmed {confirmed} calls");
}

/// A lease's holder commits through [`FlowStore::commit_leased`], over the version it read
/// and no other.
async fn a_held_lease_commits_over_the_version_it_read<S: FlowStore>(store: &S) {
    let record = key("leased-commit");
    let lease = store.lease(&record).await.unwrap();
    let v1 = store.commit_leased(&record, 0, &Snapshot::default().with_state("m", "a"), &lease).await.unwrap();
    let stale = store.commit_leased(&record, 0, &Snapshot::default().with_state("m", "b"), &lease).await;
    assert_eq!(stale, Err(StoreError::Conflict { expected: 0, found: v1 }));
    drop(lease);
    assert_eq!(store.load(&record).await.unwrap().state_of("m", "?"), "a");
}

/// [`FlowStore::lease_and_load`]: each of many holders in turn reads what the one before it
/// committed under the lease (a counter incremented 16 times by 16 holders ends at 16, and
/// no commit finds another version than the one its holder read).
async fn a_lease_taken_with_its_record_sees_every_commit_before_it<S: FlowStore + Clone>(store: &S) {
    let record = key("lease-and-load");
    let tasks: Vec<_> = (0..16)
        .map(|_| {
            let (store, record) = (store.clone(), record.clone());
            tokio::spawn(async move {
                let (lease, read) = store.lease_and_load(&record).await.unwrap();
                let count = read.record.as_ref().and_then(|r| r["n"].as_u64()).unwrap_or(0);
                let next = Snapshot { record: Some(serde_json::json!({ "n": count + 1 })), ..read.next() };
                store.commit_leased(&record, read.version, &next, &lease).await.expect("the version its holder read");
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    let counted = store.load(&record).await.unwrap().record.and_then(|r| r["n"].as_u64());
    assert_eq!(counted, Some(16), "a holder read a record older than the last commit");
}

/// [`FlowStore::load_and_try_lease`]: a held lease is not taken, and not waited for (the
/// record as committed comes back at once); one taken is exclusive, with a read that sees
/// every commit before it (16 callers in turn, each trying first and else waiting, count to
/// 16). A store that never takes one early passes with every caller waiting.
async fn a_lease_tried_is_taken_only_when_free<S: FlowStore + Clone>(store: &S) {
    let record = key("try-lease");
    let v1 = store.compare_and_set(&record, 0, &Snapshot::default().with_state("m", "a")).await.unwrap();
    let held = store.lease(&record).await.unwrap();
    let tried = tokio::time::timeout(Duration::from_secs(5), store.load_and_try_lease(&record))
        .await
        .expect("a held lease is tried, not waited for");
    let (read, lease) = tried.unwrap();
    assert!(lease.is_none(), "a held lease was taken again");
    assert_eq!(read.version, v1, "the record as committed");
    drop(held);
    let tasks: Vec<_> = (0..16)
        .map(|_| {
            let (store, record) = (store.clone(), record.clone());
            tokio::spawn(async move {
                let (lease, read) = match store.load_and_try_lease(&record).await.unwrap() {
                    (read, Some(lease)) => (lease, read),
                    (_, None) => store.lease_and_load(&record).await.unwrap(),
                };
                let count = read.record.as_ref().and_then(|r| r["n"].as_u64()).unwrap_or(0);
                let next = Snapshot { record: Some(serde_json::json!({ "n": count + 1 })), ..read.next() };
                store.commit_leased(&record, read.version, &next, &lease).await.expect("the version its holder read");
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    let counted = store.load(&record).await.unwrap().record.and_then(|r| r["n"].as_u64());
    assert_eq!(counted, Some(16), "a lease tried was not exclusive, or its read was stale");
}

/// [`FlowStore::take_over_lease`] on a shared store: a held lease is taken at once, and
/// its holder's commits are refused from then on ([`StoreError::LeaseLost`]), the new
/// holder's accepted. (A store whose leases live in this process waits, as for a lease:
/// nothing to check here.)
async fn a_lease_taken_over_fences_its_holder<S: FlowStore>(store: &S) {
    if !store.is_shared() {
        return;
    }
    let record = key("take-over");
    let v1 = store.compare_and_set(&record, 0, &Snapshot::default().with_state("m", "a")).await.unwrap();
    let paused = store.lease(&record).await.unwrap();
    let taken = tokio::time::timeout(Duration::from_secs(5), store.take_over_lease(&record))
        .await
        .expect("a held lease is taken over at once")
        .unwrap();
    let resumed = store.commit_leased(&record, v1, &Snapshot::default().with_state("m", "b"), &paused).await;
    assert_eq!(resumed, Err(StoreError::LeaseLost), "the holder whose lease was taken over committed");
    store.commit_leased(&record, v1, &Snapshot::default().with_state("m", "c"), &taken).await.unwrap();
    drop(paused);
    drop(taken);
    assert_eq!(store.load(&record).await.unwrap().state_of("m", "?"), "c");
}

/// A store that keeps rate-limit windows ([`FlowStore::spend_window`] answers `Some`)
/// admits at most N calls in every period, says when the next is admitted, gives a
/// refunded call's place back, and keeps windows apart. A store that keeps none is
/// skipped: each process then counts its own calls.
async fn rate_limit_windows_admit_n_per_period<S: FlowStore>(store: &S) {
    let (window, other) = ("conformance-window", "conformance-window-other");
    let per_ms = 400;
    let Some(first) = store.spend_window(window, 3, per_ms).await.unwrap() else { return };
    let first = first.expect("the first call of a window is admitted");
    for _ in 0..2 {
        store.spend_window(window, 3, per_ms).await.unwrap().unwrap().expect("within the limit");
    }
    let wait = store.spend_window(window, 3, per_ms).await.unwrap().unwrap().expect_err("the fourth of 3 per period");
    assert!((1..=per_ms).contains(&wait), "retry after {wait} ms for a {per_ms} ms window");
    store.spend_window(other, 3, per_ms).await.unwrap().unwrap().expect("another window has its own allowance");
    store.refund_window(window, &first).await.unwrap();
    store.spend_window(window, 3, per_ms).await.unwrap().unwrap().expect("a refunded call frees its place");
    store.spend_window(window, 3, per_ms).await.unwrap().unwrap().expect_err("and only one place");
    tokio::time::sleep(Duration::from_millis(per_ms + 50)).await;
    store.spend_window(window, 3, per_ms).await.unwrap().unwrap().expect("the calls left the window");
}

/// Spenders from many tasks at once on one window: exactly N are admitted.
async fn concurrent_spenders_share_one_window<S: FlowStore + Clone>(store: &S) {
    let window = "conformance-window-concurrent";
    if store.spend_window("conformance-window-probe", 1, 1).await.unwrap().is_none() {
        return;
    }
    let spenders: Vec<_> = (0..16)
        .map(|_| {
            let store = store.clone();
            tokio::spawn(async move { store.spend_window(window, 5, 60_000).await.unwrap().unwrap().is_ok() })
        })
        .collect();
    let mut admitted = 0;
    for spender in spenders {
        admitted += usize::from(spender.await.unwrap());
    }
    assert_eq!(admitted, 5, "5 calls a minute admitted {admitted}");
}

/// A history entry of the transition `from` → `to` by `principal`, committed at `at_ms`.
fn entry_of(principal: &str, from: &str, to: &str, call_id: &str, at_ms: u64) -> HistoryEntry {
    let principal = crate::auth::Principal::new(principal).with_tenant("conformance");
    let transition = Transition {
        principal: Some(&principal),
        from,
        to,
        event: "GO",
        tool: "conformance_go",
        call_id: call_id.to_string(),
        note: Some(format!("note of {call_id}")),
        context_changed: call_id.ends_with('1'),
    };
    HistoryEntry::new(transition, at_ms)
}

/// Commits `to` over `version` with its history entry (under `lease` if given).
async fn transition<S: FlowStore>(
    store: &S,
    record: &StoreKey,
    version: u64,
    entry: &HistoryEntry,
    lease: Option<&FlowLease>,
    retention: HistoryRetention,
) -> Result<u64, StoreError> {
    let next = Snapshot::default().with_state("m", &entry.to);
    store.commit_with_history(record, version, &next, lease, entry, retention).await
}

fn call_ids(entries: &[HistoryEntry]) -> Vec<&str> {
    entries.iter().map(|e| e.call_id.as_str()).collect()
}

/// An instance's context is committed with its state, in one compare-and-set (with its
/// history entry, under a lease or not): it reads back as written, a commit over a stale
/// version writes neither, and a commit that leaves it out forgets it.
async fn an_instance_context_commits_with_its_state<S: FlowStore>(store: &S) {
    let record = key("context");
    let context =
        serde_json::json!({ "amount": { "currency": "EUR", "minor": 500_000 }, "captured": null, "note": "ü" });
    let first = Snapshot { context: Some(context.clone()), ..Snapshot::default().with_state("m", "created") };
    let v1 = store.compare_and_set(&record, 0, &first).await.unwrap();
    let read = store.load(&record).await.unwrap();
    assert_eq!((read.context.as_ref(), read.state_of("m", "?")), (Some(&context), "created"));

    let changed = serde_json::json!({ "amount": { "currency": "EUR", "minor": 500_000 }, "captured": 1 });
    let stale = Snapshot { context: Some(serde_json::json!({ "stale": true })), ..read.with_state("m", "voided") };
    assert!(store.compare_and_set(&record, v1 + 1_000, &stale).await.is_err());
    let lease = store.lease(&record).await.unwrap();
    let next = Snapshot { context: Some(changed.clone()), ..read.with_state("m", "captured") };
    let entry = entry_of("alice", "created", "captured", "context-1", now_ms());
    let v2 = store.commit_with_history(&record, v1, &next, Some(&lease), &entry, Default::default()).await.unwrap();
    drop(lease);
    let read = store.load(&record).await.unwrap();
    assert_eq!((read.context.as_ref(), read.state_of("m", "?"), read.version), (Some(&changed), "captured", v2));

    store.compare_and_set(&record, v2, &Snapshot { context: None, ..read.next() }).await.unwrap();
    assert_eq!(store.load(&record).await.unwrap().context, None, "a commit without a context keeps none");
}

/// A store that keeps no history says so twice alike — [`FlowStore::keeps_history`] is
/// `false` and [`FlowStore::history`] answers `None` — and still commits transitions;
/// the history checks are then skipped. Whether the rest of the suite runs.
/// [`FlowStore::due`]: instances whose deadline has passed, soonest first, none whose
/// deadline is ahead or gone (once the store is told, for one that indexes deadlines), and
/// none removed. A store that keeps no index names none at all.
async fn due_instances_are_named_soonest_first<S: FlowStore>(store: &S) {
    let now = now_ms();
    let at = |id: &str| StoreKey::instance("conformance-due", id);
    let with_due =
        |due: Option<u64>| Snapshot { due_at_ms: due, ..Snapshot::default().with_state("conformance-due", "quoted") };
    for (id, due) in
        [("late", Some(now - 1_000)), ("later", Some(now - 500)), ("ahead", Some(now + 60_000)), ("none", None)]
    {
        store.compare_and_set(&at(id), 0, &with_due(due)).await.unwrap();
    }
    let named = |keys: Vec<StoreKey>| -> Vec<String> {
        keys.into_iter()
            .filter_map(|k| {
                k.instance_parts().filter(|(_, m, _)| *m == "conformance-due").map(|(_, _, id)| id.to_string())
            })
            .collect()
    };
    let due = named(store.due(now, 10_000).await.unwrap());
    if due.is_empty() {
        return; // The store keeps no index of deadlines: reads apply what is due.
    }
    assert_eq!(due, ["late", "later"], "due instances, soonest first");
    // Moved on: its deadline gone (a call took it out of its timed state).
    let version = store.load(&at("late")).await.unwrap().version;
    store.compare_and_set(&at("late"), version, &with_due(None)).await.unwrap();
    store.due_changed(&at("late"), None).await.unwrap();
    store.remove(&at("later")).await.unwrap();
    assert_eq!(named(store.due(now, 10_000).await.unwrap()), Vec::<String>::new());
    assert_eq!(named(store.due(now + 120_000, 10_000).await.unwrap()), ["ahead"]);
    for id in ["late", "ahead", "none"] {
        store.remove(&at(id)).await.unwrap();
    }
}

async fn a_store_without_history_says_so<S: FlowStore>(store: &S) -> bool {
    let record = key("history-kept");
    let committed =
        transition(store, &record, 0, &entry_of("a", "x", "y", "kept-1", now_ms()), None, Default::default())
            .await
            .expect("a transition commits whether or not its history is kept");
    assert_eq!(store.load(&record).await.unwrap().version, committed);
    let history = store.history(&record).await.expect("history");
    assert_eq!(history.is_some(), store.keeps_history(), "keeps_history and history disagree: {history:?}");
    store.keeps_history()
}

/// Entries read back oldest first, exactly as appended, whether the commit held a lease
/// or not; a commit without an entry (a flow's, a challenge's) appends none.
async fn history_reads_back_in_commit_order<S: FlowStore>(store: &S) {
    let record = key("history-order");
    assert_eq!(store.history(&record).await.unwrap(), Some(Vec::new()), "a record never committed has no history");
    let now = now_ms();
    let first = entry_of("alice", "draft", "review", "order-1", now);
    let second = entry_of("carol", "review", "approved", "order-2", now);
    let third = entry_of("bob", "approved", "review", "order-3", now + 1);
    let v1 = transition(store, &record, 0, &first, None, Default::default()).await.unwrap();
    let lease = store.lease(&record).await.unwrap();
    let v2 = transition(store, &record, v1, &second, Some(&lease), Default::default()).await.unwrap();
    drop(lease);
    let v3 = store.compare_and_set(&record, v2, &Snapshot::default().with_state("m", "approved")).await.unwrap();
    transition(store, &record, v3, &third, None, Default::default()).await.unwrap();
    let history = store.history(&record).await.unwrap().unwrap();
    assert_eq!(history, vec![first, second, third], "entries come back as written, in commit order");
    assert_eq!(store.load(&record).await.unwrap().state_of("m", "?"), "review");
}

/// A transition whose commit fails — over a stale version — leaves the history as it was.
async fn a_failed_commit_appends_no_history<S: FlowStore>(store: &S) {
    let record = key("history-atomic");
    let v1 =
        transition(store, &record, 0, &entry_of("alice", "a", "b", "atomic-1", now_ms()), None, Default::default())
            .await
            .unwrap();
    let stale =
        transition(store, &record, 0, &entry_of("bob", "a", "c", "atomic-stale", now_ms()), None, Default::default())
            .await;
    assert_eq!(stale, Err(StoreError::Conflict { expected: 0, found: v1 }));
    let lease = store.lease(&record).await.unwrap();
    let stale = entry_of("bob", "a", "c", "atomic-stale-leased", now_ms());
    assert!(transition(store, &record, v1 + 1_000, &stale, Some(&lease), Default::default()).await.is_err());
    drop(lease);
    let history = store.history(&record).await.unwrap().unwrap();
    assert_eq!(call_ids(&history), ["atomic-1"], "a failed commit appended an entry");
    assert_eq!(store.load(&record).await.unwrap().state_of("m", "?"), "b");
}

/// Many transitions from one version at once: one commits, and its entry is the only one
/// appended — no entry without its transition.
async fn concurrent_transitions_from_one_version_append_one_entry<S: FlowStore + Clone>(store: &S) {
    let record = key("history-concurrent");
    let base =
        transition(store, &record, 0, &entry_of("alice", "a", "open", "base", now_ms()), None, Default::default())
            .await
            .unwrap();
    let writers: Vec<_> = (0..16)
        .map(|writer| {
            let (store, record) = (store.clone(), record.clone());
            tokio::spawn(async move {
                let call_id = format!("writer-{writer}");
                let entry = entry_of("bob", "open", &call_id, &call_id, now_ms());
                transition(&store, &record, base, &entry, None, Default::default()).await.ok().map(|_| call_id)
            })
        })
        .collect();
    let mut winners = Vec::new();
    for writer in writers {
        winners.extend(writer.await.unwrap());
    }
    assert_eq!(winners.len(), 1, "one transition over version {base}, not {winners:?}");
    let history = store.history(&record).await.unwrap().unwrap();
    assert_eq!(call_ids(&history), ["base", winners[0].as_str()]);
    assert_eq!(store.load(&record).await.unwrap().state_of("m", "?"), winners[0]);
}

/// Many records moved at once — as a store that commits the calls of a moment together
/// (one statement, one transaction for many records) sees them — each in three
/// transitions, a stale writer beside each: every record ends at its own third version
/// with its own last two entries (the retention), and every stale writer is refused.
async fn transitions_on_many_records_at_once_each_keep_their_own<S: FlowStore + Clone>(store: &S) {
    const RECORDS: usize = 32;
    const STALE_AHEAD: u64 = 1_000_000_000;
    let records: Vec<StoreKey> = (0..RECORDS).map(|n| key(&format!("many-at-once-{n}"))).collect();
    let mut versions = vec![0; RECORDS];
    for step in 0..3 {
        let writers: Vec<_> = records
            .iter()
            .zip(&versions)
            .map(|(record, &version)| {
                let (store, record) = (store.clone(), record.clone());
                tokio::spawn(async move {
                    let call_id = format!("{}-step-{step}", record.as_str());
                    let entry = entry_of("alice", "x", &call_id, &call_id, now_ms());
                    let stale = entry_of("mallory", "x", "stale", "stale", now_ms());
                    let (written, refused) = tokio::join!(
                        transition(&store, &record, version, &entry, None, HistoryRetention::last(2)),
                        // A version the record never holds here: a store whose versions come
                        // from one counter for every record (SQLite) could reach version + 7
                        // with the other records' writes, so a near one is not stale.
                        transition(&store, &record, version + STALE_AHEAD, &stale, None, HistoryRetention::last(2)),
                    );
                    assert!(matches!(refused, Err(StoreError::Conflict { .. })), "{refused:?}");
                    written.unwrap()
                })
            })
            .collect();
        for (version, writer) in versions.iter_mut().zip(writers) {
            *version = writer.await.unwrap();
        }
    }
    for (record, version) in records.iter().zip(&versions) {
        let loaded = store.load(record).await.unwrap();
        let last = format!("{}-step-2", record.as_str());
        assert_eq!((loaded.version, loaded.state_of("m", "?")), (*version, last.as_str()));
        let history = store.history(record).await.unwrap().unwrap();
        let kept = [format!("{}-step-1", record.as_str()), last];
        assert_eq!(call_ids(&history), kept.iter().map(String::as_str).collect::<Vec<_>>());
    }
}

/// Retention by count keeps the newest entries; `last(0)` keeps none.
async fn history_keeps_the_last_entries_retention_allows<S: FlowStore>(store: &S) {
    let record = key("history-count");
    let mut version = 0;
    for n in 1..=5 {
        let entry = entry_of("alice", "a", "b", &format!("count-{n}"), now_ms());
        version = transition(store, &record, version, &entry, None, HistoryRetention::last(3)).await.unwrap();
    }
    let history = store.history(&record).await.unwrap().unwrap();
    assert_eq!(call_ids(&history), ["count-3", "count-4", "count-5"], "the last 3 of 5");
    let entry = entry_of("alice", "b", "c", "count-6", now_ms());
    version = transition(store, &record, version, &entry, None, HistoryRetention::last(4)).await.unwrap();
    assert_eq!(call_ids(&store.history(&record).await.unwrap().unwrap()), ["count-3", "count-4", "count-5", "count-6"]);
    let entry = entry_of("alice", "c", "d", "count-7", now_ms());
    transition(store, &record, version, &entry, None, HistoryRetention::last(0)).await.unwrap();
    assert_eq!(store.history(&record).await.unwrap(), Some(Vec::new()), "last(0) keeps nothing");
    assert_eq!(store.load(&record).await.unwrap().state_of("m", "?"), "d", "the transition committed all the same");
}

/// Retention by age drops the entries older than the age at the new entry's time, and
/// with a count too, either bound drops an entry.
async fn history_keeps_the_entries_young_enough<S: FlowStore>(store: &S) {
    let record = key("history-age");
    let now = now_ms();
    let hour = 3_600_000;
    let mut version = 0;
    for (n, at) in [(1, now - 3 * hour), (2, now - 2 * hour), (3, now - hour / 2)] {
        let entry = entry_of("alice", "a", "b", &format!("age-{n}"), at);
        version = transition(store, &record, version, &entry, None, Default::default()).await.unwrap();
    }
    let within = HistoryRetention::within(Duration::from_millis(hour));
    version =
        transition(store, &record, version, &entry_of("alice", "b", "c", "age-4", now), None, within).await.unwrap();
    assert_eq!(call_ids(&store.history(&record).await.unwrap().unwrap()), ["age-3", "age-4"], "the last hour's");
    let both = HistoryRetention::within(Duration::from_millis(hour)).and_last(1);
    transition(store, &record, version, &entry_of("alice", "c", "d", "age-5", now + 1), None, both).await.unwrap();
    assert_eq!(call_ids(&store.history(&record).await.unwrap().unwrap()), ["age-5"]);
}

/// Each record has its own history; removing a record forgets it, and so does a record's
/// expiry.
async fn histories_are_independent_and_go_with_their_record<S: FlowStore>(store: &S) {
    let (a, b) = (key("history-a"), key("history-b"));
    transition(store, &a, 0, &entry_of("alice", "x", "y", "a-1", now_ms()), None, Default::default()).await.unwrap();
    transition(store, &b, 0, &entry_of("bob", "x", "z", "b-1", now_ms()), None, Default::default()).await.unwrap();
    assert_eq!(call_ids(&store.history(&a).await.unwrap().unwrap()), ["a-1"]);
    assert_eq!(call_ids(&store.history(&b).await.unwrap().unwrap()), ["b-1"]);
    store.remove(&a).await.unwrap();
    assert_eq!(store.history(&a).await.unwrap(), Some(Vec::new()), "a removed record's history is gone");
    transition(store, &a, 0, &entry_of("carol", "x", "y", "a-2", now_ms()), None, Default::default()).await.unwrap();
    assert_eq!(call_ids(&store.history(&a).await.unwrap().unwrap()), ["a-2"], "and stays gone when it returns");
    assert_eq!(call_ids(&store.history(&b).await.unwrap().unwrap()), ["b-1"]);

    let expiring = key("history-expiring");
    let next = Snapshot { expires_at_ms: Some(now_ms() + 50), ..Snapshot::default().with_state("m", "y") };
    let first = entry_of("alice", "x", "y", "expiring-1", now_ms());
    store.commit_with_history(&expiring, 0, &next, None, &first, Default::default()).await.unwrap();
    assert_eq!(call_ids(&store.history(&expiring).await.unwrap().unwrap()), ["expiring-1"]);
    tokio::time::sleep(SHORT).await;
    assert_eq!(store.history(&expiring).await.unwrap(), Some(Vec::new()), "an expired record's history is gone");
    let again = entry_of("alice", "x", "y", "expiring-2", now_ms());
    store.commit_with_history(&expiring, 0, &Snapshot::default(), None, &again, Default::default()).await.unwrap();
    assert_eq!(call_ids(&store.history(&expiring).await.unwrap().unwrap()), ["expiring-2"]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::MemoryStore;

    /// A store of someone else's, written before histories: only the required methods.
    #[derive(Clone, Default)]
    struct WithoutHistory(MemoryStore);

    #[async_trait::async_trait]
    impl FlowStore for WithoutHistory {
        async fn load(&self, key: &StoreKey) -> Result<Snapshot, StoreError> {
            self.0.load(key).await
        }

        async fn compare_and_set(&self, key: &StoreKey, expected: u64, next: &Snapshot) -> Result<u64, StoreError> {
            self.0.compare_and_set(key, expected, next).await
        }

        async fn lease(&self, key: &StoreKey) -> Result<FlowLease, StoreError> {
            self.0.lease(key).await
        }

        async fn remove(&self, key: &StoreKey) -> Result<(), StoreError> {
            self.0.remove(key).await
        }
    }

    #[tokio::test]
    async fn a_store_that_keeps_no_history_says_so_and_passes() {
        let store = WithoutHistory::default();
        check(&store).await;
        assert!(!store.keeps_history());
        assert_eq!(store.history(&key("history-order")).await.unwrap(), None);
    }
}
