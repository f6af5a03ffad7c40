//! A doc attribute whose value is a macro call (`concat!`, `include_str!`) is a
//! description too: `#[action]` joins the parts with `concat!`.
use toolgate::prelude::*;

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Done {
    ok: bool,
}

#[doc = concat!("Show an invoice. ", "Changes nothing.")]
#[action(domain = "invoice")]
async fn view() -> Result<Done, ToolError> {
    Ok(Done { ok: true })
}

fn main() {}
