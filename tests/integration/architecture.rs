//! The runtime's modules form a layered house: no two of them import each other, directly
//! or around a cycle, so each concept can be read (and changed) from its own home.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// `module → modules it imports` (`crate::x` paths) for every top-level runtime module.
fn imports() -> BTreeMap<String, BTreeSet<String>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("runtime/src");
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut files = vec![root.clone()];
    while let Some(path) = files.pop() {
        if path.is_dir() {
            files.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
            continue;
        }
        let relative = path.strip_prefix(&root).unwrap();
        let module =
            relative.components().next().unwrap().as_os_str().to_string_lossy().trim_end_matches(".rs").to_string();
        if module == "lib" {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let used = graph.entry(module.clone()).or_default();
        for (i, _) in text.match_indices("crate::") {
            let name: String = text[i + 7..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
            if !name.is_empty() && name != module && name != "__private" {
                used.insert(name);
            }
        }
    }
    graph
}

#[test]
fn runtime_modules_import_each_other_without_cycles() {
    let graph = imports();
    assert!(graph.contains_key("gate") && graph.contains_key("server"), "{graph:?}");
    // Depth-first search for a back edge.
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) {
        if let Some(start) = path.iter().position(|n| n == node) {
            panic!("import cycle: {} -> {node}", path[start..].join(" -> "));
        }
        if !done.insert(node.to_string()) {
            return;
        }
        path.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            visit(next, graph, path, done);
        }
        path.pop();
    }
    let mut done = BTreeSet::new();
    for node in graph.keys() {
        visit(node, &graph, &mut Vec::new(), &mut done);
    }
}

/// The guide's table of error codes (`docs/errors.md`) lists exactly the codes toolgate
/// produces.
#[test]
fn the_guide_lists_every_error_code() {
    let page = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/errors.md")).unwrap();
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
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("runtime/src");
    let mut writers = BTreeSet::new();
    let mut files = vec![root.clone()];
    while let Some(path) = files.pop() {
        if path.is_dir() {
            files.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let code = text.split("#[cfg(test)]\nmod tests").next().unwrap_or_default();
        let compact: String = code.chars().filter(|c| !c.is_whitespace()).collect();
        if compact.contains(r#""jsonrpc":"2.0""#) {
            writers.insert(path.strip_prefix(&root).unwrap().to_string_lossy().replace('\\', "/"));
        }
        if path.ends_with("server/owned.rs") {
            assert!(!compact.contains(r#"envelope_raw(id,"error""#), "the owned path writes an error of its own");
        }
    }
    let expected: BTreeSet<String> = ["error/jsonrpc.rs", "server/owned.rs"].map(String::from).into();
    assert_eq!(writers, expected, "JSON-RPC envelopes written outside the one writer");
}
