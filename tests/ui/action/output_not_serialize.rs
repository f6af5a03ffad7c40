// An output type must implement `Serialize` and `JsonSchema`: the error is on the type, once.
use toolgate::prelude::*;

#[derive(JsonSchema)]
struct Done {
    ok: bool,
}

/// Shows something.
#[action(domain = "notes")]
async fn show() -> Result<Done, ToolError> {
    Ok(Done { ok: true })
}

fn main() {}
