//! The shape of the code base, checked: the stages' import graph has no cycle and follows the
//! pipeline's direction, no file is over 600 lines and no function over 60 without a stated
//! reason (`docs/architecture.md`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Longest function body, in lines, without a reason.
const FUNCTION_LINES: usize = 60;
/// Longest file, in lines.
const FILE_LINES: usize = 600;
/// The comment that states why a function is longer (on a line inside it).
const LONG_REASON: &str = "// Long:";

fn sources() -> Vec<(PathBuf, String)> {
    fn walk(dir: &Path, out: &mut Vec<(PathBuf, String)>) {
        for entry in std::fs::read_dir(dir).expect("src is readable") {
            let path = entry.expect("an entry").path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).expect("a source file");
                out.push((path, text));
            }
        }
    }
    let mut out = Vec::new();
    walk(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), &mut out);
    out.sort();
    out
}

/// The top-level module a file belongs to (`src/tree/build.rs` -> `tree`).
fn module_of(path: &Path) -> String {
    let relative = path.strip_prefix(Path::new(env!("CARGO_MANIFEST_DIR")).join("src")).expect("under src");
    let first = relative.components().next().expect("a component").as_os_str().to_string_lossy().into_owned();
    first.trim_end_matches(".rs").to_owned()
}

/// The code of a file before its tests, without comment lines.
fn code(text: &str) -> String {
    let before_tests = text.split("#[cfg(test)]").next().unwrap_or_default();
    before_tests.lines().filter(|line| !line.trim_start().starts_with("//")).collect::<Vec<_>>().join("\n")
}

/// Which top-level modules each top-level module uses (`crate::<module>` outside comments and
/// tests).
fn imports() -> BTreeMap<String, BTreeSet<String>> {
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (path, text) in sources() {
        let module = module_of(&path);
        let code = code(&text);
        for (index, _) in code.match_indices("crate::") {
            let target: String = code[index + 7..].chars().take_while(|c| c.is_ascii_lowercase() || *c == '_').collect();
            if !target.is_empty() && target != module {
                edges.entry(module.clone()).or_default().insert(target);
            }
        }
    }
    edges
}

fn reaches(edges: &BTreeMap<String, BTreeSet<String>>, from: &str, to: &str) -> bool {
    let mut seen = BTreeSet::new();
    let mut stack = vec![from.to_owned()];
    while let Some(module) = stack.pop() {
        for next in edges.get(&module).into_iter().flatten() {
            if next == to {
                return true;
            }
            if seen.insert(next.clone()) {
                stack.push(next.clone());
            }
        }
    }
    false
}

#[test]
fn no_two_modules_import_each_other() {
    let edges = imports();
    let cycles: Vec<String> = edges
        .iter()
        .flat_map(|(from, targets)| targets.iter().map(move |to| (from, to)))
        .filter(|(from, to)| reaches(&edges, to, from))
        .map(|(from, to)| format!("{from} -> {to} -> … -> {from}"))
        .collect();
    assert!(cycles.is_empty(), "import cycles between top-level modules:\n{}", cycles.join("\n"));
}

/// Inside each directory module, which files (siblings, `mod.rs` aside) each file uses, by
/// `super::<file>` or `crate::<dir>::<file>`, outside comments and tests.
fn sibling_imports() -> BTreeMap<PathBuf, BTreeMap<String, BTreeSet<String>>> {
    let mut out: BTreeMap<PathBuf, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    let files = sources();
    let stems = |dir: &Path| -> BTreeSet<String> {
        files
            .iter()
            .filter(|(p, _)| p.parent() == Some(dir))
            .filter_map(|(p, _)| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
            .filter(|s| s != "mod")
            .collect()
    };
    for (path, text) in &files {
        let (Some(dir), Some(stem)) = (path.parent(), path.file_stem()) else { continue };
        let stem = stem.to_string_lossy().into_owned();
        if stem == "mod" || !dir.join("mod.rs").exists() {
            continue;
        }
        let siblings = stems(dir);
        let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let code = code(text);
        let mut used = BTreeSet::new();
        for prefix in ["super::".to_owned(), format!("crate::{name}::")] {
            for (index, _) in code.match_indices(&prefix) {
                let rest = &code[index + prefix.len()..];
                // `super::x`, and each name of `super::{x, y::z}` at its top level.
                let names: Vec<String> = if let Some(group) = rest.strip_prefix('{') {
                    group
                        .split('}')
                        .next()
                        .unwrap_or_default()
                        .split(',')
                        .map(|n| n.trim().split("::").next().unwrap_or_default().to_owned())
                        .collect()
                } else {
                    vec![rest.chars().take_while(|c| c.is_ascii_lowercase() || *c == '_').collect()]
                };
                used.extend(names.into_iter().filter(|n| siblings.contains(n) && *n != stem));
            }
        }
        out.entry(dir.to_path_buf()).or_default().insert(stem, used);
    }
    out
}

#[test]
fn no_two_files_of_a_module_import_each_other() {
    let mut cycles = Vec::new();
    for (dir, edges) in sibling_imports() {
        for (from, targets) in &edges {
            for to in targets.iter().filter(|to| reaches(&edges, to, from)) {
                cycles.push(format!("{}: {from} -> {to} -> … -> {from}", dir.display()));
            }
        }
    }
    assert!(cycles.is_empty(), "import cycles between files of one module (`mod.rs` aside):\n{}", cycles.join("\n"));
}

#[test]
fn the_pure_core_never_reaches_the_edge() {
    // The pure stages (and what they use) never depend on the stages that do I/O.
    let edges = imports();
    for pure in ["spec", "render", "secrets", "infra", "object", "layout", "catalog", "manifest"] {
        for edge in ["cli", "pipeline", "source", "git", "reconcile", "tree"] {
            assert!(!reaches(&edges, pure, edge), "`{pure}` depends on `{edge}`: {:?}", edges.get(pure));
        }
    }
}

#[test]
fn no_file_is_over_the_limit() {
    let long: Vec<String> = sources()
        .into_iter()
        .map(|(path, text)| (path, text.lines().count()))
        .filter(|(_, lines)| *lines > FILE_LINES)
        .map(|(path, lines)| format!("{}: {lines} lines", path.display()))
        .collect();
    assert!(long.is_empty(), "files over {FILE_LINES} lines:\n{}", long.join("\n"));
}

/// Every function of `text` (outside its tests) over the limit with no reason: `(line, name,
/// length)`.
fn long_functions(text: &str) -> Vec<(usize, String, usize)> {
    let lines: Vec<&str> = text.split("#[cfg(test)]").next().unwrap_or_default().lines().collect();
    let mut found = Vec::new();
    for (start, line) in lines.iter().enumerate() {
        let trimmed = line.trim_start();
        let Some(after) = ["pub(crate) fn ", "pub(super) fn ", "pub fn ", "async fn ", "pub async fn ", "fn "]
            .iter()
            .find_map(|prefix| trimmed.strip_prefix(prefix))
        else {
            continue;
        };
        let indent = line.len() - trimmed.len();
        let end = (start + 1..lines.len())
            .find(|&i| lines[i].len() - lines[i].trim_start().len() == indent && lines[i].trim_start().starts_with('}'))
            .unwrap_or(start);
        let length = end - start + 1;
        let body = &lines[start..=end];
        if length > FUNCTION_LINES && !body.iter().any(|l| l.contains(LONG_REASON)) {
            let name: String = after.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            found.push((start + 1, name, length));
        }
    }
    found
}

#[test]
fn no_function_is_over_the_limit_without_a_reason() {
    let long: Vec<String> = sources()
        .into_iter()
        .flat_map(|(path, text)| {
            long_functions(&text)
                .into_iter()
                .map(move |(line, name, length)| format!("{}:{line}: `{name}`, {length} lines", path.display()))
        })
        .collect();
    assert!(long.is_empty(), "functions over {FUNCTION_LINES} lines without a `{LONG_REASON}` comment saying why:\n{}", long.join("\n"));
}

#[test]
fn the_checks_catch_what_they_look_for() {
    let short = "fn a() {\n    x();\n}\n";
    assert!(long_functions(short).is_empty());
    let body = "    x();\n".repeat(FUNCTION_LINES);
    let long = format!("fn b() {{\n{body}}}\n");
    assert_eq!(long_functions(&long), [(1, "b".to_owned(), FUNCTION_LINES + 2)]);
    let explained = format!("fn c() {{\n    {LONG_REASON} one match over every kind.\n{body}}}\n");
    assert!(long_functions(&explained).is_empty());
    let edges: BTreeMap<String, BTreeSet<String>> =
        [("a".to_owned(), ["b".to_owned()].into()), ("b".to_owned(), ["a".to_owned()].into())].into_iter().collect();
    assert!(reaches(&edges, "a", "a"));
    assert_eq!(code("use crate::x;\n// crate::y\n#[cfg(test)]\nuse crate::z;"), "use crate::x;");
}
