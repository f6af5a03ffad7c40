//! `State<T>` parameters, with or without an input, destructured or not.
use toolgate::prelude::*;

#[derive(Clone)]
struct Db;

#[derive(Clone)]
struct Config {
    limit: u32,
}

#[derive(Deserialize, JsonSchema)]
struct Query {
    text: String,
}

#[derive(Serialize, JsonSchema)]
struct Done {
    ok: bool,
}

/// Searches notes.
#[action(domain = "notes")]
async fn lookup(query: Query, State(_db): State<Db>, config: State<Config>) -> Result<Done, ToolError> {
    Ok(Done { ok: query.text.len() as u32 <= config.limit })
}

/// Counts notes.
#[action(domain = "notes")]
async fn count(_db: State<Db>) -> Result<Done, ToolError> {
    Ok(Done { ok: true })
}

fn main() {}
