// `timeout` must be a whole number of ms, s or m above zero: the error is on the literal.
use toolgate::prelude::*;

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Done {
    ok: bool,
}

/// Pings slowly.
#[action(domain = "slow", timeout = "30 seconds")]
async fn ping() -> Result<Done, ToolError> {
    Ok(Done { ok: true })
}

/// Pings never.
#[action(domain = "slow", timeout = "0s")]
async fn wait() -> Result<Done, ToolError> {
    Ok(Done { ok: true })
}

fn main() {}
