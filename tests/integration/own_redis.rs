//! A Redis of a test's own (`redis-server` on PATH; `.ci/run` installs it): stopped and
//! started again on the same port and data, emptied, or given a replica, without touching
//! the Redis the other tests share.

/// A Redis of this test's own, which it can stop and start again on the same port and data.
pub(crate) struct OwnRedis {
    port: u16,
    dir: std::path::PathBuf,
    /// Serving TLS only (`rediss://`), with the certificate in `tests/fixtures/tls`.
    tls: bool,
    /// What it keeps across a restart, and whose replica it is.
    settings: Vec<String>,
}

/// An append-only file synced on each write: what toolgate accepts without being told.
const KEEPS_EVERY_WRITE: &[&str] = &["--appendonly", "yes", "--appendfsync", "always"];

/// The test-only CA and the certificate it signed for 127.0.0.1.
pub(crate) const TLS_FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/tls");

impl OwnRedis {
    pub(crate) fn start() -> Option<Self> {
        Self::start_serving(false, KEEPS_EVERY_WRITE)
    }

    pub(crate) fn start_tls() -> Option<Self> {
        Self::start_serving(true, KEEPS_EVERY_WRITE)
    }

    /// A Redis with these persistence `settings` (`--appendonly no`, say).
    pub(crate) fn start_keeping(settings: &[&str]) -> Option<Self> {
        Self::start_serving(false, settings)
    }

    /// A replica of `primary`, keeping nothing on disk of its own.
    pub(crate) fn replica_of(primary: &OwnRedis) -> Option<Self> {
        let port = primary.port.to_string();
        Self::start_serving(false, &["--appendonly", "no", "--replicaof", "127.0.0.1", &port])
    }

    fn start_serving(tls: bool, settings: &[&str]) -> Option<Self> {
        if std::process::Command::new("redis-server").arg("--version").output().is_err() {
            eprintln!("SKIPPED: the Redis fault test needs `redis-server` on PATH (`.ci/run` installs it)");
            return None;
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let dir = crate::common::scratch_dir("redis");
        let settings = settings.iter().map(|s| s.to_string()).collect();
        let redis = Self { port, dir, tls, settings };
        redis.run();
        Some(redis)
    }

    /// Starts it (again, after [`OwnRedis::stop`]: on the same port and data).
    pub(crate) fn run(&self) {
        let port = self.port.to_string();
        let ports: Vec<String> = if self.tls {
            ["--port", "0", "--tls-port", &port, "--tls-auth-clients", "no"]
                .into_iter()
                .map(String::from)
                .chain(
                    ["cert-file", "key-file", "ca-cert-file"]
                        .iter()
                        .zip(["redis.pem", "redis.key", "ca.pem"])
                        .flat_map(|(flag, file)| [format!("--tls-{flag}"), format!("{TLS_FIXTURES}/{file}")]),
                )
                .collect()
        } else {
            vec!["--port".into(), port]
        };
        let status = std::process::Command::new("redis-server")
            .args(&ports)
            .args(["--bind", "127.0.0.1", "--save", ""])
            .args(&self.settings)
            .args(["--daemonize", "yes", "--dir", self.dir.to_str().unwrap(), "--dbfilename", "dump.rdb"])
            .status()
            .unwrap();
        assert!(status.success());
        for _ in 0..100 {
            if self.cli(&["ping"]) {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        panic!("redis-server did not start");
    }

    /// Stops it, writing its data first, as a maintenance restart would.
    pub(crate) fn stop(&self) {
        assert!(self.cli(&["shutdown", "save"]) || !self.cli(&["ping"]));
    }

    /// Stops it at once, writing nothing more: as Redis stops before a restore.
    pub(crate) fn halt(&self) {
        assert!(self.cli(&["shutdown", "nosave"]) || !self.cli(&["ping"]));
    }

    /// A copy of its append-only files as they are now, as an operator's backup takes it
    /// (each write is synced before Redis answers it: the files hold every write so far).
    pub(crate) fn backup(&self) -> std::path::PathBuf {
        let backup = crate::common::scratch_dir("redis-backup");
        copy_files(&self.dir.join("appendonlydir"), &backup);
        backup
    }

    /// Puts `backup`'s append-only files in place of its own (it must be stopped): what
    /// it loads when it starts again.
    pub(crate) fn restore(&self, backup: &std::path::Path) {
        let files = self.dir.join("appendonlydir");
        std::fs::remove_dir_all(&files).unwrap();
        std::fs::create_dir_all(&files).unwrap();
        copy_files(backup, &files);
    }

    /// What `redis-cli` prints for `args`.
    pub(crate) fn ask(&self, args: &[&str]) -> String {
        let out = std::process::Command::new("redis-cli").args(["-p", &self.port.to_string()]).args(args).output();
        String::from_utf8_lossy(&out.expect("redis-cli runs").stdout).trim().to_string()
    }

    pub(crate) fn cli(&self, args: &[&str]) -> bool {
        let tls: &[String] =
            if self.tls { &["--tls".into(), "--cacert".into(), format!("{TLS_FIXTURES}/ca.pem")] } else { &[] };
        std::process::Command::new("redis-cli")
            .args(["-p", &self.port.to_string()])
            .args(tls)
            .args(args)
            .output()
            .is_ok_and(|out| out.status.success() && !String::from_utf8_lossy(&out.stdout).contains("ERR"))
    }

    pub(crate) fn url(&self) -> String {
        let scheme = if self.tls { "rediss" } else { "redis" };
        format!("{scheme}://127.0.0.1:{}/0", self.port)
    }
}

/// Copies the files of directory `from` into `to`.
fn copy_files(from: &std::path::Path, to: &std::path::Path) {
    for file in std::fs::read_dir(from).unwrap() {
        let file = file.unwrap();
        std::fs::copy(file.path(), to.join(file.file_name())).unwrap();
    }
}

impl Drop for OwnRedis {
    fn drop(&mut self) {
        let _ = self.cli(&["shutdown", "nosave"]);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
