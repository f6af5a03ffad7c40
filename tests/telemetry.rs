//! Seeing a running server: Prometheus metrics counting calls, refusals by code and
//! transitions after a scripted session, and a span per call — with nothing a log line,
//! a span or a metric label carries being a handle, a token or a one-time code. The
//! process's recorder and subscriber are global, so they are installed once for the file.

mod common;

use std::io::Write;
use std::sync::{Arc, Mutex, OnceLock};

use common::clients::Lifecycle;
use common::confirm::Outbox;
use common::{TestClient, serve_in_process};
use serde_json::json;
use toolgate::StaticTokens;
use toolgate::confirm::OutboxSender;
use toolgate::prelude::*;
use toolgate::telemetry::PrometheusMetrics;

toolgate::machine! {
    id: "parcel",
    key: "id",
    initial: "packed",
    states: {
        packed:    { on: { SHIP: "shipped" } },
        shipped:   { on: { DELIVER: "delivered" } },
        delivered: { type: "final" },
    }
}

#[derive(Deserialize, JsonSchema)]
struct ParcelRef {
    /// The parcel, `P-` and a number.
    #[schemars(pattern(r"^P-[1-9][0-9]*$"))]
    id: String,
}

#[derive(Serialize, JsonSchema)]
struct Parcel {
    id: String,
}

/// Ship a packed parcel. Does not deliver it.
#[action(domain = "parcel", bind_state = "packed", transition = "SHIP")]
async fn parcel_ship(input: ParcelRef) -> Result<Parcel, ToolError> {
    Ok(Parcel { id: input.id })
}

/// Deliver a shipped parcel, confirmed with a one-time code. Does not ship it.
#[action(domain = "parcel", bind_state = "shipped", transition = "DELIVER", transactional, confirm = "otp")]
async fn parcel_deliver(input: ParcelRef) -> Result<Parcel, ToolError> {
    Ok(Parcel { id: input.id })
}

/// Weigh a parcel. Does not ship or deliver it.
#[action(domain = "parcel")]
async fn parcel_weigh(input: ParcelRef) -> Result<Parcel, ToolError> {
    Ok(Parcel { id: input.id })
}

/// Note something about parcels in the conversation. Does not ship or deliver anything.
#[action(domain = "parcel", machine = "memo", bind_state = "open", transition = "NOTE")]
async fn parcel_note() -> Result<Parcel, ToolError> {
    Ok(Parcel { id: "note".into() })
}

toolgate::machine! {
    id: "memo",
    initial: "open",
    states: { open: { on: { NOTE: "open" } } }
}

const TOKEN: &str = "courier-secret-token-0123456789";

/// Everything the process's `tracing` subscriber writes, spans' fields included.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The process's recorder and subscriber: everything toolgate records, at every level
/// (spans' fields on close), and the other crates' messages from `info` up. (rmcp's own
/// `debug`/`trace` messages print whole requests, arguments included: they are rmcp's,
/// and a server's default filter is `warn`.)
fn observed() -> &'static (PrometheusMetrics, Captured) {
    static OBSERVED: OnceLock<(PrometheusMetrics, Captured)> = OnceLock::new();
    OBSERVED.get_or_init(|| {
        let captured = Captured::default();
        let writer = captured.clone();
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new("info,toolgate_runtime=trace,toolgate=trace"))
            .with_span_events(tracing_subscriber::fmt::format::FmtSpan::CLOSE)
            .with_ansi(false)
            .with_writer(move || writer.clone())
            .init();
        (PrometheusMetrics::install().expect("the recorder"), captured)
    })
}

async fn server(outbox: &Outbox) -> (Server, String) {
    let server = Server::from_registry("parcels")
        .authenticator(StaticTokens::new().token(TOKEN, Principal::new("courier")))
        .otp_sender(OutboxSender::new(outbox.path()))
        .build()
        .expect("server");
    let url = serve_in_process(server.clone()).await;
    (server, url)
}

/// The value of the sample `name{labels}` in a Prometheus text rendering.
fn sample(rendered: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    rendered.lines().filter(|line| !line.starts_with('#')).find_map(|line| {
        let (series, value) = line.rsplit_once(' ')?;
        let rest = series.strip_prefix(name)?;
        let matches = labels.iter().all(|(k, v)| rest.contains(&format!("{k}=\"{v}\"")));
        let labelled = rest.starts_with('{') || (rest.is_empty() && labels.is_empty());
        (labelled && matches).then(|| value.parse().ok()).flatten()
    })
}

#[tokio::test]
async fn metrics_count_calls_refusals_by_code_and_transitions_and_nothing_secret_is_recorded() {
    let (metrics, captured) = observed();
    let outbox = Outbox::new();
    let (server, url) = server(&outbox).await;
    let metrics_url = {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/metrics", listener.local_addr().unwrap());
        let router = server.metrics_router(metrics);
        tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
        url
    };
    let client = TestClient::http_as(&url, Lifecycle::Sessionless, Some(TOKEN)).await;

    // The script: two FORBIDDEN, one INVALID_ARGUMENT, a confirmation asked and given,
    // two transitions, and a call in a flow named by a state handle.
    let p = |id: &str| json!({ "domain": "parcel", "id": id });
    assert_eq!(client.refused("parcel_deliver", p("P-1")).await["code"], "FORBIDDEN");
    assert_eq!(client.refused("parcel_deliver", p("P-2")).await["code"], "FORBIDDEN");
    assert_eq!(client.refused("parcel_ship", p("nope")).await["code"], "INVALID_ARGUMENT");
    assert_eq!(client.ok("parcel_ship", p("P-1")).await["state"], "shipped");
    let asked = client.refused("parcel_deliver", p("P-1")).await;
    assert_eq!(asked["code"], "CONFIRMATION_REQUIRED");
    let challenge = asked["challenge_id"].as_str().unwrap().to_string();
    let code = outbox.code(&challenge);
    let mut confirmed = p("P-1");
    confirmed["challenge_id"] = json!(challenge);
    confirmed["otp"] = json!(code);
    assert_eq!(client.ok("parcel_deliver", confirmed).await["state"], "delivered");
    let noted = client.ok("parcel_note", json!({ "domain": "parcel" })).await;
    let handle = noted["flow"].as_str().expect("a state handle").to_string();
    let again = client.ok("parcel_note", json!({ "domain": "parcel", "flow": handle })).await;
    let handle_again = again["flow"].as_str().unwrap().to_string();

    let rendered = reqwest::get(&metrics_url).await.unwrap().text().await.unwrap();
    let refusals = |code| sample(&rendered, "toolgate_refusals_total", &[("code", code)]);
    assert_eq!(refusals("FORBIDDEN"), Some(2.0), "{rendered}");
    assert_eq!(refusals("INVALID_ARGUMENT"), Some(1.0), "{rendered}");
    // Asked for its code, the call took a step: not a refusal, still a call's outcome.
    assert_eq!(refusals("CONFIRMATION_REQUIRED"), None, "{rendered}");
    let calls = |tool, outcome| sample(&rendered, "toolgate_calls_total", &[("tool", tool), ("outcome", outcome)]);
    assert_eq!(calls("parcel_deliver", "CONFIRMATION_REQUIRED"), Some(1.0), "{rendered}");
    assert_eq!(calls("parcel_ship", "ok"), Some(1.0), "{rendered}");
    assert_eq!(calls("parcel_deliver", "FORBIDDEN"), Some(2.0), "{rendered}");
    let transitions =
        |event| sample(&rendered, "toolgate_transitions_total", &[("machine", "parcel"), ("event", event)]);
    assert_eq!((transitions("SHIP"), transitions("DELIVER")), (Some(1.0), Some(1.0)), "{rendered}");
    assert!(sample(&rendered, "toolgate_call_duration_seconds_count", &[("tool", "parcel_ship")]).is_some());
    // The store's live records: P-1 (P-2 was never created), and the flow the handle names.
    assert_eq!(sample(&rendered, "toolgate_live_instances", &[]), Some(1.0), "{rendered}");
    assert_eq!(sample(&rendered, "toolgate_live_flows", &[]), Some(1.0), "{rendered}");
    for op in ["load", "lease", "commit"] {
        assert!(
            sample(&rendered, "toolgate_store_duration_seconds_count", &[("op", op)]).is_some(),
            "{op}: {rendered}"
        );
    }

    // The spans were written, with what a call is about, and no secret anywhere.
    let logs = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    assert!(logs.contains("tool_call"), "spans are recorded");
    assert!(logs.contains("instance=\"P-1\"") || logs.contains("instance=P-1"), "{logs:.2000}");
    assert!(logs.contains("from=\"packed\"") || logs.contains("from=packed"), "{logs:.2000}");
    let secrets =
        [("the bearer token", TOKEN), ("a one-time code", &code), ("a handle", &handle), ("a handle", &handle_again)];
    for (what, secret) in secrets {
        let at = logs.find(secret);
        assert!(
            at.is_none(),
            "{what} in the logs: {}",
            at.map_or("", |at| &logs[at.saturating_sub(300)..(at + 100).min(logs.len())])
        );
        assert!(!rendered.contains(secret), "{what} in the metrics");
    }
}

#[tokio::test]
async fn a_traceparent_in_meta_is_recorded_on_the_call_span() {
    let (_, captured) = observed();
    let outbox = Outbox::new();
    let (_server, url) = server(&outbox).await;
    let client = common::raw::SessionlessClient::new(&url);
    let trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
    // A tool the other test does not call: the counters it checks stay its own.
    let mut params = json!({ "name": "parcel_weigh", "arguments": { "domain": "parcel", "id": "P-77" } });
    params["_meta"] = common::raw::SessionlessClient::request_meta();
    params["_meta"]["traceparent"] = json!(format!("00-{trace_id}-00f067aa0ba902b7-01"));
    let bearer = format!("Bearer {TOKEN}");
    let reply = client.request("tools/call", params, &[("Authorization", &bearer)]).await.result();
    assert_eq!(reply["structuredContent"]["state"], "packed", "{reply}");
    let logs = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    let span = logs.lines().find(|l| l.contains("P-77") && l.contains("tool_call")).expect("the call's span");
    assert!(span.contains(trace_id), "{span}");
    assert!(span.contains("00f067aa0ba902b7"), "{span}");
}
