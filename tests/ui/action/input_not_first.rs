// The input is the first parameter: after `Ctx`, a type that is not `Ctx` or `State<T>`
// is an error at that type.
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
async fn lookup(_ctx: Ctx, query: Query) -> Result<Done, ToolError> {
    Ok(Done { ok: !query.text.is_empty() })
}

fn main() {}
