// An action on a method: `self` is rejected, the error is on the receiver.
use toolgate::prelude::*;

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Done {
    ok: bool,
}

struct Invoices;

impl Invoices {
    /// Show an invoice. Changes nothing.
    #[action(domain = "invoice")]
    async fn view(&self, _ctx: Ctx) -> Result<Done, ToolError> {
        Ok(Done { ok: true })
    }
}

fn main() {}
