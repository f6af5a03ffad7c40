//! The audit's report: every tool graded on every rule, read as a pass or a failure, a
//! table for a terminal, or JSON.

use std::fmt::Write;

use serde::Serialize;
use serde_json::{Value, json};

use super::checklist::{Rule, Verdict};
use super::judge::judge;
use crate::auth::Roster;
use crate::registry::Registry;

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
                let (verdict, detail) = judge(rule, tool, registry, roster);
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
