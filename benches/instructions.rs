//! Instruction counts per `tools/call`, for comparisons that machine noise cannot blur.
//!
//! Runs one scenario on a single-threaded runtime over an in-memory pipe: `CALLS` round
//! trips after connecting. Run it under callgrind twice — with `CALLS=0` and with
//! `CALLS=N` — and divide the difference by N:
//!
//! ```text
//! cargo bench -p toolgate --bench instructions --no-run
//! B=$(ls target/release/deps/instructions-* | grep -v '\.d$')
//! for s in plain_rmcp toolgate_unbound toolgate_transition toolgate_keyed_transition toolgate_context_transition toolgate_typed; do for n in 0 2000; do
//!   SCENARIO=$s CALLS=$n valgrind --tool=callgrind --callgrind-out-file=/dev/null $B --bench 2>&1 | grep refs
//! done; done
//! ```

#[path = "../tests/common/mod.rs"]
mod common;
mod support;

use common::clients::connect_in_memory;
use support::{Plain, request};

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let scenario = std::env::var("SCENARIO").unwrap_or_else(|_| "toolgate_unbound".into());
    let calls: usize = std::env::var("CALLS").ok().and_then(|c| c.parse().ok()).unwrap_or(1000);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let server = toolgate::Server::from_registry("bench").build().expect("registry");
        let (client, tools): (_, &[&str]) = match scenario.as_str() {
            "plain_rmcp" => (connect_in_memory(Plain).await, &["light_echo"]),
            "toolgate_unbound" => (connect_in_memory(server.connection()).await, &["light_echo"]),
            "toolgate_transition" => (connect_in_memory(server.connection()).await, &["light_on", "light_off"]),
            // A keyed instance's transition: its history entry committed with it.
            "toolgate_keyed_transition" => {
                (connect_in_memory(server.connection()).await, &["light_lamp_on", "light_lamp_off"])
            }
            // The same, with the instance's data (its context) changed and committed too.
            "toolgate_context_transition" => {
                (connect_in_memory(server.connection()).await, &["light_dimmer_on", "light_dimmer_off"])
            }
            "toolgate_typed" => (connect_in_memory(server.connection()).await, &["light_price"]),
            other => panic!("unknown SCENARIO {other}"),
        };
        for tool in tools.iter().cycle().take(calls) {
            let result = client.call_tool(request(tool)).await.expect("call");
            assert_ne!(result.is_error, Some(true), "{tool}: {result:?}");
        }
        let _ = client.cancel().await;
    });
}
