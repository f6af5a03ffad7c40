//! A ticket desk with two domains, `ticket` and `billing`, and one machine, `ticket`: the
//! worked example of `docs/instances-and-flows.md`. A billing tool is gated by the ticket it
//! refunds (`machine = "ticket"`): cross-domain gating, with no second machine.
//!
//! With the default intent lock ([`DomainPolicy::LockOnFirstUse`]) a conversation's first
//! call selects its domain, a change of domain is explicit (`switch_domain`), and a keyed
//! call that belongs to no conversation (MCP 2026-07-28, no session, no handle) is judged
//! on its instance alone.

mod common;

use common::{TestClient, serve_in_process};
use serde_json::{Value, json};
use toolgate::prelude::*;

toolgate::machine! {
    id: "ticket",
    key: "id",
    initial: "open",
    states: {
        open:     { on: { RESOLVE: "resolved" } },
        resolved: { on: { REFUND: "refunded", CLOSE: "closed" } },
        refunded: { on: { CLOSE: "closed" } },
        closed:   { type: "final" },
    }
}

/// A ticket id has one spelling.
const TICKET_ID: &str = r"^T-[1-9][0-9]*$";

#[derive(Deserialize, JsonSchema)]
struct TicketRef {
    /// The ticket, `T-` and a number.
    #[schemars(pattern(TICKET_ID))]
    id: String,
}

#[derive(Deserialize, JsonSchema)]
struct Search {
    /// Words the tickets contain.
    words: String,
}

#[derive(Serialize, JsonSchema)]
struct Done {
    /// What happened.
    outcome: String,
}

/// Show a ticket. Changes nothing.
#[action(domain = "ticket")]
async fn view(input: TicketRef) -> Result<Done, ToolError> {
    Ok(Done { outcome: format!("{} viewed", input.id) })
}

/// Find tickets by their words. Changes nothing.
#[action(domain = "ticket")]
async fn search(input: Search) -> Result<Done, ToolError> {
    Ok(Done { outcome: format!("no ticket says `{}`", input.words) })
}

/// Resolve an open ticket. Does not refund or close it.
#[action(domain = "ticket", bind_state = "open", transition = "RESOLVE")]
async fn resolve(input: TicketRef) -> Result<Done, ToolError> {
    Ok(Done { outcome: format!("{} resolved", input.id) })
}

/// Close a resolved or refunded ticket. Does not refund it.
#[action(domain = "ticket", bind_state = ["resolved", "refunded"], transition = "CLOSE")]
async fn close(input: TicketRef) -> Result<Done, ToolError> {
    Ok(Done { outcome: format!("{} closed", input.id) })
}

/// Refund the customer of a resolved ticket. Does not close the ticket.
///
/// A billing tool gated by the ticket's machine: billing has no machine of its own.
#[action(domain = "billing", machine = "ticket", bind_state = "resolved", transition = "REFUND")]
async fn refund(input: TicketRef) -> Result<Done, ToolError> {
    Ok(Done { outcome: format!("{} refunded", input.id) })
}

fn desk() -> toolgate::Server {
    Server::from_registry("desk").build().expect("the desk is valid")
}

fn ticket(id: &str) -> Value {
    json!({ "domain": "ticket", "id": id })
}

fn billing(id: &str) -> Value {
    json!({ "domain": "billing", "id": id })
}

/// Without a session or a handle, a keyed read answers and starts no conversation; a
/// keyed transition does too, judged on its ticket's state.
#[tokio::test]
async fn a_keyed_call_outside_any_conversation_is_judged_on_its_instance() {
    let client = TestClient::sessionless(&serve_in_process(desk()).await).await;
    let viewed = client.ok("ticket_view", ticket("T-1")).await;
    assert_eq!((viewed["state"].as_str(), viewed["domain"].as_str()), (Some("open"), Some("ticket")), "{viewed}");
    assert_eq!(viewed.get("flow"), None, "a read outside any conversation starts none: {viewed}");
    assert_eq!(viewed["next"], json!(["ticket_resolve", "ticket_view"]), "{viewed}");

    // Another domain's keyed call, just after: no conversation holds a domain to refuse it.
    let early = client.refused("billing_refund", billing("T-1")).await;
    assert_eq!((early["code"].as_str(), early["current_state"].as_str()), (Some("FORBIDDEN"), Some("open")), "{early}");
    assert_eq!(early["next"], json!(["ticket_resolve", "ticket_view"]), "{early}");
    assert_eq!(client.ok("ticket_resolve", ticket("T-1")).await["state"], "resolved");
    let refunded = client.ok("billing_refund", billing("T-1")).await;
    assert_eq!((refunded["state"].as_str(), refunded["domain"].as_str()), (Some("refunded"), Some("billing")));
    assert_eq!(refunded["next"], json!(["ticket_close", "ticket_view"]), "{refunded}");
}

/// A conversation's first call selects its domain; leaving it takes `switch_domain`.
#[tokio::test]
async fn a_conversations_first_call_selects_its_domain() {
    let client = TestClient::sessionless(&serve_in_process(desk()).await).await;
    // An unkeyed call starts a conversation in its domain, and returns its handle.
    let found = client.ok("ticket_search", json!({ "domain": "ticket", "words": "printer" })).await;
    let handle = found["flow"].as_str().expect("a conversation's first result carries its handle").to_string();
    let with = |mut arguments: Value| {
        arguments["flow"] = json!(handle);
        arguments
    };
    // In that conversation, billing is another domain: the change is explicit.
    let drifted = client.refused("billing_refund", with(billing("T-2"))).await;
    assert_eq!(
        (drifted["code"].as_str(), drifted["active_domain"].as_str()),
        (Some("DOMAIN_MISMATCH"), Some("ticket")),
        "{drifted}"
    );
    // What the model may do next is named whole: the refund is another domain's, behind a
    // switch, which the result says before the model is refused for it.
    let resolved = client.ok("ticket_resolve", with(ticket("T-2"))).await;
    assert_eq!(resolved["next"], json!(["ticket_close", "ticket_view"]), "{resolved}");
    assert_eq!(resolved["next_after_switch"], json!({ "billing": ["billing_refund"] }), "{resolved}");
    let switched = client.ok("switch_domain", with(json!({ "domain": "billing", "reason": "a refund" }))).await;
    assert_eq!(switched["domain"], "billing", "{switched}");
    let handle = switched["flow"].as_str().unwrap().to_string();
    let refunded =
        client.ok("billing_refund", json!({ "domain": "billing", "id": "T-2", "flow": handle.clone() })).await;
    assert_eq!(refunded["state"], "refunded", "{refunded}");
    assert_eq!(refunded["next"], json!([]), "{refunded}");
    assert_eq!(refunded["next_after_switch"], json!({ "ticket": ["ticket_close", "ticket_view"] }), "{refunded}");
    // ...and back again is as explicit.
    let back = client.refused("ticket_close", json!({ "domain": "ticket", "id": "T-2", "flow": handle })).await;
    assert_eq!(back["code"], "DOMAIN_MISMATCH", "{back}");
}

/// On a session the conversation is the session: its first call, keyed or not, selects
/// the domain.
#[tokio::test]
async fn a_sessions_first_call_selects_its_domain() {
    let client = TestClient::http(&serve_in_process(desk()).await).await;
    assert_eq!(client.ok("ticket_view", ticket("T-3")).await["domain"], "ticket");
    let drifted = client.refused("billing_refund", billing("T-3")).await;
    assert_eq!(drifted["code"], "DOMAIN_MISMATCH", "{drifted}");
}

/// A machine whose tools span two domains has a history tool in each, which the intent
/// lock judges as it judges that domain's tools; both read the one history.
#[tokio::test]
async fn a_machine_in_two_domains_has_a_history_tool_in_each() {
    let server = Server::from_registry("desk").history_tool("ticket").build().expect("a history tool per domain");
    let client = TestClient::sessionless(&serve_in_process(server).await).await;
    let names: Vec<String> = client.tools().await.iter().map(|t| t.name.to_string()).collect();
    assert!(names.contains(&"ticket_history".into()) && names.contains(&"billing_ticket_history".into()), "{names:?}");
    client.ok("ticket_resolve", ticket("T-7")).await;
    client.ok("billing_refund", billing("T-7")).await;
    let events = |history: &Value| -> Vec<String> {
        let entries = history["entries"].as_array().cloned().unwrap_or_default();
        entries.iter().map(|e| e["event"].as_str().unwrap_or_default().to_string()).collect()
    };
    let from_billing = client.ok("billing_ticket_history", billing("T-7")).await;
    let from_ticket = client.ok("ticket_history", ticket("T-7")).await;
    assert_eq!(events(&from_billing), ["RESOLVE", "REFUND"], "{from_billing}");
    assert_eq!(events(&from_ticket), events(&from_billing), "{from_ticket}");
    // In a conversation of the ticket domain, billing's history tool is billing's.
    let found = client.ok("ticket_search", json!({ "domain": "ticket", "words": "printer" })).await;
    let handle = found["flow"].as_str().unwrap().to_string();
    let locked =
        client.refused("billing_ticket_history", json!({ "domain": "billing", "id": "T-7", "flow": handle })).await;
    assert_eq!(locked["code"], "DOMAIN_MISMATCH", "{locked}");
}
