//! Payments: money moves only for an authenticated principal, with a one-time code bound to
//! exactly that movement, and each tenant sees only its own payments.
//!
//! - `payment_create` records a payment for an amount (with the `payments:create` scope:
//!   signing in says who calls, not who may set amounts) and returns its id (`PAY-1`, …,
//!   numbered per tenant by a counter in toolgate's store: never reused, across restarts
//!   and replicas, and the model never picks one). A payment id never created is refused
//!   by the gate, whatever the call.
//! - `payment_authorize`, then `payment_capture` (confirmed with a one-time code, and
//!   idempotent by `request_id`) or `payment_void`; a captured payment can be
//!   `payment_refund`ed (confirmed, and only by a principal with the `payments:refund`
//!   scope). `payment_status` reads one; `payment_history` tells its transitions, and the
//!   task at work on it, if one is.
//! - `payment_settle` settles an authorized payment with the processor in one batch, which
//!   takes seconds (`--settle-seconds N`, default 3): a client that opted in to MCP tasks
//!   gets a task, and while it runs the payment is busy — every other change is refused
//!   with `TASK_RUNNING`, naming the task; `payment_status` still answers. Once the
//!   settlement commits, and only then, the customer is notified: an effect recorded in
//!   the same commit (`notify_settled`, to `--notices-log PATH`), dispatched once.
//! - An authorization neither captured, settled nor voided within seven days lapses, as a
//!   card's does (`--after authorized=2s` shortens it, for a test): the payment is `lapsed`
//!   and the processor is told to release the reserved amount (`release_authorization`,
//!   the state's `entry` effect, to the same notices log), once.
//!
//! ```text
//! cargo run --example payments -- --http 127.0.0.1:8080 \
//!     --token clerk=s3cret-clerk-token --otp-outbox /tmp/otp.jsonl
//! ```
//!
//! A client then sends `Authorization: Bearer s3cret-clerk-token`; the codes a capture or a
//! refund asks for appear in `/tmp/otp.jsonl` (development only: in production an
//! `OtpSender` delivers them to the person, out of the model's reach).

use toolgate::effect::{EffectCall, EffectError};
use toolgate::prelude::*;
use toolgate::types::Money;

// One machine per payment, per tenant: `PAY-1` of one tenant is not `PAY-1` of another.
toolgate::machine! {
    id: "payment",
    key: "payment_id",
    scope: tenant,
    mint: "PAY-{n}",
    context: Payment,
    initial: "created",
    states: {
        created:    { on: { AUTHORIZE: "authorized" } },
        authorized: {
            after: { "P7D": "lapsed" },
            on: { CAPTURE: { target: "captured", guard: "within_authorized" }, SETTLE: "settled", VOID: "voided" }
        },
        captured:   { on: { REFUND: { target: "refunded", guard: "within_captured" } } },
        settled:    { type: "final" },
        voided:     { type: "final" },
        refunded:   { type: "final" },
        lapsed:     { type: "final", entry: release_authorization },
    }
}

/// The one spelling of a payment id.
const PAYMENT_ID: &str = r"^PAY-[1-9][0-9]{0,17}$";

/// Which payment a call is about.
#[derive(Debug, Deserialize, JsonSchema)]
struct PaymentRef {
    /// The payment, as `payment_create` returned it (`PAY-1`).
    #[schemars(pattern(PAYMENT_ID))]
    payment_id: String,
}

/// A payment to record.
#[derive(Debug, Deserialize, JsonSchema)]
struct NewPayment {
    /// What the payment is for, at most 200 characters.
    #[schemars(length(max = 200))]
    description: String,
    /// The amount to authorize.
    amount: Money,
}

/// A capture or a refund: which payment, and how much.
#[derive(Debug, Deserialize, JsonSchema)]
struct Movement {
    /// The payment (`PAY-1`).
    #[schemars(pattern(PAYMENT_ID))]
    payment_id: String,
    /// The amount to move: at most what the payment holds.
    amount: Money,
    /// A fresh identifier of this request (a UUID, say): repeating the call with the same
    /// one returns the first result instead of moving money twice.
    #[schemars(length(min = 8, max = 100))]
    #[allow(dead_code)] // read by toolgate (`idempotency_key`), not by the handlers
    request_id: String,
}

/// A payment's data: each payment instance keeps it as its context, committed with its
/// state in toolgate's store (so a restart, or another replica, sees the whole payment).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
struct Payment {
    /// What it is for.
    description: String,
    /// The amount authorized.
    amount: Money,
    /// The amount captured so far.
    captured: Option<Money>,
    /// The amount refunded so far.
    refunded: Option<Money>,
    /// Who created it.
    created_by: String,
}

/// A payment as the tools report it; toolgate adds its `state`.
#[derive(Debug, Serialize, JsonSchema)]
struct PaymentView {
    /// The payment's id.
    payment_id: String,
    #[serde(flatten)]
    payment: Payment,
}

impl PaymentView {
    fn of(payment_id: &str, payment: &Payment) -> Self {
        Self { payment_id: payment_id.to_string(), payment: payment.clone() }
    }
}

/// The payment's data, which every payment has from its creation on.
fn data<'a>(payment: Option<&'a Payment>, id: &str) -> Result<&'a Payment, ToolError> {
    payment.ok_or_else(|| ToolError::not_found(format!("payment `{id}` has no data: create one with payment_create")))
}

/// Guard: a capture moves at most the amount authorized, in the payment's currency. The
/// gate judges it on the payment's stored data before a code is asked for or the handler
/// runs, and refuses with `GUARD_FAILED`.
fn within_authorized(payment: &Payment, capture: &Movement) -> Result<(), Failure> {
    within(capture.amount, payment.amount, "amount authorized")
}

/// Guard: a refund gives back at most the amount captured.
fn within_captured(payment: &Payment, refund: &Movement) -> Result<(), Failure> {
    let captured = payment.captured.ok_or_else(|| Failure::new("NOTHING_CAPTURED", "nothing was captured"))?;
    within(refund.amount, captured, "amount captured")
}

/// Checks that `amount` is in the payment's currency and at most `limit`.
fn within(amount: Money, limit: Money, what: &str) -> Result<(), Failure> {
    if amount.currency() != limit.currency() {
        return Err(Failure::new("WRONG_CURRENCY", format!("the payment is in {}", limit.currency().code()))
            .with_hint(format!("give the amount in {}", limit.currency().code())));
    }
    if amount.minor_units() > limit.minor_units() {
        return Err(Failure::new("OVER_LIMIT", format!("{amount} is more than the {what} ({limit})"))
            .with_hint(format!("give an amount of at most {limit}")));
    }
    Ok(())
}

/// Record a new payment for an amount and get its id. Needs the `payments:create` scope. Does not authorize or move money.
#[action(domain = "payment", creates, transactional, scope = "payments:create")]
async fn payment_create(
    input: NewPayment,
    principal: Principal,
    mut payment: InstanceMut<Payment>,
    ctx: Ctx,
) -> Result<PaymentView, ToolError> {
    // The id toolgate minted for the new payment.
    let id = ctx.instance().ok_or_else(|| ToolError::internal("a creating call without its minted id"))?;
    let created = Payment {
        description: input.description,
        amount: input.amount,
        captured: None,
        refunded: None,
        created_by: principal.subject().to_string(),
    };
    let view = PaymentView::of(id, &created);
    payment.set(created)?;
    Ok(view)
}

/// Authorize a created payment: the amount is reserved, nothing moves yet. Does not capture.
#[action(domain = "payment", bind_state = "created", transition = "AUTHORIZE", transactional)]
async fn payment_authorize(input: PaymentRef, payment: Instance<Payment>) -> Result<PaymentView, ToolError> {
    Ok(PaymentView::of(&input.payment_id, data(payment.get(), &input.payment_id)?))
}

/// Capture an authorized payment: the money moves. Needs the user's one-time code and the `payments:capture` scope. Does not refund.
#[action(
    domain = "payment",
    bind_state = "authorized",
    transition = "CAPTURE",
    transactional,
    confirm = "otp",
    scope = "payments:capture",
    idempotency_key = "request_id"
)]
async fn payment_capture(input: Movement, mut payment: InstanceMut<Payment>) -> Result<PaymentView, ToolError> {
    // The amount was judged by the `within_authorized` guard.
    let mut captured = data(payment.get(), &input.payment_id)?.clone();
    captured.captured = Some(input.amount);
    let view = PaymentView::of(&input.payment_id, &captured);
    payment.set(captured)?;
    fault_test::pause().await;
    Ok(view)
}

/// A hook for toolgate's crash test, inert unless `PAYMENTS_TEST_CAPTURE_PAUSE_MS` is set:
/// a pause in a capture's handler, after its code was accepted and before the call
/// commits (where the test kills the process).
mod fault_test {
    pub(crate) async fn pause() {
        if let Some(ms) = std::env::var("PAYMENTS_TEST_CAPTURE_PAUSE_MS").ok().and_then(|ms| ms.parse().ok()) {
            tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
        }
    }
}

/// Void an authorized payment: the reservation is released, nothing moves. Does not refund a captured one.
#[action(domain = "payment", bind_state = "authorized", transition = "VOID", transactional)]
async fn payment_void(input: PaymentRef, payment: Instance<Payment>) -> Result<PaymentView, ToolError> {
    Ok(PaymentView::of(&input.payment_id, data(payment.get(), &input.payment_id)?))
}

/// Refund a captured payment: the money goes back. Needs the user's one-time code and the `payments:refund` scope. Does not void.
#[action(
    domain = "payment",
    bind_state = "captured",
    transition = "REFUND",
    transactional,
    confirm = "otp",
    scope = "payments:refund",
    idempotency_key = "request_id"
)]
async fn payment_refund(input: Movement, mut payment: InstanceMut<Payment>) -> Result<PaymentView, ToolError> {
    // The amount was judged by the `within_captured` guard.
    let mut refunded = data(payment.get(), &input.payment_id)?.clone();
    refunded.refunded = Some(input.amount);
    let view = PaymentView::of(&input.payment_id, &refunded);
    payment.set(refunded)?;
    Ok(view)
}

/// How long the processor takes to settle a payment (`--settle-seconds`).
#[derive(Debug, Clone, Copy)]
struct SettleTime(std::time::Duration);

/// Settle an authorized payment with the processor: the full authorized amount moves, in one batch that takes seconds (run it as a task). Needs the `payments:capture` scope. Does not refund.
#[action(
    domain = "payment",
    bind_state = "authorized",
    transition = "SETTLE",
    transactional,
    scope = "payments:capture",
    task = "optional"
)]
async fn payment_settle(
    input: PaymentRef,
    mut payment: InstanceMut<Payment>,
    settle: State<SettleTime>,
    ctx: Ctx,
) -> Result<PaymentView, ToolError> {
    let mut settled = data(payment.get(), &input.payment_id)?.clone();
    // The processor's batch: nothing is committed until it answers.
    tokio::time::sleep(settle.0.0).await;
    settled.captured = Some(settled.amount);
    let view = PaymentView::of(&input.payment_id, &settled);
    // The customer is told once the settlement is committed, and only then.
    ctx.effect("notify_settled", &view)?;
    payment.set(settled)?;
    Ok(view)
}

/// Read a payment of your tenant and its state. Does not change it.
#[action(domain = "payment")]
async fn payment_status(
    input: PaymentRef,
    // Only an authenticated caller reads a payment, and only of its own tenant.
    _caller: Principal,
    payment: Instance<Payment>,
) -> Result<PaymentView, ToolError> {
    Ok(PaymentView::of(&input.payment_id, data(payment.get(), &input.payment_id)?))
}

/// Tells the customer a payment settled: here, a line in a file of notices
/// (`--notices-log PATH`, default `$TMPDIR/toolgate-payments-notices.jsonl`), with the
/// effect's idempotency key that a real notification service would deduplicate by.
async fn notify(call: EffectCall) -> Result<(), EffectError> {
    let _attempt = outage_test::attempt(&call).await?;
    let view: serde_json::Value = call.input()?;
    let line = serde_json::json!({ "key": call.key(), "payment": view["payment_id"], "notice": "settled" });
    append_line(&line)
}

/// `lapsed`'s `entry` effect: the processor releases the amount a lapsed authorization
/// reserved. Here the processor is the notices log; its idempotency key makes a repeated
/// attempt recognisable, as a real processor's API would.
async fn release_authorization(call: EffectCall) -> Result<(), EffectError> {
    let _attempt = outage_test::attempt(&call).await?;
    let line = serde_json::json!({ "key": call.key(), "payment": call.instance(), "notice": "released" });
    append_line(&line)
}

/// A hook for toolgate's scale harness (`benches/scale/backlog.rs`), inert unless
/// `PAYMENTS_TEST_OUTAGE_FILE` is set: while the file it names exists, the processor and
/// the notification service are down, and every attempt of an effect fails. Each attempt
/// takes `PAYMENTS_TEST_PROCESSOR_MS` (default 0), and is logged, a JSON line each, to the
/// same path with `.attempts.jsonl` added: when, which attempt, whether the service was up,
/// and how many attempts this process had under way at once.
mod outage_test {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use toolgate::effect::{EffectCall, EffectError};

    /// Attempts under way in this process.
    static UNDER_WAY: AtomicUsize = AtomicUsize::new(0);

    /// One attempt under way, counted until it drops.
    pub(crate) struct UnderWay;

    impl Drop for UnderWay {
        fn drop(&mut self) {
            UNDER_WAY.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// Counts, waits for and logs the attempt `call`; fails it while the outage lasts.
    pub(crate) async fn attempt(call: &EffectCall) -> Result<Option<UnderWay>, EffectError> {
        let Some(outage) = std::env::var_os("PAYMENTS_TEST_OUTAGE_FILE").map(std::path::PathBuf::from) else {
            return Ok(None);
        };
        let under_way = UNDER_WAY.fetch_add(1, Ordering::Relaxed) + 1;
        let counted = UnderWay;
        let latency = std::env::var("PAYMENTS_TEST_PROCESSOR_MS").ok().and_then(|ms| ms.parse().ok()).unwrap_or(0);
        tokio::time::sleep(std::time::Duration::from_millis(latency)).await;
        let up = !outage.exists();
        let at_ms = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_millis();
        let line = serde_json::json!({ "at_ms": at_ms, "attempt": call.attempt(), "up": up, "under_way": under_way });
        let mut log = outage.into_os_string();
        log.push(".attempts.jsonl");
        super::append_line_to(std::path::Path::new(&log), &line)?;
        if up { Ok(Some(counted)) } else { Err(EffectError::new("the processor is down (PAYMENTS_TEST_OUTAGE_FILE)")) }
    }
}

/// Where the customer's notices and the processor's releases go (`--notices-log PATH`).
static NOTICES_LOG: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();

/// Appends `line` to the notices log in one write, so that replicas sharing the file never
/// interleave their lines.
fn append_line(line: &serde_json::Value) -> Result<(), EffectError> {
    let path = NOTICES_LOG.get_or_init(|| std::env::temp_dir().join("toolgate-payments-notices.jsonl"));
    append_line_to(path, line)
}

/// Appends `line` to the file at `path` in one write.
fn append_line_to(path: &std::path::Path, line: &serde_json::Value) -> Result<(), EffectError> {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new().create(true).append(true).open(path)?;
    file.write_all(format!("{line}\n").as_bytes())?;
    Ok(())
}

/// This example's own options, on toolgate's command line (`ServerBuilder::run_cli_with`):
/// listed in `--help` under their heading, and each an environment variable too.
#[derive(clap::Args)]
#[command(next_help_heading = "Payments")]
struct PaymentsOptions {
    /// How long the processor takes to settle a capture
    /// (default 3; `0.5` too)
    #[arg(long, env = "PAYMENTS_SETTLE_SECONDS", value_name = "SECONDS", value_parser = seconds, verbatim_doc_comment)]
    settle_seconds: Option<std::time::Duration>,
    /// Where the customer's notices and the processor's releases
    /// go, a JSON line each (default: a file in the temporary directory)
    #[arg(long, env = "PAYMENTS_NOTICES_LOG", value_name = "PATH", verbatim_doc_comment)]
    notices_log: Option<std::path::PathBuf>,
}

/// `--settle-seconds`: a number of seconds, fractions too.
fn seconds(value: &str) -> Result<std::time::Duration, String> {
    let seconds = value.parse::<f64>().ok().filter(|s| s.is_finite() && *s >= 0.0);
    seconds.map(std::time::Duration::from_secs_f64).ok_or_else(|| "not a number of seconds (e.g. `3` or `0.5`)".into())
}

#[tokio::main]
async fn main() -> Result<(), ServeError> {
    toolgate::Server::from_registry("payments")
        // After a settlement commits: the customer's notice, once per settlement (its key).
        .effect("notify_settled", notify)
        // `payment_history`: who moved a payment, when and why; and the task at work on it.
        .history_tool("payment")
        .version(env!("CARGO_PKG_VERSION"))
        .instructions("Payments: create, authorize, then capture (the user confirms with a one-time code) or void; refund a capture. Every call needs the user's credentials.")
        .run_cli_with(|options: PaymentsOptions, server| {
            if let Some(path) = options.notices_log {
                let _ = NOTICES_LOG.set(path);
            }
            server.state(SettleTime(options.settle_seconds.unwrap_or(std::time::Duration::from_secs(3))))
        })
        .await
}
