//! The intent lock's policies and options, through rmcp's client against in-process
//! servers: strict (the default), lock on first use, and off; listing every domain's tools.

mod common;

use common::{TestClient, serve_in_process};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::json;
use toolgate::prelude::*;

#[derive(Serialize, JsonSchema)]
struct Pong {
    pong: bool,
    /// The flow the call ran in, as the handler sees it (`help` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    conversation: Option<String>,
}

/// Ping alpha.
#[action(domain = "alpha")]
async fn ping() -> Result<Pong, ToolError> {
    Ok(Pong { pong: true, conversation: None })
}

/// Ping beta.
#[action(domain = "beta", name = "beta_ping")]
async fn beta() -> Result<Pong, ToolError> {
    Ok(Pong { pong: true, conversation: None })
}

/// Wait in alpha. Lingers so that, were first-use selection not under the flow's lease,
/// a racing call into beta would select too (correct code passes however long it takes).
#[action(domain = "alpha")]
async fn wait() -> Result<Pong, ToolError> {
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    Ok(Pong { pong: true, conversation: None })
}

/// Wait in beta; see `alpha_wait`.
#[action(domain = "beta", name = "beta_wait")]
async fn beta_wait() -> Result<Pong, ToolError> {
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    Ok(Pong { pong: true, conversation: None })
}

/// Explain how this server works. Belongs to no domain.
#[action(global)]
async fn help(ctx: Ctx) -> Result<Pong, ToolError> {
    Ok(Pong { pong: true, conversation: ctx.flow().map(|flow| flow.to_string()) })
}

async fn client(policy: DomainPolicy) -> TestClient {
    let server = Server::from_registry("lock").domain_policy(policy).describe_domain("alpha", "the first");
    TestClient::http(&serve_in_process(server.build().expect("valid registry")).await).await
}

fn alpha() -> serde_json::Value {
    json!({ "domain": "alpha" })
}

fn beta_args() -> serde_json::Value {
    json!({ "domain": "beta" })
}

#[tokio::test]
async fn strict_lists_every_domain_but_calls_only_the_active_one() {
    let mut client = client(DomainPolicy::Strict).await;
    assert_eq!(
        client.tool_names().await,
        ["alpha_ping", "alpha_wait", "beta_ping", "beta_wait", "help", "switch_domain"]
    );
    assert_eq!(client.refused("alpha_ping", alpha()).await["code"], "DOMAIN_NOT_SELECTED");
    // Global tools need no domain; their results carry the (absent) active domain.
    let help = client.ok("help", json!({})).await;
    assert_eq!(help["domain"], json!(null));

    let switched = client.ok("switch_domain", json!({ "domain": "alpha", "reason": "asked for alpha" })).await;
    assert_eq!(switched["next"], json!(["alpha_ping", "alpha_wait", "help", "switch_domain"]));
    assert_eq!(client.ok("alpha_ping", alpha()).await["domain"], "alpha");
    assert_eq!(client.ok("help", json!({})).await["domain"], "alpha");
    assert_eq!(client.refused("beta_ping", beta_args()).await["code"], "DOMAIN_MISMATCH");
    // The listing shows every domain, so switching changed nothing a client sees.
    assert_eq!(
        client.tool_names().await,
        ["alpha_ping", "alpha_wait", "beta_ping", "beta_wait", "help", "switch_domain"]
    );
    assert_eq!(client.pending_list_changed(), 0, "list_changed sent although the list did not change");
}

#[tokio::test]
async fn a_handler_tells_conversations_apart_by_an_opaque_id() {
    let (first, second) = (client(DomainPolicy::Strict).await, client(DomainPolicy::Strict).await);
    let id = |result: serde_json::Value| result["conversation"].as_str().expect("the call runs in a flow").to_string();
    let once = id(first.ok("help", json!({})).await);
    assert_eq!(once.len(), 16, "{once}");
    assert!(once.chars().all(|c| c.is_ascii_hexdigit()), "the id shows nothing of how the flow is stored: {once}");
    assert_eq!(id(first.ok("help", json!({})).await), once, "one conversation, one id");
    assert_ne!(id(second.ok("help", json!({})).await), once, "another session is another conversation");
}

#[tokio::test]
async fn lock_on_first_use_selects_the_first_domain_called() {
    let client = client(DomainPolicy::LockOnFirstUse).await;
    assert_eq!(client.ok("beta_ping", beta_args()).await["domain"], "beta");
    let drift = client.refused("alpha_ping", alpha()).await;
    assert_eq!((drift["code"].as_str(), drift["active_domain"].as_str()), (Some("DOMAIN_MISMATCH"), Some("beta")));
    client.ok("switch_domain", json!({ "domain": "alpha", "reason": "now alpha" })).await;
    client.ok("alpha_ping", alpha()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_first_uses_select_one_domain() {
    let client = client(DomainPolicy::LockOnFirstUse).await;
    let calls = (0..20).map(|i| {
        let (tool, args) = if i % 2 == 0 { ("alpha_wait", alpha()) } else { ("beta_wait", beta_args()) };
        client.call(tool, args)
    });
    let results = futures::future::join_all(calls).await;
    let winners: std::collections::BTreeSet<&str> = results
        .iter()
        .filter(|(_, is_error)| !is_error)
        .map(|(content, _)| content["domain"].as_str().unwrap())
        .collect();
    assert_eq!(winners.len(), 1, "two domains were selected at once: {results:?}");
    for (content, is_error) in &results {
        if *is_error {
            assert_eq!(content["code"], "DOMAIN_MISMATCH", "{content}");
        }
    }
}

#[tokio::test]
async fn off_allows_every_domain_but_still_checks_the_declared_one() {
    let client = client(DomainPolicy::Off).await;
    assert_eq!(
        client.tool_names().await,
        ["alpha_ping", "alpha_wait", "beta_ping", "beta_wait", "help"],
        "no switch_domain without a lock"
    );
    client.ok("alpha_ping", alpha()).await;
    client.ok("beta_ping", beta_args()).await;
    let declared = client.refused("alpha_ping", beta_args()).await;
    assert_eq!(
        (declared["code"].as_str(), declared["declared_domain"].as_str()),
        (Some("DOMAIN_MISMATCH"), Some("beta"))
    );
    assert_eq!(declared["active_domain"], json!(null));
}

#[test]
fn describing_an_unknown_domain_is_a_startup_error() {
    let error = Server::from_registry("lock").describe_domain("gamma", "typo").build().unwrap_err();
    assert!(
        error.to_string().contains("domain `gamma` is described but no action belongs to it; domains: alpha, beta")
    );
}
