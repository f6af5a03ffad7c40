//! The invoice workflow: tools that appear only when the invoice's state allows them.
//!
//! The workflow belongs to each invoice (the machine is keyed by `id`): approving INV-1
//! does not make INV-2 payable, and an invoice paid in one session is paid in all.
//! `invoice_discharge` is not listed until the invoice the session works on is approved,
//! and a client that calls it anyway gets `FORBIDDEN` naming that invoice, its state, and
//! the tools it *can* call.
//!
//! Each invoice also has a receipt, `invoice://INV-7/receipt` (`resources/read`), that
//! exists only once the invoice is discharged: before that, it is "resource not found",
//! and a client listening to it hears `notifications/resources/updated` when it appears.
//!
//! Changing an amount takes the scope `invoices:amend`: over stdio the person at the
//! terminal holds it (the server says so in its code, `stdio_principal_with_every_scope`),
//! over HTTP a bearer token does. A caller without it is never shown `invoice_amend`, and
//! calling it anyway is refused before the handler runs.
//!
//! ```text
//! cargo run --example invoice                            # MCP over stdio
//! cargo run --example invoice -- --http 127.0.0.1:8080 --token clerk=s3cret-clerk-token
//!                                                        # Streamable HTTP at /mcp
//! ```

use toolgate::prelude::*;
use toolgate::resource::{Body, ReadRequest, ResourceTemplate};
use toolgate::types::{Currency, Money};

// One machine per invoice: `key: "id"` makes the `id` argument of every invoice tool
// name the instance the call is gated on, whichever client or session makes it.
toolgate::machine! {
    id: "invoice",
    key: "id",
    context: InvoiceData,
    initial: "draft",
    states: {
        draft:      { on: { SUBMIT: "review" } },
        review:     { on: { APPROVE: "approved", REJECT: "draft" } },
        approved:   { on: { DISCHARGE: "discharged" } },
        discharged: { type: "final" },
    }
}

/// Which invoice a call is about.
#[derive(Debug, Deserialize, JsonSchema)]
struct InvoiceRef {
    /// The invoice id, `INV-` followed by digits without leading zeros (e.g. `INV-1042`).
    // One spelling per invoice: the instance is named by this text, so `INV-01` or
    // `inv-1` must not be accepted as other names of `INV-1` (each would be a workflow of
    // its own, and the invoice payable once per spelling).
    #[schemars(pattern(INVOICE_ID))]
    id: String,
}

/// The demo's invoices: `INV-1` to `INV-999999999999`.
const LAST_INVOICE: u64 = 999_999_999_999;

/// The one spelling of an invoice id.
const INVOICE_ID: &str = r"^INV-[1-9][0-9]{0,17}$";

/// What every invoice tool returns; toolgate adds the workflow's `state`.
#[derive(Debug, Serialize, JsonSchema)]
struct Invoice {
    /// The invoice id.
    id: String,
    /// The amount due.
    amount: Money,
    /// What the call did.
    outcome: &'static str,
}

/// A draft invoice's new amount.
#[derive(Debug, Deserialize, JsonSchema)]
struct Amendment {
    /// The invoice id, `INV-` followed by digits without leading zeros (e.g. `INV-1042`).
    #[schemars(pattern(INVOICE_ID))]
    id: String,
    /// The new amount due, in the invoice's currency (EUR).
    amount: Money,
}

/// What an invoice keeps beyond its state: the amount a draft was amended to. Each
/// invoice instance holds it as its context, committed with its state in toolgate's store
/// (so a restart, or another replica, sees it). The demo has invoices `INV-1` to
/// `INV-999999999999`; an amount never amended derives from the number, so results are
/// deterministic.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
struct InvoiceData {
    /// The amount due, as amended.
    amount: Money,
}

/// The invoice `id`, with its data if it has any.
fn find(id: &str, data: Option<&InvoiceData>) -> Result<Invoice, ToolError> {
    let number: u64 = id
        .strip_prefix("INV-")
        .and_then(|digits| digits.parse().ok())
        .filter(|&number| number <= LAST_INVOICE)
        .ok_or_else(|| ToolError::not_found(format!("no invoice `{id}`: the last invoice is INV-{LAST_INVOICE}")))?;
    let amount = match data {
        Some(data) => data.amount,
        None => Money::from_minor_units(10_000 + number % 997 * 100, euro()?).map_err(ToolError::internal)?,
    };
    Ok(Invoice { id: id.to_string(), amount, outcome: "viewed" })
}

/// Show an invoice: amount, currency and the workflow state. Changes nothing.
#[action(domain = "invoice")]
async fn view(input: InvoiceRef, invoice: Instance<InvoiceData>) -> Result<Invoice, ToolError> {
    fault_test::broken(&input.id)?;
    find(&input.id, invoice.get())
}

/// Change the amount of a draft invoice. Does not submit it.
// It takes `Money` and fires no transition (a credit), so something must say who may set
// an amount: the scope `invoices:amend` (`toolgate audit` fails it otherwise).
#[action(domain = "invoice", bind_state = "draft", scope = "invoices:amend")]
async fn amend(input: Amendment, mut invoice: InstanceMut<InvoiceData>) -> Result<Invoice, ToolError> {
    let current = find(&input.id, invoice.get())?;
    // Invoices are billed in euros only.
    if input.amount.currency() != current.amount.currency() {
        return Err(Failure::new(
            "CURRENCY_MISMATCH",
            format!("invoice `{}` is billed in EUR, not {}", input.id, input.amount.currency()),
        )
        .with_hint("convert the amount to EUR, then call invoice_amend again")
        .never_retry()
        .into());
    }
    invoice.set(InvoiceData { amount: input.amount })?;
    Ok(Invoice { amount: input.amount, outcome: "amended", ..current })
}

/// Submit a draft invoice for review. Does not approve or pay it.
#[action(domain = "invoice", bind_state = "draft", transition = "SUBMIT", compact = "Submit an invoice for review")]
async fn submit(input: InvoiceRef, invoice: Instance<InvoiceData>) -> Result<Invoice, ToolError> {
    Ok(Invoice { outcome: "submitted for review", ..find(&input.id, invoice.get())? })
}

/// Approve an invoice under review, making it payable. Does not pay it.
#[action(domain = "invoice", bind_state = "review", transition = "APPROVE")]
async fn approve(input: InvoiceRef, invoice: Instance<InvoiceData>) -> Result<Invoice, ToolError> {
    Ok(Invoice { outcome: "approved", ..find(&input.id, invoice.get())? })
}

/// Send an invoice under review back to draft. Does not delete it.
#[action(domain = "invoice", bind_state = "review", transition = "REJECT")]
async fn reject(input: InvoiceRef, invoice: Instance<InvoiceData>) -> Result<Invoice, ToolError> {
    Ok(Invoice { outcome: "sent back to draft", ..find(&input.id, invoice.get())? })
}

/// Discharge (pay) an approved invoice. Does not refund or reopen invoices.
#[action(domain = "invoice", bind_state = "approved", transition = "DISCHARGE")]
async fn discharge(input: InvoiceRef, invoice: Instance<InvoiceData>) -> Result<Invoice, ToolError> {
    fault_test::pause().await;
    // The payment is the transition itself: committed once, with the invoice's state.
    let paid = Invoice { outcome: "discharged", ..find(&input.id, invoice.get())? };
    fault_test::count().await;
    Ok(paid)
}

/// Hooks for toolgate's fault tests, inert unless their environment variables are set:
/// a pause inside the discharge (`INVOICE_TEST_DISCHARGE_PAUSE_MS`), a count of the
/// discharges whose handler finished, kept in Redis outside this process
/// (`INVOICE_TEST_DISCHARGE_COUNTER=redis://HOST:PORT/DB#KEY`), and an invoice whose view
/// fails as a bug would (`INVOICE_TEST_BROKEN_ID=INV-…`: `INTERNAL`).
mod fault_test {
    pub(crate) fn broken(id: &str) -> Result<(), toolgate::ToolError> {
        match std::env::var("INVOICE_TEST_BROKEN_ID") {
            Ok(broken) if broken == id => {
                Err(toolgate::ToolError::internal(format_args!("invoice `{id}` is broken (a test)")))
            }
            _ => Ok(()),
        }
    }

    pub(crate) async fn pause() {
        if let Some(ms) = std::env::var("INVOICE_TEST_DISCHARGE_PAUSE_MS").ok().and_then(|ms| ms.parse().ok()) {
            tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
        }
    }

    pub(crate) async fn count() {
        let Ok(target) = std::env::var("INVOICE_TEST_DISCHARGE_COUNTER") else { return };
        let Some((url, key)) = target.split_once('#') else { return };
        let Ok(client) = redis::Client::open(url) else { return };
        if let Ok(mut connection) = client.get_multiplexed_async_connection().await {
            let _: Result<i64, _> = redis::cmd("INCR").arg(key).query_async(&mut connection).await;
        }
    }
}

fn euro() -> Result<Currency, ToolError> {
    Currency::parse("EUR").map_err(ToolError::internal)
}

/// An invoice's receipt, bound to the invoice's instance: readable only once it is
/// discharged (and only the invoice it names).
fn receipts() -> ResourceTemplate {
    let read = move |read: ReadRequest| async move {
        let id = read.variable("id").unwrap_or_default();
        let invoice = find(id, read.context::<InvoiceData>()?.as_ref())?;
        Ok(Body::text(format!("Receipt: invoice {id}, {} paid in full.", invoice.amount), "text/plain"))
    };
    ResourceTemplate::new("invoice://{id}/receipt", "invoice-receipt", read)
        .description("The receipt of a discharged invoice; it does not exist before the invoice is paid")
        .mime_type("text/plain")
        .instances_of("invoice", "id")
        .in_states(["discharged"])
}

#[tokio::main]
async fn main() -> Result<(), ServeError> {
    toolgate::Server::from_registry("invoice")
        .version(env!("CARGO_PKG_VERSION"))
        .resource_template(receipts())
        // Over stdio the person at the terminal is the clerk, who may amend; over HTTP a
        // caller is who its bearer token says (`--token clerk=…`), and nobody otherwise.
        .stdio_principal_with_every_scope("clerk")
        .instructions("Invoice workflow: submit, then approve (or reject), then discharge. Tools appear as the invoice's state allows.")
        .run_cli()
        .await
}
