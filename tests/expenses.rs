//! An expense desk, as a new user wrote it: a report is its filer's (`owner: principal`), a
//! manager approves it with a one-time code (`owned_instances_managed_by`, `confirm`), and
//! nobody approves their own — a guard that reads the caller, judged before any code is
//! asked for.

mod common;

use common::clients::Lifecycle;
use common::confirm::Outbox;
use common::{TestClient, serve_in_process};
use serde_json::{Value, json};
use toolgate::StaticTokens;
use toolgate::prelude::*;

const ALICE: &str = "alice-of-a-0123456789";
const CAROL: &str = "carol-of-a-0123456789";
const MAX: &str = "max-of-a-0123456789ab";
const MIA: &str = "mia-of-a-0123456789ab";

toolgate::machine! {
    id: "expense",
    key: "expense_id",
    owner: principal,
    mint: "E-{random}",
    initial: "submitted",
    states: {
        submitted: { on: { APPROVE: { target: "approved", guard: "not_your_own" } } },
        approved:  { type: "final" },
    }
}

/// Nobody approves their own report: a guard that reads who calls.
fn not_your_own(_: &(), _: &ExpenseRef, caller: &Caller) -> Result<(), Failure> {
    if caller.is_owner() {
        return Err(Failure::new("OWN_REPORT", "nobody approves their own report")
            .with_hint("ask another manager of your team to approve it"));
    }
    Ok(())
}

#[derive(Deserialize, JsonSchema)]
struct Expense {
    /// What was bought.
    text: String,
}

#[derive(Deserialize, JsonSchema)]
struct ExpenseRef {
    /// The report, as `expense_file` returned it.
    #[schemars(pattern(r"^E-[a-z2-7]{26}$"))]
    expense_id: String,
}

#[derive(Serialize, JsonSchema)]
struct Report {
    expense_id: String,
}

/// File an expense report of your own. Does not approve it.
#[action(domain = "expense", creates)]
async fn expense_file(input: Expense, ctx: Ctx) -> Result<Report, ToolError> {
    let _ = input.text;
    Ok(Report { expense_id: ctx.instance().unwrap_or_default().to_string() })
}

/// Approve another's submitted report, with a one-time code: for managers. Does not pay it.
#[action(
    domain = "expense",
    bind_state = "submitted",
    transition = "APPROVE",
    scope = "expenses:approve",
    transactional,
    confirm = "otp"
)]
async fn expense_approve(input: ExpenseRef) -> Result<Report, ToolError> {
    Ok(Report { expense_id: input.expense_id })
}

fn desk(outbox: &Outbox) -> toolgate::Server {
    desk_builder(outbox).build().expect("the desk")
}

fn desk_builder(outbox: &Outbox) -> toolgate::ServerBuilder {
    let manager = |name: &str| Principal::new(name).with_tenant("a").with_scopes(["expenses:approve"]);
    let tokens = StaticTokens::new()
        .token(ALICE, Principal::new("alice").with_tenant("a"))
        .token(CAROL, Principal::new("carol").with_tenant("a"))
        .token(MAX, manager("max"))
        .token(MIA, manager("mia"));
    Server::from_registry("expenses")
        .authenticator(tokens)
        .history_tool("expense")
        .owned_instances_managed_by("expense", ["expenses:approve"])
        .otp_sender(toolgate_runtime::confirm::OutboxSender::new(outbox.path()))
}

/// The desk as its user wrote it passes every rule of the audit: the approval is guarded,
/// confirmed and scoped, and the managers' scope reaches every filer's report.
#[test]
fn the_desk_passes_the_audit() {
    let outbox = Outbox::new();
    let report = desk_builder(&outbox).build().expect("the desk").audit();
    let failed: Vec<String> = report
        .findings
        .iter()
        .filter(|f| f.verdict == toolgate::inspect::Verdict::Fail)
        .map(|f| format!("{} {:?}: {}", f.tool, f.rule, f.detail))
        .collect();
    assert!(failed.is_empty(), "{failed:#?}");
}

async fn client(url: &str, token: &str) -> TestClient {
    TestClient::http_as(url, Lifecycle::Sessionless, Some(token)).await
}

fn report(id: &str) -> Value {
    json!({ "domain": "expense", "expense_id": id })
}

/// How many codes the outbox has sent (none before the first).
fn codes_sent(outbox: &Outbox) -> usize {
    std::fs::read_to_string(outbox.path()).map(|text| text.lines().count()).unwrap_or(0)
}

/// A manager's own report is refused by the guard before any code is asked for or sent;
/// another manager approves it with a code; a colleague without the scope is told, by
/// every tool and the history tool, what a report never filed gets; and `next` never names
/// a tool its reader may not call.
#[tokio::test]
async fn a_manager_approves_another_s_report_and_never_their_own() {
    let outbox = Outbox::new();
    let url = serve_in_process(desk(&outbox)).await;
    let (alice, carol, max, mia) =
        (client(&url, ALICE).await, client(&url, CAROL).await, client(&url, MAX).await, client(&url, MIA).await);

    // Max files a report of his own and tries to approve it: refused, no code sent.
    let own = max.ok("expense_file", json!({ "domain": "expense", "text": "dinner" })).await;
    let own = own["expense_id"].as_str().expect("an id").to_string();
    let refused = max.refused("expense_approve", report(&own)).await;
    assert_eq!((refused["code"].as_str(), refused["reason_code"].as_str()), (Some("GUARD_FAILED"), Some("OWN_REPORT")));
    assert_eq!(refused["guard"], "not_your_own", "{refused}");
    assert_eq!(codes_sent(&outbox), 0, "a code was sent for a call the guard refuses");
    // Mia approves it, with her code.
    let approved = common::confirm::confirmed(&mia, "expense_approve", report(&own), &outbox).await;
    assert_eq!(approved["state"], "approved", "{approved}");

    // Alice's report: Max approves it.
    let filed = alice.ok("expense_file", json!({ "domain": "expense", "text": "taxi" })).await;
    let id = filed["expense_id"].as_str().expect("an id").to_string();
    // The filer, who may not approve, is never told to; a manager is.
    let seen = alice.ok("expense_history", report(&id)).await;
    assert!(!seen.to_string().contains("expense_approve"), "{seen}");
    let seen = max.ok("expense_history", report(&id)).await;
    assert!(seen["next"].to_string().contains("expense_approve"), "{seen}");
    // A colleague without the scope: every tool answers as for a report never filed.
    let never = "E-aaaaaaaaaaaaaaaaaaaaaaaaaa";
    for tool in ["expense_history", "expense_approve"] {
        let theirs = carol.try_call(tool, report(&id)).await.expect("an answer");
        let unmade = carol.try_call(tool, report(never)).await.expect("an answer");
        let theirs = serde_json::to_string(&theirs).unwrap().replace(&id, "<KEY>");
        let unmade = serde_json::to_string(&unmade).unwrap().replace(never, "<KEY>");
        assert_eq!(theirs, unmade, "carol {tool}: another's report answers unlike one never filed");
    }
    let approved = common::confirm::confirmed(&max, "expense_approve", report(&id), &outbox).await;
    assert_eq!(approved["state"], "approved", "{approved}");
    let history = alice.ok("expense_history", report(&id)).await;
    let entries = history["entries"].as_array().cloned().unwrap_or_default();
    assert_eq!(entries.len(), 1, "{history}");
    assert_eq!((entries[0]["principal"].as_str(), entries[0]["event"].as_str()), (Some("max"), Some("APPROVE")));
}
