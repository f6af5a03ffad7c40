//! The routing-checklist audit on a deliberately bad server: one tool breaking each rule a
//! server can break, each failure saying what is wrong. (A domain-prefixed name and a
//! required `domain` are enforced by `#[action]` at compile time, and every state of a
//! machine is reachable by `machine!`'s own check: those rules pass for every tool, and
//! the compile-fail cases under `tests/ui/` show the errors.)
//!
//! Then a lending library that does everything right where the audit used to be wrong:
//! states only time reaches or leaves (`after`), a cancel that moves no money, and money
//! judged by the types a tool takes and returns, each protection counted.

use toolgate::auth::{AuthFuture, Authenticator};
use toolgate::inspect::{Audit, Rule, Verdict};
use toolgate::prelude::*;
use toolgate::{Principal, ServerBuilder, StaticTokens};

toolgate::machine! {
    id: "order",
    key: "id",
    initial: "placed",
    states: {
        placed:   { on: { HOLD: "held", SHIP: "shipped" } },
        // Not final, and nothing leaves it: a dead end.
        held:     {},
        shipped:  { type: "final" },
    }
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)] // only its schema is audited
struct OrderRef {
    /// The order: any string at all (no pattern).
    id: String,
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)] // only its schema is audited
struct Shipping {
    /// The order.
    #[schemars(pattern(r"^O-[1-9][0-9]*$"))]
    id: String,
    /// When to ship: a plain string.
    ship_date: String,
    /// How heavy: a number without unit or bounds.
    weight: f64,
}

#[derive(Serialize, JsonSchema)]
struct Done {
    ok: bool,
}

/// Look at an order. Does not change it.
#[action(domain = "order")]
async fn order_view(_input: OrderRef) -> Result<Done, ToolError> {
    Ok(Done { ok: true })
}

/// Ship the order.
#[action(domain = "order", bind_state = "placed", transition = "SHIP")]
async fn order_ship(_input: Shipping) -> Result<Done, ToolError> {
    Ok(Done { ok: true })
}

/// Put an order on hold. Does not cancel it.
#[action(domain = "order", bind_state = "placed", transition = "HOLD")]
async fn order_hold(_input: OrderRef) -> Result<Done, ToolError> {
    Ok(Done { ok: true })
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)] // only its schema is audited
struct Charge {
    /// The order.
    #[schemars(pattern(r"^O-[1-9][0-9]*$"))]
    id: String,
    /// What to charge.
    amount: toolgate::types::Money,
}

/// Charge the order's amount and ship it. Does not refund.
#[action(domain = "order", bind_state = "placed", transition = "SHIP")]
async fn order_settle(_input: Charge) -> Result<Done, ToolError> {
    Ok(Done { ok: true })
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)] // only its schema is audited
struct Tip {
    /// The order.
    #[schemars(pattern(r"^O-[1-9][0-9]*$"))]
    id: String,
    /// How much to add, if anything.
    amount: Option<toolgate::types::Money>,
}

/// Add a tip to an order. Does not ship it.
#[action(domain = "order")]
async fn order_tip(_input: Tip) -> Result<Done, ToolError> {
    Ok(Done { ok: true })
}

/// Quote a freight price from the carrier's paid API. Does not ship.
#[action(domain = "order", expensive)]
async fn order_quote(_input: OrderRef) -> Result<Done, ToolError> {
    Ok(Done { ok: true })
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)] // only its schema is audited
struct Refund {
    /// The order.
    #[schemars(pattern(r"^O-[1-9][0-9]*$"))]
    id: String,
    /// How much to give back.
    amount: toolgate::types::Money,
}

/// Refund an order. Does not ship it.
#[action(domain = "order")]
async fn order_refund(_input: Refund) -> Result<Done, ToolError> {
    Ok(Done { ok: true })
}

/// Export an order to the warehouse: only for principals with `order:export`. Does not
/// ship it.
#[action(domain = "order", scope = "order:export")]
async fn order_export(_input: OrderRef) -> Result<Done, ToolError> {
    Ok(Done { ok: true })
}

/// The verdict on `tool` for `rule`, and why.
fn verdict(report: &Audit, tool: &str, rule: Rule) -> (Verdict, String) {
    let finding = report.findings.iter().find(|f| f.tool == tool && f.rule == rule).expect("a finding");
    (finding.verdict, finding.detail.clone())
}

/// A deployment whose clerk may view orders and nothing else.
fn with_a_clerk() -> ServerBuilder {
    let tokens =
        StaticTokens::new().token("clerk-token-0123456789", Principal::new("clerk").with_scopes(["order:view"]));
    Server::from_registry("bad").authenticator(tokens)
}

#[test]
fn a_bad_server_fails_each_rule_it_can_break_saying_why() {
    let server = with_a_clerk().build().expect("a server that starts");
    let report = server.audit();
    assert!(!report.passed());
    let verdict = |tool: &str, rule: Rule| verdict(&report, tool, rule);
    for (tool, rule, says) in [
        ("order_ship", Rule::SaysWhatItDoesNot, "does not say what the tool does not do"),
        ("order_ship", Rule::DatesTyped, "`ship_date`"),
        ("order_ship", Rule::NumbersBounded, "`weight`"),
        // Judged by the amount it takes, not by its name.
        ("order_refund", Rule::MoneyGuarded, "it takes an amount of money (`amount`) and nothing authorizes it"),
        ("order_settle", Rule::MoneyGuarded, "it fires a transition with an amount of money"),
        // An optional amount is an amount; gated by a state or not, it needs a protection.
        ("order_tip", Rule::MoneyGuarded, "it takes an amount of money (`amount`) and nothing authorizes it"),
        ("order_view", Rule::StrictKey, "the key `id` accepts any string"),
        ("order_hold", Rule::NoDeadEnd, "`held` is not final and has no way out"),
        ("order_quote", Rule::ExpensiveLimited, "marked `expensive` but declares no `rate_limit`"),
        (
            "order_export",
            Rule::ScopesHeld,
            "requires `order:export`, which none of the deployment's principals holds (`clerk`)",
        ),
    ] {
        let (found, detail) = verdict(tool, rule);
        assert_eq!(found, Verdict::Fail, "{tool} {rule:?}: {detail}");
        assert!(detail.contains(says), "{tool} {rule:?}: {detail}");
    }
    // What the same tools do right passes; what does not apply says so.
    assert_eq!(verdict("order_ship", Rule::StrictKey).0, Verdict::Pass);
    assert_eq!(verdict("order_view", Rule::SaysWhatItDoesNot).0, Verdict::Pass);
    assert_eq!(verdict("order_view", Rule::MoneyGuarded).0, Verdict::NotApplicable);
    assert_eq!(verdict("order_view", Rule::ExpensiveLimited).0, Verdict::NotApplicable);
    assert_eq!(verdict("order_view", Rule::ScopesHeld).0, Verdict::NotApplicable);
    for tool in ["order_view", "order_ship", "order_hold", "order_refund", "order_quote", "order_settle"] {
        for rule in [Rule::DomainPrefix, Rule::DomainRequired, Rule::Reachable] {
            assert_eq!(verdict(tool, rule).0, Verdict::Pass, "{tool} {rule:?}");
        }
    }
    // The table and the JSON say the same.
    let table = report.table();
    assert!(table.contains("FAIL order_refund money_guarded"), "{table}");
    assert_eq!(report.to_json()["passed"], false);
}

/// Tokens from somewhere the server cannot list (as a JWT issuer's).
struct FromElsewhere;

impl Authenticator for FromElsewhere {
    fn authenticate<'a>(&'a self, _token: &'a str) -> AuthFuture<'a> {
        Box::pin(async { Ok(Principal::new("someone")) })
    }
}

#[test]
fn a_scoped_tool_is_judged_against_the_principals_the_deployment_has() {
    let judged = |builder: ServerBuilder| verdict(&builder.build().unwrap().audit(), "order_export", Rule::ScopesHeld);
    let (nobody, why) = judged(Server::from_registry("bad"));
    assert_eq!(nobody, Verdict::Fail, "{why}");
    assert!(why.contains("the deployment has no principal"), "{why}");
    let (stdio, why) =
        judged(Server::from_registry("bad").stdio_principal(Principal::new("ops").with_scopes(["order:export"])));
    assert_eq!((stdio, why.as_str()), (Verdict::Pass, "held by `ops`"));
    let (developer, why) = judged(with_a_clerk().token_with_every_scope("dev", "dev-token-0123456789"));
    assert_eq!((developer, why.as_str()), (Verdict::Pass, "held by `dev`"));
    // An issuer the server cannot list may grant it: not judged, and not passed either.
    let (elsewhere, why) = judged(with_a_clerk().authenticator(FromElsewhere));
    assert_eq!(elsewhere, Verdict::NotApplicable, "{why}");
    assert!(why.contains("an issuer that cannot be listed decides"), "{why}");
}

// A lending library. Time alone makes a loan overdue (XState `after`), and a disputed fine
// is reached only through a guarded transition's other branch.
toolgate::machine! {
    id: "loan",
    key: "id",
    context: LoanData,
    initial: "reserved",
    states: {
        reserved:  { on: { LEND: "lent", CANCEL: "cancelled" } },
        // Nothing but time leaves it: not a dead end.
        lent:      { after: { "P14D": "overdue" } },
        // Nothing but time enters it: reachable all the same.
        overdue:   {
            on: { PAY_FINE: [{ target: "returned", guard: "fine_due" }, { target: "disputed" }] }
        },
        disputed:  { on: { RESOLVE: "returned" } },
        returned:  { type: "final" },
        cancelled: { type: "final" },
    }
}

/// What a loan keeps.
#[derive(Clone, Serialize, Deserialize, JsonSchema)]
struct LoanData {
    /// The fine due.
    fine: toolgate::types::Money,
}

/// Guard: a fine is paid only when one is due.
fn fine_due(loan: &LoanData, _input: &LoanRef) -> Result<(), Failure> {
    if loan.fine.minor_units() > 0 { Ok(()) } else { Err(Failure::new("NO_FINE", "no fine is due")) }
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)] // only its schema is audited
struct LoanRef {
    /// The loan.
    #[schemars(pattern(r"^L-[1-9][0-9]*$"))]
    id: String,
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)] // only its schema is audited
struct Deposit {
    /// The loan.
    #[schemars(pattern(r"^L-[1-9][0-9]*$"))]
    id: String,
    /// How much to credit to the reader's account.
    amount: toolgate::types::Money,
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)] // only its schema is audited
struct Charges {
    /// The loan.
    #[schemars(pattern(r"^L-[1-9][0-9]*$"))]
    id: String,
    /// What to charge, line by line.
    lines: Vec<Line>,
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)] // only its schema is audited
struct Line {
    /// What for.
    label: String,
    /// How much, if anything: money two levels down, behind a `$ref`, in an array.
    price: Option<toolgate::types::Money>,
}

/// What paying a fine paid.
#[derive(Serialize, JsonSchema)]
struct Receipt {
    /// The fine paid.
    fine: toolgate::types::Money,
}

fn euros(amount: &str) -> Result<toolgate::types::Money, ToolError> {
    toolgate::types::Money::parse(amount, "EUR").map_err(ToolError::internal)
}

/// Lend a reserved book. Does not charge anything.
#[action(domain = "loan", bind_state = "reserved", transition = "LEND")]
async fn loan_lend(_input: LoanRef) -> Result<Done, ToolError> {
    Ok(Done { ok: true })
}

/// Cancel a reservation. Does not charge or refund anything.
#[action(domain = "loan", bind_state = "reserved", transition = "CANCEL")]
async fn loan_cancel(_input: LoanRef) -> Result<Done, ToolError> {
    Ok(Done { ok: true })
}

/// Pay an overdue loan's fine. Does not renew the loan.
#[action(domain = "loan", bind_state = "overdue", transition = "PAY_FINE")]
async fn loan_pay_fine(_input: LoanRef) -> Result<Receipt, ToolError> {
    Ok(Receipt { fine: euros("2.00")? })
}

/// Resolve a disputed fine. Does not charge anything.
#[action(domain = "loan", bind_state = "disputed", transition = "RESOLVE")]
async fn loan_resolve(_input: LoanRef) -> Result<Done, ToolError> {
    Ok(Done { ok: true })
}

/// Credit any amount to the reader of a reserved loan. Does not lend the book.
#[action(domain = "loan", bind_state = "reserved")]
async fn loan_deposit(_input: Deposit) -> Result<Done, ToolError> {
    Ok(Done { ok: true })
}

/// Credit an amount to the reader, as an authenticated caller. Does not lend the book.
#[action(domain = "loan", bind_state = "reserved", transactional)]
async fn loan_prepay(_input: Deposit) -> Result<Done, ToolError> {
    Ok(Done { ok: true })
}

/// Credit an amount to the reader, who must say who they are. Does not lend the book.
#[action(domain = "loan", bind_state = "reserved")]
async fn loan_top_up(_input: Deposit, _reader: Principal) -> Result<Done, ToolError> {
    Ok(Done { ok: true })
}

/// Charge an overdue loan's extra costs: only for principals with `library:fines`. Does
/// not end the loan.
#[action(domain = "loan", bind_state = "overdue", scope = "library:fines")]
async fn loan_charge(_input: Charges) -> Result<Done, ToolError> {
    Ok(Done { ok: true })
}

/// The lending library's audit: a finding's verdict and detail, by tool and rule.
fn library_audit() -> impl Fn(&str, Rule) -> (Verdict, String) {
    let report = with_a_clerk().build().expect("a server that starts").audit();
    move |tool, rule| verdict(&report, tool, rule)
}

/// `overdue` is entered only when time runs out, `disputed` only through the second branch
/// of a guarded event: both are reachable, as `machine!` itself judged; a state only time
/// leaves is no dead end.
#[test]
fn states_time_or_a_guarded_branch_reaches_are_reachable_and_time_is_a_way_out() {
    let verdict = library_audit();
    let reachable = ["loan_pay_fine", "loan_charge", "loan_resolve", "loan_lend", "loan_deposit"];
    let no_dead_end = ["loan_lend", "loan_pay_fine"];
    let wrong: Vec<String> = (reachable.iter().map(|tool| (*tool, Rule::Reachable)))
        .chain(no_dead_end.iter().map(|tool| (*tool, Rule::NoDeadEnd)))
        .map(|(tool, rule)| (tool, rule, verdict(tool, rule)))
        .filter(|(_, _, (found, _))| *found != Verdict::Pass)
        .map(|(tool, rule, (_, detail))| format!("{tool} {}: {detail}", rule.name()))
        .collect();
    assert!(wrong.is_empty(), "{wrong:#?}");
}

/// A cancel that takes and returns no money moves none, whatever its name says; an amount
/// a tool takes is found wherever its input holds it, and one it only reports is read too
/// but lets its caller choose nothing.
#[test]
fn money_is_judged_by_the_types_a_tool_takes_and_returns_not_by_its_name() {
    let verdict = library_audit();
    let (cancel, why) = verdict("loan_cancel", Rule::MoneyGuarded);
    assert_eq!(cancel, Verdict::NotApplicable, "{why}");
    assert!(why.contains("takes and returns no amount of money"), "{why}");
    // An amount in its input, nested in a list of optional prices: found, and its scope
    // protects it.
    let (charge, why) = verdict("loan_charge", Rule::MoneyGuarded);
    assert_eq!(charge, Verdict::Pass, "{why}");
    assert!(why.contains("it takes an amount of money (`lines[].price`), protected by a `scope`"), "{why}");
    // An amount only in its result: the fine the loan held, which its caller did not choose.
    let (pay, why) = verdict("loan_pay_fine", Rule::MoneyGuarded);
    assert_eq!(pay, Verdict::NotApplicable, "{why}");
    assert!(why.contains("so its caller chooses none: its result reports one (`fine`)"), "{why}");
}

/// A tool that takes an amount of money in a state, with nothing that authorizes it, lets
/// anyone credit any amount: it fails, saying what would protect it. An authenticated
/// caller alone — `transactional`, a `Principal` parameter — is not an authorization: any
/// signed-in employee could still credit any amount.
#[test]
fn a_bound_tool_that_takes_money_needs_something_that_protects_it() {
    let verdict = library_audit();
    let (deposit, why) = verdict("loan_deposit", Rule::MoneyGuarded);
    assert_eq!(deposit, Verdict::Fail, "{why}");
    assert!(why.contains("it takes an amount of money (`amount`) and nothing authorizes it"), "{why}");
    assert!(why.contains("add a `scope` or `confirm`"), "{why}");
    let (prepay, why) = verdict("loan_prepay", Rule::MoneyGuarded);
    assert_eq!(prepay, Verdict::Fail, "`transactional` alone passed: {why}");
    assert!(why.contains("(`transactional` says who calls, not what they may do)"), "{why}");
    let (top_up, why) = verdict("loan_top_up", Rule::MoneyGuarded);
    assert_eq!(top_up, Verdict::Fail, "a `Principal` parameter alone passed: {why}");
    assert!(why.contains("(a `Principal` parameter says who calls, not what they may do)"), "{why}");
    // A scope is an authorization.
    let (charge, why) = verdict("loan_charge", Rule::MoneyGuarded);
    assert_eq!(charge, Verdict::Pass, "{why}");
    // The table says it too.
    let report = with_a_clerk().build().unwrap().audit();
    assert!(report.table().contains("FAIL loan_deposit money_guarded: it takes an amount of money"));
}

// Coupons and vouchers are their holder's (`owner: principal`): a coupon's key comes from
// a counter, a voucher's from 128 random bits.
toolgate::machine! {
    id: "coupon",
    key: "coupon_id",
    owner: principal,
    mint: "C-{n}",
    initial: "issued",
    states: {
        issued:   { on: { REDEEM: "redeemed" } },
        redeemed: { type: "final" },
    }
}

toolgate::machine! {
    id: "voucher",
    key: "voucher_id",
    owner: principal,
    mint: "V-{random}",
    initial: "issued",
    states: {
        issued:   { on: { SPEND: "spent" } },
        spent:    { type: "final" },
    }
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)] // only its schema is audited
struct Nothing {}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)] // only its schema is audited
struct VoucherSpend {
    /// The voucher.
    #[schemars(pattern(r"^V-[a-z2-7]{26}$"))]
    voucher_id: String,
    /// How much of it to spend.
    amount: toolgate::types::Money,
}

/// Issue a coupon to the caller. Does not redeem it.
#[action(domain = "coupon", creates)]
async fn coupon_issue(_input: Nothing) -> Result<Done, ToolError> {
    Ok(Done { ok: true })
}

/// Issue a voucher to the caller. Does not spend it.
#[action(domain = "voucher", creates)]
async fn voucher_issue(_input: Nothing) -> Result<Done, ToolError> {
    Ok(Done { ok: true })
}

/// Spend some of the caller's voucher, which stays issued until it is empty. Does not issue one.
#[action(domain = "voucher", bind_state = "issued")]
async fn voucher_spend(_input: VoucherSpend) -> Result<Done, ToolError> {
    Ok(Done { ok: true })
}

/// An owned machine whose keys come from a counter is warned about (a key is guessed
/// wherever the owner rule is not the only guard), one minting random keys passes, and
/// a warning leaves the audit passing on that rule. A tool bound to an owned machine has an
/// authenticated caller, which alone authorizes no amount of money.
#[test]
fn an_owned_machine_minting_from_a_counter_is_warned_about() {
    let report = with_a_clerk().build().expect("a server that starts").audit();
    let (coupon, why) = verdict(&report, "coupon_issue", Rule::UnguessableKeys);
    assert_eq!(coupon, Verdict::Warn, "{why}");
    assert!(why.contains("its keys come from a counter (`C-{n}`)") && why.contains("mint `{random}`"), "{why}");
    let (voucher, why) = verdict(&report, "voucher_issue", Rule::UnguessableKeys);
    assert_eq!(voucher, Verdict::Pass, "{why}");
    assert_eq!(verdict(&report, "order_view", Rule::UnguessableKeys).0, Verdict::NotApplicable);
    assert!(report.table().contains("WARN coupon_issue unguessable_keys: its keys come from a counter"));
    assert!(!report.failures().any(|f| f.rule == Rule::UnguessableKeys));
    let (spend, why) = verdict(&report, "voucher_spend", Rule::MoneyGuarded);
    assert_eq!(spend, Verdict::Fail, "`owner: principal` alone passed: {why}");
    assert!(why.contains("(`owner: principal` says who calls, not what they may do)"), "{why}");
}

// An expense desk as its new user first wrote it: a report is its creator's, and a manager
// approves it. Under `owner: principal` alone nobody but the creator reaches a report.
toolgate::machine! {
    id: "expense",
    key: "expense_id",
    owner: principal,
    mint: "E-{random}",
    initial: "submitted",
    states: {
        submitted: { on: { APPROVE: "approved" } },
        approved:  { type: "final" },
    }
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)] // only its schema is audited
struct ExpenseRef {
    /// The report.
    #[schemars(pattern(r"^E-[a-z2-7]{26}$"))]
    expense_id: String,
}

/// File an expense report. Does not approve it.
#[action(domain = "expense", creates, scope = "expenses:file")]
async fn expense_file(_input: Nothing) -> Result<Done, ToolError> {
    Ok(Done { ok: true })
}

/// Approve a submitted report. Does not pay it.
#[action(domain = "expense", bind_state = "submitted", transition = "APPROVE", scope = "expenses:approve")]
async fn expense_approve(_input: ExpenseRef) -> Result<Done, ToolError> {
    Ok(Done { ok: true })
}

/// A tool on an owned machine's instance is reached only by the instance's creator: one
/// whose scope no principal who may create an instance holds can never be called on one,
/// however many principals hold that scope. The expense desk's manager held
/// `expenses:approve`, nobody could ever approve, and the audit said nothing.
#[test]
fn a_scope_only_non_creators_hold_reaches_no_owned_instance() {
    let desk = |tokens: StaticTokens| Server::from_registry("desk").authenticator(tokens).build().unwrap().audit();
    let employee = Principal::new("erin").with_scopes(["expenses:file"]);
    let manager = Principal::new("max").with_scopes(["expenses:approve"]);
    let report = desk(
        StaticTokens::new()
            .token("erin-token-0123456789", employee.clone())
            .token("max-token-0123456789ab", manager.clone()),
    );
    let (approve, why) = verdict(&report, "expense_approve", Rule::ScopesHeld);
    assert_eq!(approve, Verdict::Fail, "a scope only the manager holds passed: {why}");
    assert!(why.contains("no principal who may create one (by `expense_file`) holds `expenses:approve`"), "{why}");
    // A principal who files and approves reaches their own reports.
    let both = Principal::new("bo").with_scopes(["expenses:file", "expenses:approve"]);
    let report =
        desk(StaticTokens::new().token("erin-token-0123456789", employee).token("bo-token-0123456789ab", both));
    let (approve, why) = verdict(&report, "expense_approve", Rule::ScopesHeld);
    assert_eq!(approve, Verdict::Pass, "{why}");
    assert!(why.contains("held by `bo`, who may create or manage an instance"), "{why}");
    // Or the manager manages every owner's reports.
    let report = Server::from_registry("desk")
        .authenticator(StaticTokens::new().token("max-token-0123456789ab", manager))
        .owned_instances_managed_by("expense", ["expenses:approve"])
        .build()
        .unwrap()
        .audit();
    let (approve, why) = verdict(&report, "expense_approve", Rule::ScopesHeld);
    assert_eq!(approve, Verdict::Pass, "{why}");
}
