//! The admission pipeline's order, through rmcp's client: for each pair of checks, a call
//! both would refuse hears the earlier one — a model that drifted into another domain or
//! called a step out of order learns *that*, not a list of fields to fill in — and a call
//! refused anywhere spends no rate-limit allowance.
//!
//! handle → domain and intent lock → instance key → state → arguments → rate limit →
//! lease → handler → commit.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::{TestClient, serve_in_process};
use serde_json::{Value, json};
use tokio::sync::Notify;
use toolgate::prelude::*;

toolgate::machine! {
    id: "parcel",
    key: "id",
    initial: "packed",
    states: {
        packed:    { on: { SHIP: "shipped" } },
        shipped:   { on: { DELIVER: "delivered" } },
        delivered: { type: "final" },
    }
}

/// A parcel id has one spelling.
const PARCEL_ID: &str = r"^P-[1-9][0-9]*$";

#[derive(Deserialize, JsonSchema)]
struct ParcelRef {
    /// The parcel, `P-` and a number.
    #[schemars(pattern(PARCEL_ID))]
    id: String,
}

#[derive(Deserialize, JsonSchema)]
struct Shipment {
    /// The parcel, `P-` and a number.
    #[schemars(pattern(PARCEL_ID))]
    id: String,
    /// Who carries it; `slow` waits until the test lets it finish.
    carrier: String,
    /// Its weight.
    weight_kg: u32,
}

#[derive(Deserialize, JsonSchema)]
struct Letter {
    /// To whom.
    to: String,
    /// What it says.
    text: String,
}

#[derive(Serialize, JsonSchema)]
struct Done {
    /// What happened.
    outcome: String,
}

/// Lets a `slow` shipment finish.
static RELEASE_SHIPMENT: Notify = Notify::const_new();
/// How many slow shipments are waiting.
static SLOW_SHIPMENTS: AtomicUsize = AtomicUsize::new(0);
/// Lets a weighing finish.
static RELEASE_WEIGHING: Notify = Notify::const_new();
/// How many weighings are waiting.
static WEIGHINGS: AtomicUsize = AtomicUsize::new(0);

/// Show a parcel. Changes nothing.
#[action(domain = "parcel", rate_limit = "2/minute per instance")]
async fn view(input: ParcelRef) -> Result<Done, ToolError> {
    Ok(Done { outcome: format!("{} viewed", input.id) })
}

/// Weigh a parcel, slowly. Changes nothing.
#[action(domain = "parcel")]
async fn weigh(input: ParcelRef) -> Result<Done, ToolError> {
    WEIGHINGS.fetch_add(1, Ordering::SeqCst);
    RELEASE_WEIGHING.notified().await;
    Ok(Done { outcome: format!("{} weighed", input.id) })
}

/// Ship a packed parcel. Does not deliver it.
#[action(domain = "parcel", bind_state = "packed", transition = "SHIP", rate_limit = "3/minute per tool")]
async fn ship(input: Shipment) -> Result<Done, ToolError> {
    if input.carrier == "slow" {
        SLOW_SHIPMENTS.fetch_add(1, Ordering::SeqCst);
        RELEASE_SHIPMENT.notified().await;
    }
    Ok(Done { outcome: format!("{} ({} kg) shipped by {}", input.id, input.weight_kg, input.carrier) })
}

/// Deliver a shipped parcel. Does not ship it.
#[action(domain = "parcel", bind_state = "shipped", transition = "DELIVER")]
async fn deliver(input: ParcelRef) -> Result<Done, ToolError> {
    Ok(Done { outcome: format!("{} delivered", input.id) })
}

/// Send a letter. Does not ship parcels.
#[action(domain = "mail")]
async fn send(input: Letter) -> Result<Done, ToolError> {
    Ok(Done { outcome: format!("letter to {}: {}", input.to, input.text) })
}

async fn session() -> TestClient {
    let server = Server::from_registry("pipeline")
        .domain_policy(toolgate::DomainPolicy::Strict)
        .build()
        .expect("the fixture is valid");
    TestClient::http(&serve_in_process(server).await).await
}

fn switch_to(domain: &str) -> Value {
    json!({ "domain": domain, "reason": "the user asked" })
}

fn ship_args(id: &str, carrier: &str) -> Value {
    json!({ "domain": "parcel", "id": id, "carrier": carrier, "weight_kg": 2 })
}

async fn until(what: &str, condition: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + common::PATIENCE;
    while !condition() {
        assert!(tokio::time::Instant::now() < deadline, "{what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test]
async fn a_forged_handle_is_heard_before_everything_else() {
    let server = Server::from_registry("pipeline").sessionless().build().expect("the fixture is valid");
    let client = TestClient::sessionless(&serve_in_process(server).await).await;
    // Wrong domain, a malformed key, the wrong state, missing and unknown fields: the
    // handle is judged first.
    let everything_wrong = json!({ "flow": "forged", "domain": "mail", "id": "P-01", "colour": "red" });
    let refused = client.refused("parcel_deliver", everything_wrong).await;
    assert_eq!(refused["code"], "INVALID_HANDLE", "{refused}");
}

#[tokio::test]
async fn the_intent_lock_is_heard_before_the_arguments() {
    let client = session().await;
    // No domain selected yet, and every field missing: DOMAIN_NOT_SELECTED.
    let refused = client.refused("parcel_ship", json!({ "domain": "parcel" })).await;
    assert_eq!(refused["code"], "DOMAIN_NOT_SELECTED", "{refused}");
    // A call that declares no domain at all is judged by its tool's.
    let refused = client.refused("parcel_ship", json!({})).await;
    assert_eq!(refused["code"], "DOMAIN_NOT_SELECTED", "{refused}");

    client.ok("switch_domain", switch_to("mail")).await;
    // Drifted into another domain, with fields missing and a malformed key:
    // DOMAIN_MISMATCH, telling it to switch, not to fill in fields.
    let refused = client.refused("parcel_ship", json!({ "domain": "parcel", "id": "P-01" })).await;
    assert_eq!(
        (refused["code"].as_str(), refused["active_domain"].as_str()),
        (Some("DOMAIN_MISMATCH"), Some("mail")),
        "{refused}"
    );
    assert!(refused["hint"].as_str().unwrap().contains("switch_domain"), "{refused}");
}

#[tokio::test]
async fn the_instance_key_is_heard_before_the_state_and_names_only_itself() {
    let client = session().await;
    client.ok("switch_domain", switch_to("parcel")).await;
    // A malformed key on a tool whose state gate would refuse too, with another bad
    // field: only the key is read here.
    let refused = client.refused("parcel_deliver", json!({ "domain": "parcel", "id": "P-01", "colour": 1 })).await;
    assert_eq!(refused["code"], "INVALID_ARGUMENT", "{refused}");
    let fields: Vec<&str> =
        refused["errors"].as_array().unwrap().iter().map(|e| e["field"].as_str().unwrap()).collect();
    assert_eq!(fields, ["/id"], "{refused}");
}

#[tokio::test]
async fn the_state_is_heard_before_the_other_arguments() {
    let client = session().await;
    client.ok("switch_domain", switch_to("parcel")).await;
    // Packed, so delivering is forbidden; the unknown field is not what it hears.
    let refused = client.refused("parcel_deliver", json!({ "domain": "parcel", "id": "P-3", "colour": "red" })).await;
    assert_eq!(
        (refused["code"].as_str(), refused["current_state"].as_str()),
        (Some("FORBIDDEN"), Some("packed")),
        "{refused}"
    );
    assert_eq!(refused["unlocked_by"], json!(["parcel_ship"]), "the next step from `packed`");
    // Where the state allows the tool, the arguments are judged: every bad field at once.
    let refused = client.refused("parcel_ship", json!({ "domain": "parcel", "id": "P-3", "colour": "red" })).await;
    let mut fields: Vec<&str> =
        refused["errors"].as_array().unwrap().iter().map(|e| e["field"].as_str().unwrap()).collect();
    fields.sort_unstable();
    assert_eq!(fields, ["/carrier", "/colour", "/weight_kg"], "{refused}");
}

#[tokio::test]
async fn refused_calls_spend_no_allowance_and_the_arguments_are_heard_before_the_limit() {
    let client = session().await;
    client.ok("switch_domain", switch_to("parcel")).await;
    let view = |extra: Option<(&str, Value)>| {
        let mut arguments = json!({ "domain": "parcel", "id": "P-9" });
        if let Some((key, value)) = extra {
            arguments[key] = value;
        }
        arguments
    };
    // Five calls refused for their arguments: none is counted against 2 a minute.
    for _ in 0..5 {
        let refused = client.refused("parcel_view", view(Some(("colour", json!("red"))))).await;
        assert_eq!(refused["code"], "INVALID_ARGUMENT");
    }
    client.ok("parcel_view", view(None)).await;
    client.ok("parcel_view", view(None)).await;
    let limited = client.refused("parcel_view", view(None)).await;
    assert_eq!(
        (limited["code"].as_str(), limited["limit"].as_str()),
        (Some("RATE_LIMITED"), Some("2/minute per instance")),
        "{limited}"
    );
    let wait = limited["retry_after_ms"].as_u64().unwrap();
    assert!(wait > 59_000 && wait <= 60_000, "exactly when the first call leaves the window: {limited}");
    // Over the limit, a call with a bad argument still hears about its argument.
    let refused = client.refused("parcel_view", view(Some(("colour", json!("red"))))).await;
    assert_eq!(refused["code"], "INVALID_ARGUMENT");
    // Counted per instance: another parcel has its own allowance.
    client.ok("parcel_view", json!({ "domain": "parcel", "id": "P-10" })).await;
}

/// The rate limit is judged before the lease: a call over its limit hears so at once
/// instead of waiting behind another call's lease. And a call that passed every check,
/// spent its allowance and then found the state changed under the lease (refused
/// `FORBIDDEN`) gives the allowance back.
#[tokio::test]
async fn the_limit_is_heard_before_the_lease_and_a_late_refusal_refunds() {
    let client = std::sync::Arc::new(session().await);
    client.ok("switch_domain", switch_to("parcel")).await;
    // `parcel_ship` allows 3 a minute for everyone together.
    let first = {
        let client = client.clone();
        tokio::spawn(async move { client.call("parcel_ship", ship_args("P-6", "slow")).await })
    };
    until("the first shipment never started", || SLOW_SHIPMENTS.load(Ordering::SeqCst) == 1).await;
    // The second passes every check on the committed state (packed), spends, and waits
    // for the lease the first holds.
    let second = {
        let client = client.clone();
        tokio::spawn(async move { client.call("parcel_ship", ship_args("P-6", "quick")).await })
    };
    // A round trip on the session, so the second call is surely waiting.
    client.ok("parcel_view", json!({ "domain": "parcel", "id": "P-50" })).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    RELEASE_SHIPMENT.notify_one();
    let (first, first_is_error) = first.await.unwrap();
    assert!(!first_is_error, "{first}");
    let (second, _) = second.await.unwrap();
    assert_eq!(
        (second["code"].as_str(), second["current_state"].as_str()),
        (Some("FORBIDDEN"), Some("shipped")),
        "the second hears the first's commit: {second}"
    );
    // The refused second gave its allowance back: two more shipments fit in 3 a minute.
    client.ok("parcel_ship", ship_args("P-7", "quick")).await;
    let blocker = {
        let client = client.clone();
        tokio::spawn(async move { client.call("parcel_ship", ship_args("P-8", "slow")).await })
    };
    until("the blocking shipment never started", || SLOW_SHIPMENTS.load(Ordering::SeqCst) == 2).await;
    // Over the limit on an instance whose lease is held: RATE_LIMITED at once, not
    // FLOW_BUSY after the lease wait.
    let started = std::time::Instant::now();
    let limited = client.refused("parcel_ship", ship_args("P-8", "quick")).await;
    assert_eq!(limited["code"], "RATE_LIMITED", "{limited}");
    assert!(started.elapsed() < Duration::from_secs(4), "it waited for the lease");
    RELEASE_SHIPMENT.notify_one();
    assert!(!blocker.await.unwrap().1);
}

/// A session's focus is the instance its latest call named: a slow call that started
/// first and finished last does not move the focus back to its instance.
#[tokio::test]
async fn a_slow_earlier_call_does_not_take_the_focus_back() {
    let client = std::sync::Arc::new(session().await);
    client.ok("switch_domain", switch_to("parcel")).await;
    client.ok("parcel_ship", ship_args("P-20", "quick")).await;
    let slow = {
        let client = client.clone();
        tokio::spawn(async move { client.call("parcel_weigh", json!({ "domain": "parcel", "id": "P-20" })).await })
    };
    until("the weighing never started", || WEIGHINGS.load(Ordering::SeqCst) == 1).await;
    // The latest call names P-21, still packed: the session lists what P-21 allows.
    client.ok("parcel_view", json!({ "domain": "parcel", "id": "P-21" })).await;
    RELEASE_WEIGHING.notify_one();
    assert!(!slow.await.unwrap().1);
    let names = client.tool_names().await;
    assert!(names.contains(&"parcel_ship".to_string()), "the focus went back to the slow call's P-20: {names:?}");
    assert!(!names.contains(&"parcel_deliver".to_string()), "{names:?}");
}

#[tokio::test]
async fn a_global_tool_echoes_the_active_domain_on_success_and_on_refusal() {
    let client = session().await;
    let switched = client.ok("switch_domain", switch_to("parcel")).await;
    assert_eq!(switched["domain"], "parcel");
    let refused = client.refused("switch_domain", json!({ "domain": "nowhere", "reason": "x" })).await;
    assert_eq!((refused["code"].as_str(), refused["domain"].as_str()), (Some("INVALID_ARGUMENT"), Some("parcel")));
}

/// A server's canonical spelling names the instance, and its refusal is the key field's.
#[tokio::test]
async fn a_canonical_key_names_the_instance() {
    let server = Server::from_registry("pipeline")
        .canonical_key("parcel", |id| match id {
            "P-42" => Err("is a retired parcel number".into()),
            "P-43" => Ok("P-44".into()),
            other => Ok(other.to_string()),
        })
        .build()
        .expect("the fixture is valid");
    let client = TestClient::http(&serve_in_process(server).await).await;
    client.ok("switch_domain", switch_to("parcel")).await;
    let refused = client.refused("parcel_view", json!({ "domain": "parcel", "id": "P-42" })).await;
    assert_eq!(
        (refused["errors"][0]["field"].as_str(), refused["errors"][0]["problem"].as_str()),
        (Some("/id"), Some("is a retired parcel number")),
        "{refused}"
    );
    // P-43 is spelled P-44: shipping one ships the other, and the handler sees P-44.
    let shipped = client.ok("parcel_ship", ship_args("P-43", "quick")).await;
    assert!(shipped["outcome"].as_str().unwrap().starts_with("P-44 "), "{shipped}");
    let again = client.refused("parcel_ship", ship_args("P-44", "quick")).await;
    assert_eq!(again["code"], "FORBIDDEN", "{again}");

    let unkeyed = Server::from_registry("pipeline").canonical_key("nothing", |id| Ok(id.to_string())).build();
    assert!(unkeyed.unwrap_err().to_string().contains("machine `nothing`, which has no key"));
}
