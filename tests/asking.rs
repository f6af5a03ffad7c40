//! A handler that asks the client (`Ctx::ask`, `Ctx::elicit`): on MCP 2025-11-25 a request
//! the client answers while the call waits, within its deadline; on 2026-07-28 rounds — an
//! `InputRequiredResult` with a sealed `requestState`, then the retried call with the
//! answers. A round that asks commits nothing; a state altered, replayed on other
//! arguments or by another principal is refused; a client that cannot answer is told so.

mod common;

use std::time::Duration;

use common::raw::SessionlessClient;
use common::{TestClient, serve_in_process};
use rmcp::model::{ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, ElicitationAction, ErrorData};
use rmcp::service::RequestContext;
use rmcp::{ClientHandler, RoleClient};
use serde_json::{Value, json};
use toolgate::StaticTokens;
use toolgate::prelude::*;

toolgate::machine! {
    id: "refund",
    key: "id",
    initial: "requested",
    states: {
        requested: { on: { APPROVE: "approved" } },
        approved:  { type: "final" },
    }
}

#[derive(Deserialize, JsonSchema)]
struct RefundRef {
    /// The refund, `R-` and a number.
    #[schemars(pattern(r"^R-[1-9][0-9]*$"))]
    id: String,
}

#[derive(Deserialize, JsonSchema)]
struct Reason {
    /// Why the refund is approved.
    reason: String,
}

#[derive(Serialize, JsonSchema)]
struct Approved {
    id: String,
    reason: String,
}

/// Approve a requested refund, after the person says why. Does not pay it.
#[action(domain = "refund", bind_state = "requested", transition = "APPROVE", timeout = "2s")]
async fn refund_approve(input: RefundRef, ctx: Ctx) -> Result<Approved, ToolError> {
    let Some(Reason { reason }) = ctx.elicit::<Reason>("reason", format!("Why approve {}?", input.id)).await? else {
        return Err(ToolError::failed("NOT_APPROVED", "the person declined to give a reason"));
    };
    Ok(Approved { id: input.id, reason })
}

const ALICE: &str = "alice-0123456789abcdef";
const BOB: &str = "bob-0123456789abcdef";

fn server() -> Server {
    let tokens = StaticTokens::new().token(ALICE, Principal::new("alice")).token(BOB, Principal::new("bob"));
    Server::from_registry("asking").authenticator(tokens).build().expect("server")
}

/// A 2025-11-25 client that answers every form with `answer` (or never, if `None`).
#[derive(Clone)]
struct Answering {
    answer: Option<Value>,
}

impl ClientHandler for Answering {
    async fn create_elicitation(
        &self,
        _request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        match &self.answer {
            Some(content) => Ok(ElicitResult::new(ElicitationAction::Accept).with_content(content.clone())),
            None => std::future::pending().await,
        }
    }

    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        capabilities.elicitation = Some(Default::default());
        ClientConfig::new(capabilities, rmcp::model::Implementation::new("asking-test", "0.0.0"))
    }
}

async fn session(url: &str, answer: Option<Value>) -> rmcp::service::RunningService<RoleClient, Answering> {
    common::clients::connect_http_as(Answering { answer }, url, common::clients::Lifecycle::Session, Some(ALICE)).await
}

async fn call(peer: &rmcp::service::RunningService<RoleClient, Answering>, id: &str) -> Value {
    let arguments = json!({ "domain": "refund", "id": id }).as_object().cloned();
    let mut request = rmcp::model::CallToolRequestParams::new("refund_approve");
    request.arguments = arguments;
    serde_json::to_value(peer.call_tool(request).await.expect("tools/call")).unwrap()
}

#[tokio::test]
async fn on_2025_11_25_the_call_waits_for_the_answer_within_its_deadline() {
    let url = serve_in_process(server()).await;

    let answering = session(&url, Some(json!({ "reason": "damaged on arrival" }))).await;
    let approved = call(&answering, "R-1").await;
    assert_eq!(approved["structuredContent"]["reason"], "damaged on arrival", "{approved}");
    assert_eq!(approved["structuredContent"]["state"], "approved", "{approved}");

    // A person who never answers: the deadline ends the wait, and nothing moved.
    let silent = session(&url, None).await;
    let timed_out = call(&silent, "R-2").await;
    assert_eq!(timed_out["structuredContent"]["code"], "TIMEOUT", "{timed_out}");
    let again = call(&answering, "R-2").await;
    assert_eq!(again["structuredContent"]["state"], "approved", "R-2 was still requested: {again}");

    // A client that declared no elicitation is told the call cannot ask it.
    let plain = TestClient::http_as(&url, common::clients::Lifecycle::Session, Some(ALICE)).await;
    let refused = plain.refused("refund_approve", json!({ "domain": "refund", "id": "R-3" })).await;
    assert_eq!(refused["code"], "INPUT_UNAVAILABLE", "{refused}");
}

#[tokio::test]
async fn on_2026_07_28_a_round_asks_commits_nothing_and_its_sealed_state_binds_the_call() {
    let url = serve_in_process(server()).await;
    let client = SessionlessClient::new(&url);
    let (alice, bob) = (format!("Bearer {ALICE}"), format!("Bearer {BOB}"));
    let capabilities = json!({ "io.modelcontextprotocol/clientCapabilities": { "elicitation": {} } });
    let call = |id: &str, extra: Value, token: &str| {
        let mut params =
            json!({ "name": "refund_approve", "arguments": { "domain": "refund", "id": id }, "_meta": capabilities });
        for (key, value) in extra.as_object().cloned().unwrap_or_default() {
            params[key] = value;
        }
        let (client, token) = (&client, token.to_string());
        async move { client.request("tools/call", params, &[("Authorization", &token)]).await }
    };

    // Round one: the question, and a sealed state; R-7 has not moved.
    let asked = call("R-7", json!({}), &alice).await.result();
    assert_eq!(asked["resultType"], "input_required", "{asked}");
    let question = &asked["inputRequests"]["reason"];
    assert_eq!(question["method"], "elicitation/create", "{asked}");
    assert_eq!(question["params"]["requestedSchema"]["properties"]["reason"]["type"], "string", "{asked}");
    let state = asked["requestState"].as_str().expect("a request state").to_string();
    let view = call("R-7", json!({}), &alice).await.result();
    assert_eq!(view["resultType"], "input_required", "still requested: the same question again: {view}");

    let answer = json!({ "reason": { "action": "accept", "content": { "reason": "never shipped" } } });
    // The state is bound to the call: another refund, another principal, or an altered
    // state are refused before anything runs.
    let other_refund = call("R-8", json!({ "inputResponses": answer, "requestState": state }), &alice).await.error();
    assert_eq!(other_refund["code"], -32602, "{other_refund}");
    let other_principal = call("R-7", json!({ "inputResponses": answer, "requestState": state }), &bob).await.error();
    assert_eq!(other_principal["code"], -32602, "{other_principal}");
    let mut altered = state.clone();
    altered.insert(10, if altered.as_bytes()[10] == b'A' { 'B' } else { 'A' });
    let tampered = call("R-7", json!({ "inputResponses": answer, "requestState": altered }), &alice).await.error();
    assert_eq!(tampered["code"], -32602, "{tampered}");
    assert!(!tampered.to_string().contains("serde"), "{tampered}");

    // An answer that is not one to the question is asked again.
    let wrong = json!({ "reason": 12345 });
    let reasked = call("R-7", json!({ "inputResponses": wrong, "requestState": state }), &alice).await.result();
    assert_eq!(reasked["resultType"], "input_required", "{reasked}");

    // The retry with the answer completes, and moves R-7.
    let done = call("R-7", json!({ "inputResponses": answer, "requestState": state }), &alice).await.result();
    assert_eq!(done["structuredContent"]["reason"], "never shipped", "{done}");
    assert_eq!(done["structuredContent"]["state"], "approved", "{done}");

    // A client that declared no elicitation gets the protocol's missing-capability error.
    let bare = client
        .request(
            "tools/call",
            json!({ "name": "refund_approve", "arguments": { "domain": "refund", "id": "R-9" } }),
            &[("Authorization", &alice)],
        )
        .await;
    assert_eq!(bare.status, 400);
    let error = bare.error();
    assert_eq!(error["code"], -32021, "{error}");
    assert!(error["data"]["requiredCapabilities"]["elicitation"].is_object(), "{error}");
}

#[tokio::test]
async fn a_sessionless_2025_11_25_request_cannot_ask_and_says_so() {
    let server = Server::from_registry("asking-sessionless")
        .authenticator(StaticTokens::new().token(ALICE, Principal::new("alice")))
        .sessionless()
        .build()
        .unwrap();
    let url = serve_in_process(server).await;
    let client = TestClient::http_as(&url, common::clients::Lifecycle::Session, Some(ALICE)).await;
    let refused = client.refused("refund_approve", json!({ "domain": "refund", "id": "R-1" })).await;
    assert_eq!(refused["code"], "INPUT_UNAVAILABLE", "{refused}");
    tokio::time::sleep(Duration::from_millis(1)).await;
}
