// An action declared inside a function body: one error, saying where actions go.
use toolgate::prelude::*;

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Done {
    ok: bool,
}

fn main() {
    /// Show an invoice. Changes nothing.
    #[action(domain = "invoice")]
    async fn view() -> Result<Done, ToolError> {
        Ok(Done { ok: true })
    }
}
