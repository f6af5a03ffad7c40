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
//! `ROUNDS` alternated rounds) and `hot` (item 5: `HOT` transitions on one instance).
//! Settings, from the environment: `STORES` (sqlite, postgres, redis), `SIZES`, `ROUNDS`
//! (3), `SECONDS` per many-connection run (15), `CONNECTIONS` (32), `CALLS` per
//! one-connection run (2000), `HOT` (100000); `TG_EXAMPLES` (the directory of the example
//! binaries, `target/release/examples`); Postgres at `SCALE_POSTGRES_URL` (databases
//! `toolgate_scale_<n>` are created and dropped), Redis at `SCALE_REDIS_URL` (databases
//! 8 and up are **flushed**). `SCALE=ci` is the smallest run `.ci/run` makes, to keep the
//! harness working.

mod driver;
mod hot;
mod instances;
mod server;
mod stores;

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
    let items = if items.is_empty() { vec!["instances".to_string(), "hot".to_string()] } else { items };
    let config = Config::from_env();
    println!("scale: {config:?}");
    for kind in &config.stores {
        for item in &items {
            match item.as_str() {
                "instances" => instances::run(*kind, &config).await,
                "hot" => hot::run(*kind, &config).await,
                other => panic!("items are instances and hot, not {other}"),
            }
        }
    }
    let _ = std::fs::remove_dir_all(&config.dir);
}
