//! `tfrs render`: load -> build (render, lay out) -> seal against the output directory -> write.

use super::Status;
use super::args::RenderArgs;
use super::stages::{load, report, select};
use crate::layout;
use crate::pipeline::{self, Built, Failure, Setup};
use crate::render::memo;
use crate::source::{inputs, memo_cache};
use crate::spec::Spec;
use crate::tree::current::{Changes, Current, Records};
use crate::tree::{Files, Kept, Tree, write};
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
    let memo = memo_file.is_some().then_some(saved.jobs).and_then(|jobs| setup.memo(jobs, &current));
    let mut staging = if args.check { None } else { Some(write::Staging::begin(&out)?) };
    // NB: records only for a memo to save; the paths only for `--check` to name.
    let start = Sum { records: memo_file.is_some().then(Records::default), named: args.check.then(Default::default), ..Sum::default() };
    let mut sum = match render_parts(&spec, &bundle, &setup, memo.as_ref(), &current, staging.as_mut(), start)? {
        Ok(sum) => sum,
        Err(failure) => {
            drop(staging);
            return report(failure, &bundle).map(|()| Status::Failure);
        }
    };
    // The rest of the directory: other clusters' files stay, anything else is removed.
    let rendered_dirs: Vec<String> = spec.clusters.iter().map(|c| layout::cluster_dir(c.name())).collect();
    let (none, nothing) = (Files::new(), Kept::new());
    let rest = current.changes(&none, &nothing, &|path| !in_dirs(path, &rendered_dirs), &|path| in_clusters(path, &kept));
    sum.add(&rest, None, staging.as_mut())?;
    if let Some((changed, removed)) = &sum.named {
        return check_report(stdout, &args.out, sum.rendered, changed, removed, args.quiet);
    }
    let (changed, removed) = (sum.changed, sum.removed);
    put_in_place(&out, staging, &mut sum, memo_file.as_deref())?;
    let clusters = spec.clusters.len();
    let notes = notes(sum.reused, sum.table.len(), kept.len());
    writeln!(
        stdout,
        "rendered {clusters} cluster{} into `{}`: {} objects in {} files ({changed} changed, {removed} removed{notes})",
        if clusters == 1 { "" } else { "s" },
        args.out.display(),
        sum.objects,
        sum.rendered,
    )?;
    // NB: the process ends next; freeing tens of thousands of buffers one by one would take a
    // tenth of a large re-render.
    std::mem::forget((sum, current, spec, bundle));
    Ok(Status::Success)
}

/// Puts the staged render in place (unless it changes nothing in a tree tfrs wrote: then it is
/// dropped), then saves the memo with the records of the files as they now are.
fn put_in_place(out: &Path, staging: Option<write::Staging>, sum: &mut Sum, memo_file: Option<&Path>) -> anyhow::Result<()> {
    if let Some(staging) = staging
        && (sum.changed > 0 || sum.removed > 0 || !out.join(layout::RENDERED_MARKER).exists())
    {
        staging.finish()?;
    }
    if let (Some(file), Some(records)) = (memo_file, sum.records.as_mut()) {
        records.saved = inputs::unix_now_nanos();
        save_memo(file, &sum.table, records);
    }
    Ok(())
}

/// Renders `spec` cluster by cluster: each rendered, sealed, compared, staged (unless
/// `staging` is `None`: `--check`) and freed before the next, so a fleet's files are never all
/// in memory; nothing is in place before the caller finishes the staging. A failure is every
/// cluster's problems at once.
fn render_parts(
    spec: &Spec,
    bundle: &crate::spec::Bundle,
    setup: &Setup,
    memo: Option<&crate::render::Memo<'_>>,
    current: &Current,
    mut staging: Option<&mut write::Staging>,
    sum: Sum,
) -> anyhow::Result<Result<Sum, Failure>> {
    let mut sum = sum;
    let mut failure = None;
    let names: Vec<&str> = spec.clusters.iter().map(|c| c.name()).collect();
    for name in names {
        // NB: one cluster's part at a time (a copy of its objects, unless the spec is just it).
        let part = spec.part_of(name);
        let built = match pipeline::build(&part, bundle, setup, memo) {
            Ok(built) if failure.is_none() => built,
            Ok(_) => continue,
            // NB: the other clusters are still rendered, so every problem is reported at once.
            Err(next) => {
                failure = Some(merge(failure, next));
                continue;
            }
        };
        let dirs: Vec<String> = part.clusters.iter().map(|c| layout::cluster_dir(c.name())).collect();
        stage_part(built, &dirs, current, staging.as_deref_mut(), &mut sum)?;
    }
    Ok(failure.map_or(Ok(sum), Err))
}

/// What the clusters of a render add up to. Only what the end needs is kept of each cluster:
/// counts, the memo's entries and the files' records (with a memo), the paths that change
/// (for `--check`, which names them).
#[derive(Default)]
struct Sum {
    objects: usize,
    rendered: usize,
    changed: usize,
    removed: usize,
    reused: usize,
    table: memo::Table,
    records: Option<Records>,
    /// `--check`: the paths that would change and be removed.
    named: Option<(Vec<String>, Vec<String>)>,
}

impl Sum {
    /// Counts one part's changes (its files when `files` is given) and stages them.
    fn add(&mut self, changes: &Changes<'_>, files: Option<(&Files, &Kept)>, staging: Option<&mut write::Staging>) -> anyhow::Result<()> {
        if let Some((files, unread)) = files {
            self.objects += files.keys().chain(unread.keys()).filter(|p| is_object_file(p)).count();
            self.rendered += files.len() + unread.len();
        }
        let update = &changes.update;
        self.changed += update.changed.len();
        self.removed += update.removed.len();
        if let Some((changed, removed)) = self.named.as_mut() {
            changed.extend(update.changed.iter().map(|p| (*p).to_owned()));
            removed.extend(update.removed.iter().map(|p| (*p).to_owned()));
        }
        let stats = match staging {
            Some(staging) => staging.add(update)?,
            None => Vec::new(),
        };
        if let Some(records) = self.records.as_mut() {
            records.files.extend(changes.records(&stats).files);
        }
        Ok(())
    }
}

/// Seals one part of the render (a cluster) against the current tree, compares it with the
/// files under its `dirs`, counts and stages it; its files are freed on return.
fn stage_part(built: Built, dirs: &[String], current: &Current, staging: Option<&mut write::Staging>, sum: &mut Sum) -> anyhow::Result<()> {
    let Built { mut tree, memo: jobs, reused } = built;
    sum.table.extend(jobs);
    sum.reused += reused;
    let sealed = seal_against(&mut tree, current, dirs)?;
    let (files, unread) = tree.into_files();
    let changes = current.changes(&files, &unread, &|path| in_dirs(path, dirs), &|_| false);
    sum.add(&changes, Some((&files, &unread)), staging)?;
    drop((changes, sealed));
    // NB: freed in the background: a cluster's tens of thousands of buffers, one by one.
    std::thread::spawn(move || drop((files, unread)));
    Ok(())
}

/// Two failures of one render as one report: the diagnostics of both (an environment problem
/// makes the whole an environment problem); of anything else, the first.
fn merge(first: Option<Failure>, next: Failure) -> Failure {
    let diagnostics = |failure: &Failure| match failure {
        Failure::Invalid(d) | Failure::Environment(d) => Some(d.clone()),
        _ => None,
    };
    let Some(first) = first else { return next };
    let (Some(mut all), Some(more)) = (diagnostics(&first), diagnostics(&next)) else { return first };
    all.extend(more);
    all.sort_by_key(|d| d.origin);
    // NB: a problem every cluster meets (no master key) is said once.
    let all = crate::spec::diagnostic::said_once(all);
    if matches!(first, Failure::Environment(_)) || matches!(next, Failure::Environment(_)) {
        Failure::Environment(all)
    } else {
        Failure::Invalid(all)
    }
}

fn in_dirs(path: &str, dirs: &[String]) -> bool {
    dirs.iter().any(|dir| path.strip_prefix(dir.as_str()).is_some_and(|rest| rest.starts_with('/')))
}

/// How many paths of each list `render --check` names.
const CHECK_NAMED: usize = 20;

/// `--check`: whether the directory already holds this render; when not, the count line, then
/// (unless `quiet`) the paths that would change and be removed, sorted, at most
/// [`CHECK_NAMED`] of each.
fn check_report(
    stdout: &mut dyn Write,
    out: &Path,
    files: usize,
    changed: &[String],
    removed: &[String],
    quiet: bool,
) -> anyhow::Result<Status> {
    let (changed_paths, removed_paths) = (changed, removed);
    let (changed, removed) = (changed.len(), removed.len());
    if changed == 0 && removed == 0 {
        writeln!(stdout, "up to date: {files} files in `{}`", out.display())?;
        return Ok(Status::Success);
    }
    writeln!(stdout, "out of date: {changed} files would change and {removed} would be removed in `{}`", out.display())?;
    if !quiet {
        name_paths(stdout, "would change", changed_paths)?;
        name_paths(stdout, "would be removed", removed_paths)?;
    }
    Ok(Status::Failure)
}

/// `  <verb>: <path>` for the first [`CHECK_NAMED`] of `paths` in sorted order, then
/// `  <verb>: and N more`.
fn name_paths(stdout: &mut dyn Write, verb: &str, paths: &[String]) -> std::io::Result<()> {
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

/// Seals `tree` against the current tree, whose sealed objects under `dirs` (the files sealing
/// may reuse) are read and parsed up front, in parallel; any other path asked for is read when
/// asked. Returns those parsed objects, for the caller to drop (or not) when it is done.
fn seal_against<'a>(tree: &mut Tree, current: &'a Current, dirs: &[String]) -> anyhow::Result<HashMap<&'a str, serde_json::Value>> {
    use rayon::prelude::*;
    let candidates: Vec<&str> = dirs.iter().flat_map(|dir| current.paths_under(dir)).filter(|path| layout::is_sealed_file(path)).collect();
    let sealed: HashMap<&str, serde_json::Value> =
        candidates.into_par_iter().filter_map(|path| Some((path, crate::manifest::read_object(&current.bytes(path)?)?))).collect();
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
