//! Tenant-scoped instances (`machine! { …, scope: tenant }`): an instance is named by the
//! caller's tenant and the key, so `BILL-1` of tenant A and `BILL-1` of tenant B are two
//! objects, and nothing B is told depends on what A has.

mod common;

use common::clients::Lifecycle;
use common::{TestClient, serve_in_process};
use serde_json::{Value, json};
use toolgate::StaticTokens;
use toolgate::prelude::*;

toolgate::machine! {
    id: "bill",
    key: "id",
    scope: tenant,
    initial: "draft",
    states: {
        draft:    { on: { SUBMIT: "review" } },
        review:   { on: { APPROVE: "approved" } },
        approved: { type: "final" },
    }
}

#[derive(Deserialize, JsonSchema)]
struct BillRef {
    /// The bill, `BILL-` and a number.
    #[schemars(pattern(r"^BILL-[1-9][0-9]*$"))]
    id: String,
}

#[derive(Serialize, JsonSchema)]
struct Bill {
    id: String,
    tenant: String,
}

fn bill(input: BillRef, principal: &Principal) -> Bill {
    Bill { id: input.id, tenant: principal.tenant().unwrap_or_default().to_string() }
}

/// View a bill of your tenant. Does not change it.
#[action(domain = "bill")]
async fn bill_view(input: BillRef, principal: Principal) -> Result<Bill, ToolError> {
    Ok(bill(input, &principal))
}

/// Submit a draft bill for review. Does not approve it.
#[action(domain = "bill", bind_state = "draft", transition = "SUBMIT")]
async fn bill_submit(input: BillRef, principal: Principal) -> Result<Bill, ToolError> {
    Ok(bill(input, &principal))
}

/// Approve a bill under review. Does not submit it.
#[action(domain = "bill", bind_state = "review", transition = "APPROVE")]
async fn bill_approve(input: BillRef, principal: Principal) -> Result<Bill, ToolError> {
    Ok(bill(input, &principal))
}

const ALICE: &str = "alice-of-a-0123456789";
const CAROL: &str = "carol-of-a-0123456789";
const BOB: &str = "bob-of-b-0123456789";

async fn server() -> String {
    let tokens = StaticTokens::new()
        .token(ALICE, Principal::new("alice").with_tenant("a"))
        .token(CAROL, Principal::new("carol").with_tenant("a"))
        .token(BOB, Principal::new("bob").with_tenant("b"));
    serve_in_process(Server::from_registry("bills").authenticator(tokens).build().expect("server")).await
}

/// A refusal with the bill's id taken out, to compare refusals about different bills.
fn without_id(mut refusal: Value, id: &str) -> String {
    refusal.as_object_mut().unwrap().remove("instance");
    refusal.to_string().replace(id, "BILL-?")
}

#[tokio::test]
async fn one_key_in_two_tenants_is_two_objects() {
    let url = server().await;
    let alice = TestClient::http_as(&url, Lifecycle::Sessionless, Some(ALICE)).await;
    let carol = TestClient::http_as(&url, Lifecycle::Sessionless, Some(CAROL)).await;
    let bob = TestClient::http_as(&url, Lifecycle::Sessionless, Some(BOB)).await;

    let submitted = alice.ok("bill_submit", json!({ "domain": "bill", "id": "BILL-1" })).await;
    assert_eq!((submitted["state"].as_str(), submitted["tenant"].as_str()), (Some("review"), Some("a")));
    // The same tenant shares it.
    let seen = carol.ok("bill_view", json!({ "domain": "bill", "id": "BILL-1" })).await;
    assert_eq!(seen["state"], "review");
    // Another tenant has a BILL-1 of its own, untouched.
    let own = bob.ok("bill_view", json!({ "domain": "bill", "id": "BILL-1" })).await;
    assert_eq!((own["state"].as_str(), own["tenant"].as_str()), (Some("draft"), Some("b")));
    let refused = bob.refused("bill_approve", json!({ "domain": "bill", "id": "BILL-1" })).await;
    assert_eq!((refused["code"].as_str(), refused["current_state"].as_str()), (Some("FORBIDDEN"), Some("draft")));
    // Bob's own BILL-1 moves on its own; Alice's stays where it was.
    bob.ok("bill_submit", json!({ "domain": "bill", "id": "BILL-1" })).await;
    bob.ok("bill_approve", json!({ "domain": "bill", "id": "BILL-1" })).await;
    assert_eq!(carol.ok("bill_view", json!({ "domain": "bill", "id": "BILL-1" })).await["state"], "review");
}

#[tokio::test]
async fn what_another_tenant_is_told_is_the_same_whether_the_object_exists_or_not() {
    let url = server().await;
    let alice = TestClient::http_as(&url, Lifecycle::Sessionless, Some(ALICE)).await;
    let bob = TestClient::http_as(&url, Lifecycle::Sessionless, Some(BOB)).await;
    alice.ok("bill_submit", json!({ "domain": "bill", "id": "BILL-7" })).await;

    let probe = |id: &'static str| {
        let bob = &bob;
        async move {
            let refused = bob.refused("bill_approve", json!({ "domain": "bill", "id": id })).await;
            let viewed = bob.ok("bill_view", json!({ "domain": "bill", "id": id })).await;
            (without_id(refused, id), without_id(viewed, id))
        }
    };
    // BILL-7 exists for tenant a (in review); BILL-8 exists nowhere.
    assert_eq!(probe("BILL-7").await, probe("BILL-8").await);
}

#[tokio::test]
async fn a_tenant_scoped_instance_needs_a_principal() {
    let url = server().await;
    let anonymous = TestClient::http_as(&url, Lifecycle::Sessionless, None).await;
    let refused = anonymous.refused("bill_view", json!({ "domain": "bill", "id": "BILL-1" })).await;
    assert_eq!(refused["code"], "UNAUTHENTICATED", "{refused}");
}

#[tokio::test]
async fn a_session_lists_from_its_own_tenant_s_instance() {
    let url = server().await;
    let alice = TestClient::http_as(&url, Lifecycle::Sessionless, Some(ALICE)).await;
    let bob = TestClient::http_as(&url, Lifecycle::Session, Some(BOB)).await;
    bob.ok("bill_view", json!({ "domain": "bill", "id": "BILL-3" })).await;
    alice.ok("bill_submit", json!({ "domain": "bill", "id": "BILL-3" })).await;
    // Bob's session focuses on his BILL-3, still a draft: he may submit, not approve.
    let listed = bob.tool_names().await;
    assert!(listed.contains(&"bill_submit".to_string()) && !listed.contains(&"bill_approve".to_string()), "{listed:?}");
}
