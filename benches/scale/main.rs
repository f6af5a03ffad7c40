//! The scale harness: what toolgate's cost does as the work grows — instances by the
//! million, a long history on one instance — measured from outside against a release
//! example binary, on each store. Issue 57; figures go to `BENCHMARKS.md`.
//!
//! ```sh
//! cargo build --release -p toolgate-examples --example invoice
//! cargo bench -p toolgate --bench scale -- instances      # STORES=sqlite SIZES=100000,1000000
//! STORES=sqlite,postgres,redis cargo bench -p toolgate --bench scale -- instances hot
//! ```
//!
//! Items: `instances` (item 1: transitions, views, counts and size at each of `SIZES`, in
//! `ROUNDS` alternated rounds), `timers` (item 2: `TIMERS` payments due at once, on 1 and
//! `REPLICAS` servers, other calls at `RATE` a second), `backlog` (item 3: `BACKLOG`
//! effects recorded while their destination is down, drained once it is back, on 1 and
//! `REPLICAS` servers), `sessions` (item 4: `SESSIONS`
//! stateful sessions, then as many listen streams), `hot` (item 5: `HOT` transitions
//! on one instance) and `statements` (item 6's count, Postgres only: the statements a
//! keyed transition runs, by `pg_stat_statements`, over `CALLS` transitions).
//! Settings, from the environment: `STORES` (sqlite, postgres, redis), `SIZES`, `ROUNDS`
//! (3), `SECONDS` per many-connection run (15), `CONNECTIONS` (32), `CALLS` per
//! one-connection run (2000), `HOT` (100000); `TG_EXAMPLES` (the directory of the example
//! binaries, `target/release/examples`); Postgres at `SCALE_POSTGRES_URL` (databases
//! `toolgate_scale_<n>` are created and dropped), Redis at `SCALE_REDIS_URL` (databases
//! 8 and up are **flushed**). `SCALE=ci` is the smallest run `.ci/run` makes, to keep the
//! harness working.

mod backlog;
mod driver;
mod hot;
mod instances;
mod payments;
mod server;
mod sessions;
mod statements;
mod stores;
mod timers;

use std::path::PathBuf;

use stores::Kind;

/// A run's settings.
#[derive(Debug)]
pub(crate) struct Config {
    /// The stores measured, one after another (`STORES`).
    pub(crate) stores: Vec<Kind>,
    /// How many instances each store holds, one store per size (`SIZES`).
    pub(crate) sizes: Vec<u64>,
    /// Rounds per size, alternated between the sizes (`ROUNDS`).
    pub(crate) rounds: usize,
    /// Seconds of each many-connection run (`SECONDS`).
    pub(crate) seconds: u64,
    /// Connections of a many-connection run (`CONNECTIONS`).
    pub(crate) connections: usize,
    /// Calls of each one-connection run (`CALLS`).
    pub(crate) calls: usize,
    /// Transitions on the hot instance (`HOT`).
    pub(crate) hot: u64,
    /// Payments due at once (`TIMERS`).
    pub(crate) timers: u64,
    /// How many replicas share the store in the timers' runs (`REPLICAS`; SQLite: 1).
    pub(crate) replicas: Vec<usize>,
    /// Stateful sessions, then listen streams, open at once (`SESSIONS`).
    pub(crate) sessions: usize,
    /// Effects recorded while their destination is down (`BACKLOG`).
    pub(crate) backlog: u64,
    /// How long the destination takes to answer an attempt once it is back, in
    /// milliseconds (`BACKLOG_LATENCY_MS`).
    pub(crate) backlog_latency_ms: u64,
    /// The other calls' rate while timers fire, a second (`RATE`).
    pub(crate) rate: u64,
    /// How long the timers may take before the run gives up, in seconds.
    pub(crate) timers_patience: u64,
    /// Where SQLite files go.
    pub(crate) dir: PathBuf,
}

impl Config {
    fn from_env() -> Self {
        let ci = std::env::var("SCALE").is_ok_and(|s| s == "ci");
        let var = |name: &str, default: &str, small: &str| {
            std::env::var(name).unwrap_or_else(|_| if ci { small } else { default }.to_string())
        };
        let number = |name: &str, default: &str, small: &str| -> u64 {
            var(name, default, small).parse().unwrap_or_else(|_| panic!("{name} is a number"))
        };
        let dir = std::env::temp_dir().join(format!("toolgate-scale-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a temporary directory");
        Config {
            stores: var("STORES", "sqlite", "sqlite").split(',').map(Kind::parse).collect(),
            sizes: (var("SIZES", "100000,1000000", "1000,2000").split(','))
                .map(|n| n.parse().expect("SIZES lists numbers"))
                .collect(),
            rounds: number("ROUNDS", "3", "1") as usize,
            seconds: number("SECONDS", "15", "2"),
            connections: number("CONNECTIONS", "32", "8") as usize,
            calls: number("CALLS", "2000", "200") as usize,
            hot: number("HOT", "100000", "1000"),
            timers: number("TIMERS", "100000", "500"),
            replicas: (var("REPLICAS", "1,3", "1,2").split(','))
                .map(|n| n.parse().expect("REPLICAS lists numbers"))
                .collect(),
            rate: number("RATE", "100", "20"),
            backlog: number("BACKLOG", "100000", "300"),
            backlog_latency_ms: number("BACKLOG_LATENCY_MS", "5", "1"),
            sessions: number("SESSIONS", "10000", "200") as usize,
            timers_patience: number("TIMERS_PATIENCE", "900", "120"),
            dir,
        }
    }

    /// What every server of the run is started with: served sessionless, and stopped
    /// without the drain a load balancer needs.
    pub(crate) fn server_args(&self) -> Vec<&'static str> {
        vec!["--stateless", "--drain-delay", "1ms"]
    }
}

#[tokio::main]
async fn main() {
    // `cargo bench` passes `--bench`; the items are the other arguments.
    let items: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with("--")).collect();
    let items = if items.is_empty() {
        ["instances", "timers", "backlog", "sessions", "hot", "statements"].map(String::from).to_vec()
    } else {
        items
    };
    let config = Config::from_env();
    println!("scale: {config:?}");
    for kind in &config.stores {
        for item in &items {
            match item.as_str() {
                "instances" => instances::run(*kind, &config).await,
                "hot" => hot::run(*kind, &config).await,
                "sessions" => sessions::run(*kind, &config).await,
                "statements" => statements::run(*kind, &config).await,
                "timers" | "backlog" => {
                    // A SQLite file is one process's: its runs have one replica.
                    for replicas in config.replicas.iter().filter(|r| **r == 1 || *kind != Kind::Sqlite) {
                        if item == "timers" {
                            timers::run(*kind, *replicas, &config).await;
                        } else {
                            backlog::run(*kind, *replicas, &config).await;
                        }
                    }
                }
                other => panic!("items are instances, timers, backlog, sessions, hot and statements, not {other}"),
            }
        }
    }
    let _ = std::fs::remove_dir_all(&config.dir);
}
