// `global` is a flag.
use toolgate::prelude::*;

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Done {
    ok: bool,
}

/// A tool.
#[action(global = true)]
async fn help() -> Result<Done, ToolError> {
    Ok(Done { ok: true })
}

fn main() {}
