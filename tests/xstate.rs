//! A machine authored in XState tooling, loaded from JSON at start-up, gates actions
//! exactly like one declared with `machine!`.

mod common;

use common::{TestClient, serve_in_process};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::json;
use toolgate::Machine;
use toolgate::prelude::*;

const DOOR: &str = r#"{
    "id": "door",
    "initial": "closed",
    "context": {},
    "states": {
        "closed": { "on": { "OPEN": { "target": "open" }, "LOCK": "locked" } },
        "open":   { "on": { "CLOSE": "closed" } },
        "locked": { "on": { "UNLOCK": "closed" } }
    }
}"#;

#[derive(Serialize, JsonSchema)]
struct Moved {
    moved: bool,
}

/// Open the door.
#[action(domain = "door", bind_state = "closed", transition = "OPEN", startup_checked)]
async fn open() -> Result<Moved, ToolError> {
    Ok(Moved { moved: true })
}

/// Close the door.
#[action(domain = "door", bind_state = "open", transition = "CLOSE", startup_checked)]
async fn close() -> Result<Moved, ToolError> {
    Ok(Moved { moved: true })
}

#[tokio::test]
async fn a_json_machine_gates_its_actions() {
    let server = toolgate::Server::from_registry("door")
        .machine(Machine::from_xstate_json(DOOR).expect("valid machine"))
        .build()
        .expect("valid registry");
    let mut client = TestClient::http(&serve_in_process(server).await).await;
    assert_eq!(client.tool_names().await, ["door_open"]);
    assert_eq!(client.refused("door_close", json!({ "domain": "door" })).await["unlocked_by"], json!(["door_open"]));
    assert_eq!(client.ok("door_open", json!({ "domain": "door" })).await["state"], "open");
    client.expect_list_changed().await;
    assert_eq!(client.tool_names().await, ["door_close"]);
}

#[test]
fn without_its_machine_the_server_does_not_start() {
    let error = toolgate::Server::from_registry("door").build().unwrap_err();
    assert!(error.to_string().contains("bound to machine `door`, which is not registered"), "{error}");
}

#[test]
fn a_keyed_json_machine_needs_the_key_in_its_actions_inputs() {
    let keyed = Machine::from_xstate_json(DOOR).unwrap().keyed_by("door_id").expect("a valid key");
    let error = toolgate::Server::from_registry("door").machine(keyed).build().unwrap_err();
    let text = error.to_string();
    assert_eq!(error.problems.len(), 2, "{text}");
    assert!(
        text.contains("tests/xstate.rs:31: tool `door_open`: machine `door` has one instance per `door_id`"),
        "{text}"
    );
    assert!(text.contains("its input has no such field"), "{text}");
    assert!(Machine::from_xstate_json(DOOR).unwrap().keyed_by("door id").is_err(), "a key must be an argument name");
}

#[test]
fn a_short_handle_key_is_refused_at_start_up() {
    let machine = Machine::from_xstate_json(DOOR).unwrap();
    let error = toolgate::Server::from_registry("door").machine(machine).handle_key(*b"short").build().unwrap_err();
    assert!(error.to_string().contains("at least 32 bytes; this one has 5"), "{error}");
}
