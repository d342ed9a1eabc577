//! `tfrs audit`: derive and resolve every secret of the specs, then search every commit reachable
//! from a ref for any of them. A hit names the commit, the path and the secret's logical path,
//! never the value.

use super::Status;
use super::args::AuditArgs;
use super::stages::load;
use crate::audit::{Needle, Scanner};
use crate::git::remote;
use crate::render::{Options, render};
use crate::source::inputs;
use crate::spec::{Bundle, Spec};
use anyhow::{Context as _, bail};
use git2::{ObjectType, Oid, Repository, Tree};
use std::collections::HashSet;
use std::io::Write;

/// Fields that name an identity rather than hold a secret: not searched.
const IDENTITY_FIELDS: &[&str] = &["username", "rootUser", "clientId"];

/// Runs `tfrs audit`.
pub fn run(args: &AuditArgs, stdout: &mut dyn Write) -> anyhow::Result<Status> {
    let Some((spec, bundle)) = load(&args.inputs, &[])? else {
        return Ok(Status::Error);
    };
    let needles = needles(args, &spec, &bundle)?;
    let scanner = Scanner::new(&needles);
    let (repo, is_url) = crate::git::open(&args.repo)?;
    let tip = if is_url {
        remote::fetch(&repo, "origin", &args.reference)?.with_context(|| format!("`{}` has no branch `{}`", args.repo, args.reference))?
    } else {
        repo.revparse_single(&args.reference)
            .and_then(|object| object.peel_to_commit())
            .map_err(|source| crate::git::Error::Resolve { name: args.reference.clone(), source })?
            .id()
    };
    let (commits, leaks) = scan_history(&repo, tip, &scanner, args.quiet, stdout)?;
    if leaks > 0 {
        writeln!(stdout, "{leaks} leak{} in {commits} commits of `{}`", if leaks == 1 { "" } else { "s" }, args.reference)?;
        return Ok(Status::Failure);
    }
    writeln!(
        stdout,
        "clean: {} secrets searched in {commits} commits of `{}` (raw, base64, percent- and JSON-escaped)",
        scanner.len(),
        args.reference
    )?;
    Ok(Status::Success)
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

/// Scans every commit reachable from `tip` (its message and every blob not seen before),
/// printing each hit unless `quiet`; returns how many commits and hits.
fn scan_history(repo: &Repository, tip: Oid, scanner: &Scanner, quiet: bool, stdout: &mut dyn Write) -> anyhow::Result<(usize, usize)> {
    let mut walk = repo.revwalk()?;
    walk.push(tip)?;
    let mut seen = HashSet::new();
    let (mut commits, mut leaks) = (0usize, 0usize);
    for oid in walk {
        let commit = repo.find_commit(oid?)?;
        commits += 1;
        let short = &commit.id().to_string()[..12];
        for hit in scanner.scan(commit.message_bytes()) {
            leaks += 1;
            if !quiet {
                writeln!(stdout, "leak: commit {short} message: `{}` ({})", hit.secret, hit.encoding)?;
            }
        }
        let mut found = Vec::new();
        scan_tree(repo, &commit.tree()?, "", scanner, &mut seen, &mut found)?;
        for (path, hit) in found {
            leaks += 1;
            if !quiet {
                writeln!(stdout, "leak: commit {short} `{path}`: `{}` ({})", hit.secret, hit.encoding)?;
            }
        }
    }
    Ok((commits, leaks))
}

/// Scans every blob of `tree` not scanned before (a blob is the same bytes in every commit).
fn scan_tree(
    repo: &Repository,
    tree: &Tree<'_>,
    prefix: &str,
    scanner: &Scanner,
    seen: &mut HashSet<Oid>,
    found: &mut Vec<(String, crate::audit::Hit)>,
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
                    found.push((path.clone(), hit));
                }
            }
            _ => {}
        }
    }
    Ok(())
}
