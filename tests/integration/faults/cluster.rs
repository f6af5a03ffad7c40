//! What the faults strike: a store of the test's own (Redis keeping each write, or a
//! Postgres cluster) and three replicas of the payments example on it, each of which can be
//! killed, paused, stopped by a signal and started again. The rolling restart
//! (`tests/integration/roll`) starts the same replicas on fixed ports, behind a load
//! balancer.

use std::path::{Path, PathBuf};
use std::sync::RwLock;
use std::time::{Duration, Instant};

use tokio::process::{Child, Command};

use crate::common::example_binary;
use crate::common::servers::serving;
use crate::own_postgres::OwnPostgres;
use crate::own_redis::OwnRedis;

/// How many replicas serve.
pub(crate) const REPLICAS: usize = 3;

/// The store the replicas share.
pub(crate) enum Store {
    Redis(OwnRedis),
    Postgres(OwnPostgres),
}

impl Store {
    pub(crate) fn name(&self) -> &'static str {
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
    pub(crate) async fn restart(&self, down: std::time::Duration) {
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

/// One replica: its process while it runs, how many times it was started, and the port it
/// always serves on, if it has one (else a new one at each start).
struct Replica {
    child: Option<Child>,
    url: Option<String>,
    starts: usize,
    port: Option<u16>,
}

/// How a replica stopped when it was told to.
#[derive(Debug, Clone)]
pub(crate) struct Exit {
    /// Its exit code; `None` when a signal ended it.
    pub(crate) code: Option<i32>,
    /// From the signal to the exit.
    pub(crate) took: Duration,
}

/// The store, the replicas, and the endpoints a client may call now.
pub(crate) struct Cluster {
    pub(crate) store: Store,
    pub(crate) dir: PathBuf,
    replicas: Vec<tokio::sync::Mutex<Replica>>,
    live: RwLock<Vec<String>>,
    tokens: PathBuf,
    /// Arguments every replica gets beyond the fault check's own.
    extra_args: Vec<String>,
}

/// Principals of one tenant, each allowed to settle: the load's clients.
pub(crate) fn principal(client: usize) -> String {
    format!("clerk{client}")
}

pub(crate) fn token(client: usize) -> String {
    format!("faults-token-of-clerk-{client:04}-0000000000")
}

impl Cluster {
    /// Starts the replicas on `store`, with tokens for `clients` principals, each on a new
    /// port at each start.
    pub(crate) async fn start(store: Store, clients: usize) -> Self {
        Self::start_with(store, clients, "faults", &[], &[]).await
    }

    /// Starts the replicas on `store`, with tokens for `clients` principals and `extra_args`,
    /// replica `n` on `ports[n]` at every start when `ports` names one (else on a new port);
    /// their files in a scratch directory named after `name`.
    pub(crate) async fn start_with(
        store: Store,
        clients: usize,
        name: &str,
        ports: &[u16],
        extra_args: &[&str],
    ) -> Self {
        let dir = crate::common::scratch_dir(&format!("{name}-{}", store.name()));
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
        let replicas = (0..REPLICAS).map(|replica| {
            tokio::sync::Mutex::new(Replica { child: None, url: None, starts: 0, port: ports.get(replica).copied() })
        });
        let extra_args = extra_args.iter().map(|arg| arg.to_string()).collect();
        let live = RwLock::new(Vec::new());
        let cluster = Self { store, dir, replicas: replicas.collect(), live, tokens, extra_args };
        for replica in 0..REPLICAS {
            cluster.start_replica(replica).await;
        }
        cluster
    }

    /// The endpoints serving now (a paused replica's included: it is up, only slow).
    pub(crate) fn live(&self) -> Vec<String> {
        self.live.read().unwrap().clone()
    }

    /// Starts `replica` and waits until it serves.
    pub(crate) async fn start_replica(&self, replica: usize) {
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
        let http = format!("127.0.0.1:{}", slot.port.unwrap_or(0));
        // A rolling upgrade (`scripts/rolling-upgrade.sh`) starts each replica first from an
        // older build, and every later start from this one.
        let older = std::env::var_os("TOOLGATE_ROLL_FROM").filter(|_| slot.starts == 0);
        let binary = older.map_or_else(|| example_binary("payments"), std::path::PathBuf::from);
        let mut command = Command::new(binary);
        command.args(["--http", &http]).args(args).args(&self.extra_args).envs(env);
        let (child, url) = serving(&mut command).await;
        slot.child = Some(child);
        slot.url = Some(url.clone());
        slot.starts += 1;
        self.live.write().unwrap().push(url);
    }

    /// kill -9 of `replica`; it stays down for `down`, then starts again (a new port).
    pub(crate) async fn kill_and_restart(&self, replica: usize, down: std::time::Duration) {
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

    /// Sends `replica` the signal `name` (`TERM`, `INT`) and waits for it to exit.
    pub(crate) async fn stop(&self, replica: usize, name: &str) -> Exit {
        let mut slot = self.replicas[replica].lock().await;
        if let Some(url) = slot.url.take() {
            self.live.write().unwrap().retain(|live| *live != url);
        }
        let mut child = slot.child.take().expect("the replica runs");
        let asked = Instant::now();
        signal(child.id().expect("the replica runs"), name);
        let status = child.wait().await.expect("the replica's exit");
        Exit { code: status.code(), took: asked.elapsed() }
    }

    /// SIGSTOP of `replica` for `paused`, then SIGCONT.
    pub(crate) async fn pause(&self, replica: usize, paused: std::time::Duration) {
        let slot = self.replicas[replica].lock().await;
        let Some(pid) = slot.child.as_ref().and_then(Child::id) else { return };
        signal(pid, "STOP");
        tokio::time::sleep(paused).await;
        signal(pid, "CONT");
    }

    /// Every notices log the replicas wrote.
    pub(crate) fn notices(&self) -> Vec<serde_json::Value> {
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

/// Sends `signal` (`STOP`, `CONT`, `TERM`) to the process `pid`.
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
