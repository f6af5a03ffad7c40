// A generic handler has no single address to register.
use toolgate::prelude::*;

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Done {
    ok: bool,
}

/// Show an invoice. Changes nothing.
#[action(domain = "invoice")]
async fn view<T: Send>() -> Result<Done, ToolError> {
    Ok(Done { ok: true })
}

fn main() {}
