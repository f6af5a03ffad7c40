// A handler takes the call's context at most once.
use toolgate::prelude::*;

#[derive(Serialize, JsonSchema)]
struct Done {
    ok: bool,
}

/// Shows the tool's name.
#[action(domain = "notes")]
async fn whoami(ctx: Ctx, again: Ctx) -> Result<Done, ToolError> {
    Ok(Done { ok: ctx.tool() == again.tool() })
}

fn main() {}
