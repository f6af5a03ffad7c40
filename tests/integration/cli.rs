//! The command line of a toolgate server, through the invoice example's binary: `serve` (the
//! default, its options without the word), and `describe`, `export --xstate` and `audit`,
//! which print what the server is without serving it or opening its store. A wrong command
//! line is a usage error with a failure status.
//!
//! Run `cargo build --workspace --examples` before `cargo test -p toolgate --test integration cli::` (see
//! [`common::example_binary`]).

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use crate::common::{PATIENCE, TestClient, spawn_http_example};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

/// A directory of its own for one run, removed at the end: where a server that opened its
/// default store would leave `invoice.db`.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Self {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
        let path = std::env::temp_dir().join(format!("toolgate-cli-{name}-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&path).expect("create a scratch directory");
        Self(path)
    }

    /// The names of the files in it.
    fn files(&self) -> Vec<String> {
        let entries = std::fs::read_dir(&self.0).expect("read the scratch directory");
        entries.map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned()).collect()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs the invoice example with `args` in `dir` (stdin closed) until it exits.
async fn invoice_in(dir: &Path, args: &[&str]) -> Output {
    let run = Command::new(common::example_binary("invoice"))
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    tokio::time::timeout(PATIENCE, run).await.unwrap_or_else(|_| panic!("`invoice {args:?}` did not exit")).unwrap()
}

/// Runs `invoice ARGS` in a scratch directory, expects success, and returns its stdout;
/// the directory must be as empty afterwards: nothing that prints opens a store.
async fn printed(args: &[&str]) -> String {
    let scratch = Scratch::new(args[0]);
    let output = invoice_in(&scratch.0, args).await;
    let (stdout, stderr) = (String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success(), "`invoice {args:?}`: {}\n{stdout}\n{stderr}", output.status);
    assert_eq!(scratch.files(), Vec::<String>::new(), "`invoice {args:?}` left files behind");
    stdout.into_owned()
}

/// Runs `invoice ARGS`, expects a usage error, and returns its stderr.
async fn refused(args: &[&str]) -> String {
    let scratch = Scratch::new("refused");
    let output = invoice_in(&scratch.0, args).await;
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(!output.status.success(), "`invoice {args:?}` succeeded: {stderr}");
    assert!(output.stdout.is_empty(), "`invoice {args:?}` printed to stdout");
    assert!(stderr.contains("Usage: invoice") && stderr.contains("--help"), "`invoice {args:?}`: {stderr}");
    assert_eq!(scratch.files(), Vec::<String>::new(), "`invoice {args:?}` left files behind");
    stderr
}

fn json_of(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

#[tokio::test]
async fn describe_draws_the_machines_as_mermaid_by_default() {
    let mermaid = printed(&["describe", "--format", "mermaid"]).await;
    assert!(mermaid.contains("stateDiagram-v2") && mermaid.contains("invoice_submit"), "{mermaid}");
    assert_eq!(printed(&["describe"]).await, mermaid);
}

#[tokio::test]
async fn describe_draws_dot_and_json_and_svg() {
    let dot = printed(&["describe", "--format", "dot"]).await;
    assert!(dot.contains("digraph"), "{dot}");
    let description = json_of(&printed(&["describe", "--format", "json"]).await);
    assert!(description["machines"].is_array(), "{description}");
    assert!(description["machines"].as_array().unwrap().iter().any(|m| m["id"] == "invoice"), "{description}");
    let svg = printed(&["describe", "--format", "svg"]).await;
    assert!(svg.contains("<svg"), "{svg}");
}

#[tokio::test]
async fn export_prints_the_machines_as_xstate() {
    let machines = json_of(&printed(&["export", "--xstate"]).await);
    assert_eq!(machines["invoice"]["initial"], "draft", "{machines}");
    assert_eq!(machines["invoice"]["id"], "invoice", "{machines}");
}

/// The report's shape only: whether the examples pass is the rules' business, not the
/// command line's.
#[tokio::test]
async fn audit_prints_its_findings_and_fails_only_with_them() {
    let scratch = Scratch::new("audit");
    let output = invoice_in(&scratch.0, &["audit", "--format", "json"]).await;
    let report = json_of(&String::from_utf8_lossy(&output.stdout));
    let passed = report["passed"].as_bool().unwrap_or_else(|| panic!("no boolean `passed`: {report}"));
    assert_eq!(output.status.success(), passed, "the status follows the report: {report}");
    if !passed {
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("the audit found"), "{stderr}");
    }
    let table = invoice_in(&scratch.0, &["audit"]).await;
    assert!(String::from_utf8_lossy(&table.stdout).contains("invoice_submit"));
    assert_eq!(table.status.success(), passed);
    assert_eq!(scratch.files(), Vec::<String>::new(), "`audit` left files behind");
}

#[tokio::test]
async fn help_lists_the_commands_and_serves_options() {
    for args in [&["--help"][..], &["-h"], &["help"]] {
        let help = printed(args).await;
        let expected = ["describe", "export", "audit", "redis-restored", "serve", "--http <ADDR>", "--stateless"];
        for expected in expected.into_iter().chain(["--store <STORE>"]) {
            assert!(help.contains(expected), "`invoice {args:?}` lacks {expected}: {help}");
        }
    }
    let serve = printed(&["serve", "--help"]).await;
    assert!(serve.contains("Usage: invoice serve") && serve.contains("--client-rate-limit"), "{serve}");
    let describe = printed(&["describe", "--help"]).await;
    assert!(describe.contains("mermaid") && describe.contains("svg"), "{describe}");
    assert!(printed(&["export", "--help"]).await.contains("--xstate"));
    assert!(printed(&["audit", "--help"]).await.contains("table"));
    assert!(printed(&["redis-restored", "--help"]).await.contains("--mint-margin <N>"));
}

#[tokio::test]
async fn wrong_command_lines_are_usage_errors() {
    assert!(refused(&["frobnicate"]).await.contains("unrecognized subcommand 'frobnicate'"));
    assert!(refused(&["--frobnicate"]).await.contains("unexpected argument '--frobnicate'"));
    assert!(refused(&["describe", "--frobnicate"]).await.contains("unexpected argument '--frobnicate'"));
    assert!(refused(&["describe", "--format", "png"]).await.contains("invalid value 'png'"));
    assert!(refused(&["audit", "--format", "yaml"]).await.contains("invalid value 'yaml'"));
    let export = refused(&["export"]).await;
    assert!(export.contains("required") && export.contains("--xstate"), "{export}");
    assert!(refused(&["--stateless"]).await.contains("`--stateless` needs `--http ADDR`"));
    assert!(refused(&["serve", "--handle-ttl", "5m"]).await.contains("not a duration above 0"));
    assert!(refused(&["--store", "memory", "describe"]).await.contains("'describe' cannot be used with"));
    // Checked once the command line is read, still a usage error.
    assert!(refused(&["--store", "nowhere"]).await.contains("a store is `sqlite:PATH`"));
    let restored = refused(&["redis-restored", "--store", "memory"]).await;
    assert!(restored.contains("`redis-restored` needs the restored Redis: `--store redis://"), "{restored}");
    assert!(refused(&["redis-restored", "--mint-margin", "0"]).await.contains("invalid value '0'"));
}

/// Today's invocation, unchanged: `invoice --http ADDR --store memory` serves.
#[tokio::test]
async fn serve_is_the_default_command() {
    let (_server, url) = spawn_http_example("invoice", &[], &[]).await;
    let client = TestClient::sessionless(&url).await;
    assert_eq!(client.ok("invoice_submit", json!({ "domain": "invoice", "id": "INV-1" })).await["state"], "review");
}

#[tokio::test]
async fn serve_by_name_serves_http_and_stdio() {
    let mut server = Command::new(common::example_binary("invoice"))
        .args(["serve", "--http", "127.0.0.1:0", "--stateless", "--store", "memory"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn the example");
    let mut lines = BufReader::new(server.stderr.take().unwrap()).lines();
    let url = tokio::time::timeout(PATIENCE, async {
        while let Some(line) = lines.next_line().await.expect("read stderr") {
            if let Some(rest) = line.split("serving Streamable HTTP at ").nth(1) {
                assert!(rest.ends_with(" (sessionless)"), "{line}");
                return rest.split_whitespace().next().unwrap().to_string();
            }
        }
        panic!("the example exited without serving");
    })
    .await
    .expect("the example did not start serving");
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    let client = TestClient::sessionless(&url).await;
    assert_eq!(client.ok("invoice_submit", json!({ "domain": "invoice", "id": "INV-2" })).await["state"], "review");

    let stdio = TestClient::stdio_example_with("invoice", &["serve", "--store", "memory"]).await;
    assert!(stdio.tool_names().await.contains(&"invoice_submit".to_string()));
}

/// `--metrics ADDR` serves Prometheus metrics and `--audit-log PATH` appends each committed
/// transition as a JSON line; a call that moves an invoice shows in both.
#[tokio::test]
async fn metrics_and_the_audit_log_record_a_transition() {
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let metrics_addr = free.local_addr().unwrap();
    drop(free);
    let log = std::env::temp_dir().join(format!("toolgate-audit-{}.jsonl", std::process::id()));
    let _ = std::fs::remove_file(&log);
    let (_server, url) = common::spawn_http_example(
        "invoice",
        &["--metrics", &metrics_addr.to_string(), "--audit-log", log.to_str().unwrap()],
        &[],
    )
    .await;
    let client = common::raw::SessionlessClient::new(&url);
    let (submitted, is_error) =
        client.call("invoice_submit", serde_json::json!({ "domain": "invoice", "id": "INV-7" })).await;
    assert!(!is_error, "{submitted}");

    let line = std::fs::read_to_string(&log).unwrap();
    let record: serde_json::Value = serde_json::from_str(line.lines().next().expect("one line")).unwrap();
    assert_eq!(record["machine"], "invoice", "{record}");
    assert_eq!(record["instance"], "INV-7", "{record}");
    assert_eq!((record["from"].as_str(), record["to"].as_str()), (Some("draft"), Some("review")), "{record}");
    assert_eq!((record["event"].as_str(), record["tool"].as_str()), (Some("SUBMIT"), Some("invoice_submit")));
    assert!(record["call_id"].as_str().is_some_and(|id| id.len() >= 16), "{record}");

    let metrics = reqwest::get(format!("http://{metrics_addr}/metrics")).await.unwrap().text().await.unwrap();
    assert!(metrics.contains(r#"toolgate_transitions_total{machine="invoice",event="SUBMIT"} 1"#), "{metrics}");
    assert!(metrics.contains(r#"toolgate_calls_total{tool="invoice_submit",outcome="ok"} 1"#), "{metrics}");
    let _ = std::fs::remove_file(&log);
}

/// A server that cannot take its address refuses to start before it opens its default
/// store: no `invoice.db` is created, and no lock is held that the next server would find.
#[tokio::test]
async fn a_server_that_cannot_listen_creates_no_store_file() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("take a port");
    let addr = taken.local_addr().unwrap().to_string();
    for args in [["--http", addr.as_str()], ["--metrics", addr.as_str()]] {
        let scratch = Scratch::new("taken");
        let output = invoice_in(&scratch.0, &args).await;
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "`invoice {args:?}` started on a taken address: {stderr}");
        assert_eq!(scratch.files(), Vec::<String>::new(), "`invoice {args:?}` left files behind: {stderr}");
    }
}

/// `--log-format json`: every line on stderr is one JSON object — the banner too — and a
/// call ends with its `tool_call` line: its tool, outcome and latency.
#[tokio::test]
async fn json_logs_are_one_object_a_line_and_name_each_call() {
    let mut server = Command::new(common::example_binary("invoice"))
        .args(["--http", "127.0.0.1:0", "--stateless", "--store", "memory", "--log-format", "json"])
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn the example");
    let mut lines = BufReader::new(server.stderr.take().unwrap()).lines();
    let mut next_object = async || {
        let line = lines.next_line().await.expect("read stderr").expect("the example exited");
        serde_json::from_str::<Value>(&line).unwrap_or_else(|_| panic!("not a JSON object: {line}"))
    };
    let url = tokio::time::timeout(PATIENCE, async {
        loop {
            let object = next_object().await;
            let message = object["fields"]["message"].as_str().unwrap_or_default().to_string();
            if let Some(rest) = message.strip_prefix("serving Streamable HTTP at ") {
                return rest.split_whitespace().next().unwrap().to_string();
            }
        }
    })
    .await
    .expect("the example did not start serving");
    let client = TestClient::sessionless(&url).await;
    assert_eq!(client.ok("invoice_submit", json!({ "domain": "invoice", "id": "INV-3" })).await["state"], "review");
    let call = tokio::time::timeout(PATIENCE, async {
        loop {
            let object = next_object().await;
            if object["span"]["name"] == "tool_call" && object["fields"]["message"] == "close" {
                return object;
            }
        }
    })
    .await
    .expect("no tool_call line");
    let span = &call["span"];
    assert_eq!((span["tool"].as_str(), span["outcome"].as_str()), (Some("invoice_submit"), Some("ok")), "{call}");
    assert!(span["latency_ms"].is_number(), "{call}");
}
