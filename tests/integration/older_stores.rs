//! A store the previous toolgate wrote (`main` at 12f601d) opens, reads back as written
//! (its principal-owned instance moved to its tenant's key), and takes new transitions: a SQLite file, whose migrations were then unversioned
//! functions (it is recognized and stamped), and a Postgres schema (its dump loaded
//! first; `TOOLGATE_TEST_POSTGRES_URL`, `.ci/run` starts one). The fixtures are in
//! `tests/fixtures/stores/`, written by `write_fixtures.rs` there, run on that commit.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::json;
use toolgate::store::{
    Counts, FlowStore, Histories, HistoryEntry, HistoryRetention, PostgresStore, SQLITE_SCHEMA_VERSION, SqliteStore,
    StoreKey,
};

use crate::postgres_replicas::OwnDatabase;
use crate::replicas::postgres_url;

/// The fixtures' clock: when their first transition was committed.
const T0: u64 = 1_780_000_000_000;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/stores").join(name)
}

/// What `write_fixtures.rs` wrote reads back unchanged on `store`; then a transition on
/// `INV-1` commits over what was read, its entry after the old ones.
async fn reads_back_and_moves_on<S: FlowStore + Histories + Counts>(store: &S) {
    let inv1 = StoreKey::instance("invoice", "INV-1");
    let loaded = store.load(&inv1).await.unwrap();
    assert_eq!(loaded.state_of("invoice", ""), "approved");
    assert_eq!(loaded.context, Some(json!({ "amount": 120 })));
    let history = store.history(&inv1).await.unwrap();
    let steps: Vec<_> = history.iter().map(|e| (e.from.as_str(), e.to.as_str(), e.call_id.as_str())).collect();
    assert_eq!(steps, [("draft", "submitted", "call-1"), ("submitted", "approved", "call-2")]);
    assert_eq!(history[1].principal.as_deref(), Some("carol"));
    assert_eq!(history[1].tenant.as_deref(), Some("acme"));
    assert_eq!(history[1].note.as_deref(), Some("note of call-2"));
    assert_eq!(history[1].at_ms(), T0 + 1000);

    let inv2 = StoreKey::instance("invoice", "INV-2");
    let timed = store.load(&inv2).await.unwrap();
    assert_eq!((timed.state_of("invoice", ""), timed.due_at_ms), ("submitted", Some(T0 + 60_000)));
    assert_eq!(store.due(T0 + 60_000, 10).await.unwrap(), [inv2]);
    assert!(store.due(T0 + 59_999, 10).await.unwrap().is_empty());

    let tenant = store.load(&StoreKey::tenant_instance("acme", "invoice", "INV-1")).await.unwrap();
    assert_eq!((tenant.state_of("invoice", ""), &tenant.context), ("submitted", &Some(json!({ "amount": 7 }))));
    // The principal-owned instance, keyed by its owner then, is now its tenant's, its owner
    // in the record, its history moved with it.
    let owned_key = StoreKey::tenant_instance("acme", "quote", "Q-1");
    let owned = store.load(&owned_key).await.unwrap();
    assert_eq!(
        (owned.state_of("quote", ""), owned.owner.as_deref(), owned.tenant.as_deref()),
        ("sent", Some("digest-of-carol"), None)
    );
    let moved = store.history(&owned_key).await.unwrap();
    assert_eq!(moved.iter().map(|e| e.call_id.as_str()).collect::<Vec<_>>(), ["call-5"]);
    let counter = store.load(&StoreKey::minted("payment", None)).await.unwrap();
    assert_eq!(counter.record, Some(json!({ "n": 4 })));
    let flow = store.load(&StoreKey::connection("fixture-connection")).await.unwrap();
    assert_eq!((flow.state_of("desk", ""), flow.active_domain.as_deref()), ("open", Some("billing")));

    // The counters kept as the records committed.
    let counts = store.instances("", "invoice").await.unwrap();
    let states = BTreeMap::from([("approved".to_string(), 1), ("submitted".to_string(), 1)]);
    assert_eq!((counts.states, counts.timers), (states, 1));
    let quotes = store.instances("acme", "quote").await.unwrap();
    assert_eq!(quotes.states, BTreeMap::from([("sent".to_string(), 1)]));

    // A new transition over the version read.
    let entry: HistoryEntry = serde_json::from_value(json!({
        "principal": "dave", "tenant": "acme", "from": "approved", "to": "paid", "event": "PAY",
        "tool": "invoice_pay", "time": "2026-05-28T20:26:42.000Z", "call_id": "call-6", "at_ms": T0 + 5000,
    }))
    .unwrap();
    let next = loaded.with_state("invoice", "paid");
    let version = store.commit(&inv1, loaded.version, &next, None, Some((&entry, HistoryRetention::last(100))));
    let version = version.await.unwrap();
    assert!(version > loaded.version);
    let history = store.history(&inv1).await.unwrap();
    let calls: Vec<_> = history.iter().map(|e| e.call_id.as_str()).collect();
    assert_eq!(calls, ["call-1", "call-2", "call-6"]);
    let paid = store.instances("", "invoice").await.unwrap();
    assert_eq!(paid.states, BTreeMap::from([("paid".to_string(), 1), ("submitted".to_string(), 1)]));
}

#[tokio::test]
async fn a_sqlite_file_of_the_previous_toolgate_is_stamped_and_reads_back() {
    let dir = crate::common::scratch_dir("older-sqlite");
    let path = dir.join("state.db");
    std::fs::copy(fixture("sqlite-12f601d.db"), &path).unwrap();
    let version = |path: &PathBuf| -> i64 {
        let file = rusqlite::Connection::open(path).unwrap();
        file.query_row("PRAGMA user_version", [], |row| row.get(0)).unwrap()
    };
    assert_eq!(version(&path), 0, "the fixture predates versioned migrations");
    {
        let store = SqliteStore::open(&path).unwrap();
        reads_back_and_moves_on(&store).await;
    }
    assert_eq!(version(&path), SQLITE_SCHEMA_VERSION, "stamped, then brought up to date");
    // Opened again: nothing to migrate, and the new transition kept.
    let store = SqliteStore::open(&path).unwrap();
    let inv1 = store.load(&StoreKey::instance("invoice", "INV-1")).await.unwrap();
    assert_eq!(inv1.state_of("invoice", ""), "paid");
    drop(store);
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn a_postgres_schema_of_the_previous_toolgate_reads_back() {
    let Some(server) = postgres_url() else { return };
    let own = OwnDatabase::on(&server, "older").await;
    let (client, connection) = tokio_postgres::connect(&own.url, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    let dump = std::fs::read_to_string(fixture("postgres-12f601d.sql")).unwrap();
    client.batch_execute(&dump).await.unwrap();
    let applied: i64 =
        client.query_one("SELECT max(version) FROM toolgate_fixture_12f601d.migrations", &[]).await.unwrap().get(0);
    let store = PostgresStore::connect_in_schema(&own.url, "toolgate_fixture_12f601d").await.unwrap();
    reads_back_and_moves_on(&store).await;
    let now: i64 =
        client.query_one("SELECT max(version) FROM toolgate_fixture_12f601d.migrations", &[]).await.unwrap().get(0);
    assert_eq!((applied, now), (9, toolgate::store::POSTGRES_SCHEMA_VERSION));
    drop(store);
    own.drop().await;
}
