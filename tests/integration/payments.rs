//! The payments example, as a deployment runs it: bearer tokens from a tokens file, codes
//! in a development outbox, rmcp's client over Streamable HTTP. Money moves only for an
//! authenticated principal, with a one-time code bound to exactly that movement, once.

use crate::common;

use std::path::PathBuf;
use std::time::Duration;

use crate::common::clients::Lifecycle;
use crate::common::raw::SessionlessClient;
use crate::common::{TestClient, spawn_http_example};
use serde_json::{Value, json};
use tokio::process::Child;

const CLERK: &str = "clerk-token-0123456789";
const AUDITOR: &str = "auditor-token-0123456789";
const REFUNDER: &str = "refunder-token-0123456789";
const OTHER_TENANT: &str = "globex-token-0123456789";

/// A running payments example with its outbox.
struct Deployment {
    url: String,
    outbox: PathBuf,
    _server: Child,
    _dir: TempDir,
}

/// A directory removed when dropped.
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

async fn deploy(extra: &[&str]) -> Deployment {
    deploy_with(extra, &[]).await
}

/// [`deploy`], with `env` set for the server.
async fn deploy_with(extra: &[&str], env: &[(&str, &str)]) -> Deployment {
    let dir = std::env::temp_dir().join(format!("toolgate-payments-{}", uuid_like()));
    std::fs::create_dir_all(&dir).unwrap();
    let tokens = dir.join("tokens.toml");
    std::fs::write(
        &tokens,
        format!(
            r#"
[[token]]
secret = "{CLERK}"
principal = "clerk"
tenant = "acme"
scopes = ["payments:create", "payments:capture"]

[[token]]
secret = "{AUDITOR}"
principal = "auditor"
tenant = "acme"
scopes = ["payments:create", "payments:capture"]

[[token]]
secret = "{REFUNDER}"
principal = "refunder"
tenant = "acme"
scopes = ["payments:create", "payments:refund", "payments:capture"]

[[token]]
secret = "{OTHER_TENANT}"
principal = "clerk"
tenant = "globex"
scopes = ["payments:create", "payments:capture"]
"#
        ),
    )
    .unwrap();
    let outbox = dir.join("otp.jsonl");
    let mut args = vec!["--tokens", tokens.to_str().unwrap(), "--otp-outbox", outbox.to_str().unwrap()];
    args.extend_from_slice(extra);
    let (server, url) = spawn_http_example("payments", &args, env).await;
    Deployment { url, outbox, _server: server, _dir: TempDir(dir) }
}

fn uuid_like() -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    format!("{}-{nanos}", std::process::id())
}

impl Deployment {
    /// Stops the server and waits until it has exited (its store file is free again).
    async fn stop(mut self) {
        self._server.kill().await.expect("kill the server");
    }

    async fn client(&self, token: Option<&str>) -> TestClient {
        TestClient::http_as(&self.url, Lifecycle::Sessionless, token).await
    }

    /// The code the outbox holds for `challenge_id`.
    fn code(&self, challenge_id: &str) -> String {
        common::confirm::code_in(&self.outbox, challenge_id)
    }
}

fn usd(amount: &str) -> Value {
    json!({ "amount": amount, "currency": "USD" })
}

/// Creates and authorizes a payment of `amount` USD; returns its id.
async fn authorized(client: &TestClient, amount: &str) -> String {
    let created = client
        .ok("payment_create", json!({ "domain": "payment", "description": "order 7", "amount": usd(amount) }))
        .await;
    let id = created["payment_id"].as_str().unwrap().to_string();
    client.ok("payment_authorize", json!({ "domain": "payment", "payment_id": id })).await;
    id
}

fn capture(id: &str, amount: &str, request_id: &str) -> Value {
    json!({ "domain": "payment", "payment_id": id, "amount": usd(amount), "request_id": request_id })
}

fn confirming(mut arguments: Value, challenge_id: &str, otp: &str) -> Value {
    arguments["challenge_id"] = challenge_id.into();
    arguments["otp"] = otp.into();
    arguments
}

/// Asks for a capture and returns the challenge.
async fn challenge(client: &TestClient, arguments: &Value) -> String {
    let required = client.refused("payment_capture", arguments.clone()).await;
    assert_eq!(required["code"], "CONFIRMATION_REQUIRED", "{required}");
    assert_eq!(required["channel"], "outbox");
    assert!(required["expires_at"].as_str().is_some_and(|t| t.ends_with('Z')), "{required}");
    required["challenge_id"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn a_capture_runs_once_with_the_code_sent_for_it() {
    let deployment = deploy(&[]).await;
    let clerk = deployment.client(Some(CLERK)).await;
    let created = clerk
        .ok("payment_create", json!({ "domain": "payment", "description": "order 7", "amount": usd("100.00") }))
        .await;
    let id = created["payment_id"].as_str().unwrap().to_string();
    // Out of order: capture before authorize.
    let refused = clerk.refused("payment_capture", capture(&id, "100.00", "req-00000001")).await;
    assert_eq!(refused["code"], "FORBIDDEN", "{refused}");
    clerk.ok("payment_authorize", json!({ "domain": "payment", "payment_id": id })).await;

    // More than the 100.00 authorized: the machine's guard refuses it on the payment's
    // stored data, before a code is asked for.
    let refused = clerk.refused("payment_capture", capture(&id, "150.00", "req-00000002")).await;
    assert_eq!(
        (refused["code"].as_str(), refused["guard"].as_str(), refused["reason_code"].as_str()),
        (Some("GUARD_FAILED"), Some("within_authorized"), Some("OVER_LIMIT")),
        "{refused}"
    );
    assert_eq!(refused["hint"], "give an amount of at most 100.00 USD", "{refused}");

    let arguments = capture(&id, "100.00", "req-00000003");
    let challenge_id = challenge(&clerk, &arguments).await;
    let otp = deployment.code(&challenge_id);
    // What the model writes counts for nothing: no `confirmed`, no `authorized_by`.
    for claim in ["confirmed", "authorized_by"] {
        let mut forged = arguments.clone();
        forged[claim] = if claim == "confirmed" { json!(true) } else { json!("user") };
        let refused = clerk.refused("payment_capture", forged).await;
        assert_eq!(refused["code"], "INVALID_ARGUMENT", "{refused}");
    }
    let status = clerk.ok("payment_status", json!({ "domain": "payment", "payment_id": id })).await;
    assert_eq!(status["state"], "authorized", "nothing moved without the code");
    let captured = clerk.ok("payment_capture", confirming(arguments, &challenge_id, &otp)).await;
    assert_eq!(
        (captured["state"].as_str(), captured["captured"]["amount"].as_str()),
        (Some("captured"), Some("100.00"))
    );
}

#[tokio::test]
async fn a_code_confirms_only_the_call_it_was_sent_for() {
    let deployment = deploy(&[]).await;
    let clerk = deployment.client(Some(CLERK)).await;
    let auditor = deployment.client(Some(AUDITOR)).await;
    let first = authorized(&clerk, "1000.00").await;
    let second = authorized(&clerk, "1000.00").await;

    // Issued for 100.00 USD, used for 1000.00 USD: refused, and the challenge is void.
    let arguments = capture(&first, "100.00", "req-10000001");
    let challenge_id = challenge(&clerk, &arguments).await;
    let otp = deployment.code(&challenge_id);
    let more = clerk
        .refused("payment_capture", confirming(capture(&first, "1000.00", "req-10000001"), &challenge_id, &otp))
        .await;
    assert_eq!(more["code"], "CONFIRMATION_FAILED", "{more}");
    let void = clerk.refused("payment_capture", confirming(arguments, &challenge_id, &otp)).await;
    assert_eq!(void["code"], "CONFIRMATION_FAILED", "a voided challenge stays void: {void}");

    // Issued for one payment, used on another.
    let arguments = capture(&first, "100.00", "req-10000002");
    let challenge_id = challenge(&clerk, &arguments).await;
    let otp = deployment.code(&challenge_id);
    let other = clerk
        .refused("payment_capture", confirming(capture(&second, "100.00", "req-10000002"), &challenge_id, &otp))
        .await;
    assert_eq!(other["code"], "CONFIRMATION_FAILED", "{other}");

    // Issued for the clerk, used by the auditor (same tenant, same call): refused, and the
    // clerk's challenge is untouched by it.
    let arguments = capture(&first, "100.00", "req-10000003");
    let challenge_id = challenge(&clerk, &arguments).await;
    let otp = deployment.code(&challenge_id);
    let foreign = auditor.refused("payment_capture", confirming(arguments.clone(), &challenge_id, &otp)).await;
    assert_eq!(foreign["code"], "CONFIRMATION_FAILED", "{foreign}");
    let captured = clerk.ok("payment_capture", confirming(arguments, &challenge_id, &otp)).await;
    assert_eq!(captured["state"], "captured");
    let untouched = clerk.ok("payment_status", json!({ "domain": "payment", "payment_id": second })).await;
    assert_eq!(untouched["state"], "authorized");
}

#[tokio::test]
async fn wrong_codes_lock_and_an_expired_challenge_confirms_nothing() {
    let deployment = deploy(&["--challenge-ttl", "1500ms"]).await;
    let clerk = deployment.client(Some(CLERK)).await;
    let id = authorized(&clerk, "50.00").await;
    let arguments = capture(&id, "50.00", "req-20000001");
    let challenge_id = challenge(&clerk, &arguments).await;
    let otp = deployment.code(&challenge_id);
    let wrong = if otp == "000000" { "111111" } else { "000000" };
    for attempts_left in (1..5).rev() {
        let failed = clerk.refused("payment_capture", confirming(arguments.clone(), &challenge_id, wrong)).await;
        assert_eq!(
            (failed["code"].as_str(), failed["attempts_left"].as_u64()),
            (Some("CONFIRMATION_FAILED"), Some(attempts_left))
        );
    }
    let locked = clerk.refused("payment_capture", confirming(arguments.clone(), &challenge_id, wrong)).await;
    assert_eq!(locked["code"], "CONFIRMATION_LOCKED", "{locked}");
    assert!(locked["retry_after_ms"].as_u64().unwrap() > 0);
    // Locked: the right code does nothing now, and no new challenge is issued.
    let still = clerk.refused("payment_capture", confirming(arguments.clone(), &challenge_id, &otp)).await;
    assert_eq!(still["code"], "CONFIRMATION_LOCKED", "{still}");
    let no_new = clerk.refused("payment_capture", capture(&id, "50.00", "req-20000002")).await;
    assert_eq!(no_new["code"], "CONFIRMATION_LOCKED", "{no_new}");

    // Another principal, another lock: the refunder's challenge expires unused.
    let refunder = deployment.client(Some(REFUNDER)).await;
    let id = authorized(&refunder, "50.00").await;
    let arguments = capture(&id, "50.00", "req-20000003");
    let challenge_id = challenge(&refunder, &arguments).await;
    let otp = deployment.code(&challenge_id);
    tokio::time::sleep(Duration::from_millis(1_600)).await;
    let expired = refunder.refused("payment_capture", confirming(arguments, &challenge_id, &otp)).await;
    assert_eq!(expired["code"], "CONFIRMATION_FAILED", "{expired}");
}

/// Asking for a fresh challenge brings no fresh guesses: wrong codes count across
/// challenges (the lock came after 5 on one challenge, never across 25), and the right
/// code on a new challenge does nothing once locked. Challenges issued are capped too.
#[tokio::test]
async fn fresh_challenges_bring_no_fresh_guesses_and_are_capped() {
    let deployment = deploy(&[]).await;
    let clerk = deployment.client(Some(CLERK)).await;
    let id = authorized(&clerk, "50.00").await;
    let arguments = capture(&id, "50.00", "req-30000001");
    let mut left = Vec::new();
    let mut locked = None;
    for _ in 0..5 {
        let challenge_id = challenge(&clerk, &arguments).await;
        let otp = deployment.code(&challenge_id);
        let wrong = if otp == "000000" { "111111" } else { "000000" };
        let answer = clerk.refused("payment_capture", confirming(arguments.clone(), &challenge_id, wrong)).await;
        match answer["code"].as_str() {
            Some("CONFIRMATION_FAILED") => left.push(answer["attempts_left"].as_u64().unwrap()),
            _ => {
                locked = Some(answer);
                break;
            }
        }
    }
    assert_eq!(left, [4, 3, 2, 1], "one wrong code on each of five challenges");
    let locked = locked.expect("five wrong codes over five challenges never locked");
    assert_eq!(locked["code"], "CONFIRMATION_LOCKED", "{locked}");
    let again = clerk.refused("payment_capture", arguments.clone()).await;
    assert_eq!(again["code"], "CONFIRMATION_LOCKED", "no new challenge while locked: {again}");

    // Challenges are capped per principal and tool, even for a tool with no rate limit.
    let auditor = deployment.client(Some(AUDITOR)).await;
    let id = authorized(&auditor, "50.00").await;
    let arguments = capture(&id, "50.00", "req-30000002");
    for _ in 0..10 {
        challenge(&auditor, &arguments).await;
    }
    let capped = auditor.refused("payment_capture", arguments).await;
    assert_eq!(capped["code"], "RATE_LIMITED", "{capped}");
    assert!(capped["retry_after_ms"].as_u64().unwrap() > 0, "{capped}");
}

/// Keys are minted by the store, never by process memory: after a restart on the default
/// file store a new payment gets a new id (it was `PAY-1` again, inheriting the old one's
/// `authorized` state, and was captured unauthorized), and an id never created is refused
/// by the gate with `NOT_FOUND`, naming the tool that creates one.
#[tokio::test]
async fn a_new_payment_after_a_restart_gets_a_new_id_and_unknown_ids_are_refused() {
    let file = std::env::temp_dir().join(format!("toolgate-payments-minted-{}.db", uuid_like()));
    let store = format!("sqlite:{}", file.display());
    let first = deploy(&["--store", &store]).await;
    let clerk = first.client(Some(CLERK)).await;
    let old = authorized(&clerk, "50.00").await;
    assert_eq!(old, "PAY-1");
    first.stop().await;

    let second = deploy(&["--store", &store]).await;
    let clerk = second.client(Some(CLERK)).await;
    let created = clerk
        .ok("payment_create", json!({ "domain": "payment", "description": "order 8", "amount": usd("5000.00") }))
        .await;
    let new = created["payment_id"].as_str().unwrap().to_string();
    assert_ne!(new, old, "a restart minted an id already taken");
    assert_eq!(created["state"], "created", "{created}");
    // The new payment was never authorized: no capture, whatever the old one's state.
    let capture = clerk.refused("payment_capture", capture(&new, "5000.00", "req-50000001")).await;
    assert_eq!((capture["code"].as_str(), capture["current_state"].as_str()), (Some("FORBIDDEN"), Some("created")));

    for tool in ["payment_authorize", "payment_status"] {
        let never = clerk.refused(tool, json!({ "domain": "payment", "payment_id": "PAY-99" })).await;
        assert_eq!(never["code"], "NOT_FOUND", "{tool}: {never}");
        assert!(never["message"].as_str().unwrap().contains("`payment_create`"), "{tool}: {never}");
    }
    // The creating tool takes no id: the store gives it.
    let chosen = clerk
        .refused(
            "payment_create",
            json!({ "domain": "payment", "description": "mine", "amount": usd("1.00"), "payment_id": "PAY-7" }),
        )
        .await;
    assert_eq!(chosen["code"], "INVALID_ARGUMENT", "{chosen}");
    second.stop().await;
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", file.display()));
    }
}

/// A payment's data lives in its instance's context, committed with its state: a `kill -9`
/// and a restart on the same file leave the whole payment (amounts, who created it), and a
/// refused call (more than the captured amount) changes none of it.
#[tokio::test]
async fn a_payment_keeps_its_data_across_a_kill_and_a_restart() {
    let file = std::env::temp_dir().join(format!("toolgate-payments-context-{}.db", uuid_like()));
    let store = format!("sqlite:{}", file.display());
    let first = deploy(&["--store", &store]).await;
    let refunder = first.client(Some(REFUNDER)).await;
    let id = authorized(&refunder, "50.00").await;
    let arguments = capture(&id, "40.00", "req-70000001");
    let challenge_id = challenge(&refunder, &arguments).await;
    let otp = first.code(&challenge_id);
    refunder.ok("payment_capture", confirming(arguments, &challenge_id, &otp)).await;
    first.stop().await;

    let second = deploy(&["--store", &store]).await;
    let refunder = second.client(Some(REFUNDER)).await;
    let status = refunder.ok("payment_status", json!({ "domain": "payment", "payment_id": id })).await;
    assert_eq!(
        (
            status["state"].as_str(),
            status["amount"]["amount"].as_str(),
            status["captured"]["amount"].as_str(),
            status["created_by"].as_str(),
            status["description"].as_str()
        ),
        (Some("captured"), Some("50.00"), Some("40.00"), Some("refunder"), Some("order 7")),
        "{status}"
    );
    // More than was captured: the `within_captured` guard refuses it on the restarted
    // server's stored data, and nothing of the payment changes.
    let too_much =
        json!({ "domain": "payment", "payment_id": id, "amount": usd("45.00"), "request_id": "req-70000002" });
    let refused = refunder.refused("payment_refund", too_much).await;
    assert_eq!(
        (
            refused["code"].as_str(),
            refused["guard"].as_str(),
            refused["current_state"].as_str(),
            refused["instance"].as_str(),
            refused["retryable"].as_bool()
        ),
        (Some("GUARD_FAILED"), Some("within_captured"), Some("captured"), Some(id.as_str()), Some(false)),
        "{refused}"
    );
    assert!(
        refused["message"].as_str().unwrap().starts_with("45.00 USD is more than the amount captured (40.00 USD)"),
        "{refused}"
    );
    // Within it: the guard lets it through to the code and the handler.
    let refund = json!({ "domain": "payment", "payment_id": id, "amount": usd("40.00"), "request_id": "req-70000003" });
    let required = refunder.refused("payment_refund", refund).await;
    assert_eq!(required["code"], "CONFIRMATION_REQUIRED", "{required}");
    let after = refunder.ok("payment_status", json!({ "domain": "payment", "payment_id": id })).await;
    assert_eq!(after, status, "a refused refund changed the payment");
    second.stop().await;
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", file.display()));
    }
}

/// `--max-context` bounds a payment's data: a creation whose data would be larger is
/// refused, and no payment is created.
#[tokio::test]
async fn data_past_the_configured_bound_creates_nothing() {
    let deployment = deploy(&["--max-context", "200"]).await;
    let clerk = deployment.client(Some(CLERK)).await;
    let long = "x".repeat(190);
    let refused = clerk
        .refused("payment_create", json!({ "domain": "payment", "description": long, "amount": usd("1.00") }))
        .await;
    assert_eq!((refused["code"].as_str(), refused["max_bytes"].as_u64()), (Some("CONTEXT_TOO_LARGE"), Some(200)));
    let minted = refused["instance"].as_str().unwrap().to_string();
    let never = clerk.refused("payment_status", json!({ "domain": "payment", "payment_id": minted })).await;
    assert_eq!(never["code"], "NOT_FOUND", "a refused creation created {minted}: {never}");
    let fits =
        clerk.ok("payment_create", json!({ "domain": "payment", "description": "ok", "amount": usd("1.00") })).await;
    assert_eq!(fits["state"], "created", "{fits}");
}

/// Concurrent creations draw distinct numbers: the counter is a compare-and-set in the
/// store, not a read then a write.
#[tokio::test]
async fn concurrent_creations_get_distinct_ids() {
    let deployment = deploy(&[]).await;
    let clerk = deployment.client(Some(CLERK)).await;
    let create =
        || clerk.ok("payment_create", json!({ "domain": "payment", "description": "x", "amount": usd("1.00") }));
    let created = futures::future::join_all((0..16).map(|_| create())).await;
    let mut ids: Vec<String> = created.iter().map(|c| c["payment_id"].as_str().unwrap().to_string()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 16, "{ids:?}");
}

#[tokio::test]
async fn two_concurrent_confirmations_capture_once() {
    let deployment = deploy(&[]).await;
    let clerk = deployment.client(Some(CLERK)).await;
    let second_client = deployment.client(Some(CLERK)).await;
    let id = authorized(&clerk, "75.00").await;
    let arguments = capture(&id, "75.00", "req-30000001");
    let challenge_id = challenge(&clerk, &arguments).await;
    let otp = deployment.code(&challenge_id);
    // The same confirmed call twice at once, the right code in both: one capture; the
    // other finds the challenge spent (or, arriving after the first committed, the
    // first result, or the payment captured).
    let confirmed = confirming(arguments, &challenge_id, &otp);
    let (a, b) = tokio::join!(
        clerk.call("payment_capture", confirmed.clone()),
        second_client.call("payment_capture", confirmed)
    );
    let status = clerk.ok("payment_status", json!({ "domain": "payment", "payment_id": id })).await;
    assert_eq!(status["state"], "captured");
    let failed = [&a, &b].iter().filter(|(_, is_error)| *is_error).count();
    let replayed = !a.1 && !b.1 && a.0 == b.0;
    assert!(failed == 1 || replayed, "one capture: {a:?} {b:?}");
}

#[tokio::test]
async fn a_retry_with_the_same_request_id_gets_the_first_result() {
    let deployment = deploy(&[]).await;
    let clerk = deployment.client(Some(CLERK)).await;
    let id = authorized(&clerk, "20.00").await;
    let arguments = capture(&id, "20.00", "req-40000001");
    let challenge_id = challenge(&clerk, &arguments).await;
    let otp = deployment.code(&challenge_id);
    let first = clerk.ok("payment_capture", confirming(arguments.clone(), &challenge_id, &otp)).await;
    // The retry: the same request id and arguments, even with the spent code or none.
    let again = clerk.ok("payment_capture", confirming(arguments.clone(), &challenge_id, &otp)).await;
    assert_eq!(again, first);
    assert_eq!(clerk.ok("payment_capture", arguments).await, first);
    // The same request id with another amount.
    let conflict = clerk.refused("payment_capture", capture(&id, "10.00", "req-40000001")).await;
    assert_eq!(conflict["code"], "IDEMPOTENCY_CONFLICT", "{conflict}");
}

#[tokio::test]
async fn a_refund_needs_its_scope_and_a_caller_needs_credentials() {
    let deployment = deploy(&[]).await;
    let clerk = deployment.client(Some(CLERK)).await;
    let refunder = deployment.client(Some(REFUNDER)).await;
    assert!(!clerk.tool_names().await.contains(&"payment_refund".to_string()));
    assert!(refunder.tool_names().await.contains(&"payment_refund".to_string()));
    let refused = clerk
        .refused(
            "payment_refund",
            json!({ "domain": "payment", "payment_id": "PAY-1", "amount": usd("1.00"), "request_id": "req-50000001" }),
        )
        .await;
    assert_eq!(
        (refused["code"].as_str(), refused["required_scope"].as_str()),
        (Some("INSUFFICIENT_SCOPE"), Some("payments:refund"))
    );

    let anonymous = deployment.client(None).await;
    let refused = anonymous.refused("payment_authorize", json!({ "domain": "payment", "payment_id": "PAY-1" })).await;
    assert_eq!(refused["code"], "UNAUTHENTICATED", "{refused}");
}

#[tokio::test]
async fn another_tenant_cannot_see_capture_or_probe_a_payment() {
    let deployment = deploy(&[]).await;
    let clerk = deployment.client(Some(CLERK)).await;
    let globex = deployment.client(Some(OTHER_TENANT)).await;
    let id = authorized(&clerk, "30.00").await;
    assert_eq!(id, "PAY-1");
    // PAY-1 exists for acme; PAY-2 exists nowhere. Globex hears the same about both.
    let probe = |id: &'static str| {
        let globex = &globex;
        async move {
            let status = globex.refused("payment_status", json!({ "domain": "payment", "payment_id": id })).await;
            let capture = globex.refused("payment_capture", capture(id, "30.00", "req-60000001")).await;
            (status.to_string().replace(id, "PAY-?"), capture.to_string().replace(id, "PAY-?"))
        }
    };
    let (status, captured) = probe("PAY-1").await;
    assert!(status.contains("NOT_FOUND"), "{status}");
    // Minted keys: a payment never created in globex's tenant is not found there, by the
    // gate, before any state or scope is judged.
    assert!(captured.contains("NOT_FOUND"), "{captured}");
    assert_eq!((status, captured), probe("PAY-2").await);
    // Acme's payment is untouched.
    let seen = clerk.ok("payment_status", json!({ "domain": "payment", "payment_id": "PAY-1" })).await;
    assert_eq!(seen["state"], "authorized");
}

#[tokio::test]
async fn a_server_requiring_authentication_answers_401_with_a_bearer_challenge() {
    let deployment = deploy(&["--require-auth"]).await;
    let reply = SessionlessClient::new(&deployment.url).request("tools/list", json!({}), &[]).await;
    assert_eq!(reply.status, 401);
    assert!(reply.headers["www-authenticate"].to_str().unwrap().starts_with("Bearer"));
}

#[tokio::test]
async fn a_refusal_never_names_a_tool_the_caller_cannot_see() {
    let deployment = deploy(&[]).await;
    let clerk = deployment.client(Some(CLERK)).await;
    let refunder = deployment.client(Some(REFUNDER)).await;
    let id = authorized(&clerk, "10.00").await;
    // `payment_refund` is allowed from `captured`; the clerk lacks its scope.
    let arguments = capture(&id, "10.00", "req-70000001");
    let challenge_id = challenge(&clerk, &arguments).await;
    let otp = deployment.code(&challenge_id);
    clerk.ok("payment_capture", confirming(arguments, &challenge_id, &otp)).await;
    let refused = clerk.refused("payment_authorize", json!({ "domain": "payment", "payment_id": id })).await;
    assert_eq!(refused["code"], "FORBIDDEN");
    assert!(!refused.to_string().contains("payment_refund"), "{refused}");
    // The refunder, on its own captured payment, hears of it.
    let own = authorized(&refunder, "10.00").await;
    let arguments = capture(&own, "10.00", "req-70000002");
    let challenge_id = challenge(&refunder, &arguments).await;
    let otp = deployment.code(&challenge_id);
    refunder.ok("payment_capture", confirming(arguments, &challenge_id, &otp)).await;
    let refused = refunder.refused("payment_authorize", json!({ "domain": "payment", "payment_id": own })).await;
    assert!(refused["allowed_tools"].as_array().unwrap().contains(&json!("payment_refund")), "{refused}");
}

#[tokio::test]
async fn stdio_is_the_principal_the_command_line_names() {
    let named =
        TestClient::stdio_example_with("payments", &["--stdio-principal", "clerk", "--otp-outbox", "/dev/null"]).await;
    let created = named
        .ok("payment_create", json!({ "domain": "payment", "description": "at the desk", "amount": usd("5.00") }))
        .await;
    assert_eq!(created["created_by"], "clerk");
    // Every scope the tools declare: a refund is judged on the payment's state, not refused
    // for a missing scope.
    let refund =
        json!({ "domain": "payment", "payment_id": "PAY-1", "amount": usd("5.00"), "request_id": "req-80000001" });
    assert_eq!(named.refused("payment_refund", refund).await["code"], "FORBIDDEN");

    let nobody = TestClient::stdio_example_with("payments", &["--otp-outbox", "/dev/null"]).await;
    let refused = nobody
        .refused("payment_create", json!({ "domain": "payment", "description": "x", "amount": usd("5.00") }))
        .await;
    assert_eq!(refused["code"], "UNAUTHENTICATED", "{refused}");
}

/// A database of its own on the test Postgres (`TOOLGATE_TEST_POSTGRES_URL`), dropped after.
struct OwnDatabase {
    admin: String,
    name: String,
    url: String,
}

impl OwnDatabase {
    async fn create(what: &str) -> Option<Self> {
        let admin = crate::replicas::postgres_url()?;
        let name = format!("payments_{what}_{}", uuid_like().replace('-', "_"));
        admin_client(&admin).await.batch_execute(&format!("CREATE DATABASE {name}")).await.unwrap();
        let base = admin.rsplit_once('/').map_or(admin.as_str(), |(base, _)| base);
        let url = format!("{base}/{name}");
        Some(Self { admin, name, url })
    }

    async fn drop_database(self) {
        let dropped = format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name);
        let _ = admin_client(&self.admin).await.batch_execute(&dropped).await;
    }
}

async fn admin_client(url: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    client
}

/// Issue 55, item 5: a manager's code survives a crash. kill -9 while a confirmed capture's
/// handler runs (its code accepted, nothing committed), restart on the same Postgres: the
/// retry with the same challenge and code captures (after `FLOW_BUSY` while the dead
/// process's lease lives), and the payment is captured exactly once.
#[tokio::test]
async fn a_code_accepted_by_a_call_killed_mid_handler_confirms_its_retry_on_postgres() {
    let Some(database) = OwnDatabase::create("crash").await else { return };
    let store = database.url.clone();
    let handle_key = ("TOOLGATE_HANDLE_KEY", "payments-test-handle-key-00000000000001");
    let pausing = deploy_with(&["--store", &store], &[handle_key, ("PAYMENTS_TEST_CAPTURE_PAUSE_MS", "30000")]).await;
    let clerk = pausing.client(Some(CLERK)).await;
    let id = authorized(&clerk, "60.00").await;
    let arguments = capture(&id, "60.00", "req-90000001");
    let challenge_id = challenge(&clerk, &arguments).await;
    let otp = pausing.code(&challenge_id);
    let confirmed = confirming(arguments, &challenge_id, &otp);
    let killed = tokio::spawn({
        let confirmed = confirmed.clone();
        async move { clerk.try_call("payment_capture", confirmed).await }
    });
    // The code is checked in milliseconds; the handler then pauses for 30 s.
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    pausing.stop().await;
    let _ = killed.await;

    let restarted = deploy_with(&["--store", &store], &[handle_key]).await;
    let clerk = restarted.client(Some(CLERK)).await;
    let mut busy = 0;
    let captured = loop {
        let (reply, is_error) = clerk.call("payment_capture", confirmed.clone()).await;
        let refusal = if is_error { reply.clone() } else { Value::Null };
        match refusal["code"].as_str() {
            None => break reply,
            // The dead process's lease, until it expires.
            Some("FLOW_BUSY") if busy < 60 => {
                busy += 1;
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            Some(_) => panic!("the retry after the restart was refused: {reply}"),
        }
    };
    assert_eq!(captured["state"], "captured", "{captured}");
    let history = clerk.ok("payment_history", json!({ "domain": "payment", "payment_id": id })).await;
    let captures = history["entries"].as_array().unwrap().iter().filter(|e| e["event"] == "CAPTURE").count();
    assert_eq!(captures, 1, "{history}");
    eprintln!("the retry captured after {busy} FLOW_BUSY refusals");
    restarted.stop().await;
    database.drop_database().await;
}
