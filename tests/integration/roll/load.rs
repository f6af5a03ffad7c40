//! The rolling restart's load: tool calls sent through the load balancer at a fixed rate,
//! each on its schedule whether or not the earlier ones were answered (an open loop) —
//! creations, keyed transitions racing on the newest payments, and settlements, some as
//! MCP tasks followed to their end. Every call goes into the fault check's history (so
//! that its checker can judge it against the store), and is counted by how it was answered.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::faults::client::{Answer, Caller};
use crate::faults::cluster::{principal, token};
use crate::faults::load::{History, Kind, Op, Outcome, Rng, follow_task, tool_outcome};

/// How many principals the calls are spread over (each fires an event once per payment, so
/// that the store's history tells which of its calls committed).
pub(super) const PRINCIPALS: usize = 10;

/// How one request was answered, as the roll counts it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Class {
    Ok,
    /// One of the tool's structured refusals (its code): nothing was committed, and it said so.
    Refused(String),
    /// An answer that is an error and not a refusal: a load balancer's 502 or 503, a
    /// JSON-RPC error, a commit whose outcome the server could not tell.
    Failed(String),
    /// No answer: the connection failed or was cut, or the answer never came.
    Unanswered(String),
}

impl Class {
    fn of(answer: &Answer) -> Self {
        match answer {
            Answer::Result(result) if result["isError"] == true => {
                let content = &result["structuredContent"];
                if content["outcome_unknown"] == true {
                    Class::Failed("outcome unknown".into())
                } else {
                    Class::Refused(content["code"].as_str().unwrap_or("?").to_string())
                }
            }
            Answer::Result(_) => Class::Ok,
            Answer::Error(error) => Class::Failed(format!("JSON-RPC error {}", error["code"])),
            // `HTTP 502 Bad Gateway without a reply: …`: answered, with an error.
            Answer::Lost(why) => match why.strip_prefix("HTTP ").and_then(|s| s.get(..3)?.parse::<u16>().ok()) {
                Some(status) if status >= 400 => Class::Failed(why.chars().take(80).collect()),
                _ => Class::Unanswered(why.chars().take(160).collect()),
            },
        }
    }
}

/// One request: what it was, when (ms since the load began), and how it was answered.
#[derive(Debug, Clone)]
pub(super) struct Sent {
    /// The tool called, or `tasks/get`.
    pub(super) what: &'static str,
    pub(super) invoked_ms: u64,
    pub(super) completed_ms: u64,
    pub(super) class: Class,
}

/// A settlement that ran as a task: where it was started, when, and how it ended.
#[derive(Debug, Clone)]
pub(super) struct TaskRun {
    pub(super) id: String,
    /// The replica that created it, as the load balancer named it.
    pub(super) replica: Option<String>,
    pub(super) created_ms: u64,
    pub(super) ended_ms: u64,
    pub(super) ended: String,
}

/// Everything the load sent, and the tasks it followed.
#[derive(Default)]
pub(super) struct Record {
    pub(super) sent: Mutex<Vec<Sent>>,
    pub(super) tasks: Mutex<Vec<TaskRun>>,
    /// (payment, principal, event) already asked: each once.
    asked: Mutex<HashSet<(String, usize, Kind)>>,
}

/// Sends calls to `url` at `rate` a second from now until `stop`, then waits for every
/// call's answer (and every task's end). Returns how many calls it sent.
pub(super) async fn drive(
    url: String,
    rate: u64,
    began: Instant,
    history: Arc<History>,
    record: Arc<Record>,
    stop: Arc<AtomicBool>,
) -> u64 {
    let callers: Arc<Vec<Caller>> = Arc::new((0..PRINCIPALS).map(|p| Caller::new(&token(p))).collect());
    let mut schedule = tokio::time::interval(Duration::from_nanos(1_000_000_000 / rate.max(1)));
    // A tick missed (the runtime was busy) is sent at once: the schedule does not slip.
    schedule.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    let mut calls = tokio::task::JoinSet::new();
    let mut sent = 0;
    while !stop.load(Ordering::Relaxed) {
        schedule.tick().await;
        sent += 1;
        let (url, callers, history, record) = (url.clone(), callers.clone(), history.clone(), record.clone());
        calls.spawn(async move { call(&url, &callers, &history, &record, sent, began).await });
        while let Some(done) = calls.try_join_next() {
            done.expect("a call of the load panicked");
        }
    }
    while let Some(done) = calls.join_next().await {
        done.expect("a call of the load panicked");
    }
    sent
}

/// Call number `n`: a creation, or an event on one of the newest payments by a principal
/// that has not fired it there yet (a creation if none is left).
async fn call(url: &str, callers: &[Caller], history: &History, record: &Record, n: u64, began: Instant) {
    let mut rng = Rng::new(0x0057_A7E5 ^ n.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let mut kind = match rng.below(10) {
        0..=2 => Kind::Create,
        3..=5 => Kind::Authorize,
        6 => Kind::Void,
        _ => Kind::Settle,
    };
    let mut client = (n as usize) % PRINCIPALS;
    let mut payment = None;
    if kind != Kind::Create {
        let newest: Vec<String> = history.created.lock().unwrap().iter().rev().take(6).cloned().collect();
        let mut asked = record.asked.lock().unwrap();
        payment =
            (!newest.is_empty()).then(|| newest[rng.below(newest.len() as u64) as usize].clone()).and_then(|payment| {
                let free = (0..PRINCIPALS)
                    .map(|p| (client + p) % PRINCIPALS)
                    .find(|&p| !asked.contains(&(payment.clone(), p, kind)))?;
                asked.insert((payment.clone(), free, kind));
                client = free;
                Some(payment)
            });
        if payment.is_none() {
            kind = Kind::Create;
        }
    }
    let caller = &callers[client];
    let ms = || began.elapsed().as_millis() as u64;
    let invoked_ms = ms();
    let (description, arguments) = match &payment {
        None => {
            let description = format!("{} payment {n}", principal(client));
            let arguments = json!({ "domain": "payment", "description": description,
                "amount": { "amount": "25.00", "currency": "USD" } });
            (Some(description), arguments)
        }
        Some(payment) => (None, json!({ "domain": "payment", "payment_id": payment })),
    };
    // A settlement in six runs as a task.
    let as_task = kind == Kind::Settle && rng.below(6) == 0;
    let (answer, replica) = caller.call_via(url, kind.tool(), arguments, as_task).await;
    let completed_ms = ms();
    record.sent.lock().unwrap().push(Sent { what: kind.tool(), invoked_ms, completed_ms, class: Class::of(&answer) });
    let mut op = Op {
        client,
        kind,
        payment,
        description,
        task: None,
        outcome: Outcome::Unknown(String::new()),
        invoked_ms,
        completed_ms,
    };
    match answer {
        Answer::Result(result) if result["resultType"] == "task" => {
            let task = result["taskId"].as_str().unwrap_or_default().to_string();
            let polled = |answer: &Answer| {
                let at = ms();
                let class = Class::of(answer);
                record.sent.lock().unwrap().push(Sent { what: "tasks/get", invoked_ms: at, completed_ms: at, class });
            };
            op.outcome = follow_task(|_| Some(url.to_string()), caller, &task, false, &mut rng, polled).await;
            let ended = match &op.outcome {
                Outcome::Ok => "completed".to_string(),
                Outcome::Refused(code, _) => format!("refused {code}"),
                Outcome::Unknown(why) => format!("unknown: {why}"),
            };
            let run = TaskRun { id: task.clone(), replica, created_ms: completed_ms, ended_ms: ms(), ended };
            record.tasks.lock().unwrap().push(run);
            op.task = Some(task);
            op.completed_ms = ms();
        }
        answer => {
            let (outcome, content) = tool_outcome(answer);
            if let (Outcome::Ok, Kind::Create, Some(id)) = (&outcome, kind, content["payment_id"].as_str()) {
                op.payment = Some(id.to_string());
                history.created.lock().unwrap().push(id.to_string());
            }
            op.outcome = outcome;
        }
    }
    history.ops.lock().unwrap().push(op);
}
