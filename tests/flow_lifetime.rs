//! A session's flow lives as long as the session: when the client goes away, the flow is
//! removed from the store instead of piling up in a long-running server.

mod common;

use std::time::Duration;

use common::{PATIENCE, TestClient, serve_in_process};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::json;
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
async fn open(_ctx: Ctx) -> Result<Moved, ToolError> {
    Ok(Moved { moved: true })
}

#[tokio::test]
async fn a_finished_sessions_flow_is_removed() {
    let store = MemoryStore::new();
    let server = Server::from_registry("door").store(store.clone()).build().unwrap();
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
