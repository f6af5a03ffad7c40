//! Payments: money moves only for an authenticated principal, with a one-time code bound to
//! exactly that movement, and each tenant sees only its own payments.
//!
//! - `payment_create` records a payment for an amount and returns its id (`PAY-1`, …,
//!   numbered per tenant by a counter in toolgate's store: never reused, across restarts
//!   and replicas, and the model never picks one). A payment id never created is refused
//!   by the gate, whatever the call.
//! - `payment_authorize`, then `payment_capture` (confirmed with a one-time code, and
//!   idempotent by `request_id`) or `payment_void`; a captured payment can be
//!   `payment_refund`ed (confirmed, and only by a principal with the `payments:refund`
//!   scope). `payment_status` reads one.
//!
//! ```text
//! cargo run --example payments -- --http 127.0.0.1:8080 \
//!     --token clerk=s3cret-clerk-token --otp-outbox /tmp/otp.jsonl
//! ```
//!
//! A client then sends `Authorization: Bearer s3cret-clerk-token`; the codes a capture or a
//! refund asks for appear in `/tmp/otp.jsonl` (development only: in production an
//! `OtpSender` delivers them to the person, out of the model's reach).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use toolgate::Principal;
use toolgate::prelude::*;
use toolgate::types::Money;

// One machine per payment, per tenant: `PAY-1` of one tenant is not `PAY-1` of another.
toolgate::machine! {
    id: "payment",
    key: "payment_id",
    scope: tenant,
    mint: "PAY-{n}",
    initial: "created",
    states: {
        created:    { on: { AUTHORIZE: "authorized" } },
        authorized: { on: { CAPTURE: "captured", VOID: "voided" } },
        captured:   { on: { REFUND: "refunded" } },
        voided:     { type: "final" },
        refunded:   { type: "final" },
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

/// A payment as the tools report it; toolgate adds its `state`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
struct Payment {
    /// The payment's id.
    payment_id: String,
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

/// The payments of every tenant: tenant → id → payment. (A real server keeps them in its
/// database; the workflow's state lives in toolgate's store.)
#[derive(Debug, Default, Clone)]
struct Payments {
    by_tenant: Arc<Mutex<HashMap<String, Vec<Payment>>>>,
}

impl Payments {
    fn tenant(principal: &Principal) -> String {
        principal.tenant().unwrap_or_default().to_string()
    }

    /// Records payment `payment_id`, the id toolgate minted for the new instance.
    fn create(&self, principal: &Principal, payment_id: &str, description: String, amount: Money) -> Payment {
        let mut by_tenant = self.by_tenant.lock().unwrap();
        let payments = by_tenant.entry(Self::tenant(principal)).or_default();
        let payment = Payment {
            payment_id: payment_id.to_string(),
            description,
            amount,
            captured: None,
            refunded: None,
            created_by: principal.subject().to_string(),
        };
        payments.push(payment.clone());
        payment
    }

    /// The principal's tenant's payment `id`: another tenant's never, whether it exists
    /// or not.
    fn update<T>(
        &self,
        principal: &Principal,
        id: &str,
        f: impl FnOnce(&mut Payment) -> Result<T, ToolError>,
    ) -> Result<T, ToolError> {
        let mut by_tenant = self.by_tenant.lock().unwrap();
        let payment = by_tenant
            .get_mut(&Self::tenant(principal))
            .and_then(|payments| payments.iter_mut().find(|p| p.payment_id == id))
            .ok_or_else(|| ToolError::not_found(format!("no payment `{id}`: create one with payment_create")))?;
        f(payment)
    }
}

/// Checks that `amount` is in the payment's currency and at most `limit`.
fn within(amount: Money, limit: Money, what: &str) -> Result<(), ToolError> {
    if amount.currency() != limit.currency() {
        return Err(ToolError::invalid_argument(
            "amount",
            format!("must be in {}, the payment's currency", limit.currency().code()),
        ));
    }
    if amount.minor_units() > limit.minor_units() {
        return Err(ToolError::invalid_argument("amount", format!("is more than the {what} ({limit})")));
    }
    Ok(())
}

/// Record a new payment for an amount and get its id. Does not authorize or move money.
#[action(domain = "payment", creates, transactional)]
async fn payment_create(
    input: NewPayment,
    principal: Principal,
    payments: State<Payments>,
    ctx: Ctx,
) -> Result<Payment, ToolError> {
    // The id toolgate minted for the new payment.
    let id = ctx.instance().ok_or_else(|| ToolError::internal("a creating call without its minted id"))?;
    Ok(payments.create(&principal, id, input.description, input.amount))
}

/// Authorize a created payment: the amount is reserved, nothing moves yet. Does not capture.
#[action(domain = "payment", bind_state = "created", transition = "AUTHORIZE", transactional)]
async fn payment_authorize(
    input: PaymentRef,
    principal: Principal,
    payments: State<Payments>,
) -> Result<Payment, ToolError> {
    payments.update(&principal, &input.payment_id, |payment| Ok(payment.clone()))
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
async fn payment_capture(
    input: Movement,
    principal: Principal,
    payments: State<Payments>,
) -> Result<Payment, ToolError> {
    payments.update(&principal, &input.payment_id, |payment| {
        within(input.amount, payment.amount, "amount authorized")?;
        payment.captured = Some(input.amount);
        Ok(payment.clone())
    })
}

/// Void an authorized payment: the reservation is released, nothing moves. Does not refund a captured one.
#[action(domain = "payment", bind_state = "authorized", transition = "VOID", transactional)]
async fn payment_void(
    input: PaymentRef,
    principal: Principal,
    payments: State<Payments>,
) -> Result<Payment, ToolError> {
    payments.update(&principal, &input.payment_id, |payment| Ok(payment.clone()))
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
async fn payment_refund(
    input: Movement,
    principal: Principal,
    payments: State<Payments>,
) -> Result<Payment, ToolError> {
    payments.update(&principal, &input.payment_id, |payment| {
        let captured =
            payment.captured.ok_or_else(|| ToolError::invalid_argument("payment_id", "has nothing captured"))?;
        within(input.amount, captured, "amount captured")?;
        payment.refunded = Some(input.amount);
        Ok(payment.clone())
    })
}

/// Read a payment of your tenant and its state. Does not change it.
#[action(domain = "payment")]
async fn payment_status(
    input: PaymentRef,
    principal: Principal,
    payments: State<Payments>,
) -> Result<Payment, ToolError> {
    payments.update(&principal, &input.payment_id, |payment| Ok(payment.clone()))
}

#[tokio::main]
async fn main() -> Result<(), ServeError> {
    toolgate::Server::from_registry("payments")
        .version(env!("CARGO_PKG_VERSION"))
        .state(Payments::default())
        .instructions("Payments: create, authorize, then capture (the user confirms with a one-time code) or void; refund a capture. Every call needs the user's credentials.")
        .run_cli()
        .await
}
