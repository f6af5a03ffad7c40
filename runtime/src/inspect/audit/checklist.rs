//! The routing checklist of the source documents: its rules, and the verdicts a tool gets
//! on each.

use serde::Serialize;

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
    /// `transactional`, confirmed and scoped; any other has `confirm` or a `scope`. An
    /// authenticated caller alone (`transactional`, a `Principal` parameter, an owned or a
    /// per-tenant machine) is no authorization: it says who calls, not what they may do.
    /// One that takes none, whatever its name or what its result reports, chooses no amount.
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
