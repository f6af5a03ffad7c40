// An explicit `name` that is a bare generic verb: the message suggests the prefixed name.
use toolgate::prelude::*;

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Done {
    ok: bool,
}

/// A tool.
#[action(domain = "bus", name = "search")]
async fn search() -> Result<Done, ToolError> {
    Ok(Done { ok: true })
}

fn main() {}
