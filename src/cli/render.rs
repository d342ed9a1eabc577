//! `tfrs render`: load -> build (render, lay out) -> seal against the output directory -> write.

use super::Status;
use super::args::RenderArgs;
use super::stages::{load, report};
use crate::layout;
use crate::pipeline::{self, Built, Setup};
use crate::source::{inputs, memo_cache};
use crate::spec::{Bundle, Spec};
use crate::tree::{Files, Tree, write};
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
    let settings = &args.settings;
    let setup = Setup::new(settings.templates.as_deref(), settings.master_key_file.as_deref(), settings.allow_outside)?;
    // The current tree is read once: for the memo, the sealing reuse, the change count and the
    // write (unchanged files are linked, not written).
    let mut old = write::read_tree(&out)?;
    if args.check {
        // Only the rendered part of a checkout counts (not `.git/`, a README, other files).
        old.retain(|path, _| path.starts_with(layout::CLUSTERS));
    }
    // The memo of the last render into this directory (none with `--no-memo`, or when it
    // cannot be read: then every component is templated).
    let memo_file = (!args.no_memo).then(|| memo_cache::path(&out)).flatten();
    let Some(Built { mut tree, memo: table, reused }) = build(&spec, &bundle, &setup, memo_file.as_deref(), &old)? else {
        return Ok(Status::Failure);
    };
    let sealed = seal_against(&mut tree, &old)?;
    let files = tree.into_files();
    let changes = write::Changes::new(&files, &old);
    let (changed, removed) = (changes.changed.len(), changes.removed.len());
    warn_dropped_clusters(&files, &old, args.check);
    if args.check {
        return check_report(stdout, &args.out, files.len(), &changes, args.quiet);
    }
    // NB: a tree that already holds exactly these files is left as it is (nothing to swap).
    if changed > 0 || removed > 0 || !out.join(layout::RENDERED_MARKER).exists() {
        write::write(&out, &changes)?;
    }
    if let Some(file) = memo_file.as_ref() {
        save_memo(file, &table);
    }
    // How much of the templating the memo saved (not shown without a memo).
    let memo_note = if table.is_empty() { String::new() } else { format!("; {reused} of {} templated units reused", table.len()) };
    let (clusters, objects) = (spec.clusters.len(), files.keys().filter(|p| is_object_file(p)).count());
    writeln!(
        stdout,
        "rendered {clusters} cluster{} into `{}`: {objects} objects in {} files ({changed} changed, {removed} removed{memo_note})",
        if clusters == 1 { "" } else { "s" },
        args.out.display(),
        files.len()
    )?;
    // NB: the process ends next; freeing tens of thousands of buffers one by one would take a
    // tenth of a large re-render.
    std::mem::forget(sealed);
    std::mem::forget((table, files, old, spec, bundle));
    Ok(Status::Success)
}

/// How many paths of each list `render --check` names.
const CHECK_NAMED: usize = 20;

/// `--check`: whether the directory already holds this render; when not, the count line, then
/// (unless `quiet`) the paths that would change and be removed, sorted, at most
/// [`CHECK_NAMED`] of each.
fn check_report(stdout: &mut dyn Write, out: &Path, files: usize, changes: &write::Changes<'_>, quiet: bool) -> anyhow::Result<Status> {
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

/// Builds the tree, reusing what the memo in `memo_file` and the current tree `old` still hold;
/// `None` after reporting an invalid spec.
fn build(spec: &Spec, bundle: &Bundle, setup: &Setup, memo_file: Option<&Path>, old: &Files) -> anyhow::Result<Option<Built>> {
    let memo = memo_file.and_then(|file| setup.memo(memo_cache::load(file), old));
    match pipeline::build(spec, bundle, setup, memo.as_ref()) {
        Ok(built) => Ok(Some(built)),
        Err(failure) => report(failure, bundle).map(|()| None),
    }
}

/// Saves the memo of this render. Only after the tree is in place, and a memo that cannot be
/// saved costs the next render time, never correctness: the stamps are checked against the
/// files.
fn save_memo(file: &Path, table: &crate::render::memo::Table) {
    if let Err(error) = memo_cache::save(file, table) {
        eprintln!("warning: the render memo was not saved to `{}`: {error}", file.display());
    }
}

/// Whether a path of the tree holds an object (not a `kustomization.yaml` or the plan).
fn is_object_file(path: &str) -> bool {
    path.ends_with(".yaml") && !path.ends_with(layout::KUSTOMIZATION)
}

/// Seals `tree` against the current tree `old`, whose sealed objects (the files sealing may
/// reuse) are parsed up front, in parallel; any other path asked for is parsed when asked.
/// Returns those parsed objects, for the caller to drop (or not) when it is done.
fn seal_against<'a>(tree: &mut Tree, old: &'a Files) -> anyhow::Result<HashMap<&'a str, serde_json::Value>> {
    use rayon::prelude::*;
    let candidates: Vec<(&String, &Vec<u8>)> = old.iter().filter(|(path, _)| layout::is_sealed_file(path)).collect();
    let sealed: HashMap<&str, serde_json::Value> =
        candidates.into_par_iter().filter_map(|(path, bytes)| Some((path.as_str(), crate::manifest::read_object(bytes)?))).collect();
    let previous = |relative: &str| match sealed.get(relative) {
        Some(object) => Some(object.clone()),
        None => old.get(relative).and_then(|bytes| crate::manifest::read_object(bytes)),
    };
    tree.seal(&previous, &mut inputs::system_rng())?;
    Ok(sealed)
}

/// Warns about clusters of the current tree that this render does not hold (they are removed).
fn warn_dropped_clusters(files: &Files, old: &Files, check: bool) {
    let rendered: BTreeSet<&str> = files.keys().filter_map(|p| layout::cluster_of(p)).collect();
    let dropped: BTreeSet<&str> = old.keys().filter_map(|p| layout::cluster_of(p)).filter(|c| !rendered.contains(c)).collect();
    for cluster in dropped {
        let verb = if check { "would remove" } else { "removing" };
        eprintln!(
            "warning: {verb} `clusters/{cluster}/`: cluster `{cluster}` is not in the inputs (render every cluster into one directory, or each into its own)"
        );
    }
}
