//! The routing checklist of the source documents, applied to every tool: what a model
//! needs from a tool's name, description and schema to route to it and call it right, and
//! what the server needs to stop a wrong call.

use std::collections::BTreeSet;
use std::fmt::Write;

use serde::Serialize;
use serde_json::{Value, json};

use super::model::callable_in;
use super::money::MoneyFields;
use crate::action::ActionRegistration;
use crate::auth::{Principal, Roster};
use crate::fsm::{Machine, Mint};
use crate::registry::{Registry, ToolEntry, ToolKind};

/// One rule of the checklist.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Rule {
    /// The name starts with the tool's domain (`invoice_pay`).
    DomainPrefix,
    /// The description says what the tool does *not* do.
    SaysWhatItDoesNot,
    /// `domain` is a required argument.
    DomainRequired,
    /// Every date or time field is typed (`DateTime`, `Date`), not a plain string.
    DatesTyped,
    /// Every number has a unit or bounds.
    NumbersBounded,
    /// A tool that takes an amount of money (toolgate's `Money`, anywhere in its input) is
    /// protected by what the server enforces: one that fires a transition with it is
    /// `transactional`, confirmed and scoped; any other has at least one of `confirm`, a
    /// `scope` and an authenticated caller (`transactional`, a `Principal` parameter, a
    /// per-tenant machine). One that takes none, whatever its name or what its result
    /// reports, chooses no amount.
    MoneyGuarded,
    /// A transition fired with an amount of money the tool takes is judged on values:
    /// guarded by its machine (`guard: "…"`) in every state it fires from, or confirmed by
    /// the user.
    GuardedOrConfirmed,
    /// A tool marked `expensive` declares a rate limit.
    ExpensiveLimited,
    /// A keyed machine's key has a strict pattern.
    StrictKey,
    /// The keys of a principal-owned machine's instances are minted unguessable
    /// (`mint: "Q-{random}"`): a warning when they come from a counter.
    UnguessableKeys,
    /// The tool's bound states can be reached from the initial state, by any transition:
    /// every branch of an event, guarded or not, and those time fires (`after`).
    Reachable,
    /// No non-final state the tool is callable in or leads into is a dead end: some event
    /// or some delay (`after`) leaves it.
    NoDeadEnd,
    /// Some principal of the deployment holds the scopes the tool requires.
    ScopesHeld,
    /// What a model is shown of the tool (name, description, input schema) fits the
    /// server's per-tool budget in tokens (`ServerBuilder::context_budget`).
    ContextBudget,
}

impl Rule {
    /// Every rule, in the order of the table.
    pub const ALL: [Rule; 14] = [
        Rule::DomainPrefix,
        Rule::SaysWhatItDoesNot,
        Rule::DomainRequired,
        Rule::DatesTyped,
        Rule::NumbersBounded,
        Rule::MoneyGuarded,
        Rule::GuardedOrConfirmed,
        Rule::ExpensiveLimited,
        Rule::StrictKey,
        Rule::UnguessableKeys,
        Rule::Reachable,
        Rule::NoDeadEnd,
        Rule::ScopesHeld,
        Rule::ContextBudget,
    ];

    /// Its short name (a table column, a JSON value).
    pub fn name(self) -> &'static str {
        match self {
            Rule::DomainPrefix => "domain_prefix",
            Rule::SaysWhatItDoesNot => "says_what_it_does_not",
            Rule::DomainRequired => "domain_required",
            Rule::DatesTyped => "dates_typed",
            Rule::NumbersBounded => "numbers_bounded",
            Rule::MoneyGuarded => "money_guarded",
            Rule::GuardedOrConfirmed => "guarded_or_confirmed",
            Rule::ExpensiveLimited => "expensive_limited",
            Rule::StrictKey => "strict_key",
            Rule::UnguessableKeys => "unguessable_keys",
            Rule::Reachable => "reachable",
            Rule::NoDeadEnd => "no_dead_end",
            Rule::ScopesHeld => "scopes_held",
            Rule::ContextBudget => "context_budget",
        }
    }
}

/// How a tool fares on one rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// It follows the rule.
    Pass,
    /// It breaks it.
    Fail,
    /// It follows it with a weakness worth knowing (the audit still passes).
    Warn,
    /// The rule does not apply to it.
    NotApplicable,
}

/// One tool on one rule, and why.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    /// The tool.
    pub tool: String,
    /// The rule.
    pub rule: Rule,
    /// The verdict.
    pub verdict: Verdict,
    /// What is wrong (for a failure), or what was checked.
    pub detail: String,
}

/// Every tool graded on every rule.
#[derive(Debug, Clone, Serialize)]
pub struct Audit {
    /// The findings, by tool then rule.
    pub findings: Vec<Finding>,
}

impl Audit {
    /// Grades every tool of `registry` (the generated `switch_domain` included), its scopes
    /// against the principals of `roster`.
    pub fn of(registry: &Registry, roster: &Roster) -> Self {
        let mut findings = Vec::new();
        for tool in registry.tools() {
            for rule in Rule::ALL {
                let (verdict, detail) = judge(rule, tool, roster, registry.context_budget());
                findings.push(Finding { tool: tool.name.to_string(), rule, verdict, detail });
            }
        }
        Self { findings }
    }

    /// Whether no tool fails any rule.
    pub fn passed(&self) -> bool {
        self.findings.iter().all(|f| f.verdict != Verdict::Fail)
    }

    /// The failures.
    pub fn failures(&self) -> impl Iterator<Item = &Finding> {
        self.findings.iter().filter(|f| f.verdict == Verdict::Fail)
    }

    /// The warnings.
    pub fn warnings(&self) -> impl Iterator<Item = &Finding> {
        self.findings.iter().filter(|f| f.verdict == Verdict::Warn)
    }

    /// A table: a row per tool, a column per rule (`ok`, `FAIL`, `warn`, `-` where it does
    /// not apply), then each failure and warning with what is wrong, then the count.
    pub fn table(&self) -> String {
        let tools: Vec<&str> = {
            let mut seen = Vec::new();
            for finding in &self.findings {
                if !seen.contains(&finding.tool.as_str()) {
                    seen.push(finding.tool.as_str());
                }
            }
            seen
        };
        let width = tools.iter().map(|t| t.len()).max().unwrap_or(4).max(4);
        let mut out = format!("{:width$}", "tool");
        for rule in Rule::ALL {
            let _ = write!(out, "  {}", rule.name());
        }
        out.push('\n');
        for tool in &tools {
            let _ = write!(out, "{tool:width$}");
            for rule in Rule::ALL {
                let mark = match self.findings.iter().find(|f| f.tool == *tool && f.rule == rule).map(|f| f.verdict) {
                    Some(Verdict::Pass) => "ok",
                    Some(Verdict::Fail) => "FAIL",
                    Some(Verdict::Warn) => "warn",
                    _ => "-",
                };
                let _ = write!(out, "  {mark:<w$}", w = rule.name().len());
            }
            out.push('\n');
        }
        let failures: Vec<&Finding> = self.failures().collect();
        let warnings: Vec<&Finding> = self.warnings().collect();
        if !failures.is_empty() || !warnings.is_empty() {
            out.push('\n');
            for failure in &failures {
                let _ = writeln!(out, "FAIL {} {}: {}", failure.tool, failure.rule.name(), failure.detail);
            }
            for warning in &warnings {
                let _ = writeln!(out, "WARN {} {}: {}", warning.tool, warning.rule.name(), warning.detail);
            }
        }
        let plural = |n: usize, one: &str| format!("{n} {one}{}", if n == 1 { "" } else { "s" });
        let mut count = format!("{}, {}", plural(tools.len(), "tool"), plural(failures.len(), "failure"));
        if !warnings.is_empty() {
            count.push_str(&format!(", {}", plural(warnings.len(), "warning")));
        }
        let _ = writeln!(out, "\n{count}");
        out.lines().map(str::trim_end).collect::<Vec<_>>().join("\n") + "\n"
    }

    /// The findings as JSON: `{"passed": bool, "findings": [{tool, rule, verdict, detail}]}`.
    pub fn to_json(&self) -> Value {
        json!({ "passed": self.passed(), "findings": self.findings })
    }
}

fn judge(rule: Rule, tool: &ToolEntry, roster: &Roster, budget: usize) -> (Verdict, String) {
    let registration = match tool.kind {
        ToolKind::Action(registration) => registration,
        // Generated by toolgate: it follows the rules by construction.
        ToolKind::SwitchDomain => return (Verdict::NotApplicable, "generated by toolgate".into()),
    };
    let schema = Value::Object((*tool.tool.input_schema).clone());
    let properties = schema.get("properties").and_then(Value::as_object).cloned().unwrap_or_default();
    match rule {
        Rule::DomainPrefix => match tool.domain {
            None => (Verdict::NotApplicable, "a global tool".into()),
            Some(domain) if tool.name.starts_with(&format!("{domain}_")) => (Verdict::Pass, String::new()),
            Some(domain) => (Verdict::Fail, format!("the name does not start with its domain: `{domain}_…`")),
        },
        Rule::SaysWhatItDoesNot => {
            let text =
                format!("{} {}", registration.description, registration.not_for.unwrap_or_default()).to_lowercase();
            let says = registration.not_for.is_some()
                || ["does not", "doesn't", "do not", "not for", "never", "nothing"].iter().any(|p| text.contains(p));
            if says {
                (Verdict::Pass, String::new())
            } else {
                (Verdict::Fail, "the description does not say what the tool does not do (\"Does not …\")".into())
            }
        }
        Rule::DomainRequired => match tool.domain {
            None => (Verdict::NotApplicable, "a global tool".into()),
            Some(_) => {
                let required = schema.get("required").and_then(Value::as_array);
                if required.is_some_and(|r| r.iter().any(|f| f == "domain")) {
                    (Verdict::Pass, String::new())
                } else {
                    (Verdict::Fail, "`domain` is not a required argument".into())
                }
            }
        },
        Rule::DatesTyped => {
            let untyped: Vec<&String> = properties
                .iter()
                .filter(|(name, property)| looks_like_a_date(name) && !is_typed_date(property))
                .map(|(name, _)| name)
                .collect();
            match (properties.keys().any(|n| looks_like_a_date(n)), untyped.is_empty()) {
                (false, _) => (Verdict::NotApplicable, "no date or time field".into()),
                (true, true) => (Verdict::Pass, String::new()),
                (true, false) => (
                    Verdict::Fail,
                    format!("{} look like dates but are plain strings: type them `DateTime` or `Date`", list(&untyped)),
                ),
            }
        }
        Rule::NumbersBounded => {
            let numbers: Vec<(&String, &Value)> =
                properties.iter().map(|(n, p)| (n, resolved(&schema, p))).filter(|(_, p)| is_number(p)).collect();
            let bare: Vec<&String> = numbers.iter().filter(|(_, p)| !has_unit_or_bounds(p)).map(|(n, _)| *n).collect();
            match (numbers.is_empty(), bare.is_empty()) {
                (true, _) => (Verdict::NotApplicable, "no numeric field".into()),
                (false, true) => (Verdict::Pass, String::new()),
                (false, false) => (
                    Verdict::Fail,
                    format!(
                        "{} have neither a unit nor bounds: use `Count<Unit, MIN, MAX>` or `#[schemars(range(…))]`",
                        list(&bare)
                    ),
                ),
            }
        }
        Rule::MoneyGuarded => money_guarded(tool, registration),
        Rule::GuardedOrConfirmed => {
            let (Some(event), Some(machine)) = (registration.transition, tool.machine.as_deref()) else {
                return (Verdict::NotApplicable, "fires no transition".into());
            };
            if MoneyFields::of(registration).taken.is_empty() {
                return (Verdict::NotApplicable, "it fires its transition with no amount of money it takes".into());
            }
            let unguarded: Vec<&str> =
                registration.bind_states.iter().copied().filter(|state| !machine.is_guarded(state, event)).collect();
            match (unguarded.is_empty(), registration.confirm.is_some()) {
                (true, _) => (Verdict::Pass, format!("`{event}` is guarded")),
                (false, true) => (Verdict::Pass, "it is confirmed by the user".into()),
                (false, false) => (
                    Verdict::Fail,
                    format!(
                        "it moves money with `{event}`, unguarded from {}: add a `guard` to the transition in `machine!`, or `confirm`",
                        unguarded.iter().map(|s| format!("`{s}`")).collect::<Vec<_>>().join(", ")
                    ),
                ),
            }
        }
        Rule::ExpensiveLimited => match (registration.expensive, registration.rate_limit) {
            (false, _) => (Verdict::NotApplicable, "not marked `expensive`".into()),
            (true, Some(_)) => (Verdict::Pass, String::new()),
            (true, None) => (
                Verdict::Fail,
                "it is marked `expensive` but declares no `rate_limit` (`\"30/minute per client\"`)".into(),
            ),
        },
        Rule::StrictKey => {
            let Some(key) = tool.machine.as_deref().and_then(Machine::key) else {
                return (Verdict::NotApplicable, "no keyed machine".into());
            };
            if tool.creates {
                return (Verdict::NotApplicable, format!("it creates an instance: the store mints its `{key}`"));
            }
            match properties.get(key) {
                Some(property) if is_strict_key(property) => (Verdict::Pass, String::new()),
                _ => (
                    Verdict::Fail,
                    format!("the key `{key}` accepts any string: give it a `pattern` (`#[schemars(pattern(…))]`)"),
                ),
            }
        }
        Rule::UnguessableKeys => {
            let Some(machine) = tool.machine.as_deref().filter(|m| m.is_principal_owned()) else {
                return (Verdict::NotApplicable, "no principal-owned machine".into());
            };
            match machine.minting().filter(|_| tool.creates) {
                None => (Verdict::NotApplicable, "it mints no key".into()),
                Some((format, Mint::Counter)) => (
                    Verdict::Warn,
                    format!(
                        "its keys come from a counter (`{format}`): another principal's key names nothing of the owner's, but a key is guessed wherever the owner rule is not the only guard (a log, a link); mint `{{random}}` instead"
                    ),
                ),
                Some(_) => (Verdict::Pass, String::new()),
            }
        }
        Rule::Reachable => {
            let Some(machine) = tool.machine.as_deref() else {
                return (Verdict::NotApplicable, "no machine".into());
            };
            let reachable = reachable_states(machine);
            let bound = tool.bind_states();
            if bound.is_empty() || bound.iter().any(|s| reachable.contains(*s)) {
                (Verdict::Pass, String::new())
            } else {
                (
                    Verdict::Fail,
                    format!("none of its states ({}) can be reached from `{}`", bound.join(", "), machine.initial()),
                )
            }
        }
        Rule::ScopesHeld => scopes_held(tool, roster),
        Rule::ContextBudget => within_budget(tool, budget),
        Rule::NoDeadEnd => {
            let Some(machine) = tool.machine.as_deref() else {
                return (Verdict::NotApplicable, "no machine".into());
            };
            let spec = machine.spec();
            // Time leaves a state too (`after`): one it leaves only by a delay is no dead end.
            let is_dead = |state: &str| {
                spec.states.iter().any(|s| s.name == state && !s.is_final && s.on.is_empty() && s.after.is_empty())
            };
            // Dead ends the tool leads into (its transition's target) or is callable in.
            let mut dead: Vec<&str> = spec
                .states
                .iter()
                .filter(|s| callable_in(tool, &s.name))
                .flat_map(|s| {
                    let into =
                        s.on.iter().filter(|t| Some(t.event.as_str()) == tool.transition()).map(|t| t.target.as_str());
                    std::iter::once(s.name.as_str()).chain(into)
                })
                .filter(|state| is_dead(state))
                .collect();
            dead.sort_unstable();
            dead.dedup();
            if dead.is_empty() {
                (Verdict::Pass, String::new())
            } else {
                (Verdict::Fail, format!("`{}` is not final and has no way out", dead.join("`, `")))
            }
        }
    }
}

/// `money_guarded`: judged by the types a tool takes and returns, never by its name (a
/// cancel that takes and returns no money moves none). An amount a tool takes is one its
/// caller chooses: fired with a transition it is the payment itself, which needs
/// `transactional`, `confirm` and a `scope` (design §1.5); anywhere else (an always-callable
/// tool, a creating one, one bound to a state that fires nothing: a credit) it needs at
/// least one protection. An amount a tool only returns is one the server already held:
/// reporting it, or firing a transition that echoes it (submitting, approving or rejecting
/// an invoice), chooses no amount, and failing such tools would fail tools that move none.
fn money_guarded(tool: &ToolEntry, registration: &ActionRegistration) -> (Verdict, String) {
    let money = MoneyFields::of(registration);
    if money.taken.is_empty() {
        let detail = if money.returned.is_empty() {
            "it takes and returns no amount of money".to_string()
        } else {
            let returned = fields(&money.returned);
            format!("it takes no amount of money, so its caller chooses none: its result reports one ({returned})")
        };
        return (Verdict::NotApplicable, detail);
    }
    let taken = fields(&money.taken);
    if let Some(event) = registration.transition {
        let why = format!("it fires a transition with an amount of money (`{event}` with {taken})");
        let mut missing = Vec::new();
        if !registration.transactional {
            missing.push("`transactional`");
        }
        if registration.confirm.is_none() {
            missing.push("`confirm`");
        }
        if registration.scopes.is_empty() {
            missing.push("a `scope`");
        }
        return if missing.is_empty() {
            (Verdict::Pass, why)
        } else {
            (Verdict::Fail, format!("{why}, so it needs {}", missing.join(", ")))
        };
    }
    let what = format!("it takes an amount of money ({taken})");
    match protections(tool, registration).as_slice() {
        [] => (
            Verdict::Fail,
            format!(
                "{what} and nothing protects it: anyone who can call it chooses any amount; add `confirm`, a `scope` or `transactional`"
            ),
        ),
        found => (Verdict::Pass, format!("{what}, protected by {}", found.join(", "))),
    }
}

/// What the server enforces on every call of `tool` that keeps a wrong caller or an
/// unconfirmed amount out, each named as the user declared it. (An idempotency key, a rate
/// limit or `expensive` keep nobody out.)
fn protections(tool: &ToolEntry, registration: &ActionRegistration) -> Vec<String> {
    let mut found = Vec::new();
    if registration.confirm.is_some() {
        found.push("`confirm`".to_string());
    }
    if !registration.scopes.is_empty() {
        found.push(format!("a `scope` (`{}`)", registration.scopes.join("`, `")));
    }
    // An authenticated caller, however the tool asks for one: the gate refuses any other.
    if registration.transactional {
        found.push("`transactional`".to_string());
    } else if registration.needs_principal {
        found.push("an authenticated caller (its handler takes a `Principal`)".to_string());
    } else if (tool.instance.is_some() || tool.creates)
        && tool.machine.as_deref().is_some_and(Machine::is_principal_owned)
    {
        found.push("an authenticated caller (its machine's instances are their creator's)".to_string());
    } else if tool.instance.is_some() && tool.machine.as_deref().is_some_and(Machine::is_tenant_scoped) {
        found.push("an authenticated caller (its machine's instances are per tenant)".to_string());
    }
    found
}

/// `` `amount`, `lines[].price` ``.
fn fields(names: &[String]) -> String {
    names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
}

/// Whether some principal of `roster` may call `tool`: holds every scope it requires (for a
/// tool seen with others' scopes, those of one of them).
fn scopes_held(tool: &ToolEntry, roster: &Roster) -> (Verdict, String) {
    if tool.visible_to(None) {
        return (Verdict::NotApplicable, "requires no scope".into());
    }
    let mut holders: Vec<&str> =
        roster.listed().iter().filter(|p| tool.visible_to(Some(p))).map(Principal::subject).collect();
    // Several tokens may stand for one principal.
    holders.sort_unstable();
    holders.dedup();
    let all_of = |scopes: &[&str]| scopes.iter().map(|s| format!("`{s}`")).collect::<Vec<_>>().join(" and ");
    let required = match tool.seen_with.as_slice() {
        [] => all_of(tool.scopes()),
        alternatives => alternatives.iter().map(|scopes| all_of(scopes)).collect::<Vec<_>>().join(" or "),
    };
    match (holders.as_slice(), roster.is_open()) {
        ([], false) if roster.listed().is_empty() => (
            Verdict::Fail,
            format!(
                "it requires {required} and the deployment has no principal: audit with the options you serve with (`--token`, `--tokens FILE`, `--stdio-principal`, `--jwt-issuer`)"
            ),
        ),
        ([], false) => (
            Verdict::Fail,
            format!(
                "it requires {required}, which none of the deployment's principals holds ({})",
                roster.listed().iter().map(|p| format!("`{}`", p.subject())).collect::<Vec<_>>().join(", ")
            ),
        ),
        ([], true) => (
            Verdict::NotApplicable,
            format!("it requires {required}: held by no listed principal; an issuer that cannot be listed decides"),
        ),
        (holders, _) => (Verdict::Pass, format!("held by `{}`", holders.join("`, `"))),
    }
}

fn list(names: &[&String]) -> String {
    names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
}

/// A field whose name says it holds a date or a time.
fn looks_like_a_date(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    name.contains("date")
        || name.ends_with("_at")
        || name.ends_with("_on")
        || [
            "departure",
            "arrival",
            "deadline",
            "due",
            "when",
            "time",
            "checkin",
            "check_in",
            "checkout",
            "check_out",
            "birthday",
        ]
        .iter()
        .any(|word| name == *word || name.ends_with(&format!("_{word}")) || name.starts_with(&format!("{word}_")))
}

fn is_typed_date(property: &Value) -> bool {
    let format = property.get("format").and_then(Value::as_str);
    matches!(format, Some("date-time" | "date" | "time" | "duration"))
        || property.get("$ref").is_some()
        || property.get("allOf").is_some()
}

/// `property` itself, or the definition its `$ref` (`#/$defs/Name`) points at.
fn resolved<'a>(schema: &'a Value, property: &'a Value) -> &'a Value {
    let target = property.get("$ref").and_then(Value::as_str).and_then(|r| r.strip_prefix('#'));
    target.and_then(|pointer| schema.pointer(pointer)).unwrap_or(property)
}

fn is_number(property: &Value) -> bool {
    match property.get("type") {
        Some(Value::String(t)) => t == "integer" || t == "number",
        Some(Value::Array(types)) => types.iter().any(|t| t == "integer" || t == "number"),
        _ => false,
    }
}

fn has_unit_or_bounds(property: &Value) -> bool {
    ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "title", "enum", "const"]
        .iter()
        .any(|k| property.get(*k).is_some())
}

fn is_strict_key(property: &Value) -> bool {
    property.get("pattern").is_some()
        || property.get("enum").is_some()
        || property.get("format").is_some_and(|f| f == "uuid")
        || property.get("type").is_some_and(|t| t == "integer")
}

/// The states reachable from the initial one by any transition: every branch of an event,
/// guarded or not, and what time fires (`after`) — as `machine!` and start-up judge a
/// machine (`MachineSpec::validate`), which refuse one with a state this does not reach.
fn reachable_states(machine: &Machine) -> BTreeSet<&str> {
    let spec = machine.spec();
    let mut seen = BTreeSet::from([machine.initial()]);
    let mut frontier = vec![machine.initial()];
    while let Some(state) = frontier.pop() {
        let Some(state) = spec.state(state) else { continue };
        let targets = state.on.iter().map(|t| t.target.as_str()).chain(state.after.iter().map(|d| d.target.as_str()));
        for target in targets {
            if seen.insert(target) {
                frontier.push(target);
            }
        }
    }
    seen
}

/// `context_budget`: what a model is shown of the tool fits `budget` tokens.
fn within_budget(tool: &ToolEntry, budget: usize) -> (Verdict, String) {
    let cost = super::cost::tool_cost(tool);
    if cost.shown <= budget {
        return (Verdict::Pass, format!("{} tokens of {budget}", cost.shown));
    }
    let added = cost.added().map_or_else(String::new, |added| format!(" ({added} of them toolgate's)"));
    let detail = format!(
        "a model is shown {} tokens{added} on every turn, over the budget of {budget}: shorten the description, move detail to the fields' own descriptions, or split the tool (`describe --format cost`)",
        cost.shown
    );
    (Verdict::Fail, detail)
}
