//! A session that lists from a keyed instance hears `list_changed` when another session —
//! or another replica sharing the store — moves that instance and its list changes with it;
//! sessions that do not list from it hear nothing.

use crate::common::clients::Lifecycle;
use crate::common::{TestClient, spawn_http_example};
use serde_json::json;

fn inv(id: &str) -> serde_json::Value {
    json!({ "domain": "invoice", "id": id })
}

#[tokio::test]
async fn a_session_listing_from_an_invoice_hears_when_another_session_moves_it() {
    let (_server, url) = spawn_http_example("invoice", &[], &[]).await;
    let mut watcher = TestClient::http_as(&url, Lifecycle::Session, None).await;
    let mut bystander = TestClient::http_as(&url, Lifecycle::Session, None).await;
    let mover = TestClient::http_as(&url, Lifecycle::Session, None).await;

    // The watcher works on INV-7 (a draft) and lists what that allows; the bystander on INV-8.
    watcher.ok("invoice_view", inv("INV-7")).await;
    let before = watcher.tool_names().await;
    assert!(before.contains(&"invoice_submit".to_string()), "{before:?}");
    bystander.ok("invoice_view", inv("INV-8")).await;
    bystander.tool_names().await;

    // Another session submits INV-7: the watcher's list changes, and it is told.
    mover.ok("invoice_submit", inv("INV-7")).await;
    watcher.expect_list_changed().await;
    let after = watcher.tool_names().await;
    assert!(
        after.contains(&"invoice_approve".to_string()) && !after.contains(&"invoice_submit".to_string()),
        "{after:?}"
    );

    // The bystander lists from INV-8, which did not move: after a round trip, nothing came.
    bystander.ok("invoice_view", inv("INV-8")).await;
    assert_eq!(bystander.pending_list_changed(), 0, "a session that does not list from INV-7 was told");
    // Nor is the watcher told twice of one change.
    watcher.ok("invoice_view", inv("INV-7")).await;
    assert_eq!(watcher.pending_list_changed(), 0);

    // The watcher moves on to INV-9 (its own call changes its list, and it is told): it now
    // lists from INV-9, and hears when another session moves it.
    watcher.ok("invoice_view", inv("INV-9")).await;
    watcher.expect_list_changed().await;
    assert!(watcher.tool_names().await.contains(&"invoice_submit".to_string()));
    assert_eq!(watcher.pending_list_changed(), 0);
    mover.ok("invoice_submit", inv("INV-9")).await;
    watcher.expect_list_changed().await;
    assert!(watcher.tool_names().await.contains(&"invoice_approve".to_string()));
}
