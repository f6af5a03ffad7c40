//! Item 6, its count: the statements a keyed transition costs on Postgres, as
//! `pg_stat_statements` counts them (the server must load it:
//! `shared_preload_libraries = 'pg_stat_statements'`; `.ci/run`'s does). `CALLS`
//! transitions on one connection, each `invoice_submit` or `invoice_reject` on one of 100
//! invoices seeded before the count starts; then every statement the database ran during
//! them, with its calls per transition and its mean time, and the whole per transition.

use std::time::Duration;

use crate::Config;
use crate::driver::{Caller, Latencies};
use crate::server::Server;
use crate::stores::{Kind, Target};

/// Invoices the transitions go round.
const INVOICES: u64 = 100;

fn args(id: u64) -> String {
    format!(r#"{{"id":"INV-{id}","domain":"invoice"}}"#)
}

/// Runs the count on `kind` (Postgres only: the others are skipped).
pub(crate) async fn run(kind: Kind, config: &Config) {
    if kind != Kind::Postgres {
        return;
    }
    let target = Target::fresh(kind, 0, &config.dir).await;
    let sql = target.postgres().await.expect("Postgres");
    if let Err(error) = sql.batch_execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements").await {
        panic!(
            "pg_stat_statements is not available ({error}): start Postgres with shared_preload_libraries = 'pg_stat_statements'"
        );
    }
    let server = Server::start("invoice", &target.url, &config.server_args()).await;
    let mut caller = Caller::new(&server.url);
    for id in 1..=INVOICES {
        caller.call("invoice_submit", &args(id)).await.expect("a seeding submit");
    }
    // What the seeding and the server's start ran settles, then the count starts afresh.
    tokio::time::sleep(Duration::from_millis(500)).await;
    sql.batch_execute("SELECT pg_stat_statements_reset()").await.expect("reset the counts");
    let mut latencies = Latencies::default();
    let calls = config.calls as u64;
    for n in 0..calls {
        let id = 1 + n % INVOICES;
        // Round after round: the first round rejects what the seeding submitted.
        let tool = if (n / INVOICES).is_multiple_of(2) { "invoice_reject" } else { "invoice_submit" };
        latencies.push(caller.call(tool, &args(id)).await.unwrap_or_else(|e| panic!("{tool} INV-{id}: {e}")));
    }
    // The writes a transition leaves to the background are counted too.
    tokio::time::sleep(Duration::from_millis(500)).await;
    server.stop().await;
    let rows = sql
        .query(
            "SELECT calls, total_exec_time, regexp_replace(query, '\\s+', ' ', 'g') \
             FROM pg_stat_statements JOIN pg_database d ON d.oid = dbid \
             WHERE d.datname = current_database() AND query NOT ILIKE '%pg_stat_statements%' \
             ORDER BY calls DESC",
            &[],
        )
        .await
        .expect("the counts");
    println!("\n| statement | calls per transition | mean (µs) |");
    println!("|---|---|---|");
    let mut per_transition = 0.0;
    let mut time_ms = 0.0;
    for row in &rows {
        let (count, total_ms, query): (i64, f64, String) = (row.get(0), row.get(1), row.get(2));
        let share = count as f64 / calls as f64;
        // The server's start and stop (migrations, listeners) are not a transition's.
        if share < 0.05 {
            continue;
        }
        per_transition += share;
        time_ms += total_ms;
        let shown: String = query.chars().take(110).collect();
        println!("| `{}` | {share:.2} | {:.0} |", shown.replace('|', "\\|"), total_ms * 1_000.0 / count as f64);
    }
    println!(
        "\n{calls} transitions on one connection: {per_transition:.2} statements each, {:.0} µs of statement time each; p50 {:.3} ms, p99 {:.3} ms",
        time_ms * 1_000.0 / calls as f64,
        latencies.quantile_ms(0.5),
        latencies.quantile_ms(0.99)
    );
    assert!(per_transition >= 1.0, "a transition runs at least its commit");
    drop(sql);
    target.drop_store().await;
}
