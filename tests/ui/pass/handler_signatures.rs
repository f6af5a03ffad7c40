//! Every parameter of a handler is optional: the input first when there is one, then
//! `State<T>` and `Ctx` in any order.
use toolgate::prelude::*;

#[derive(Clone)]
struct Db;

#[derive(Clone)]
struct Config {
    limit: usize,
}

#[derive(Deserialize, JsonSchema)]
struct Query {
    text: String,
}

#[derive(Serialize, JsonSchema)]
struct Done {
    ok: bool,
}

/// Says what the notes tools do.
#[action(domain = "notes")]
async fn help() -> Result<Done, ToolError> {
    Ok(Done { ok: true })
}

/// Checks a query.
#[action(domain = "notes")]
async fn check(query: Query) -> Result<Done, ToolError> {
    Ok(Done { ok: !query.text.is_empty() })
}

/// Names the tool being called.
#[action(domain = "notes")]
async fn whoami(ctx: Ctx) -> Result<Done, ToolError> {
    Ok(Done { ok: ctx.tool() == "notes_whoami" })
}

/// Reads the configuration.
#[action(domain = "notes")]
async fn limits(State(config): State<Config>) -> Result<Done, ToolError> {
    Ok(Done { ok: config.limit > 0 })
}

/// Searches with the context before the state.
#[action(domain = "notes")]
async fn lookup(query: Query, ctx: Ctx, State(_db): State<Db>) -> Result<Done, ToolError> {
    ctx.progress(Progress::new(1.0).total(1.0).message("searched")).await;
    Ok(Done { ok: !query.text.is_empty() })
}

/// Searches with the states around the context.
#[action(domain = "notes")]
async fn filter(query: Query, _db: State<Db>, ctx: toolgate::Ctx, config: State<Config>) -> Result<Done, ToolError> {
    Ok(Done { ok: query.text.len() <= config.limit && !ctx.is_cancelled() })
}

/// The context first, without an input.
#[action(domain = "notes")]
async fn count(ctx: Ctx, State(_db): State<Db>) -> Result<Done, ToolError> {
    Ok(Done { ok: ctx.domain() == Some("notes") })
}

fn main() {
    let server = Server::from_registry("notes").state(Db).state(Config { limit: 10 }).build();
    assert!(server.is_ok(), "{:?}", server.err());
    let missing = Server::from_registry("notes").state(Db).build().unwrap_err().to_string();
    assert!(missing.contains("Config"), "{missing}");
}
