//! Effects through a real client: recorded by a handler in the commit of its transition,
//! dispatched after it with one idempotency key per effect, retried with backoff until
//! they succeed, dead-lettered after the last attempt, and never caused by a call that
//! failed.

mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::TestClient;
use common::clients::Lifecycle;
use common::stores::{OnCommit, Watched};
use serde_json::json;
use toolgate::effect::{EffectCall, EffectError, EffectPolicy};
use toolgate::prelude::*;
use toolgate::store::{FlowStore, MemoryStore, Snapshot, StoreKey};

toolgate::machine! {
    id: "parcel",
    key: "parcel_id",
    initial: "packed",
    states: {
        packed:  { on: { SHIP: "shipped" } },
        shipped: { type: "final" },
    }
}

toolgate::machine! {
    id: "hold",
    key: "hold_id",
    mint: "H-{n}",
    initial: "held",
    states: {
        held:      { after: { "PT1S": "lapsed" }, exit: "hold_left", on: { CANCEL: "cancelled" } },
        lapsed:    { entry: "release_seats", type: "final" },
        cancelled: { entry: [release_seats], type: "final" },
    }
}

toolgate::machine! {
    id: "quote",
    key: "quote_id",
    mint: "Q-{n}",
    initial: "open",
    states: {
        open:    { after: { "PT1S": "expired" }, exit: "hold_left" },
        expired: { entry: "release_seats", type: "final" },
    }
}

/// Quote a price for a second.
#[action(domain = "quote", creates)]
async fn quote_open(ctx: Ctx) -> Result<QuoteRef, ToolError> {
    Ok(QuoteRef { quote_id: ctx.instance().unwrap_or_default().to_string() })
}

#[derive(Serialize, JsonSchema)]
struct QuoteRef {
    /// The quote, as `quote_open` returned it.
    quote_id: String,
}

#[derive(Serialize, Deserialize, JsonSchema)]
struct HoldRef {
    /// The hold, as `hold_place` returned it.
    hold_id: String,
}

/// Hold seats for a second.
#[action(domain = "hold", creates)]
async fn hold_place(ctx: Ctx) -> Result<HoldRef, ToolError> {
    Ok(HoldRef { hold_id: ctx.instance().unwrap_or_default().to_string() })
}

/// Cancel a hold before it lapses.
#[action(domain = "hold", bind_state = "held", transition = "CANCEL")]
async fn hold_cancel(input: HoldRef) -> Result<HoldRef, ToolError> {
    Ok(input)
}

/// An `entry` effect: the seats go back on sale.
async fn release_seats(call: EffectCall) -> Result<(), EffectError> {
    moved(&call)
}

/// An `exit` effect.
async fn hold_left(call: EffectCall) -> Result<(), EffectError> {
    moved(&call)
}

fn moved(call: &EffectCall) -> Result<(), EffectError> {
    let input: serde_json::Value = call.input()?;
    let step =
        format!("{}:{}->{}", call.name(), input["from"].as_str().unwrap_or("-"), input["to"].as_str().unwrap_or("-"));
    RECEIVED.lock().unwrap().push((step, call.instance().to_string(), call.key().to_string(), call.attempt()));
    Ok(())
}

#[derive(Deserialize, JsonSchema)]
struct Shipment {
    /// The parcel.
    parcel_id: String,
    /// The effect to record: `notify`, `flaky` or `broken`.
    effect: String,
    /// Fail after recording it.
    fail: bool,
}

#[derive(Serialize, Deserialize, JsonSchema)]
struct Shipped {
    parcel_id: String,
}

/// Ship a packed parcel, telling whoever the named effect tells.
#[action(domain = "parcel", bind_state = "packed", transition = "SHIP")]
async fn parcel_ship(input: Shipment, ctx: Ctx) -> Result<Shipped, ToolError> {
    ctx.effect(&input.effect, &Shipped { parcel_id: input.parcel_id.clone() })?;
    if input.fail {
        return Err(ToolError::failed("CARRIER_REFUSED", "the carrier refused the parcel"));
    }
    Ok(Shipped { parcel_id: input.parcel_id })
}

/// Every attempt any effect of this file received: (effect, parcel, key, attempt).
static RECEIVED: Mutex<Vec<(String, String, String, u32)>> = Mutex::new(Vec::new());

fn receive(call: &EffectCall) -> Result<String, EffectError> {
    let shipped: Shipped = call.input()?;
    let attempt = (call.name().to_string(), shipped.parcel_id.clone(), call.key().to_string(), call.attempt());
    RECEIVED.lock().unwrap().push(attempt);
    Ok(shipped.parcel_id)
}

fn received(parcel: &str) -> Vec<(String, String, u32)> {
    let all = RECEIVED.lock().unwrap();
    all.iter().filter(|r| r.1 == parcel).map(|r| (r.0.clone(), r.2.clone(), r.3)).collect()
}

/// The `gated` effect's destination: whether it answers, how many attempts it has under
/// way, and the most it had at once.
static GATE_OPEN: AtomicBool = AtomicBool::new(false);
static GATED_UNDER_WAY: AtomicUsize = AtomicUsize::new(0);
static GATED_MOST: AtomicUsize = AtomicUsize::new(0);

/// An application state the server is given, which the `stamp` effect reads.
#[derive(Clone)]
struct Carrier(String);

async fn serve(store: impl FlowStore) -> TestClient {
    let policy = EffectPolicy {
        max_attempts: 3,
        max_cut_offs: 3,
        first_backoff: Duration::from_millis(20),
        max_backoff: Duration::from_millis(50),
        attempt_timeout: Duration::from_secs(5),
    };
    let server = Server::from_registry("effects")
        .store(store)
        .effect("notify", |call: EffectCall| async move { receive(&call).map(drop) })
        .effect("flaky", |call: EffectCall| async move {
            receive(&call)?;
            if call.attempt() < 3 { Err(EffectError::new("the receiver is down")) } else { Ok(()) }
        })
        .effect("broken", |call: EffectCall| async move {
            receive(&call)?;
            Err(EffectError::new("the receiver refuses everything"))
        })
        .effect("stamp", |call: EffectCall| async move {
            // The server's application state, as a handler's `State<T>` receives it.
            let State(carrier) = call.state::<Carrier>()?;
            let shipped: Shipped = call.input()?;
            RECEIVED.lock().unwrap().push((carrier.0, shipped.parcel_id, call.key().to_string(), call.attempt()));
            Ok(())
        })
        .effect("unstamped", |call: EffectCall| async move {
            call.state::<Vec<u8>>()?;
            Ok(())
        })
        .effect("gated", |call: EffectCall| async move {
            // A destination that answers only once the gate opens, counting the attempts
            // it has under way.
            let now = GATED_UNDER_WAY.fetch_add(1, Ordering::SeqCst) + 1;
            GATED_MOST.fetch_max(now, Ordering::SeqCst);
            while !GATE_OPEN.load(Ordering::SeqCst) {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            GATED_UNDER_WAY.fetch_sub(1, Ordering::SeqCst);
            receive(&call).map(drop)
        })
        .state(Carrier("ACME Freight".into()))
        .effect_policy(policy)
        .history_tool("parcel")
        .build()
        .expect("a server");
    let url = common::serve_in_process(server).await;
    TestClient::http_as(&url, Lifecycle::Sessionless, None).await
}

fn ship(parcel: &str, effect: &str, fail: bool) -> serde_json::Value {
    json!({ "domain": "parcel", "parcel_id": parcel, "effect": effect, "fail": fail })
}

/// Waits until `parcel`'s effects received `count` attempts (at most 5 s).
async fn until_received(parcel: &str, count: usize) -> Vec<(String, String, u32)> {
    for _ in 0..100 {
        if received(parcel).len() >= count {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    received(parcel)
}

#[tokio::test]
async fn an_effect_is_dispatched_once_after_its_commit_with_its_key() {
    let store = MemoryStore::new();
    let client = serve(store.clone()).await;
    client.ok("parcel_ship", ship("P-1", "notify", false)).await;
    let got = until_received("P-1", 1).await;
    assert_eq!(got.len(), 1, "{got:?}");
    let (name, key, attempt) = &got[0];
    assert_eq!((name.as_str(), *attempt), ("notify", 1));
    assert!(key.contains(":parcel:P-1/") && key.ends_with("/notify#0"), "{key}");
    // The outbox is empty once it is done, and nothing else arrives (a round trip first).
    tokio::time::sleep(Duration::from_millis(600)).await;
    let record = store.load(&record_key("P-1")).await.unwrap();
    assert!(record.effects.is_empty() && record.dead_effects.is_empty(), "{record:?}");
    assert_eq!(received("P-1").len(), 1, "dispatched again");
    let history = client.ok("parcel_history", json!({ "domain": "parcel", "parcel_id": "P-1" })).await;
    assert!(history.get("effects").is_none(), "every effect was dispatched: {history}");
}

fn record_key(parcel: &str) -> StoreKey {
    StoreKey::instance("parcel", parcel)
}

#[tokio::test]
async fn a_failing_effect_is_retried_with_the_same_key_until_it_succeeds() {
    let store = MemoryStore::new();
    let client = serve(store.clone()).await;
    client.ok("parcel_ship", ship("P-2", "flaky", false)).await;
    let got = until_received("P-2", 3).await;
    let attempts: Vec<u32> = got.iter().map(|r| r.2).collect();
    assert_eq!(attempts, [1, 2, 3], "{got:?}");
    assert!(got.iter().all(|r| r.1 == got[0].1), "one key on every attempt: {got:?}");
    tokio::time::sleep(Duration::from_millis(600)).await;
    let record = store.load(&record_key("P-2")).await.unwrap();
    assert!(record.effects.is_empty() && record.dead_effects.is_empty(), "{record:?}");
    assert_eq!(received("P-2").len(), 3);
}

#[tokio::test]
async fn an_effect_that_fails_every_attempt_is_dead_lettered_with_its_error() {
    let store = MemoryStore::new();
    let client = serve(store.clone()).await;
    client.ok("parcel_ship", ship("P-3", "broken", false)).await;
    until_received("P-3", 3).await;
    let mut record = store.load(&record_key("P-3")).await.unwrap();
    for _ in 0..50 {
        if !record.dead_effects.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        record = store.load(&record_key("P-3")).await.unwrap();
    }
    assert!(record.effects.is_empty(), "{record:?}");
    let dead = record.dead_effects.first().unwrap_or_else(|| panic!("not dead-lettered: {record:?}"));
    assert_eq!((dead.name.as_str(), dead.attempts), ("broken", 3));
    assert_eq!(dead.last_error.as_deref(), Some("the receiver refuses everything"));
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(received("P-3").len(), 3, "tried after it was dead-lettered");
    // The history tool shows it beside the transition that recorded it.
    let history = client.ok("parcel_history", json!({ "domain": "parcel", "parcel_id": "P-3" })).await;
    assert_eq!(history["entries"][0]["event"], "SHIP", "{history}");
    let shown = &history["effects"];
    assert_eq!(
        (shown[0]["effect"].as_str(), shown[0]["status"].as_str(), shown[0]["attempts"].as_u64()),
        (Some("broken"), Some("dead"), Some(3)),
        "{history}"
    );
    assert_eq!(shown[0]["last_error"], "the receiver refuses everything");
    assert_eq!(shown[0]["cut_offs"], 0, "no attempt was cut off: {history}");
    assert_eq!(shown[0]["key"].as_str(), Some(dead.key.as_str()));
}

#[tokio::test]
async fn a_call_that_fails_causes_no_effect() {
    let store = MemoryStore::new();
    let client = serve(store.clone()).await;
    let refused = client.refused("parcel_ship", ship("P-4", "notify", true)).await;
    assert_eq!(refused["code"], "CARRIER_REFUSED", "{refused}");
    // An unknown effect is the server's bug, reported before anything commits.
    let unknown = client.refused("parcel_ship", ship("P-4", "nobody", false)).await;
    assert_eq!(unknown["code"], "INTERNAL", "{unknown}");
    // A call that succeeds afterwards is dispatched: the failed ones left nothing behind.
    client.ok("parcel_ship", ship("P-4", "notify", false)).await;
    let got = until_received("P-4", 1).await;
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(received("P-4").len(), 1, "{got:?}");
}

/// `entry` and `exit` effects run when time moves an instance, and when a call does: the
/// state left runs its `exit`, the state entered its `entry`, once each.
#[tokio::test]
async fn entering_and_leaving_a_state_runs_its_effects_whether_time_or_a_call_moves_it() {
    let client = serve(MemoryStore::new()).await;
    let lapsing = client.ok("hold_place", json!({ "domain": "hold" })).await["hold_id"].as_str().unwrap().to_string();
    let cancelled = client.ok("hold_place", json!({ "domain": "hold" })).await["hold_id"].as_str().unwrap().to_string();
    client.ok("hold_cancel", json!({ "domain": "hold", "hold_id": cancelled })).await;
    // (Dispatched side by side: in no promised order.)
    let steps = |received: Vec<(String, String, u32)>| {
        let mut steps: Vec<String> = received.into_iter().map(|r| r.0).collect();
        steps.sort();
        steps
    };
    let by_call = steps(until_received(&cancelled, 2).await);
    assert_eq!(by_call, ["hold_left:held->cancelled", "release_seats:held->cancelled"]);
    let by_time = steps(until_received(&lapsing, 2).await);
    assert_eq!(by_time, ["hold_left:held->lapsed", "release_seats:held->lapsed"]);
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(
        (received(&cancelled).len(), received(&lapsing).len()),
        (2, 2),
        "an effect ran twice: {:?}",
        received(&lapsing)
    );
}

/// An effect reads the server's application state as a handler does (`State<T>`); one
/// that asks for a state the server was not given fails, naming it, and is dead-lettered.
#[tokio::test]
async fn an_effect_reads_the_servers_state() {
    let store = MemoryStore::new();
    let client = serve(store.clone()).await;
    client.ok("parcel_ship", ship("P-5", "stamp", false)).await;
    let got = until_received("P-5", 1).await;
    assert_eq!((got.len(), got[0].0.as_str()), (1, "ACME Freight"), "{got:?}");

    client.ok("parcel_ship", ship("P-6", "unstamped", false)).await;
    let mut record = store.load(&record_key("P-6")).await.unwrap();
    for _ in 0..100 {
        if !record.dead_effects.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        record = store.load(&record_key("P-6")).await.unwrap();
    }
    let dead = record.dead_effects.first().unwrap_or_else(|| panic!("not dead-lettered: {record:?}"));
    let why = dead.last_error.as_deref().unwrap_or_default();
    assert!(why.contains("`alloc::vec::Vec<u8>`") && why.contains("ServerBuilder::state"), "{why}");
}

/// A backlog waits in the store: a server runs at most 32 attempts at once (docs/effects.md,
/// "A bounded number at a time"), and the effects due meanwhile stay unclaimed, each
/// dispatched once when the destination answers.
#[tokio::test]
async fn a_backlog_runs_a_bounded_number_of_attempts_at_once_and_each_once() {
    let store = MemoryStore::new();
    let client = serve(store.clone()).await;
    let parcels: Vec<String> = (0..40).map(|n| format!("G-{n}")).collect();
    for parcel in &parcels {
        client.ok("parcel_ship", ship(parcel, "gated", false)).await;
    }
    // The sweeps claim what they have places for, and no more.
    for _ in 0..100 {
        if GATED_UNDER_WAY.load(Ordering::SeqCst) >= 32 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(GATED_UNDER_WAY.load(Ordering::SeqCst), 32, "attempts under way with 40 due");
    let mut unclaimed = 0;
    for parcel in &parcels {
        let record = store.load(&record_key(parcel)).await.unwrap();
        unclaimed += record.effects.iter().filter(|e| e.attempts == 0).count();
    }
    assert_eq!(unclaimed, 8, "the effects without a place stay due, unclaimed");
    GATE_OPEN.store(true, Ordering::SeqCst);
    for parcel in &parcels {
        let got = until_received(parcel, 1).await;
        assert_eq!(got.len(), 1, "{parcel}: {got:?}");
        assert_eq!(got[0].2, 1, "{parcel} on its first attempt: {got:?}");
    }
    assert_eq!(GATED_MOST.load(Ordering::SeqCst), 32, "never more than 32 at once");
}

/// Keeps every snapshot committed, in order.
#[derive(Clone, Default)]
struct Commits(Arc<Mutex<Vec<(StoreKey, Snapshot)>>>);

impl OnCommit for Commits {
    fn made(&self, key: &StoreKey, next: &Snapshot) {
        self.0.lock().unwrap().push((key.clone(), next.clone()));
    }
}

/// The sweep claims the effects of a move time makes in the move's own commit: the
/// expiry is committed with its `exit` and `entry` effects already claimed, and no commit
/// claims them alone (one commit fewer a timer: `benches/scale`, `timers`).
#[tokio::test]
async fn time_claims_the_effects_of_its_move_in_the_moves_own_commit() {
    let store = Watched::<Commits>::default();
    let client = serve(store.clone()).await;
    let quote = client.ok("quote_open", json!({ "domain": "quote" })).await["quote_id"].as_str().unwrap().to_string();
    assert_eq!(until_received(&quote, 2).await.len(), 2);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let key = StoreKey::instance("quote", &quote);
    let commits: Vec<Snapshot> =
        store.hook.0.lock().unwrap().iter().filter(|(k, _)| *k == key).map(|(_, s)| s.clone()).collect();
    let expired = |s: &Snapshot| s.state_of("quote", "open") == "expired";
    let moved = commits.iter().position(expired).expect("the expiry was committed");
    let claimed = |s: &Snapshot| s.effects.iter().map(|e| (e.name.clone(), e.attempts)).collect::<Vec<_>>();
    let mut in_the_move = claimed(&commits[moved]);
    in_the_move.sort();
    assert_eq!(in_the_move, [("hold_left".to_string(), 1), ("release_seats".to_string(), 1)]);
    // Created, moved and claimed, then each attempt's end: nothing else.
    assert_eq!(commits.len(), 4, "{:#?}", commits.iter().map(claimed).collect::<Vec<_>>());
    assert!(commits.last().is_some_and(|s| s.effects.is_empty()), "every effect ended");
}
