//! A library's loans through rmcp's client: a handler named with a raw identifier
//! (`async fn r#return`) is the tool `loan_return`, listed and called by that name; a
//! renewal (`checked_out → checked_out`, `reenter: true`) restarts the loan's `after`
//! clock, where a note (a self-transition without it, XState v5's default) leaves it be.

mod common;

use common::{TestClient, serve_in_process};
use std::time::Duration;

use serde_json::json;
use tokio::time::Instant;
use toolgate::prelude::*;

toolgate::machine! {
    id: "loan",
    key: "loan_id",
    mint: "L-{n}",
    initial: "checked_out",
    states: {
        checked_out: {
            after: { "PT2S": "overdue" },
            on: {
                RENEW: { target: "checked_out", reenter: true },
                NOTE: "checked_out",
                RETURN: "returned",
            },
        },
        overdue:     { on: { RETURN: "returned" } },
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
#[action(domain = "loan", bind_state = ["checked_out", "overdue"], transition = "RETURN")]
async fn r#return(input: LoanRef) -> Result<Loan, ToolError> {
    Ok(Loan { loan_id: input.loan_id })
}

/// Renew a checked-out loan: its two seconds start again. Does not return it.
#[action(domain = "loan", bind_state = "checked_out", transition = "RENEW")]
async fn renew(input: LoanRef) -> Result<Loan, ToolError> {
    Ok(Loan { loan_id: input.loan_id })
}

/// Note something about a checked-out loan (a damaged cover, say). Does not renew it.
#[action(domain = "loan", bind_state = "checked_out", transition = "NOTE")]
async fn note(input: LoanRef) -> Result<Loan, ToolError> {
    Ok(Loan { loan_id: input.loan_id })
}

/// Show a loan. Changes nothing.
#[action(domain = "loan")]
async fn view(input: LoanRef) -> Result<Loan, ToolError> {
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
    assert_eq!(names, ["loan_checkout", "loan_note", "loan_renew", "loan_return", "loan_view"]);
    let loan = client.ok("loan_checkout", json!({ "domain": "loan" })).await;
    let loan_id = loan["loan_id"].as_str().expect("a minted loan").to_string();
    let returned = client.ok("loan_return", json!({ "domain": "loan", "loan_id": loan_id })).await;
    assert_eq!((returned["loan_id"].as_str(), returned["state"].as_str()), (Some(&*loan_id), Some("returned")));
}

/// Checks a loan out at once; the time it was made.
async fn checked_out(client: &TestClient) -> (String, Instant) {
    let loan = client.ok("loan_checkout", json!({ "domain": "loan" })).await;
    (loan["loan_id"].as_str().expect("a minted loan").to_string(), Instant::now())
}

/// The loan's state, at `at` after `since`.
async fn state_at(client: &TestClient, loan_id: &str, since: Instant, at: Duration) -> String {
    tokio::time::sleep_until(since + at).await;
    let view = client.ok("loan_view", json!({ "domain": "loan", "loan_id": loan_id })).await;
    view["state"].as_str().expect("the loan's state").to_string()
}

/// A loan is overdue two seconds after it was checked out; renewed after one, it is still
/// out at two and a half, and overdue two seconds after the renewal.
#[tokio::test]
async fn a_renewal_restarts_the_loans_clock() {
    let client = TestClient::http(&serve_in_process(server()).await).await;
    let (loan_id, since) = checked_out(&client).await;
    tokio::time::sleep_until(since + Duration::from_millis(1_000)).await;
    let renewed = client.ok("loan_renew", json!({ "domain": "loan", "loan_id": loan_id })).await;
    assert_eq!(renewed["state"], "checked_out", "{renewed}");
    assert_eq!(state_at(&client, &loan_id, since, Duration::from_millis(2_500)).await, "checked_out");
    assert_eq!(state_at(&client, &loan_id, since, Duration::from_millis(3_500)).await, "overdue");
}

/// A transition to the state the loan is in, without `reenter`, does not enter it again:
/// the loan noted after one second is overdue at two, as if never noted.
#[tokio::test]
async fn a_note_leaves_the_loans_clock_be() {
    let client = TestClient::http(&serve_in_process(server()).await).await;
    let (loan_id, since) = checked_out(&client).await;
    tokio::time::sleep_until(since + Duration::from_millis(1_000)).await;
    let noted = client.ok("loan_note", json!({ "domain": "loan", "loan_id": loan_id })).await;
    assert_eq!(noted["state"], "checked_out", "{noted}");
    assert_eq!(state_at(&client, &loan_id, since, Duration::from_millis(2_500)).await, "overdue");
}
