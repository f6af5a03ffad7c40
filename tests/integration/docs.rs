//! The documentation a newcomer reads holds together: the README stays short and starts
//! with its two commands, and every relative link in the README, `ARCHITECTURE.md` and the
//! guide (`docs/*.md`) names a file of the repository — and, with a `#fragment` into a
//! Markdown file, one of its headings.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The README's length, at most.
const README_MAX_LINES: usize = 250;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// The README, `ARCHITECTURE.md` and every page of `docs/`.
fn documents() -> Vec<PathBuf> {
    let mut files = vec![root().join("README.md"), root().join("ARCHITECTURE.md")];
    let mut pages: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .expect("a docs/ folder")
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .collect();
    pages.sort();
    files.extend(pages);
    files
}

/// The text outside fenced code blocks (whose `](…)` are code, not links), line by line,
/// with inline code spans blanked out.
fn prose(text: &str) -> Vec<(usize, String)> {
    let mut fenced = false;
    let mut lines = Vec::new();
    for (number, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        // Blank `code spans`, byte for byte (offsets stay the line's): a link never starts
        // inside one.
        let mut kept = String::with_capacity(line.len());
        let mut in_code = false;
        for c in line.chars() {
            if c == '`' {
                in_code = !in_code;
                kept.push(' ');
            } else if in_code {
                kept.extend(std::iter::repeat_n(' ', c.len_utf8()));
            } else {
                kept.push(c);
            }
        }
        lines.push((number + 1, kept));
    }
    lines
}

/// Every Markdown link target, `](target)`, with its line number. A link's text may hold
/// code, so targets are read from the raw line at the positions the prose says are links.
fn links(text: &str) -> Vec<(usize, String)> {
    let raw: Vec<&str> = text.lines().collect();
    let mut found = Vec::new();
    for (number, line) in prose(text) {
        let original = raw[number - 1];
        for (at, _) in line.match_indices("](") {
            let start = at + 2;
            let Some(length) = original[start..].find(')') else { continue };
            let target = original[start..start + length].trim();
            // `[text](target "title")`: the target is the first word.
            let target = target.split_whitespace().next().unwrap_or_default();
            found.push((number, target.to_string()));
        }
    }
    found
}

/// GitHub's anchor for a heading: lowercase, spaces to `-`, punctuation dropped except
/// `-` and `_`.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of a Markdown file's headings (outside code blocks). A heading that
/// repeats gets GitHub's `-1`, `-2`, … after its first.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut anchors = BTreeSet::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced || !line.starts_with('#') {
            continue;
        }
        let heading = line.trim_start_matches('#');
        if !heading.starts_with(' ') {
            continue;
        }
        let base = slug(heading);
        let mut anchor = base.clone();
        let mut n = 0;
        while anchors.contains(&anchor) {
            n += 1;
            anchor = format!("{base}-{n}");
        }
        anchors.insert(anchor);
    }
    anchors
}

fn is_external(target: &str) -> bool {
    let lower = target.to_ascii_lowercase();
    lower.starts_with("http://") || lower.starts_with("https://") || lower.starts_with("mailto:")
}

/// What is wrong with each relative link of `file`, if anything.
fn broken_links(file: &Path) -> Vec<String> {
    let text = read(file);
    let name = file.strip_prefix(root()).unwrap_or(file).display().to_string();
    let directory = file.parent().unwrap();
    let mut broken = Vec::new();
    for (line, target) in links(&text) {
        if target.is_empty() {
            broken.push(format!("{name}:{line}: an empty link target"));
            continue;
        }
        if is_external(&target) {
            continue;
        }
        let (path, fragment) = match target.split_once('#') {
            Some((path, fragment)) => (path, Some(fragment)),
            None => (target.as_str(), None),
        };
        let linked = if path.is_empty() { file.to_path_buf() } else { directory.join(path) };
        if !linked.exists() {
            broken.push(format!("{name}:{line}: `{target}` names no file ({} does not exist)", linked.display()));
            continue;
        }
        let Some(fragment) = fragment else { continue };
        if linked.extension().is_none_or(|ext| ext != "md") {
            continue;
        }
        let headings = anchors(&read(&linked));
        if !headings.contains(fragment) {
            broken.push(format!(
                "{name}:{line}: `{target}`: {} has no heading `#{fragment}` (its anchors: {})",
                linked.strip_prefix(root()).unwrap_or(&linked).display(),
                headings.iter().cloned().collect::<Vec<_>>().join(", ")
            ));
        }
    }
    broken
}

#[test]
fn every_relative_link_names_a_file_and_a_heading() {
    let documents = documents();
    assert!(documents.len() > 2, "the guide has pages: {documents:?}");
    let broken: Vec<String> = documents.iter().flat_map(|file| broken_links(file)).collect();
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn the_readme_is_short_and_starts_with_its_two_commands() {
    let readme = read(&root().join("README.md"));
    let lines = readme.lines().count();
    assert!(lines <= README_MAX_LINES, "README.md has {lines} lines, more than {README_MAX_LINES}");

    // The shell blocks, in order.
    let mut blocks: Vec<String> = Vec::new();
    let mut current: Option<String> = None;
    for line in readme.lines() {
        match (&mut current, line.trim_start()) {
            (None, fence) if fence.starts_with("```sh") => current = Some(String::new()),
            (Some(block), fence) if fence.starts_with("```") => {
                blocks.push(std::mem::take(block));
                current = None;
            }
            (Some(block), _) => {
                block.push_str(line);
                block.push('\n');
            }
            (None, _) => {}
        }
    }
    let first = blocks.first().expect("README.md has a ```sh block");
    assert!(first.contains("cargo run --example invoice"), "README.md's first sh block runs no server:\n{first}");
    assert!(
        blocks.iter().any(|block| block.contains("cargo test --workspace")),
        "README.md's sh blocks do not run `cargo test --workspace`"
    );
    // The two commands come first: no other section before them.
    let before = &readme[..readme.find("```sh").unwrap()];
    assert_eq!(before.matches("\n## ").count(), 0, "README.md has a section before its two commands:\n{before}");
}

#[test]
fn slugs_are_githubs() {
    assert_eq!(slug(" The call pipeline"), "the-call-pipeline");
    assert_eq!(slug(" Guards: rules on values, in the machine"), "guards-rules-on-values-in-the-machine");
    assert_eq!(slug(" Calls that outlive their request (MCP Tasks)"), "calls-that-outlive-their-request-mcp-tasks");
    assert_eq!(slug(" Where `machine!` and the actions go"), "where-machine-and-the-actions-go");
    assert_eq!(slug(" An instance's data"), "an-instances-data");
    let text = "# A\n## B\n```\n# not a heading\n```\n## B\n";
    assert_eq!(anchors(text), ["a", "b", "b-1"].into_iter().map(String::from).collect());
}

#[test]
fn links_are_read_outside_code() {
    let text = "See [a](a.md) and `[b](b.md) …`.\n```\n[c](c.md)\n```\n![d](d.svg \"D\")\n[`é`](e.md#f)\n";
    let targets: Vec<String> = links(text).into_iter().map(|(_, t)| t).collect();
    assert_eq!(targets, ["a.md", "d.svg", "e.md#f"]);
}
