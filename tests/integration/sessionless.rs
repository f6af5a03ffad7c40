//! Sessionless Streamable HTTP (MCP 2026-07-28), through rmcp's client (discover
//! lifecycle) and raw HTTP requests, against the examples served `--stateless` and
//! stateful (which serves sessionless requests too): keyed invoices need no handle;
//! conversations travel in signed handles that cannot be forged, altered, reused across
//! keys, revived once expired, or named by a header.

use std::time::Duration;

use crate::common::clients::Lifecycle;
use crate::common::confirm::{Outbox, confirmed};
use crate::common::raw::{RawSession, SessionlessClient};
use crate::common::{TestClient, spawn_http_example};
use serde_json::{Value, json};

const KEY: (&str, &str) = ("TOOLGATE_HANDLE_KEY", "sessionless-test-handle-key-0000000001");
const OTHER_KEY: (&str, &str) = ("TOOLGATE_HANDLE_KEY", "sessionless-test-handle-key-0000000002");

fn inv(id: &str) -> Value {
    json!({ "domain": "invoice", "id": id })
}

fn bus_search(flow: Option<&str>) -> Value {
    let mut args = json!({
        "domain": "bus",
        "origin": "Madrid",
        "destination": "Valencia",
        "departure": "2026-12-04T08:00:00+01:00",
        "passengers": 2,
    });
    if let Some(flow) = flow {
        args["flow"] = flow.into();
    }
    args
}

fn switch_to_bus(flow: Option<&str>) -> Value {
    let mut args = json!({ "domain": "bus", "reason": "the user wants a bus" });
    if let Some(flow) = flow {
        args["flow"] = flow.into();
    }
    args
}

/// Every server mode a sessionless client meets: `--stateless`, and the default.
const MODES: [&[&str]; 2] = [&["--stateless"], &[]];

async fn walk_the_invoice_flow(client: &TestClient) {
    let listed = client.tools().await;
    // The same list whatever the state: every tool the caller may call, each saying when
    // it is callable (not `invoice_amend`, which takes a scope this caller, with no token,
    // does not hold).
    let names: Vec<&str> = listed.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, ["invoice_approve", "invoice_discharge", "invoice_reject", "invoice_submit", "invoice_view"]);
    let discharge = listed.iter().find(|t| t.name == "invoice_discharge").unwrap();
    let description = discharge.description.as_deref().unwrap();
    assert!(description.contains("Only while the `invoice` is `approved`"), "{description}");

    assert_eq!(client.ok("invoice_submit", inv("INV-1")).await["state"], "review");
    assert_eq!(client.ok("invoice_approve", inv("INV-1")).await["state"], "approved");
    let refused = client.refused("invoice_discharge", inv("INV-2")).await;
    assert_eq!(
        (refused["code"].as_str(), refused["instance"].as_str(), refused["current_state"].as_str()),
        (Some("FORBIDDEN"), Some("INV-2"), Some("draft"))
    );
    assert_eq!(client.ok("invoice_discharge", inv("INV-1")).await["state"], "discharged");
    assert_eq!(client.refused("invoice_discharge", inv("INV-1")).await["current_state"], "discharged");
    let viewed = client.ok("invoice_view", inv("INV-1")).await;
    assert_eq!(viewed["state"], "discharged");
    assert!(viewed.get("flow").is_none(), "keyed invoices need no handle: {viewed}");
    assert_eq!(client.tools().await, listed, "a sessionless tools/list changed");
}

#[tokio::test]
async fn rmcp_client_walks_the_invoice_flow_without_a_session() {
    for mode in MODES {
        let (_server, url) = spawn_http_example("invoice", mode, &[KEY]).await;
        walk_the_invoice_flow(&TestClient::sessionless(&url).await).await;
    }
}

/// The traveller's bearer token: booking is `transactional`, and a quote is its searcher's
/// (searching takes a principal).
const TRAVELLER: &str = "traveller-token-0123456789";

/// The travel example's `--token` for the traveller.
const TRAVELLER_ARG: &str = "traveller=traveller-token-0123456789";

/// A sessionless client of the travel example, as the traveller.
async fn traveller(url: &str) -> TestClient {
    TestClient::http_as(url, Lifecycle::Sessionless, Some(TRAVELLER)).await
}

/// The travel example's arguments for a traveller who can book: the token, and an outbox
/// for the codes.
fn traveller_args<'a>(mode: &[&'a str], token: &'a str, outbox: &'a Outbox) -> Vec<&'a str> {
    mode.iter().copied().chain(["--token", token, "--otp-outbox", outbox.path()]).collect()
}

async fn walk_the_travel_flow(client: &TestClient, outbox: &Outbox) {
    let listed = client.tools().await;
    assert_eq!(listed.len(), 7, "every tool is listed");

    // Without a handle a call runs in a new conversation, and is told how to start one.
    let refused = client.refused("bus_search", bus_search(None)).await;
    assert_eq!(refused["code"], "DOMAIN_NOT_SELECTED");
    assert!(refused["hint"].as_str().unwrap().contains("`flow`"), "{refused}");

    let switched = client.ok("switch_domain", switch_to_bus(None)).await;
    let flow = switched["flow"].as_str().expect("switch_domain starts a flow and returns its handle").to_string();
    let searched = client.ok("bus_search", bus_search(Some(&flow))).await;
    assert_eq!(searched["state"], "quoted");
    let flow = searched["flow"].as_str().expect("results carry the handle").to_string();
    let (quote, offer) = (searched["quote_id"].clone(), searched["offers"][0]["id"].clone());

    // Another conversation (no handle) is not this one.
    let elsewhere = client.refused("bus_book", json!({ "domain": "bus", "quote_id": quote, "offer_id": offer })).await;
    assert_eq!(elsewhere["code"], "DOMAIN_NOT_SELECTED");

    let book = json!({ "domain": "bus", "quote_id": quote, "offer_id": offer, "flow": flow });
    let booked = confirmed(client, "bus_book", book, outbox).await;
    assert_eq!(booked["state"], "booked");
    let car = json!({
        "domain": "car_rental", "pickup_location": "Valencia Airport", "pickup_at": "2026-12-04T10:00:00+01:00",
        "days": 3, "passengers": 2, "flow": flow,
    });
    assert_eq!(client.refused("car_rental_search", car).await["code"], "DOMAIN_MISMATCH");
    assert_eq!(client.tools().await, listed, "a sessionless tools/list changed");
}

#[tokio::test]
async fn rmcp_client_walks_the_travel_flow_with_a_handle() {
    let token = format!("traveller={TRAVELLER}");
    for mode in MODES {
        let outbox = Outbox::new();
        let (_server, url) = spawn_http_example("travel", &traveller_args(mode, &token, &outbox), &[KEY]).await;
        walk_the_travel_flow(&TestClient::http_as(&url, Lifecycle::Sessionless, Some(TRAVELLER)).await, &outbox).await;
    }
}

#[tokio::test]
async fn handles_the_server_did_not_issue_are_refused() {
    let (_server, url) = spawn_http_example("travel", &["--stateless", "--token", TRAVELLER_ARG], &[KEY]).await;
    let (_other, other_url) =
        spawn_http_example("travel", &["--stateless", "--token", TRAVELLER_ARG], &[OTHER_KEY]).await;
    let client = traveller(&url).await;
    let flow = client.ok("switch_domain", switch_to_bus(None)).await["flow"].as_str().unwrap().to_string();

    let mut tampered = flow.clone().into_bytes();
    let middle = tampered.len() / 2;
    tampered[middle] = if tampered[middle] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(tampered).unwrap();
    for (what, handle) in [("tampered", tampered.as_str()), ("made up", "tg1.abc.def"), ("not a handle", "INV-1")] {
        let refused = client.refused("bus_search", bus_search(Some(handle))).await;
        assert_eq!(refused["code"], "INVALID_HANDLE", "{what}: {refused}");
        assert!(refused["hint"].as_str().unwrap().contains("latest result"), "{refused}");
        assert!(refused.get("flow").is_none());
    }
    // Another key's server: the same string means nothing there.
    let other = traveller(&other_url).await;
    assert_eq!(other.refused("bus_search", bus_search(Some(&flow))).await["code"], "INVALID_HANDLE");
    // The genuine handle still works.
    assert_eq!(client.ok("bus_search", bus_search(Some(&flow))).await["state"], "quoted");
}

#[tokio::test]
async fn an_expired_handle_does_not_restart_its_flow() {
    let (_server, url) =
        spawn_http_example("travel", &["--stateless", "--handle-ttl", "100ms", "--token", TRAVELLER_ARG], &[KEY]).await;
    let client = traveller(&url).await;
    let flow = client.ok("switch_domain", switch_to_bus(None)).await["flow"].as_str().unwrap().to_string();
    tokio::time::sleep(Duration::from_millis(200)).await;
    for tool in ["bus_search", "switch_domain"] {
        let args = if tool == "bus_search" { bus_search(Some(&flow)) } else { switch_to_bus(Some(&flow)) };
        let refused = client.refused(tool, args).await;
        assert_eq!(refused["code"], "HANDLE_EXPIRED", "{tool}: {refused}");
        assert!(refused.get("flow").is_none(), "an expired handle was given a new flow: {refused}");
    }
}

/// A sessionless request naming a live session in its `Mcp-Session-Id` header gets a
/// conversation of its own: it can neither read, change nor end the session's.
#[tokio::test]
async fn a_session_id_header_does_not_reach_that_sessions_flow() {
    let (token, outbox) = (format!("traveller={TRAVELLER}"), Outbox::new());
    let (_server, url) = spawn_http_example("travel", &traveller_args(&[], &token, &outbox), &[KEY]).await;
    // The session and the intruder are the same traveller: the header alone is tried.
    let session = RawSession::open_as(&url, TRAVELLER).await;
    let bearer = format!("Bearer {TRAVELLER}");
    assert!(!session.call("switch_domain", switch_to_bus(None)).await.1);
    let (searched, is_error) = session.call("bus_search", bus_search(None)).await;
    assert!(!is_error, "{searched}");
    assert!(searched.get("flow").is_none(), "a session's flow needs no handle: {searched}");
    let offer = searched["offers"][0]["id"].as_str().unwrap().to_string();
    let book = json!({ "domain": "bus", "quote_id": searched["quote_id"], "offer_id": offer });
    let session_tools = session.tool_names().await;
    assert!(session_tools.contains(&"bus_book".to_string()), "{session_tools:?}");

    let intruder = SessionlessClient::new(&url);
    let header = [("Mcp-Session-Id", session.session_id()), ("Authorization", bearer.as_str())];
    let reply = intruder.call_with_headers("bus_book", book.clone(), &header).await;
    assert!(reply.is_json(), "a call that causes no other message is answered as plain JSON");
    let refused = reply.result()["structuredContent"].clone();
    assert_eq!(refused["code"], "DOMAIN_NOT_SELECTED", "the header reached the session's flow: {refused}");
    let reply = intruder.call_with_headers("switch_domain", switch_to_bus(None), &header).await;
    reply.result()["structuredContent"]["flow"].as_str().expect("a new flow of its own");
    let listed = intruder.request("tools/list", json!({}), &header).await.result();
    assert_eq!(listed["tools"].as_array().unwrap().len(), 7, "the session's listing leaked: {listed}");

    // The session's flow is untouched, not reset or removed when those requests ended.
    assert_eq!(session.tool_names().await, session_tools);
    let (required, _) = session.call("bus_book", book.clone()).await;
    assert_eq!(required["code"], "CONFIRMATION_REQUIRED", "{required}");
    let challenge_id = required["challenge_id"].as_str().unwrap();
    let mut confirming = book;
    confirming["challenge_id"] = challenge_id.into();
    confirming["otp"] = outbox.code(challenge_id).into();
    let (booked, is_error) = session.call("bus_book", confirming).await;
    assert!(!is_error, "{booked}");
    assert_eq!(booked["state"], "booked");
}

/// Each use of a handle past half its life refreshes its flow: a conversation in use does
/// not expire, while the handles it left behind do.
///
/// A TTL of 380 ms: each 200 ms wait is past half of it (190 ms), two are past all of it,
/// and each request may take up to 180 ms before the handle it uses expires.
#[tokio::test]
async fn a_handle_in_use_is_refreshed() {
    let (_server, url) =
        spawn_http_example("travel", &["--stateless", "--handle-ttl", "380ms", "--token", TRAVELLER_ARG], &[KEY]).await;
    let client = traveller(&url).await;
    let first = client.ok("switch_domain", switch_to_bus(None)).await["flow"].as_str().unwrap().to_string();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let searched = client.ok("bus_search", bus_search(Some(&first))).await;
    let second = searched["flow"].as_str().unwrap().to_string();
    assert_ne!(first, second, "a handle past half its life is re-issued with a later expiry");
    tokio::time::sleep(Duration::from_millis(200)).await;
    // Past the first handle's expiry, within the refreshed one's.
    assert_eq!(client.refused("bus_search", bus_search(Some(&first))).await["code"], "HANDLE_EXPIRED");
    assert_eq!(client.ok("bus_search", bus_search(Some(&second))).await["state"], "quoted");
}

/// A rate limit counts per client, never per conversation: a client that starts a new
/// conversation (or leaves the handle out) gets no new allowance, and calls the gate
/// refuses spend none.
#[tokio::test]
async fn a_new_conversation_brings_no_new_allowance() {
    let (_server, url) = spawn_http_example("travel", &["--stateless", "--token", TRAVELLER_ARG], &[KEY]).await;
    let client = traveller(&url).await;
    // Refused before the rate limit is judged: these spend nothing.
    for _ in 0..5 {
        assert_eq!(client.refused("bus_search", bus_search(None)).await["code"], "DOMAIN_NOT_SELECTED");
    }
    // 30 a minute, spread over conversations the client started at will.
    for _ in 0..6 {
        let flow = client.ok("switch_domain", switch_to_bus(None)).await["flow"].as_str().unwrap().to_string();
        for _ in 0..5 {
            assert_eq!(client.ok("bus_search", bus_search(Some(&flow))).await["state"], "quoted");
        }
    }
    let flow = client.ok("switch_domain", switch_to_bus(None)).await["flow"].as_str().unwrap().to_string();
    let limited = client.refused("bus_search", bus_search(Some(&flow))).await;
    assert_eq!(
        (limited["code"].as_str(), limited["limit"].as_str()),
        (Some("RATE_LIMITED"), Some("30/minute per client"))
    );
}
