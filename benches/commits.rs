//! Durable transitions per second: `N` tasks, each committing on an instance of its own
//! (a compare-and-set that moves it, as a transition's commit does), for `SECONDS`, on the
//! memory store, the SQLite file store (its group commit: commits that arrive together
//! share one sync) and Redis when `TOOLGATE_BENCH_REDIS_URL` names one.
//!
//! ```sh
//! cargo bench -p toolgate --bench commits                       # N = 1, 8, 32; 3 seconds each
//! TOOLGATE_BENCH_REDIS_URL=redis://127.0.0.1:6399/9 SECONDS=5 cargo bench -p toolgate --bench commits
//! ```
//!
//! The SQLite file goes in `target/` (`CARGO_TARGET_TMPDIR`), on the disk a server's would
//! be on; every commit is durable (WAL, `synchronous = FULL`) before it is answered.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use toolgate::store::{FlowStore, MemoryStore, RedisStore, Snapshot, SqliteStore, StoreKey};

/// Commits per second with `tasks` committing at once, each on its own instance.
async fn rate(store: Arc<dyn FlowStore>, tasks: usize, run: Duration, tag: &str) -> f64 {
    let committed = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let workers: Vec<_> = (0..tasks)
        .map(|task| {
            let (store, committed) = (store.clone(), committed.clone());
            let key = StoreKey::instance("bench", &format!("{tag}-{task}"));
            tokio::spawn(async move {
                let mut current = store.load(&key).await.expect("load");
                let mut flip = false;
                while start.elapsed() < run {
                    flip = !flip;
                    let next = current.with_state("bench", if flip { "b" } else { "a" });
                    let version = store.commit(&key, current.version, &next, None, None).await.expect("commit");
                    current = Snapshot { version, ..next };
                    committed.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    for worker in workers {
        worker.await.expect("worker");
    }
    committed.load(Ordering::Relaxed) as f64 / start.elapsed().as_secs_f64()
}

#[tokio::main]
async fn main() {
    let seconds: u64 = std::env::var("SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(3);
    let run = Duration::from_secs(seconds);
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let file = dir.join(format!("commits-bench-{}.db", std::process::id()));
    let sqlite = SqliteStore::open(&file).expect("the bench's SQLite file");
    let mut stores: Vec<(&str, Arc<dyn FlowStore>)> =
        vec![("memory", Arc::new(MemoryStore::new())), ("sqlite", Arc::new(sqlite.clone()))];
    if let Ok(url) = std::env::var("TOOLGATE_BENCH_REDIS_URL") {
        stores.push(("redis", Arc::new(RedisStore::connect(&url).await.expect("the bench's Redis"))));
    }
    println!("store    instances  commits/s  commits per sync");
    for (name, store) in stores {
        for tasks in [1, 8, 32] {
            let tag = format!("{}-{tasks}", std::process::id());
            let (groups, grouped) = sqlite.commit_groups();
            let per_second = rate(store.clone(), tasks, run, &tag).await;
            let (groups_after, grouped_after) = sqlite.commit_groups();
            let per_sync = match (name, groups_after - groups) {
                ("sqlite", groups) if groups > 0 => format!("{:.1}", (grouped_after - grouped) as f64 / groups as f64),
                _ => "-".to_string(),
            };
            println!("{name:<8} {tasks:>9}  {per_second:>9.0}  {per_sync:>16}");
        }
    }
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", file.display()));
    }
}
