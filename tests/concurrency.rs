//! Linearizability per flow, through real clients over Streamable HTTP: concurrent
//! transitioning calls on one flow never run two handlers; everything else runs in parallel.

mod common;

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex};

use common::{TestClient, serve_in_process};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::json;
use tokio::sync::Barrier;
use toolgate::prelude::*;

toolgate::machine! {
    id: "invoice",
    initial: "draft",
    states: {
        draft:      { on: { SUBMIT: "review" } },
        review:     { on: { APPROVE: "approved" } },
        approved:   { on: { DISCHARGE: "discharged" } },
        discharged: { type: "final" },
    }
}

toolgate::machine! {
    id: "meeting",
    initial: "waiting",
    states: {
        waiting: { on: { MEET: "met" } },
        met:     { type: "final" },
    }
}

#[derive(Serialize, JsonSchema)]
struct Done {
    ok: bool,
}

/// How many times each flow's discharge handler ran.
static DISCHARGES: LazyLock<Mutex<HashMap<String, usize>>> = LazyLock::new(Default::default);

/// Submit the invoice.
#[action(domain = "invoice", bind_state = "draft", transition = "SUBMIT")]
async fn submit(_ctx: Ctx) -> Result<Done, ToolError> {
    Ok(Done { ok: true })
}

/// Approve the invoice.
#[action(domain = "invoice", bind_state = "review", transition = "APPROVE")]
async fn approve(_ctx: Ctx) -> Result<Done, ToolError> {
    Ok(Done { ok: true })
}

/// Discharge the invoice; counts its runs per flow. It lingers so that, were the gate
/// not linearizable, the other calls would arrive while it runs (correct code passes
/// however long it takes; a broken gate fails unless every racer is slower than this).
#[action(domain = "invoice", bind_state = "approved", transition = "DISCHARGE")]
async fn discharge(ctx: Ctx) -> Result<Done, ToolError> {
    *DISCHARGES.lock().unwrap().entry(format!("{:?}", ctx.flow())).or_default() += 1;
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    Ok(Done { ok: true })
}

/// Panics instead of submitting: a crashing handler must commit nothing.
#[action(domain = "invoice", bind_state = "draft", transition = "SUBMIT")]
async fn explode(_ctx: Ctx) -> Result<Done, ToolError> {
    panic!("boom");
}

static MEET: LazyLock<Barrier> = LazyLock::new(|| Barrier::new(2));
static RENDEZVOUS: LazyLock<Barrier> = LazyLock::new(|| Barrier::new(2));

/// Transitions after meeting a call from another flow: only passes if flows do not
/// serialize one another.
#[action(domain = "meeting", bind_state = "waiting", transition = "MEET")]
async fn meet(_ctx: Ctx) -> Result<Done, ToolError> {
    MEET.wait().await;
    Ok(Done { ok: true })
}

/// Returns after meeting a second call of the same flow: only passes if calls that fire
/// no transition do not serialize.
#[action(domain = "meeting")]
async fn rendezvous(_ctx: Ctx) -> Result<Done, ToolError> {
    RENDEZVOUS.wait().await;
    Ok(Done { ok: true })
}

async fn server_url() -> String {
    // Two domains: each session's first call selects its domain.
    let server = toolgate::Server::from_registry("concurrency").domain_policy(toolgate::DomainPolicy::LockOnFirstUse);
    serve_in_process(server.build().expect("valid registry")).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_concurrent_discharges_run_the_handler_once() {
    let client = TestClient::http(&server_url().await).await;
    client.ok("invoice_submit", json!({ "domain": "invoice" })).await;
    client.ok("invoice_approve", json!({ "domain": "invoice" })).await;

    let calls = (0..50).map(|_| client.call("invoice_discharge", json!({ "domain": "invoice" })));
    let results = futures::future::join_all(calls).await;

    let successes: Vec<_> = results.iter().filter(|(_, is_error)| !is_error).collect();
    let refusals: Vec<_> = results.iter().filter(|(_, is_error)| *is_error).collect();
    assert_eq!(successes.len(), 1, "{results:?}");
    assert_eq!(successes[0].0["state"], "discharged");
    assert_eq!(refusals.len(), 49);
    for (refusal, _) in refusals {
        assert_eq!(refusal["code"], "FORBIDDEN", "{refusal}");
        assert_eq!(refusal["current_state"], "discharged", "losers see the committed state");
    }
    let runs: usize = DISCHARGES.lock().unwrap().values().sum();
    assert_eq!(runs, 1, "the discharge handler ran {runs} times");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_panicking_handler_commits_nothing() {
    let client = TestClient::http(&server_url().await).await;
    let crashed = client.refused("invoice_explode", json!({ "domain": "invoice" })).await;
    assert_eq!(crashed["code"], "INTERNAL");
    assert!(crashed["message"].as_str().unwrap().contains("boom"), "{crashed}");
    // Still draft: the session survives and submit is still the way forward.
    assert_eq!(client.ok("invoice_submit", json!({ "domain": "invoice" })).await["state"], "review");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn flows_and_non_transitioning_calls_run_in_parallel() {
    let url = server_url().await;
    let (first, second) = (TestClient::http(&url).await, TestClient::http(&url).await);
    // Two flows' transitioning calls meet inside their handlers.
    let (a, b) = tokio::time::timeout(
        common::PATIENCE,
        futures::future::join(
            first.call("meeting_meet", json!({ "domain": "meeting" })),
            second.call("meeting_meet", json!({ "domain": "meeting" })),
        ),
    )
    .await
    .expect("transitioning calls on different flows serialized");
    assert_eq!((a.0["state"].as_str(), b.0["state"].as_str()), (Some("met"), Some("met")));
    // Two calls of one flow that fire no transition meet inside their handler.
    let (a, b) = tokio::time::timeout(
        common::PATIENCE,
        futures::future::join(
            first.call("meeting_rendezvous", json!({ "domain": "meeting" })),
            first.call("meeting_rendezvous", json!({ "domain": "meeting" })),
        ),
    )
    .await
    .expect("non-transitioning calls of one flow serialized");
    assert!(!a.1 && !b.1);
}
