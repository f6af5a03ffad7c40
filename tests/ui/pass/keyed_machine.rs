//! A keyed machine: its bound actions take an input with the key; an unbound action of its
//! domain without the key (a list) is fine.
use toolgate::prelude::*;

toolgate::machine! {
    id: "invoice",
    key: "id",
    initial: "draft",
    states: {
        draft: { on: { SUBMIT: "review" } },
        review: { type: "final" },
    }
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct InvoiceRef {
    /// The invoice.
    id: String,
}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Done {
    ok: bool,
}

/// Submits the invoice.
#[action(domain = "invoice", bind_state = "draft", transition = "SUBMIT", timeout = "500ms")]
async fn submit(input: InvoiceRef) -> Result<Done, ToolError> {
    Ok(Done { ok: !input.id.is_empty() })
}

/// Lists invoices.
#[action(domain = "invoice")]
async fn list_open() -> Result<Done, ToolError> {
    Ok(Done { ok: true })
}

fn main() {}
