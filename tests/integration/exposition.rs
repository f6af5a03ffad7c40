//! The invoice example served flat and grouped (`--exposition grouped`), through rmcp's
//! client: a grouped call is judged exactly as its flat tool, its results name actions,
//! and on a session its `action` enum follows the invoice's state.

use crate::common::TestClient;
use serde_json::{Value, json};

fn inv(id: &str) -> Value {
    json!({ "domain": "invoice", "id": id })
}

/// The flat call `tool` with `arguments`, as the grouped tool's call.
fn grouped(tool: &str, arguments: &Value) -> Value {
    let mut arguments = arguments.clone();
    arguments["action"] = json!(tool.strip_prefix("invoice_").unwrap());
    arguments.as_object_mut().unwrap().remove("domain");
    arguments
}

/// The actions the listed `invoice` tool offers.
async fn actions(client: &TestClient) -> Vec<String> {
    let tools = client.tools().await;
    assert_eq!(tools.iter().map(|t| t.name.as_ref()).collect::<Vec<_>>(), ["invoice"]);
    let schema = &tools[0].input_schema;
    let actions = schema["properties"]["action"]["enum"].as_array().unwrap();
    let branches = schema["oneOf"].as_array().unwrap();
    assert_eq!(branches.len(), actions.len(), "a branch per action: {schema:?}");
    actions.iter().map(|a| a.as_str().unwrap().to_string()).collect()
}

/// Checks `content` against the listed `invoice` tool's output schema, as clients that
/// validate results do (refusals included).
async fn check_output(client: &TestClient, content: &Value) {
    let tools = client.tools().await;
    let schema = Value::Object((*tools[0].output_schema.clone().expect("an output schema")).clone());
    let validator = jsonschema::validator_for(&schema).expect("the grouped output schema compiles");
    assert!(validator.is_valid(content), "{content} against {schema}");
}

#[tokio::test]
async fn a_grouped_session_lists_only_the_actions_the_state_allows() {
    let mut client = TestClient::stdio_example_with("invoice", &["--store", "memory", "--exposition", "grouped"]).await;
    assert_eq!(actions(&client).await, ["amend", "submit", "view"]);

    // Gated per action: the refusal names actions.
    let refused = client.refused("invoice", grouped("invoice_discharge", &inv("INV-7"))).await;
    assert_eq!((refused["code"].as_str(), refused["tool"].as_str()), (Some("FORBIDDEN"), Some("discharge")));
    assert_eq!(refused["next"], json!(["amend", "submit", "view"]), "{refused}");
    assert_eq!(refused["unlocked_by"], json!(["submit"]), "{refused}");
    assert!(refused["message"].as_str().unwrap().starts_with("`discharge` is not available"), "{refused}");
    check_output(&client, &refused).await;

    // A transition: the step leaves the menu, the next ones come.
    let submitted = client.ok("invoice", grouped("invoice_submit", &inv("INV-7"))).await;
    assert_eq!((submitted["state"].as_str(), submitted["domain"].as_str()), (Some("review"), Some("invoice")));
    assert_eq!(submitted["next"], json!(["approve", "reject", "view"]), "{submitted}");
    check_output(&client, &submitted).await;
    client.expect_list_changed().await;
    assert_eq!(actions(&client).await, ["approve", "reject", "view"]);

    // An action that is none: a structured refusal on `action`, naming the actions.
    let wrong = client.refused("invoice", json!({ "action": "pay", "id": "INV-7" })).await;
    assert_eq!(
        (wrong["code"].as_str(), wrong["errors"][0]["field"].as_str()),
        (Some("INVALID_ARGUMENT"), Some("/action"))
    );
    assert!(wrong["errors"][0]["expected"].as_str().unwrap().contains("discharge"), "{wrong}");
    check_output(&client, &wrong).await;
    let missing = client.refused("invoice", json!({ "id": "INV-7" })).await;
    assert_eq!(missing["errors"][0]["field"], "/action", "{missing}");
    // The flat tools are not served beside the grouped one.
    let flat = client.service.call_tool(rmcp::model::CallToolRequestParams::new("invoice_view")).await;
    assert!(flat.unwrap_err().to_string().contains("unknown tool"), "a flat name on a grouped server");
}

/// The same wrong calls, flat and grouped: the same refusal codes, on the same fields.
#[tokio::test]
async fn grouped_and_flat_refuse_the_same_wrong_calls_alike() {
    let flat = TestClient::stdio_example_with("invoice", &["--store", "memory"]).await;
    let grouped_client =
        TestClient::stdio_example_with("invoice", &["--store", "memory", "--exposition", "grouped"]).await;
    let wrong_calls = [
        ("invoice_discharge", inv("INV-9")),
        ("invoice_submit", inv("nope")),
        ("invoice_submit", json!({ "domain": "invoice" })),
        (
            "invoice_amend",
            json!({ "domain": "invoice", "id": "INV-9", "amount": { "amount": "1.5", "currency": "USD" } }),
        ),
        ("invoice_view", json!({ "domain": "invoice", "id": "INV-9", "colour": "red" })),
    ];
    for (tool, arguments) in &wrong_calls {
        let as_flat = flat.refused(tool, arguments.clone()).await;
        let as_grouped = grouped_client.refused("invoice", grouped(tool, arguments)).await;
        assert_eq!(as_flat["code"], as_grouped["code"], "{tool} {arguments}: {as_flat} / {as_grouped}");
        assert_eq!(as_flat["errors"], as_grouped["errors"], "{tool} {arguments}");
    }
}

/// At MCP 2026-07-28 (no session) the grouped tool offers every action, whatever happens.
#[tokio::test]
async fn a_sessionless_grouped_list_is_static() {
    let client = TestClient::http_example_with(
        "invoice",
        &["--store", "memory", "--stateless", "--exposition", "grouped"],
        None,
    )
    .await;
    // Every action this caller may call: not `amend`, whose scope a caller with no token lacks.
    let every = ["approve", "discharge", "reject", "submit", "view"];
    assert_eq!(actions(&client).await, every);
    let submitted = client.ok("invoice", grouped("invoice_submit", &inv("INV-3"))).await;
    assert_eq!(submitted["next"], json!(["approve", "reject", "view"]), "{submitted}");
    assert_eq!(actions(&client).await, every);
}
