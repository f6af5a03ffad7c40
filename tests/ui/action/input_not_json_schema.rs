// An input type that is `Deserialize` but not `JsonSchema`: rustc's error, and where it
// lands (the handler's name).
use toolgate::prelude::*;

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Done {
    ok: bool,
}

#[derive(serde::Deserialize)]
struct InvoiceRef {
    _id: String,
}

/// Show an invoice. Changes nothing.
#[action(domain = "invoice")]
async fn view(_input: InvoiceRef) -> Result<Done, ToolError> {
    Ok(Done { ok: true })
}

fn main() {}
