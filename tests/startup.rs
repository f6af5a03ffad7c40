//! A registry with mistakes rustc cannot see is refused at start-up, with every problem
//! reported at once and located at its `#[action]`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolgate::Machine;
use toolgate::prelude::*;
use toolgate::registry::StartupProblem;

toolgate::machine! {
    id: "ledger",
    initial: "open",
    states: {
        open:   { on: { CLOSE: "closed" } },
        closed: { type: "final" },
    }
}

#[derive(Serialize, JsonSchema)]
struct Posted {
    ok: bool,
}

#[derive(Serialize, JsonSchema)]
struct Stateful {
    state: String,
}

#[derive(Deserialize, JsonSchema)]
struct Entry {
    #[allow(dead_code)]
    amount: u64,
}

/// Post an entry.
#[action(domain = "ledger", name = "ledger_post")]
async fn post(_input: Entry) -> Result<Posted, ToolError> {
    Ok(Posted { ok: true })
}

/// Post an entry again, under the same tool name.
#[action(domain = "ledger", name = "ledger_post")]
async fn post_again(_input: Entry) -> Result<Posted, ToolError> {
    Ok(Posted { ok: true })
}

/// Takes a bare string, which cannot be an MCP inputSchema.
#[action(domain = "ledger")]
async fn note(_input: String) -> Result<Posted, ToolError> {
    Ok(Posted { ok: true })
}

/// Returns its own `state` field, which toolgate fills with the machine's state.
#[action(domain = "ledger")]
async fn peek() -> Result<Stateful, ToolError> {
    Ok(Stateful { state: "mine".into() })
}

/// Ships an order; bound to a state the JSON machine does not have.
#[action(domain = "order", bind_state = "paid", transition = "SHIP", startup_checked)]
async fn ship() -> Result<Posted, ToolError> {
    Ok(Posted { ok: true })
}

/// Bound to a machine nobody loads.
#[action(domain = "ghost", bind_state = "anywhere", startup_checked)]
async fn haunt() -> Result<Posted, ToolError> {
    Ok(Posted { ok: true })
}

/// Has a compact description, but no machine whose initial state it would be shown in.
#[action(domain = "memo", compact = "Write a memo")]
async fn write() -> Result<Posted, ToolError> {
    Ok(Posted { ok: true })
}

/// Takes the name toolgate generates for multi-domain servers.
#[action(global)]
async fn switch_domain() -> Result<Posted, ToolError> {
    Ok(Posted { ok: true })
}

/// Creates a ledger, whose machine mints no keys (it has none).
#[action(domain = "ledger", creates)]
async fn open() -> Result<Posted, ToolError> {
    Ok(Posted { ok: true })
}

// Tickets' keys are minted by the store: only a creating call makes a ticket.
toolgate::machine! {
    id: "ticket",
    key: "ticket_id",
    mint: "T-{n}",
    context: Ticket,
    initial: "open",
    states: {
        open:   { on: { CLOSE: "closed" } },
        closed: { type: "final" },
    }
}

#[derive(Serialize, Deserialize)]
struct Ticket {
    subject: String,
}

#[derive(Deserialize, JsonSchema)]
struct NewTicket {
    subject: String,
}

/// Opens a ticket, and forgets `creates`: it names no ticket, and no tool creates one.
#[action(domain = "ticket")]
async fn ticket_open(input: NewTicket, mut ticket: InstanceMut<Ticket>) -> Result<Posted, ToolError> {
    ticket.set(Ticket { subject: input.subject })?;
    Ok(Posted { ok: true })
}

const ORDER: &str = r#"{
    "id": "order", "initial": "new",
    "states": { "new": { "on": { "PAY": "payed" } }, "payed": { "on": { "SHIP": "shipped" } }, "shipped": { "type": "final" } }
}"#;

#[test]
fn every_problem_is_reported_with_its_location() {
    let error = toolgate::Server::from_registry("broken")
        .machine(Machine::from_xstate_json(ORDER).unwrap())
        .build()
        .expect_err("the registry is broken");
    let text = error.to_string();
    let problems = &error.problems;
    assert_eq!(problems.len(), 10, "{text}");

    assert!(
        problems.iter().any(|p| matches!(p, StartupProblem::DuplicateTool { tool, first, second }
        if tool == "ledger_post" && first.file.ends_with("startup.rs") && first.line != second.line)),
        "{text}"
    );
    assert!(text.contains("tool `ledger_note`: the input type's JSON Schema must be an object"), "{text}");
    assert!(text.contains("tool `ledger_peek`: the output type has a field `state`"), "{text}");
    assert!(
        text.contains("tool `order_ship`: machine `order` has no state `paid`; valid states: new, payed, shipped"),
        "{text}"
    );
    assert!(
        text.contains(
            "tool `ghost_haunt` is bound to machine `ghost`, which is not registered; known machines: ledger, order"
        ),
        "{text}"
    );
    assert!(text.contains("tool name `switch_domain` is reserved"), "{text}");
    assert!(text.contains("tool `memo_write` has `compact`"), "{text}");
    assert!(
        text.contains("tool `ledger_open` has `creates`, and machine `ledger` does not mint its keys: add `mint:"),
        "{text}"
    );
    // A tool that makes an instance of a machine that mints its keys, without `creates`:
    // both problems say to add it.
    assert!(
        text.contains(
            "tool `ticket_open`: its handler takes `Ticket`, an instance's context, and its input names no `ticket` (it has no `ticket_id`): a call that makes a new `ticket` needs `creates` in its `#[action(…)]`"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "machine `ticket` mints its keys (`mint`), so an instance exists only once a call creates it, and no tool does: add `creates`"
        ) && text.contains("its tools: ticket_open"),
        "{text}"
    );
    // Locations point at the actions in this file.
    assert!(text.contains("tests/startup.rs:"), "{text}");
}

#[test]
fn a_machine_declared_twice_is_reported() {
    let twin = Machine::from_xstate_json(r#"{"id": "ledger", "initial": "a", "states": {"a": {}}}"#).unwrap();
    let error = toolgate::Server::from_registry("broken").machine(twin).build().unwrap_err();
    assert!(
        error
            .problems
            .iter()
            .any(|p| matches!(p, StartupProblem::DuplicateMachine { machine, .. } if machine == "ledger"))
    );
}

/// `build` reports every problem at once: the registry's, the authentication's and the
/// store's together, not the first kind alone.
#[test]
fn problems_of_every_kind_are_reported_together() {
    let twin = Machine::from_xstate_json(r#"{"id": "ledger", "initial": "a", "states": {"a": {}}}"#).unwrap();
    let error = toolgate::Server::from_registry("broken")
        .machine(twin)
        .require_authentication()
        .store_file("/dev/null/state.db")
        .build()
        .unwrap_err();
    let kinds = |matches: fn(&StartupProblem) -> bool| error.problems.iter().any(matches);
    assert!(kinds(|p| matches!(p, StartupProblem::DuplicateMachine { .. })), "{error}");
    assert!(kinds(|p| matches!(p, StartupProblem::Authentication { .. })), "{error}");
    assert!(kinds(|p| matches!(p, StartupProblem::Store { .. })), "{error}");
}
