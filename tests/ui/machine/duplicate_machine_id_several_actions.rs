// Two machines with one id and six actions bound to it: rustc reports each action's
// lookup as ambiguous (one error per action, each naming both declarations), because
// nothing in stable Rust lets the second declaration, or the lookup, see that the id is
// taken (docs/upstream.md).
use toolgate::prelude::*;

#[derive(Serialize, JsonSchema)]
struct Done {
    ok: bool,
}

toolgate::machine! {
    id: "invoice",
    initial: "draft",
    states: {
        draft: { on: { SUBMIT: "review" } },
        review: { on: { APPROVE: "approved", REJECT: "draft" } },
        approved: { type: "final" },
    }
}

mod imported {
    toolgate::machine! {
        id: "invoice",
        initial: "open",
        states: {
            open: { on: { CLOSE: "closed" } },
            closed: { type: "final" },
        }
    }
}

/// Submit a draft invoice for review.
#[action(domain = "invoice", bind_state = "draft", transition = "SUBMIT")]
async fn submit() -> Result<Done, ToolError> {
    Ok(Done { ok: true })
}

/// Approve an invoice under review.
#[action(domain = "invoice", bind_state = "review", transition = "APPROVE")]
async fn approve() -> Result<Done, ToolError> {
    Ok(Done { ok: true })
}

/// Send an invoice under review back to draft.
#[action(domain = "invoice", bind_state = "review", transition = "REJECT")]
async fn reject() -> Result<Done, ToolError> {
    Ok(Done { ok: true })
}

/// Show a draft invoice.
#[action(domain = "invoice", bind_state = "draft")]
async fn show_draft() -> Result<Done, ToolError> {
    Ok(Done { ok: true })
}

/// Show an invoice under review.
#[action(domain = "invoice", bind_state = "review")]
async fn show_review() -> Result<Done, ToolError> {
    Ok(Done { ok: true })
}

/// Show an approved invoice.
#[action(domain = "invoice", bind_state = "approved")]
async fn show_approved() -> Result<Done, ToolError> {
    Ok(Done { ok: true })
}

fn main() {}
