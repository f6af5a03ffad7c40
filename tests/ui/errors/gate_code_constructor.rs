// The gate's constructors are the runtime's own: a handler cannot call them.
use toolgate::prelude::*;

/// Pays an invoice.
#[action(global)]
async fn settle_invoice_balance(_ctx: Ctx) -> Result<(), ToolError> {
    Err(ToolError::timeout(1))
}

/// Refunds an invoice.
#[action(global)]
async fn refund_card_payment(_ctx: Ctx) -> Result<(), ToolError> {
    Err(ToolError::rate_limited("1/second", 1000))
}

fn main() {}
