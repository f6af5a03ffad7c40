//! A session's flow lives as long as the session: when the client goes away, the flow is
//! removed from the store instead of piling up in a long-running server.

mod common;

use std::time::Duration;

use common::{PATIENCE, TestClient, serve_in_process};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::json;
use toolgate::DomainPolicy;
use toolgate::prelude::*;
use toolgate::store::MemoryStore;

toolgate::machine! {
    id: "door",
    initial: "closed",
    states: {
        closed: { on: { OPEN: "open" } },
        open:   { on: { CLOSE: "closed" } },
    }
}

#[derive(Serialize, JsonSchema)]
struct Moved {
    moved: bool,
}

/// Open the door.
#[action(domain = "door", bind_state = "closed", transition = "OPEN")]
async fn open() -> Result<Moved, ToolError> {
    Ok(Moved { moved: true })
}

#[tokio::test]
async fn a_finished_sessions_flow_is_removed() {
    let store = MemoryStore::new();
    let server = Server::from_registry("door").domain_policy(DomainPolicy::Off).store(store.clone()).build().unwrap();
    let url = serve_in_process(server).await;

    let (first, second) = (TestClient::http(&url).await, TestClient::http(&url).await);
    first.ok("door_open", json!({ "domain": "door" })).await;
    second.ok("door_open", json!({ "domain": "door" })).await;
    assert_eq!(store.record_count(), 2);

    first.service.cancel().await.expect("close the first session");
    tokio::time::timeout(PATIENCE, async {
        while store.record_count() != 1 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the closed session's flow was not removed");
    // The other session's flow is untouched.
    assert_eq!(second.refused("door_open", json!({ "domain": "door" })).await["current_state"], "open");
}

toolgate::machine! {
    id: "checkout",
    initial: "cart",
    states: {
        cart: { on: { PAY: "paid" } },
        paid: { type: "final" },
    }
}

/// Pay for the cart.
#[action(domain = "checkout", bind_state = "cart", transition = "PAY")]
async fn pay() -> Result<Moved, ToolError> {
    Ok(Moved { moved: true })
}

/// A sessionless conversation that finished stays finished under its handle: the handle
/// names that flow, in its final state, and nothing the client sends restarts it.
#[tokio::test]
async fn a_finished_flow_stays_finished_under_its_handle() {
    let store = MemoryStore::new();
    let server = Server::from_registry("checkout")
        .domain_policy(DomainPolicy::Off)
        .handle_key([7u8; 32])
        .sessionless()
        .store(store.clone())
        .build()
        .unwrap();
    let client = TestClient::sessionless(&serve_in_process(server).await).await;

    let paid = client.ok("checkout_pay", json!({ "domain": "checkout" })).await;
    assert_eq!(paid["state"], "paid");
    let flow = paid["flow"].as_str().expect("a committing call starts a flow").to_string();
    let again = client.refused("checkout_pay", json!({ "domain": "checkout", "flow": flow })).await;
    assert_eq!((again["code"].as_str(), again["current_state"].as_str()), (Some("FORBIDDEN"), Some("paid")));
    // A handle string the server did not mint starts nothing.
    let forged = client.refused("checkout_pay", json!({ "domain": "checkout", "flow": format!("{flow}x") })).await;
    assert_eq!(forged["code"], "INVALID_HANDLE");
    assert!(forged.get("flow").is_none());
    assert_eq!(store.record_count(), 1, "only the paid flow exists");
    // A refused call in a new conversation stores nothing.
    client.refused("door_open", json!({ "domain": "door", "flow": "nope" })).await;
    assert_eq!(store.record_count(), 1);
}
