//! [`Ctx`]: what a handler knows about the call it serves.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;

use super::{CallClient, LogLevel, States};
use crate::auth::Principal;
use crate::error::ToolError;
use crate::flow::FlowId;
use crate::input::{Answer, Ask};
use crate::store::StoreKey;

/// The context of one tool call: a handler receives it when it takes a `ctx: Ctx` parameter.
#[derive(Debug, Clone)]
pub struct Ctx {
    pub(crate) tool: &'static str,
    pub(crate) domain: Option<&'static str>,
    pub(crate) flow: Option<StoreKey>,
    pub(crate) instance: Option<String>,
    pub(crate) machine_state: Option<String>,
    pub(crate) states: States,
    pub(crate) principal: Option<Principal>,
    pub(crate) client: CallClient,
    /// The engine running the call.
    pub(crate) engine: std::sync::Weak<dyn super::CallEngine>,
    /// The instance's context: committed, and what the handler sets.
    pub(crate) context: super::ContextSlot,
    /// The note the handler attaches to the transition it fires ([`Ctx::note`]), which the
    /// call's commit takes.
    pub(crate) note: CallNote,
    /// The effects the handler records ([`Ctx::effect`]), which the call's commit takes.
    pub(crate) effects: crate::effect::CallEffects,
    /// The call's database transaction, for a handler that takes a
    /// [`Transaction`](super::Transaction).
    pub(crate) transaction: super::TransactionSlot,
}

impl Ctx {
    /// The tool being called (`invoice_discharge`).
    pub fn tool(&self) -> &str {
        self.tool
    }

    /// Who is calling, when the request authenticated (see [`Principal`]).
    pub fn principal(&self) -> Option<&Principal> {
        self.principal.as_ref()
    }

    /// The tool's intent domain (`None` for a global tool).
    pub fn domain(&self) -> Option<&str> {
        self.domain
    }

    /// The flow (conversation) the call runs in; `None` for a tool that runs in no flow
    /// (its machine is keyed and the server has a single domain, or no lock).
    pub fn flow(&self) -> Option<FlowId> {
        self.flow.as_ref().map(FlowId::of)
    }

    /// The instance the call acts on, for a keyed machine: the value of the machine's key
    /// argument (`INV-7`), or, for an action that `creates` one, the key the store minted
    /// for it (`PAY-12`), which the handler reports back.
    pub fn instance(&self) -> Option<&str> {
        self.instance.as_deref()
    }

    /// The state of the tool's machine — of its instance, for a keyed machine — when the
    /// call was admitted (`None` for tools without a machine). A transitioning call holds
    /// the lease, so this state cannot change under it. (Application state is a handler
    /// parameter, `State<T>`.)
    pub fn machine_state(&self) -> Option<&str> {
        self.machine_state.as_deref()
    }
}

impl Ctx {
    /// Reports progress to the caller (`notifications/progress` against the progress token
    /// its request carried; nothing if it carried none).
    ///
    /// ```no_run
    /// # use toolgate_runtime::{Ctx, Progress};
    /// # async fn f(ctx: Ctx) {
    /// ctx.progress(Progress::new(3.0).total(10.0).message("3 of 10 pages read")).await;
    /// # }
    /// ```
    pub async fn progress(&self, progress: Progress) {
        self.client.progress(progress.progress, progress.total, progress.message).await;
    }

    /// Sends a log message to the client (`notifications/message`, logger = the tool),
    /// if the client's `logging/setLevel` (default `Info`) admits `level`. Over stateful
    /// HTTP it travels on the call's own response stream, ahead of the result, so a client
    /// that never opened the session's standalone stream gets it too. (MCP deprecates
    /// logging in SEP-2577.)
    pub async fn log(&self, level: LogLevel, message: impl Into<String>) {
        self.client.log(level, self.tool, message.into()).await;
    }

    /// Whether the client said it can answer `question` (its declared capabilities).
    pub fn can_ask(&self, question: &Ask) -> bool {
        self.client.inputs().answerable(question)
    }

    /// Whether the client cancelled this call. The server drops a cancelled handler at its
    /// next `.await` and commits nothing; a handler doing long synchronous work can check
    /// this between steps.
    pub fn is_cancelled(&self) -> bool {
        self.client.cancellation().is_cancelled()
    }
}

/// Asking the client (see [`crate::input`] for how each protocol revision carries it).
impl Ctx {
    /// Asks the client one question, under `key` (a name of the handler's choosing, unique
    /// within the call: on MCP 2026-07-28 the answer comes back under it in the retried
    /// call). The wait counts against the handler's deadline.
    ///
    /// ```no_run
    /// # use toolgate_runtime::{Ctx, ToolError};
    /// # use toolgate_runtime::input::Ask;
    /// # #[derive(serde::Deserialize, schemars::JsonSchema)] struct Reason { reason: String }
    /// # async fn f(ctx: Ctx) -> Result<(), ToolError> {
    /// let answer = ctx.ask("reason", Ask::form::<Reason>("Why is this invoice rejected?")?).await?;
    /// let Some(Reason { reason }) = answer.accepted::<Reason>()? else {
    ///     return Err(ToolError::failed("NOT_REJECTED", "the person did not give a reason"));
    /// };
    /// # Ok(()) }
    /// ```
    pub async fn ask(&self, key: impl Into<String>, question: Ask) -> Result<Answer, ToolError> {
        let key = key.into();
        let mut answers = self.ask_all([(key.clone(), question)]).await?;
        answers.remove(&key).ok_or_else(|| ToolError::internal("an asked question has no answer"))
    }

    /// Asks several questions at once (on MCP 2026-07-28, in one round).
    pub async fn ask_all(
        &self,
        questions: impl IntoIterator<Item = (String, Ask)>,
    ) -> Result<BTreeMap<String, Answer>, ToolError> {
        self.client.inputs().ask_all(questions.into_iter().collect()).await
    }

    /// Asks the person to fill in a form of `T`'s fields (elicitation, form mode); `None`
    /// if they declined or cancelled.
    pub async fn elicit<T: DeserializeOwned + JsonSchema>(
        &self,
        key: impl Into<String>,
        message: impl Into<String>,
    ) -> Result<Option<T>, ToolError> {
        self.ask(key, Ask::form::<T>(message)?).await?.accepted()
    }

    /// Asks the person to open `url` (elicitation, URL mode): for what must not pass through
    /// the model. Whether they accepted.
    pub async fn elicit_url(
        &self,
        key: impl Into<String>,
        message: impl Into<String>,
        url: impl Into<String>,
    ) -> Result<bool, ToolError> {
        Ok(matches!(self.ask(key, Ask::url(message, url)).await?, Answer::Accepted(_)))
    }

    /// Asks the client's model to complete `prompt` (sampling) in at most `max_tokens`
    /// tokens; the text it wrote.
    #[deprecated(note = "sampling is deprecated by MCP (SEP-2577); clients may stop offering it")]
    #[allow(deprecated)]
    pub async fn sample(
        &self,
        key: impl Into<String>,
        prompt: impl Into<String>,
        max_tokens: u32,
    ) -> Result<String, ToolError> {
        match self.ask(key, Ask::sample(prompt, max_tokens)).await? {
            Answer::Sampled { text, .. } => Ok(text),
            _ => Err(ToolError::input_unavailable("the client did not sample")),
        }
    }
}

/// One progress report of a call, for [`Ctx::progress`]: how far it is, and optionally the
/// end and a message for the user.
///
/// `Progress::new(3.0).total(10.0).message("3 of 10 pages read")`. The progress should grow
/// with each report of a call; `total`, when known, is the value it reaches at the end.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    progress: f64,
    total: Option<f64>,
    message: Option<String>,
}

impl Progress {
    /// Progress so far, without a known total or a message.
    pub fn new(progress: f64) -> Self {
        Self { progress, total: None, message: None }
    }

    /// The value progress reaches when the call is done.
    #[must_use]
    pub fn total(mut self, total: f64) -> Self {
        self.total = Some(total);
        self
    }

    /// A message for the user about this step.
    #[must_use]
    pub fn message(mut self, message: impl Into<String>) -> Self {
        self.message = Some(message.into());
        self
    }
}

/// One call's note for its transition: written by the handler, taken by the commit.
#[derive(Debug, Clone, Default)]
pub(crate) struct CallNote(std::sync::Arc<std::sync::Mutex<Option<String>>>);

impl CallNote {
    pub(crate) fn set(&self, note: String) {
        *self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(note);
    }

    pub(crate) fn take(&self) -> Option<String> {
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).take()
    }
}
