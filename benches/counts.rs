//! The console's counts on a store holding `INSTANCES` (default 100,000) instances: how
//! long reading one machine's counts in one scope takes
//! ([`Counts::instances`](toolgate::store::Counts::instances), counters kept as records commit), against a pass over
//! every live record ([`Counts::live`](toolgate::store::Counts::live), what counting without counters would
//! read). The instances are invoices spread over four states and two tenants, written by
//! 64 writers at once.
//!
//! ```sh
//! cargo bench -p toolgate --bench counts                          # STORE=sqlite (a fresh file)
//! STORE=postgres TG_POSTGRES_URL=postgres://… cargo bench -p toolgate --bench counts
//! STORE=redis TG_REDIS_URL=redis://127.0.0.1:6379/0 cargo bench -p toolgate --bench counts  # an empty database
//! STORE=memory cargo bench -p toolgate --bench counts
//! ```

use std::sync::Arc;
use std::time::{Duration, Instant};

use toolgate::store::{FlowStore, MemoryStore, PostgresStore, RedisStore, Snapshot, SqliteStore, StoreKey};

const STATES: [&str; 4] = ["draft", "review", "approved", "discharged"];
const TENANTS: [&str; 2] = ["acme", "globex"];

/// The median of `runs` timings of `read`.
async fn median<F: std::future::Future<Output = ()>>(runs: usize, mut read: impl FnMut() -> F) -> Duration {
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let started = Instant::now();
        read().await;
        times.push(started.elapsed());
    }
    times.sort();
    times[runs / 2]
}

#[tokio::main]
async fn main() {
    let instances: usize = std::env::var("INSTANCES").ok().and_then(|n| n.parse().ok()).unwrap_or(100_000);
    let kind = std::env::var("STORE").unwrap_or_else(|_| "sqlite".into());
    let dir = std::env::temp_dir().join(format!("toolgate-counts-{}", std::process::id()));
    let store: Arc<dyn FlowStore> = match kind.as_str() {
        "sqlite" => {
            std::fs::create_dir_all(&dir).unwrap();
            Arc::new(SqliteStore::open(dir.join("counts.db")).expect("a fresh SQLite file"))
        }
        "postgres" => {
            let url = std::env::var("TG_POSTGRES_URL").expect("STORE=postgres needs TG_POSTGRES_URL");
            let schema = format!("toolgate_counts_{}", std::process::id());
            Arc::new(PostgresStore::connect_in_schema(&url, &schema).await.expect("Postgres"))
        }
        "redis" => {
            let url = std::env::var("TG_REDIS_URL").expect("STORE=redis needs TG_REDIS_URL");
            Arc::new(RedisStore::connect(&url).await.expect("Redis"))
        }
        "memory" => Arc::new(MemoryStore::new()),
        other => panic!("STORE is sqlite, postgres, redis or memory, not {other}"),
    };
    let started = Instant::now();
    let writers: Vec<_> = (0..64)
        .map(|writer| {
            let store = store.clone();
            tokio::spawn(async move {
                for n in (writer..instances).step_by(64) {
                    let tenant = TENANTS[n % TENANTS.len()];
                    let key = StoreKey::tenant_instance(tenant, "invoice", &format!("INV-{n}"));
                    let next = Snapshot::default().with_state("invoice", STATES[n / 2 % STATES.len()]);
                    store.commit(&key, 0, &next, None, None).await.expect("commit");
                }
            })
        })
        .collect();
    for writer in writers {
        writer.await.unwrap();
    }
    let written = started.elapsed();
    let counter = store.capabilities().counts.expect("the store counts");
    let counts = counter.instances("acme", "invoice").await.unwrap();
    let counted: u64 = counts.states.values().sum();
    assert_eq!(counted as usize, instances.div_ceil(2), "acme's invoices, all counted: {counts:?}");
    let read = median(101, || async {
        counter.instances("acme", "invoice").await.unwrap();
    })
    .await;
    let scan = median(5, || async {
        counter.live().await.unwrap();
    })
    .await;
    println!(
        "{kind}: {instances} instances written in {:.1} s; one machine's counts in one tenant ({counted} instances, \
         {:?}): {:.3} ms (median of 101); a pass over every live record: {:.1} ms (median of 5)",
        written.as_secs_f64(),
        counts.states,
        read.as_secs_f64() * 1e3,
        scan.as_secs_f64() * 1e3,
    );
    let _ = std::fs::remove_dir_all(&dir);
}
