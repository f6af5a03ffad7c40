//! Snapshots of what the examples' command line says about them: `describe` (Mermaid, DOT,
//! JSON), `export --xstate` and `audit` — the examples pass their own audit — compared
//! with the files under `tests/snapshots/`. After an intended change, rewrite them with
//! `TOOLGATE_UPDATE_SNAPSHOTS=1 cargo test -p toolgate --test integration describe::` and read the diff.

use crate::common;

use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

use toolgate::Machine;

/// What `example ARGS…` prints, run in a fresh directory (so that nothing it does not
/// promise, such as a state file, appears), with its exit status.
fn run(example: &str, args: &[&str]) -> (String, bool) {
    let path = common::example_binary(example);
    // A directory per run: tests running at once may run the same command.
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    let run = RUNS.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("toolgate-describe-{}-{run}-{example}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let output = Command::new(&path).args(args).current_dir(&dir).output().unwrap();
    let leftovers: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert!(leftovers.is_empty(), "`{example} {}` left {leftovers:?}", args.join(" "));
    std::fs::remove_dir_all(&dir).unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(
        output.status.success() || args.first() == Some(&"audit"),
        "`{example} {}` failed: {}",
        args.join(" "),
        String::from_utf8_lossy(&output.stderr)
    );
    (stdout, output.status.success())
}

/// Compares `actual` with `tests/snapshots/NAME`, or writes it there when asked.
fn snapshot(name: &str, actual: &str) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots").join(name);
    if std::env::var_os("TOOLGATE_UPDATE_SNAPSHOTS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|_| panic!("no snapshot {}: run with TOOLGATE_UPDATE_SNAPSHOTS=1", path.display()));
    assert_eq!(actual, expected, "{name} changed: rerun with TOOLGATE_UPDATE_SNAPSHOTS=1 if that is intended");
}

#[test]
fn the_examples_described_in_mermaid_dot_and_json() {
    for example in ["invoice", "travel", "payments"] {
        for format in ["mermaid", "dot", "json", "cost"] {
            let (out, _) = run(example, &["describe", "--format", format]);
            snapshot(&format!("{example}.{format}"), &out);
        }
    }
}

#[test]
fn the_described_invoice_machine_says_which_tool_fires_each_edge_and_what_each_state_allows() {
    let (mermaid, _) = run("invoice", &["describe", "--format", "mermaid"]);
    assert!(mermaid.contains(": SUBMIT / invoice_submit"), "{mermaid}");
    assert!(mermaid.contains(": DISCHARGE / invoice_discharge"), "{mermaid}");
    assert!(mermaid.contains("invoice_amend [invoices:amend]<br/>invoice_submit<br/>invoice_view"), "{mermaid}");
    assert!(mermaid.contains("one per `id`"), "{mermaid}");
    let (svg, _) = run("invoice", &["describe", "--format", "svg"]);
    assert!(svg.starts_with("<svg") || svg.contains("<svg"), "{svg:.200}");
    assert!(svg.contains("invoice_discharge"), "the SVG names the tools");
}

/// What each tool costs a model, in tokens: every tool has a row; what toolgate added is
/// what was shown beyond what the author wrote; the list's total is the rows' sum.
#[test]
fn the_cost_of_each_tool_is_counted_in_tokens() {
    let (table, passed) = run("invoice", &["describe", "--format", "cost"]);
    assert!(passed, "{table}");
    let rows: Vec<Vec<&str>> = table
        .lines()
        .skip(1)
        .take_while(|line| !line.is_empty())
        .map(|line| line.split_whitespace().collect())
        .collect();
    let names: Vec<&str> = rows.iter().map(|row| row[0]).collect();
    assert_eq!(
        names,
        ["invoice_amend", "invoice_approve", "invoice_discharge", "invoice_reject", "invoice_submit", "invoice_view"]
    );
    let number = |cell: &str| cell.parse::<usize>().unwrap_or_else(|_| panic!("{cell} in {table}"));
    let mut total = 0;
    for row in &rows {
        let (shown, own, added) = (number(row[1]), number(row[2]), number(row[3]));
        assert!(own > 0 && shown == own + added, "{row:?}");
        total += shown;
    }
    assert!(table.contains(&format!("6 tools, {total} tokens")), "{table}");
    assert!(table.contains("invoice.draft: 3 tools,"), "{table}");
}

/// The audit's `context_budget`: a tool shown to a model in more tokens than the budget
/// fails, saying how many and how many of them toolgate added.
#[test]
fn the_audit_holds_each_tool_to_a_budget_in_tokens() {
    let (table, _) = run("invoice", &["audit"]);
    let over_budget =
        |table: &str| table.lines().any(|line| line.starts_with("FAIL") && line.contains(" context_budget:"));
    assert!(table.contains("context_budget") && !over_budget(&table), "{table}");
    // The figures are the cost table's.
    let (costs, _) = run("invoice", &["describe", "--format", "cost"]);
    let row = |tool: &str| -> Vec<String> {
        let line = costs.lines().find(|line| line.starts_with(tool)).unwrap_or_else(|| panic!("{costs}"));
        line.split_whitespace().map(str::to_string).collect()
    };
    let (amend, view) = (row("invoice_amend"), row("invoice_view"));
    let budget = 200;
    assert!(amend[1].parse::<usize>().unwrap() > budget && view[1].parse::<usize>().unwrap() <= budget, "{costs}");
    let (table, passed) = run("invoice", &["audit", "--context-budget", &budget.to_string()]);
    assert!(!passed, "{table}");
    let failure = format!(
        "FAIL invoice_amend context_budget: a model is shown {} tokens ({} of them toolgate's)",
        amend[1], amend[3]
    );
    assert!(table.contains(&failure), "{table}");
    assert!(!table.contains("FAIL invoice_view context_budget"), "{} tokens fit: {table}", view[1]);
}

#[test]
fn exported_machines_load_back_as_the_same_machines() {
    for example in ["invoice", "travel", "payments"] {
        let (out, _) = run(example, &["export", "--xstate"]);
        let machines: serde_json::Value = serde_json::from_str(&out).unwrap();
        for (id, machine) in machines.as_object().unwrap() {
            let loaded = Machine::from_xstate_json(&machine.to_string()).expect("XState JSON loads back");
            assert_eq!(loaded.id(), id);
            // Guards, delays, and toolgate's key and tenant scope (in `meta`) come back too.
            let exported_again = toolgate::inspect::machine_json(&loaded);
            assert_eq!(&exported_again, machine, "{id} round-trips");
        }
    }
}

/// Who may call each example, as its README runs it: the payments example takes a clerk's
/// token; the travel and invoice examples say who stdio is in their code (the invoice
/// example's clerk holds `invoices:amend`).
const DEPLOYED_WITH: [(&str, &[&str]); 3] =
    [("invoice", &[]), ("travel", &[]), ("payments", &["--token", "clerk=s3cret-clerk-token"])];

#[test]
fn the_examples_pass_their_own_audits() {
    for (example, callers) in DEPLOYED_WITH {
        let (table, passed) = run(example, &[&["audit"], callers].concat());
        let failures: Vec<&str> = table.lines().filter(|line| line.starts_with("FAIL")).collect();
        assert!(passed && failures.is_empty(), "{example}'s audit fails:\n{table}");
        snapshot(&format!("{example}.audit"), &table);
        let (json, _) = run(example, &[&["audit", "--format", "json"], callers].concat());
        let json: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(json["passed"], true);
    }
}

#[test]
fn the_audit_checks_the_scopes_against_who_may_call() {
    // Nobody may call: the scoped tools fail, and say how to name the callers.
    let (table, passed) = run("payments", &["audit"]);
    assert!(!passed);
    assert!(
        table.contains(
            "FAIL payment_capture scopes_held: it requires `payments:capture` and the deployment has no principal"
        ),
        "{table}"
    );
    assert!(table.contains("FAIL payment_refund scopes_held"), "{table}");
    assert!(table.contains("FAIL payment_settle scopes_held"), "{table}");
    assert!(table.contains("FAIL payment_create scopes_held"), "{table}");
    assert!(table.ends_with("tools, 4 failures\n"), "{table}");
    // A clerk who may capture and not refund.
    let file = std::env::temp_dir().join(format!("toolgate-audit-tokens-{}.toml", std::process::id()));
    std::fs::write(
        &file,
        "[[token]]\nsecret = \"clerk-0123456789abcdef\"\nprincipal = \"clerk\"\nscopes = [\"payments:create\", \"payments:capture\"]\n",
    )
    .unwrap();
    let (table, passed) = run("payments", &["audit", "--tokens", file.to_str().unwrap()]);
    std::fs::remove_file(&file).unwrap();
    assert!(!passed);
    assert!(table.contains("FAIL payment_refund scopes_held: it requires `payments:refund`, which none of the deployment's principals holds (`clerk`)"), "{table}");
    assert!(table.ends_with("tools, 1 failure\n"), "{table}");
    // Principals from a JWT issuer may hold any scope: not judged.
    let (_, passed) = run("payments", &["audit", "--jwt-issuer", "https://issuer.example"]);
    assert!(passed);
}
