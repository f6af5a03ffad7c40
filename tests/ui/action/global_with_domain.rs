// A `global` tool belongs to no domain: both keys are marked.
use toolgate::prelude::*;

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Done {
    ok: bool,
}

/// A tool.
#[action(global, domain = "bus")]
async fn help() -> Result<Done, ToolError> {
    Ok(Done { ok: true })
}

fn main() {}
