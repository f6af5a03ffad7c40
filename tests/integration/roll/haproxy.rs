//! HAProxy as the test's child: the configuration committed in `deploy/haproxy.cfg`, with
//! the test's own loopback ports for its `bind` and `server` lines, run in the foreground.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::process::{Child, Command};

use crate::faults::client::SERVED_BY;

/// The committed configuration.
const COMMITTED: &str = include_str!("../../../deploy/haproxy.cfg");

/// The HAProxy binary Debian installs (`.ci/run` installs it if missing).
const HAPROXY: &str = "/usr/sbin/haproxy";

/// A running HAProxy, killed when dropped; its log (abnormal requests only) in `log`.
pub(super) struct Haproxy {
    _child: Child,
    pub(super) port: u16,
    log: std::path::PathBuf,
}

/// The name HAProxy gives replica `n`, which it sends back in [`SERVED_BY`].
pub(super) fn server_name(replica: usize) -> String {
    format!("toolgate-{replica}")
}

/// The committed configuration, listening on `port`, sending to replicas on `replicas`, and
/// naming in [`SERVED_BY`] the replica that answered; with `retry_on` for its `retry-on`
/// when given (to see what the committed one saves).
pub(super) fn configuration(port: u16, replicas: &[u16], retry_on: Option<&str>) -> String {
    let mut lines: Vec<String> = (COMMITTED.lines())
        .filter(|line| !line.trim_start().starts_with("server "))
        .map(|line| {
            let setting = line.trim_start();
            if setting.starts_with("bind ") {
                format!("    bind 127.0.0.1:{port}")
            } else if let (true, Some(retry_on)) = (setting.starts_with("retry-on "), retry_on) {
                format!("    retry-on {retry_on}")
            } else {
                line.to_string()
            }
        })
        .collect();
    // The backend is the file's last section: what follows is in it.
    assert!(
        lines.iter().rev().find(|l| !l.starts_with(' ') && !l.is_empty()).is_some_and(|l| l.starts_with("backend "))
    );
    lines.push(format!("    http-response set-header {SERVED_BY} %s"));
    for (replica, server) in replicas.iter().enumerate() {
        lines.push(format!("    server {} 127.0.0.1:{server} check", server_name(replica)));
    }
    lines.join("\n") + "\n"
}

impl Haproxy {
    /// Starts HAProxy with [`configuration`] in `dir`; `None` (saying so) where it is not
    /// installed.
    pub(super) async fn start(dir: &Path, replicas: &[u16], retry_on: Option<&str>) -> Option<Self> {
        if !Path::new(HAPROXY).exists() {
            eprintln!("SKIPPED: the rolling restart needs HAProxy ({HAPROXY}; `.ci/run` installs it)");
            return None;
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let config = dir.join("haproxy.cfg");
        std::fs::write(&config, configuration(port, replicas, retry_on)).unwrap();
        let log = dir.join("haproxy.log");
        let out = std::fs::File::create(&log).unwrap();
        let child = Command::new(HAPROXY)
            .args(["-db", "-f", config.to_str().unwrap()])
            .stdin(Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .kill_on_drop(true)
            .spawn()
            .expect("HAProxy starts");
        for _ in 0..100 {
            if tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_ok() {
                // Its first checks (300 ms apart) find every replica ready.
                tokio::time::sleep(Duration::from_millis(700)).await;
                return Some(Self { _child: child, port, log });
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("HAProxy did not listen; its log: {}", std::fs::read_to_string(&log).unwrap_or_default());
    }

    /// The MCP endpoint through it.
    pub(super) fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    /// Its log's lines about requests (what it logged as abnormal), and about the replicas
    /// going down and up.
    pub(super) fn log(&self) -> Vec<String> {
        std::fs::read_to_string(&self.log).unwrap_or_default().lines().map(String::from).collect()
    }
}

#[test]
fn the_committed_configuration_gets_the_tests_ports() {
    let config = configuration(9000, &[9001, 9002, 9003], None);
    assert!(config.contains("    bind 127.0.0.1:9000\n"), "{config}");
    assert!(config.ends_with("    server toolgate-2 127.0.0.1:9003 check\n"), "{config}");
    assert!(!config.contains(":8081"), "{config}");
    assert!(config.contains("option httpchk GET /readyz") && config.contains("inter 300ms fall 1 rise 2 maxconn 200"));
    assert!(config.contains("    retry-on conn-failure empty-response\n"), "{config}");
    let config = configuration(9000, &[9001], Some("conn-failure"));
    assert!(config.contains("    retry-on conn-failure\n") && !config.contains("empty-response"), "{config}");
}
