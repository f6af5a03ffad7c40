// The domain prefixes tool names and must be snake_case: the error is on the literal.
use toolgate::prelude::*;

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Done {
    ok: bool,
}

/// Show an invoice. Changes nothing.
#[action(domain = "Invoice")]
async fn view() -> Result<Done, ToolError> {
    Ok(Done { ok: true })
}

fn main() {}
