//! Reads a crate the way the compiler does, for the layering rules: the module tree (from
//! `lib.rs`, `mod x;` found as `x.rs` or `x/mod.rs`, or at its `#[path]`), each module's
//! items and `use` declarations, and every path a file names, in a `use` or inline in its
//! code, resolved through `pub use` chains to the file that DEFINES the item. Spelling
//! alone is not enough: `super::CallEngine` in `action/ctx.rs` names `action/mod.rs`,
//! which only re-exports it from `action/history.rs`, the file `ctx.rs` depends on.
//!
//! Test code (`#[cfg(test)]` items and modules) is left out; external crates, the prelude
//! and `Self` resolve to nothing. A name a macro called at item level makes (`units! {
//! Nights … }`) is taken as defined in the file that calls the macro.

use std::collections::{BTreeMap, BTreeSet};

use proc_macro2::{Delimiter, Spacing, TokenStream, TokenTree};

use super::items::{Kind, items, starts_with_doc};

/// One module: a file's root module, or an inline `mod x { … }` inside a file.
#[derive(Debug)]
pub(super) struct Module {
    /// Its path from the crate root: `["store", "redis"]`.
    pub(super) path: Vec<String>,
    /// The file its items are written in, relative to the crate's `src`.
    pub(super) file: String,
    /// Whether it is the root module of `file` (not an inline module inside it).
    pub(super) file_root: bool,
    parent: Option<usize>,
    /// The folder a `mod x;` inside it is looked for in.
    child_dir: String,
    /// Its child modules.
    modules: BTreeMap<String, usize>,
    /// The items it defines (everything that is not a module), each with its file: its
    /// own, but for a `#[macro_export]` macro of another file at the crate root.
    items: BTreeMap<String, String>,
    /// Its `use` declarations (`name → path`), those written at module level first; a
    /// `use` inside a function body names things from here too.
    uses: Vec<(String, Vec<String>)>,
    /// Its glob imports (`use a::b::*` → `["a", "b"]`).
    globs: Vec<Vec<String>>,
    /// The qualified paths (two segments or more) its code names outside `use`.
    code_paths: Vec<Vec<String>>,
    /// Whether a macro called at its item level may define names (`units! { Nights … }`):
    /// a name not found in it is then taken as made there.
    macro_made: bool,
}

/// Where one segment of a path leads ([`Crate::outside_paths`]).
enum Step {
    /// Into this module: the path goes on.
    Module(usize),
    /// Here the path ends: outside the crate (the outside path), or inside it (`None`).
    Done(Option<Vec<String>>),
}

/// What a path names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Resolved {
    /// A module of the crate.
    Module(usize),
    /// An item (not a module), by the file that defines it and its name there.
    Item { file: String, name: String },
    /// Something outside the crate: another crate (named, or re-exported by a `use`), the
    /// prelude, `Self`.
    Outside,
    /// A name the crate's module does not hold: a gap in the resolver (or in the code).
    Missing,
}

/// One file-level import: `from` names `name`, defined in `to`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Import {
    /// The importing file.
    pub(super) from: String,
    /// The file defining the item.
    pub(super) to: String,
    /// The item's name where it is defined.
    pub(super) name: String,
}

/// Where a name is looked up.
#[derive(Clone, Copy)]
enum Scope {
    /// As a path's first segment: what is not in the crate is another crate's.
    First,
    /// In a module, after `a::`: what is not there is missing.
    Inside,
    /// Through a glob: what is not there is looked up elsewhere.
    Glob,
}

/// A parsed crate.
#[derive(Debug)]
pub(super) struct Crate {
    /// Every module; `modules[0]` is the crate root.
    pub(super) modules: Vec<Module>,
}

impl Crate {
    /// The crate rooted at `lib.rs`, its files read by `read` (a path relative to `src`,
    /// such as `store/mod.rs`; `None` when there is no such file).
    pub(super) fn load(read: &dyn Fn(&str) -> Option<String>) -> Crate {
        let mut krate = Crate { modules: Vec::new() };
        let root = krate.add(Vec::new(), "lib.rs".into(), true, None, String::new());
        krate.collect(root, tokens_of("lib.rs", &read("lib.rs").expect("the crate has a lib.rs")), read);
        krate
    }

    fn add(
        &mut self,
        path: Vec<String>,
        file: String,
        file_root: bool,
        parent: Option<usize>,
        child_dir: String,
    ) -> usize {
        self.modules.push(Module {
            path,
            file,
            file_root,
            parent,
            child_dir,
            modules: BTreeMap::new(),
            items: BTreeMap::new(),
            uses: Vec::new(),
            globs: Vec::new(),
            code_paths: Vec::new(),
            macro_made: false,
        });
        self.modules.len() - 1
    }

    /// Records the items of module `at` (`tokens`, its file or its body), and loads its
    /// child modules.
    fn collect(&mut self, at: usize, tokens: TokenStream, read: &dyn Fn(&str) -> Option<String>) {
        let mut block_uses = Vec::new();
        for item in items(tokens) {
            if item.attrs.iter().any(meta_is_test) {
                continue;
            }
            match item.kind {
                Kind::Mod { name, body } => self.child(at, name, body, &item.attrs, read),
                Kind::Use(declaration) => {
                    flatten_use(
                        &declaration.tree,
                        declaration.leading_colon.is_some(),
                        &mut Vec::new(),
                        &mut |name, path| self.bind(at, name, path),
                    );
                }
                kind => {
                    if let Kind::MacroCall = kind {
                        self.modules[at].macro_made = true;
                    }
                    if let Kind::Named(name) = kind {
                        if item.attrs.iter().any(|a| a.path().is_ident("macro_export")) {
                            let file = self.modules[at].file.clone();
                            self.modules[0].items.insert(name.clone(), file);
                        }
                        let file = self.modules[at].file.clone();
                        self.modules[at].items.insert(name, file);
                    }
                    scan_code(item.tokens, &mut self.modules[at].code_paths, &mut block_uses);
                }
            }
        }
        // A `use` inside a function body: bound after the module's own, where no name is
        // bound already (it shadows nothing the module level sees).
        for declaration in block_uses {
            flatten_use(&declaration.tree, declaration.leading_colon.is_some(), &mut Vec::new(), &mut |name, path| {
                if !self.modules[at].uses.iter().any(|(bound, _)| Some(bound) == name.as_ref()) {
                    self.bind(at, name, path)
                }
            });
        }
    }

    fn bind(&mut self, at: usize, name: Option<String>, path: Vec<String>) {
        match name {
            Some(name) => self.modules[at].uses.push((name, path)),
            None => self.modules[at].globs.push(path),
        }
    }

    /// A `mod name;` (its file loaded) or `mod name { … }` (`body`) inside module `at`.
    fn child(
        &mut self,
        at: usize,
        name: String,
        body: Option<TokenStream>,
        attrs: &[syn::Meta],
        read: &dyn Fn(&str) -> Option<String>,
    ) {
        let parent = &self.modules[at];
        let mut path = parent.path.clone();
        path.push(name.clone());
        let (child, tokens) = match body {
            Some(body) => {
                let dir = format!("{}{name}/", parent.child_dir);
                (self.add(path, parent.file.clone(), false, Some(at), dir), body)
            }
            None => {
                let explicit = attrs.iter().find(|a| a.path().is_ident("path")).map(|a| match a {
                    syn::Meta::NameValue(syn::MetaNameValue {
                        value: syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. }),
                        ..
                    }) => {
                        let dir = parent.file.rsplit_once('/').map_or("", |(dir, _)| dir);
                        if dir.is_empty() { s.value() } else { format!("{dir}/{}", s.value()) }
                    }
                    _ => panic!("{}: a #[path] that is not a string", parent.file),
                });
                let at_path = explicit.is_some();
                let candidates = match explicit {
                    Some(file) => vec![file],
                    None => {
                        vec![format!("{}{name}.rs", parent.child_dir), format!("{}{name}/mod.rs", parent.child_dir)]
                    }
                };
                let (file, text) =
                    candidates.iter().find_map(|file| read(file).map(|text| (file.clone(), text))).unwrap_or_else(
                        || panic!("{}: no file for `mod {name};` (looked for {candidates:?})", parent.file),
                    );
                // `x/mod.rs` and `lib.rs` hold their children beside them, and so does a
                // file named by `#[path]`; `x.rs` holds them in `x/`.
                let dir = match file.strip_suffix("mod.rs") {
                    Some(dir) => dir.to_string(),
                    None if at_path => file.rsplit_once('/').map_or(String::new(), |(dir, _)| format!("{dir}/")),
                    None => format!("{}/", file.trim_end_matches(".rs")),
                };
                let tokens = tokens_of(&file, &text);
                (self.add(path, file, true, Some(at), dir), tokens)
            }
        };
        self.modules[at].modules.insert(name, child);
        self.collect(child, tokens, read);
    }

    /// The module at `path` (`["store", "redis"]`), if there is one.
    pub(super) fn module(&self, path: &[&str]) -> Option<usize> {
        self.modules.iter().position(|m| m.path.iter().map(String::as_str).eq(path.iter().copied()))
    }

    /// What `path`, written in module `from`, names.
    pub(super) fn resolve(&self, from: usize, path: &[String]) -> Resolved {
        self.resolve_at(from, path, 0)
    }

    fn resolve_at(&self, from: usize, path: &[String], depth: usize) -> Resolved {
        // A `pub use` chain longer than this is a loop (globs importing each other).
        if depth > 32 || path.is_empty() {
            return Resolved::Missing;
        }
        let (mut at, rest) = match path[0].as_str() {
            "crate" => (Resolved::Module(0), &path[1..]),
            "self" => (Resolved::Module(from), &path[1..]),
            "super" => match self.modules[from].parent {
                Some(parent) => (Resolved::Module(parent), &path[1..]),
                None => return Resolved::Missing,
            },
            "Self" => return Resolved::Outside,
            first => (self.lookup(from, first, path.len() > 1, Scope::First, depth), &path[1..]),
        };
        for segment in rest {
            at = match at {
                Resolved::Module(module) if segment == "super" => match self.modules[module].parent {
                    Some(parent) => Resolved::Module(parent),
                    None => return Resolved::Missing,
                },
                Resolved::Module(module) if segment == "self" => Resolved::Module(module),
                Resolved::Module(module) => self.lookup(module, segment, true, Scope::Inside, depth),
                // An item's associated item or variant belongs to the item's file.
                done => return done,
            };
        }
        at
    }

    /// What `name` means inside module `module`: its own items and child modules, then
    /// its `use` declarations, then its globs. `want_module`: a path goes on after it, so
    /// a module of that name wins.
    fn lookup(&self, module: usize, name: &str, want_module: bool, scope: Scope, depth: usize) -> Resolved {
        let m = &self.modules[module];
        let child = m.modules.get(name).map(|&c| Resolved::Module(c));
        let item = m.items.get(name).map(|file| Resolved::Item { file: file.clone(), name: name.to_string() });
        let own = if want_module { child.or(item) } else { item.or(child) };
        if let Some(own) = own {
            return own;
        }
        for (bound, path) in &m.uses {
            if bound == name {
                let found = self.resolve_at(module, path, depth + 1);
                if found != Resolved::Missing {
                    return found;
                }
            }
        }
        for glob in &m.globs {
            if let Resolved::Module(target) = self.resolve_at(module, glob, depth + 1) {
                let found = self.lookup(target, name, want_module, Scope::Glob, depth + 1);
                if found != Resolved::Missing {
                    return found;
                }
            }
        }
        match scope {
            // Another crate, or the prelude.
            Scope::First => Resolved::Outside,
            Scope::Inside if m.macro_made => Resolved::Item { file: m.file.clone(), name: name.to_string() },
            Scope::Inside | Scope::Glob => Resolved::Missing,
        }
    }

    /// Every path module `at` names, in a `use` (globs included) or inline in its code,
    /// that means something outside this crate: as the outside path it comes to once
    /// followed through the crate's `use` and `pub use` chains (`super::Peer`, where the
    /// parent has `pub use rmcp::service::Peer`, is `rmcp::service::Peer`).
    pub(super) fn outside_paths(&self, at: usize) -> BTreeSet<Vec<String>> {
        let module = &self.modules[at];
        let written = module.uses.iter().map(|(_, path)| path).chain(&module.globs).chain(&module.code_paths);
        written.filter_map(|path| self.outside(at, path, 0)).collect()
    }

    /// The outside path `path`, written in module `from`, comes to; `None` when it names an
    /// item of this crate (or nothing the resolver finds).
    fn outside(&self, from: usize, path: &[String], depth: usize) -> Option<Vec<String>> {
        if depth > 32 || path.is_empty() {
            return None;
        }
        let (mut at, rest) = match path[0].as_str() {
            "crate" => (0, &path[1..]),
            "self" => (from, &path[1..]),
            "super" => (self.modules[from].parent?, &path[1..]),
            "Self" => return None,
            first => match self.step(from, first, &path[1..], depth) {
                Step::Module(module) => (module, &path[1..]),
                Step::Done(found) => return found,
            },
        };
        for (i, segment) in rest.iter().enumerate() {
            at = match segment.as_str() {
                "super" => self.modules[at].parent?,
                "self" => at,
                _ => match self.step(at, segment, &rest[i + 1..], depth) {
                    Step::Module(module) => module,
                    Step::Done(found) => return found,
                },
            };
        }
        None
    }

    /// One segment `name` of a path inside module `module`, `rest` the segments after it:
    /// a child module to go on in, an item of the crate (`None`), a `use` to follow, or
    /// (when nothing of the crate binds it at a path's start) another crate.
    fn step(&self, module: usize, name: &str, rest: &[String], depth: usize) -> Step {
        let m = &self.modules[module];
        if let Some(&child) = m.modules.get(name) {
            return Step::Module(child);
        }
        if m.items.contains_key(name) {
            return Step::Done(None);
        }
        if let Some((_, path)) = m.uses.iter().find(|(bound, _)| bound == name) {
            let followed: Vec<String> = path.iter().chain(rest).cloned().collect();
            return Step::Done(self.outside(module, &followed, depth + 1));
        }
        match self.resolve(module, &[name.to_string()]) {
            Resolved::Outside => {
                Step::Done(Some(std::iter::once(name.to_string()).chain(rest.iter().cloned()).collect()))
            }
            _ => Step::Done(None),
        }
    }

    /// The paths that name nothing this resolver finds (`file: path`): a gap in it.
    pub(super) fn unresolved(&self) -> BTreeSet<String> {
        let mut lost = BTreeSet::new();
        for (at, module) in self.modules.iter().enumerate() {
            let paths = module.uses.iter().map(|(_, path)| path).chain(&module.globs).chain(&module.code_paths);
            for path in paths {
                if self.resolve(at, path) == Resolved::Missing {
                    lost.insert(format!("{}: {}", module.file, path.join("::")));
                }
            }
        }
        lost
    }

    /// Every file-level import of the crate: each `use` and each qualified path in code,
    /// resolved to the file that defines the item, where that is another file.
    pub(super) fn imports(&self) -> BTreeSet<Import> {
        let mut imports = BTreeSet::new();
        for (at, module) in self.modules.iter().enumerate() {
            let mut add = |resolved: Resolved| {
                if let Resolved::Item { file, name } = resolved
                    && file != module.file
                {
                    imports.insert(Import { from: module.file.clone(), to: file, name });
                }
            };
            for (_, path) in &module.uses {
                add(self.resolve(at, path));
            }
            // A glob imports what the globbed module defines itself.
            for glob in &module.globs {
                if let Resolved::Module(target) = self.resolve(at, glob) {
                    for (name, file) in &self.modules[target].items {
                        add(Resolved::Item { file: file.clone(), name: name.clone() });
                    }
                }
            }
            for path in &module.code_paths {
                add(self.resolve(at, path));
            }
        }
        imports
    }
}

/// `use` trees flattened to `(bound name, full path)`; a glob as `(None, path)`.
fn flatten_use(
    tree: &syn::UseTree,
    leading_colon: bool,
    prefix: &mut Vec<String>,
    out: &mut dyn FnMut(Option<String>, Vec<String>),
) {
    // `use ::x::…` names another crate.
    if leading_colon {
        return;
    }
    match tree {
        syn::UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            flatten_use(&p.tree, false, prefix, out);
            prefix.pop();
        }
        syn::UseTree::Name(n) if n.ident == "self" => {
            if let Some(last) = prefix.last() {
                out(Some(last.clone()), prefix.clone());
            }
        }
        syn::UseTree::Name(n) => {
            let mut path = prefix.clone();
            path.push(n.ident.to_string());
            out(Some(n.ident.to_string()), path);
        }
        syn::UseTree::Rename(r) => {
            let mut path = prefix.clone();
            if r.ident != "self" {
                path.push(r.ident.to_string());
            }
            out(Some(r.rename.to_string()), path);
        }
        syn::UseTree::Glob(_) => out(None, prefix.clone()),
        syn::UseTree::Group(g) => {
            for tree in &g.items {
                flatten_use(tree, false, prefix, out);
            }
        }
    }
}

/// Whether `attrs` hold a `#[cfg]` that holds only under `test`.
pub(super) fn is_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| meta_is_test(&a.meta))
}

/// Whether an attribute's content is a `cfg` that holds only under `test`: `cfg(test)`,
/// `cfg(all(test, …))`, but not `cfg(any(test, feature = "x"))`.
pub(super) fn meta_is_test(meta: &syn::Meta) -> bool {
    fn implies_test(meta: &syn::Meta) -> bool {
        match meta {
            syn::Meta::Path(p) => p.is_ident("test"),
            syn::Meta::List(list) => {
                let Ok(inner) =
                    list.parse_args_with(syn::punctuated::Punctuated::<syn::Meta, syn::Token![,]>::parse_terminated)
                else {
                    return false;
                };
                if list.path.is_ident("all") {
                    inner.iter().any(implies_test)
                } else if list.path.is_ident("any") {
                    !inner.is_empty() && inner.iter().all(implies_test)
                } else {
                    false
                }
            }
            syn::Meta::NameValue(_) => false,
        }
    }
    match meta {
        syn::Meta::List(list) if list.path.is_ident("cfg") => {
            list.parse_args::<syn::Meta>().is_ok_and(|m| implies_test(&m))
        }
        _ => false,
    }
}

/// The tokens of `file`.
fn tokens_of(file: &str, text: &str) -> TokenStream {
    text.parse().unwrap_or_else(|e| panic!("{file}: {e:?}"))
}

/// Collects the qualified paths (`a::b`, `crate::x::Y::new`, `$crate::y`) of `tokens`, and
/// the `use` declarations inside it (in function bodies); tokens after a `#[cfg(test)]`
/// up to the end of what it marks are left out.
pub(super) fn scan_code(tokens: TokenStream, paths: &mut Vec<Vec<String>>, uses: &mut Vec<syn::ItemUse>) {
    let tokens: Vec<TokenTree> = tokens.into_iter().collect();
    let is_punct = |i: usize, c: char| matches!(tokens.get(i), Some(TokenTree::Punct(p)) if p.as_char() == c);
    let path_sep = |i: usize| {
        matches!(tokens.get(i), Some(TokenTree::Punct(p)) if p.as_char() == ':' && p.spacing() == Spacing::Joint)
            && is_punct(i + 1, ':')
    };
    let mut i = 0;
    while i < tokens.len() {
        match &tokens[i] {
            TokenTree::Punct(p) if p.as_char() == '#' => {
                if let Some(TokenTree::Group(g)) = tokens.get(i + 1)
                    && g.delimiter() == Delimiter::Bracket
                    && !starts_with_doc(g.stream())
                    && syn::parse2::<syn::Meta>(g.stream()).is_ok_and(|meta| meta_is_test(&meta))
                {
                    // Skip what the attribute marks: up to a `;` or `,`, or through a `{ … }`.
                    i += 2;
                    while i < tokens.len() {
                        match &tokens[i] {
                            TokenTree::Punct(p) if p.as_char() == ';' || p.as_char() == ',' => break,
                            TokenTree::Group(g) if g.delimiter() == Delimiter::Brace => break,
                            _ => i += 1,
                        }
                    }
                }
                i += 1;
            }
            TokenTree::Ident(ident) if ident == "use" => {
                let end = (i..tokens.len()).find(|&j| is_punct(j, ';'));
                let declaration =
                    end.and_then(|end| syn::parse2::<syn::ItemUse>(tokens[i..=end].iter().cloned().collect()).ok());
                match (declaration, end) {
                    (Some(declaration), Some(end)) => {
                        uses.push(declaration);
                        i = end + 1;
                    }
                    // `use<'a>` in a return type.
                    _ => i += 1,
                }
            }
            TokenTree::Ident(_) => {
                // Not the tail of a path (`a::b` seen from `a`), a field or a method call.
                let after_sep = i >= 2 && is_punct(i - 1, ':') && is_punct(i - 2, ':');
                let after_dot = i >= 1 && is_punct(i - 1, '.');
                let mut segments = vec![tokens[i].to_string()];
                let mut j = i;
                while path_sep(j + 1)
                    && let Some(TokenTree::Ident(next)) = tokens.get(j + 3)
                {
                    segments.push(next.to_string());
                    j += 3;
                }
                if !after_sep && !after_dot && segments.len() > 1 {
                    paths.push(segments);
                }
                i = j + 1;
            }
            TokenTree::Group(g) => {
                scan_code(g.stream(), paths, uses);
                i += 1;
            }
            _ => i += 1,
        }
    }
}
