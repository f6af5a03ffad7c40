//! A library's loans through rmcp's client: a handler named with a raw identifier
//! (`async fn r#return`) is the tool `loan_return`, listed and called by that name.

mod common;

use common::{TestClient, serve_in_process};
use serde_json::json;
use toolgate::prelude::*;

toolgate::machine! {
    id: "loan",
    key: "loan_id",
    mint: "L-{n}",
    initial: "checked_out",
    states: {
        checked_out: { on: { RETURN: "returned" } },
        returned:    { type: "final" },
    }
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)] // names the instance, which toolgate reads
struct LoanRef {
    /// The loan, as `loan_checkout` returned it.
    loan_id: String,
}

#[derive(Serialize, JsonSchema)]
struct Loan {
    /// The loan.
    loan_id: String,
}

/// Check a book out: a new loan.
#[action(domain = "loan", creates)]
async fn checkout(ctx: Ctx) -> Result<Loan, ToolError> {
    Ok(Loan { loan_id: ctx.instance().unwrap_or_default().to_string() })
}

/// Return a checked-out book. Does not renew it.
#[action(domain = "loan", bind_state = "checked_out", transition = "RETURN")]
async fn r#return(input: LoanRef) -> Result<Loan, ToolError> {
    Ok(Loan { loan_id: input.loan_id })
}

fn server() -> toolgate::Server {
    toolgate::Server::from_registry("loans").build().expect("valid registry")
}

/// `r#` is how Rust spells a keyword as a name, not part of the name: the tool is
/// `loan_return`, in MCP's tool-name characters, and answers to that name.
#[tokio::test]
async fn a_raw_identifier_names_its_tool_without_r_hash() {
    let client = TestClient::http(&serve_in_process(server()).await).await;
    let mut names = client.tool_names().await;
    names.sort();
    assert_eq!(names, ["loan_checkout", "loan_return"]);
    let loan = client.ok("loan_checkout", json!({ "domain": "loan" })).await;
    let loan_id = loan["loan_id"].as_str().expect("a minted loan").to_string();
    let returned = client.ok("loan_return", json!({ "domain": "loan", "loan_id": loan_id })).await;
    assert_eq!((returned["loan_id"].as_str(), returned["state"].as_str()), (Some(&*loan_id), Some("returned")));
}
