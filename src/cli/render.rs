//! `tfrs render`: load -> build (render, lay out) -> seal against the output directory -> write.

use super::Status;
use super::args::RenderArgs;
use super::stages::{load, report, select};
use crate::layout;
use crate::pipeline::{self, Built, Setup};
use crate::render::memo;
use crate::source::{inputs, memo_cache};
use crate::spec::{Bundle, Spec};
use crate::tree::current::{Current, Records};
use crate::tree::{Tree, write};
use anyhow::bail;
use std::collections::{BTreeSet, HashMap};
use std::io::Write;
use std::path::Path;

/// Runs `tfrs render`.
pub fn run(args: &RenderArgs, stdout: &mut dyn Write) -> anyhow::Result<Status> {
    let out = write::resolve(&args.out)?;
    if !args.check {
        // NB: `--check` writes nothing, so it may compare against any directory, e.g. a Git
        // checkout of the committed tree.
        write::recover(&out)?;
        write::check_writable(&out)?;
    }
    let Some((spec, bundle)) = load(&args.inputs, &args.settings.overlays)? else {
        return Ok(Status::Failure);
    };
    let spec = select(spec, &bundle, &args.settings.clusters)?;
    let settings = &args.settings;
    let setup = Setup::new(settings.templates.as_deref(), settings.master_key_file.as_deref(), settings.allow_outside)?;
    // The memo of the last render into this directory (none with `--no-memo`, or when it
    // cannot be read: then every component is templated and every file read).
    let memo_file = (!args.no_memo).then(|| memo_cache::path(&out)).flatten();
    let saved = memo_file.as_deref().map(memo_cache::load).unwrap_or_default();
    // The current tree is listed once, its files identified by their records where those still
    // hold: for the memo, the sealing reuse, the change count and the write. Only the rendered
    // part of a checkout counts for `--check` (not `.git/`, a README, other files).
    let current = Current::read(&out, &saved.files, &|path| !args.check || path.starts_with(layout::CLUSTERS))?;
    let kept = kept_clusters(&spec, &current, &args.remove_clusters)?;
    let Some(Built { mut tree, memo: table, reused }) = build(&spec, &bundle, &setup, memo_file.is_some().then_some(saved.jobs), &current)?
    else {
        return Ok(Status::Failure);
    };
    let sealed = seal_against(&mut tree, &current)?;
    let (files, unread) = tree.into_files();
    let objects = files.keys().chain(unread.keys()).filter(|p| is_object_file(p)).count();
    let rendered = files.len() + unread.len();
    // Other clusters' files stay as they are: unchanged, so neither written nor removed.
    let changes = current.changes(&files, &unread, &|path| in_clusters(path, &kept));
    let (changed, removed) = (changes.update.changed.len(), changes.update.removed.len());
    if args.check {
        return check_report(stdout, &args.out, rendered, &changes.update, args.quiet);
    }
    // NB: a tree that already holds exactly these files is left as it is (nothing to swap).
    let mut written = std::collections::BTreeMap::new();
    if changed > 0 || removed > 0 || !out.join(layout::RENDERED_MARKER).exists() {
        written = write::write(&out, &changes.update)?;
    }
    if let Some(file) = memo_file.as_ref() {
        save_memo(file, &table, &changes.records(&written, inputs::unix_now_nanos()));
    }
    let clusters = spec.clusters.len();
    let notes = notes(reused, table.len(), kept.len());
    writeln!(
        stdout,
        "rendered {clusters} cluster{} into `{}`: {objects} objects in {rendered} files ({changed} changed, {removed} removed{notes})",
        if clusters == 1 { "" } else { "s" },
        args.out.display(),
    )?;
    // NB: the process ends next; freeing tens of thousands of buffers one by one would take a
    // tenth of a large re-render.
    std::mem::forget(sealed);
    std::mem::forget(changes);
    std::mem::forget((files, unread, current, spec, bundle, table));
    Ok(Status::Success)
}

/// How many paths of each list `render --check` names.
const CHECK_NAMED: usize = 20;

/// `--check`: whether the directory already holds this render; when not, the count line, then
/// (unless `quiet`) the paths that would change and be removed, sorted, at most
/// [`CHECK_NAMED`] of each.
fn check_report(stdout: &mut dyn Write, out: &Path, files: usize, changes: &write::Update<'_>, quiet: bool) -> anyhow::Result<Status> {
    let (changed, removed) = (changes.changed.len(), changes.removed.len());
    if changed == 0 && removed == 0 {
        writeln!(stdout, "up to date: {files} files in `{}`", out.display())?;
        return Ok(Status::Success);
    }
    writeln!(stdout, "out of date: {changed} files would change and {removed} would be removed in `{}`", out.display())?;
    if !quiet {
        name_paths(stdout, "would change", &changes.changed)?;
        name_paths(stdout, "would be removed", &changes.removed)?;
    }
    Ok(Status::Failure)
}

/// `  <verb>: <path>` for the first [`CHECK_NAMED`] of `paths` in sorted order, then
/// `  <verb>: and N more`.
fn name_paths(stdout: &mut dyn Write, verb: &str, paths: &[&str]) -> std::io::Result<()> {
    let mut sorted = paths.to_vec();
    sorted.sort_unstable();
    for path in sorted.iter().take(CHECK_NAMED) {
        writeln!(stdout, "  {verb}: {path}")?;
    }
    if sorted.len() > CHECK_NAMED {
        writeln!(stdout, "  {verb}: and {} more", sorted.len() - CHECK_NAMED)?;
    }
    Ok(())
}

/// Builds the tree, reusing what the memo entries `jobs` and the current tree still hold; `None`
/// after reporting an invalid spec.
fn build(spec: &Spec, bundle: &Bundle, setup: &Setup, jobs: Option<memo::Table>, current: &Current) -> anyhow::Result<Option<Built>> {
    let memo = jobs.and_then(|jobs| setup.memo(jobs, current));
    match pipeline::build(spec, bundle, setup, memo.as_ref()) {
        Ok(built) => Ok(Some(built)),
        Err(failure) => report(failure, bundle).map(|()| None),
    }
}

/// Saves the memo of this render. Only after the tree is in place, and a memo that cannot be
/// saved costs the next render time, never correctness: the stamps are checked against the
/// files, and a file is trusted by its record only while its stat is unchanged.
fn save_memo(file: &Path, jobs: &memo::Table, records: &Records) {
    if let Err(error) = memo_cache::save(file, jobs, records) {
        eprintln!("warning: the render memo was not saved to `{}`: {error}", file.display());
    }
}

/// Whether a path of the tree holds an object (not a `kustomization.yaml` or the plan).
fn is_object_file(path: &str) -> bool {
    path.ends_with(".yaml") && !path.ends_with(layout::KUSTOMIZATION)
}

/// Seals `tree` against the current tree, whose sealed objects (the files sealing may reuse)
/// are read and parsed up front, in parallel; any other path asked for is read when asked.
/// Returns those parsed objects, for the caller to drop (or not) when it is done.
fn seal_against<'a>(tree: &mut Tree, current: &'a Current) -> anyhow::Result<HashMap<&'a str, serde_json::Value>> {
    use rayon::prelude::*;
    let candidates: Vec<&str> = current.paths().filter(|path| layout::is_sealed_file(path)).collect();
    let sealed: HashMap<&str, serde_json::Value> = candidates
        .into_par_iter()
        .filter_map(|path| Some((path, crate::manifest::read_object(&current.bytes(path)?)?)))
        .collect();
    let previous = |relative: &str| match sealed.get(relative) {
        Some(object) => Some(object.clone()),
        None => current.bytes(relative).and_then(|bytes| crate::manifest::read_object(&bytes)),
    };
    tree.seal(&previous, &mut inputs::system_rng())?;
    Ok(sealed)
}

/// The clusters of the current tree that this render keeps as they are: every one it does not
/// render, but those `remove` names.
///
/// # Errors
///
/// A `--remove-cluster` that names a cluster this render writes, or none of the output
/// directory (a typo must not pass silently).
fn kept_clusters(spec: &Spec, current: &Current, remove: &[String]) -> anyhow::Result<BTreeSet<String>> {
    let rendered: BTreeSet<&str> = spec.clusters.iter().map(|c| c.name()).collect();
    let present: BTreeSet<&str> = current.paths().filter_map(layout::cluster_of).collect();
    for name in remove {
        if rendered.contains(name.as_str()) {
            bail!("--remove-cluster `{name}`: this render writes that cluster; remove it from the inputs (or `--cluster`) first");
        }
        if !present.contains(name.as_str()) {
            let listed: Vec<String> = present.iter().map(|c| format!("`{c}`")).collect();
            let there = if listed.is_empty() { "none".to_owned() } else { listed.join(", ") };
            bail!("--remove-cluster `{name}`: the output directory holds no such cluster (it holds {there})");
        }
    }
    Ok(present.into_iter().filter(|c| !rendered.contains(c) && !remove.iter().any(|r| r == c)).map(str::to_owned).collect())
}

fn in_clusters(path: &str, clusters: &BTreeSet<String>) -> bool {
    layout::cluster_of(path).is_some_and(|c| clusters.contains(c))
}

/// The end of the summary line: how much of the templating the memo saved (not said without a
/// memo), and how many other clusters were kept.
fn notes(reused: usize, units: usize, kept: usize) -> String {
    let mut notes = if units == 0 { String::new() } else { format!("; {reused} of {units} templated units reused") };
    match kept {
        0 => {}
        1 => notes.push_str("; 1 other cluster kept"),
        n => notes.push_str(&format!("; {n} other clusters kept")),
    }
    notes
}
