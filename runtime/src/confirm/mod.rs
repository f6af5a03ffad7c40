//! Confirmations: a call to a `confirm`ed tool runs only with a one-time code bound to
//! *that* call — this principal, this tool, this instance or flow, these arguments — and
//! nothing the model writes stands in for it.
//!
//! The first call gets `CONFIRMATION_REQUIRED` with a `challenge_id`; the code goes to the
//! person through an [`OtpSender`] (or comes from their authenticator app, [`TotpSecrets`]).
//! The confirming call repeats the call with `challenge_id` and `otp`. A challenge lives in
//! the store (so any replica can confirm it), keeps only a digest of its code, is used
//! once and expires. A right code is checked here and spent by the call's commit: in the
//! same compare-and-set as the transition it confirms, on the record the challenge is
//! bound to (its instance, or its flow), under that record's lease. A call that never
//! commits — refused by a later step, failed, timed out, killed — leaves the code live
//! until the challenge expires; a call that holds no such lease spends it on the
//! challenge itself before its handler runs (`spend.rs`). Wrong codes are counted across
//! challenges, per principal and per instance (`guard.rs`): too many lock the tool
//! (`CONFIRMATION_LOCKED`), each lock longer than the last, and challenges issued are
//! capped too. Codes are compared in constant
//! time and never logged.
//!
//! This is step 8 of the call pipeline (`docs/call-pipeline.md`), after the argument check and
//! before the rate limit.

mod digest;
mod guard;
mod sender;
mod spend;
mod stored;

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

pub(crate) use digest::Transaction;
#[cfg(feature = "webhook")]
pub use sender::WebhookSender;
pub use sender::{OtpDelivery, OtpError, OtpFuture, OtpSender, OutboxSender, TotpSecrets};
pub(crate) use spend::{Accepted, Spend, place};
use stored::Challenge;
pub(crate) use stored::gone;

use crate::auth::Principal;
use crate::client::ClientLink;
use crate::error::ToolError;
use crate::store::{FlowStore, Snapshot, StoreError, StoreKey, now_ms};
use crate::types::Money;

/// The argument a confirming call names its challenge in.
pub const CHALLENGE_ARGUMENT: &str = "challenge_id";
/// The argument a confirming call carries its code in.
pub const OTP_ARGUMENT: &str = "otp";

/// How long a challenge lives by default.
pub const DEFAULT_CHALLENGE_TTL: Duration = Duration::from_secs(5 * 60);
/// Wrong codes a challenge takes by default before it locks.
pub const DEFAULT_MAX_ATTEMPTS: u32 = 5;
/// How long confirmations stay locked by default after too many wrong codes.
pub const DEFAULT_LOCK: Duration = Duration::from_secs(15 * 60);

/// `#[action(confirm = "otp", confirm_above = "amount > 500.00 EUR")]` (generated code).
#[doc(hidden)]
#[derive(Debug, Clone, Copy)]
pub struct ConfirmPolicy {
    /// Confirm only above this amount of a `Money` argument; always without one.
    pub above: Option<ConfirmAbove>,
}

/// `confirm_above = "FIELD > AMOUNT CURRENCY"` (generated code).
#[doc(hidden)]
#[derive(Debug, Clone, Copy)]
pub struct ConfirmAbove {
    /// The `Money` argument.
    pub field: &'static str,
    /// The threshold's amount, a decimal string.
    pub amount: &'static str,
    /// The threshold's ISO 4217 currency.
    pub currency: &'static str,
}

impl ConfirmPolicy {
    /// Whether a call with `arguments` must be confirmed: always, or above the threshold.
    /// An amount in another currency than the threshold's, or one that cannot be read, is
    /// confirmed: the threshold never lets an unknown amount through.
    pub(crate) fn applies(&self, arguments: &Map<String, Value>) -> bool {
        let Some(above) = self.above else { return true };
        let Ok(threshold) = Money::parse(above.amount, above.currency) else { return true };
        match arguments.get(above.field).map(Money::from_json) {
            Some(Ok(amount)) if amount.currency() == threshold.currency() => {
                amount.minor_units() > threshold.minor_units()
            }
            _ => true,
        }
    }
}

/// Where codes come from.
#[derive(Clone)]
pub(crate) enum Channel {
    /// The server generates a code and a sender delivers it.
    Sender(Arc<dyn OtpSender>),
    /// The person's authenticator app shows it.
    Totp(TotpSecrets),
}

impl Channel {
    fn name(&self) -> &str {
        match self {
            Self::Sender(sender) => sender.channel(),
            Self::Totp(_) => "totp",
        }
    }
}

/// The server's confirmation settings.
#[derive(Clone)]
pub(crate) struct Confirmations {
    pub(crate) channel: Option<Channel>,
    /// The URL of the confirmation page (`confirmation_page`): a client that supports
    /// URL-mode elicitation is sent the code there, out of the model's reach.
    pub(crate) page: Option<String>,
    pub(crate) ttl: Duration,
    pub(crate) max_attempts: u32,
    pub(crate) lock: Duration,
    /// Challenges one principal may be issued for one tool, and the window they count in.
    pub(crate) challenges: (u32, Duration),
}

impl Default for Confirmations {
    fn default() -> Self {
        Self {
            channel: None,
            page: None,
            ttl: DEFAULT_CHALLENGE_TTL,
            max_attempts: DEFAULT_MAX_ATTEMPTS,
            lock: DEFAULT_LOCK,
            challenges: (guard::MAX_CHALLENGES, guard::CHALLENGE_WINDOW),
        }
    }
}

/// How this call's code reaches the person.
enum Route<'a> {
    /// The configured channel.
    Channel(&'a Channel),
    /// The confirmation page, offered to the client by URL-mode elicitation.
    Page { page: &'a str, client: &'a dyn ClientLink },
}

/// The page's channel: the code travels in the page's URL, which the elicitation carries.
struct PageSender;

impl OtpSender for PageSender {
    fn channel(&self) -> &str {
        "url"
    }

    fn send<'a>(&'a self, _delivery: &'a OtpDelivery) -> OtpFuture<'a> {
        Box::pin(async { Ok(()) })
    }
}

/// The confirmation page toolgate serves (at `/confirm`, see
/// [`ServerBuilder::confirmation_page`](crate::ServerBuilder::confirmation_page)): it shows
/// the one-time code its URL's fragment carries, which never reaches a server.
pub const CONFIRMATION_PAGE: &str = include_str!("page.html");

/// What a confirming call presents.
#[derive(Debug, Clone)]
pub(crate) struct Presented {
    pub(crate) challenge_id: String,
    pub(crate) otp: String,
}

/// What a presented confirmation that is not a right code turned out to be.
#[derive(Debug, Clone, Copy)]
enum Verdict {
    /// The challenge was issued for another transaction.
    OtherCall,
    WrongCode {
        attempts_left: u32,
    },
}

/// Adds the confirmation's two optional fields to a confirmed tool's input schema.
pub(crate) fn add_to_input_schema(schema: &mut rmcp::model::JsonObject) -> Result<(), String> {
    use crate::schema::{Position, Presence, add_owned_property};
    // No descriptions: every listed confirmed tool pays for them on every turn, and the
    // CONFIRMATION_REQUIRED refusal says what to put in both (and never to invent a code)
    // exactly when the model needs it.
    let challenge = serde_json::json!({ "type": "string" });
    let otp = serde_json::json!({ "type": "string" });
    add_owned_property(
        schema,
        CHALLENGE_ARGUMENT,
        challenge,
        Position::Last,
        Presence::Optional,
        "input",
        "the confirmation",
    )?;
    add_owned_property(schema, OTP_ARGUMENT, otp, Position::Last, Presence::Optional, "input", "the confirmation")
}

/// Takes the confirmation's own fields out of `arguments`: both, or neither.
pub(crate) fn take_presented(arguments: &mut Map<String, Value>) -> Result<Option<Presented>, ToolError> {
    let challenge = arguments.remove(CHALLENGE_ARGUMENT);
    let otp = arguments.remove(OTP_ARGUMENT);
    match (challenge, otp) {
        (None | Some(Value::Null), None | Some(Value::Null)) => Ok(None),
        (Some(Value::String(challenge_id)), Some(Value::String(otp))) => Ok(Some(Presented { challenge_id, otp })),
        (challenge, _) => {
            let missing = if challenge.is_none() { CHALLENGE_ARGUMENT } else { OTP_ARGUMENT };
            Err(ToolError::invalid_argument(
                missing,
                format!("a confirmation gives both `{CHALLENGE_ARGUMENT}` and `{OTP_ARGUMENT}`, as strings"),
            ))
        }
    }
}

fn code_digest(challenge_id: &str, code: &str) -> String {
    Sha256::digest(format!("{challenge_id}:{code}").as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

fn same(a: &str, b: &str) -> bool {
    a.as_bytes().ct_eq(b.as_bytes()).into()
}

fn rfc3339(ms: u64) -> String {
    chrono::DateTime::from_timestamp_millis(ms as i64)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
        .unwrap_or_default()
}

/// A six-digit code, uniformly drawn.
fn fresh_code() -> String {
    loop {
        let mut bytes = [0u8; 4];
        getrandom::fill(&mut bytes).expect("the OS random number generator is unavailable");
        let n = u32::from_le_bytes(bytes);
        // Below the largest multiple of 10^6: no digit is likelier than another.
        if n < 4_294_000_000 {
            return format!("{:06}", n % 1_000_000);
        }
    }
}

fn unavailable(error: StoreError) -> ToolError {
    ToolError::store_unavailable(error, 1_000)
}

impl Confirmations {
    /// Judges a call to `tool` that must be confirmed: a new challenge (refused with
    /// `CONFIRMATION_REQUIRED`), or the presented one checked — a wrong code counted at
    /// once, a right one [`Accepted`] and left for the call's commit to spend.
    pub(crate) async fn judge(
        &self,
        store: &dyn FlowStore,
        principal: &Principal,
        transaction: &Transaction<'_>,
        record: &Snapshot,
        presented: Option<Presented>,
        client: Option<&dyn ClientLink>,
    ) -> Result<Accepted, ToolError> {
        let tool = transaction.tool;
        // A code the commit of its instance or flow (`record`, as last read) spent is gone,
        // judged before the code is: no strike for presenting a used one.
        if presented.as_ref().is_some_and(|p| record.spent_challenge(&p.challenge_id, now_ms())) {
            return Err(gone(tool));
        }
        let by_page = self.page.as_deref().zip(client).filter(|(_, client)| client.takes_url_elicitation());
        let route = match (by_page, &self.channel) {
            (Some((page, client)), _) => Route::Page { page, client },
            (None, Some(channel)) => Route::Channel(channel),
            (None, None) => {
                return Err(ToolError::internal(format_args!(
                    "`{tool}` must be confirmed and no OTP channel reaches this client (it does not take URL-mode elicitation)"
                )));
            }
        };
        let guards = guard::Guards::new(
            &principal.digest(),
            transaction.subject,
            tool,
            self.max_attempts,
            self.lock,
            self.challenges,
        );
        if let Some(retry_after_ms) = guards.locked_for(store).await? {
            return Err(ToolError::confirmation_locked(tool, retry_after_ms.max(1)));
        }
        match (presented, route) {
            (None, route) => {
                guards.issue(store).await?;
                self.issue(store, route, principal, transaction).await
            }
            // A code from the page is checked like any delivered one.
            (Some(presented), Route::Page { .. }) => {
                let delivered = Channel::Sender(Arc::new(PageSender));
                self.check(store, &delivered, principal, transaction, presented, &guards).await
            }
            (Some(presented), Route::Channel(channel)) => {
                self.check(store, channel, principal, transaction, presented, &guards).await
            }
        }
    }

    async fn issue(
        &self,
        store: &dyn FlowStore,
        route: Route<'_>,
        principal: &Principal,
        transaction: &Transaction<'_>,
    ) -> Result<Accepted, ToolError> {
        // Never accepted: the call is refused with `CONFIRMATION_REQUIRED` once the code
        // is on its way (or with why it could not be sent).
        let page_sender;
        let (channel, page) = match route {
            Route::Channel(channel) => (channel, None),
            Route::Page { page, client } => {
                page_sender = Channel::Sender(Arc::new(PageSender));
                (&page_sender, Some((page, client)))
            }
        };
        let challenge_id = uuid::Uuid::new_v4().simple().to_string();
        let expires_at_ms = now_ms() + self.ttl.as_millis() as u64;
        let code = matches!(channel, Channel::Sender(_)).then(fresh_code);
        if let Channel::Totp(secrets) = channel
            && !secrets.knows(principal)
        {
            return Err(ToolError::internal(format_args!(
                "`{}` must be confirmed by TOTP and principal `{}` has no TOTP secret",
                transaction.tool,
                principal.subject()
            )));
        }
        let challenge = Challenge {
            principal: principal.digest(),
            transaction: transaction.digest(),
            code: code.as_deref().map(|code| code_digest(&challenge_id, code)),
            attempts_left: self.max_attempts,
            spent: false,
        };
        let record = Snapshot {
            expires_at_ms: Some(expires_at_ms),
            record: Some(serde_json::to_value(&challenge).expect("a challenge serializes")),
            ..Snapshot::default().next()
        };
        let key = StoreKey::challenge(&challenge_id);
        store.commit(&key, 0, &record, None, None).await.map_err(unavailable)?;
        if let (Some((page, client)), Some(otp)) = (page, &code) {
            let url = format!(
                "{page}#challenge={challenge_id}&code={otp}&tool={}&expires={}",
                transaction.tool,
                rfc3339(expires_at_ms)
            );
            let message = format!(
                "Confirm `{}`: open the page for your one-time code, and give it to the assistant only if you want this done.",
                transaction.tool
            );
            let parsed = url::Url::parse(&url)
                .map_err(|e| ToolError::internal(format_args!("the confirmation page's URL: {e}")))?;
            match client.elicit_url(message, parsed, challenge_id.clone(), self.ttl).await {
                Ok(rmcp::model::ElicitationAction::Accept) => {}
                Ok(_) => {
                    let _ = store.remove(&key).await;
                    return Err(ToolError::confirmation_failed(transaction.tool, "the user declined to confirm", 0));
                }
                Err(error) => {
                    let _ = store.remove(&key).await;
                    return Err(ToolError::internal(format_args!(
                        "the confirmation page could not be offered: {error}"
                    )));
                }
            }
        } else if let (Channel::Sender(sender), Some(otp)) = (channel, code) {
            let delivery = OtpDelivery {
                challenge_id: challenge_id.clone(),
                otp,
                principal: principal.subject().to_string(),
                tenant: principal.tenant().map(str::to_string),
                tool: transaction.tool.to_string(),
                expires_at: rfc3339(expires_at_ms),
            };
            if let Err(error) = sender.send(&delivery).await {
                let _ = store.remove(&key).await;
                return Err(ToolError::internal(error));
            }
        }
        tracing::info!(tool = transaction.tool, %challenge_id, channel = channel.name(), "confirmation challenge issued");
        Err(ToolError::confirmation_required(transaction.tool, challenge_id, channel.name(), rfc3339(expires_at_ms)))
    }

    async fn check(
        &self,
        store: &dyn FlowStore,
        channel: &Channel,
        principal: &Principal,
        transaction: &Transaction<'_>,
        presented: Presented,
        guards: &guard::Guards,
    ) -> Result<Accepted, ToolError> {
        let tool = transaction.tool;
        let gone = || gone(tool);
        let key = StoreKey::challenge(&presented.challenge_id);
        // A few rounds: a concurrent wrong code may move the record between load and write.
        for _ in 0..8 {
            let snapshot = store.load(&key).await.map_err(unavailable)?;
            let now = now_ms();
            let Some(challenge) = snapshot
                .record
                .as_ref()
                .filter(|_| snapshot.version > 0 && !snapshot.is_expired(now))
                .and_then(|record| serde_json::from_value::<Challenge>(record.clone()).ok())
            else {
                return Err(gone());
            };
            // Another principal's challenge is, to this one, no challenge at all.
            if !same(&challenge.principal, &principal.digest()) || challenge.spent {
                return Err(gone());
            }
            let other_call = !same(&challenge.transaction, &transaction.digest());
            // A right code is not spent here: the call's commit spends it (`Accepted`), so
            // a call that never commits leaves it live until it expires.
            if !other_call && self.code_matches(channel, principal, &presented, &challenge) {
                guards.confirmed(store).await?;
                tracing::info!(tool, challenge_id = %presented.challenge_id, "code accepted");
                return Ok(Accepted {
                    challenge_id: presented.challenge_id,
                    expires_at_ms: snapshot.expires_at_ms.unwrap_or(now),
                    subject: transaction.subject.to_string(),
                });
            }
            let mut next = challenge.clone();
            let verdict = if other_call {
                Verdict::OtherCall
            } else {
                Verdict::WrongCode { attempts_left: challenge.attempts_left.saturating_sub(1) }
            };
            match verdict {
                Verdict::OtherCall => next.spent = true,
                Verdict::WrongCode { attempts_left } => {
                    next.attempts_left = attempts_left;
                    next.spent = attempts_left == 0;
                }
            }
            let record = serde_json::to_value(&next).expect("a challenge serializes");
            let written = Snapshot { record: Some(record), ..snapshot.next() };
            match store.commit(&key, snapshot.version, &written, None, None).await {
                Ok(_) => {}
                // Another call moved the challenge meanwhile (a concurrent confirmation
                // may have spent it): judge again on what it is now.
                Err(StoreError::Conflict { .. }) => continue,
                Err(error) => return Err(unavailable(error)),
            }
            return match verdict {
                // Another amount, target or tool than the one the code was sent for.
                Verdict::OtherCall => Err(ToolError::confirmation_failed(
                    tool,
                    "this challenge was issued for a different call (other arguments, instance or tool); it is now void",
                    0,
                )),
                // Counted across challenges: a fresh challenge brings no fresh guesses.
                Verdict::WrongCode { attempts_left } => match guards.strike(store).await? {
                    guard::Strike::Locked(lock_ms) => {
                        tracing::warn!(tool, "confirmations locked after too many wrong codes");
                        Err(ToolError::confirmation_locked(tool, lock_ms))
                    }
                    guard::Strike::Left(left) => {
                        Err(ToolError::confirmation_failed(tool, "the code is wrong", attempts_left.min(left)))
                    }
                },
            };
        }
        Err(gone())
    }

    fn code_matches(
        &self,
        channel: &Channel,
        principal: &Principal,
        presented: &Presented,
        challenge: &Challenge,
    ) -> bool {
        match (channel, &challenge.code) {
            (Channel::Sender(_), Some(stored)) => same(stored, &code_digest(&presented.challenge_id, &presented.otp)),
            (Channel::Totp(secrets), None) => secrets.check(principal, &presented.otp, now_ms() / 1_000),
            _ => false,
        }
    }
}
