// A handler cannot say what only the gate says: `ToolError` has no public variants.
use toolgate::prelude::*;

/// Pays an invoice.
#[action(global)]
async fn settle_invoice_balance(_ctx: Ctx) -> Result<(), ToolError> {
    Err(ToolError::Timeout { timeout_ms: 1 })
}

/// Refunds an invoice.
#[action(global)]
async fn refund_card_payment(_ctx: Ctx) -> Result<(), ToolError> {
    Err(ToolError::Cancelled)
}

fn main() {}
