//! The resolver on a tiny crate held in memory, so a broken resolver fails a test of its
//! own instead of letting every rule pass.

use std::collections::{BTreeMap, BTreeSet};

use super::resolve::{Crate, Import, Resolved};

/// A crate where `Deep` and `helper` (defined in `a/b/leaf.rs`) are re-exported by a glob
/// in `a/b/mod.rs`, again by `a/mod.rs` (`helper` renamed `assist`), and by `lib.rs`.
fn tiny() -> Crate {
    let files: BTreeMap<&str, &str> = BTreeMap::from([
        (
            "lib.rs",
            "mod a;\nmod user;\nmod beside;\n#[path = \"elsewhere/odd.rs\"]\nmod odd;\n\
             pub use a::Deep;\nfn root() { a::assist(); }\n",
        ),
        // A module at its `#[path]`, whose children lie beside it.
        ("elsewhere/odd.rs", "mod near;\npub use near::Near;\n"),
        ("elsewhere/near.rs", "pub struct Near;\n"),
        ("a/mod.rs", "mod b;\npub use b::{Deep, helper as assist};\npub struct Face;\n"),
        ("a/b/mod.rs", "mod leaf;\npub use self::leaf::*;\n"),
        (
            "a/b/leaf.rs",
            "pub struct Deep;\npub fn helper() {}\nimpl Deep { fn new() -> Self { let _ = super::super::Face; Deep } }\n\
             pub struct Sized<const N: u32 = { u32::MAX }> { n: [u8; 0] }\npub fn after() {}\n\
             #[macro_export]\nmacro_rules! shout { () => { $crate::a::Face } }\nmake! { Made }\n",
        ),
        (
            "user.rs",
            "use crate::Deep as D;\nuse crate::a;\n\
             pub fn f() { crate::a::assist(); let _ = a::Face; crate::shout!(); crate::odd::Near; }\n\
             #[cfg(test)]\nmod tests { use crate::beside::g; }\n\
             #[cfg(all(test, unix))]\nfn only_tested() { crate::beside::g(); }\n",
        ),
        // A file module beside its folder (`beside.rs`, `beside/inner.rs`), and a `use`
        // inside a function body.
        (
            "beside.rs",
            "//! A file.\n#![allow(unused)]\nmod inner;\nsome::register! { inner::Thing }\n\
             pub(crate) fn g() { use inner::Thing; let _ = Thing; }\n",
        ),
        ("beside/inner.rs", "pub struct Thing;\n#[cfg(any(test, feature = \"x\"))]\npub struct Featured;\n"),
    ]);
    Crate::load(&|file| files.get(file).map(|text| text.to_string()))
}

fn import(from: &str, to: &str, name: &str) -> Import {
    Import { from: from.into(), to: to.into(), name: name.into() }
}

#[test]
fn the_resolver_follows_pub_use_chains_to_the_defining_file() {
    let krate = tiny();
    let user = krate.module(&["user"]).unwrap();
    let path = |p: &str| p.split("::").map(String::from).collect::<Vec<_>>();
    let leaf = |name: &str| Resolved::Item { file: "a/b/leaf.rs".into(), name: name.into() };
    // Through `lib.rs`, `a/mod.rs` and the glob of `a/b/mod.rs`.
    assert_eq!(krate.resolve(user, &path("crate::Deep")), leaf("Deep"));
    // A rename, and an associated item belonging to its type's file.
    assert_eq!(krate.resolve(user, &path("crate::a::assist")), leaf("helper"));
    assert_eq!(krate.resolve(user, &path("D::new")), leaf("Deep"));
    assert_eq!(krate.resolve(0, &path("a::b::leaf::Deep")), leaf("Deep"));
    assert_eq!(krate.resolve(user, &path("std::sync::Arc")), Resolved::Outside);
    // A name a macro made, found in the module that calls the macro; a name missing.
    assert_eq!(krate.resolve(user, &path("crate::a::b::leaf::Made")), leaf("Made"));
    assert_eq!(krate.resolve(user, &path("crate::a::Nothing")), Resolved::Missing);
    assert_eq!(krate.unresolved(), BTreeSet::new());
    // An item after a type whose generics hold braces.
    assert_eq!(krate.resolve(user, &path("crate::a::b::leaf::after")), leaf("after"));
    assert!(matches!(krate.resolve(user, &path("super::a")), Resolved::Module(_)));
    // `#[cfg(any(test, …))]` is compiled outside tests too.
    let inner = krate.module(&["beside", "inner"]).unwrap();
    assert_eq!(
        krate.resolve(inner, &path("self::Featured")),
        Resolved::Item { file: "beside/inner.rs".into(), name: "Featured".into() }
    );

    let expected = BTreeSet::from([
        import("lib.rs", "a/b/leaf.rs", "Deep"),
        import("lib.rs", "a/b/leaf.rs", "helper"),
        import("a/mod.rs", "a/b/leaf.rs", "Deep"),
        import("a/mod.rs", "a/b/leaf.rs", "helper"),
        // The glob imports what `leaf.rs` defines.
        import("a/b/mod.rs", "a/b/leaf.rs", "Deep"),
        import("a/b/mod.rs", "a/b/leaf.rs", "helper"),
        import("a/b/leaf.rs", "a/mod.rs", "Face"),
        import("user.rs", "a/b/leaf.rs", "Deep"),
        import("user.rs", "a/b/leaf.rs", "helper"),
        // Inline, through the module `use crate::a` brought in; tests left out.
        import("user.rs", "a/mod.rs", "Face"),
        import("beside.rs", "beside/inner.rs", "Thing"),
        import("elsewhere/odd.rs", "elsewhere/near.rs", "Near"),
        import("user.rs", "elsewhere/near.rs", "Near"),
        // A `#[macro_export]` macro belongs to the crate root, and to its file.
        import("user.rs", "a/b/leaf.rs", "shout"),
        // The glob imports what `leaf.rs` defines: all of it.
        import("a/b/mod.rs", "a/b/leaf.rs", "Sized"),
        import("a/b/mod.rs", "a/b/leaf.rs", "after"),
        import("a/b/mod.rs", "a/b/leaf.rs", "shout"),
    ]);
    assert_eq!(krate.imports(), expected);
}

/// A path that means another crate's item is followed through the crate's `use` chains to
/// that outside path: an alias of rmcp's peer re-exported by a parent is still rmcp's peer.
#[test]
fn outside_paths_follow_reexports_to_the_other_crate() {
    let files: BTreeMap<&str, &str> = BTreeMap::from([
        ("lib.rs", "mod net;\nmod user;\npub use net::Link;\n"),
        ("net.rs", "pub use rmcp::service::Peer as Link;\npub use rmcp::model;\n"),
        ("user.rs", "use crate::Link;\nuse super::net::model::Tool;\nfn f() { let _ = rmcp::RoleServer; }\n"),
    ]);
    let krate = Crate::load(&|file| files.get(file).map(|text| text.to_string()));
    let user = krate.module(&["user"]).unwrap();
    let found: Vec<String> = krate.outside_paths(user).into_iter().map(|p| p.join("::")).collect();
    assert_eq!(found, ["rmcp::RoleServer", "rmcp::model::Tool", "rmcp::service::Peer"]);
}
