// A tool may run as an MCP task ("optional") or must ("required"); nothing else.
use toolgate::prelude::*;

#[derive(Serialize, JsonSchema)]
struct Done {
    ok: bool,
}

/// Runs for a while. Does not stop early.
#[action(global, task = "sometimes")]
async fn long_job() -> Result<Done, ToolError> {
    Ok(Done { ok: true })
}

fn main() {}
