//! A support desk with two domains: tickets (`ticket_*`) and billing (`billing_*`), and one
//! machine, `ticket`. A billing tool is gated by the ticket it credits
//! (`machine = "ticket"`): a credit is possible only while the ticket is `resolved`, once.
//!
//! A conversation works in one domain at a time (the intent lock): moving from the ticket
//! to its credit takes an explicit `switch_domain`. Every result names the tools callable
//! `next` in the active domain and, in `next_after_switch`, those callable after a switch,
//! so a client that follows them is never refused.
//!
//! ```text
//! cargo run --example desk                            # MCP over stdio
//! cargo run --example desk -- --http 127.0.0.1:8080   # Streamable HTTP at /mcp
//! ```

use toolgate::prelude::*;
use toolgate::types::Money;

// One instance per ticket, its id minted by the store (`T-1`, `T-2`, …): never reused,
// whatever restarts.
toolgate::machine! {
    id: "ticket",
    key: "id",
    mint: "T-{n}",
    initial: "open",
    states: {
        open:     { on: { RESOLVE: "resolved" } },
        resolved: { on: { CREDIT: { target: "credited", guard: "within_limit" }, CLOSE: "closed" } },
        credited: { on: { CLOSE: "closed" } },
        closed:   { type: "final" },
    }
}

#[derive(Deserialize, JsonSchema)]
struct NewTicket {
    /// What the customer reports, in their words.
    problem: String,
}

#[derive(Deserialize, JsonSchema)]
struct Search {
    /// Words the tickets contain.
    words: String,
}

#[derive(Serialize, JsonSchema)]
struct Found {
    /// The ids of the tickets found (this example keeps no text to search).
    ids: Vec<String>,
}

#[derive(Deserialize, JsonSchema)]
struct TicketRef {
    /// The ticket, e.g. `T-1`: from `ticket_open`.
    id: String,
}

#[derive(Deserialize, JsonSchema)]
pub(crate) struct Credit {
    /// The ticket whose customer is credited, e.g. `T-1`.
    id: String,
    /// The amount credited to the customer's account, at most 50 EUR.
    amount: Money,
}

/// What a ticket may credit: 50 EUR. Judged by the gate before the handler runs, so a
/// larger credit is refused (`GUARD_FAILED`) and moves nothing.
fn within_limit(_: &(), credit: &Credit) -> Result<(), Failure> {
    match credit.amount.currency().code() == "EUR" && credit.amount.minor_units() <= 50_00 {
        true => Ok(()),
        false => Err(Failure::new("OVER_LIMIT", "a ticket may credit at most 50 EUR")
            .with_hint("credit 50 EUR or less, or hand the case to a person")),
    }
}

#[derive(Serialize, JsonSchema)]
struct Ticket {
    /// The ticket.
    id: String,
    /// What happened.
    outcome: String,
}

/// Open a ticket for a customer's problem and get its id. Does not resolve it.
#[action(domain = "ticket", creates)]
async fn open(input: NewTicket, ctx: Ctx) -> Result<Ticket, ToolError> {
    let id = ctx.instance().unwrap_or_default().to_string();
    Ok(Ticket { outcome: format!("opened: {}", input.problem), id })
}

/// Find tickets by their words. Changes nothing. A conversation's first unkeyed call, it
/// starts the conversation (its `flow` handle, at MCP 2026-07-28) in the `ticket` domain.
#[action(domain = "ticket")]
async fn search(input: Search) -> Result<Found, ToolError> {
    let _ = input.words;
    Ok(Found { ids: Vec::new() })
}

/// Show a ticket. Changes nothing.
#[action(domain = "ticket")]
async fn view(input: TicketRef) -> Result<Ticket, ToolError> {
    Ok(Ticket { outcome: "viewed".into(), id: input.id })
}

/// Resolve an open ticket. Does not credit or close it.
#[action(domain = "ticket", bind_state = "open", transition = "RESOLVE")]
async fn resolve(input: TicketRef) -> Result<Ticket, ToolError> {
    Ok(Ticket { outcome: "resolved".into(), id: input.id })
}

/// Close a resolved or credited ticket. Does not credit it.
#[action(domain = "ticket", bind_state = ["resolved", "credited"], transition = "CLOSE")]
async fn close(input: TicketRef) -> Result<Ticket, ToolError> {
    Ok(Ticket { outcome: "closed".into(), id: input.id })
}

/// Credit the customer of a resolved ticket, at most 50 EUR, once. Does not close the ticket.
#[action(domain = "billing", machine = "ticket", bind_state = "resolved", transition = "CREDIT")]
async fn credit(input: Credit) -> Result<Ticket, ToolError> {
    Ok(Ticket { outcome: format!("credited {}", input.amount), id: input.id })
}

#[tokio::main]
async fn main() -> Result<(), ServeError> {
    Server::from_registry("desk").run_cli().await
}
