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

// Trips are their planner's, under ids the client names: a fresh id is a trip in `draft`.
toolgate::machine! {
    id: "trip",
    key: "trip_id",
    owner: principal,
    initial: "draft",
    states: {
        draft:   { on: { PLAN: "planned" } },
        planned: { type: "final" },
    }
}

#[derive(Deserialize, JsonSchema)]
struct TripRef {
    /// The trip, as you named it.
    trip_id: String,
}

#[derive(Serialize, JsonSchema)]
struct Trip {
    trip_id: String,
}

/// View one of your trips. Does not plan it.
#[action(domain = "trip")]
async fn trip_view(input: TripRef) -> Result<Trip, ToolError> {
    Ok(Trip { trip_id: input.trip_id })
}

/// Plan one of your draft trips. Does not book anything.
#[action(domain = "trip", bind_state = "draft", transition = "PLAN")]
async fn trip_plan(input: TripRef) -> Result<Trip, ToolError> {
    Ok(Trip { trip_id: input.trip_id })
}

/// On a machine whose ids clients name, one id is one trip in a tenant: another principal
/// naming a taken id is refused `NOT_FOUND` in the words a key never created gets (it
/// learns the id is taken, and nothing else: no other code, no state); a free id is its
/// own draft. The planner keeps hers.
#[tokio::test]
async fn another_principal_naming_a_taken_id_is_told_it_does_not_exist() {
    let url = serve_in_process(Server::from_registry("trips").authenticator(tokens()).build().expect("server")).await;
    let (alice, carol) = (client(&url, ALICE).await, client(&url, CAROL).await);
    let trip = |id: &str| json!({ "domain": "trip", "trip_id": id });
    assert_eq!(alice.ok("trip_plan", trip("T-1")).await["state"], "planned");
    for tool in ["trip_view", "trip_plan"] {
        let refused = carol.refused(tool, trip("T-1")).await;
        assert_eq!(refused["code"], "NOT_FOUND", "{tool}: {refused}");
        assert_eq!(refused["message"], "no trip `T-1` exists", "{tool}: {refused}");
        assert!(refused.get("state").is_none() && refused.get("current_state").is_none(), "{tool}: {refused}");
    }
    assert_eq!(carol.ok("trip_view", trip("T-2")).await["state"], "draft");
    assert_eq!(carol.ok("trip_plan", trip("T-2")).await["state"], "planned");
    assert_eq!(alice.ok("trip_view", trip("T-1")).await["state"], "planned");
    let refused = alice.refused("trip_view", trip("T-2")).await;
    assert_eq!(refused["message"], "no trip `T-2` exists", "{refused}");
}

/// What another principal is told takes as long whether the note exists (and is another's)
/// or was never written: the same load and comparison, nothing more. Medians of calls
/// interleaved, so that whatever slows the machine slows both alike.
#[tokio::test]
async fn another_owner_is_told_in_the_same_time_whether_the_note_exists_or_not() {
    let url = serve_in_process(Server::from_registry("notes").authenticator(tokens()).build().expect("server")).await;
    let (alice, carol) = (client(&url, ALICE).await, client(&url, CAROL).await);
    let written = alice.ok("note_write", json!({ "domain": "note", "text": "hello" })).await;
    let note = written["note_id"].as_str().unwrap().to_string();
    let never = "N-aaaaaaaaaaaaaaaaaaaaaaaaaa";
    let publish = |key: &str| json!({ "domain": "note", "note_id": key });
    let (mut theirs, mut unmade) = (Vec::new(), Vec::new());
    for round in 0..60 {
        for (key, times) in [(&note[..], &mut theirs), (never, &mut unmade)] {
            let started = std::time::Instant::now();
            let refused = carol.refused("note_publish", publish(key)).await;
            let took = started.elapsed();
            assert_eq!(refused["code"], "NOT_FOUND");
            // The first rounds warm up.
            if round >= 10 {
                times.push(took);
            }
        }
    }
    let median = |times: &mut Vec<std::time::Duration>| {
        times.sort();
        times[times.len() / 2]
    };
    let (theirs, unmade) = (median(&mut theirs), median(&mut unmade));
    eprintln!("medians of 50 calls: another's note {theirs:?}, a note never written {unmade:?}");
    let (low, high) = (theirs.min(unmade), theirs.max(unmade));
    assert!(high < low * 2 + std::time::Duration::from_millis(1), "another's: {theirs:?}; never written: {unmade:?}");
}

// Memos are their writer's, numbered from a counter (what the audit warns of, and what an
// older toolgate numbered per owner: the migration tests' machine).
toolgate::machine! {
    id: "memo",
    key: "memo_id",
    owner: principal,
    mint: "M-{n}",
    initial: "draft",
    states: {
        draft: {},
    }
}

#[derive(Deserialize, JsonSchema)]
struct MemoRef {
    /// The memo, as `memo_write` returned it.
    memo_id: String,
}

#[derive(Serialize, JsonSchema)]
struct Memo {
    memo_id: String,
}

/// Write a memo of your own. Does not send it.
#[action(domain = "memo", creates)]
async fn memo_write(input: NoteText, ctx: Ctx) -> Result<Memo, ToolError> {
    let _ = input.text;
    Ok(Memo { memo_id: ctx.instance().unwrap_or_default().to_string() })
}

/// View one of your memos. Does not change it.
#[action(domain = "memo")]
async fn memo_view(input: MemoRef) -> Result<Memo, ToolError> {
    Ok(Memo { memo_id: input.memo_id })
}

/// What an older toolgate named a principal by in the keys of what it owned: 128 bits of
/// SHA-256 of its tenant and subject, quoted (`Principal::digest`, pinned here: a change
/// of it would orphan every owned instance).
fn digest(tenant: &str, subject: &str) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(format!("{:?}:{:?}", Some(tenant), subject).as_bytes());
    digest[..16].iter().map(|b| format!("{b:02x}")).collect()
}

/// An older toolgate's key of `owner`'s memo `id`, and of its per-owner counter.
fn legacy_memo(owner: &str, id: &str) -> String {
    format!("owned-instance:{}:{owner}:4:memo:{id}", owner.len())
}
fn legacy_counter(owner: &str) -> String {
    format!("minted-owned:{}:{owner}:memo", owner.len())
}

/// Rows of (key, JSON).
type Rows = Vec<(String, String)>;

/// What an older toolgate wrote in `tenant`: Alice's `M-1` (its history one creation) and
/// `M-2`, Carol's `M-1`, their counters at 2 and 5 — records as (key, snapshot), history
/// entries as (key, entry).
fn legacy_records(tenant: &str) -> (Rows, Rows) {
    let (alice, carol) = (digest(tenant, "alice"), digest(tenant, "carol"));
    let memo = |by: &str| {
        json!({ "states": { "memo": "draft" }, "active_domain": null, "version": 0, "updated_at_ms": 1_780_000_000_000_u64,
                "context": { "by": by }, "tenant": tenant })
        .to_string()
    };
    let counter = |n: u64| {
        json!({ "states": {}, "active_domain": null, "version": 0, "updated_at_ms": 0, "record": { "n": n } })
            .to_string()
    };
    let records = vec![
        (legacy_memo(&alice, "M-1"), memo("alice")),
        (legacy_memo(&alice, "M-2"), memo("alice")),
        (legacy_memo(&carol, "M-1"), memo("carol")),
        (legacy_counter(&alice), counter(2)),
        (legacy_counter(&carol), counter(5)),
    ];
    let entry = json!({ "principal": "alice", "tenant": tenant, "from": "draft", "to": "draft", "event": "WRITE",
                        "tool": "memo_write", "time": "2026-05-28T20:26:40.000Z", "call_id": "call-1", "at_ms": 1_780_000_000_000_u64 });
    (records, vec![(legacy_memo(&alice, "M-1"), entry.to_string())])
}

/// A server on `store` whose tenant `a` principals are Alice, Carol and Bob.
async fn memo_server(store: impl toolgate::store::FlowStore, tenant: &str) -> String {
    let tokens = StaticTokens::new()
        .token(ALICE, Principal::new("alice").with_tenant(tenant))
        .token(CAROL, Principal::new("carol").with_tenant(tenant))
        .token(BOB, Principal::new("bob").with_tenant(tenant));
    let server = Server::from_registry("memos").authenticator(tokens).history_tool("memo").store(store);
    let server = server.handle_key(b"owned-migration-handle-key-0000000001".to_vec());
    serve_in_process(server.build().expect("server")).await
}

const BOB: &str = "bob-of-a-0123456789";

/// After the migration, over HTTP: each owner reaches their memos — of the two `M-1`, the
/// one whose owner's digest sorts first keeps the id, the other is `M-1~2` — with the
/// history moved along; Bob, of the same tenant, is told of Alice's `M-1` exactly what a
/// memo never written gets; and the next memo minted is past every owner's counter.
async fn migrated_memos_answer_their_owners(url: &str, tenant: &str) {
    let (alice, carol, bob) = (client(url, ALICE).await, client(url, CAROL).await, client(url, BOB).await);
    let view = |id: &str| json!({ "domain": "memo", "memo_id": id });
    let alice_first = digest(tenant, "alice") < digest(tenant, "carol");
    let (alice_m1, carol_m1) = if alice_first { ("M-1", "M-1~2") } else { ("M-1~2", "M-1") };
    for (who, mine, theirs) in [(&alice, alice_m1, carol_m1), (&carol, carol_m1, alice_m1)] {
        assert_eq!(who.ok("memo_view", view(mine)).await["state"], "draft");
        let refused = who.refused("memo_view", view(theirs)).await;
        assert_eq!(refused["code"], "NOT_FOUND", "{refused}");
    }
    assert_eq!(alice.ok("memo_view", view("M-2")).await["state"], "draft");
    let history = alice.ok("memo_history", view(alice_m1)).await;
    assert_eq!(history["entries"][0]["call_id"], "call-1", "{history}");
    for tool in ["memo_view", "memo_history"] {
        let another = bob.try_call(tool, view(alice_m1)).await.expect("an answer");
        let never = bob.try_call(tool, view("M-99")).await.expect("an answer");
        let another = serde_json::to_string(&another).unwrap().replace(alice_m1, "<KEY>");
        let never = serde_json::to_string(&never).unwrap().replace("M-99", "<KEY>");
        assert_eq!(another, never, "{tool}: another's memo answers unlike a memo never written");
        assert!(another.contains("NOT_FOUND"), "{another}");
    }
    // Carol's counter was at 5: no memo number at or below it is minted again.
    let written = bob.ok("memo_write", json!({ "domain": "memo", "text": "hi" })).await;
    assert_eq!(written["memo_id"], "M-6", "{written}");
    assert_eq!(alice.ok("memo_write", json!({ "domain": "memo", "text": "hi" })).await["memo_id"], "M-7");
}

#[tokio::test]
async fn a_sqlite_file_s_owned_instances_move_to_their_tenant_s_keys() {
    let dir = std::env::temp_dir().join(format!("toolgate-owned-sqlite-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("state.db");
    let _ = std::fs::remove_file(&path);
    drop(toolgate::store::SqliteStore::open(&path).expect("a new file"));
    // What the file held before migration 4, at version 3.
    let file = rusqlite::Connection::open(&path).unwrap();
    let (records, history) = legacy_records("a");
    for (key, snapshot) in &records {
        file.execute("INSERT INTO records (key, version, snapshot) VALUES (?1, 1, ?2)", [key, snapshot]).unwrap();
    }
    for (key, entry) in &history {
        file.execute("INSERT INTO history (key, version, at_ms, entry) VALUES (?1, 1, 0, ?2)", [key, entry]).unwrap();
    }
    file.pragma_update(None, "user_version", 3).unwrap();
    drop(file);
    let url = memo_server(toolgate::store::SqliteStore::open(&path).expect("migrated"), "a").await;
    migrated_memos_answer_their_owners(&url, "a").await;
    let file = rusqlite::Connection::open(&path).unwrap();
    let left: i64 = file
        .query_row(
            "SELECT count(*) FROM records WHERE key LIKE 'owned-instance:%' OR key LIKE 'minted-owned:%'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(left, 0, "every record of the older keys moved");
}

#[tokio::test]
async fn a_postgres_schema_s_owned_instances_move_to_their_tenant_s_keys() {
    let Some(url) = std::env::var("TOOLGATE_TEST_POSTGRES_URL").ok().filter(|url| !url.is_empty()) else {
        eprintln!("SKIPPED: needs TOOLGATE_TEST_POSTGRES_URL (`.ci/run` starts a Postgres and sets it)");
        return;
    };
    let schema = format!("toolgate_owned_{}", std::process::id());
    let (client_, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    client_.batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE")).await.unwrap();
    drop(toolgate::store::PostgresStore::connect_in_schema(&url, &schema).await.expect("a new schema"));
    let (records, history) = legacy_records("a");
    for (key, snapshot) in &records {
        let insert = format!("INSERT INTO {schema}.records (key, version, snapshot) VALUES ($1, 1, $2)");
        client_.execute(&insert, &[key, snapshot]).await.unwrap();
    }
    for (key, entry) in &history {
        let insert = format!("INSERT INTO {schema}.history (key, at_ms, entry) VALUES ($1, 0, $2)");
        client_.execute(&insert, &[key, entry]).await.unwrap();
    }
    // What the schema held before migration 10.
    client_.execute(&format!("DELETE FROM {schema}.migrations WHERE version >= 10"), &[]).await.unwrap();
    let store = toolgate::store::PostgresStore::connect_in_schema(&url, &schema).await.expect("migrated");
    migrated_memos_answer_their_owners(&memo_server(store, "a").await, "a").await;
    let left =
        format!("SELECT count(*) FROM {schema}.records WHERE key LIKE 'owned-instance:%' OR key LIKE 'minted-owned:%'");
    let left: i64 = client_.query_one(&left, &[]).await.unwrap().get(0);
    assert_eq!(left, 0, "every record of the older keys moved");
    client_.batch_execute(&format!("DROP SCHEMA {schema} CASCADE")).await.unwrap();
}

#[tokio::test]
async fn a_redis_s_owned_instances_move_to_their_tenant_s_keys() {
    let Some(url) = std::env::var("TOOLGATE_TEST_REDIS_URL").ok().filter(|url| !url.is_empty()) else {
        eprintln!("SKIPPED: needs TOOLGATE_TEST_REDIS_URL (`.ci/run` starts a Redis and sets it)");
        return;
    };
    // A tenant of this run's own: the Redis is shared.
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    let tenant = format!("t{nanos}");
    let mut redis = redis::Client::open(url.as_str()).unwrap().get_multiplexed_async_connection().await.unwrap();
    drop(toolgate::store::RedisStore::connect(&url).await.expect("a store"));
    let (records, history) = legacy_records(&tenant);
    for (key, snapshot) in &records {
        let _: () = redis::cmd("HSET")
            .arg(format!("toolgate:{{{key}}}:record"))
            .arg("v")
            .arg(1)
            .arg("s")
            .arg(snapshot)
            .query_async(&mut redis)
            .await
            .unwrap();
        let _: () =
            redis::cmd("SET").arg(format!("toolgate:{{{key}}}:revision")).arg(1).query_async(&mut redis).await.unwrap();
    }
    for (key, entry) in &history {
        let _: () = redis::cmd("RPUSH")
            .arg(format!("toolgate:{{{key}}}:history"))
            .arg(entry)
            .query_async(&mut redis)
            .await
            .unwrap();
    }
    // What Redis held before the migration: no version key. Two replicas start at once.
    let _: () = redis::cmd("DEL").arg("toolgate:{migrations}").query_async(&mut redis).await.unwrap();
    let (first, second) =
        tokio::join!(toolgate::store::RedisStore::connect(&url), toolgate::store::RedisStore::connect(&url));
    drop(second.expect("migrated"));
    migrated_memos_answer_their_owners(&memo_server(first.expect("migrated"), &tenant).await, &tenant).await;
    for (key, _) in records.iter().filter(|(key, _)| key.starts_with("owned-instance:")) {
        let left: bool =
            redis::cmd("EXISTS").arg(format!("toolgate:{{{key}}}:record")).query_async(&mut redis).await.unwrap();
        assert!(!left, "{key} was not moved");
    }
}

// Reports are their filer's; a manager approves them (`owned_instances_managed_by`).
toolgate::machine! {
    id: "report",
    key: "report_id",
    owner: principal,
    mint: "R-{random}",
    initial: "submitted",
    states: {
        submitted: { on: { APPROVE: "approved" } },
        approved:  { type: "final" },
    }
}

#[derive(Deserialize, JsonSchema)]
struct ReportRef {
    /// The report, as `report_file` returned it.
    #[schemars(pattern(r"^R-[a-z2-7]{26}$"))]
    report_id: String,
}

#[derive(Serialize, JsonSchema)]
struct Report {
    report_id: String,
}

/// File an expense report of your own. Does not approve it.
#[action(domain = "report", creates)]
async fn report_file(input: NoteText, ctx: Ctx) -> Result<Report, ToolError> {
    let _ = input.text;
    Ok(Report { report_id: ctx.instance().unwrap_or_default().to_string() })
}

/// Read a report. Does not change it.
#[action(domain = "report")]
async fn report_view(input: ReportRef) -> Result<Report, ToolError> {
    Ok(Report { report_id: input.report_id })
}

/// Approve a submitted report: for managers. Does not file one.
#[action(domain = "report", bind_state = "submitted", transition = "APPROVE", scope = "reports:approve")]
async fn report_approve(input: ReportRef) -> Result<Report, ToolError> {
    Ok(Report { report_id: input.report_id })
}

/// "The creator owns it, a manager approves it": with the approvers' scope named, a
/// manager of the filer's tenant approves another's report and reads its history; a
/// colleague without it — and a manager of another tenant — gets from every tool exactly
/// what a report never filed gets. Without the option, the manager reaches nothing.
#[tokio::test]
async fn a_manager_acts_on_reports_of_others_and_a_colleague_is_told_none_exists() {
    const MAX: &str = "max-of-a-0123456789ab";
    const DORA: &str = "dora-of-b-0123456789";
    let approver = |name: &str, tenant: &str| Principal::new(name).with_tenant(tenant).with_scopes(["reports:approve"]);
    let tokens = || tokens().token(MAX, approver("max", "a")).token(DORA, approver("dora", "b"));
    let report = |id: &str| json!({ "domain": "report", "report_id": id });

    // Without the option: only the filer reaches a report, the manager included.
    let alone = Server::from_registry("reports").authenticator(tokens()).build().expect("server");
    let url = serve_in_process(alone).await;
    let (alice, max) = (client(&url, ALICE).await, client(&url, MAX).await);
    let filed = alice.ok("report_file", json!({ "domain": "report", "text": "taxi" })).await;
    let id = filed["report_id"].as_str().unwrap().to_string();
    assert_eq!(max.refused("report_approve", report(&id)).await["code"], "NOT_FOUND");

    let server = Server::from_registry("reports")
        .authenticator(tokens())
        .history_tool("report")
        .owned_instances_managed_by("report", ["reports:approve"]);
    let url = serve_in_process(server.build().expect("server")).await;
    let (alice, max, carol, dora) =
        (client(&url, ALICE).await, client(&url, MAX).await, client(&url, CAROL).await, client(&url, DORA).await);
    let filed = alice.ok("report_file", json!({ "domain": "report", "text": "taxi" })).await;
    let id = filed["report_id"].as_str().unwrap().to_string();
    assert_eq!(max.ok("report_view", report(&id)).await["state"], "submitted");
    let approved = max.ok("report_approve", report(&id)).await;
    assert_eq!(approved["state"], "approved", "{approved}");
    let history = max.ok("report_history", report(&id)).await;
    let entries = history["entries"].as_array().cloned().unwrap_or_default();
    assert_eq!(entries.len(), 1, "{history}");
    assert_eq!((entries[0]["principal"].as_str(), entries[0]["event"].as_str()), (Some("max"), Some("APPROVE")));
    // The filer, who may not approve, is never told to.
    let own = alice.ok("report_view", report(&id)).await;
    assert!(!own["next"].to_string().contains("report_approve"), "{own}");

    let never = "R-aaaaaaaaaaaaaaaaaaaaaaaaaa";
    for (who, outsider) in [("carol", &carol), ("dora", &dora)] {
        for tool in ["report_view", "report_history", "report_approve"] {
            let theirs = outsider.try_call(tool, report(&id)).await.expect("an answer");
            let unmade = outsider.try_call(tool, report(never)).await.expect("an answer");
            let theirs = serde_json::to_string(&theirs).unwrap().replace(&id, "<KEY>");
            let unmade = serde_json::to_string(&unmade).unwrap().replace(never, "<KEY>");
            assert_eq!(theirs, unmade, "{who} {tool}: another's report answers unlike one never filed");
        }
    }
    // A name that is no owned machine stops start-up, saying so.
    let wrong = Server::from_registry("reports").authenticator(tokens()).owned_instances_managed_by("reprot", ["x"]);
    let problem = wrong.build().unwrap_err().to_string();
    assert!(
        problem.contains("owned_instances_managed_by(\"reprot\"") && problem.contains("no such machine"),
        "{problem}"
    );
}
