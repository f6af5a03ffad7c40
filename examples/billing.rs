//! Invoices kept in a table of your own, written in the same transaction as the workflow.
//!
//! The business keeps its invoices — customer, amount, status — in an `invoices` table of
//! its own, beside toolgate's tables in the same database: the SQLite file by default, or
//! Postgres (`--store postgres://…`). Each handler writes that table through its call's
//! [`Transaction`]: the row and the invoice's workflow state are committed together, or
//! neither is. A refused call (`bill_pay` on an invoice not yet approved) never runs its
//! handler and writes nothing; a handler that fails, or a process killed mid-call, leaves
//! both as they were. An approved invoice left unpaid for 30 days expires by time, and a
//! transactional hook (`ServerBuilder::on_entry`) writes its row in that same commit.
//!
//! ```text
//! cargo run --example billing                                      # MCP over stdio, state.db
//! cargo run --example billing -- --store postgres://me@localhost/db   # on Postgres
//! ```

use toolgate::Moved;
use toolgate::prelude::*;
use toolgate::types::Money;

// One machine per invoice, its id minted by the store (`B-1`, `B-2`, …).
toolgate::machine! {
    id: "bill",
    key: "id",
    mint: "B-{n}",
    initial: "open",
    states: {
        open:     { on: { APPROVE: "approved", VOID: "void" } },
        approved: { on: { PAY: "paid" }, after: { "P30D": "expired" } },
        paid:     { type: "final" },
        void:     { type: "final" },
        expired:  { type: "final" },
    }
}

/// The table this server keeps beside toolgate's: created as the first call writes it.
const TABLES: &str = "CREATE TABLE IF NOT EXISTS invoices (
    id TEXT PRIMARY KEY,
    customer TEXT NOT NULL,
    amount_minor BIGINT NOT NULL,
    currency TEXT NOT NULL,
    status TEXT NOT NULL
)";

/// A new invoice.
#[derive(Debug, Deserialize, JsonSchema)]
struct NewInvoice {
    /// Who pays it.
    #[schemars(length(min = 1, max = 120))]
    customer: String,
    /// The amount due.
    amount: Money,
}

/// Which invoice a call is about.
#[derive(Debug, Deserialize, JsonSchema)]
struct InvoiceRef {
    /// The invoice id, as `bill_create` returned it (`B-12`).
    #[schemars(pattern(r"^B-[1-9][0-9]{0,18}$"))]
    id: String,
}

/// An invoice as its row holds it; toolgate adds the workflow's `state`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
struct Invoice {
    /// The invoice id.
    id: String,
    /// Who pays it.
    customer: String,
    /// The amount due, in minor units of `currency` (cents).
    amount_minor: i64,
    /// The currency (ISO 4217).
    currency: String,
    /// The status the row holds: always the invoice's workflow state.
    status: String,
}

/// The invoice `id`'s row, as the call's transaction sees it.
async fn row(tx: &Transaction, id: &str) -> Result<Invoice, ToolError> {
    let found = tx
        .query_opt("SELECT id, customer, amount_minor, currency, status FROM invoices WHERE id = $1", &[id.into()])
        .await?;
    found.ok_or_else(|| ToolError::not_found(format!("no invoice `{id}`")))
}

/// Sets the invoice's status in its row, in the transaction that commits its transition.
async fn set_status(tx: &Transaction, id: &str, status: &str) -> Result<(), ToolError> {
    tx.execute("UPDATE invoices SET status = $2 WHERE id = $1", &[id.into(), status.into()]).await?;
    fault_test::pause().await;
    Ok(())
}

/// Open an invoice for a customer. Does not approve or collect it.
#[action(domain = "bill", creates)]
async fn create(input: NewInvoice, tx: Transaction, ctx: Ctx) -> Result<Invoice, ToolError> {
    let id = ctx.instance().unwrap_or_default().to_string();
    let amount =
        i64::try_from(input.amount.minor_units()).map_err(|_| ToolError::invalid_argument("amount", "is too large"))?;
    let currency = input.amount.currency().code().to_string();
    tx.execute(
        "INSERT INTO invoices (id, customer, amount_minor, currency, status) VALUES ($1, $2, $3, $4, 'open')",
        &[id.as_str().into(), input.customer.as_str().into(), amount.into(), currency.as_str().into()],
    )
    .await?;
    Ok(Invoice { id, customer: input.customer, amount_minor: amount, currency, status: "open".into() })
}

/// Show an invoice: customer, amount and state. Changes nothing.
#[action(domain = "bill")]
async fn view(input: InvoiceRef, tx: Transaction) -> Result<Invoice, ToolError> {
    row(&tx, &input.id).await
}

/// Approve an open invoice, making it payable. Does not collect it.
#[action(domain = "bill", bind_state = "open", transition = "APPROVE")]
async fn approve(input: InvoiceRef, tx: Transaction) -> Result<Invoice, ToolError> {
    let invoice = row(&tx, &input.id).await?;
    set_status(&tx, &input.id, "approved").await?;
    Ok(Invoice { status: "approved".into(), ..invoice })
}

/// Void an open invoice. Does not refund a paid one.
#[action(domain = "bill", bind_state = "open", transition = "VOID")]
async fn void(input: InvoiceRef, tx: Transaction) -> Result<Invoice, ToolError> {
    let invoice = row(&tx, &input.id).await?;
    set_status(&tx, &input.id, "void").await?;
    Ok(Invoice { status: "void".into(), ..invoice })
}

/// Record the payment of an approved invoice. Does not refund or reopen it.
#[action(domain = "bill", bind_state = "approved", transition = "PAY")]
async fn pay(input: InvoiceRef, tx: Transaction) -> Result<Invoice, ToolError> {
    let invoice = row(&tx, &input.id).await?;
    set_status(&tx, &input.id, "paid").await?;
    Ok(Invoice { status: "paid".into(), ..invoice })
}

/// An approved invoice unpaid after 30 days expires by time: its row says so in the same
/// commit (a transactional hook, `on_entry`), on every path time takes — the sweeper, or a
/// call that reads the invoice once it is due.
async fn expire_row(tx: Transaction, moved: Moved) -> Result<(), ToolError> {
    set_status(&tx, &moved.instance, "expired").await
}

/// A hook for toolgate's crash test, inert unless `BILLING_TEST_PAUSE_MS` is set: a pause
/// after a handler's (or the expiry hook's) SQL, before the transition commits (where the
/// test kills the process).
mod fault_test {
    pub(crate) async fn pause() {
        if let Some(ms) = std::env::var("BILLING_TEST_PAUSE_MS").ok().and_then(|ms| ms.parse().ok()) {
            tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
        }
    }
}

#[tokio::main]
async fn main() -> Result<(), ServeError> {
    toolgate::Server::from_registry("billing")
        .version(env!("CARGO_PKG_VERSION"))
        .tables(TABLES)
        .on_entry("bill", "expired", expire_row)
        .instructions("Billing: create an invoice, approve it (or void it), then record its payment. Tools appear as the invoice's state allows.")
        .run_cli()
        .await
}
