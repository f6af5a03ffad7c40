//! Two replicas of one server sharing one real Postgres and no Redis
//! (`TOOLGATE_TEST_POSTGRES_URL`; `.ci/run` starts one): what a replicated deployment
//! needs of its store, on Postgres. (The tests of `replicas.rs` and `tasks.rs` that end in
//! `_on_postgres` run there too: an invoice moving through both replicas, a handle
//! continuing, a session hearing of the other replica's commit, a task read and cancelled
//! through the other replica.)

use std::collections::BTreeSet;

use crate::common;
use crate::common::TestClient;
use crate::common::clients::Lifecycle;
use crate::replicas::{fresh_invoice, inv, postgres_url, replica};
use serde_json::{Value, json};

/// 50 concurrent discharges of one invoice, split across two replicas: exactly one.
#[tokio::test]
async fn fifty_concurrent_transitions_on_one_invoice_give_exactly_one() {
    let Some(postgres) = postgres_url() else { return };
    let ((_a, url_a), (_b, url_b)) =
        tokio::join!(replica("invoice", &postgres, &[]), replica("invoice", &postgres, &[]));
    let id = fresh_invoice();
    let setup = TestClient::http_as(&url_a, Lifecycle::Sessionless, None).await;
    setup.ok("invoice_submit", inv(&id)).await;
    setup.ok("invoice_approve", inv(&id)).await;
    let calls = (0..50).map(|n| {
        let (url, id) = (if n % 2 == 0 { url_a.clone() } else { url_b.clone() }, id.clone());
        tokio::spawn(async move {
            let client = TestClient::http_as(&url, Lifecycle::Sessionless, None).await;
            client.call("invoice_discharge", inv(&id)).await
        })
    });
    let mut discharged = 0;
    for call in calls.collect::<Vec<_>>() {
        let (content, is_error) = call.await.unwrap();
        if is_error {
            assert!(["FORBIDDEN", "FLOW_BUSY"].contains(&content["code"].as_str().unwrap()), "{content}");
        } else {
            discharged += 1;
        }
    }
    assert_eq!(discharged, 1, "one discharge across both replicas");
    let history = history_of(&postgres, &format!("invoice:{id}")).await;
    assert_eq!(history.iter().filter(|entry| entry.contains("DISCHARGE")).count(), 1, "{history:?}");
}

/// Payments created concurrently through two replicas: every minted id is drawn once.
#[tokio::test]
async fn a_minted_key_is_never_drawn_twice() {
    let Some(postgres) = postgres_url() else { return };
    let outbox = std::env::temp_dir().join(format!("toolgate-pg-mint-{}.jsonl", std::process::id()));
    let args = ["--token", "clerk=postgres-replicas-clerk-token-01", "--otp-outbox", outbox.to_str().unwrap()];
    let ((_a, url_a), (_b, url_b)) =
        tokio::join!(replica("payments", &postgres, &args), replica("payments", &postgres, &args));
    let calls = (0..40).map(|n| {
        let url = if n % 2 == 0 { url_a.clone() } else { url_b.clone() };
        tokio::spawn(async move {
            let client =
                TestClient::http_as(&url, Lifecycle::Sessionless, Some("postgres-replicas-clerk-token-01")).await;
            let amount = json!({ "amount": "1.00", "currency": "USD" });
            let created = client
                .ok(
                    "payment_create",
                    json!({ "domain": "payment", "description": format!("order {n}"), "amount": amount }),
                )
                .await;
            created["payment_id"].as_str().unwrap().to_string()
        })
    });
    let mut ids = Vec::new();
    for call in calls.collect::<Vec<_>>() {
        ids.push(call.await.unwrap());
    }
    let distinct: BTreeSet<&String> = ids.iter().collect();
    assert_eq!(distinct.len(), 40, "{ids:?}");
    let _ = std::fs::remove_file(&outbox);
}

/// Two replicas sweep one Postgres: a quote made on one expires once — one audit record
/// across both, one history entry by the timer.
#[tokio::test]
async fn a_timer_fires_once_across_replicas() {
    let Some(postgres) = postgres_url() else { return };
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    let dir = std::env::temp_dir().join(format!("toolgate-pg-timer-{}-{nanos}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (audit_a, audit_b) = (dir.join("a.jsonl"), dir.join("b.jsonl"));
    const TOKEN: &str = "postgres-timed-traveller-token-01";
    let ((_a, url_a), (_b, _url_b)) =
        tokio::join!(timed_travel(&postgres, TOKEN, &audit_a), timed_travel(&postgres, TOKEN, &audit_b));
    let quote = bus_quote(&url_a, TOKEN).await;
    let ours =
        |lines: Vec<Value>| -> Vec<Value> { lines.into_iter().filter(|l| l["instance"] == quote.as_str()).collect() };
    for _ in 0..50 {
        if !ours(common::timer_lines(&audit_a)).is_empty() || !ours(common::timer_lines(&audit_b)).is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    // A few more sweeps of both replicas: still one.
    tokio::time::sleep(std::time::Duration::from_millis(1_000)).await;
    let fired = [ours(common::timer_lines(&audit_a)), ours(common::timer_lines(&audit_b))].concat();
    assert_eq!(fired.len(), 1, "{fired:?}");
    let history = history_of(&postgres, &format!(":bus:{quote}")).await;
    let timed: Vec<&String> = history.iter().filter(|entry| entry.contains(r#""principal":"timer""#)).collect();
    assert_eq!(timed.len(), 1, "{history:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Servers of different machines sharing one schema: a payments server sweeps (its
/// payments lapse by timer) but has no `bus` machine, and a quote falls due while no
/// travel server runs. The payments server leaves it (it used to take it off the index of
/// deadlines, so no travel server ever fired it); the travel server started next fires it.
#[tokio::test]
async fn a_server_without_the_machine_leaves_its_timer_to_one_that_has_it() {
    let Some(server) = postgres_url() else { return };
    // A database of its own: the other tests' travel servers would fire the quote.
    let own = OwnDatabase::on(&server, "foreign").await;
    let (postgres, dir) = (own.url.clone(), own.dir.clone());
    const TOKEN: &str = "postgres-foreign-traveller-token-1";
    let (audit_a, audit_b) = (dir.join("a.jsonl"), dir.join("b.jsonl"));
    let outbox = dir.join("outbox.jsonl");
    let payments_args = ["--token", "clerk=postgres-foreign-clerk-token-01", "--otp-outbox", outbox.to_str().unwrap()];
    let (payments, _) = replica("payments", &postgres, &payments_args).await;
    let (travel_a, url_a) = timed_travel(&postgres, TOKEN, &audit_a).await;
    let quote = bus_quote(&url_a, TOKEN).await;
    drop(travel_a);
    // Due after 1 s: the payments server sweeps it every 250 ms meanwhile.
    tokio::time::sleep(std::time::Duration::from_millis(2_500)).await;
    let ours =
        |lines: Vec<Value>| -> Vec<Value> { lines.into_iter().filter(|l| l["instance"] == quote.as_str()).collect() };
    assert!(ours(common::timer_lines(&audit_a)).is_empty(), "the travel server was gone before the quote was due");
    let (travel_b, _) = timed_travel(&postgres, TOKEN, &audit_b).await;
    for _ in 0..50 {
        if !ours(common::timer_lines(&audit_b)).is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(ours(common::timer_lines(&audit_b)).len(), 1, "the quote's timer fired once, by the travel server");
    drop((payments, travel_b));
    own.drop().await;
}

/// Instances of a machine no running server has, due before a server's own and more than
/// one sweep takes (its server is down): the server still fires its own timer on time,
/// because its sweeps skip what they already left to another server.
#[tokio::test]
async fn timers_left_to_other_servers_do_not_crowd_out_a_servers_own() {
    let Some(server) = postgres_url() else { return };
    let own = OwnDatabase::on(&server, "crowded").await;
    let (postgres, dir) = (own.url.clone(), own.dir.clone());
    const TOKEN: &str = "postgres-crowded-traveller-token-01";
    let audit = dir.join("audit.jsonl");
    let (travel, url) = timed_travel(&postgres, TOKEN, &audit).await;
    // 300 instances of a machine called `ghost`, due a minute ago: more than one sweep's 256.
    let (client, connection) = tokio_postgres::connect(&postgres, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64;
    let due = now - 60_000;
    let snapshot = json!({ "states": { "ghost": "waiting" }, "active_domain": null, "version": 0, "updated_at_ms": 0, "due_at_ms": due });
    let snapshot = snapshot.to_string();
    let ghosts = client
        .execute(
            "INSERT INTO toolgate.records (key, version, snapshot, due_at_ms) \
             SELECT 'instance:5:ghost:G' || g, 1, $1, $2 FROM generate_series(1, 300) g",
            &[&snapshot, &due],
        )
        .await
        .unwrap();
    assert_eq!(ghosts, 300);
    let quote = bus_quote(&url, TOKEN).await;
    let ours =
        |lines: Vec<Value>| -> Vec<Value> { lines.into_iter().filter(|l| l["instance"] == quote.as_str()).collect() };
    for _ in 0..60 {
        if !ours(common::timer_lines(&audit)).is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(
        ours(common::timer_lines(&audit)).len(),
        1,
        "the quote's timer fired, behind 300 left to another server"
    );
    let left: i64 = client
        .query_one(
            "SELECT count(*) FROM toolgate.records WHERE key LIKE 'instance:5:ghost:%' AND due_at_ms IS NOT NULL",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(left, 300, "what is due on another server's instances is left to it");
    drop((travel, client));
    own.drop().await;
}

/// A travel server on `postgres` whose quotes lapse after 1 s, serving `token`'s holder
/// (principal `timed`), its audit log at `audit`.
async fn timed_travel(postgres: &str, token: &str, audit: &std::path::Path) -> (tokio::process::Child, String) {
    let principal = format!("timed={token}");
    let args = ["--after", "quoted=1s", "--token", &principal, "--audit-log", audit.to_str().unwrap()];
    replica("travel", postgres, &args).await
}

/// A bus quote made through the travel server at `url` by `token`'s holder (an rmcp client
/// over HTTP): its id.
async fn bus_quote(url: &str, token: &str) -> String {
    let client = TestClient::http_as(url, Lifecycle::Session, Some(token)).await;
    client.ok("switch_domain", json!({ "domain": "bus", "reason": "a bus" })).await;
    let search = json!({
        "domain": "bus", "origin": "Madrid", "destination": "Valencia",
        "departure": "2026-12-04T08:00:00+01:00", "passengers": 2,
    });
    client.ok("bus_search", search).await["quote_id"].as_str().unwrap().to_string()
}

/// A database of a test's own on a Postgres server, and a directory for its files.
pub(crate) struct OwnDatabase {
    server: String,
    name: String,
    /// The database's URL.
    pub(crate) url: String,
    dir: std::path::PathBuf,
}

impl OwnDatabase {
    /// A new database (and directory) named for `label` on the Postgres at `server`.
    pub(crate) async fn on(server: &str, label: &str) -> Self {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
        let name = format!("toolgate_{label}_{nanos}");
        let (client, connection) = tokio_postgres::connect(server, tokio_postgres::NoTls).await.unwrap();
        tokio::spawn(connection);
        client.batch_execute(&format!("CREATE DATABASE {name}")).await.unwrap();
        let (base, _) = server.rsplit_once('/').expect("a Postgres URL names its database");
        let dir = std::env::temp_dir().join(format!("toolgate-pg-{label}-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        Self { server: server.to_string(), url: format!("{base}/{name}"), name, dir }
    }

    /// Removes the database (whoever is still connected) and the directory.
    pub(crate) async fn drop(self) {
        let _ = std::fs::remove_dir_all(&self.dir);
        let (client, connection) = tokio_postgres::connect(&self.server, tokio_postgres::NoTls).await.unwrap();
        tokio::spawn(connection);
        let _ = client.batch_execute(&format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name)).await;
    }
}

/// The history entries of the record whose key ends with `key_end`, read from Postgres
/// itself (the `toolgate` schema the command line uses), oldest first.
async fn history_of(postgres: &str, key_end: &str) -> Vec<String> {
    let (client, connection) = tokio_postgres::connect(postgres, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    let rows = client
        .query("SELECT entry FROM toolgate.history WHERE key LIKE '%' || $1 ORDER BY seq", &[&key_end])
        .await
        .unwrap();
    rows.iter().map(|row| row.get(0)).collect()
}
