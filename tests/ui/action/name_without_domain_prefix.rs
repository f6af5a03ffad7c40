// An explicit `name` must start with `{domain}_`: the error is on the name literal.
use toolgate::prelude::*;

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Done {
    ok: bool,
}

/// Show an invoice. Changes nothing.
#[action(domain = "invoice", name = "view_invoice")]
async fn view() -> Result<Done, ToolError> {
    Ok(Done { ok: true })
}

fn main() {}
