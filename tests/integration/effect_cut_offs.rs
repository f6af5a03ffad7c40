//! Effects whose attempts are cut off by kill -9, on the travel example with its SQLite
//! file: each attempt a stopped process leaves claimed is recorded as cut off, with when it
//! was claimed and its deadline; cut-offs do not use up the effect's attempts, so a release
//! cut off five times is still made; and an effect cut off as often as `--effect-cut-offs`
//! allows is dead-lettered saying why. What the operator sees is read from the console
//! (`/api/instance`).

use std::time::Duration;

use serde_json::{Value, json};
use tokio::process::Child;

use crate::common::TestClient;
use crate::common::clients::Lifecycle;
use crate::common::spawn_http_example;

const OPERATOR: &str = "cut-off-operator-token-00000000001";
const TRAVELLER: &str = "cut-off-traveller-token-0000000002";
/// How long the carrier takes to answer a release, so that a kill lands during an attempt;
/// within `--effect-timeout`, so that an attempt left to run is made.
const CARRIER_MS: &str = "1500";

/// One travel server after another on one SQLite file, each killed with SIGKILL.
struct Servers {
    dir: std::path::PathBuf,
    args: Vec<String>,
    console: String,
    holds: std::path::PathBuf,
    running: Option<Child>,
}

impl Servers {
    /// Files for a run in a scratch directory; `extra` are more arguments for each server.
    fn new(what: &str, extra: &[&str]) -> Self {
        let dir = crate::common::scratch_dir(what);
        let tokens = dir.join("tokens.toml");
        let file = format!(
            "[[token]]\nsecret = \"{OPERATOR}\"\nprincipal = \"olga\"\nscopes = [\"toolgate:operator\", \"travel:agent\"]\n\n\
             [[token]]\nsecret = \"{TRAVELLER}\"\nprincipal = \"traveller\"\nscopes = [\"travel:book\"]\n"
        );
        std::fs::write(&tokens, file).unwrap();
        let console = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().to_string();
        let holds = dir.join("holds.jsonl");
        let path = |name: &str| dir.join(name).to_str().unwrap().to_string();
        let mut args: Vec<String> = [
            "--store",
            &format!("sqlite:{}", path("travel.db")),
            "--tokens",
            &path("tokens.toml"),
            "--console",
            &console,
            "--holds-log",
            &path("holds.jsonl"),
            "--otp-outbox",
            &path("otp.jsonl"),
            "--after",
            "quoted=1s",
            "--effect-timeout",
            "3",
        ]
        .map(str::to_string)
        .to_vec();
        args.extend(extra.iter().map(|arg| arg.to_string()));
        Self { dir, args, console: format!("http://{console}"), holds, running: None }
    }

    /// Starts a server (the carrier slow); returns its MCP endpoint.
    async fn start(&mut self) -> String {
        let args: Vec<&str> = self.args.iter().map(String::as_str).collect();
        let env = [
            ("TOOLGATE_HANDLE_KEY", "effect-cut-offs-handle-key-000000000001"),
            ("TRAVEL_TEST_RELEASE_DELAY_MS", CARRIER_MS),
        ];
        let (child, url) = spawn_http_example("travel", &args, &env).await;
        self.running = Some(child);
        url
    }

    /// kill -9 the running server, and waits until it is gone.
    async fn kill(&mut self) {
        let mut child = self.running.take().expect("a server running");
        child.kill().await.unwrap();
    }

    /// The attempts of `quote`'s release the carrier was asked for (noted before it
    /// answers), in order.
    fn asked(&self, quote: &str) -> Vec<u64> {
        let text = std::fs::read_to_string(self.holds.with_extension("asked")).unwrap_or_default();
        text.lines()
            .map(|line| serde_json::from_str::<Value>(line).unwrap())
            .filter(|line| line["quote"] == quote)
            .map(|line| line["attempt"].as_u64().unwrap())
            .collect()
    }

    /// The releases of `quote` the carrier made (answered), as it logged them.
    fn released(&self, quote: &str) -> Vec<Value> {
        let text = std::fs::read_to_string(&self.holds).unwrap_or_default();
        text.lines().map(|line| serde_json::from_str::<Value>(line).unwrap()).filter(|l| l["quote"] == quote).collect()
    }

    /// Waits (up to 15 s) until the carrier is asked for attempt `attempt` of `quote`'s release.
    async fn until_asked(&self, quote: &str, attempt: u64) {
        for _ in 0..150 {
            if self.asked(quote).contains(&attempt) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("attempt {attempt} of the release was never made; the carrier was asked for {:?}", self.asked(quote));
    }

    /// `quote` as the console shows it to the operator (a travel agent: it sees every
    /// traveller's quotes): its `effects` pending and its `dead_effects`.
    async fn instance(&self, quote: &str) -> Value {
        let url = format!("{}/api/instance?machine=bus&key={quote}", self.console);
        let answer = reqwest::Client::new().get(url).bearer_auth(OPERATOR).send().await.unwrap();
        answer.json().await.unwrap()
    }

    /// Waits (up to 10 s) until the console shows `quote` as `matches` says.
    async fn until_shown(&self, quote: &str, matches: impl Fn(&Value) -> bool) -> Value {
        let mut instance = Value::Null;
        for _ in 0..100 {
            instance = self.instance(quote).await;
            if matches(&instance) {
                return instance;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("the console never showed what was expected: {instance}");
    }
}

impl Drop for Servers {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Starts the first server and makes a bus quote there, which expires a second later:
/// its `release_hold` is dispatched, and the carrier is slow to answer it.
async fn a_lapsing_quote(servers: &mut Servers) -> String {
    let url = servers.start().await;
    let client = TestClient::http_as(&url, Lifecycle::Session, Some(TRAVELLER)).await;
    client.ok("switch_domain", json!({ "domain": "bus", "reason": "the user asked for a bus" })).await;
    let search = json!({
        "domain": "bus", "origin": "Madrid", "destination": "Valencia",
        "departure": "2026-12-04T08:00:00+01:00", "passengers": 2,
    });
    let found = client.ok("bus_search", search).await;
    found["quote_id"].as_str().unwrap().to_string()
}

/// Kills the server during each of the first `kills` attempts at `quote`'s release, and
/// starts the next one each time.
async fn kill_during_attempts(servers: &mut Servers, quote: &str, kills: u64) {
    for attempt in 1..=kills {
        servers.until_asked(quote, attempt).await;
        servers.kill().await;
        assert!(servers.released(quote).is_empty(), "released before the kill: {:?}", servers.released(quote));
        servers.start().await;
    }
}

/// Five kill -9s during a release's attempts (issue 53: it was dead-lettered with no error,
/// the seats never released). Each cut-off is recorded with its reason and does not use up
/// the release's attempts: after the fifth, the sixth attempt runs, the console showing it
/// pending with five attempts cut off and why the last was; it is made once, and the
/// effect leaves the outbox.
#[tokio::test]
async fn a_release_cut_off_five_times_by_kill_9_is_recorded_and_still_made() {
    let mut servers = Servers::new("effect-cut-offs", &[]);
    let quote = a_lapsing_quote(&mut servers).await;
    kill_during_attempts(&mut servers, &quote, 5).await;

    servers.until_asked(&quote, 6).await;
    let shown = servers.until_shown(&quote, |instance| instance["effects"][0]["cut_offs"] == 5).await;
    let release = &shown["effects"][0];
    assert_eq!((release["effect"].as_str(), release["attempts"].as_u64()), (Some("release_hold"), Some(6)), "{shown}");
    let why = release["reason"].as_str().unwrap_or_else(|| panic!("no reason: {shown}"));
    assert!(
        why.starts_with(
            "attempt 5 was cut off: the process running it stopped (or lost the store) before it ended (claimed at 20"
        ),
        "{why}"
    );
    assert!(why.contains(", deadline 20"), "{why}");

    // The sixth attempt is answered: the seats are released once, and nothing is left.
    let done = |instance: &Value| instance["effects"] == json!([]) && instance["dead_effects"] == json!([]);
    servers.until_shown(&quote, done).await;
    let released = servers.released(&quote);
    assert_eq!(released.len(), 1, "{released:?}");
    assert_eq!((released[0]["attempt"].as_u64(), released[0]["repeat"].as_bool()), (Some(6), Some(false)));
}

/// An effect cut off as often as `--effect-cut-offs` allows — here two, as an effect that
/// stopped its process on every attempt would be — is dead-lettered: the console shows it
/// `dead` with the reason, and it is not tried again.
#[tokio::test]
async fn an_effect_cut_off_as_often_as_allowed_is_dead_lettered_with_the_reason() {
    let mut servers = Servers::new("effect-cut-offs-dead", &["--effect-cut-offs", "2"]);
    let quote = a_lapsing_quote(&mut servers).await;
    kill_during_attempts(&mut servers, &quote, 2).await;

    let shown = servers.until_shown(&quote, |instance| instance["dead_effects"][0].is_object()).await;
    assert_eq!(shown["effects"], json!([]), "{shown}");
    let release = &shown["dead_effects"][0];
    assert_eq!((release["attempts"].as_u64(), release["cut_offs"].as_u64()), (Some(2), Some(2)), "{shown}");
    let why = release["reason"].as_str().unwrap_or_else(|| panic!("dead with no reason: {shown}"));
    assert!(why.starts_with("attempt 2 was cut off: the process running it stopped"), "{why}");
    assert!(
        why.ends_with("; 2 of its attempts were cut off, the most allowed: an effect whose attempts keep stopping the process that runs them is not tried again"),
        "{why}"
    );
    tokio::time::sleep(Duration::from_millis(3_000)).await;
    assert_eq!(servers.asked(&quote), [1, 2], "tried after it was dead-lettered");
    assert!(servers.released(&quote).is_empty());
}
