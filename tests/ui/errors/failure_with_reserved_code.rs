// A handler cannot build a `Failure` field by field: `Failure::new` is the only way in,
// and it serves a code toolgate reserves as `APP_<CODE>`.
use toolgate::prelude::*;

/// Pays an invoice.
#[action(global)]
async fn settle_invoice_balance(_ctx: Ctx) -> Result<(), ToolError> {
    Err(Failure { code: "FORBIDDEN".into(), ..Failure::new("PAYMENT_DECLINED", "the card was declined") }.into())
}

fn main() {}
