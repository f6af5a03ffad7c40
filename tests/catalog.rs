//! Resources, resource templates, prompts and completions beside gated tools, through
//! rmcp's client and raw 2026-07-28 requests: what each lists and reads, the errors for
//! what does not exist, and a template bound to a keyed, tenant-scoped machine — readable
//! only once its instance exists, in the states it names, by its own tenant — whose
//! subscribers hear `notifications/resources/updated` when a call moves the instance.

mod common;

use std::time::Duration;

use common::clients::Lifecycle;
use common::raw::{ListenStream, SessionlessClient};
use common::{TestClient, serve_in_process};
use rmcp::model::{
    ArgumentInfo, CompleteRequestParams, GetPromptRequestParams, ReadResourceRequestParams, Reference,
    ResourceContents, SubscribeRequestParams,
};
use serde_json::{Value, json};
use toolgate::StaticTokens;
use toolgate::completion::starting_with;
use toolgate::content::{Block, Content};
use toolgate::prelude::*;
use toolgate::prompt::{Messages, Prompt};
use toolgate::resource::{Body, Resource, ResourceTemplate};

toolgate::machine! {
    id: "memo",
    key: "id",
    scope: tenant,
    initial: "draft",
    states: {
        draft:     { on: { FILE: "filed" } },
        filed:     { on: { PUBLISH: "published" } },
        published: { type: "final" },
    }
}

#[derive(Deserialize, JsonSchema)]
struct MemoRef {
    /// The memo, `MEMO-` and a number.
    #[schemars(pattern(r"^MEMO-[1-9][0-9]*$"))]
    id: String,
}

#[derive(Serialize, JsonSchema)]
struct Memo {
    id: String,
}

/// File a draft memo. Does not publish it.
#[action(domain = "memo", bind_state = "draft", transition = "FILE")]
async fn memo_file(input: MemoRef, _principal: Principal) -> Result<Memo, ToolError> {
    Ok(Memo { id: input.id })
}

/// Publish a filed memo. Does not file it.
#[action(domain = "memo", bind_state = "filed", transition = "PUBLISH")]
async fn memo_publish(input: MemoRef, _principal: Principal) -> Result<Memo, ToolError> {
    Ok(Memo { id: input.id })
}

/// Draw the memo's stamp, as a picture. Does not file or publish it.
#[action(domain = "memo")]
async fn memo_stamp(input: MemoRef, _principal: Principal) -> Result<Content, ToolError> {
    Ok(Content::new()
        .with(Block::text(format!("The stamp of {}", input.id)))
        .with(Block::image(b"GIF89a", "image/gif")))
}

const ALICE: &str = "alice-of-a-0123456789";
const BOB: &str = "bob-of-b-0123456789";

fn server() -> Server {
    let tokens = StaticTokens::new()
        .token(ALICE, Principal::new("alice").with_tenant("a"))
        .token(BOB, Principal::new("bob").with_tenant("b"));
    Server::from_registry("catalog")
        .authenticator(tokens)
        .resource(Resource::fixed("docs://style", "style", Body::text("Short sentences.", "text/plain")))
        .resource(Resource::new("docs://clock", "clock", |_| async { Ok(Body::text("now", "text/plain")) }))
        .resource_template(
            ResourceTemplate::new("memo://{id}", "memo", |read| async move {
                let (id, state) = read.instance().expect("bound to instances");
                Ok(Body::text(json!({ "id": id, "state": state }).to_string(), "application/json"))
            })
            .instances_of("memo", "id")
            .in_states(["filed", "published"]),
        )
        .prompt(
            Prompt::new("memo_draft", "Draft a memo about a topic", |call| async move {
                let topic = call.argument("topic").unwrap_or_default().to_string();
                Ok(Messages::new()
                    .user(Block::text(format!("Draft a memo about {topic}.")))
                    .user(Block::embedded_text("docs://style", "text/plain", "Short sentences.")))
            })
            .argument("topic", "What the memo is about", true)
            .complete("topic", starting_with(["budget", "benefits", "travel"])),
        )
        .build()
        .expect("server")
}

fn text_of(contents: &ResourceContents) -> Value {
    match contents {
        ResourceContents::TextResourceContents { text, .. } => serde_json::from_str(text).unwrap_or(json!(text)),
        other => panic!("not text: {other:?}"),
    }
}

#[tokio::test]
async fn resources_prompts_and_completions_through_rmcp() {
    let url = serve_in_process(server()).await;
    let client = TestClient::http_as(&url, Lifecycle::Session, Some(ALICE)).await;
    let peer = &client.service;

    let resources = peer.list_all_resources().await.unwrap();
    let uris: Vec<&str> = resources.iter().map(|r| r.uri.as_str()).collect();
    assert_eq!(uris, ["docs://style", "docs://clock"]);
    let templates = peer.list_all_resource_templates().await.unwrap();
    assert_eq!(templates[0].uri_template, "memo://{id}");

    let read = peer.read_resource(ReadResourceRequestParams::new("docs://style")).await.unwrap();
    assert_eq!(text_of(&read.contents[0]), json!("Short sentences."));
    let unknown = peer.read_resource(ReadResourceRequestParams::new("docs://nothing")).await.unwrap_err();
    assert!(unknown.to_string().contains("-32002") || unknown.to_string().contains("no resource"), "{unknown}");

    let prompts = peer.list_all_prompts().await.unwrap();
    assert_eq!(prompts[0].name, "memo_draft");
    let mut arguments = serde_json::Map::new();
    arguments.insert("topic".into(), json!("budget"));
    let prompt = peer.get_prompt(GetPromptRequestParams::new("memo_draft").with_arguments(arguments)).await.unwrap();
    let messages = serde_json::to_value(&prompt.messages).unwrap();
    assert_eq!(messages[0]["content"]["text"], "Draft a memo about budget.", "{messages}");
    assert_eq!(messages[1]["content"]["resource"]["uri"], "docs://style", "{messages}");
    let missing = peer.get_prompt(GetPromptRequestParams::new("memo_draft")).await.unwrap_err();
    assert!(missing.to_string().contains("requires the argument `topic`"), "{missing}");

    let reference = Reference::for_prompt("memo_draft");
    let completion =
        peer.complete(CompleteRequestParams::new(reference, ArgumentInfo::new("topic", "b"))).await.unwrap();
    assert_eq!(completion.completion.values, ["budget", "benefits"]);

    // A tool answering with content blocks: the blocks are the content, and toolgate's own
    // fields (the domain) its structured content.
    client.ok("memo_file", json!({ "domain": "memo", "id": "MEMO-1" })).await;
    let stamp = client.try_call("memo_stamp", json!({ "domain": "memo", "id": "MEMO-1" })).await.unwrap();
    let stamp = serde_json::to_value(&stamp).unwrap();
    assert_eq!(stamp["content"][0]["text"], "The stamp of MEMO-1", "{stamp}");
    assert_eq!(stamp["content"][1]["type"], "image", "{stamp}");
    assert_eq!(stamp["content"][1]["mimeType"], "image/gif", "{stamp}");
    assert_eq!(stamp["structuredContent"]["domain"], "memo", "{stamp}");
}

#[tokio::test]
async fn an_instance_resource_is_readable_once_it_exists_in_its_states_and_tenant() {
    let url = serve_in_process(server()).await;
    let alice = SessionlessClient::new(&url);
    let auth = |token: &str| format!("Bearer {token}");
    let (alice_auth, bob_auth) = (auth(ALICE), auth(BOB));

    // Before any call moved MEMO-7, it does not exist; a malformed key names nothing.
    let before = read(&alice, "memo://MEMO-7", &alice_auth).await.error();
    let error = before.clone();
    assert_eq!(error["code"], -32602, "2026-07-28 says resource-not-found as invalid params: {error}");
    assert_eq!(error["data"]["uri"], "memo://MEMO-7", "{error}");
    assert_eq!(read(&alice, "memo://memo-7", &alice_auth).await.error()["code"], -32602);

    // Filed, it is readable by its tenant, and says its state; another tenant's MEMO-7
    // does not exist, and its refusal is the same.
    let filed = alice
        .call_with_headers("memo_file", json!({ "domain": "memo", "id": "MEMO-7" }), &[("Authorization", &alice_auth)])
        .await
        .result();
    assert_eq!(filed["isError"], false, "{filed}");
    let read_now = read(&alice, "memo://MEMO-7", &alice_auth).await.result();
    assert_eq!(read_now["contents"][0]["mimeType"], "application/json");
    let body: Value = serde_json::from_str(read_now["contents"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(body, json!({ "id": "MEMO-7", "state": "filed" }));
    assert_eq!(read_now["cacheScope"], "private", "{read_now}");
    let theirs = read(&alice, "memo://MEMO-7", &bob_auth).await.error();
    assert_eq!(theirs["message"], before["message"], "another tenant learns nothing");
}

/// `resources/read` of `uri` with the bearer `authorization`.
async fn read(client: &SessionlessClient, uri: &str, authorization: &str) -> common::raw::Reply {
    client.request("resources/read", json!({ "uri": uri }), &[("Authorization", authorization)]).await
}

#[tokio::test]
async fn a_commit_tells_the_listeners_and_sessions_subscribed_to_the_instance() {
    let url = serve_in_process(server()).await;
    let bearer = format!("Bearer {ALICE}");
    let headers = [("Authorization", bearer.as_str())];

    // A 2026-07-28 listener on MEMO-3's resource, and one of tenant b on its own MEMO-3.
    let subscription = json!({ "resourceSubscriptions": ["memo://MEMO-3"] });
    let mut listener = ListenStream::open(&url, 41, subscription.clone(), &headers).await;
    let ack = listener.next(common::PATIENCE).await.expect("an acknowledgement");
    assert_eq!(ack["params"]["notifications"], subscription, "{ack}");
    let bob_bearer = format!("Bearer {BOB}");
    let mut other_tenant = ListenStream::open(&url, 42, subscription, &[("Authorization", &bob_bearer)]).await;
    other_tenant.next(common::PATIENCE).await.expect("an acknowledgement");

    // A 2025-11-25 session subscribed to it.
    let session = TestClient::http_as(&url, Lifecycle::Session, Some(ALICE)).await;
    #[allow(deprecated)] // legacy-only since 2026-07-28: this is the 2025-11-25 session's way
    session.service.subscribe(SubscribeRequestParams::new("memo://MEMO-3")).await.unwrap();

    let caller = SessionlessClient::new(&url);
    let filed = caller.call_with_headers("memo_file", json!({ "domain": "memo", "id": "MEMO-3" }), &headers).await;
    assert_eq!(filed.result()["isError"], false);

    let updated = listener.next(common::PATIENCE).await.expect("resources/updated on the stream");
    assert_eq!(updated["method"], "notifications/resources/updated", "{updated}");
    assert_eq!(updated["params"]["uri"], "memo://MEMO-3", "{updated}");
    assert_eq!(updated["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 41);
    for _ in 0..200 {
        if !session.service.service().resources_updated.lock().unwrap().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(*session.service.service().resources_updated.lock().unwrap(), ["memo://MEMO-3"]);
    // Tenant b's MEMO-3 did not move. (Tenant a's notification, sent to every stream in
    // turn, has arrived: this is no race.)
    assert_eq!(other_tenant.next(Duration::from_millis(300)).await, None);
}

#[tokio::test]
async fn lists_and_reads_say_how_long_and_for_whom_they_may_be_cached() {
    let url = serve_in_process(server()).await;
    let client = SessionlessClient::new(&url);
    for method in ["resources/list", "resources/templates/list", "prompts/list"] {
        let list = client.request(method, json!({}), &[]).await.result();
        assert_eq!(
            (list["ttlMs"].as_u64(), list["cacheScope"].as_str()),
            (Some(300_000), Some("public")),
            "{method}: {list}"
        );
    }
    let fixed = client.request("resources/read", json!({ "uri": "docs://style" }), &[]).await.result();
    assert_eq!((fixed["ttlMs"].as_u64(), fixed["cacheScope"].as_str()), (Some(300_000), Some("public")), "{fixed}");
    let read_each_time = client.request("resources/read", json!({ "uri": "docs://clock" }), &[]).await.result();
    assert_eq!(
        (read_each_time["ttlMs"].as_u64(), read_each_time["cacheScope"].as_str()),
        (Some(0), Some("private")),
        "{read_each_time}"
    );
    // A resource that needs a scope makes the list vary by who asks.
    let scoped = Server::from_registry("scoped-catalog")
        .resource(Resource::fixed("docs://secret", "secret", Body::text("s", "text/plain")).scope("docs:read"))
        .build()
        .unwrap();
    let url = serve_in_process(scoped).await;
    let list = SessionlessClient::new(&url).request("resources/list", json!({}), &[]).await.result();
    assert_eq!(list["cacheScope"], "private", "{list}");
    assert_eq!(list["resources"], json!([]), "hidden from who lacks the scope: {list}");
}

#[tokio::test]
async fn catalog_mistakes_stop_the_server_at_start_up() {
    let read = |_| async { Ok(Body::text("", "text/plain")) };
    let problems = Server::from_registry("bad-catalog")
        .resource(Resource::fixed("docs://a", "a", Body::text("", "text/plain")))
        .resource(Resource::fixed("docs://a", "a-again", Body::text("", "text/plain")))
        .resource_template(ResourceTemplate::new("memo://{key}", "memo", read).instances_of("memo", "id"))
        .resource_template(ResourceTemplate::new("x://{id}", "x", read).instances_of("nothing", "id"))
        .resource_template(ResourceTemplate::new("y://{id}", "y", read).instances_of("memo", "id").in_states(["lost"]))
        .prompt(Prompt::new("p", "p", |_| async { Ok(Messages::new()) }).complete("absent", starting_with(["x"])))
        .build()
        .unwrap_err()
        .to_string();
    for expected in [
        "resource `docs://a` is declared twice",
        "names the key by `{id}`, which it does not have",
        "bound to machine `nothing`, which no action uses",
        "shown in state `lost`, which `memo` does not have",
        "prompt `p` completes `absent`, which it does not take",
    ] {
        assert!(problems.contains(expected), "{expected} in {problems}");
    }
}
