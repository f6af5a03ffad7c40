// An action on an associated function without `self`: what the user sees.
use toolgate::prelude::*;

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Done {
    ok: bool,
}

struct Invoices;

impl Invoices {
    /// Show an invoice. Changes nothing.
    #[action(domain = "invoice")]
    async fn view() -> Result<Done, ToolError> {
        Ok(Done { ok: true })
    }
}

fn main() {}
