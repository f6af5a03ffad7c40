//! OpenTelemetry (feature `otel`): a call whose request carries a `traceparent` in `_meta`
//! is exported as a child of that remote span, in its trace — through the SDK's own
//! tracer and an in-memory exporter, installed as a user installs theirs.

mod common;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};
use serde_json::json;
use toolgate::prelude::*;
use tracing_subscriber::layer::SubscriberExt;

#[derive(Deserialize, JsonSchema)]
struct Greeting {
    /// Whom to greet.
    name: String,
}

#[derive(Serialize, JsonSchema)]
struct Greeted {
    greeting: String,
}

/// Greet someone. Does not remember them.
#[action(global)]
async fn otel_greet(input: Greeting) -> Result<Greeted, ToolError> {
    Ok(Greeted { greeting: format!("hello, {}", input.name) })
}

#[tokio::test]
async fn a_call_joins_the_trace_its_traceparent_names() {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder().with_simple_exporter(exporter.clone()).build();
    let subscriber = tracing_subscriber::registry()
        .with(tracing_subscriber::EnvFilter::new("info"))
        .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("toolgate-test")));
    tracing::subscriber::set_global_default(subscriber).expect("the only subscriber of this test binary");

    let server = Server::from_registry("otel").build().expect("server");
    let url = common::serve_in_process(server).await;
    let client = common::raw::SessionlessClient::new(&url);
    let (trace_id, parent_id) = ("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7");
    let mut params = json!({ "name": "otel_greet", "arguments": { "name": "Ada" } });
    params["_meta"] = common::raw::SessionlessClient::request_meta();
    params["_meta"]["traceparent"] = json!(format!("00-{trace_id}-{parent_id}-01"));
    let reply = client.request("tools/call", params, &[]).await.result();
    assert_eq!(reply["structuredContent"]["greeting"], "hello, Ada", "{reply}");

    let _ = provider.force_flush();
    let spans = exporter.get_finished_spans().unwrap();
    let call = spans.iter().find(|s| s.name == "tool_call").expect("the call's span was exported");
    assert_eq!(call.span_context.trace_id().to_string(), trace_id);
    assert_eq!(call.parent_span_id.to_string(), parent_id);
    assert!(call.parent_span_is_remote);
    assert!(call.attributes.iter().any(|kv| kv.key.as_str() == "tool" && kv.value.as_str() == "otel_greet"));
}
