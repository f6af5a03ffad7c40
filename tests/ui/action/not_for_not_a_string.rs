// `not_for` takes a string.
use toolgate::prelude::*;

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Done {
    ok: bool,
}

/// A tool.
#[action(domain = "bus", not_for = booking)]
async fn search() -> Result<Done, ToolError> {
    Ok(Done { ok: true })
}

fn main() {}
