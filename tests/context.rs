//! An instance's data (`machine! { context: T }`) through a real client: committed with
//! the call, never by one that fails; updates without a transition hold the instance's
//! lease, so concurrent ones lose nothing; a context too large, or one that no longer
//! reads, is a clear error that changes nothing.

mod common;

use common::TestClient;
use common::clients::Lifecycle;
use serde_json::json;
use toolgate::prelude::*;
use toolgate::store::{FlowStore, Histories, MemoryStore, Snapshot, StoreKey};

toolgate::machine! {
    id: "tally",
    key: "tally_id",
    context: Tally,
    initial: "open",
    states: {
        open:   { on: { CLOSE: "closed" } },
        closed: { type: "final" },
    }
}

/// A tally's data.
#[derive(Debug, Default, Clone, Serialize, Deserialize, JsonSchema)]
struct Tally {
    count: u64,
    #[serde(default)]
    label: String,
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)] // names the instance, which toolgate reads
struct TallyRef {
    /// The tally.
    tally_id: String,
}

#[derive(Deserialize, JsonSchema)]
struct Labelled {
    /// The tally.
    #[allow(dead_code)] // names the instance, which toolgate reads
    tally_id: String,
    /// Its new label.
    label: String,
    /// Fail after setting it.
    fail: bool,
}

#[derive(Serialize, JsonSchema)]
struct TallyView {
    count: u64,
    label: String,
}

impl From<&Tally> for TallyView {
    fn from(tally: &Tally) -> Self {
        Self { count: tally.count, label: tally.label.clone() }
    }
}

/// Count one more on an open tally. Changes no state.
#[action(domain = "tally", bind_state = "open")]
async fn tally_count(_input: TallyRef, mut tally: InstanceMut<Tally>) -> Result<TallyView, ToolError> {
    let mut next = tally.get().cloned().unwrap_or_default();
    // A read, then a pause, then the write: without the instance's lease, concurrent
    // counts would overwrite one another.
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    next.count += 1;
    let view = TallyView::from(&next);
    tally.set(next)?;
    Ok(view)
}

/// Label an open tally, and fail afterwards if asked to. Changes no state.
#[action(domain = "tally", bind_state = "open")]
async fn tally_label(input: Labelled, mut tally: InstanceMut<Tally>) -> Result<TallyView, ToolError> {
    let mut next = tally.get().cloned().unwrap_or_default();
    next.label = input.label;
    let view = TallyView::from(&next);
    tally.set(next)?;
    if input.fail {
        return Err(ToolError::failed("LABEL_REJECTED", "asked to fail after setting the label"));
    }
    Ok(view)
}

/// Close a tally, keeping its count and labelling it `closed`.
#[action(domain = "tally", bind_state = "open", transition = "CLOSE")]
async fn tally_close(_input: TallyRef, mut tally: InstanceMut<Tally>) -> Result<TallyView, ToolError> {
    let mut closed = tally.get().cloned().unwrap_or_default();
    closed.label = "closed".into();
    let view = TallyView::from(&closed);
    tally.set(closed)?;
    Ok(view)
}

/// Read a tally. Changes nothing.
#[action(domain = "tally")]
async fn tally_view(_input: TallyRef, tally: Instance<Tally>) -> Result<TallyView, ToolError> {
    Ok(tally.get().map(TallyView::from).unwrap_or(TallyView { count: 0, label: String::new() }))
}

fn tally(id: &str) -> serde_json::Value {
    json!({ "domain": "tally", "tally_id": id })
}

async fn serve(store: MemoryStore, max_context_bytes: usize) -> TestClient {
    let server =
        Server::from_registry("context").store(store).max_context_bytes(max_context_bytes).build().expect("a server");
    let url = common::serve_in_process(server).await;
    TestClient::http_as(&url, Lifecycle::Sessionless, None).await
}

#[tokio::test]
async fn concurrent_updates_without_a_transition_lose_nothing() {
    let store = MemoryStore::new();
    let client = serve(store.clone(), 1024).await;
    let counts = (0..16).map(|_| client.ok("tally_count", tally("T-1")));
    futures::future::join_all(counts).await;
    let view = client.ok("tally_view", tally("T-1")).await;
    assert_eq!(view["count"], 16, "{view}");
    let closed = client.ok("tally_close", tally("T-1")).await;
    assert_eq!((closed["state"].as_str(), closed["count"].as_u64()), (Some("closed"), Some(16)));
    // The context is in the store, with the state, in one record.
    let record = store.load(&StoreKey::instance("tally", "T-1")).await.unwrap();
    assert_eq!(record.state_of("tally", "?"), "closed");
    assert_eq!(record.context.as_ref().and_then(|c| c["count"].as_u64()), Some(16));
    assert_eq!(record.context.as_ref().and_then(|c| c["label"].as_str()), Some("closed"));
    // The history says the transition changed the data, and keeps none of it.
    let history = store.history(&StoreKey::instance("tally", "T-1")).await.unwrap();
    assert_eq!(history.len(), 1, "updates without a transition keep no history: {history:?}");
    assert!(history[0].context_changed, "{history:?}");
}

#[tokio::test]
async fn a_call_that_fails_commits_nothing_it_set() {
    let client = serve(MemoryStore::new(), 1024).await;
    client.ok("tally_label", json!({ "domain": "tally", "tally_id": "T-2", "label": "kept", "fail": false })).await;
    let failed = client
        .refused("tally_label", json!({ "domain": "tally", "tally_id": "T-2", "label": "lost", "fail": true }))
        .await;
    assert_eq!(failed["code"], "LABEL_REJECTED", "{failed}");
    assert_eq!(client.ok("tally_view", tally("T-2")).await["label"], "kept");
}

#[tokio::test]
async fn a_context_past_the_bound_is_refused_and_changes_nothing() {
    let client = serve(MemoryStore::new(), 64).await;
    client.ok("tally_label", json!({ "domain": "tally", "tally_id": "T-3", "label": "short", "fail": false })).await;
    let long = "x".repeat(100);
    let refused = client
        .refused("tally_label", json!({ "domain": "tally", "tally_id": "T-3", "label": long, "fail": false }))
        .await;
    assert_eq!((refused["code"].as_str(), refused["max_bytes"].as_u64()), (Some("CONTEXT_TOO_LARGE"), Some(64)));
    assert_eq!(refused["instance"], "T-3", "{refused}");
    assert_eq!(client.ok("tally_view", tally("T-3")).await["label"], "short");
}

#[tokio::test]
async fn a_context_that_no_longer_reads_is_a_clear_error_never_a_panic() {
    let store = MemoryStore::new();
    // What an older version of the server committed: `count` was a string then.
    let key = StoreKey::instance("tally", "T-4");
    let old =
        Snapshot { context: Some(json!({ "count": "seven" })), ..Snapshot::default().with_state("tally", "open") };
    store.commit(&key, 0, &old, None, None).await.unwrap();
    let client = serve(store.clone(), 1024).await;
    for tool in ["tally_view", "tally_count"] {
        let refused = client.refused(tool, tally("T-4")).await;
        assert_eq!(refused["code"], "CONTEXT_UNREADABLE", "{tool}: {refused}");
        assert_eq!((refused["instance"].as_str(), refused["context_type"].as_str()), (Some("T-4"), Some("Tally")));
        let message = refused["message"].as_str().unwrap();
        assert!(!message.contains("invalid type"), "serde's text reached the caller: {message}");
    }
    assert_eq!(store.load(&key).await.unwrap().context, old.context, "a refused call changed the record");
}

/// A machine whose history keeps the data (`history_with_data`): each entry holds the data
/// its transition committed. Without it (above), an entry says only that the data changed.
#[tokio::test]
async fn a_history_that_keeps_the_data_holds_what_each_transition_committed() {
    let store = MemoryStore::new();
    let server = Server::from_registry("context").store(store.clone()).history_with_data("tally").build().unwrap();
    let client = TestClient::http_as(&common::serve_in_process(server).await, Lifecycle::Sessionless, None).await;
    client.ok("tally_count", tally("T-5")).await;
    client.ok("tally_close", tally("T-5")).await;
    let history = store.history(&StoreKey::instance("tally", "T-5")).await.unwrap();
    assert_eq!(history.len(), 1, "{history:?}");
    assert_eq!(history[0].context, Some(json!({ "count": 1, "label": "closed" })), "{history:?}");
    // Only a machine with data can keep it.
    let problem = Server::from_registry("context").history_with_data("nowhere").build().unwrap_err().to_string();
    assert!(problem.contains("machine `nowhere`") && problem.contains("machines with data: tally"), "{problem}");
}
