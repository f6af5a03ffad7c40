//! The checker: the recorded calls against what the store holds once the faults have
//! stopped and the replicas are healed. Every anomaly is named with its payment.
//!
//! - every acknowledged transition appears exactly once in its payment's history, and a
//!   refused one (the server said nothing was committed) not at all;
//! - each history is a path of the payments machine, ending where the payment is;
//! - a minted id was handed out once, and still holds what its creation wrote;
//! - each committed effect (a settlement's notice, a lapse's release) was dispatched with
//!   one idempotency key, and received; none for what was not committed.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde_json::Value;

use super::cluster::principal;
use super::load::{Kind, Op, Outcome};

/// A payment as the store holds it at the end.
pub(crate) struct Final {
    pub(crate) state: String,
    pub(crate) description: String,
    pub(crate) entries: Vec<Value>,
}

/// What the checker found, and the figures of the run.
#[derive(Default, Debug)]
pub(crate) struct Verdict {
    pub(crate) anomalies: Vec<String>,
    /// Calls by kind and outcome (`authorize ok`).
    pub(crate) calls: BTreeMap<String, usize>,
    /// What the server said, the first time, for each kind of refusal.
    pub(crate) said: BTreeMap<String, String>,
    /// Effects: committed, deliveries, repeated deliveries of one key.
    pub(crate) effects_committed: usize,
    pub(crate) deliveries: usize,
    pub(crate) repeats: usize,
    pub(crate) transitions: usize,
}

/// The machine's edges: (from, event, to); a timer's event is `after …`.
fn allowed(from: &str, event: &str, to: &str) -> bool {
    matches!(
        (from, event, to),
        ("created", "AUTHORIZE", "authorized") | ("authorized", "SETTLE", "settled") | ("authorized", "VOID", "voided")
    ) || (from == "authorized" && to == "lapsed" && event.starts_with("after "))
}

pub(crate) fn check(ops: &[Op], finals: &HashMap<String, Final>, notices: &[Value]) -> Verdict {
    let mut verdict = Verdict::default();
    let mut anomaly = |text: String| verdict.anomalies.push(text);
    for op in ops {
        let outcome = match &op.outcome {
            Outcome::Ok => "ok".to_string(),
            Outcome::Refused(code, _) => format!("refused {code}"),
            Outcome::Unknown(why) => format!("unknown ({})", why.chars().take(60).collect::<String>()),
        };
        let name = format!("{:?} {outcome}", op.kind).to_lowercase();
        if let Outcome::Refused(_, message) = &op.outcome {
            verdict.said.entry(name.clone()).or_insert_with(|| message.clone());
        }
        *verdict.calls.entry(name).or_default() += 1;
        if let Outcome::Unknown(why) = &op.outcome
            && why.starts_with("TASK_NOT_FOUND")
        {
            anomaly(format!("{:?}: task {:?} was announced, then not found: {why}", op.payment, op.task));
        }
    }

    // Minted ids: once each, and still what their creation wrote.
    let mut minted: HashMap<&str, &Op> = HashMap::new();
    for op in ops.iter().filter(|op| op.kind == Kind::Create && matches!(op.outcome, Outcome::Ok)) {
        let id = op.payment.as_deref().unwrap_or_default();
        if let Some(first) = minted.insert(id, op) {
            anomaly(format!("{id} was minted twice: for {:?} and for {:?}", first.description, op.description));
        }
        match finals.get(id) {
            None => anomaly(format!("{id}: acknowledged as created, not in the store")),
            Some(found) if Some(&found.description) != op.description.as_ref() => {
                anomaly(format!("{id}: created as {:?}, the store holds {:?}", op.description, found.description))
            }
            Some(_) => {}
        }
    }

    // Histories: paths of the machine, ending where the payment is.
    for (id, found) in finals {
        let mut at = "created".to_string();
        for entry in &found.entries {
            let (from, event, to) = (str_of(&entry["from"]), str_of(&entry["event"]), str_of(&entry["to"]));
            if from != at || !allowed(from, event, to) {
                anomaly(format!("{id}: `{from}` -{event}-> `{to}` does not continue a path from `{at}`"));
            }
            at = to.to_string();
            verdict.transitions += 1;
        }
        if at != found.state {
            anomaly(format!("{id}: its history ends at `{at}`, the payment is `{}`", found.state));
        }
    }

    // Each call that names a transition, against the history: its principal fired that
    // event once if it was acknowledged, never if it was refused.
    let mut asked: HashSet<(String, String, &str)> = HashSet::new();
    for op in ops {
        let (Some(event), Some(id)) = (op.kind.event(), op.payment.as_deref()) else { continue };
        let who = principal(op.client);
        asked.insert((id.to_string(), who.clone(), event));
        let Some(found) = finals.get(id) else {
            anomaly(format!("{id}: {who}'s {event} named a payment the store does not have"));
            continue;
        };
        let fired: Vec<&Value> =
            found.entries.iter().filter(|e| e["principal"] == who.as_str() && e["event"] == event).collect();
        match &op.outcome {
            Outcome::Ok if fired.len() != 1 => anomaly(format!(
                "{id}: {who}'s {event} {} was acknowledged, the history has it {} times",
                when(op),
                fired.len()
            )),
            Outcome::Ok => {
                if let Some(task) = &op.task
                    && fired[0]["call_id"] != task.as_str()
                {
                    anomaly(format!("{id}: task {task} completed, the history's {event} is {}", fired[0]["call_id"]));
                }
            }
            Outcome::Refused(code, _) if !fired.is_empty() => anomaly(format!(
                "{id}: {who}'s {event} {} was refused ({code}: nothing committed), the history has it (task {:?})",
                when(op),
                op.task
            )),
            Outcome::Unknown(_) if fired.len() > 1 => {
                anomaly(format!("{id}: {who}'s {event} {} is in the history {} times", when(op), fired.len()))
            }
            _ => {}
        }
    }
    // And no transition nobody asked for.
    for (id, found) in finals {
        for entry in &found.entries {
            let (who, event) = (str_of(&entry["principal"]), str_of(&entry["event"]));
            if who != "timer" && !asked.contains(&(id.clone(), who.to_string(), event)) {
                anomaly(format!("{id}: the history has {who}'s {event}, which {who} never called"));
            }
        }
    }

    // Effects: one key per committed effect, received; none for what did not commit.
    let mut keys: HashMap<(String, String), HashSet<String>> = HashMap::new();
    for notice in notices {
        let (payment, kind) = (str_of(&notice["payment"]).to_string(), str_of(&notice["notice"]).to_string());
        keys.entry((payment, kind)).or_default().insert(str_of(&notice["key"]).to_string());
        verdict.deliveries += 1;
    }
    for (id, found) in finals {
        for (kind, state) in [("settled", "settled"), ("released", "lapsed")] {
            let received = keys.remove(&(id.clone(), kind.to_string())).unwrap_or_default();
            let committed = found.state == state;
            verdict.effects_committed += usize::from(committed);
            match (committed, received.len()) {
                (true, 1) | (false, 0) => {}
                (true, 0) => anomaly(format!("{id}: `{state}`, and its `{kind}` effect was never received")),
                (_, n) => {
                    anomaly(format!("{id}: `{}`, and {n} `{kind}` effects were received: {received:?}", found.state))
                }
            }
        }
    }
    for ((id, kind), received) in keys {
        anomaly(format!("{id}: a `{kind}` effect was received for a payment the store does not have: {received:?}"));
    }
    verdict.repeats = verdict.deliveries - verdict.effects_committed.min(verdict.deliveries);
    verdict
}

/// When a call ran, in the run's milliseconds.
fn when(op: &Op) -> String {
    format!("(called at {}–{} ms)", op.invoked_ms, op.completed_ms)
}

fn str_of(value: &Value) -> &str {
    value.as_str().unwrap_or_default()
}
