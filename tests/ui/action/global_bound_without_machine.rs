// A global tool bound to states must name its machine: it has no domain to name it after.
use toolgate::prelude::*;

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Done {
    ok: bool,
}

/// A tool.
#[action(global, bind_state = "draft")]
async fn help() -> Result<Done, ToolError> {
    Ok(Done { ok: true })
}

fn main() {}
