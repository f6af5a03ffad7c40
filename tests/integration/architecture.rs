//! The runtime's modules form a layered house: no two of them import each other, directly
//! or around a cycle, so each concept can be read (and changed) from its own home.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Every file under `root`, in any folder.
fn files_under(root: &Path) -> Vec<std::path::PathBuf> {
    let (mut files, mut folders) = (Vec::new(), vec![root.to_path_buf()]);
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() { folders.push(path) } else { files.push(path) }
        }
    }
    files
}

/// `module → modules it imports` (`crate::x` paths) for every top-level runtime module.
fn imports() -> BTreeMap<String, BTreeSet<String>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("runtime/src");
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for path in files_under(&root) {
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

/// A module's path (`["server", "front"]` for `server/front/mod.rs`), for a file under
/// `runtime/src`.
fn module_of(relative: &Path) -> Vec<String> {
    let mut path: Vec<String> =
        relative.iter().map(|c| c.to_string_lossy().trim_end_matches(".rs").to_string()).collect();
    if path.last().is_some_and(|last| last == "mod") {
        path.pop();
    }
    path
}

/// The modules `text` (the file of module `module`) names by `crate::`, `self::` and
/// `super::` paths, resolved to absolute paths; comments and test modules left out.
fn named_modules(text: &str, module: &[String]) -> Vec<Vec<String>> {
    let code = text.split("#[cfg(test)]\nmod tests").next().unwrap_or_default();
    let code: String = code.lines().filter(|l| !l.trim_start().starts_with("//")).collect::<Vec<_>>().join("\n");
    let ident = |s: &str| s.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect::<String>();
    let mut named = Vec::new();
    let bytes = code.as_bytes();
    for (start, _) in code.char_indices() {
        if start > 0
            && (bytes[start - 1].is_ascii_alphanumeric() || bytes[start - 1] == b'_' || bytes[start - 1] == b':')
        {
            continue;
        }
        let rest = &code[start..];
        let (mut base, mut rest) = if let Some(rest) = rest.strip_prefix("crate::") {
            (Vec::new(), rest)
        } else if let Some(rest) = rest.strip_prefix("self::") {
            (module.to_vec(), rest)
        } else if let Some(rest) = rest.strip_prefix("super::") {
            let mut base = module.to_vec();
            base.pop();
            (base, rest)
        } else {
            continue;
        };
        while let Some(more) = rest.strip_prefix("super::") {
            base.pop();
            rest = more;
        }
        // A path goes on through names; a group (`{a, b::c}`) names each first segment.
        loop {
            let name = ident(rest);
            if name.is_empty() {
                break;
            }
            base.push(name.clone());
            match rest[name.len()..].strip_prefix("::") {
                Some(more) => rest = more,
                None => break,
            }
        }
        if let Some(group) = rest.strip_prefix('{') {
            let group = &group[..group.find('}').unwrap_or(group.len())];
            for item in group.split(',') {
                let mut path = base.clone();
                path.push(ident(item.trim()));
                named.push(path);
            }
        } else {
            named.push(base);
        }
    }
    named
}

/// Inside every folder, the files (and subfolders) import each other without cycles:
/// `front/json_check.rs` may use `front/options.rs`, but not while `options.rs` uses it.
/// (A folder's `mod.rs` is its face, not one of its parts: it declares and re-exports.)
#[test]
fn files_in_a_folder_import_each_other_without_cycles() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("runtime/src");
    // folder → part → the parts it names.
    let mut folders: BTreeMap<Vec<String>, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for path in files_under(&root) {
        let module = module_of(path.strip_prefix(&root).unwrap());
        let text = std::fs::read_to_string(&path).unwrap();
        let named = named_modules(&text, &module);
        // The file is a part of each folder above it: of `server/` as `front`, of
        // `server/front/` as `owned`, of `server/front/owned/` as `reply`.
        for depth in 1..module.len() {
            let (outer, part) = (module[..depth].to_vec(), module[depth].clone());
            let edges = folders.entry(outer.clone()).or_default().entry(part.clone()).or_default();
            for path in &named {
                if path.len() > depth && path[..depth] == outer[..] && path[depth] != part {
                    edges.insert(path[depth].clone());
                }
            }
        }
    }
    assert!(folders.contains_key(&vec!["server".to_string(), "front".to_string()]), "{folders:?}");
    let mut cycles = Vec::new();
    for (folder, graph) in &folders {
        for (part, uses) in graph {
            for used in uses {
                // A cycle through `part → used` is a path back from `used` to `part`.
                let mut seen = BTreeSet::new();
                let mut stack = vec![used.clone()];
                while let Some(next) = stack.pop() {
                    if next == *part {
                        cycles.push(format!("{}/: {part} -> {used} -> … -> {part}", folder.join("/")));
                        break;
                    }
                    if seen.insert(next.clone()) {
                        stack.extend(graph.get(&next).into_iter().flatten().cloned());
                    }
                }
            }
        }
    }
    assert!(cycles.is_empty(), "import cycles inside folders:\n{}", cycles.join("\n"));
}

/// No file of `server/` (the front, the connection, the builder, the command line) is over
/// 600 lines, its unit tests left out: past that, a file holds more than one concept.
#[test]
fn no_server_file_is_over_600_lines() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("runtime/src/server");
    let mut long = Vec::new();
    for path in files_under(&root) {
        let text = std::fs::read_to_string(&path).unwrap();
        let lines = text.split("#[cfg(test)]\nmod tests").next().unwrap_or_default().lines().count();
        if lines > 600 {
            long.push(format!("server/{}: {lines} lines", path.strip_prefix(&root).unwrap().display()));
        }
    }
    assert!(long.is_empty(), "files over 600 lines:\n{}", long.join("\n"));
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
