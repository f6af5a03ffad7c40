//! The runtime is a layered house, and these tests hold it so. They read `runtime/src` the
//! way the compiler does (`resolve.rs`: every path, in a `use` or inline in code, resolved
//! through `pub use` chains to the file that defines the item), and check:
//!
//! - no cycle between the top-level rooms of `runtime/src` (`gate/`, `store/`, …);
//! - no cycle between the files of any one folder, its `mod.rs` included;
//! - a `mod.rs` declares and re-exports: nothing it defines is imported by its children;
//! - no file of `runtime/src` or `macros/src` is over 600 non-test lines;
//! - generated code names the runtime only through `::toolgate::__private`;
//! - the engine knows no transport: outside `server/`, rmcp is named only for the
//!   protocol's model (`rmcp::model`), never its service (`Peer`, `RoleServer`, …).
//!
//! Each rule has a ratchet, `known.rs`: its known exceptions, none since issue 54. A test
//! fails on a finding not in its list, and on a listed one that is gone; the failure
//! prints today's list, ready to paste (to take in a rebase, never to hide a violation).

mod graph;
mod items;
// As the failure prints it, ready to paste.
#[rustfmt::skip]
mod known;
mod resolve;
mod resolve_tests;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use quote::ToTokens;
use resolve::{Crate, Import};

/// Every file under `root`, in any folder.
fn files_under(root: &Path) -> Vec<PathBuf> {
    let (mut files, mut folders) = (Vec::new(), vec![root.to_path_buf()]);
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() { folders.push(path) } else { files.push(path) }
        }
    }
    files.sort();
    files
}

fn repository() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The runtime crate, parsed, and its file-level imports (read once for all the tests).
fn runtime() -> &'static (Crate, BTreeSet<Import>) {
    static RUNTIME: OnceLock<(Crate, BTreeSet<Import>)> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        let src = repository().join("runtime/src");
        let krate = Crate::load(&|file| std::fs::read_to_string(src.join(file)).ok());
        let imports = krate.imports();
        // The whole graph, for a before/after figure: `TOOLGATE_IMPORT_GRAPH=imports.txt`.
        if let Ok(dump) = std::env::var("TOOLGATE_IMPORT_GRAPH") {
            let lines: String = imports.iter().map(|i| format!("{} → {} ({})\n", i.from, i.to, i.name)).collect();
            std::fs::write(dump, lines).unwrap();
        }
        (krate, imports)
    })
}

/// Every path into the crate names something the resolver finds: a gap in it (a form of
/// `use` or of module it does not read) would hide imports from every rule.
#[test]
fn every_crate_path_resolves() {
    let (krate, _) = runtime();
    let lost = krate.unresolved();
    assert!(
        lost.is_empty(),
        "paths the resolver cannot follow:\n{}",
        lost.iter().cloned().collect::<Vec<_>>().join("\n")
    );
}

/// Checks `found` (`finding's line → what it is made of`) against `known`, the list
/// named `list` in `known.rs`. Fails on a finding that is not listed (a new violation)
/// and on a listed one that is gone (its line must be deleted: the list only shrinks).
fn ratchet(rule: &str, list: &str, known: &[&str], found: &BTreeMap<String, String>) {
    let mut report = format!("{rule}: {} finding(s) today\n", found.len());
    for (line, detail) in found {
        report.push_str(&format!("  {line}\n{detail}"));
    }
    println!("{report}");
    let known: BTreeSet<&str> = known.iter().copied().collect();
    let new: Vec<&String> = found.keys().filter(|line| !known.contains(line.as_str())).collect();
    let gone: Vec<&&str> = known.iter().filter(|line| !found.contains_key(**line)).collect();
    if new.is_empty() && gone.is_empty() {
        return;
    }
    let mut message = report;
    if !new.is_empty() {
        message.push_str(&format!(
            "\nNEW, not in `{list}` (tests/integration/architecture/known.rs): a new violation of the rule. \
             Fix it; do not add it to the list.\n"
        ));
        for line in &new {
            message.push_str(&format!("  {line}\n{}", found[*line]));
        }
    }
    if !gone.is_empty() {
        message.push_str(&format!(
            "\nGONE, listed in `{list}` but no longer found: well done. Delete its line from `{list}`, so \
             the list only shrinks.\n"
        ));
        for line in &gone {
            message.push_str(&format!("  {line}\n"));
        }
    }
    message.push_str(&format!(
        "\nToday's findings as the list (tests/integration/architecture/known.rs; paste it only to \
         take in a rebase, never to hide a new violation):\n\n{}",
        as_const(list, found.keys())
    ));
    panic!("{message}");
}

/// `lines` as a Rust `const` list, ready to paste into `known.rs`.
fn as_const<'a>(name: &str, lines: impl Iterator<Item = &'a String>) -> String {
    let mut text = format!("/// Known exceptions.\npub(super) const {name}: &[&str] = &[\n");
    for line in lines {
        text.push_str(&format!("    {line:?},\n"));
    }
    text.push_str("];\n");
    text
}

/// The rooms of `runtime/src` (its top-level modules, and `lib.rs`) import each other
/// without cycles.
#[test]
fn rooms_import_each_other_without_cycles() {
    let (krate, imports) = runtime();
    let arrows = graph::folder_arrows(krate, imports, 0);
    assert!(arrows.keys().any(|(from, _)| from == "gate/"), "the resolver sees no import of gate/: {arrows:?}");
    let found = graph::cycles(&arrows).iter().map(|cycle| graph::describe("", cycle, &arrows)).collect();
    ratchet("cycles between the rooms of runtime/src", "ROOM_CYCLES", known::ROOM_CYCLES, &found);
}

/// Inside every folder of `runtime/src`, the files (its `mod.rs` one of them) and
/// subfolders import each other without cycles.
#[test]
fn files_in_a_folder_import_each_other_without_cycles() {
    let (krate, imports) = runtime();
    let mut found = BTreeMap::new();
    let mut folders = 0;
    for (at, module) in krate.modules.iter().enumerate().skip(1) {
        if !graph::is_folder(krate, module) {
            continue;
        }
        folders += 1;
        let arrows = graph::folder_arrows(krate, imports, at);
        let folder = format!("{}/: ", module.path.join("/"));
        found.extend(graph::cycles(&arrows).iter().map(|cycle| graph::describe(&folder, cycle, &arrows)));
    }
    assert!(folders > 10, "the resolver finds {folders} folders");
    ratchet("cycles between the files of a folder", "FOLDER_CYCLES", known::FOLDER_CYCLES, &found);
}

/// The engine knows no transport: below `server/`, a call reaches its client through
/// `client::ClientLink`, and rmcp is named only for the protocol's data (`rmcp::model`).
/// rmcp's service (`Peer`, `RoleServer`, `RequestContext`, `ServerHandler`, transports)
/// stays in `server/`, which adapts it.
#[test]
fn only_the_server_names_rmcps_service() {
    let (krate, _) = runtime();
    let mut found = BTreeMap::new();
    for (at, module) in krate.modules.iter().enumerate().filter(|(_, m)| m.path.first().is_none_or(|r| r != "server")) {
        for path in krate.outside_paths(at) {
            if path.first().is_some_and(|c| c == "rmcp") && path.get(1).is_none_or(|part| part != "model") {
                found.insert(format!("{}: {}", module.file, path.join("::")), String::new());
            }
        }
    }
    ratchet(
        "rmcp's service named outside server/",
        "RMCP_SERVICE_OUTSIDE_SERVER",
        known::RMCP_SERVICE_OUTSIDE_SERVER,
        &found,
    );
}

/// A `mod.rs` (or `lib.rs`, or `x.rs` beside its folder `x/`) declares modules and
/// re-exports: nothing it defines is imported by a file below it, which would depend on
/// its own face. What they share lives in a file of its own.
#[test]
fn a_mod_rs_defines_nothing_its_children_import() {
    let (krate, imports) = runtime();
    let mut found: BTreeMap<String, String> = BTreeMap::new();
    for module in krate.modules.iter().filter(|m| graph::is_folder(krate, m)) {
        let below = |file: &str| {
            krate
                .modules
                .iter()
                .any(|m| m.file == file && m.path.len() > module.path.len() && m.path.starts_with(&module.path))
        };
        for import in imports.iter().filter(|i| i.to == module.file && below(&i.from)) {
            found
                .entry(format!("{}: {}", module.file, import.name))
                .or_default()
                .push_str(&format!("    imported by {}\n", import.from));
        }
    }
    ratchet("mod.rs files that define what their children import", "FACES_IMPORTED", known::FACES_IMPORTED, &found);
}

/// The lines of `text` before its unit tests (`#[cfg(test)] mod tests`).
fn non_test_lines(text: &str) -> usize {
    text.split("#[cfg(test)]\nmod tests").next().unwrap_or_default().lines().count()
}

/// No file of `runtime/src` or `macros/src` is over 600 lines, its unit tests left out:
/// past that, a file holds more than one concept.
#[test]
fn no_file_is_over_600_lines() {
    let mut found = BTreeMap::new();
    for crate_src in ["runtime/src", "macros/src"] {
        for path in files_under(&repository().join(crate_src)) {
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let lines = non_test_lines(&std::fs::read_to_string(&path).unwrap());
            if lines > 600 {
                let name = path.strip_prefix(repository()).unwrap().to_string_lossy().replace('\\', "/");
                found.insert(name, format!("    {lines} non-test lines\n"));
            }
        }
    }
    ratchet("files over 600 non-test lines", "LONG_FILES", known::LONG_FILES, &found);
}

/// Public names generated code may name outside `::toolgate::__private`: those rustc
/// prints in a pinned diagnostic (a `tests/ui/` case) as the path written, where
/// `__private` would show. Each with a comment naming that case. None today: rustc prints
/// a public item that `__private` re-exports by its public path (`toolgate::Failure` in
/// `machine/guard_wrong_context.stderr`, `FromCtx` in `action/three_params.stderr`), and
/// `MachineId` and `MachineDeclared`, which rustc once printed, are hidden again
/// (docs/upstream.md).
const PRINTED_IN_PINNED_DIAGNOSTICS: &[&str] = &[];

/// Generated code names the runtime only through `::toolgate::__private`, where it may
/// change without notice; except the names rustc prints in a pinned diagnostic
/// ([`PRINTED_IN_PINNED_DIAGNOSTICS`]), public and documented for that reason.
#[test]
fn generated_code_names_the_runtime_through_private() {
    let mut found = BTreeMap::new();
    for path in files_under(&repository().join("macros/src")) {
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let name = path.strip_prefix(repository()).unwrap().to_string_lossy().replace('\\', "/");
        let file = syn::parse_file(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let mut paths = Vec::new();
        for item in file.items.iter().filter(|item| !is_test_item(item)) {
            quoted_runtime_paths(item.to_token_stream(), false, &mut paths);
        }
        for path in paths {
            // The runtime crate itself is no path for generated code: users depend on the facade.
            if path[0] == "toolgate_runtime"
                || (path[1] != "__private" && !PRINTED_IN_PINNED_DIAGNOSTICS.contains(&path[1].as_str()))
            {
                found.insert(format!("{name}: ::{}", path.join("::")), String::new());
            }
        }
    }
    ratchet(
        "generated code naming the runtime outside __private",
        "PUBLIC_PATHS_IN_GENERATED_CODE",
        known::PUBLIC_PATHS_IN_GENERATED_CODE,
        &found,
    );
}

fn is_test_item(item: &syn::Item) -> bool {
    match item {
        syn::Item::Mod(m) => resolve::is_test(&m.attrs),
        syn::Item::Fn(f) => resolve::is_test(&f.attrs),
        _ => false,
    }
}

/// The `toolgate::…` (or `toolgate_runtime::…`) paths (two segments or more) inside
/// `quote!`-like macro calls of `tokens`; `quoted`: whether `tokens` is already inside one.
fn quoted_runtime_paths(tokens: proc_macro2::TokenStream, quoted: bool, out: &mut Vec<Vec<String>>) {
    use proc_macro2::TokenTree;
    let tokens: Vec<TokenTree> = tokens.into_iter().collect();
    let is_punct = |i: usize, c: char| matches!(tokens.get(i), Some(TokenTree::Punct(p)) if p.as_char() == c);
    for (i, token) in tokens.iter().enumerate() {
        match token {
            TokenTree::Ident(ident)
                if quoted
                    && (ident == "toolgate" || ident == "toolgate_runtime")
                    && !(i >= 1 && is_punct(i - 1, '.')) =>
            {
                let mut path = vec![ident.to_string()];
                let mut j = i;
                while is_punct(j + 1, ':')
                    && is_punct(j + 2, ':')
                    && let Some(TokenTree::Ident(next)) = tokens.get(j + 3)
                {
                    path.push(next.to_string());
                    j += 3;
                }
                if path.len() > 1 {
                    out.push(path);
                }
            }
            TokenTree::Group(group) => {
                let is_quote = i >= 2
                    && is_punct(i - 1, '!')
                    && matches!(&tokens[i - 2], TokenTree::Ident(m)
                        if ["quote", "quote_spanned", "parse_quote", "parse_quote_spanned"].contains(&m.to_string().as_str()));
                quoted_runtime_paths(group.stream(), quoted || is_quote, out);
            }
            _ => {}
        }
    }
}

/// The guide's table of error codes (`docs/errors.md`) lists exactly the codes toolgate
/// produces.
#[test]
fn the_guide_lists_every_error_code() {
    let page = std::fs::read_to_string(repository().join("docs/errors.md")).unwrap();
    let table = page.split("## Error codes").nth(1).expect("docs/errors.md has an error-code table");
    let listed: Vec<&str> = table
        .lines()
        .skip_while(|line| !line.starts_with("| code"))
        .skip(2)
        .take_while(|line| line.starts_with('|'))
        .filter_map(|line| line.split('`').nth(1))
        .collect();
    assert_eq!(listed, toolgate::ToolError::RESERVED_CODES);
}

/// Every JSON-RPC error toolgate writes itself (the HTTP front's refusals, stdio's, the
/// owned path's) comes from one writer, `error/jsonrpc.rs`: outside it, non-test code
/// writes a JSON-RPC envelope only for the owned path's results, and never an error.
#[test]
fn one_writer_of_json_rpc_errors() {
    let root = repository().join("runtime/src");
    let mut writers = BTreeSet::new();
    for path in files_under(&root) {
        let text = std::fs::read_to_string(&path).unwrap();
        let code = text.split("#[cfg(test)]\nmod tests").next().unwrap_or_default();
        let compact: String = code.chars().filter(|c| !c.is_whitespace()).collect();
        if compact.contains(r#""jsonrpc":"2.0""#) {
            writers.insert(path.strip_prefix(&root).unwrap().to_string_lossy().replace('\\', "/"));
        }
        if path.ends_with("server/front/owned/reply.rs") {
            assert!(!compact.contains(r#"envelope_raw(id,"error""#), "the owned path writes an error of its own");
        }
    }
    let expected: BTreeSet<String> = ["error/jsonrpc.rs", "server/front/owned/reply.rs"].map(String::from).into();
    assert_eq!(writers, expected, "JSON-RPC envelopes written outside the one writer");
}
