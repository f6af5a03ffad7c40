//! Compile-fail (UI) tests: every diagnostic of `#[action]` and `machine!`, with its
//! message and the token it points at. Regenerate the `.stderr` files with
//! `TRYBUILD=overwrite cargo test --test ui` and read them before committing.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/action/*.rs");
    t.compile_fail("tests/ui/machine/*.rs");
    t.pass("tests/ui/pass/*.rs");
}
