// Errors are collected: unknown key, name without prefix, plain `fn`, no doc comment — all at once.
use toolgate::prelude::*;

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Done {
    ok: bool,
}

#[action(domain = "invoice", bind_stat = "draft", name = "view")]
fn view() -> Result<Done, ToolError> {
    Ok(Done { ok: true })
}

fn main() {}
