//! Compile-fail (UI) tests: every diagnostic of `#[action]` and `machine!`, and what a
//! handler cannot write (the gate's error codes), with its message and the token it
//! points at. Regenerate the `.stderr` files with
//! `TRYBUILD=overwrite cargo test --test ui` and read them before committing.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/action/*.rs");
    t.compile_fail("tests/ui/machine/*.rs");
    t.compile_fail("tests/ui/errors/*.rs");
    t.pass("tests/ui/pass/*.rs");
}

/// What a user can trigger must speak their terms: no pinned diagnostic shows one of
/// toolgate's internal names.
#[test]
fn no_pinned_diagnostic_shows_an_internal_name() {
    const INTERNAL: [&str; 13] = [
        "__toolgate",
        "WithInput",
        "WithoutInput",
        "ErasedHandler",
        "other___",
        "toolgate_machine_",
        "_registration_at_line_",
        "MachineInScope",
        "FreeFunction",
        "IsCtx",
        "__private",
        "check_binding",
        "Repr",
    ];
    let mut leaks = Vec::new();
    for dir in ["tests/ui/action", "tests/ui/machine", "tests/ui/errors"] {
        for entry in std::fs::read_dir(dir).expect("read the UI cases") {
            let path = entry.expect("a UI case").path();
            if path.extension().is_some_and(|e| e == "stderr") {
                let text = std::fs::read_to_string(&path).expect("read a .stderr file");
                leaks.extend(
                    INTERNAL
                        .iter()
                        .filter(|name| text.contains(*name))
                        .map(|name| format!("{}: {name}", path.display())),
                );
            }
        }
    }
    assert!(leaks.is_empty(), "internal names in pinned diagnostics:\n{}", leaks.join("\n"));
}
