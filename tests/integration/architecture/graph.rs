//! The graphs the layering rules judge (rooms of the crate, files of a folder), and the
//! cycles in them.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use super::resolve::{Crate, Import};

/// `from → to` arrows between the nodes of one folder, each with one file-level import
/// that makes it (the first, in order).
pub(super) type Arrows = BTreeMap<(String, String), Import>;

/// The arrows between the parts of the folder of module `folder` (its `mod.rs`, `lib.rs`
/// or `x.rs`, shown by its file name, and its child modules, shown as `x.rs` or `x/`).
/// A file counts as the part it lies in: `server/front/owned/reply.rs` is `front/` in
/// `server/`.
pub(super) fn folder_arrows(krate: &Crate, imports: &BTreeSet<Import>, folder: usize) -> Arrows {
    let base = &krate.modules[folder];
    let module_of: BTreeMap<&str, &[String]> =
        krate.modules.iter().filter(|m| m.file_root).map(|m| (m.file.as_str(), m.path.as_slice())).collect();
    let node = |file: &str| -> Option<String> {
        let path = module_of[file];
        if path == base.path.as_slice() {
            return Some(base.file.rsplit('/').next().unwrap().to_string());
        }
        if !path.starts_with(&base.path) {
            return None;
        }
        let mut child = base.path.clone();
        child.push(path[base.path.len()].clone());
        let child = krate.modules.iter().find(|m| m.path == child).unwrap();
        Some(if is_folder(krate, child) {
            format!("{}/", child.path.last().unwrap())
        } else {
            child.file.rsplit('/').next().unwrap().to_string()
        })
    };
    let mut arrows = Arrows::new();
    for import in imports {
        if let (Some(from), Some(to)) = (node(&import.from), node(&import.to))
            && from != to
        {
            arrows.entry((from, to)).or_insert_with(|| import.clone());
        }
    }
    arrows
}

/// Whether `module` is a folder: a file whose child modules have files of their own.
pub(super) fn is_folder(krate: &Crate, module: &super::resolve::Module) -> bool {
    module.file_root
        && (module.file.ends_with("mod.rs")
            || krate
                .modules
                .iter()
                .any(|m| m.file_root && m.path.len() == module.path.len() + 1 && m.path.starts_with(&module.path)))
}

/// Each cycle of `arrows`, once: for every arrow `a → b` that lies on a cycle, the
/// shortest way back from `b` to `a` closes it. Each cycle starts at its least node.
pub(super) fn cycles(arrows: &Arrows) -> BTreeSet<Vec<String>> {
    let mut next: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (from, to) in arrows.keys() {
        next.entry(from).or_default().insert(to);
    }
    let mut found = BTreeSet::new();
    for (from, to) in arrows.keys() {
        // Breadth-first from `to` back to `from`, neighbours in order: the same graph
        // always gives the same cycle.
        let mut came_from: BTreeMap<&str, &str> = BTreeMap::new();
        let mut queue = VecDeque::from([to.as_str()]);
        while let Some(at) = queue.pop_front() {
            if at == from {
                break;
            }
            for &n in next.get(at).into_iter().flatten() {
                if n != to.as_str() && !came_from.contains_key(n) {
                    came_from.insert(n, at);
                    queue.push_back(n);
                }
            }
        }
        if to != from && !came_from.contains_key(from.as_str()) {
            continue;
        }
        let mut back = vec![from.as_str()];
        while let Some(&step) = came_from.get(back.last().unwrap()) {
            back.push(step);
            if step == to {
                break;
            }
        }
        // `back` is from ← … ← to; the cycle is from → to → … → from.
        let mut cycle: Vec<String> =
            std::iter::once(from.clone()).chain(back[1..].iter().rev().map(|s| s.to_string())).collect();
        if cycle.len() < 2 {
            cycle.push(to.clone());
        }
        let least = (0..cycle.len()).min_by_key(|&i| &cycle[i]).unwrap();
        cycle.rotate_left(least);
        found.insert(cycle);
    }
    found
}

/// A cycle as a finding's line, `a → b → c → a`, and, for each arrow, the import that
/// makes it.
pub(super) fn describe(prefix: &str, cycle: &[String], arrows: &Arrows) -> (String, String) {
    let mut line = format!("{prefix}{}", cycle.join(" → "));
    line.push_str(&format!(" → {}", cycle[0]));
    let mut detail = String::new();
    for (i, from) in cycle.iter().enumerate() {
        let to = &cycle[(i + 1) % cycle.len()];
        let import = &arrows[&(from.clone(), to.clone())];
        detail.push_str(&format!("    {from} → {to}: {} → {} ({})\n", import.from, import.to, import.name));
    }
    (line, detail)
}
