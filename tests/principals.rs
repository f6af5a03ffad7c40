//! Who is calling: bearer tokens resolved to principals before rmcp sees a request, the
//! pipeline's principal step (`UNAUTHENTICATED`, `INSUFFICIENT_SCOPE`) ahead of every
//! later one, tool lists that hide what a principal's scopes do not reach, and 401s with
//! `WWW-Authenticate` — through rmcp's client and raw HTTP.

mod common;

use common::clients::Lifecycle;
use common::raw::{RawSession, SESSION_VERSION, SessionlessClient};
use common::{TestClient, serve_in_process};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use serde_json::{Value, json};
use toolgate::StaticTokens;
use toolgate::prelude::*;

#[derive(Deserialize, JsonSchema)]
struct Entry {
    /// The amount, in cents.
    cents: u32,
}

#[derive(Serialize, JsonSchema)]
struct Posted {
    cents: u32,
    by: String,
}

#[derive(Serialize, JsonSchema)]
struct Who {
    subject: Option<String>,
    tenant: Option<String>,
}

/// View the ledger's balance. Does not post or close anything.
#[action(domain = "ledger")]
async fn ledger_view() -> Result<Who, ToolError> {
    Ok(Who { subject: None, tenant: None })
}

/// Post an entry to the ledger. Does not close the ledger.
#[action(domain = "ledger", transactional)]
async fn ledger_post(entry: Entry, principal: Principal) -> Result<Posted, ToolError> {
    Ok(Posted { cents: entry.cents, by: principal.subject().to_string() })
}

/// Close the ledger for the month. Does not post entries.
#[action(domain = "ledger", scope = "ledger:close")]
async fn ledger_close() -> Result<Who, ToolError> {
    Ok(Who { subject: None, tenant: None })
}

/// Say who is calling, if anyone authenticated. Does not change the ledger.
#[action(domain = "ledger")]
async fn ledger_whoami(principal: Option<Principal>) -> Result<Who, ToolError> {
    Ok(Who {
        subject: principal.as_ref().map(|p| p.subject().to_string()),
        tenant: principal.as_ref().and_then(|p| p.tenant().map(str::to_string)),
    })
}

toolgate::machine! {
    id: "review",
    initial: "idle",
    states: {
        idle:    { on: { START: "started" } },
        started: { on: { FINISH: "done" } },
        done:    { type: "final" },
    }
}

/// Start a review of the ledger: a conversation of its own. Does not close the ledger.
#[action(domain = "ledger", machine = "review", bind_state = "idle", transition = "START")]
async fn ledger_review_start() -> Result<Who, ToolError> {
    Ok(Who { subject: None, tenant: None })
}

/// Finish the review this conversation started. Does not close the ledger.
#[action(domain = "ledger", machine = "review", bind_state = "started", transition = "FINISH")]
async fn ledger_review_finish() -> Result<Who, ToolError> {
    Ok(Who { subject: None, tenant: None })
}

/// How many times `ledger_transfer`'s handler ran.
static TRANSFERS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

#[derive(Deserialize, JsonSchema)]
struct Transfer {
    /// The amount, in cents.
    cents: u32,
    /// A fresh id per request; a retry repeats it.
    #[allow(dead_code)] // read by toolgate (`idempotency_key`), not by the handler
    request_id: String,
}

/// Transfer cents between accounts, once per request id. Does not close the ledger.
#[action(domain = "ledger", transactional, idempotency_key = "request_id")]
async fn ledger_transfer(transfer: Transfer, principal: Principal) -> Result<Posted, ToolError> {
    TRANSFERS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    Ok(Posted { cents: transfer.cents, by: principal.subject().to_string() })
}

/// How many times `ledger_statement`'s handler ran.
static STATEMENTS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Issue a statement of the ledger, as text and a picture, once per request id. Does not
/// transfer anything.
#[action(domain = "ledger", transactional, idempotency_key = "request_id")]
async fn ledger_statement(request: StatementRequest) -> Result<toolgate::content::Content, ToolError> {
    use toolgate::content::{Block, Content};
    let run = STATEMENTS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    Ok(Content::new()
        .with(Block::text(format!("Statement {} (run {run})", request.request_id)))
        .with(Block::image(b"GIF89a", "image/gif")))
}

#[derive(Deserialize, JsonSchema)]
struct StatementRequest {
    /// A fresh id per request; a retry repeats it.
    request_id: String,
}

const ALICE: &str = "alice-token-0123456789";
const BOB: &str = "bob-token-0123456789";

fn tokens() -> StaticTokens {
    StaticTokens::new()
        .token(ALICE, Principal::new("alice").with_tenant("acme").with_scopes(["ledger:close"]))
        .token(BOB, Principal::new("bob").with_tenant("acme"))
}

async fn server(required: bool) -> String {
    let mut builder = Server::from_registry("ledger").authenticator(tokens());
    if required {
        builder = builder.require_authentication();
    }
    serve_in_process(builder.build().expect("server")).await
}

#[tokio::test]
async fn an_anonymous_caller_is_refused_what_needs_a_principal_before_anything_else() {
    let url = server(false).await;
    for lifecycle in [Lifecycle::Session, Lifecycle::Sessionless] {
        let client = TestClient::http_as(&url, lifecycle, None).await;
        let listed = client.tool_names().await;
        assert!(listed.contains(&"ledger_post".to_string()), "a transactional tool is listed to everyone: {listed:?}");
        assert!(
            !listed.contains(&"ledger_close".to_string()),
            "a scoped tool is not listed to a caller without the scope ({lifecycle:?}): {listed:?}"
        );
        client.ok("ledger_view", json!({ "domain": "ledger" })).await;
        let anonymous = client.ok("ledger_whoami", json!({ "domain": "ledger" })).await;
        assert_eq!(anonymous["subject"], Value::Null);

        let refused = client.refused("ledger_post", json!({ "domain": "ledger", "cents": 100 })).await;
        assert_eq!(refused["code"], "UNAUTHENTICATED", "{refused}");
        assert_eq!(refused["tool"], "ledger_post");
        assert!(refused["hint"].as_str().unwrap().contains("Authorization: Bearer"), "{refused}");
        // What the model writes counts for nothing, and the principal step speaks before
        // the argument check (these fields are unknown to the tool).
        for claim in [json!({ "confirmed": true }), json!({ "authorized_by": "user" }), json!({ "principal": "alice" })]
        {
            let mut arguments = json!({ "domain": "ledger", "cents": 100 });
            arguments.as_object_mut().unwrap().extend(claim.as_object().unwrap().clone());
            let refused = client.refused("ledger_post", arguments).await;
            assert_eq!(refused["code"], "UNAUTHENTICATED", "{refused}");
        }
        let refused = client.refused("ledger_close", json!({ "domain": "ledger" })).await;
        assert_eq!(refused["code"], "UNAUTHENTICATED", "{refused}");
    }
}

#[tokio::test]
async fn a_principal_sees_and_calls_only_what_its_scopes_reach() {
    let url = server(false).await;
    for lifecycle in [Lifecycle::Session, Lifecycle::Sessionless] {
        let bob = TestClient::http_as(&url, lifecycle, Some(BOB)).await;
        assert!(!bob.tool_names().await.contains(&"ledger_close".to_string()));
        let refused = bob.refused("ledger_close", json!({ "domain": "ledger" })).await;
        assert_eq!(refused["code"], "INSUFFICIENT_SCOPE", "{refused}");
        assert_eq!(refused["required_scope"], "ledger:close");
        // Scope before arguments: an unknown field does not get ahead of it.
        let refused = bob.refused("ledger_close", json!({ "domain": "ledger", "force": true })).await;
        assert_eq!(refused["code"], "INSUFFICIENT_SCOPE", "{refused}");
        let posted = bob.ok("ledger_post", json!({ "domain": "ledger", "cents": 250 })).await;
        assert_eq!((posted["by"].as_str(), posted["cents"].as_u64()), (Some("bob"), Some(250)));
        let who = bob.ok("ledger_whoami", json!({ "domain": "ledger" })).await;
        assert_eq!((who["subject"].as_str(), who["tenant"].as_str()), (Some("bob"), Some("acme")));

        let alice = TestClient::http_as(&url, lifecycle, Some(ALICE)).await;
        assert!(alice.tool_names().await.contains(&"ledger_close".to_string()));
        alice.ok("ledger_close", json!({ "domain": "ledger" })).await;
    }
}

#[tokio::test]
async fn a_list_that_depends_on_the_caller_is_private_to_it() {
    let url = server(false).await;
    let raw = SessionlessClient::new(&url);
    let anonymous = raw.request("tools/list", json!({}), &[]).await.result();
    assert_eq!(anonymous["cacheScope"], "private", "{anonymous}");
    let bearer = format!("Bearer {ALICE}");
    let alice = raw.request("tools/list", json!({}), &[("Authorization", &bearer)]).await.result();
    assert_eq!(alice["cacheScope"], "private");
    let listed = |list: &Value| list["tools"].as_array().unwrap().iter().any(|t| t["name"] == "ledger_close");
    assert!(listed(&alice) && !listed(&anonymous));
    assert_eq!(alice["tools"].as_array().unwrap().len(), anonymous["tools"].as_array().unwrap().len() + 1);
}

#[tokio::test]
async fn a_refused_token_gets_401_with_a_bearer_challenge_and_is_never_echoed() {
    let url = server(false).await;
    let raw = SessionlessClient::new(&url);
    let forged = "forged-token-that-must-not-echo";
    for header in [format!("Bearer {forged}"), format!("Basic {forged}"), "Bearer".to_string()] {
        let reply = raw.request("tools/list", json!({}), &[("Authorization", &header)]).await;
        assert_eq!(reply.status, 401, "{header}: {}", reply.body);
        let challenge = reply.headers["www-authenticate"].to_str().unwrap().to_string();
        assert!(challenge.starts_with("Bearer"), "{challenge}");
        assert!(challenge.contains("error=\"invalid_"), "{challenge}");
        assert!(!challenge.contains(forged) && !reply.body.contains(forged), "{challenge} {}", reply.body);
    }
}

#[tokio::test]
async fn a_server_that_requires_authentication_answers_401_without_credentials() {
    let url = server(true).await;
    let raw = SessionlessClient::new(&url);
    let reply = raw.request("tools/list", json!({}), &[]).await;
    assert_eq!(reply.status, 401, "{}", reply.body);
    assert_eq!(reply.headers["www-authenticate"], "Bearer");
    // With a token, everything works as before.
    let bob = TestClient::http_as(&url, Lifecycle::Session, Some(BOB)).await;
    bob.ok("ledger_post", json!({ "domain": "ledger", "cents": 1 })).await;
}

#[tokio::test]
async fn a_stdio_connection_is_the_principal_the_deployment_names_and_http_never_is() {
    let configured = Principal::new("batch-job").with_tenant("acme");
    let server = Server::from_registry("ledger").stdio_principal(configured).build().expect("server");
    let (client_io, server_io) = tokio::io::duplex(1 << 16);
    let connection = server.connection();
    tokio::spawn(async move {
        let running = connection.serve(tokio::io::split(server_io)).await.expect("server");
        let _ = running.waiting().await;
    });
    let client = ().serve(tokio::io::split(client_io)).await.expect("client");
    let call = CallToolRequestParams::new("ledger_whoami")
        .with_arguments(json!({ "domain": "ledger" }).as_object().unwrap().clone());
    let result = client.call_tool(call).await.expect("call");
    assert_eq!(result.structured_content.unwrap()["subject"], "batch-job");

    // Over HTTP, the stdio principal stands for nobody.
    let url = serve_in_process(server).await;
    let anonymous = TestClient::http_as(&url, Lifecycle::Sessionless, None).await;
    let who = anonymous.ok("ledger_whoami", json!({ "domain": "ledger" })).await;
    assert_eq!(who["subject"], Value::Null);
}

#[tokio::test]
async fn a_state_handle_serves_only_the_principal_that_started_its_conversation() {
    let url = server(false).await;
    let alice = TestClient::http_as(&url, Lifecycle::Sessionless, Some(ALICE)).await;
    let bob = TestClient::http_as(&url, Lifecycle::Sessionless, Some(BOB)).await;
    let anonymous = TestClient::http_as(&url, Lifecycle::Sessionless, None).await;
    let started = alice.ok("ledger_review_start", json!({ "domain": "ledger" })).await;
    let handle = started["flow"].as_str().expect("a handle").to_string();
    for (who, client) in [("bob", &bob), ("an anonymous caller", &anonymous)] {
        let refused = client.refused("ledger_review_finish", json!({ "domain": "ledger", "flow": handle })).await;
        assert_eq!(refused["code"], "INVALID_HANDLE", "{who}: {refused}");
    }
    // Refused for them, untouched for its owner.
    alice.ok("ledger_review_finish", json!({ "domain": "ledger", "flow": handle })).await;
}

#[tokio::test]
async fn a_session_serves_only_the_principal_that_opened_it() {
    let url = server(false).await;
    let (alice, bob) = (format!("Bearer {ALICE}"), format!("Bearer {BOB}"));
    let session = RawSession::try_open(&url, SESSION_VERSION, &[("Authorization", &alice)]).await.expect("a session");
    let call = json!({ "name": "ledger_whoami", "arguments": { "domain": "ledger" } });
    let owner = session.request_with_headers("tools/call", call.clone(), &[("Authorization", &alice)]).await;
    assert_eq!(owner.result()["structuredContent"]["subject"], "alice");
    // Another principal, or nobody: the session is unknown to them (tests/integration/session_owner.rs
    // holds every message kind to that).
    for (who, headers) in [("bob", vec![("Authorization", bob.as_str())]), ("nobody", vec![])] {
        for (method, params) in [("tools/call", call.clone()), ("tools/list", json!({}))] {
            let refused = session.held_by(&headers).request(method, params).await;
            assert_eq!(refused.status, 404, "{who} {method}: {}", refused.body);
        }
    }
}

#[tokio::test]
async fn rotated_handle_keys_accept_the_previous_key_until_it_is_dropped() {
    // Three deployments of one server sharing one store, as replicas or restarts would:
    // before the rotation, during it (new key first, old kept), after the old key is dropped.
    let store = toolgate::store::MemoryStore::new();
    let (old, new) = (vec![1u8; 32], vec![2u8; 32]);
    let deploy = |keys: Vec<Vec<u8>>| {
        let server = Server::from_registry("ledger").store(store.clone()).handle_keys(keys).build().expect("server");
        serve_in_process(server)
    };
    let before = TestClient::http_as(&deploy(vec![old.clone()]).await, Lifecycle::Sessionless, None).await;
    let start = || before.ok("ledger_review_start", json!({ "domain": "ledger" }));
    let (first, second) = (start().await, start().await);
    let old_handles = [first["flow"].as_str().unwrap().to_string(), second["flow"].as_str().unwrap().to_string()];

    let during = TestClient::http_as(&deploy(vec![new.clone(), old]).await, Lifecycle::Sessionless, None).await;
    during.ok("ledger_review_finish", json!({ "domain": "ledger", "flow": old_handles[0] })).await;
    let third = during.ok("ledger_review_start", json!({ "domain": "ledger" })).await;
    let new_handle = third["flow"].as_str().expect("a handle signed with the new key").to_string();

    let after = TestClient::http_as(&deploy(vec![new]).await, Lifecycle::Sessionless, None).await;
    let refused = after.refused("ledger_review_finish", json!({ "domain": "ledger", "flow": old_handles[1] })).await;
    assert_eq!(refused["code"], "INVALID_HANDLE", "a handle signed with a dropped key: {refused}");
    after.ok("ledger_review_finish", json!({ "domain": "ledger", "flow": new_handle })).await;
}

#[tokio::test]
async fn an_idempotent_retry_returns_the_first_result_without_running_the_handler() {
    let url = server(false).await;
    let alice = TestClient::http_as(&url, Lifecycle::Sessionless, Some(ALICE)).await;
    let bob = TestClient::http_as(&url, Lifecycle::Sessionless, Some(BOB)).await;
    let before = TRANSFERS.load(std::sync::atomic::Ordering::SeqCst);
    let call = json!({ "domain": "ledger", "cents": 500, "request_id": "transfer-0001" });
    let first = alice.ok("ledger_transfer", call.clone()).await;
    assert_eq!(alice.ok("ledger_transfer", call.clone()).await, first);
    assert_eq!(TRANSFERS.load(std::sync::atomic::Ordering::SeqCst), before + 1, "the handler ran once");
    // The same key with other arguments.
    let conflict = alice
        .refused("ledger_transfer", json!({ "domain": "ledger", "cents": 501, "request_id": "transfer-0001" }))
        .await;
    assert_eq!(conflict["code"], "IDEMPOTENCY_CONFLICT", "{conflict}");
    // Keys are per principal: Bob's transfer-0001 is his own request.
    let bobs = bob.ok("ledger_transfer", call).await;
    assert_eq!(bobs["by"], "bob");
    assert_eq!(TRANSFERS.load(std::sync::atomic::Ordering::SeqCst), before + 2);
}

/// A retry of a tool that answers with content blocks gets the blocks back too, not only
/// the structured part.
#[tokio::test]
async fn an_idempotent_retry_returns_the_first_content_blocks() {
    let url = server(false).await;
    let alice = TestClient::http_as(&url, Lifecycle::Sessionless, Some(ALICE)).await;
    let call = json!({ "domain": "ledger", "request_id": "statement-0001" });
    let first = serde_json::to_value(alice.try_call("ledger_statement", call.clone()).await.unwrap()).unwrap();
    let again = serde_json::to_value(alice.try_call("ledger_statement", call).await.unwrap()).unwrap();
    assert_eq!(first["content"][0]["text"], "Statement statement-0001 (run 0)", "{first}");
    assert_eq!(first["content"][1]["type"], "image", "{first}");
    assert_eq!(again["content"], first["content"], "the retry's blocks are the first call's");
    assert_eq!(again["structuredContent"], first["structuredContent"]);
    assert_eq!(STATEMENTS.load(std::sync::atomic::Ordering::SeqCst), 1, "the handler ran once");
}

#[tokio::test]
async fn a_protected_resource_publishes_its_metadata_and_names_it_in_every_challenge() {
    let server = Server::from_registry("ledger")
        .authenticator(tokens())
        .require_authentication()
        .protected_resource("https://mcp.ledger.test/mcp", ["https://auth.ledger.test"])
        .build()
        .expect("server");
    let url = serve_in_process(server).await;
    let raw = SessionlessClient::new(&url);
    let reply = raw.request("tools/list", json!({}), &[]).await;
    assert_eq!(reply.status, 401);
    let challenge = reply.headers["www-authenticate"].to_str().unwrap().to_string();
    let metadata_url = "https://mcp.ledger.test/.well-known/oauth-protected-resource/mcp";
    assert_eq!(challenge, format!("Bearer resource_metadata=\"{metadata_url}\""));

    let origin = url.trim_end_matches("/mcp");
    let metadata: Value =
        reqwest::get(format!("{origin}/.well-known/oauth-protected-resource/mcp")).await.unwrap().json().await.unwrap();
    assert_eq!(metadata["resource"], "https://mcp.ledger.test/mcp");
    assert_eq!(metadata["authorization_servers"], json!(["https://auth.ledger.test"]));
    assert_eq!(metadata["bearer_methods_supported"], json!(["header"]));
    assert_eq!(metadata["scopes_supported"], json!(["ledger:close"]));

    // Step-up: a token without the called tool's scope gets 403 `insufficient_scope`
    // naming it, before the call runs, so the client can authorize again with it.
    let (bob, alice) = (format!("Bearer {BOB}"), format!("Bearer {ALICE}"));
    let close = json!({ "domain": "ledger" });
    let reply = raw.call_with_headers("ledger_close", close.clone(), &[("Authorization", &bob)]).await;
    assert_eq!(reply.status, 403, "{}", reply.body);
    let challenge = reply.headers["www-authenticate"].to_str().unwrap().to_string();
    assert_eq!(
        challenge,
        format!("Bearer resource_metadata=\"{metadata_url}\", error=\"insufficient_scope\", scope=\"ledger:close\"")
    );
    let reply = raw.call_with_headers("ledger_close", close, &[("Authorization", &alice)]).await;
    assert_eq!(reply.status, 200);
    // Tools without scopes are not challenged.
    let reply = raw.call_with_headers("ledger_view", json!({ "domain": "ledger" }), &[("Authorization", &bob)]).await;
    assert_eq!(reply.status, 200);
}
