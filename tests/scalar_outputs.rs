//! A handler may return what is not a JSON object — a `String`, a number, a list, an
//! enum — as rmcp's `#[tool]` allows: its result carries it as `result`, and its output
//! schema says so (MCP's `structuredContent` is an object).

mod common;

use common::{TestClient, serve_in_process};
use serde_json::{Value, json};
use toolgate::prelude::*;

#[derive(Deserialize, JsonSchema)]
struct Name {
    /// Whom to greet.
    name: String,
}

/// A colour, as a plain string enum.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Colour {
    Red,
}

/// Greets someone. Changes nothing.
#[action(domain = "tally")]
async fn greet(input: Name) -> Result<String, ToolError> {
    Ok(format!("hello {}", input.name))
}

/// Counts the entries. Changes nothing.
#[action(domain = "tally")]
async fn count() -> Result<u32, ToolError> {
    Ok(3)
}

/// Names the entries. Changes nothing.
#[action(domain = "tally")]
async fn names() -> Result<Vec<String>, ToolError> {
    Ok(vec!["a".into(), "b".into()])
}

/// The colour of the tally. Changes nothing.
#[action(domain = "tally")]
async fn colour() -> Result<Colour, ToolError> {
    Ok(Colour::Red)
}

#[tokio::test]
async fn a_scalar_output_is_the_results_result() {
    let server = Server::from_registry("tally").build().expect("scalar outputs serve");
    let client = TestClient::http(&serve_in_process(server).await).await;
    let tools = client.tools().await;
    let calls = [
        ("tally_greet", json!({ "domain": "tally", "name": "Ada" }), json!("hello Ada"), "string"),
        ("tally_count", json!({ "domain": "tally" }), json!(3), "integer"),
        ("tally_names", json!({ "domain": "tally" }), json!(["a", "b"]), "array"),
        ("tally_colour", json!({ "domain": "tally" }), json!("red"), "string"),
    ];
    for (tool, arguments, result, kind) in calls {
        let schema = tools.iter().find(|t| t.name == tool).unwrap().output_schema.clone().unwrap();
        let schema = Value::Object((*schema).clone());
        assert_eq!(schema["anyOf"][0]["properties"]["result"]["type"], kind, "{tool}: {schema}");
        let content = client.ok(tool, arguments).await;
        assert_eq!(content["result"], result, "{tool}: {content}");
        assert_eq!(content["domain"], "tally", "{tool}: {content}");
        let validator = jsonschema::validator_for(&schema).expect("a valid schema");
        assert!(validator.is_valid(&content), "{tool}: {content} against {schema}");
    }
}
