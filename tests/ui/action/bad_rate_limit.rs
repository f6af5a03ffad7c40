// `rate_limit` is calls per `second`, `minute` or `hour`: the error is on the literal.
use toolgate::prelude::*;

#[derive(Serialize, JsonSchema)]
struct Done {
    ok: bool,
}

/// Pings often.
#[action(domain = "net", rate_limit = "ten per minute")]
async fn ping() -> Result<Done, ToolError> {
    Ok(Done { ok: true })
}

fn main() {}
