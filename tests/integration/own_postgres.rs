//! A Postgres of a test's own (`initdb`/`pg_ctl` on PATH or under `/usr/lib/postgresql`;
//! `.ci/run` installs them): a cluster in a temporary directory on a free loopback port,
//! which the test can crash and start again (`pg_ctl stop -m immediate`, then recovery from
//! its write-ahead log) without touching the Postgres the other tests share.

use std::path::PathBuf;
use std::process::Command;

/// A Postgres cluster of this test's own.
pub(crate) struct OwnPostgres {
    bin: PathBuf,
    dir: PathBuf,
    port: u16,
}

impl OwnPostgres {
    /// Makes and starts a cluster; `None` (saying so) where Postgres is not installed.
    pub(crate) fn start() -> Option<Self> {
        let Some(bin) = postgres_bin() else {
            eprintln!("SKIPPED: needs Postgres's `initdb` and `pg_ctl` (`.ci/run` installs them)");
            return None;
        };
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let dir = crate::common::scratch_dir("postgres");
        let postgres = Self { bin, dir, port };
        if is_root() {
            assert!(
                Command::new("chown").args(["postgres", postgres.dir.to_str().unwrap()]).status().unwrap().success()
            );
        }
        let data = postgres.data();
        let made = postgres.as_owner("initdb", &["-D", &data, "-U", "postgres", "--auth=trust", "-E", "UTF8"]);
        assert!(made.status.success(), "initdb: {}", String::from_utf8_lossy(&made.stderr));
        postgres.run();
        Some(postgres)
    }

    /// Starts it (again, after [`OwnPostgres::crash`]: on the same port and data).
    pub(crate) fn run(&self) {
        let options = format!("-p {} -h 127.0.0.1 -k {} -c max_connections=200", self.port, self.dir.display());
        let log = self.dir.join("postgres.log");
        let started =
            self.as_owner("pg_ctl", &["-D", &self.data(), "-l", log.to_str().unwrap(), "-w", "-o", &options, "start"]);
        assert!(started.status.success(), "pg_ctl start: {}", String::from_utf8_lossy(&started.stderr));
    }

    /// Stops it as a crash would (`-m immediate`: no checkpoint; the next start recovers
    /// from the write-ahead log).
    pub(crate) fn crash(&self) {
        let _ = self.as_owner("pg_ctl", &["-D", &self.data(), "-m", "immediate", "-w", "stop"]);
    }

    pub(crate) fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    fn data(&self) -> String {
        self.dir.join("data").to_str().unwrap().to_string()
    }

    /// Runs `program` of Postgres's as the `postgres` user when this runs as root (Postgres
    /// refuses root).
    fn as_owner(&self, program: &str, args: &[&str]) -> std::process::Output {
        let program = self.bin.join(program);
        let mut command = if is_root() {
            let mut command = Command::new("runuser");
            command.args(["-u", "postgres", "--"]).arg(program);
            command
        } else {
            Command::new(program)
        };
        command.args(args).output().expect("a Postgres program runs")
    }
}

impl Drop for OwnPostgres {
    fn drop(&mut self) {
        self.crash();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The directory holding `initdb` and `pg_ctl`: on PATH, else the newest under
/// `/usr/lib/postgresql`.
fn postgres_bin() -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|path| std::env::split_paths(&path).collect::<Vec<_>>())
        .find(|dir| dir.join("pg_ctl").exists() && dir.join("initdb").exists());
    on_path.or_else(|| {
        let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
            .ok()?
            .filter_map(|entry| Some(entry.ok()?.path().join("bin")))
            .filter(|bin| bin.join("initdb").exists())
            .collect();
        versions.sort();
        versions.pop()
    })
}

fn is_root() -> bool {
    Command::new("id").arg("-u").output().is_ok_and(|out| String::from_utf8_lossy(&out.stdout).trim() == "0")
}
