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
    invoice_with(dir, args, &[]).await
}

/// Runs the invoice example with `args` and the `env` variables in `dir` (stdin closed)
/// until it exits.
async fn invoice_with(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let run = Command::new(common::example_binary("invoice"))
        .args(args)
        .envs(env.iter().copied())
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
    refused_with(args, &[]).await
}

/// Runs `invoice ARGS` with the `env` variables, expects a usage error, and returns its
/// stderr.
async fn refused_with(args: &[&str], env: &[(&str, &str)]) -> String {
    let scratch = Scratch::new("refused");
    let output = invoice_with(&scratch.0, args, env).await;
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
/// call ends with its `tool_call` line: its tool, verdict, code, latency and correlation
/// id, the id an `INTERNAL` error shows the model.
#[tokio::test]
async fn json_logs_are_one_object_a_line_and_name_each_call() {
    let mut server = Command::new(common::example_binary("invoice"))
        .args(["--http", "127.0.0.1:0", "--stateless", "--store", "memory", "--log-format", "json"])
        .env("RUST_LOG", "info")
        .env("INVOICE_TEST_BROKEN_ID", "INV-404404")
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
    assert_eq!((span["tool"].as_str(), span["verdict"].as_str()), (Some("invoice_submit"), Some("ok")), "{call}");
    assert!(span["latency_ms"].is_number(), "{call}");
    let first_id = span["correlation_id"].as_str().unwrap_or_else(|| panic!("no correlation id: {call}")).to_string();
    assert!(first_id.len() == 12 && first_id.bytes().all(|b| b.is_ascii_hexdigit()), "{call}");

    // A call that fails as a bug would: the model sees only a correlation id, and it is
    // the one its log lines carry (the error's own line, and its `tool_call` line).
    let (refusal, is_error) = client.call("invoice_view", json!({ "domain": "invoice", "id": "INV-404404" })).await;
    assert!(is_error, "{refusal}");
    assert_eq!(refusal["code"], "INTERNAL", "{refusal}");
    let id = refusal["correlation_id"].as_str().unwrap_or_else(|| panic!("no correlation id: {refusal}")).to_string();
    assert_ne!(id, first_id, "each call has an id of its own");
    let (error_line, call) = tokio::time::timeout(PATIENCE, async {
        let mut error_line = None;
        loop {
            let object = next_object().await;
            if object["level"] == "ERROR" {
                error_line = Some(object);
            } else if object["span"]["name"] == "tool_call" && object["fields"]["message"] == "close" {
                return (error_line.expect("the error was logged before its call closed"), object);
            }
        }
    })
    .await
    .expect("no tool_call line for the failed call");
    let span = &call["span"];
    assert_eq!(span["tool"], "invoice_view", "{call}");
    assert_eq!((span["verdict"].as_str(), span["code"].as_str()), (Some("failed"), Some("INTERNAL")), "{call}");
    assert_eq!(span["correlation_id"].as_str(), Some(id.as_str()), "the call's line: {call}");
    assert_eq!(error_line["fields"]["correlation_id"].as_str(), Some(id.as_str()), "the error's line: {error_line}");
    assert!(error_line["fields"]["detail"].as_str().is_some_and(|d| d.contains("INV-404404")), "{error_line}");
    assert!(!refusal.to_string().contains("broken"), "the detail reached the model: {refusal}");
}

/// Spawns the example `name` with `args` and only the `env` variables of toolgate's that
/// are given, in `dir`, and waits until it serves Streamable HTTP: the child (killed when
/// dropped), its endpoint, and whether it says it serves without sessions. Its log lines
/// may be text or JSON (`--log-format json`); the banner is read from either.
async fn serving_from(
    name: &str,
    dir: &Path,
    args: &[&str],
    env: &[(&str, &str)],
) -> (tokio::process::Child, String, bool) {
    let mut server = Command::new(common::example_binary(name))
        .args(args)
        .envs(env.iter().copied())
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn the example");
    let mut lines = BufReader::new(server.stderr.take().unwrap()).lines();
    let (url, sessionless) = tokio::time::timeout(PATIENCE, async {
        let mut said = String::new();
        while let Some(line) = lines.next_line().await.expect("read stderr") {
            let message = match line.starts_with('{') {
                true => json_of(&line)["fields"]["message"].as_str().unwrap_or_default().to_string(),
                false => line.clone(),
            };
            if let Some(rest) = message.split("serving Streamable HTTP at ").nth(1) {
                return (rest.split_whitespace().next().unwrap().to_string(), rest.ends_with(" (sessionless)"));
            }
            said.push_str(&line);
            said.push('\n');
        }
        panic!("`{name} {args:?}` exited without serving: {said}");
    })
    .await
    .expect("the example did not start serving");
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (server, url, sessionless)
}

/// `--help` names the variable of each of `serve`'s options (and of `redis-restored`'s),
/// says which wins, and never shows what a variable holds: a secret may be in one.
#[tokio::test]
async fn help_names_the_variable_of_every_option() {
    let scratch = Scratch::new("help-env");
    let secrets =
        [("TOOLGATE_TOKENS", "clerk=s3cret-in-the-environment"), ("TOOLGATE_STORE", "redis://:hunter2@cache/0")];
    for args in [&["--help"][..], &["serve", "--help"], &["-h"]] {
        let output = invoice_with(&scratch.0, args, &secrets).await;
        let help = String::from_utf8_lossy(&output.stdout);
        assert!(output.status.success(), "{help}");
        for variable in [
            "TOOLGATE_HTTP",
            "TOOLGATE_STATELESS",
            "TOOLGATE_MAX_SESSIONS",
            "TOOLGATE_LOG_FORMAT",
            "TOOLGATE_STORE",
            "TOOLGATE_TOKENS",
            "TOOLGATE_TOKENS_FILE",
            "TOOLGATE_JWT_SECRET_FILE",
            "TOOLGATE_HANDLE_KEY_FILE",
            "TOOLGATE_ALLOWED_HOST",
            "TOOLGATE_AFTER",
        ] {
            assert!(help.contains(&format!("[env: {variable}]")), "`invoice {args:?}` lacks {variable}: {help}");
        }
        // Every option but `--help` names its variable.
        let mut options: Vec<String> = Vec::new();
        for line in help.lines() {
            let indent = line.len() - line.trim_start().len();
            match options.last_mut() {
                _ if (1..=6).contains(&indent) && line.trim_start().starts_with('-') => options.push(line.into()),
                Some(option) if indent > 6 => option.push_str(line),
                _ => {}
            }
        }
        assert!(options.len() > 30, "{help}");
        for option in options.iter().filter(|option| !option.contains("--help")) {
            assert!(option.contains("[env: TOOLGATE_"), "`invoice {args:?}`: no variable for {option}");
        }
        assert!(help.contains("the option wins over its variable"), "{help}");
        assert!(!help.contains("s3cret") && !help.contains("hunter2"), "a variable's value is shown: {help}");
    }
    let restored = printed(&["redis-restored", "--help"]).await;
    for variable in ["TOOLGATE_STORE", "TOOLGATE_MINT_MARGIN", "TOOLGATE_REDIS_CA", "TOOLGATE_REDIS_VOLATILE"] {
        assert!(restored.contains(&format!("[env: {variable}]")), "{restored}");
    }
}

/// A container's configuration: no option at all, everything from the environment and a
/// mounted file (the tokens), and the server serves a real call as configured.
#[tokio::test]
async fn a_server_configured_only_from_the_environment_serves() {
    let scratch = Scratch::new("env-only");
    let tokens = scratch.0.join("tokens.toml");
    let file =
        "[[token]]\nsecret = \"clerk-token-from-a-file-01\"\nprincipal = \"clerk\"\nscopes = [\"invoices:amend\"]\n";
    std::fs::write(&tokens, file).unwrap();
    let store = format!("sqlite:{}", scratch.0.join("state.db").display());
    let env = [
        ("TOOLGATE_HTTP", "127.0.0.1:0"),
        ("TOOLGATE_STORE", store.as_str()),
        ("TOOLGATE_STATELESS", "true"),
        ("TOOLGATE_TOKENS_FILE", tokens.to_str().unwrap()),
        ("TOOLGATE_REQUIRE_AUTH", "1"),
        ("TOOLGATE_LOG_FORMAT", "json"),
        ("TOOLGATE_MAX_CONTEXT", "4096"),
        // Set to nothing, as a compose file unsets one: not read.
        ("TOOLGATE_ALLOWED_ORIGIN", ""),
        ("TOOLGATE_MAX_SESSIONS", ""),
    ];
    let (_server, url, sessionless) = serving_from("invoice", &scratch.0, &[], &env).await;
    assert!(sessionless, "TOOLGATE_STATELESS=true is `--stateless`");
    let client = common::raw::SessionlessClient::new(&url);
    let bearer = [("Authorization", "Bearer clerk-token-from-a-file-01")];
    let submitted = client.call_with_headers("invoice_submit", json!({ "domain": "invoice", "id": "INV-8" }), &bearer);
    let result = submitted.await.result();
    assert_eq!(result["structuredContent"]["state"], "review", "{result}");
    let anonymous = client.call_with_headers("invoice_view", json!({ "domain": "invoice", "id": "INV-8" }), &[]).await;
    assert_eq!(anonymous.status, 401, "TOOLGATE_REQUIRE_AUTH=1 is `--require-auth`: {}", anonymous.body);
    assert!(scratch.files().contains(&"state.db".to_string()), "TOOLGATE_STORE names the store: {:?}", scratch.files());
}

/// A switch's variable: `true`, `1`, `yes`, `on` set it, `false`, `0`, `no`, `off` do not,
/// in any case; anything else is a usage error naming the variable.
#[tokio::test]
async fn a_switch_variable_is_true_or_false() {
    let scratch = Scratch::new("switch");
    for (value, meant) in [("true", true), ("1", true), ("On", true), ("false", false), ("0", false), ("no", false)] {
        let env = [("TOOLGATE_HTTP", "127.0.0.1:0"), ("TOOLGATE_STORE", "memory"), ("TOOLGATE_STATELESS", value)];
        let (_server, _, sessionless) = serving_from("invoice", &scratch.0, &[], &env).await;
        assert_eq!(sessionless, meant, "TOOLGATE_STATELESS={value}");
    }
    let error = refused_with(&[], &[("TOOLGATE_HTTP", "127.0.0.1:0"), ("TOOLGATE_STATELESS", "maybe")]).await;
    assert!(error.contains("TOOLGATE_STATELESS") && error.contains("'maybe'"), "{error}");
    // Set from the environment, a switch that needs `--http` says where it came from.
    let error = refused_with(&[], &[("TOOLGATE_STATELESS", "1")]).await;
    assert!(error.contains("TOOLGATE_STATELESS") && error.contains("needs `--http ADDR`"), "{error}");
}

/// A bad variable is a usage error that names it, and never quotes a secret.
#[tokio::test]
async fn a_bad_variable_is_a_usage_error_naming_it() {
    let http = ("TOOLGATE_HTTP", "127.0.0.1:0");
    for (variable, value, expected) in [
        ("TOOLGATE_HTTP", "localhost", "not a socket address"),
        ("TOOLGATE_MAX_SESSIONS", "lots", "not a whole number"),
        ("TOOLGATE_LOG_FORMAT", "xml", "'xml'"),
        ("TOOLGATE_HANDLE_TTL", "5m", "not a duration"),
        ("TOOLGATE_AFTER", "quoted=2s,nowhere", "STATE=DURATION"),
        ("TOOLGATE_STORE", "nowhere", "a store is `sqlite:PATH`"),
    ] {
        let env = [http, (variable, value)];
        let error = refused_with(&[], if variable == "TOOLGATE_HTTP" { &env[1..] } else { &env }).await;
        assert!(error.contains(variable) && error.contains(expected), "{variable}={value}: {error}");
    }
    let error = refused_with(&[], &[http, ("TOOLGATE_TOKENS", "clerk=ok-secret-0001,s3cret-alone")]).await;
    assert!(error.contains("TOOLGATE_TOKENS") && error.contains("PRINCIPAL=SECRET"), "{error}");
    assert!(!error.contains("s3cret") && !error.contains("ok-secret"), "a secret is quoted: {error}");
    let scratch = Scratch::new("two-keys");
    let key_file = scratch.0.join("handle.key");
    std::fs::write(&key_file, "a-handle-key-of-32-bytes-or-more-0001\n").unwrap();
    let both = [
        http,
        ("TOOLGATE_HANDLE_KEY", "a-handle-key-of-32-bytes-or-more-0002"),
        ("TOOLGATE_HANDLE_KEY_FILE", key_file.to_str().unwrap()),
    ];
    let error = refused_with(&[], &both).await;
    assert!(error.contains("TOOLGATE_HANDLE_KEY_FILE") && error.contains("TOOLGATE_HANDLE_KEY "), "{error}");
    // The keys' own text, not a bare "0001": the scratch directory's random name quoted in
    // the message may hold that (it did once).
    assert!(!error.contains("or-more-0001") && !error.contains("or-more-0002"), "a secret is quoted: {error}");
}

/// Flag over environment over default: an option given wins over its variable, which is
/// then not even read; a repeated option's variable is a comma-separated list.
#[tokio::test]
async fn an_option_wins_over_its_variable() {
    let scratch = Scratch::new("precedence");
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let taken = taken.local_addr().unwrap().to_string();
    let env_store = format!("sqlite:{}", scratch.0.join("from-env.db").display());
    let env = [
        ("TOOLGATE_HTTP", taken.as_str()),
        ("TOOLGATE_STORE", env_store.as_str()),
        ("TOOLGATE_MAX_SESSIONS", "not-even-read"),
        ("TOOLGATE_TOKENS", "env=env-token-0123456789,other=other-token-0123456789"),
        ("TOOLGATE_REQUIRE_AUTH", "true"),
    ];
    let args =
        ["--http", "127.0.0.1:0", "--store", "memory", "--max-sessions", "5", "--token", "flag=flag-token-0123456789"];
    let (_server, url, _) = serving_from("invoice", &scratch.0, &args, &env).await;
    let client = common::raw::SessionlessClient::new(&url);
    let view = json!({ "domain": "invoice", "id": "INV-9" });
    let by_flag =
        client.call_with_headers("invoice_view", view.clone(), &[("Authorization", "Bearer flag-token-0123456789")]);
    assert_eq!(by_flag.await.status, 200);
    let by_env =
        client.call_with_headers("invoice_view", view.clone(), &[("Authorization", "Bearer env-token-0123456789")]);
    assert_eq!(by_env.await.status, 401, "TOOLGATE_TOKENS is read only without `--token`");
    assert_eq!(scratch.files(), Vec::<String>::new(), "`--store memory` won over TOOLGATE_STORE");

    // Without the flags, the list in the variable: each of its tokens.
    let env = [("TOOLGATE_HTTP", "127.0.0.1:0"), ("TOOLGATE_STORE", "memory"), env[3], env[4]];
    let (_server, url, _) = serving_from("invoice", &scratch.0, &[], &env).await;
    let client = common::raw::SessionlessClient::new(&url);
    for token in ["env-token-0123456789", "other-token-0123456789"] {
        let bearer = format!("Bearer {token}");
        assert_eq!(
            client.call_with_headers("invoice_view", view.clone(), &[("Authorization", &bearer)]).await.status,
            200
        );
    }
}

/// Secrets from mounted files: the handle key in `TOOLGATE_HANDLE_KEY_FILE`, whose trailing
/// newline is not part of the key. A handle the server signed with the file's key is
/// honoured after a restart that takes the key from `TOOLGATE_HANDLE_KEY`, without it; and
/// a key short of 32 bytes once its newline is dropped is refused, without quoting it.
#[tokio::test]
async fn a_secret_file_gives_the_handle_key_without_its_newline() {
    let scratch = Scratch::new("key-file");
    let key = "travel-handle-key-from-a-file-000001";
    let key_file = scratch.0.join("handle.key");
    std::fs::write(&key_file, format!("{key}\n")).unwrap();
    let store = format!("sqlite:{}", scratch.0.join("travel.db").display());
    let env = |key: (&'static str, String)| {
        vec![
            ("TOOLGATE_HTTP", "127.0.0.1:0".to_string()),
            ("TOOLGATE_STORE", store.clone()),
            ("TOOLGATE_STATELESS", "true".to_string()),
            ("TOOLGATE_TOKENS", "traveller=traveller-token-0123456789".to_string()),
            key,
        ]
    };
    let spawn = |env: Vec<(&'static str, String)>| {
        let dir = scratch.0.clone();
        async move {
            let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
            serving_from("travel", &dir, &[], &env).await
        }
    };
    let bearer = [("Authorization", "Bearer traveller-token-0123456789")];
    let switch = json!({ "domain": "bus", "reason": "the user wants a bus" });
    let (mut first, url, _) = spawn(env(("TOOLGATE_HANDLE_KEY_FILE", key_file.display().to_string()))).await;
    let client = common::raw::SessionlessClient::new(&url);
    let switched = client.call_with_headers("switch_domain", switch, &bearer).await.result();
    let flow = switched["structuredContent"]["flow"].as_str().expect("a handle").to_string();
    first.kill().await.unwrap();

    let (_second, url, _) = spawn(env(("TOOLGATE_HANDLE_KEY", key.to_string()))).await;
    let search = json!({
        "domain": "bus", "origin": "Madrid", "destination": "Valencia",
        "departure": "2026-12-04T08:00:00+01:00", "passengers": 2, "flow": flow,
    });
    let client = common::raw::SessionlessClient::new(&url);
    let searched = client.call_with_headers("bus_search", search, &bearer).await.result();
    assert_eq!(searched["structuredContent"]["state"], "quoted", "the file's key signed the handle: {searched}");

    std::fs::write(&key_file, "a-31-byte-key-with-a-newline-01\n").unwrap();
    let error = refused_with(
        &[],
        &[("TOOLGATE_HTTP", "127.0.0.1:0"), ("TOOLGATE_HANDLE_KEY_FILE", key_file.to_str().unwrap())],
    )
    .await;
    assert!(error.contains("TOOLGATE_HANDLE_KEY_FILE") && error.contains("31 bytes"), "{error}");
    assert!(!error.contains("newline-01"), "the key is quoted: {error}");
}

/// A server's own options (`ServerBuilder::run_cli_with`): the payments example's appear in
/// its help under their heading, with their variables, and are checked as toolgate's are.
#[tokio::test]
async fn a_servers_own_options_join_the_command_line() {
    let scratch = Scratch::new("own-options");
    let output = Command::new(common::example_binary("payments")).arg("--help").current_dir(&scratch.0).output();
    let output = output.await.unwrap();
    let help = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{help}");
    let own = help.split("\nPayments:\n").nth(1).unwrap_or_else(|| panic!("no `Payments:` heading: {help}"));
    assert!(own.contains("--settle-seconds <SECONDS>") && own.contains("[env: PAYMENTS_SETTLE_SECONDS]"), "{help}");
    assert!(own.contains("--notices-log <PATH>"), "{help}");
    assert!(help.contains("--http <ADDR>"), "toolgate's options are there too: {help}");
    let wrong =
        Command::new(common::example_binary("payments")).args(["--settle-seconds", "soon"]).output().await.unwrap();
    let stderr = String::from_utf8_lossy(&wrong.stderr);
    assert!(
        !wrong.status.success() && stderr.contains("--settle-seconds") && stderr.contains("Usage: payments"),
        "{stderr}"
    );
}
