//! Every result — success or refusal — validates against its tool's `outputSchema`, as
//! the clients that check it (the TypeScript SDK, the Inspector) require even of
//! `isError` results; and the schemas use only formats JSON Schema defines.

use std::collections::HashMap;

use crate::common::clients::Lifecycle;
use crate::common::confirm::Outbox;
use crate::common::raw::SessionlessClient;
use crate::common::{TestClient, spawn_http_example};
use serde_json::{Value, json};

/// The formats JSON Schema 2020-12 defines.
const STANDARD: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

fn formats(value: &Value, found: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(format)) = map.get("format") {
                found.push(format.clone());
            }
            map.values().for_each(|v| formats(v, found));
        }
        Value::Array(items) => items.iter().for_each(|v| formats(v, found)),
        _ => {}
    }
}

/// A session on an example, and every tool's definition (a sessionless `tools/list`
/// shows them all; a session lists only what its state allows).
struct Checked {
    client: TestClient,
    definitions: HashMap<String, Value>,
    _server: tokio::process::Child,
}

async fn checked(example: &str) -> Checked {
    checked_as(example, &[], None).await
}

/// [`checked`], the example started with `args`, its client presenting `token`.
async fn checked_as(example: &str, args: &[&str], token: Option<&str>) -> Checked {
    let (server, url) = spawn_http_example(example, args, &[]).await;
    // Listed as the client is: a tool that needs a scope is shown only to who holds it.
    let bearer = token.map(|token| format!("Bearer {token}"));
    let headers: Vec<(&str, &str)> = bearer.iter().map(|b| ("Authorization", b.as_str())).collect();
    let listed = SessionlessClient::new(&url).request("tools/list", json!({}), &headers).await.result();
    let definitions = listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| (tool["name"].as_str().unwrap().to_string(), tool.clone()))
        .collect();
    Checked { client: TestClient::http_as(&url, Lifecycle::Session, token).await, definitions, _server: server }
}

/// Calls `tool` and checks its `structuredContent` against the tool's `outputSchema`.
async fn checked_call(checked: &Checked, tool: &str, arguments: Value) -> (Value, bool) {
    let schema = checked.definitions[tool]["outputSchema"].clone();
    let client = &checked.client;
    let validator =
        jsonschema::validator_for(&schema).unwrap_or_else(|e| panic!("{tool}'s outputSchema compiles: {e}"));
    let (content, is_error) = client.call(tool, arguments).await;
    let problems: Vec<String> =
        validator.iter_errors(&content).map(|e| format!("{} at {}", e, e.instance_path())).collect();
    assert!(
        problems.is_empty(),
        "{tool} ({}) does not match its outputSchema: {problems:?}\n{content}",
        if is_error { "error" } else { "success" }
    );
    (content, is_error)
}

fn no_nonstandard_format(checked: &Checked) {
    for (name, tool) in &checked.definitions {
        let mut found = Vec::new();
        formats(tool, &mut found);
        found.retain(|f| !STANDARD.contains(&f.as_str()));
        assert!(found.is_empty(), "{name}: nonstandard formats {found:?}");
    }
}

#[tokio::test]
async fn invoice_results_match_their_schemas() {
    let client = checked("invoice").await;
    no_nonstandard_format(&client);
    let inv = |id: &str| json!({ "domain": "invoice", "id": id });
    assert!(checked_call(&client, "invoice_discharge", inv("INV-2")).await.1, "FORBIDDEN");
    assert!(checked_call(&client, "invoice_view", inv("INV-1000000000000")).await.1, "NOT_FOUND");
    assert!(checked_call(&client, "invoice_view", json!({ "domain": "invoice" })).await.1, "INVALID_ARGUMENT");
    assert!(!checked_call(&client, "invoice_submit", inv("INV-1")).await.1);
    assert!(!checked_call(&client, "invoice_view", inv("INV-1")).await.1);
}

#[tokio::test]
async fn travel_results_match_their_schemas() {
    const TRAVELLER: &str = "traveller-token-0123456789";
    let (outbox, token) = (Outbox::new(), format!("traveller={TRAVELLER}"));
    let client = checked_as("travel", &["--token", &token, "--otp-outbox", outbox.path()], Some(TRAVELLER)).await;
    no_nonstandard_format(&client);
    let search = json!({
        "domain": "bus", "origin": "Madrid", "destination": "Valencia",
        "departure": "2026-12-04T08:00:00+01:00", "passengers": 2,
    });
    assert!(checked_call(&client, "switch_domain", json!({ "domain": "nowhere" })).await.1, "INVALID_ARGUMENT");
    assert!(!checked_call(&client, "switch_domain", json!({ "domain": "bus", "reason": "a bus" })).await.1);
    let (offers, _) = checked_call(&client, "bus_search", search).await;
    let car = json!({
        "domain": "car_rental", "pickup_location": "Valencia Airport", "pickup_at": "2026-12-04T10:00:00+01:00",
        "days": 3, "passengers": 2,
    });
    assert!(checked_call(&client, "car_rental_search", car).await.1, "DOMAIN_MISMATCH");
    let book = json!({ "domain": "bus", "quote_id": offers["quote_id"], "offer_id": offers["offers"][0]["id"] });
    let (required, is_error) = checked_call(&client, "bus_book", book.clone()).await;
    assert!(is_error && required["code"] == "CONFIRMATION_REQUIRED", "{required}");
    let challenge_id = required["challenge_id"].as_str().unwrap();
    let mut confirming = book;
    confirming["challenge_id"] = challenge_id.into();
    confirming["otp"] = outbox.code(challenge_id).into();
    assert!(!checked_call(&client, "bus_book", confirming).await.1);
}
