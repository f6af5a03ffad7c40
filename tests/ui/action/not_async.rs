// Handlers are awaited: a plain `fn` is an error on the `fn` token.
use toolgate::prelude::*;

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Done {
    ok: bool,
}

/// Show an invoice. Changes nothing.
#[action(domain = "invoice")]
fn view() -> Result<Done, ToolError> {
    Ok(Done { ok: true })
}

fn main() {}
