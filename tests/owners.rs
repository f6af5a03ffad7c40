//! An instance its creator's (`machine! { owner: principal }`): another principal of the
//! same tenant gets, from every tool and from the machine's history tool, exactly what a
//! key never minted gets. (The travel example's quotes, over HTTP:
//! `tests/integration/travel.rs`.)

mod common;

use common::clients::Lifecycle;
use common::{TestClient, serve_in_process};
use serde_json::{Value, json};
use toolgate::StaticTokens;
use toolgate::prelude::*;

const ALICE: &str = "alice-of-a-0123456789";
const CAROL: &str = "carol-of-a-0123456789";

/// Alice and Carol, of one tenant.
fn tokens() -> StaticTokens {
    StaticTokens::new()
        .token(ALICE, Principal::new("alice").with_tenant("a"))
        .token(CAROL, Principal::new("carol").with_tenant("a"))
}

async fn client(url: &str, token: &str) -> TestClient {
    TestClient::http_as(url, Lifecycle::Sessionless, Some(token)).await
}
// Notes are their writer's (`owner: principal`), under keys of 128 random bits.
toolgate::machine! {
    id: "note",
    key: "note_id",
    owner: principal,
    mint: "N-{random}",
    initial: "draft",
    states: {
        draft:     { on: { PUBLISH: "published" } },
        published: { type: "final" },
    }
}

#[derive(Deserialize, JsonSchema)]
struct NoteText {
    /// What the note says.
    text: String,
}

#[derive(Deserialize, JsonSchema)]
struct NoteRef {
    /// The note, as `note_write` returned it.
    #[schemars(pattern(r"^N-[a-z2-7]{26}$"))]
    note_id: String,
}

#[derive(Serialize, JsonSchema)]
struct Note {
    note_id: String,
}

/// Write a note of your own, as a draft. Does not publish it.
#[action(domain = "note", creates)]
async fn note_write(input: NoteText, ctx: Ctx) -> Result<Note, ToolError> {
    let _ = input.text;
    Ok(Note { note_id: ctx.instance().unwrap_or_default().to_string() })
}

/// Publish one of your draft notes. Does not write one.
#[action(domain = "note", bind_state = "draft", transition = "PUBLISH")]
async fn note_publish(input: NoteRef) -> Result<Note, ToolError> {
    Ok(Note { note_id: input.note_id })
}

/// A note is its writer's: another principal of the same tenant reading its history (or
/// publishing it) gets exactly what a note never written gets, byte for byte but for the
/// key; the writer reads the publication.
#[tokio::test]
async fn another_principal_cannot_read_the_history_of_an_owned_instance() {
    let server = Server::from_registry("notes").authenticator(tokens()).history_tool("note");
    let url = serve_in_process(server.build().expect("server")).await;
    let (alice, carol) = (client(&url, ALICE).await, client(&url, CAROL).await);
    let written = alice.ok("note_write", json!({ "domain": "note", "text": "hello" })).await;
    let note = written["note_id"].as_str().unwrap().to_string();
    alice.ok("note_publish", json!({ "domain": "note", "note_id": note })).await;
    let never = "N-aaaaaaaaaaaaaaaaaaaaaaaaaa";
    for tool in ["note_history", "note_publish"] {
        let call = |key: &str| json!({ "domain": "note", "note_id": key });
        let theirs = carol.try_call(tool, call(&note)).await.expect("an answer");
        let unmade = carol.try_call(tool, call(never)).await.expect("an answer");
        let theirs = serde_json::to_string(&theirs).unwrap().replace(&note, "<KEY>");
        let unmade = serde_json::to_string(&unmade).unwrap().replace(never, "<KEY>");
        assert_eq!(theirs, unmade, "{tool}: another's note answers unlike a note never written");
        assert!(theirs.contains("NOT_FOUND"), "{tool}: {theirs}");
    }
    let history: Value = alice.ok("note_history", json!({ "domain": "note", "note_id": note })).await;
    let rows = history["entries"].as_array().expect("entries");
    assert_eq!(rows.len(), 1, "{history}");
    assert_eq!(
        (rows[0]["principal"].as_str(), rows[0]["event"].as_str()),
        (Some("alice"), Some("PUBLISH")),
        "{history}"
    );
    // A caller without a principal is refused before any instance is named.
    let anonymous = TestClient::http_as(&url, Lifecycle::Sessionless, None).await;
    let refused = anonymous.refused("note_write", json!({ "domain": "note", "text": "hi" })).await;
    assert_eq!(refused["code"], "UNAUTHENTICATED", "{refused}");
}
