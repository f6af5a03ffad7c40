// Generic names in Spanish are as confusing as in English.
use toolgate::prelude::*;

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Done {
    ok: bool,
}

/// A tool.
#[action(domain = "bus", name = "buscar")]
async fn buscar() -> Result<Done, ToolError> {
    Ok(Done { ok: true })
}

fn main() {}
