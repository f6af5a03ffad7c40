//! The routing-checklist audit on a deliberately bad server: one tool breaking each rule a
//! server can break, each failure saying what is wrong. (A domain-prefixed name and a
//! required `domain` are enforced by `#[action]` at compile time, and every state of a
//! machine is reachable by `machine!`'s own check: those rules pass for every tool, and
//! the compile-fail cases under `tests/ui/` show the errors.)

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

/// Refund an order. Does not ship it.
#[action(domain = "order")]
async fn order_refund(_input: OrderRef) -> Result<Done, ToolError> {
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
        ("order_refund", Rule::MoneyGuarded, "needs `transactional`, `confirm`, a `scope`"),
        ("order_settle", Rule::MoneyGuarded, "it fires a transition with an amount of money"),
        // No money-moving name and no transition: judged by its argument's type.
        ("order_tip", Rule::MoneyGuarded, "it takes an amount of money and no state gates it, so it needs"),
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
