//! What toolgate lists of an input schema's dialect, through rmcp's client: a schema that
//! declares `$schema` (the conformance example's `json_schema_2020_12_tool`, as the
//! official suite's `json-schema-2020-12` scenario checks it) is listed with it, its `$defs`
//! and `additionalProperties`, with and without a session; one that declares none gets
//! none (MCP's default dialect is 2020-12 already).

use crate::common::{TestClient, spawn_http_example};
use serde_json::Value;

const DRAFT_2020_12: &str = "https://json-schema.org/draft/2020-12/schema";

async fn input_schema(client: &TestClient, tool: &str) -> Value {
    let tools = client.tools().await;
    let tool = tools.iter().find(|t| t.name == tool).unwrap_or_else(|| panic!("{tool} is not listed"));
    Value::Object((*tool.input_schema).clone())
}

#[tokio::test]
async fn a_declared_dialect_is_listed_as_declared() {
    let (_server, url) = spawn_http_example("conformance", &[], &[]).await;
    for client in [TestClient::http(&url).await, TestClient::sessionless(&url).await] {
        let declared = input_schema(&client, "json_schema_2020_12_tool").await;
        assert_eq!(declared["$schema"], DRAFT_2020_12, "{declared}");
        assert!(declared["$defs"]["address"].is_object(), "{declared}");
        assert_eq!(declared["additionalProperties"], false, "{declared}");
        let undeclared = input_schema(&client, "slow_compute").await;
        assert!(undeclared.get("$schema").is_none(), "{undeclared}");
    }
}
