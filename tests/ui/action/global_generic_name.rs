// A global tool still needs a name that says what it does.
use toolgate::prelude::*;

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Done {
    ok: bool,
}

/// A tool.
#[action(global)]
async fn search() -> Result<Done, ToolError> {
    Ok(Done { ok: true })
}

fn main() {}
