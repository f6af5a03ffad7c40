// A one-parameter handler whose parameter is not `Ctx`: rustc's error, and where it lands.
use toolgate::prelude::*;

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Done {
    ok: bool,
}

/// Show an invoice. Changes nothing.
#[action(domain = "invoice")]
async fn view(_id: String) -> Result<Done, ToolError> {
    Ok(Done { ok: true })
}

fn main() {}
