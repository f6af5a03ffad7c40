// A key given twice: the error is on the second one.
use toolgate::prelude::*;

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Done {
    ok: bool,
}

/// Show an invoice. Changes nothing.
#[action(domain = "invoice", domain = "billing")]
async fn view() -> Result<Done, ToolError> {
    Ok(Done { ok: true })
}

fn main() {}
