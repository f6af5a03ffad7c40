//! A valid machine and its actions: with and without input, a `bind_state` list, an
//! explicit `name` with the domain prefix, string-literal state and event names.
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolgate::prelude::*;

toolgate::machine! {
    id: "invoice",
    initial: "draft",
    states: {
        draft: { on: { SUBMIT: "review" } },
        review: { on: { APPROVE: "approved", "REJECT": "draft" } },
        "approved": { type: "atomic", on: { DISCHARGE: "discharged" } },
        discharged: { type: "final" },
    }
}

/// Which invoice a call is about.
#[derive(Deserialize, JsonSchema)]
struct InvoiceRef {
    /// The invoice id.
    id: String,
}

/// What the tools return.
#[derive(Serialize, JsonSchema)]
struct Invoice {
    /// The invoice id.
    id: String,
    /// What the call did.
    outcome: &'static str,
}

/// Show an invoice. Changes nothing.
#[action(domain = "invoice")]
async fn view(input: InvoiceRef) -> Result<Invoice, ToolError> {
    Ok(Invoice { id: input.id, outcome: "viewed" })
}

/// List the invoices. Takes no input.
#[action(domain = "invoice")]
async fn list() -> Result<Invoice, ToolError> {
    Ok(Invoice { id: String::new(), outcome: "listed" })
}

/// Submit a draft invoice for review.
#[action(domain = "invoice", bind_state = "draft", transition = "SUBMIT", compact = "Submit for review")]
async fn submit(input: InvoiceRef) -> Result<Invoice, ToolError> {
    Ok(Invoice { id: input.id, outcome: "submitted" })
}

/// Comment on an invoice under review or approved. Fires no event.
#[action(domain = "invoice", bind_state = ["review", "approved"])]
async fn comment(input: InvoiceRef) -> Result<Invoice, ToolError> {
    Ok(Invoice { id: input.id, outcome: "commented" })
}

/// Send an invoice under review back to draft.
#[action(domain = "invoice", name = "invoice_send_back", bind_state = ["review"], transition = "REJECT")]
async fn reject(input: InvoiceRef) -> Result<Invoice, ToolError> {
    Ok(Invoice { id: input.id, outcome: "sent back" })
}

/// Pay an approved invoice.
#[action(domain = "invoice", bind_state = "approved", transition = "DISCHARGE")]
async fn discharge() -> Result<Invoice, ToolError> {
    Ok(Invoice { id: String::new(), outcome: "discharged" })
}

fn main() {}
