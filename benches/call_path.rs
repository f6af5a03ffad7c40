//! One `tools/call` round trip through rmcp's client over an in-memory pipe, measured side
//! by side for:
//!
//! - `plain_rmcp`: a hand-written rmcp `ServerHandler` with the same tool (the floor);
//! - `toolgate_unbound`: the same tool as an `#[action]` (registry lookup, gate, flow load);
//! - `toolgate_transition`: two gated tools that each fire a transition (lease, gate,
//!   handler, compare-and-set, listing diff, `list_changed` notification).
//!
//! Run with `cargo bench --bench call_path`; figures go to BENCHMARKS.md as ratios.

// `criterion_group!` generates an undocumented `pub fn`.
#![allow(missing_docs)]

use criterion::{Criterion, criterion_group, criterion_main};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ErrorData, ListToolsResult, PaginatedRequestParams,
    ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RunningService};
use rmcp::{RoleClient, RoleServer, ServerHandler, ServiceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use toolgate::prelude::*;

toolgate::machine! {
    id: "light",
    initial: "off",
    states: {
        off: { on: { ON: "on" } },
        on:  { on: { OFF: "off" } },
    }
}

#[derive(Deserialize, Serialize, JsonSchema)]
struct Echo {
    /// Any text.
    text: String,
}

/// Echo the text back.
#[action(domain = "light")]
async fn echo(input: Echo, _ctx: Ctx) -> Result<Echo, ToolError> {
    Ok(input)
}

/// Switch the light on.
#[action(domain = "light", bind_state = "off", transition = "ON")]
async fn on(input: Echo, _ctx: Ctx) -> Result<Echo, ToolError> {
    Ok(input)
}

/// Switch the light off.
#[action(domain = "light", bind_state = "on", transition = "OFF")]
async fn off(input: Echo, _ctx: Ctx) -> Result<Echo, ToolError> {
    Ok(input)
}

/// The floor: rmcp with a hand-written handler doing the same (de)serialization.
#[derive(Clone)]
struct Plain;

impl ServerHandler for Plain {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let schema = serde_json::to_value(schemars::schema_for!(Echo)).unwrap();
        let Value::Object(schema) = schema else { unreachable!() };
        Ok(ListToolsResult::with_all_items(vec![Tool::new("light_echo", "Echo the text back.", schema)]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = Value::Object(request.arguments.unwrap_or_default());
        let echo: Echo = serde_json::from_value(args).map_err(|e| ErrorData::invalid_params(e.to_string(), None))?;
        Ok(CallToolResult::structured(serde_json::to_value(echo).unwrap()).into())
    }
}

async fn connect<S: ServerHandler>(server: S) -> RunningService<RoleClient, ()> {
    let (client_io, server_io) = tokio::io::duplex(1 << 16);
    tokio::spawn(async move {
        let running = server.serve(tokio::io::split(server_io)).await.expect("server");
        let _ = running.waiting().await;
    });
    ().serve(tokio::io::split(client_io)).await.expect("client")
}

fn args() -> Map<String, Value> {
    let Value::Object(args) = json!({ "text": "hello" }) else { unreachable!() };
    args
}

async fn call(client: &RunningService<RoleClient, ()>, tool: &'static str) {
    let result = client.call_tool(CallToolRequestParams::new(tool).with_arguments(args())).await.expect("call");
    assert_ne!(result.is_error, Some(true), "{tool}: {result:?}");
}

fn call_path(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let server = toolgate::Server::from_registry("bench").build().expect("registry");
    let plain = rt.block_on(connect(Plain));
    let gated = rt.block_on(connect(server.connection()));

    let mut group = c.benchmark_group("tools_call_round_trip");
    group.bench_function("plain_rmcp", |b| b.to_async(&rt).iter(|| call(&plain, "light_echo")));
    group.bench_function("toolgate_unbound", |b| b.to_async(&rt).iter(|| call(&gated, "light_echo")));
    // Two calls per iteration (on, then off): report per call by halving in BENCHMARKS.md.
    group.bench_function("toolgate_transition_pair", |b| {
        b.to_async(&rt).iter(|| async {
            call(&gated, "light_on").await;
            call(&gated, "light_off").await;
        })
    });
    group.finish();
}

criterion_group!(benches, call_path);
criterion_main!(benches);
