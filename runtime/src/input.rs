//! Asking the client during a call: elicitation (a form the person fills in, or a URL
//! they open), and the deprecated sampling and roots.
//!
//! A handler asks through [`Ctx::ask`](crate::Ctx::ask) and friends; how the question
//! travels depends on the protocol revision of the call:
//!
//! - **MCP 2025-11-25** (stdio, a stateful HTTP session): the server sends the client a
//!   request (`elicitation/create`, `sampling/createMessage`, `roots/list`) and the
//!   handler waits for its answer, within its deadline; a cancelled call stops waiting.
//!   A sessionless server cannot wait for an answer on this revision: the question is
//!   refused with `INPUT_UNAVAILABLE`.
//! - **MCP 2026-07-28** (multi round-trip requests): the call ends with an
//!   `InputRequiredResult` naming the questions, and a `requestState` the server sealed;
//!   the client retries the call with the answers, and the handler runs again from the
//!   start, this time receiving them. Nothing commits in a round that asked. The sealed
//!   state is bound to the principal, the tool and the arguments: it is refused on any
//!   other call, and altered it is refused too (`-32602`).
//!
//! Either way, a question the client did not declare it can answer is refused: on
//! 2026-07-28 with the protocol's `-32021` error naming the capability, on 2025-11-25 with
//! `INPUT_UNAVAILABLE`.
//!
//! Because a 2026-07-28 handler runs once per round, what it does before its questions
//! are answered runs once per round too: ask first, act after.

// Sampling and roots are deprecated by SEP-2577 in rmcp 3.11 but still part of the
// revisions toolgate serves; they stay behind toolgate's own `Ask`.
#![allow(deprecated)]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    ClientCapabilities, CreateMessageRequest, CreateMessageRequestParams, CreateMessageResult, ElicitRequest,
    ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationCapability, ElicitationSchema, InputRequest,
    InputRequests, ListRootsRequest, ListRootsResult, RootsCapabilities, SamplingCapability, SamplingMessage,
    UrlElicitationCapability,
};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::auth::Principal;
use crate::client::{ClientLink, RequestFailed};
use crate::error::ToolError;
use crate::flow::HandleSigner;

/// One question for the client, for [`Ctx::ask`](crate::Ctx::ask).
#[derive(Debug, Clone)]
pub struct Ask {
    request: InputRequest,
    kind: Kind,
    /// Asked within the request, before a call that runs as a task becomes one.
    before_task: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Form,
    Url,
    Sampling,
    Roots,
}

impl Ask {
    /// A form the person fills in, its fields those of `T` (a flat object of strings,
    /// numbers, booleans and enums, as MCP elicitation allows), with `message` saying why.
    /// Fails (an internal error) for a `T` that is not such an object.
    pub fn form<T: JsonSchema>(message: impl Into<String>) -> Result<Self, ToolError> {
        let schema = ElicitationSchema::from_type::<T>().map_err(|_| {
            ToolError::internal(format_args!(
                "`{}` cannot be asked for in a form: elicitation takes a flat object of strings, numbers, booleans and enums",
                std::any::type_name::<T>()
            ))
        })?;
        Ok(Self::with_schema(message.into(), schema))
    }

    /// A form described by a JSON Schema (`{"type": "object", "properties": …}`, flat,
    /// as MCP elicitation allows). Fails (an internal error) for any other schema.
    pub fn form_schema(message: impl Into<String>, schema: Value) -> Result<Self, ToolError> {
        let schema: ElicitationSchema = serde_json::from_value(schema).map_err(|_| {
            ToolError::internal("this schema cannot be asked for in a form: elicitation takes a flat object schema")
        })?;
        Ok(Self::with_schema(message.into(), schema))
    }

    fn with_schema(message: String, requested_schema: ElicitationSchema) -> Self {
        let params = ElicitRequestParams::FormElicitationParams { meta: None, message, requested_schema };
        Self { request: InputRequest::Elicitation(ElicitRequest::new(params)), kind: Kind::Form, before_task: false }
    }

    /// A page for the person to open (URL-mode elicitation): for what must not pass through
    /// the model (a payment, a sign-in). The answer says whether they accepted.
    pub fn url(message: impl Into<String>, url: impl Into<String>) -> Self {
        let params = ElicitRequestParams::UrlElicitationParams {
            meta: None,
            message: message.into(),
            url: url.into(),
            elicitation_id: uuid::Uuid::new_v4().simple().to_string(),
        };
        Self { request: InputRequest::Elicitation(ElicitRequest::new(params)), kind: Kind::Url, before_task: false }
    }

    /// A completion from the client's model, of at most `max_tokens` tokens, for `prompt`.
    #[deprecated(note = "sampling is deprecated by MCP (SEP-2577); clients may stop offering it")]
    pub fn sample(prompt: impl Into<String>, max_tokens: u32) -> Self {
        let params = CreateMessageRequestParams::new(vec![SamplingMessage::user_text(prompt)], max_tokens);
        Self {
            request: InputRequest::CreateMessage(CreateMessageRequest::new(params)),
            kind: Kind::Sampling,
            before_task: false,
        }
    }

    /// The client's roots (the directories or places it works in).
    #[deprecated(note = "roots are deprecated by MCP (SEP-2577); clients may stop offering them")]
    pub fn roots() -> Self {
        Self { request: InputRequest::ListRoots(ListRootsRequest::default()), kind: Kind::Roots, before_task: false }
    }

    /// Asks this before a call that may run as an MCP task becomes one: within the
    /// request, as the protocol's rounds do (MCP 2026-07-28: the call ends with the
    /// question, and the client's retry with the answer becomes the task). A call becomes
    /// a task when its handler first waits; asked after that, or on a call that is not a
    /// task, this is an ordinary question.
    ///
    /// For what the task cannot start without (the name to greet, the account to settle
    /// from); questions the work raises as it goes are the task's own (`input_required`).
    pub fn before_task(mut self) -> Self {
        self.before_task = true;
        self
    }

    /// The capability a client declares when it can answer this question.
    fn capability(&self) -> ClientCapabilities {
        let mut needed = ClientCapabilities::default();
        match self.kind {
            Kind::Form => needed.elicitation = Some(ElicitationCapability::default()),
            Kind::Url => {
                needed.elicitation = Some(ElicitationCapability::new().with_url(UrlElicitationCapability::default()));
            }
            Kind::Sampling => needed.sampling = Some(SamplingCapability::default()),
            Kind::Roots => needed.roots = Some(RootsCapabilities::default()),
        }
        needed
    }

    /// Whether a client with `capabilities` can answer.
    fn answerable_by(&self, capabilities: &ClientCapabilities) -> bool {
        let elicitation = capabilities.elicitation.as_ref();
        match self.kind {
            // A bare `elicitation: {}` means forms (MCP 2025-06-18).
            Kind::Form => elicitation.is_some_and(|e| e.form.is_some() || e.url.is_none()),
            Kind::Url => elicitation.is_some_and(|e| e.url.is_some()),
            Kind::Sampling => capabilities.sampling.is_some(),
            Kind::Roots => capabilities.roots.is_some(),
        }
    }

    /// The client's answer in `value` (an MCP result), if it is one for this question.
    fn read(&self, value: Value) -> Option<Answer> {
        match self.kind {
            Kind::Form | Kind::Url => {
                let result: ElicitResult = serde_json::from_value(value).ok()?;
                Some(match result.action {
                    ElicitationAction::Accept => Answer::Accepted(result.content),
                    ElicitationAction::Decline => Answer::Declined,
                    // `cancel`, and whatever later revisions add: no choice made.
                    _ => Answer::Cancelled,
                })
            }
            Kind::Sampling => {
                let result: CreateMessageResult = serde_json::from_value(value).ok()?;
                let text = result.message.content.into_vec().into_iter().find_map(|block| block.as_text().cloned())?;
                Some(Answer::Sampled { text: text.text, model: result.model })
            }
            Kind::Roots => {
                let result: ListRootsResult = serde_json::from_value(value).ok()?;
                Some(Answer::Roots(
                    result.roots.into_iter().map(|root| Root { uri: root.uri, name: root.name }).collect(),
                ))
            }
        }
    }
}

/// The client's answer to an [`Ask`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Answer {
    /// The person accepted: with the form's content (none for a URL).
    Accepted(Option<Value>),
    /// The person declined.
    Declined,
    /// The person dismissed the question without choosing.
    Cancelled,
    /// The client's model answered (sampling).
    Sampled {
        /// The text of its message.
        text: String,
        /// The model that wrote it.
        model: String,
    },
    /// The client's roots.
    Roots(Vec<Root>),
}

impl Answer {
    /// The accepted form's content as `T`; `None` if the person declined or cancelled.
    /// Content that is not a `T` is an `INVALID_ARGUMENT` naming the field.
    pub fn accepted<T: DeserializeOwned>(self) -> Result<Option<T>, ToolError> {
        match self {
            Self::Accepted(content) => {
                let content = content.unwrap_or(Value::Object(Map::new()));
                serde_path_to_error::deserialize(content).map(Some).map_err(|error| {
                    let field = error.path().to_string();
                    ToolError::invalid_argument(field, "the answer to the form does not have this field's type")
                })
            }
            _ => Ok(None),
        }
    }
}

/// One of the client's roots.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Root {
    /// Its URI (`file:///home/ann/project`).
    pub uri: String,
    /// Its name, if the client gave one.
    pub name: Option<String>,
}

/// How one call's questions reach its client, and what a 2026-07-28 round asked.
#[derive(Debug)]
pub(crate) struct Inputs {
    era: Era,
    round: Mutex<Round>,
}

#[derive(Debug)]
enum Era {
    /// MCP 2026-07-28: questions end the round; `answers` came with the retry.
    Rounds { capabilities: ClientCapabilities, answers: BTreeMap<String, Value> },
    /// MCP 2025-11-25 on a connection the server keeps: a request to the client.
    Requests { link: Arc<dyn ClientLink>, capabilities: ClientCapabilities },
    /// No way to ask (a sessionless 2025-11-25 request).
    Unavailable,
    /// A call running as an MCP task: its questions are the task's `inputRequests`, and
    /// `tasks/update` brings the answers. Until the task is announced (`started`), a
    /// question asked [`before_task`](Ask::before_task) goes to the request's own rounds.
    Task {
        capabilities: ClientCapabilities,
        questions: Arc<TaskQuestions>,
        request: Option<Arc<Inputs>>,
        started: Arc<std::sync::atomic::AtomicBool>,
    },
}

/// A task's outstanding questions and how each is answered (`tasks/update`). The keys a
/// task asks under are never reused.
#[derive(Debug)]
pub(crate) struct TaskQuestions {
    state: Mutex<Asked>,
    outstanding: tokio::sync::watch::Sender<InputRequests>,
}

#[derive(Debug, Default)]
struct Asked {
    pending: BTreeMap<String, (InputRequest, tokio::sync::oneshot::Sender<Value>)>,
    /// Every key asked under, answered or not.
    keys: std::collections::BTreeSet<String>,
}

impl Default for TaskQuestions {
    fn default() -> Self {
        Self { state: Mutex::default(), outstanding: tokio::sync::watch::channel(InputRequests::new()).0 }
    }
}

impl TaskQuestions {
    fn state(&self) -> std::sync::MutexGuard<'_, Asked> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn publish(&self, asked: &Asked) {
        let outstanding = asked.pending.iter().map(|(key, (request, _))| (key.clone(), request.clone())).collect();
        self.outstanding.send_replace(outstanding);
    }

    /// The questions outstanding, as they change.
    pub(crate) fn outstanding(&self) -> tokio::sync::watch::Receiver<InputRequests> {
        self.outstanding.subscribe()
    }

    /// The questions outstanding now.
    pub(crate) fn current(&self) -> InputRequests {
        self.outstanding.borrow().clone()
    }

    /// `tasks/update`: the answers to outstanding questions reach the handler; a key the
    /// task does not wait for (unknown, answered before) is ignored.
    pub(crate) fn answer(&self, responses: BTreeMap<String, Value>) {
        let mut asked = self.state();
        for (key, value) in responses {
            if let Some((_, answer)) = asked.pending.remove(&key) {
                let _ = answer.send(value);
            }
        }
        self.publish(&asked);
    }
}

#[derive(Debug, Default)]
struct Round {
    /// Answers the handler used, carried into the next round's sealed state.
    used: BTreeMap<String, Value>,
    /// Questions not answered yet.
    pending: InputRequests,
    /// What the client must declare to answer a question it cannot.
    missing: Option<ClientCapabilities>,
}

/// How a call that asked ended, when its handler did not finish.
pub(crate) enum Unanswered {
    /// Questions for the client (2026-07-28): answer them and call again.
    Questions { requests: InputRequests, answered: BTreeMap<String, Value> },
    /// A question the client declared it cannot answer (2026-07-28).
    Missing(ClientCapabilities),
}

impl Inputs {
    /// For a request from a client with `capabilities`, reached through `link`: `rounds`,
    /// whether it is of a revision that asks in rounds (2026-07-28); `kept`, whether the
    /// server keeps its connection; `answers`, what a 2026-07-28 retry brought (its sealed
    /// state's and its own).
    pub(crate) fn of_client(
        capabilities: ClientCapabilities,
        link: &Arc<dyn ClientLink>,
        rounds: bool,
        kept: bool,
        answers: BTreeMap<String, Value>,
    ) -> Self {
        let era = if rounds {
            Era::Rounds { capabilities, answers }
        } else if kept {
            Era::Requests { link: link.clone(), capabilities }
        } else {
            Era::Unavailable
        };
        Self { era, round: Mutex::new(Round::default()) }
    }

    /// For a call that runs as a task, asking through `questions` once `started`, and
    /// through `request`'s rounds (its request's inputs, at 2026-07-28) before.
    pub(crate) fn for_task(
        capabilities: ClientCapabilities,
        questions: Arc<TaskQuestions>,
        request: Arc<Inputs>,
        started: Arc<std::sync::atomic::AtomicBool>,
    ) -> Self {
        let request = Some(request).filter(|request| request.in_rounds());
        Self { era: Era::Task { capabilities, questions, request, started }, round: Mutex::new(Round::default()) }
    }

    /// Whether the request is of a revision that asks in rounds (MCP 2026-07-28).
    pub(crate) fn in_rounds(&self) -> bool {
        matches!(self.era, Era::Rounds { .. })
    }

    fn round(&self) -> std::sync::MutexGuard<'_, Round> {
        self.round.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Asks every question, keyed by names the handler chooses (unique within the call);
    /// answers in the same keys.
    pub(crate) async fn ask_all(&self, questions: Vec<(String, Ask)>) -> Result<BTreeMap<String, Answer>, ToolError> {
        match &self.era {
            Era::Unavailable => Err(ToolError::input_unavailable(
                "this call cannot ask the client anything: a sessionless server cannot wait for an answer on MCP 2025-11-25 (use a session, or MCP 2026-07-28)",
            )),
            Era::Rounds { capabilities, answers } => {
                let mut round = self.round();
                let mut answered = BTreeMap::new();
                for (key, ask) in questions {
                    if !ask.answerable_by(capabilities) {
                        round.missing = Some(ask.capability());
                        return Err(unanswerable(&ask));
                    }
                    match answers.get(&key).cloned().and_then(|value| Some((ask.read(value.clone())?, value))) {
                        Some((answer, value)) => {
                            round.used.insert(key.clone(), value);
                            answered.insert(key, answer);
                        }
                        None => {
                            round.pending.insert(key, ask.request);
                        }
                    }
                }
                if round.pending.is_empty() {
                    Ok(answered)
                } else {
                    Err(ToolError::input_unavailable("the client must answer first"))
                }
            }
            Era::Task { request: Some(request), started, .. }
                if questions.iter().any(|(_, ask)| ask.before_task)
                    && !started.load(std::sync::atomic::Ordering::Acquire) =>
            {
                Box::pin(request.ask_all(questions)).await
            }
            Era::Task { capabilities, questions: task, .. } => {
                let mut waiting = Vec::new();
                {
                    let mut asked = task.state();
                    for (key, ask) in questions {
                        if !ask.answerable_by(capabilities) {
                            return Err(unanswerable(&ask));
                        }
                        if !asked.keys.insert(key.clone()) {
                            return Err(ToolError::internal(format_args!("the task asked under `{key}` twice")));
                        }
                        let (answer, answered) = tokio::sync::oneshot::channel();
                        asked.pending.insert(key.clone(), (ask.request.clone(), answer));
                        waiting.push((key, ask, answered));
                    }
                    task.publish(&asked);
                }
                let mut answers = BTreeMap::new();
                for (key, ask, answered) in waiting {
                    let value = answered
                        .await
                        .map_err(|_| ToolError::input_unavailable("the task ended before the client answered"))?;
                    let answer = ask.read(value).ok_or_else(|| {
                        ToolError::input_unavailable("the client's answer is not one to the question asked")
                    })?;
                    answers.insert(key, answer);
                }
                Ok(answers)
            }
            Era::Requests { link, capabilities } => {
                let mut answered = BTreeMap::new();
                for (key, ask) in questions {
                    if !ask.answerable_by(capabilities) {
                        return Err(unanswerable(&ask));
                    }
                    let answer = request(&**link, &ask).await?;
                    answered.insert(key, answer);
                }
                Ok(answered)
            }
        }
    }

    /// Whether the client declared it can answer `ask`.
    pub(crate) fn answerable(&self, ask: &Ask) -> bool {
        match &self.era {
            Era::Rounds { capabilities, .. } | Era::Requests { capabilities, .. } | Era::Task { capabilities, .. } => {
                ask.answerable_by(capabilities)
            }
            Era::Unavailable => false,
        }
    }

    /// After a handler that did not finish: whether it stopped to ask (2026-07-28).
    pub(crate) fn unanswered(&self) -> Option<Unanswered> {
        let mut round = self.round();
        if let Some(missing) = round.missing.take() {
            return Some(Unanswered::Missing(missing));
        }
        if round.pending.is_empty() {
            return None;
        }
        Some(Unanswered::Questions {
            requests: std::mem::take(&mut round.pending),
            answered: std::mem::take(&mut round.used),
        })
    }
}

fn unanswerable(ask: &Ask) -> ToolError {
    let what = match ask.kind {
        Kind::Form => "elicitation (forms)",
        Kind::Url => "URL elicitation",
        Kind::Sampling => "sampling",
        Kind::Roots => "roots",
    };
    ToolError::input_unavailable(format!("the client did not declare {what}, which this call needs"))
}

/// Asks a 2025-11-25 client, and waits for its answer.
async fn request(link: &dyn ClientLink, ask: &Ask) -> Result<Answer, ToolError> {
    let value = match link.request(&ask.request).await {
        Ok(value) => value,
        Err(RequestFailed::Refused(error)) => {
            tracing::info!(%error, "the client did not answer the server's question");
            return Err(ToolError::input_unavailable("the client did not answer the question this call asked"));
        }
        Err(RequestFailed::NotAskable) => {
            return Err(ToolError::input_unavailable("this question cannot be asked on MCP 2025-11-25"));
        }
    };
    ask.read(value).ok_or_else(|| ToolError::input_unavailable("the client's answer is not one to the question asked"))
}

/// How long a sealed `requestState` is accepted.
const REQUEST_STATE_TTL: Duration = Duration::from_secs(15 * 60);

/// What a token seals for a request state.
const PURPOSE: &str = "tgs1";

/// The state a 2026-07-28 round hands the client, sealed: the answers so far, bound to one
/// call (its principal, its method and name, its arguments).
#[derive(Serialize, Deserialize)]
struct Sealed {
    call: String,
    answered: BTreeMap<String, Value>,
    expires_at_ms: u64,
    nonce: String,
}

/// Which call a request state belongs to: a digest of the principal, the method and name
/// (`tools/call:invoice_pay`), and the arguments.
pub(crate) fn call_digest(principal: Option<&Principal>, call: &str, arguments: &Map<String, Value>) -> String {
    let principal = principal.map(Principal::key).unwrap_or_default();
    crate::confirm::Transaction { principal: &principal, tool: call, subject: "", arguments }.digest()
}

/// Seals the answers of a round for the call `call` (its [`call_digest`]).
pub(crate) fn seal(signer: &HandleSigner, call: String, answered: BTreeMap<String, Value>) -> String {
    let expires_at_ms = crate::store::now_ms().saturating_add(REQUEST_STATE_TTL.as_millis() as u64);
    let sealed = Sealed { call, answered, expires_at_ms, nonce: uuid::Uuid::new_v4().simple().to_string() };
    signer.seal(PURPOSE, &serde_json::to_vec(&sealed).expect("a request state serializes"))
}

/// The answers sealed in `token`, if the server sealed it for the call `call`, and it has
/// not expired.
pub(crate) fn open(signer: &HandleSigner, token: &str, call: &str) -> Option<BTreeMap<String, Value>> {
    let sealed: Sealed = serde_json::from_slice(&signer.open(PURPOSE, token)?).ok()?;
    (sealed.call == call && sealed.expires_at_ms > crate::store::now_ms()).then_some(sealed.answered)
}
