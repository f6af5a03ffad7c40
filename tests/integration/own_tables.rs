//! One source of truth: the billing example keeps its invoices in a table of its own,
//! beside toolgate's tables, and writes it through its call's `Transaction`. On the SQLite
//! file and on a real Postgres (`TOOLGATE_TEST_POSTGRES_URL`), the row's status and the
//! invoice's workflow state never disagree: not after a refusal, not after a kill -9 in
//! the middle of a call that wrote the row, not when time expires an invoice (its
//! transactional hook writes the row in the timer's commit), even killed there.

use std::path::PathBuf;
use std::time::Duration;

use crate::common::clients::Lifecycle;
use crate::common::{TestClient, spawn_http_example};
use crate::replicas::postgres_url;
use serde_json::{Value, json};

/// Where a test's billing server keeps its state: a SQLite file of its own, or a Postgres
/// database of its own (created for the test, dropped after it).
enum Database {
    Sqlite(PathBuf),
    Postgres { admin: String, url: String, name: String },
}

impl Database {
    fn sqlite(name: &str) -> Self {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
        Self::Sqlite(std::env::temp_dir().join(format!("toolgate-billing-{name}-{}-{nanos}.db", std::process::id())))
    }

    async fn postgres(name: &str) -> Option<Self> {
        let admin = postgres_url()?;
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
        let name = format!("billing_{name}_{}_{}", std::process::id(), nanos % 1_000_000_000);
        connect(&admin).await.batch_execute(&format!("CREATE DATABASE {name}")).await.unwrap();
        let base = admin.rsplit_once('/').map_or(admin.as_str(), |(base, _)| base);
        let url = format!("{base}/{name}");
        Some(Self::Postgres { admin, url, name })
    }

    fn store_arg(&self) -> String {
        match self {
            Self::Sqlite(path) => format!("sqlite:{}", path.display()),
            Self::Postgres { url, .. } => url.clone(),
        }
    }

    /// The `xmin` of the invoice's row (the transaction that last wrote it), on Postgres.
    async fn row_version(&self, id: &str) -> Option<String> {
        let Self::Postgres { url, .. } = self else { return None };
        let client = connect(url).await;
        let row = client.query_one("SELECT xmin::text FROM invoices WHERE id = $1", &[&id]).await.unwrap();
        Some(row.get(0))
    }

    async fn drop_database(&self) {
        match self {
            Self::Sqlite(path) => {
                for suffix in ["", "-wal", "-shm"] {
                    let mut file = path.as_os_str().to_owned();
                    file.push(suffix);
                    let _ = std::fs::remove_file(file);
                }
            }
            Self::Postgres { admin, name, .. } => {
                let _ =
                    connect(admin).await.batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")).await;
            }
        }
    }
}

async fn connect(url: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    client
}

async fn billing(database: &Database, env: &[(&str, &str)]) -> (tokio::process::Child, TestClient) {
    billing_with(database, &[], env).await
}

/// The billing example with `args` besides its store.
async fn billing_with(database: &Database, args: &[&str], env: &[(&str, &str)]) -> (tokio::process::Child, TestClient) {
    let store = database.store_arg();
    let args: Vec<&str> = ["--store", store.as_str()].into_iter().chain(args.iter().copied()).collect();
    // A shared store (Postgres) needs a handle key every replica knows.
    let env: Vec<(&str, &str)> =
        env.iter().copied().chain([("TOOLGATE_HANDLE_KEY", "billing-test-handle-key-0000000000001")]).collect();
    let (server, url) = spawn_http_example("billing", &args, &env).await;
    (server, TestClient::http_as(&url, Lifecycle::Sessionless, None).await)
}

fn bill(id: &str) -> Value {
    json!({ "domain": "bill", "id": id })
}

/// The invoice's row status and workflow state, as `bill_view` shows them (the row read in
/// the call's transaction; the state from toolgate's records).
async fn status_and_state(client: &TestClient, id: &str) -> (String, String) {
    let viewed = client.ok("bill_view", bill(id)).await;
    (viewed["status"].as_str().unwrap().to_string(), viewed["state"].as_str().unwrap().to_string())
}

async fn rows_follow_the_workflow(database: Database) {
    let (_server, client) = billing(&database, &[]).await;
    let created = client
        .ok(
            "bill_create",
            json!({ "domain": "bill", "customer": "ACME", "amount": { "amount": "125.00", "currency": "EUR" } }),
        )
        .await;
    let id = created["id"].as_str().unwrap().to_string();
    assert_eq!((created["status"].as_str(), created["state"].as_str()), (Some("open"), Some("open")));
    assert_eq!(status_and_state(&client, &id).await, ("open".into(), "open".into()));
    let viewed = client.ok("bill_view", bill(&id)).await;
    assert_eq!((viewed["customer"].as_str(), viewed["amount_minor"].as_i64()), (Some("ACME"), Some(12_500)));

    // Refused before any handler code: the row is untouched (on Postgres, not even
    // rewritten: the transaction that last wrote it is still the creation's).
    let written = database.row_version(&id).await;
    for _ in 0..5 {
        let refused = client.refused("bill_pay", bill(&id)).await;
        assert_eq!(refused["code"], "FORBIDDEN", "{refused}");
    }
    assert_eq!(status_and_state(&client, &id).await, ("open".into(), "open".into()));
    assert_eq!(database.row_version(&id).await, written, "a refused call wrote the row");

    assert_eq!(client.ok("bill_approve", bill(&id)).await["status"], "approved");
    assert_eq!(status_and_state(&client, &id).await, ("approved".into(), "approved".into()));
    assert_eq!(client.ok("bill_pay", bill(&id)).await["state"], "paid");
    assert_eq!(status_and_state(&client, &id).await, ("paid".into(), "paid".into()));
    drop(_server);
    database.drop_database().await;
}

#[tokio::test]
async fn rows_follow_the_workflow_on_sqlite() {
    rows_follow_the_workflow(Database::sqlite("rows")).await;
}

#[tokio::test]
async fn rows_follow_the_workflow_on_postgres() {
    let Some(database) = Database::postgres("rows").await else { return };
    rows_follow_the_workflow(database).await;
}

/// The pause the example's hook makes after a handler's SQL, before its call commits.
const PAUSE_MS: u64 = 40;

/// kill -9 while `bill_pay` runs, 50 times, at offsets from before its handler starts to
/// after its commit: after each restart every invoice's row and state agree — both paid, or
/// both approved. Returns how many ended each way.
async fn kills_leave_rows_and_states_agreeing(database: &Database) -> (usize, usize) {
    let pause = PAUSE_MS.to_string();
    let env = [("BILLING_TEST_PAUSE_MS", pause.as_str())];
    let mut invoices: Vec<String> = Vec::new();
    let (mut server, mut client) = billing(database, &[]).await;
    let (mut paid, mut unpaid) = (0, 0);
    for round in 0..50u64 {
        // A fresh approved invoice (the hook pauses these calls too: not killed).
        let created = client.ok("bill_create", json!({ "domain": "bill", "customer": format!("C{round}"), "amount": { "amount": "10.00", "currency": "EUR" } })).await;
        let id = created["id"].as_str().unwrap().to_string();
        client.ok("bill_approve", bill(&id)).await;
        invoices.push(id.clone());

        // The payment, and a kill somewhere from before its handler to after its commit.
        let offset = Duration::from_micros(round * (PAUSE_MS + 30) * 1000 / 50);
        let paying = tokio::spawn(async move {
            let outcome = client.try_call("bill_pay", bill(&id)).await;
            (client, outcome)
        });
        tokio::time::sleep(offset).await;
        server.kill().await.unwrap();
        let _ = paying.await;

        (server, client) = billing(database, &env).await;
        for id in &invoices {
            let (status, state) = status_and_state(&client, id).await;
            assert_eq!(status, state, "{id}: the row says {status}, the workflow {state} (round {round})");
            assert!(["approved", "paid"].contains(&state.as_str()), "{id}: {state}");
        }
        match status_and_state(&client, invoices.last().unwrap()).await.1.as_str() {
            "paid" => paid += 1,
            _ => unpaid += 1,
        }
    }
    drop(server);
    eprintln!("kill -9 during bill_pay, 50 offsets: {paid} paid (both), {unpaid} unpaid (neither), 0 disagreements");
    (paid, unpaid)
}

#[tokio::test]
async fn a_kill_mid_call_leaves_row_and_state_agreeing_on_sqlite() {
    let database = Database::sqlite("kills");
    let (paid, unpaid) = kills_leave_rows_and_states_agreeing(&database).await;
    database.drop_database().await;
    // The offsets reach both sides of the commit.
    assert!(paid > 0 && unpaid > 0, "paid {paid}, unpaid {unpaid}");
}

#[tokio::test]
async fn a_kill_mid_call_leaves_row_and_state_agreeing_on_postgres() {
    let Some(database) = Database::postgres("kills").await else { return };
    let (paid, unpaid) = kills_leave_rows_and_states_agreeing(&database).await;
    database.drop_database().await;
    assert!(paid > 0 && unpaid > 0, "paid {paid}, unpaid {unpaid}");
}

/// How long an approved invoice lasts unpaid in the time tests (`--after`), for 30 days.
const EXPIRES_AFTER: &str = "bill.approved=150ms";

/// The invoice's row status, read from the database itself (no call made).
async fn status_in_database(database: &Database, id: &str) -> String {
    match database {
        Database::Sqlite(path) => {
            let connection = rusqlite::Connection::open(path).unwrap();
            connection.query_row("SELECT status FROM invoices WHERE id = ?1", [id], |row| row.get(0)).unwrap()
        }
        Database::Postgres { url, .. } => {
            let row = connect(url).await.query_one("SELECT status FROM invoices WHERE id = $1", &[&id]).await;
            row.unwrap().get(0)
        }
    }
}

async fn approved_invoice(client: &TestClient, customer: &str) -> String {
    let amount = json!({ "amount": "10.00", "currency": "EUR" });
    let created = client.ok("bill_create", json!({ "domain": "bill", "customer": customer, "amount": amount })).await;
    let id = created["id"].as_str().unwrap().to_string();
    client.ok("bill_approve", bill(&id)).await;
    id
}

/// An approved invoice left unpaid expires by time, and its row says so: committed by the
/// sweeper with no call made (read from the database itself), and as a call sees it.
async fn rows_follow_time(database: Database) {
    let (_server, client) = billing_with(&database, &["--after", EXPIRES_AFTER], &[]).await;
    let id = approved_invoice(&client, "ACME").await;
    assert_eq!(status_in_database(&database, &id).await, "approved");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while status_in_database(&database, &id).await != "expired" {
        assert!(tokio::time::Instant::now() < deadline, "the sweeper never expired {id}'s row");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(status_and_state(&client, &id).await, ("expired".into(), "expired".into()));
    let refused = client.refused("bill_pay", bill(&id)).await;
    assert_eq!(refused["code"], "FORBIDDEN", "{refused}");
    drop(_server);
    database.drop_database().await;
}

#[tokio::test]
async fn rows_follow_time_on_sqlite() {
    rows_follow_time(Database::sqlite("time")).await;
}

#[tokio::test]
async fn rows_follow_time_on_postgres() {
    let Some(database) = Database::postgres("time").await else { return };
    rows_follow_time(database).await;
}

/// [`status_and_state`], once the invoice is free: an expiry due when the process was
/// killed holding its lease (Postgres keeps it until it lapses) is not shown before its
/// hook's rows are committed, and the view is told `FLOW_BUSY` meanwhile.
async fn status_and_state_once_free(client: &TestClient, id: &str) -> (String, String) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let (viewed, is_error) = client.call("bill_view", bill(id)).await;
        if !is_error {
            return (viewed["status"].as_str().unwrap().to_string(), viewed["state"].as_str().unwrap().to_string());
        }
        assert_eq!(viewed["code"], "FLOW_BUSY", "{id}: {viewed}");
        assert!(tokio::time::Instant::now() < deadline, "{id} stayed busy");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// kill -9 around the moment time expires an approved invoice, 50 times, at offsets from
/// before it is due to after its hook's commit (the hook pauses after its SQL): after each
/// restart every invoice's row and state agree. Returns how many had expired, both, when
/// read straight after the restart (before that read could commit them).
async fn kills_at_the_timer_s_commit_leave_rows_and_states_agreeing(database: &Database) -> usize {
    let pause = PAUSE_MS.to_string();
    let env = [("BILLING_TEST_PAUSE_MS", pause.as_str())];
    let args = ["--after", EXPIRES_AFTER];
    let mut invoices: Vec<String> = Vec::new();
    let (mut server, mut client) = billing_with(database, &args, &env).await;
    let mut expired_before_restart = 0;
    for round in 0..50u64 {
        let id = approved_invoice(&client, &format!("C{round}")).await;
        invoices.push(id.clone());
        // Due 150 ms after the approval, found by a sweep within 250 ms, its hook pausing
        // 40 ms: offsets cover all of it.
        tokio::time::sleep(Duration::from_micros(round * (150 + 250 + PAUSE_MS + 60) * 1000 / 50)).await;
        server.kill().await.unwrap();
        let _ = server.wait().await;
        if status_in_database(database, &id).await == "expired" {
            expired_before_restart += 1;
        }
        (server, client) = billing_with(database, &args, &env).await;
        for id in &invoices {
            let (status, state) = status_and_state_once_free(&client, id).await;
            assert_eq!(status, state, "{id}: the row says {status}, the workflow {state} (round {round})");
            assert!(["approved", "expired"].contains(&state.as_str()), "{id}: {state}");
        }
    }
    drop(server);
    eprintln!(
        "kill -9 around an invoice's expiry, 50 offsets: {expired_before_restart} expired before the kill, 0 disagreements"
    );
    expired_before_restart
}

#[tokio::test]
async fn a_kill_at_the_timer_s_commit_leaves_row_and_state_agreeing_on_sqlite() {
    let database = Database::sqlite("timer-kills");
    let expired = kills_at_the_timer_s_commit_leave_rows_and_states_agreeing(&database).await;
    database.drop_database().await;
    // The offsets reach both sides of the timer's commit.
    assert!(expired > 0 && expired < 50, "expired before the kill: {expired} of 50");
}

#[tokio::test]
async fn a_kill_at_the_timer_s_commit_leaves_row_and_state_agreeing_on_postgres() {
    let Some(database) = Database::postgres("timer_kills").await else { return };
    let expired = kills_at_the_timer_s_commit_leave_rows_and_states_agreeing(&database).await;
    database.drop_database().await;
    assert!(expired > 0 && expired < 50, "expired before the kill: {expired} of 50");
}
