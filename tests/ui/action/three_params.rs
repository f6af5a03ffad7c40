// Three parameters: the error is on the parameters.
use toolgate::prelude::*;

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Done {
    ok: bool,
}

/// Show an invoice. Changes nothing.
#[action(domain = "invoice")]
async fn view(_a: u32, _b: u32, _ctx: Ctx) -> Result<Done, ToolError> {
    Ok(Done { ok: true })
}

fn main() {}
