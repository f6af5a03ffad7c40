// A key that is a path, not an identifier.
use toolgate::prelude::*;

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Done {
    ok: bool,
}

/// Show an invoice. Changes nothing.
#[action(domain = "invoice", toolgate::name = "invoice_view")]
async fn view() -> Result<Done, ToolError> {
    Ok(Done { ok: true })
}

fn main() {}
