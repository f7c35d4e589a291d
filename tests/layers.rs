//! The crate keeps its own plan: this test reads every file of `src/` with `syn`, draws which
//! file names which (every `use`, every path in code, every path inside a macro's tokens, tests
//! included), and holds the graph to the layer order that `docs/architecture.md` states once, in
//! its `layers` block. It fails on a module that the order leaves out, on an arrow that runs up
//! or sideways between two modules of `src/`, and on an import circle that crosses two folders
//! or sits in a folder whose `mod.rs` does not say why.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use proc_macro2::{TokenStream, TokenTree};
use syn::visit::Visit;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// A file of `src/` and the module path it defines (`src/a/b.rs` → `["a", "b"]`).
struct SourceFile {
    path: String,
    module: Vec<String>,
}

fn source_files() -> Vec<SourceFile> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let mut entries: Vec<_> = fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
        entries.sort();
        for path in entries {
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    let src = Path::new(ROOT).join("src");
    let mut paths = Vec::new();
    walk(&src, &mut paths);
    paths
        .into_iter()
        .map(|path| {
            let relative = path.strip_prefix(&src).unwrap().to_string_lossy().replace('\\', "/");
            let mut module: Vec<String> = relative.trim_end_matches(".rs").split('/').map(String::from).collect();
            if module.last().is_some_and(|m| m == "mod" || m == "lib") {
                module.pop();
            }
            SourceFile { path: format!("src/{relative}"), module }
        })
        .collect()
}

/// Collects the crate paths one file names, each made absolute (`crate::…` segments).
struct Names<'a> {
    /// The module each inline `mod { … }` the visitor is in stands for, innermost last.
    scopes: Vec<Scope>,
    /// The binary names the library by its crate name.
    crate_names: &'a [&'a str],
    found: Vec<Vec<String>>,
}

struct Scope {
    module: Vec<String>,
    /// Child modules declared here (`mod x;` or `mod x { … }`), which a bare path may start with.
    children: BTreeSet<String>,
}

impl Names<'_> {
    fn scope(&self) -> &Scope {
        self.scopes.last().unwrap()
    }

    /// `segments` made absolute, when they name something of this crate.
    fn absolute(&self, segments: &[String]) -> Option<Vec<String>> {
        let first = segments.first()?;
        let scope = self.scope();
        let mut module = if first == "crate" || self.crate_names.contains(&first.as_str()) {
            Vec::new()
        } else if first == "self" {
            scope.module.clone()
        } else if first == "super" {
            let mut module = scope.module.clone();
            module.pop();
            module
        } else if scope.children.contains(first) {
            let mut module = scope.module.clone();
            module.push(first.clone());
            module
        } else {
            return None;
        };
        let mut rest = segments.iter().skip(1).peekable();
        // `super::super::…`
        while first == "super" && rest.peek().is_some_and(|s| *s == "super") {
            module.pop();
            rest.next();
        }
        module.extend(rest.cloned());
        Some(module)
    }

    fn note(&mut self, segments: Vec<String>) {
        if let Some(path) = self.absolute(&segments) {
            self.found.push(path);
        }
    }

    /// Paths inside a macro's tokens (`format!`, `json!`, …), which `syn` leaves unparsed.
    fn tokens(&mut self, tokens: TokenStream) {
        let trees: Vec<TokenTree> = tokens.into_iter().collect();
        let mut i = 0;
        while i < trees.len() {
            match &trees[i] {
                TokenTree::Group(group) => self.tokens(group.stream()),
                TokenTree::Ident(ident) => {
                    let mut segments = vec![ident.to_string()];
                    let mut j = i + 1;
                    while let (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b)), Some(TokenTree::Ident(next))) = (trees.get(j), trees.get(j + 1), trees.get(j + 2)) {
                        if a.as_char() != ':' || b.as_char() != ':' {
                            break;
                        }
                        segments.push(next.to_string());
                        j += 3;
                    }
                    if segments.len() > 1 {
                        self.note(segments);
                        i = j;
                        continue;
                    }
                }
                TokenTree::Punct(_) | TokenTree::Literal(_) => {}
            }
            i += 1;
        }
    }
}

fn children(items: &[syn::Item]) -> BTreeSet<String> {
    items
        .iter()
        .filter_map(|item| match item {
            syn::Item::Mod(m) => Some(m.ident.to_string()),
            _ => None,
        })
        .collect()
}

fn use_paths(tree: &syn::UseTree, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    match tree {
        syn::UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            use_paths(&p.tree, prefix, out);
            prefix.pop();
        }
        syn::UseTree::Name(n) => {
            let mut path = prefix.clone();
            if n.ident != "self" {
                path.push(n.ident.to_string());
            }
            out.push(path);
        }
        syn::UseTree::Rename(r) => {
            let mut path = prefix.clone();
            if r.ident != "self" {
                path.push(r.ident.to_string());
            }
            out.push(path);
        }
        syn::UseTree::Glob(_) => out.push(prefix.clone()),
        syn::UseTree::Group(g) => {
            for tree in &g.items {
                use_paths(tree, prefix, out);
            }
        }
    }
}

impl<'ast> Visit<'ast> for Names<'_> {
    fn visit_item_mod(&mut self, node: &'ast syn::ItemMod) {
        if let Some((_, items)) = &node.content {
            let mut module = self.scope().module.clone();
            module.push(node.ident.to_string());
            self.scopes.push(Scope { module, children: children(items) });
            syn::visit::visit_item_mod(self, node);
            self.scopes.pop();
        }
    }

    fn visit_item_use(&mut self, node: &'ast syn::ItemUse) {
        let mut paths = Vec::new();
        use_paths(&node.tree, &mut Vec::new(), &mut paths);
        for path in paths {
            self.note(path);
        }
    }

    fn visit_path(&mut self, node: &'ast syn::Path) {
        // A path of one segment in code is a local or an item in scope, never a module: a
        // variable may share a child module's name.
        if node.segments.len() > 1 {
            self.note(node.segments.iter().map(|s| s.ident.to_string()).collect());
        }
        syn::visit::visit_path(self, node);
    }

    fn visit_macro(&mut self, node: &'ast syn::Macro) {
        self.tokens(node.tokens.clone());
        syn::visit::visit_macro(self, node);
    }
}

/// file → the files it names, within `src/`.
fn arrows(files: &[SourceFile]) -> BTreeMap<String, BTreeSet<String>> {
    let by_module: BTreeMap<&[String], &str> = files.iter().map(|f| (f.module.as_slice(), f.path.as_str())).collect();
    let mut graph = BTreeMap::new();
    for file in files {
        let text = fs::read_to_string(Path::new(ROOT).join(&file.path)).unwrap();
        let syntax = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", file.path));
        let crate_names: &[&str] = if file.path.starts_with("src/bin/") { &["mcp_edge"] } else { &[] };
        let mut names = Names { scopes: vec![Scope { module: file.module.clone(), children: children(&syntax.items) }], crate_names, found: Vec::new() };
        names.visit_file(&syntax);
        let mut targets = BTreeSet::new();
        for path in names.found {
            // The longest prefix of the path that is a file: the rest is an item, or a module
            // declared inline in that file.
            let target = (1..=path.len()).rev().find_map(|n| by_module.get(&path[..n]));
            if let Some(target) = target {
                if *target != file.path {
                    targets.insert(target.to_string());
                }
            }
        }
        graph.insert(file.path.clone(), targets);
    }
    graph
}

/// The module of `src/` a file belongs to: its first folder, or the file itself.
fn top(path: &str) -> String {
    let rest = path.trim_start_matches("src/");
    match rest.split_once('/') {
        Some((folder, _)) => folder.to_string(),
        None => rest.trim_end_matches(".rs").to_string(),
    }
}

fn folder(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(folder, _)| folder)
}

/// The layer order, top first: one line per layer, the modules of `src/` on it.
fn layers() -> Vec<Vec<String>> {
    let doc = fs::read_to_string(Path::new(ROOT).join("docs/architecture.md")).unwrap();
    let block = doc.split_once("```layers\n").expect("docs/architecture.md has a ```layers block").1;
    let block = block.split_once("```").unwrap().0;
    block
        .lines()
        .map(|line| line.split('#').next().unwrap_or_default())
        .filter(|line| !line.trim().is_empty())
        .map(|line| line.split_whitespace().map(|m| m.trim_end_matches(['/', ',']).trim_end_matches(".rs").to_string()).collect())
        .collect()
}

/// Tarjan's strongly connected components, each with more than one file.
fn circles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct State<'a> {
        graph: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        out: Vec<Vec<String>>,
    }
    fn connect<'a>(s: &mut State<'a>, v: &'a str) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        s.on_stack.insert(v);
        for w in s.graph.get(v).into_iter().flatten() {
            let w = w.as_str();
            if !s.index.contains_key(w) {
                connect(s, w);
                let low = s.low[v].min(s.low[w]);
                s.low.insert(v, low);
            } else if s.on_stack.contains(w) {
                let low = s.low[v].min(s.index[w]);
                s.low.insert(v, low);
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                component.push(w.to_string());
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                s.out.push(component);
            }
        }
    }
    let mut state = State { graph, index: BTreeMap::new(), low: BTreeMap::new(), stack: Vec::new(), on_stack: BTreeSet::new(), out: Vec::new() };
    for v in graph.keys() {
        if !state.index.contains_key(v.as_str()) {
            connect(&mut state, v);
        }
    }
    state.out
}

#[test]
fn the_layer_order_lists_every_module_once() {
    let files = source_files();
    let modules: BTreeSet<String> = files.iter().filter(|f| f.path != "src/lib.rs").map(|f| top(&f.path)).collect();
    let mut listed = BTreeMap::new();
    for (layer, line) in layers().iter().enumerate() {
        for module in line {
            assert!(listed.insert(module.clone(), layer).is_none(), "{module} is on two lines of the layers block");
        }
    }
    let missing: Vec<_> = modules.iter().filter(|m| !listed.contains_key(*m)).collect();
    let extra: Vec<_> = listed.keys().filter(|m| !modules.contains(*m)).collect();
    assert!(missing.is_empty(), "modules of src/ missing from docs/architecture.md's layers block: {missing:?}");
    assert!(extra.is_empty(), "the layers block names modules src/ does not have: {extra:?}");
}

/// The arrows between two modules of `src/` that do not point to a lower layer.
fn against_the_order(graph: &BTreeMap<String, BTreeSet<String>>, layers: &[Vec<String>]) -> Vec<String> {
    let layer: BTreeMap<&str, usize> = layers.iter().enumerate().flat_map(|(i, line)| line.iter().map(move |m| (m.as_str(), i))).collect();
    let mut wrong = Vec::new();
    for (from, targets) in graph {
        if from == "src/lib.rs" {
            continue;
        }
        for to in targets {
            let (a, b) = (top(from), top(to));
            if a == b || to == "src/lib.rs" {
                continue;
            }
            let (Some(la), Some(lb)) = (layer.get(a.as_str()), layer.get(b.as_str())) else { continue };
            if la >= lb {
                wrong.push(format!("{from} ({a}, layer {la}) -> {to} ({b}, layer {lb})"));
            }
        }
    }
    wrong
}

#[test]
fn every_arrow_between_modules_points_down() {
    let wrong = against_the_order(&arrows(&source_files()), &layers());
    assert!(wrong.is_empty(), "arrows that do not point to a lower layer of docs/architecture.md's layers block:\n{}", wrong.join("\n"));
}

/// The checks themselves, on a made-up graph: an arrow up or sideways, and a circle, are found.
#[test]
fn the_checks_catch_what_they_are_for() {
    let graph: BTreeMap<String, BTreeSet<String>> = [
        ("src/dispatch/mod.rs", vec!["src/error.rs"]),
        ("src/error.rs", vec!["src/oauth/mod.rs"]),
        ("src/oauth/mod.rs", vec!["src/error.rs", "src/live/api.rs"]),
        ("src/live/api.rs", vec![]),
    ]
    .into_iter()
    .map(|(from, to)| (from.to_string(), to.into_iter().map(String::from).collect()))
    .collect();
    let order = |text: &str| text.lines().map(|l| l.split_whitespace().map(String::from).collect()).collect::<Vec<Vec<String>>>();
    let wrong = against_the_order(&graph, &order("dispatch\noauth live\nerror"));
    assert_eq!(wrong, ["src/error.rs (error, layer 2) -> src/oauth/mod.rs (oauth, layer 1)", "src/oauth/mod.rs (oauth, layer 1) -> src/live/api.rs (live, layer 1)"]);
    // In a circle, whichever order is written, one arrow runs up.
    assert_eq!(against_the_order(&graph, &order("dispatch\nerror\noauth\nlive")), ["src/oauth/mod.rs (oauth, layer 2) -> src/error.rs (error, layer 1)"]);
    assert_eq!(circles(&graph), [vec!["src/error.rs".to_string(), "src/oauth/mod.rs".to_string()]]);
}

#[test]
fn no_import_circle_crosses_folders() {
    let files = source_files();
    let graph = arrows(&files);
    let mut faults = Vec::new();
    for circle in circles(&graph) {
        let folders: BTreeSet<&str> = circle.iter().map(|f| folder(f)).collect();
        let members: BTreeSet<&String> = circle.iter().collect();
        let ties: Vec<String> = circle.iter().flat_map(|from| graph[from].iter().filter(|to| members.contains(to)).map(move |to| format!("  {from} -> {to}"))).collect();
        let ties = ties.join("\n");
        if folders.len() > 1 {
            faults.push(format!("a circle across folders, {} files, tied by:\n{ties}", circle.len()));
            continue;
        }
        let folder = folders.into_iter().next().unwrap_or_default();
        let explained = fs::read_to_string(Path::new(ROOT).join(folder).join("mod.rs")).is_ok_and(|text| text.contains("import circle"));
        if !explained {
            faults.push(format!("a circle in {folder}/ that its mod.rs does not explain (say why, with the words \"import circle\"), tied by:\n{ties}"));
        }
    }
    assert!(faults.is_empty(), "{}", faults.join("\n"));
}

#[test]
fn lib_rs_describes_every_module() {
    let lib = fs::read_to_string(Path::new(ROOT).join("src/lib.rs")).unwrap();
    let declared: Vec<&str> = lib.lines().filter_map(|l| l.trim().strip_prefix("pub mod ").or_else(|| l.trim().strip_prefix("mod "))).map(|l| l.trim_end_matches(';')).collect();
    let missing: Vec<_> = declared.iter().filter(|m| !lib.contains(&format!("[`{m}`]")) && !lib.contains(&format!("`{m}`"))).collect();
    assert!(missing.is_empty(), "src/lib.rs declares modules its layout does not describe: {missing:?}");
}

/// The graph this test reads, checked on a sample the eye can verify.
#[test]
fn the_reader_sees_uses_paths_and_macros() {
    let graph = arrows(&source_files());
    // `use crate::…` at the top of a file.
    assert!(graph["src/dispatch/mod.rs"].contains("src/jsonrpc.rs"));
    // a child module named bare (`mod extension; pub use extension::…`).
    assert!(graph["src/tasks/mod.rs"].contains("src/tasks/extension.rs"));
    // a path inside a macro's tokens.
    assert!(graph["src/error.rs"].contains("src/versions.rs"));
    // the binary names the library by its crate name.
    assert!(graph["src/bin/check_config.rs"].iter().any(|t| t.starts_with("src/config/")));
}

/// The graph between modules of `src/`, printed for a reader drawing the order:
/// `cargo test --test layers -- --ignored --nocapture`.
#[test]
#[ignore]
fn print_the_module_graph() {
    let graph = arrows(&source_files());
    let mut modules: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (from, targets) in &graph {
        for to in targets {
            if top(from) != top(to) && from != "src/lib.rs" && to != "src/lib.rs" {
                modules.entry(top(from)).or_default().insert(top(to));
            }
        }
    }
    for (module, targets) in modules {
        println!("{module} -> {}", targets.into_iter().collect::<Vec<_>>().join(" "));
    }
    for circle in circles(&graph) {
        println!("circle: {}", circle.join(", "));
    }
}
