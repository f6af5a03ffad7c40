//! One `tools/call` round trip through rmcp's client over an in-memory pipe, measured side
//! by side for:
//!
//! - `plain_rmcp`: a hand-written rmcp `ServerHandler` with the same tool (the floor);
//! - `toolgate_unbound`: the same tool as an `#[action]` (registry lookup, gate, flow load);
//! - `toolgate_transition`: two gated tools that each fire a transition (lease, gate,
//!   handler, compare-and-set, listing diff, `list_changed` notification).
//!
//! Run with `cargo bench -p toolgate --bench call_path`; figures go to BENCHMARKS.md as ratios.

// `criterion_group!` generates an undocumented `pub fn`.
#![allow(missing_docs)]

#[path = "../tests/common/mod.rs"]
mod common;
mod support;

use common::clients::connect_in_memory;
use criterion::{Criterion, criterion_group, criterion_main};
use rmcp::RoleClient;
use rmcp::service::RunningService;
use support::{Plain, request};

async fn call(client: &RunningService<RoleClient, ()>, tool: &'static str) {
    let result = client.call_tool(request(tool)).await.expect("call");
    assert_ne!(result.is_error, Some(true), "{tool}: {result:?}");
}

fn call_path(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let server = toolgate::Server::from_registry("bench").build().expect("registry");
    let plain = rt.block_on(connect_in_memory(Plain));
    let gated = rt.block_on(connect_in_memory(server.connection()));

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
