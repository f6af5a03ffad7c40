// Lifetime parameters count as generics too.
use toolgate::prelude::*;

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Done {
    ok: bool,
}

/// Show an invoice. Changes nothing.
#[action(domain = "invoice")]
async fn view<'a>() -> Result<Done, ToolError> {
    Ok(Done { ok: true })
}

fn main() {}
