//! Compile-fail (UI) tests: every diagnostic of `#[action]` and `machine!`, and what a
//! handler cannot write (the gate's error codes), with its message and the token it
//! points at. Regenerate the `.stderr` files with
//! `TRYBUILD=overwrite cargo test -p toolgate-ui-tests --test diagnostics` and read them
//! before committing.
//!
//! What must compile (and run) is not here: each program under `pass/` is a test target
//! of this crate, built with the rest of the workspace. Without a case to run, trybuild
//! only checks its cases (`cargo check`), and so never generates code for the
//! dependencies it builds a second time in its own project.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("action/*.rs");
    t.compile_fail("machine/*.rs");
    t.compile_fail("errors/*.rs");
}

/// What a user can trigger must speak their terms: no pinned diagnostic shows one of
/// toolgate's internal names — any item re-exported through `__private` (but the public
/// ones, [`public_in_private`]) or marked `#[doc(hidden)]` in the crates, and the names
/// generated code gives its own items.
#[test]
fn no_pinned_diagnostic_shows_an_internal_name() {
    // Generated names (they are no item of the crates).
    const GENERATED: [&str; 5] = ["__toolgate", "other___", "`machine_id_", "_registration_at_line_", "__private"];
    let mut internal = hidden_names();
    assert!(internal.len() > 20, "found too few hidden names to guard: {internal:?}");
    internal.extend(GENERATED.iter().map(|name| name.to_string()));
    let mut leaks = Vec::new();
    for dir in ["action", "machine", "errors"] {
        for entry in std::fs::read_dir(dir).expect("read the UI cases") {
            let path = entry.expect("a UI case").path();
            if path.extension().is_none_or(|e| e != "stderr") {
                continue;
            }
            let text = std::fs::read_to_string(&path).expect("read a .stderr file");
            let text = without_claim_names(&text);
            leaks.extend(
                internal.iter().filter(|name| shows(&text, name)).map(|name| format!("{}: {name}", path.display())),
            );
        }
    }
    assert!(leaks.is_empty(), "internal names in pinned diagnostics:\n{}", leaks.join("\n"));
}

/// `text` without the name `machine!` claims an id with, where rustc's E0428 shows it
/// for two declarations of one id: the name is meant to be read there (it is
/// `machine_id_` and the id), and nowhere else.
fn without_claim_names(text: &str) -> String {
    const CLAIM: &str = "`machine_id_";
    const SAID: [&str; 4] =
        ["the name ", "previous definition of the macro ", " redefined here", " must be defined only once"];
    text.lines()
        .map(|line| {
            let mut line = line.to_string();
            if SAID.iter().any(|said| line.contains(said)) {
                while let Some(at) = line.find(CLAIM) {
                    let end = line[at + 1..].find('`').map_or(line.len(), |end| at + end + 2);
                    line.replace_range(at..end, "`…`");
                }
            }
            line
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Whether `text` shows `name` as a word of its own (or, for a prefix ending in `_`, at
/// all).
fn shows(text: &str, name: &str) -> bool {
    if name.ends_with('_') || name.starts_with('_') {
        return text.contains(name);
    }
    let word = |c: char| c.is_alphanumeric() || c == '_';
    text.match_indices(name).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + name.len()..].chars().next();
        !before.is_some_and(word) && !after.is_some_and(word)
    })
}

/// Every name the crates re-export through `__private` or mark `#[doc(hidden)]`.
fn hidden_names() -> Vec<String> {
    let mut names = std::collections::BTreeSet::new();
    for dir in ["../../runtime/src", "../../machine/src"] {
        for file in rust_files(std::path::Path::new(dir)) {
            let text = std::fs::read_to_string(&file).expect("read a source file");
            let mut hidden_next = false;
            let mut in_private = false;
            for line in text.lines() {
                let line = line.trim();
                if line.starts_with("pub mod __private") {
                    in_private = true;
                    continue;
                }
                if in_private && line == "}" {
                    in_private = false;
                }
                if line.starts_with("#[doc(hidden)]") {
                    hidden_next = true;
                    continue;
                }
                if line.starts_with("#[") || line.starts_with("//") {
                    continue;
                }
                if hidden_next || in_private {
                    names.extend(declared_names(line));
                }
                // A `pub use` list may go on over lines.
                let list_goes_on = (line.starts_with("pub use") && !line.ends_with(';')) || line.ends_with(',');
                if !list_goes_on {
                    hidden_next = false;
                }
            }
        }
    }
    // Too common as words to be telling: a diagnostic shows them as the user's own.
    for common in ["inventory", "Output", "Handler", "Called", "Arguments", "SourceLocation", "RateLimit", "State"] {
        names.remove(common);
    }
    for public in public_in_private() {
        names.remove(public);
    }
    names.into_iter().collect()
}

/// The public items `__private` re-exports as well, so that generated code names the
/// runtime nowhere else: rustc prints each by its public path (`toolgate::FromCtx`, or
/// `FromCtx` where the user imported it), never through `__private` (a doc-hidden module),
/// and that path is what the user wrote. A diagnostic that showed `__private` would still
/// fail the test, by that name. Each is named here by its public path, so this file stops
/// compiling if one stops being public.
fn public_in_private() -> Vec<&'static str> {
    macro_rules! public {
        ($($($segment:ident)::+),* $(,)?) => {{
            $(#[allow(unused_imports)] use $($segment)::+ as _;)*
            vec![$(stringify!($($segment)::+).rsplit("::").next().unwrap_or_default().trim()),*]
        }};
    }
    public![
        toolgate::ActionInput,
        toolgate::ActionOutput,
        toolgate::Ctx,
        toolgate::Failure,
        toolgate::FromCtx,
        toolgate::InstanceContext,
        toolgate::ToolError,
        toolgate::effect::Attempt,
        toolgate::effect::EffectCall,
    ]
}

/// The names an item line declares: `pub struct Name`, `pub use path::{A, B as C}`, a
/// continued list `A, B,`.
fn declared_names(line: &str) -> Vec<String> {
    let line = line.trim_start_matches("pub(crate) ").trim_start_matches("pub ");
    for keyword in ["struct ", "trait ", "const fn ", "fn ", "enum ", "mod ", "const ", "static ", "type "] {
        if let Some(rest) = line.strip_prefix(keyword) {
            let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            return vec![name];
        }
    }
    let list = line.strip_prefix("use ").unwrap_or(line);
    let list = list.rsplit("::{").next().unwrap_or(list);
    list.split(',')
        .filter_map(|part| {
            let part = part.trim().trim_end_matches([';', '}']).trim();
            let name = part.rsplit(" as ").next()?.rsplit("::").next()?.trim();
            (!name.is_empty() && name.chars().all(|c| c.is_alphanumeric() || c == '_')).then(|| name.to_string())
        })
        .collect()
}

fn rust_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).expect("read a source directory") {
        let path = entry.expect("a source entry").path();
        if path.is_dir() {
            files.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    files
}
