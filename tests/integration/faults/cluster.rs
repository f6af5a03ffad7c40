//! What the faults strike: a store of the test's own (Redis keeping each write, or a
//! Postgres cluster) and three replicas of the payments example on it, each of which can be
//! killed, paused and started again.

use std::path::{Path, PathBuf};
use std::sync::RwLock;

use tokio::process::Child;

use crate::common::spawn_http_example;
use crate::own_postgres::OwnPostgres;
use crate::own_redis::OwnRedis;

/// How many replicas serve.
pub(super) const REPLICAS: usize = 3;

/// The store the replicas share.
pub(super) enum Store {
    Redis(OwnRedis),
    Postgres(OwnPostgres),
}

impl Store {
    pub(super) fn name(&self) -> &'static str {
        match self {
            Store::Redis(_) => "redis",
            Store::Postgres(_) => "postgres",
        }
    }

    fn url(&self) -> String {
        match self {
            Store::Redis(redis) => redis.url(),
            Store::Postgres(postgres) => postgres.url(),
        }
    }

    /// Stops it the hard way (Redis: `SHUTDOWN NOSAVE`, keeping only what its append-only
    /// file synced; Postgres: `-m immediate`, recovering from its log) and starts it again.
    pub(super) async fn restart(&self, down: std::time::Duration) {
        match self {
            Store::Redis(redis) => {
                redis.cli(&["shutdown", "nosave"]);
                tokio::time::sleep(down).await;
                redis.run();
            }
            Store::Postgres(postgres) => {
                postgres.crash();
                tokio::time::sleep(down).await;
                postgres.run();
            }
        }
    }
}

/// One replica: its process while it runs, and how many times it was started.
struct Replica {
    child: Option<Child>,
    url: Option<String>,
    starts: usize,
}

/// The store, the replicas, and the endpoints a client may call now.
pub(super) struct Cluster {
    pub(super) store: Store,
    pub(super) dir: PathBuf,
    replicas: Vec<tokio::sync::Mutex<Replica>>,
    live: RwLock<Vec<String>>,
    tokens: PathBuf,
}

/// Principals of one tenant, each allowed to settle: the load's clients.
pub(super) fn principal(client: usize) -> String {
    format!("clerk{client}")
}

pub(super) fn token(client: usize) -> String {
    format!("faults-token-of-clerk-{client:04}-0000000000")
}

impl Cluster {
    /// Starts the replicas on `store`, with tokens for `clients` principals.
    pub(super) async fn start(store: Store, clients: usize) -> Self {
        let dir = crate::common::scratch_dir(&format!("faults-{}", store.name()));
        let tokens = dir.join("tokens.toml");
        let entries: String = (0..clients)
            .map(|client| {
                format!(
                    "[[token]]\nsecret = \"{}\"\nprincipal = \"{}\"\ntenant = \"acme\"\nscopes = [\"payments:create\", \"payments:capture\"]\n\n",
                    token(client),
                    principal(client)
                )
            })
            .collect();
        std::fs::write(&tokens, entries).unwrap();
        let replicas = (0..REPLICAS).map(|_| tokio::sync::Mutex::new(Replica { child: None, url: None, starts: 0 }));
        let cluster = Self { store, dir, replicas: replicas.collect(), live: RwLock::new(Vec::new()), tokens };
        for replica in 0..REPLICAS {
            cluster.start_replica(replica).await;
        }
        cluster
    }

    /// The endpoints serving now (a paused replica's included: it is up, only slow).
    pub(super) fn live(&self) -> Vec<String> {
        self.live.read().unwrap().clone()
    }

    async fn start_replica(&self, replica: usize) {
        let mut slot = self.replicas[replica].lock().await;
        let notices = self.dir.join(format!("notices-{replica}-{}.jsonl", slot.starts));
        let (store, otp) = (self.store.url(), self.dir.join("otp.jsonl"));
        let args = [
            "--store",
            &store,
            "--tokens",
            self.tokens.to_str().unwrap(),
            "--otp-outbox",
            otp.to_str().unwrap(),
            "--notices-log",
            notices.to_str().unwrap(),
            // A pause (6.5 s) outlasts a task's heartbeat (another replica then reports the
            // task), inside the runner's lease: the runner resumes still holding it, as in
            // the report this check was built for.
            "--lease-ttl",
            "8",
            "--settle-seconds",
            "1",
            // Longer than a pause with a settlement's second: a paused settlement's
            // payment has not lapsed when it resumes (the lapse would refuse its commit and
            // hide whether fencing did).
            "--after",
            "authorized=10s",
            "--effect-timeout",
            "2",
        ];
        let env = [("TOOLGATE_HANDLE_KEY", "faults-handle-key-0000000000000000000001"), ("RUST_LOG", "warn")];
        let (child, url) = spawn_http_example("payments", &args, &env).await;
        slot.child = Some(child);
        slot.url = Some(url.clone());
        slot.starts += 1;
        self.live.write().unwrap().push(url);
    }

    /// kill -9 of `replica`; it stays down for `down`, then starts again (a new port).
    pub(super) async fn kill_and_restart(&self, replica: usize, down: std::time::Duration) {
        {
            let mut slot = self.replicas[replica].lock().await;
            if let Some(url) = slot.url.take() {
                self.live.write().unwrap().retain(|live| *live != url);
            }
            if let Some(mut child) = slot.child.take() {
                let _ = child.kill().await;
            }
        }
        tokio::time::sleep(down).await;
        self.start_replica(replica).await;
    }

    /// SIGSTOP of `replica` for `paused`, then SIGCONT.
    pub(super) async fn pause(&self, replica: usize, paused: std::time::Duration) {
        let slot = self.replicas[replica].lock().await;
        let Some(pid) = slot.child.as_ref().and_then(Child::id) else { return };
        signal(pid, "STOP");
        tokio::time::sleep(paused).await;
        signal(pid, "CONT");
    }

    /// Every notices log the replicas wrote.
    pub(super) fn notices(&self) -> Vec<serde_json::Value> {
        notices_in(&self.dir)
    }
}

fn notices_in(dir: &Path) -> Vec<serde_json::Value> {
    let mut lines = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().to_string();
        if name.starts_with("notices-") {
            let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
            // A line cut by a kill -9 is not a notice the processor received.
            lines.extend(text.lines().filter_map(|line| serde_json::from_str(line).ok()));
        }
    }
    lines
}

/// Sends `signal` (`STOP`, `CONT`) to the process `pid`.
fn signal(pid: u32, signal: &str) {
    let _ = std::process::Command::new("kill").args([&format!("-{signal}"), &pid.to_string()]).status();
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // Never leave a replica stopped: the children are killed on drop, a stopped one too.
        for replica in &self.replicas {
            if let Some(pid) = replica.try_lock().ok().and_then(|slot| slot.child.as_ref().and_then(Child::id)) {
                signal(pid, "CONT");
            }
        }
        if std::env::var_os("TOOLGATE_FAULTS_KEEP").is_none() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}
