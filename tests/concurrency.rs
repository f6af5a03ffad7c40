//! Linearizability per instance and per flow, through real clients over Streamable HTTP:
//! concurrent transitioning calls on one invoice never run two handlers, whichever
//! sessions make them; calls on different invoices or flows never wait on one another;
//! waits and handlers are bounded, a creation's wait for its number included.

mod common;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{LazyLock, Mutex};
use std::time::Duration;

use common::stores::{OnCommit, Watched};
use common::{PATIENCE, TestClient, serve_in_process};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::sync::Barrier;
use toolgate::prelude::*;
use toolgate::store::{Snapshot, StoreKey};

toolgate::machine! {
    id: "invoice",
    key: "id",
    initial: "draft",
    states: {
        draft:      { on: { SUBMIT: "review" } },
        review:     { on: { APPROVE: "approved" } },
        approved:   { on: { DISCHARGE: "discharged" } },
        discharged: { type: "final" },
    }
}

// One instance per ticket, its id drawn from the store's counter (`T-1`, `T-2`, …).
toolgate::machine! {
    id: "ticket",
    key: "id",
    mint: "T-{n}",
    initial: "open",
    states: {
        open:   { on: { CLOSE: "closed" } },
        closed: { type: "final" },
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

#[derive(Deserialize, JsonSchema)]
struct InvoiceRef {
    id: String,
}

#[derive(Serialize, JsonSchema)]
struct Done {
    ok: bool,
}

/// How many times the discharge handler ran, per invoice.
static DISCHARGES: LazyLock<Mutex<HashMap<String, usize>>> = LazyLock::new(Default::default);

/// Two submits of different invoices meet here: only passes if instances do not
/// serialize one another.
static SUBMITS_MEET: LazyLock<Barrier> = LazyLock::new(|| Barrier::new(2));

/// Set once the hanging approval is inside its handler (holding INV-9's lease).
static HANG_STARTED: AtomicBool = AtomicBool::new(false);

/// Submit the invoice. Invoices named `MEET-…` wait for another one inside the handler.
#[action(domain = "invoice", bind_state = "draft", transition = "SUBMIT")]
async fn submit(input: InvoiceRef) -> Result<Done, ToolError> {
    if input.id.starts_with("MEET-") {
        SUBMITS_MEET.wait().await;
    }
    Ok(Done { ok: true })
}

/// Approve the invoice. INV-9's first approval hangs (until its deadline stops it).
#[action(domain = "invoice", bind_state = "review", transition = "APPROVE", timeout = "3s")]
async fn approve(input: InvoiceRef) -> Result<Done, ToolError> {
    if input.id == "INV-9" && !HANG_STARTED.swap(true, Ordering::SeqCst) {
        std::future::pending::<()>().await;
    }
    Ok(Done { ok: true })
}

/// Discharge the invoice; counts its runs per invoice. It lingers so that, were the gate
/// not linearizable, the other calls would arrive while it runs (correct code passes
/// however long it takes; a broken gate fails unless every racer is slower than this).
#[action(domain = "invoice", bind_state = "approved", transition = "DISCHARGE")]
async fn discharge(input: InvoiceRef, ctx: Ctx) -> Result<Done, ToolError> {
    assert_eq!(ctx.instance(), Some(input.id.as_str()));
    *DISCHARGES.lock().unwrap().entry(input.id).or_default() += 1;
    tokio::time::sleep(Duration::from_millis(200)).await;
    Ok(Done { ok: true })
}

/// Panics instead of submitting: a crashing handler must commit nothing.
#[action(domain = "invoice", bind_state = "draft", transition = "SUBMIT")]
async fn explode(_input: InvoiceRef) -> Result<Done, ToolError> {
    panic!("boom");
}

static MEET: LazyLock<Barrier> = LazyLock::new(|| Barrier::new(2));
static RENDEZVOUS: LazyLock<Barrier> = LazyLock::new(|| Barrier::new(2));

/// Transitions after meeting a call from another flow: only passes if flows do not
/// serialize one another.
#[action(domain = "meeting", bind_state = "waiting", transition = "MEET")]
async fn meet() -> Result<Done, ToolError> {
    MEET.wait().await;
    Ok(Done { ok: true })
}

/// Returns after meeting a second call of the same flow: only passes if calls that fire
/// no transition do not serialize.
#[action(domain = "meeting")]
async fn rendezvous() -> Result<Done, ToolError> {
    RENDEZVOUS.wait().await;
    Ok(Done { ok: true })
}

async fn server_url() -> String {
    // Two domains: each session's first call selects its domain.
    let server = toolgate::Server::from_registry("concurrency")
        .domain_policy(toolgate::DomainPolicy::LockOnFirstUse)
        .lease_wait(Duration::from_millis(300));
    serve_in_process(server.build().expect("valid registry")).await
}

fn inv(id: &str) -> Value {
    json!({ "domain": "invoice", "id": id })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_concurrent_discharges_from_fifty_sessions_run_the_handler_once() {
    let url = server_url().await;
    let owner = TestClient::http(&url).await;
    owner.ok("invoice_submit", inv("INV-1")).await;
    owner.ok("invoice_approve", inv("INV-1")).await;

    let sessions = futures::future::join_all((0..50).map(|_| TestClient::http(&url))).await;
    let calls = sessions.iter().map(|session| session.call("invoice_discharge", inv("INV-1")));
    let results = futures::future::join_all(calls).await;

    let successes: Vec<_> = results.iter().filter(|(_, is_error)| !is_error).collect();
    let refusals: Vec<_> = results.iter().filter(|(_, is_error)| *is_error).collect();
    assert_eq!(successes.len(), 1, "{results:?}");
    assert_eq!(successes[0].0["state"], "discharged");
    assert_eq!(refusals.len(), 49);
    for (refusal, _) in refusals {
        assert_eq!(refusal["code"], "FORBIDDEN", "{refusal}");
        assert_eq!(refusal["instance"], "INV-1");
        assert_eq!(refusal["current_state"], "discharged", "losers see the committed state");
    }
    let runs = DISCHARGES.lock().unwrap().get("INV-1").copied().unwrap_or_default();
    assert_eq!(runs, 1, "the discharge handler ran {runs} times");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_invoices_transitions_do_not_serialize() {
    let url = server_url().await;
    let (first, second) = (TestClient::http(&url).await, TestClient::http(&url).await);
    // Both submits meet inside their handlers, each holding its invoice's lease.
    let (a, b) = tokio::time::timeout(
        PATIENCE,
        futures::future::join(
            first.call("invoice_submit", inv("MEET-A")),
            second.call("invoice_submit", inv("MEET-B")),
        ),
    )
    .await
    .expect("transitions on two invoices serialized");
    assert_eq!((a.0["state"].as_str(), b.0["state"].as_str()), (Some("review"), Some("review")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_hung_handler_bounds_the_wait_on_its_invoice_only() {
    let url = server_url().await;
    let (first, second) = (TestClient::http(&url).await, TestClient::http(&url).await);
    first.ok("invoice_submit", inv("INV-9")).await;
    first.ok("invoice_submit", inv("INV-10")).await;

    let hung = tokio::spawn(async move { first.call("invoice_approve", inv("INV-9")).await });
    tokio::time::timeout(PATIENCE, async {
        while !HANG_STARTED.load(Ordering::SeqCst) {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("the hanging handler never started");

    // INV-9's lease is held: a second transitioning call gives up after the wait.
    let busy = second.refused("invoice_approve", inv("INV-9")).await;
    assert_eq!(busy["code"], "FLOW_BUSY", "{busy}");
    assert!(busy["retry_after_ms"].as_u64().unwrap() > 0, "{busy}");
    // Another invoice is not held up.
    assert_eq!(second.ok("invoice_approve", inv("INV-10")).await["state"], "approved");
    assert!(!hung.is_finished(), "the hung call should still be running");

    // Past its deadline the hung call is stopped, and nothing was committed.
    let (timed_out, is_error) = tokio::time::timeout(PATIENCE, hung).await.expect("the deadline was not kept").unwrap();
    assert!(is_error);
    assert_eq!((timed_out["code"].as_str(), timed_out["timeout_ms"].as_u64()), (Some("TIMEOUT"), Some(3000)));
    assert_eq!(second.ok("invoice_view_state", inv("INV-9")).await["state"], "review");
    // The lease went with the stopped call: INV-9 can be approved now.
    assert_eq!(second.ok("invoice_approve", inv("INV-9")).await["state"], "approved");
}

/// What state an invoice is in.
#[action(domain = "invoice", name = "invoice_view_state")]
async fn view_state(_input: InvoiceRef) -> Result<Done, ToolError> {
    Ok(Done { ok: true })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_panicking_handler_commits_nothing() {
    let client = TestClient::http(&server_url().await).await;
    let crashed = client.refused("invoice_explode", inv("INV-3")).await;
    assert_eq!(crashed["code"], "INTERNAL");
    assert!(crashed["correlation_id"].is_string(), "{crashed}");
    // The panic text is for the server's log, never for the model.
    assert!(!crashed.to_string().contains("boom"), "{crashed}");
    // Still draft: the session survives and submit is still the way forward.
    assert_eq!(client.ok("invoice_submit", inv("INV-3")).await["state"], "review");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn flows_and_non_transitioning_calls_run_in_parallel() {
    let url = server_url().await;
    let (first, second) = (TestClient::http(&url).await, TestClient::http(&url).await);
    // Two flows' transitioning calls meet inside their handlers.
    let (a, b) = tokio::time::timeout(
        PATIENCE,
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
        PATIENCE,
        futures::future::join(
            first.call("meeting_rendezvous", json!({ "domain": "meeting" })),
            first.call("meeting_rendezvous", json!({ "domain": "meeting" })),
        ),
    )
    .await
    .expect("non-transitioning calls of one flow serialized");
    assert!(!a.1 && !b.1);
}

/// Open a ticket: a new instance, its id drawn from the ticket counter.
#[action(domain = "ticket", creates)]
async fn open() -> Result<Done, ToolError> {
    Ok(Done { ok: true })
}

/// While set, a commit to the ticket counter hangs until [`RELEASE_MINTING`] is notified:
/// a call stuck drawing a number (a store that stopped answering it, say).
static STALL_MINTING: AtomicBool = AtomicBool::new(false);
static MINTING_STALLED: AtomicBool = AtomicBool::new(false);
static RELEASE_MINTING: tokio::sync::Notify = tokio::sync::Notify::const_new();

/// Holds a commit to the ticket counter while [`STALL_MINTING`] is set.
#[derive(Clone, Default)]
struct StallTicketCounter;

#[async_trait::async_trait]
impl OnCommit for StallTicketCounter {
    async fn before(&self, key: &StoreKey, _next: &Snapshot) {
        if *key == StoreKey::minted("ticket", None) && STALL_MINTING.load(Ordering::SeqCst) {
            let released = RELEASE_MINTING.notified();
            MINTING_STALLED.store(true, Ordering::SeqCst);
            released.await;
        }
    }
}

/// A creating call waits for its number at most the lease wait: with another call stuck
/// drawing from the same counter, it is answered `FLOW_BUSY` (it was held for as long as
/// the stuck call, without bound). The stuck call, once its store answers, still creates
/// its instance.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_creation_waits_for_its_number_at_most_the_lease_wait() {
    let server = toolgate::Server::from_registry("concurrency")
        .domain_policy(toolgate::DomainPolicy::LockOnFirstUse)
        .lease_wait(Duration::from_millis(300))
        .store(Watched::<StallTicketCounter>::default());
    let url = serve_in_process(server.build().expect("valid registry")).await;
    let (first, second) = (TestClient::http(&url).await, TestClient::http(&url).await);
    let ticket = json!({ "domain": "ticket" });
    first.ok("ticket_open", ticket.clone()).await;

    STALL_MINTING.store(true, Ordering::SeqCst);
    let stuck = tokio::spawn({
        let ticket = ticket.clone();
        async move { first.call("ticket_open", ticket).await }
    });
    tokio::time::timeout(PATIENCE, async {
        while !MINTING_STALLED.load(Ordering::SeqCst) {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("the first creation never reached the counter");

    let busy = tokio::time::timeout(PATIENCE, second.refused("ticket_open", ticket.clone()))
        .await
        .expect("the second creation waited for as long as the stuck one");
    assert_eq!(busy["code"], "FLOW_BUSY", "{busy}");
    assert!(busy["retry_after_ms"].as_u64().unwrap() > 0, "{busy}");
    assert!(!stuck.is_finished(), "the first creation is still stuck on the counter");

    STALL_MINTING.store(false, Ordering::SeqCst);
    RELEASE_MINTING.notify_waiters();
    let (created, is_error) = tokio::time::timeout(PATIENCE, stuck).await.expect("released").unwrap();
    assert!(!is_error, "{created}");
    second.ok("ticket_open", ticket).await;
}
