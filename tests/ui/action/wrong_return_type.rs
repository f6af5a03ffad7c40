// Handlers return `Result<T, ToolError>`: the error is on the return type.
use toolgate::prelude::*;

#[derive(Serialize, JsonSchema)]
struct Done {
    ok: bool,
}

/// Shows something.
#[action(domain = "notes")]
async fn show() -> Done {
    Done { ok: true }
}

/// Shows nothing at all.
#[action(domain = "notes")]
async fn hide() {}

fn main() {}
