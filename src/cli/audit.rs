//! `tfrs audit`: derive and resolve every secret of the specs, then search every commit reachable
//! from a ref for any of them. A hit names the commit, the path and the secret's logical path,
//! never the value.

use super::Status;
use super::args::AuditArgs;
use super::args::ReportFormat as Format;
use super::report::{self, Finding, Place, RuleInfo};
use super::stages::load;
use crate::audit::{Needle, Scanner};
use crate::git::remote;
use crate::render::{Options, render};
use crate::source::inputs;
use crate::spec::{Bundle, Spec};
use anyhow::{Context as _, bail};
use git2::{ObjectType, Oid, Repository, Tree};
use serde_json::json;
use std::collections::HashSet;
use std::io::Write;
use std::path::Path;

/// Fields that name an identity rather than hold a secret: not searched.
const IDENTITY_FIELDS: &[&str] = &["username", "rootUser", "clientId"];

/// Runs `tfrs audit`.
pub fn run(args: &AuditArgs, stdout: &mut dyn Write) -> anyhow::Result<Status> {
    let Some((spec, bundle)) = load(&args.inputs, &[], super::stages::Effect::Reads)? else {
        return Ok(Status::Error);
    };
    let needles = needles(args, &spec, &bundle)?;
    let scanner = Scanner::new(&needles);
    let (repo, is_url) = crate::git::open(&args.repo)?;
    // NB: like `commit`, `diff` and `log`: the repository's default branch unless one is named.
    let reference = match &args.reference {
        Some(reference) => reference.clone(),
        None => crate::git::default_branch(&repo, is_url)?,
    };
    let tip = if is_url {
        remote::fetch(&repo, "origin", &reference)?.with_context(|| format!("`{}` has no branch `{reference}`", args.repo))?
    } else {
        repo.revparse_single(&reference)
            .and_then(|object| object.peel_to_commit())
            .map_err(|source| crate::git::Error::Resolve { name: reference.clone(), source })?
            .id()
    };
    let (commits, leaks) = scan_history(&repo, tip, &scanner)?;
    let status = if leaks.is_empty() { Status::Success } else { Status::Failure };
    if args.format != Format::Text {
        let root = if is_url { None } else { repo.workdir() };
        print_machine(args, (&reference, root), (commits, scanner.len()), &leaks, stdout)?;
        return Ok(status);
    }
    if !leaks.is_empty() {
        for leak in leaks.iter().filter(|_| !args.quiet) {
            let short = &leak.commit[..12];
            match &leak.path {
                Some(path) => writeln!(stdout, "leak: commit {short} `{path}`: `{}` ({})", leak.hit.secret, leak.hit.encoding)?,
                None => writeln!(stdout, "leak: commit {short} message: `{}` ({})", leak.hit.secret, leak.hit.encoding)?,
            }
        }
        let count = leaks.len();
        writeln!(stdout, "{count} leak{} in {commits} commits of `{reference}`", if count == 1 { "" } else { "s" })?;
        return Ok(status);
    }
    writeln!(
        stdout,
        "clean: {} secrets searched in {commits} commits of `{reference}` (raw, base64, percent- and JSON-escaped)",
        scanner.len(),
    )?;
    Ok(status)
}

/// Where a secret was found: the commit, the file (`None` for the commit message) and the
/// line and column of the first match in it.
struct Leak {
    commit: String,
    path: Option<String>,
    line: usize,
    column: usize,
    hit: crate::audit::Hit,
}

/// The rule of every audit finding.
const LEAK_RULE: RuleInfo =
    RuleInfo { id: "leaked-secret", summary: "A secret of the specs is in the repository's history (rotate it, then rewrite the history)" };

/// `--format json|sarif|github`: one finding per leak (never the value).
/// Leaks name paths of the audited repository, so `root` is its work tree when it has one.
fn print_machine(
    args: &AuditArgs,
    (reference, root): (&str, Option<&Path>),
    scanned: (usize, usize),
    leaks: &[Leak],
    stdout: &mut dyn Write,
) -> anyhow::Result<()> {
    let (commits, searched) = scanned;
    let findings: Vec<Finding> = leaks
        .iter()
        .map(|leak| {
            let mut properties = serde_json::Map::new();
            properties.insert("commit".into(), json!(leak.commit));
            properties.insert("secret".into(), json!(leak.hit.secret));
            properties.insert("encoding".into(), json!(leak.hit.encoding));
            let at = if leak.path.is_some() { "" } else { " message" };
            Finding {
                rule: LEAK_RULE.id,
                error: true,
                message: format!("secret `{}` ({}) in commit {}{at}", leak.hit.secret, leak.hit.encoding, &leak.commit[..12]),
                help: Some("rotate the secret, then remove it from the history".into()),
                place: Place { file: leak.path.clone(), line: leak.line, column: leak.column, field: None },
                also: Vec::new(),
                properties,
            }
        })
        .collect();
    match args.format {
        Format::Json => {
            let mut summary = serde_json::Map::new();
            summary.insert("command".into(), json!("audit"));
            summary.insert("result".into(), json!(if leaks.is_empty() { "clean" } else { "leaks" }));
            summary.insert("ref".into(), json!(reference));
            summary.insert("commits".into(), json!(commits));
            summary.insert("secretsSearched".into(), json!(searched));
            writeln!(stdout, "{}", serde_json::to_string_pretty(&report::json(summary, &findings))?)?;
        }
        Format::Sarif => {
            let log = report::sarif(&[LEAK_RULE], &findings, root);
            writeln!(stdout, "{}", serde_json::to_string_pretty(&log)?)?;
        }
        Format::Github | Format::Text => {
            stdout.write_all(report::github(&findings).as_bytes())?;
            writeln!(stdout, "{} leaks in {commits} commits of `{reference}` ({searched} secrets searched)", leaks.len())?;
        }
    }
    Ok(())
}

/// Every credential of the specs, resolved as a render resolves it (with the built-in
/// templates: they hold no credential), but the identity fields.
fn needles(args: &AuditArgs, spec: &Spec, bundle: &Bundle) -> anyhow::Result<Vec<Needle>> {
    let master = inputs::master_key(args.master_key_file.as_deref())?;
    let secret_inputs = inputs::OsInputs { allow_outside: args.allow_outside };
    let rendered = match render(spec, bundle, &Options::default(), &secret_inputs, master.as_ref()) {
        Ok(rendered) => rendered,
        Err(problems) => {
            std::io::stderr().lock().write_all(crate::spec::diagnostic::render(&problems.diagnostics, bundle).as_bytes())?;
            bail!("cannot resolve every secret of the specs, so the audit would be incomplete");
        }
    };
    Ok(rendered
        .resolved
        .iter()
        .filter(|r| !IDENTITY_FIELDS.iter().any(|f| r.field.ends_with(f)))
        .map(|r| Needle { path: r.path.clone(), value: r.value.clone() })
        .collect())
}

/// Scans every commit reachable from `tip` (its message and every blob not seen before);
/// returns how many commits, and the leaks in the order of the walk.
fn scan_history(repo: &Repository, tip: Oid, scanner: &Scanner) -> anyhow::Result<(usize, Vec<Leak>)> {
    let mut walk = repo.revwalk()?;
    walk.push(tip)?;
    let mut seen = HashSet::new();
    let mut commits = 0usize;
    let mut leaks = Vec::new();
    for oid in walk {
        let commit = repo.find_commit(oid?)?;
        commits += 1;
        let id = commit.id().to_string();
        for hit in scanner.scan(commit.message_bytes()) {
            leaks.push(Leak { commit: id.clone(), path: None, line: 0, column: 0, hit });
        }
        let mut found = Vec::new();
        scan_tree(repo, &commit.tree()?, "", scanner, &mut seen, &mut found)?;
        for (path, line, column, hit) in found {
            leaks.push(Leak { commit: id.clone(), path: Some(path), line, column, hit });
        }
    }
    Ok((commits, leaks))
}

/// The 1-based line and column (in characters) of byte `at` of `text`.
fn line_column(text: &[u8], at: usize) -> (usize, usize) {
    let before = &text[..at.min(text.len())];
    let start = before.iter().rposition(|&b| b == b'\n').map_or(0, |newline| newline + 1);
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    (line, String::from_utf8_lossy(&before[start..]).chars().count() + 1)
}

/// Scans every blob of `tree` not scanned before (a blob is the same bytes in every commit).
fn scan_tree(
    repo: &Repository,
    tree: &Tree<'_>,
    prefix: &str,
    scanner: &Scanner,
    seen: &mut HashSet<Oid>,
    found: &mut Vec<(String, usize, usize, crate::audit::Hit)>,
) -> anyhow::Result<()> {
    for entry in tree {
        let name = entry.name().unwrap_or("<non-utf8>");
        let path = if prefix.is_empty() { name.to_owned() } else { format!("{prefix}/{name}") };
        match entry.kind() {
            Some(ObjectType::Tree) if seen.insert(entry.id()) => {
                let subtree = repo.find_tree(entry.id())?;
                scan_tree(repo, &subtree, &path, scanner, seen, found)?;
            }
            Some(ObjectType::Blob) if seen.insert(entry.id()) => {
                let blob = repo.find_blob(entry.id())?;
                for hit in scanner.scan(blob.content()) {
                    let (line, column) = line_column(blob.content(), hit.at);
                    found.push((path.clone(), line, column, hit));
                }
            }
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::line_column;

    #[test]
    fn offsets_become_lines_and_character_columns() {
        let text = "first\nsécond x\n".as_bytes();
        assert_eq!(line_column(text, 0), (1, 1));
        assert_eq!(line_column(text, 6), (2, 1));
        let x = text.iter().position(|&b| b == b'x').expect("x");
        assert_eq!(line_column(text, x), (2, 8));
    }
}
