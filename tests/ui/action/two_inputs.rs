// A handler has one input, first; other parameters before `ctx` are `State<…>`.
use toolgate::prelude::*;

#[derive(Deserialize, JsonSchema)]
struct Query {
    text: String,
}

#[derive(Serialize, JsonSchema)]
struct Done {
    ok: bool,
}

/// Looks something up.
#[action(domain = "notes")]
async fn lookup(_query: Query, _again: Query, _ctx: Ctx) -> Result<Done, ToolError> {
    Ok(Done { ok: true })
}

fn main() {}
