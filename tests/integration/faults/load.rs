//! The load: clients that create payments, authorize, void and settle them (a settlement
//! as an MCP task, sometimes cancelled), through whichever replica they pick, racing each
//! other on the newest payments. Every call's invocation and outcome is recorded.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::client::{Answer, Caller};
use super::cluster::{Cluster, principal, token};

/// What a client did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Kind {
    Create,
    Authorize,
    Void,
    Settle,
}

impl Kind {
    /// The event a call of this kind fires; `None` for a creation.
    pub(crate) fn event(self) -> Option<&'static str> {
        match self {
            Kind::Create => None,
            Kind::Authorize => Some("AUTHORIZE"),
            Kind::Void => Some("VOID"),
            Kind::Settle => Some("SETTLE"),
        }
    }

    pub(crate) fn tool(self) -> &'static str {
        match self {
            Kind::Create => "payment_create",
            Kind::Authorize => "payment_authorize",
            Kind::Void => "payment_void",
            Kind::Settle => "payment_settle",
        }
    }
}

/// How a call ended, as its client was told.
#[derive(Debug, Clone)]
pub(crate) enum Outcome {
    /// Done: the server acknowledged it.
    Ok,
    /// Refused with this code and message: the server said nothing was committed.
    Refused(String, String),
    /// Not known: no answer, or the server said the commit's outcome is unknown.
    Unknown(String),
}

/// One call: who, what, on which payment, and how it ended.
#[derive(Debug, Clone)]
pub(crate) struct Op {
    pub(crate) client: usize,
    pub(crate) kind: Kind,
    /// The payment: the one named, or the one a creation was told it made.
    pub(crate) payment: Option<String>,
    /// A creation's description, unique to it: what the store must still hold for its id.
    pub(crate) description: Option<String>,
    /// A settlement's task, when it became one.
    pub(crate) task: Option<String>,
    pub(crate) outcome: Outcome,
    /// Milliseconds since the load began, at invocation and at completion.
    pub(crate) invoked_ms: u64,
    pub(crate) completed_ms: u64,
}

/// The history of the run.
#[derive(Default)]
pub(crate) struct History {
    pub(crate) ops: Mutex<Vec<Op>>,
    /// The payments created, newest last: what the clients race on.
    pub(crate) created: Mutex<Vec<String>>,
}

/// A small, seeded random source (xorshift64*): the run's choices, reproducible by seed.
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        Self(seed.max(1))
    }

    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n.max(1)
    }
}

/// Runs client `client` until `until`.
pub(crate) async fn client(cluster: &Cluster, history: &History, client: usize, began: Instant, until: Instant) {
    let caller = Caller::new(&token(client));
    let mut rng = Rng::new(0x9E37_79B9 ^ ((client as u64 + 1) * 0x1000_0001));
    // What this client already asked of each payment: each event once, so that the store's
    // history tells which of its calls committed (by principal and event).
    let mut asked: std::collections::HashSet<(String, Kind)> = Default::default();
    let mut made = 0;
    while Instant::now() < until {
        let Some(url) = pick(&cluster.live(), &mut rng) else {
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        let kind = match rng.below(10) {
            0..=2 => Kind::Create,
            3..=5 => Kind::Authorize,
            6 => Kind::Void,
            _ => Kind::Settle,
        };
        let invoked_ms = began.elapsed().as_millis() as u64;
        let mut op = Op {
            client,
            kind,
            payment: None,
            description: None,
            task: None,
            outcome: Outcome::Unknown(String::new()),
            invoked_ms,
            completed_ms: 0,
        };
        if kind == Kind::Create {
            made += 1;
            let description = format!("{} payment {made}", principal(client));
            let arguments = json!({ "domain": "payment", "description": description,
                "amount": { "amount": "25.00", "currency": "USD" } });
            let (outcome, content) = tool_outcome(caller.call(&url, kind.tool(), arguments, false).await);
            if let (Outcome::Ok, Some(id)) = (&outcome, content["payment_id"].as_str()) {
                op.payment = Some(id.to_string());
                history.created.lock().unwrap().push(id.to_string());
            }
            (op.description, op.outcome) = (Some(description), outcome);
        } else {
            // One of the newest payments, which the other clients race on too.
            let newest: Vec<String> = {
                let created = history.created.lock().unwrap();
                created.iter().rev().take(6).cloned().collect()
            };
            let Some(payment) = pick(&newest, &mut rng) else { continue };
            if !asked.insert((payment.clone(), kind)) {
                continue;
            }
            op.payment = Some(payment.clone());
            let arguments = json!({ "domain": "payment", "payment_id": payment });
            let answer = caller.call(&url, kind.tool(), arguments, kind == Kind::Settle).await;
            match answer {
                Answer::Result(result) if result["resultType"] == "task" => {
                    let task = result["taskId"].as_str().unwrap_or_default().to_string();
                    let cancel = rng.below(4) == 0;
                    let endpoints = |rng: &mut Rng| pick(&cluster.live(), rng);
                    op.outcome = follow_task(endpoints, &caller, &task, cancel, &mut rng, |_| {}).await;
                    op.task = Some(task);
                }
                answer => op.outcome = tool_outcome(answer).0,
            }
        }
        op.completed_ms = began.elapsed().as_millis() as u64;
        // A store that is down answers at once; a client waits a little, as it is told to.
        let unavailable = matches!(&op.outcome, Outcome::Refused(code, _) if code == "STORE_UNAVAILABLE");
        history.ops.lock().unwrap().push(op);
        if unavailable {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

/// A settlement's task to its end, each request to the endpoint `endpoint` picks (`None`:
/// none is up): cancelled first when `cancel`. `polled` sees each poll's answer.
pub(crate) async fn follow_task(
    endpoint: impl Fn(&mut Rng) -> Option<String>,
    caller: &Caller,
    task: &str,
    cancel: bool,
    rng: &mut Rng,
    mut polled: impl FnMut(&Answer),
) -> Outcome {
    if cancel {
        tokio::time::sleep(Duration::from_millis(200 + rng.below(600))).await;
        if let Some(url) = endpoint(rng) {
            // Whether the cancel arrived or not, the task's status says what happened.
            let _ = caller.task(&url, "tasks/cancel", task).await;
        }
    }
    let deadline = Instant::now() + Duration::from_secs(40);
    while Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(250)).await;
        let Some(url) = endpoint(rng) else { continue };
        let answer = caller.task(&url, "tasks/get", task).await;
        polled(&answer);
        match answer {
            Answer::Result(got) => match got["status"].as_str() {
                Some("completed") => {
                    return match got.get("result") {
                        Some(result) => tool_outcome(Answer::Result(result.clone())).0,
                        None => Outcome::Ok,
                    };
                }
                Some("failed") => {
                    let message = got["statusMessage"].as_str().unwrap_or_default();
                    return if message.contains("nothing was committed") {
                        Outcome::Refused("TASK_FAILED".into(), message.to_string())
                    } else {
                        Outcome::Unknown(format!("failed: {message}"))
                    };
                }
                Some("cancelled") => return Outcome::Refused("CANCELLED".into(), String::new()),
                _ => {}
            },
            // An announced task the server does not know: the checker reports it.
            Answer::Error(error) if error["code"] == -32602 => {
                return Outcome::Unknown(format!("TASK_NOT_FOUND: {error}"));
            }
            _ => {}
        }
    }
    Outcome::Unknown("the task did not end within 40 s".into())
}

/// A tool call's outcome, and its `structuredContent`.
pub(crate) fn tool_outcome(answer: Answer) -> (Outcome, Value) {
    match answer {
        Answer::Result(mut result) => {
            let content = result["structuredContent"].take();
            let outcome = if result["isError"] != true {
                Outcome::Ok
            } else if content["outcome_unknown"] == true {
                Outcome::Unknown("outcome_unknown".into())
            } else {
                let message = content["message"].as_str().unwrap_or_default().to_string();
                Outcome::Refused(content["code"].as_str().unwrap_or("?").to_string(), message)
            };
            (outcome, content)
        }
        Answer::Error(error) => (Outcome::Unknown(format!("JSON-RPC error {error}")), Value::Null),
        Answer::Lost(why) => (Outcome::Unknown(why), Value::Null),
    }
}

fn pick<T: Clone>(items: &[T], rng: &mut Rng) -> Option<T> {
    (!items.is_empty()).then(|| items[rng.below(items.len() as u64) as usize].clone())
}
