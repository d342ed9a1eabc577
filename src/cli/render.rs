//! `tfrs render`: load -> build (render, lay out) -> seal against the output directory -> write.

use super::Status;
use super::args::RenderArgs;
use super::stages::{Effect, load_kept, report, select};
use crate::layout;
use crate::pipeline::{self, Built, Failure, Setup};
use crate::render::stamp::ClusterStamp;
use crate::render::unit;
use crate::source::spec_cache::SpecCache;
use crate::source::{inputs, memo_cache};
use crate::spec::Spec;
use crate::tree::current::Current;
use crate::tree::write::Stat;
use crate::tree::{Files, Kept, Tree, write};
use anyhow::{Context as _, bail};
use std::collections::{BTreeSet, HashMap};
use std::io::Write;
use std::path::Path;

mod check;
mod partial;

use check::check_report;
use partial::{Partial, Stamping};

/// Runs `tfrs render`.
pub fn run(args: &RenderArgs, stdout: &mut dyn Write) -> anyhow::Result<Status> {
    let out = write::resolve(&args.out)?;
    let _lock = prepare_out(&out, args.check)?;
    let settings = &args.settings;
    // The memo of the last render into this directory: none with `--no-memo`, or when it
    // cannot be read (then every component is templated and every file read).
    let memos = (!args.no_memo).then(|| memo_cache::open(&out, !args.check)).flatten();
    let specs = memos.as_deref().and_then(|dir| spec_cache(dir, settings.master_key_file.as_deref()));
    let loaded = load_kept(&args.inputs, &settings.overlays, specs.as_ref().map(|c| c as &dyn crate::spec::yaml::Pieces), Effect::Writes)?;
    let Some((spec, bundle)) = loaded else {
        return Ok(Status::Failure);
    };
    let _saving = Saving(specs.filter(|_| !args.check).map(|cache| std::thread::spawn(move || cache.save())));
    let spec = select(spec, &bundle, &settings.clusters)?;
    let setup = Setup::new(settings.templates.as_deref(), settings.master_key_file.as_deref(), settings.allow_outside)?;
    let kept = kept_clusters(&spec, &present_clusters(&out)?, &args.remove_clusters)?;
    let mut staging = if args.check { None } else { Some(write::Staging::begin(&out)?) };
    let start = Sum { named: args.check.then(Default::default), ..Sum::default() };
    let context = Context { out: &out, bundle: &bundle, setup: &setup, memos: memos.as_deref() };
    let names: Vec<String> = spec.clusters.iter().map(|c| c.name().to_owned()).collect();
    let mut sum = match render_parts(spec, &context, staging.as_mut(), start)? {
        Ok(sum) => sum,
        Err(failure) => {
            drop(staging);
            return report(failure, &bundle, Effect::Writes).map(|()| Status::Failure);
        }
    };
    let rest = rest_of(&out, &names, &kept, args.check)?;
    let update = write::Update {
        files: &Files::new(),
        changed: Vec::new(),
        removed: rest.iter().map(String::as_str).collect(),
        unchanged: Vec::new(),
    };
    sum.add(&update, None, staging.as_mut())?;
    if let Some((changed, removed)) = &sum.named {
        return check_report(stdout, &args.out, sum.rendered, changed, removed, args.quiet);
    }
    let (changed, removed) = (sum.changed, sum.removed);
    put_in_place(&out, staging, &mut sum)?;
    for cluster in memos.iter().flat_map(|dir| args.remove_clusters.iter().map(move |c| (dir, c))) {
        memo_cache::forget(cluster.0, cluster.1);
    }
    let clusters = names.len();
    let notes = notes(&sum, kept.len());
    writeln!(
        stdout,
        "rendered {clusters} cluster{} into `{}`: {} objects in {} files ({changed} changed, {removed} removed{notes})",
        if clusters == 1 { "" } else { "s" },
        args.out.display(),
        sum.objects,
        sum.rendered,
    )?;
    // NB: the process ends next; freeing what is left one by one is not worth its time.
    std::mem::forget((sum, bundle));
    Ok(Status::Success)
}

/// The spec cache of memo directory `memos`, keyed by the master key (`master_key_file`, else
/// `TFRS_MASTER_KEY`); none without one. A key that cannot be read is reported by the render
/// itself, after the specs are checked.
fn spec_cache(memos: &Path, master_key_file: Option<&Path>) -> Option<SpecCache> {
    let master = inputs::master_key(master_key_file).ok()??;
    Some(SpecCache::open(memos, &master))
}

/// The spec cache being saved beside the render, waited for when the render ends.
struct Saving(Option<std::thread::JoinHandle<()>>);

impl Drop for Saving {
    fn drop(&mut self) {
        if let Some(saving) = self.0.take() {
            let _ = saving.join();
        }
    }
}

/// Locks `out`, finishes or undoes what an interrupted render left there and checks that it
/// may be written. `--check` writes nothing, so it takes no lock; it refuses a tree left
/// part-way through an update, which it would compare half old, half new.
fn prepare_out(out: &Path, check: bool) -> anyhow::Result<Option<std::fs::File>> {
    if check {
        write::check_settled(out)?;
        return Ok(None);
    }
    let lock = write::lock(out)?;
    write::recover(out)?;
    write::check_writable(out)?;
    Ok(lock)
}

/// The rest of the output directory, to remove: the files of no rendered or kept cluster. In a
/// Git checkout, and with `--check`, only the files of clusters' directories (those of
/// `--remove-cluster`): the rest of a checkout is the repository's, not the render's.
fn rest_of(out: &Path, names: &[String], kept: &BTreeSet<String>, check: bool) -> anyhow::Result<Vec<String>> {
    let ours: BTreeSet<String> = names.iter().chain(kept).map(|c| layout::cluster_dir(c)).collect();
    let clusters_only = check || write::is_checkout(out);
    let below = if clusters_only { layout::CLUSTERS } else { "" };
    let mut rest: Vec<String> = write::list_below(out, below, &|dir| ours.contains(dir))?.into_iter().map(|(path, _)| path).collect();
    rest.retain(|path| !clusters_only || layout::cluster_of(path).is_some());
    Ok(rest)
}

/// Puts the staged render in place (unless it changes nothing in a tree tfrs wrote, or in a Git
/// checkout: then it is dropped), then the memo of each cluster beside it.
fn put_in_place(out: &Path, staging: Option<write::Staging>, sum: &mut Sum) -> anyhow::Result<()> {
    if let Some(staging) = staging
        && (sum.changed > 0 || sum.removed > 0 || !(out.join(layout::RENDERED_MARKER).exists() || write::is_checkout(out)))
    {
        staging.finish()?;
    }
    // NB: a memo that cannot be saved costs the next render time, never correctness: the
    // stamps are checked against the files, and a file is trusted by its record only while its
    // stat is unchanged.
    if let Err(error) = std::mem::take(&mut sum.memo).commit() {
        eprintln!("warning: the render memo was not saved: {error}");
    }
    Ok(())
}

/// What every cluster's render reads besides its spec.
struct Context<'a> {
    out: &'a Path,
    bundle: &'a crate::spec::Bundle,
    setup: &'a Setup,
    /// The memo directory, when there is a memo.
    memos: Option<&'a Path>,
}

/// Renders `spec` cluster by cluster: each rendered, sealed, compared, staged (unless
/// `staging` is `None`: `--check`) and freed before the next, so a fleet's files are never all
/// in memory; nothing is in place before the caller finishes the staging. A failure is every
/// cluster's problems at once.
fn render_parts(
    mut spec: Spec,
    context: &Context<'_>,
    mut staging: Option<&mut write::Staging>,
    mut sum: Sum,
) -> anyhow::Result<Result<Sum, Failure>> {
    let mut failure = None;
    let names: Vec<String> = spec.clusters.iter().map(|c| c.name().to_owned()).collect();
    for (index, name) in names.iter().enumerate() {
        // NB: after a failure the other clusters are still rendered (nothing staged), so every
        // problem is reported at once.
        let staging = if failure.is_none() { staging.as_deref_mut() } else { None };
        let last = index + 1 == names.len();
        // NB: one cluster's part at a time (a copy of its objects), or the spec itself when it
        // is just that cluster: then it is freed once rendered, before the tree is written.
        let part = match spec.part_of(name) {
            std::borrow::Cow::Owned(part) => part,
            std::borrow::Cow::Borrowed(_) => std::mem::take(&mut spec),
        };
        if let Err(next) = render_cluster(part, (name, last), context, staging, &mut sum)? {
            failure = Some(merge(failure, next));
        }
    }
    // NB: what is left of a fleet's spec is not needed; the process ends soon.
    discard(spec, true);
    Ok(failure.map_or(Ok(sum), Err))
}

/// What the clusters of a render add up to. Only what the end needs is kept of each cluster:
/// counts, its memo (staged on disk), the paths that change (for `--check`, which names them).
#[derive(Default)]
struct Sum {
    objects: usize,
    rendered: usize,
    changed: usize,
    removed: usize,
    reused: usize,
    units: usize,
    /// Clusters not rendered again (their stamp held and their files were as left).
    unchanged: usize,
    /// Tenant namespaces given back whole by the memo, of those rendered with one.
    namespaces: (usize, usize),
    memo: memo_cache::Staged,
    /// `--check`: the paths that would change and be removed.
    named: Option<(Vec<String>, Vec<String>)>,
}

impl Sum {
    /// Counts one part's `update` (its files when `files` is given) and stages it; the stats of
    /// its changed files, in order.
    fn add(
        &mut self,
        update: &write::Update<'_>,
        files: Option<(&Files, &Kept)>,
        staging: Option<&mut write::Staging>,
    ) -> anyhow::Result<Vec<Stat>> {
        if let Some((files, unread)) = files {
            self.objects += files.keys().chain(unread.keys()).filter(|p| is_object_file(p)).count();
            self.rendered += files.len() + unread.len();
        }
        self.changed += update.changed.len();
        self.removed += update.removed.len();
        if let Some((changed, removed)) = self.named.as_mut() {
            changed.extend(update.changed.iter().map(|p| (*p).to_owned()));
            removed.extend(update.removed.iter().map(|p| (*p).to_owned()));
        }
        match staging {
            Some(staging) => staging.add(update),
            None => Ok(Vec::new()),
        }
    }

    /// Counts a rendered cluster's templated `units`, of which the memo gave back `reused`, and
    /// its namespaces.
    fn count(&mut self, reused: usize, units: usize, namespaces: &[unit::Outcome]) {
        self.reused += reused;
        self.units += units;
        let kept = namespaces.iter().filter(|o| matches!(o, unit::Outcome::Kept { .. })).count();
        self.namespaces = (self.namespaces.0 + kept, self.namespaces.1 + namespaces.len());
    }

    /// Counts the files of a cluster rendered in part: all of `current` (the tree its last
    /// render left, which the part's render leaves as it is) but what `update` removes.
    fn count_kept(&mut self, current: &Current, update: &write::Update<'_>) {
        let removed: std::collections::HashSet<&str> = update.removed.iter().copied().collect();
        self.objects += current.paths().filter(|path| is_object_file(path) && !removed.contains(path)).count();
        self.rendered += current.len() - removed.len();
    }

    /// Counts a cluster rendered in part: `reused` of its `units` templated units given back,
    /// `kept` of its `namespaces` not rendered again.
    fn count_part(&mut self, (reused, units): (usize, usize), (kept, namespaces): (usize, usize)) {
        self.reused += reused;
        self.units += units;
        self.namespaces = (self.namespaces.0 + kept, self.namespaces.1 + namespaces);
    }

    /// Counts cluster `name`, not rendered: its files `current` are those its last render left
    /// (`held` the stamp that says so). When some of them had to be read to know that (records
    /// made too soon after the files were written are not trusted), its records are made again,
    /// now, so that the next render trusts them (`staged`: unless nothing is written).
    fn keep_unchanged(&mut self, memos: &Path, name: &str, current: &Current, mut held: ClusterStamp, staged: bool) {
        self.objects += current.paths().filter(|p| is_object_file(p)).count();
        self.rendered += current.len();
        self.reused += held.units;
        self.units += held.units;
        self.unchanged += 1;
        if !staged || (current.trusted == current.len() && current.dirs_all_trusted()) {
            return;
        }
        let mut records = current.records();
        records.saved = crate::tree::current::now_nanos();
        held.records = records.saved;
        if let Err(error) = self.memo.add(memos, name, None, &records, Some(&held)) {
            eprintln!("warning: the render memo of cluster `{name}` was not saved: {error}");
        }
    }
}

/// Renders cluster `name` (`part`, its part of the spec) against its directory (read as far
/// as its memo's records allow), seals, compares, counts and stages it (and its memo) unless
/// `staging` is `None`; its part and files are freed on return. A cluster whose stamp holds and
/// whose files are as its last render left them is not rendered at all (`render::stamp`).
fn render_cluster(
    part: Spec,
    (name, last): (&str, bool),
    context: &Context<'_>,
    mut staging: Option<&mut write::Staging>,
    sum: &mut Sum,
) -> anyhow::Result<Result<(), Failure>> {
    // NB: side by side: the records of a large cluster are tens of thousands of lines.
    let (stamping, records_read) = rayon::join(
        || context.memos.and_then(|memos| Stamping::new(memos, name, &part, context)),
        || context.memos.map(|memos| memo_cache::load_records(memos, name)).unwrap_or_default(),
    );
    let held = stamping.as_ref().and_then(|s| s.held(records_read.saved));
    let (current, saved) = read_current(context, name, &records_read, held.is_none())?;
    if let (Some(held), Some(memos)) = (held, context.memos)
        && current.is_described_by(&records_read)
    {
        sum.keep_unchanged(memos, name, &current, held, staging.is_some());
        discard((part, current, records_read), last);
        return Ok(Ok(()));
    }
    let saved = saved.or_else(|| context.memos.map(|memos| load_memo(memos, name)));
    let (saved, units) = match (&stamping, saved) {
        (Some(stamping), Some(saved)) => {
            let tree = partial::Tree { current: &current, records: &records_read, saved };
            match partial::render(&part, (name, last), context, (stamping, tree), staging.as_deref_mut(), sum)? {
                Partial::Done(result) => {
                    discard((part, current, records_read), last);
                    return Ok(result);
                }
                Partial::Whole(saved) => saved,
            }
        }
        (_, saved) => saved.unwrap_or_default(),
    };
    let read = Read { stamping: stamping.as_ref(), current, records: records_read, saved: (saved, units) };
    render_whole(part, (name, last), context, read, staging, sum)
}

/// What a cluster's render has read before it renders: its stamping, its files now and as
/// recorded, and its memo.
struct Read<'s, 'a> {
    stamping: Option<&'s Stamping<'a>>,
    current: Current,
    records: crate::tree::current::Records,
    saved: Saved,
}

/// Renders cluster `name` (`part`) whole, with what was `read` of it, then seals, compares,
/// counts and stages it (and its memo) as [`render_cluster`] says.
fn render_whole(
    part: Spec,
    (name, last): (&str, bool),
    context: &Context<'_>,
    read: Read<'_, '_>,
    mut staging: Option<&mut write::Staging>,
    sum: &mut Sum,
) -> anyhow::Result<Result<(), Failure>> {
    let Read { stamping, current, records: records_read, saved: (saved, units) } = read;
    let memo = context.memos.and_then(|_| context.setup.memo(saved, &current));
    let memo = memo.map(|memo| memo.with_units(units, context.setup.unit_frames(&part, context.bundle)));
    let (built, reads) = pipeline::build_recording(&part, context.bundle, context.setup, memo.as_ref());
    let Built { mut tree, memo: mut jobs, reused, units: outcomes } = match built {
        Ok(built) => built,
        Err(failure) => return Ok(Err(failure)),
    };
    let inputs = stamping.and_then(|s| s.inputs_for(&part, context, &reads, partial::reading_files(&outcomes)));
    release(part, reused == 0, last);
    let units = jobs.len();
    sum.count(reused, units, &outcomes);
    if let Some(memo) = &memo {
        tree.keep_sealed(memo);
    }
    let layout = stamping.and_then(|s| s.layout(&tree));
    let sealed = seal_against(&mut tree, &current)?;
    jobs.extend(tree.take_memo_entries());
    let (files, unread) = tree.into_files();
    let changes = current.changes(&files, &unread, &|_| true, &|_| false);
    let stats = sum.add(&changes.update, Some((&files, &unread)), staging.as_deref_mut())?;
    let records = (context.memos.is_some() && staging.is_some()).then(|| changes.records(&stats));
    let namespaces = namespace_entries(memo.as_ref(), records.as_ref(), outcomes, &jobs);
    drop((changes, sealed, memo));
    // NB: a cluster's tens of thousands of buffers and paths, freed one by one in the background
    // before the memo is written; not at all after the last cluster (the process ends next).
    discard((files, unread, current, records_read), last);
    let stamp = stamping.map(|s| move |saved| s.stamp(&reads, saved, units, (inputs.as_ref(), layout.as_ref())));
    save_memo(
        (context, name),
        records,
        stamp.as_ref().map(|s| s as &dyn Fn(u64) -> ClusterStamp),
        (&jobs, &namespaces.unwrap_or_default()),
        sum,
    );
    discard(jobs, last);
    Ok(Ok(()))
}

/// Saves the memo of cluster `name`, when there is a memo and `records` (the files as they will
/// be; their time set now): its memo entries `jobs`, its namespaces' entries and the stamp
/// `stamp` makes for records saved at a time.
fn save_memo(
    (context, name): (&Context<'_>, &str),
    records: Option<crate::tree::current::Records>,
    stamp: Option<&dyn Fn(u64) -> ClusterStamp>,
    (jobs, namespaces): (&crate::render::memo::Table, &unit::Table),
    sum: &mut Sum,
) {
    let (Some(memos), Some(mut records)) = (context.memos, records) else { return };
    records.saved = crate::tree::current::now_nanos();
    let stamp = stamp.map(|stamp| stamp(records.saved));
    let saved = (&memo_cache::Slice::all(jobs), &memo_cache::Slice::all(namespaces));
    if let Err(error) = sum.memo.add(memos, name, Some(saved), &records, stamp.as_ref()) {
        eprintln!("warning: the render memo of cluster `{name}` was not saved: {error}");
    }
}

/// Frees a cluster's `part` of the spec once it is rendered: not needed past the render. When
/// the memo gave nothing back (`cold`), the tree holds every object's text: the part is freed in
/// the background now rather than held through the sealing and writing (tens of MB for a large
/// cluster, at its peak). Otherwise as the rest of the cluster is ([`discard`]).
fn release(part: Spec, cold: bool, last: bool) {
    if cold {
        std::thread::spawn(move || drop(part));
    } else {
        discard(part, last);
    }
}

/// Frees `value` in the background, or never when `last` (the process ends next).
fn discard<T: Send + 'static>(value: T, last: bool) {
    if last {
        std::mem::forget(value);
    } else {
        std::thread::spawn(move || drop(value));
    }
}

/// The entries of the namespaces a render gave `outcomes` for, made from the files as they will
/// be, by their `records` (`jobs` is the render's memo table); none without a memo or records.
fn namespace_entries(
    memo: Option<&crate::render::Memo<'_>>,
    records: Option<&crate::tree::current::Records>,
    outcomes: Vec<unit::Outcome>,
    jobs: &crate::render::memo::Table,
) -> Option<unit::Table> {
    let (memo, records) = (memo?, records?);
    let content = |path: &str| records.files.get(path).map(|record| record.content);
    Some(unit::record(&memo.stamper(), outcomes, jobs, &content))
}

/// The files of cluster `name` now (identified by `records` where they allow), and its memo's
/// entries when `with_jobs` (read beside the files: the stamp did not hold, so they are needed).
fn read_current(
    context: &Context<'_>,
    name: &str,
    records: &crate::tree::current::Records,
    with_jobs: bool,
) -> anyhow::Result<(Current, Option<Saved>)> {
    let dir = layout::cluster_dir(name);
    let read = || Current::read_below(context.out, &dir, records);
    match context.memos {
        Some(memos) if with_jobs => {
            let (current, saved) = rayon::join(read, || load_memo(memos, name));
            Ok((current?, Some(saved)))
        }
        _ => Ok((read()?, None)),
    }
}

/// A cluster's memo entries and its namespaces', as the memo looks them up.
type Saved = (crate::render::memo::Previous, unit::Previous);

/// The memo entries and namespace entries of cluster `name` in memo directory `memos`.
fn load_memo(memos: &Path, name: &str) -> Saved {
    (memo_cache::load_jobs(memos, name), memo_cache::load_units(memos, name))
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

/// Whether a path of the tree holds an object (not a `kustomization.yaml` or the plan).
fn is_object_file(path: &str) -> bool {
    path.ends_with(".yaml") && !path.ends_with(layout::KUSTOMIZATION)
}

/// Seals `tree` against the current tree, whose files at the paths of the Secrets still to
/// seal (those the memo did not keep) are read and parsed up front, in parallel; any other
/// path asked for is read when asked. Returns those parsed objects, for the caller to drop (or
/// not) when it is done.
fn seal_against<'a>(tree: &mut Tree, current: &'a Current) -> anyhow::Result<HashMap<&'a str, serde_json::Value>> {
    use rayon::prelude::*;
    let candidates: Vec<&str> = tree.pending_paths().filter_map(|path| current.path(path)).collect();
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
fn kept_clusters(spec: &Spec, present: &BTreeSet<String>, remove: &[String]) -> anyhow::Result<BTreeSet<String>> {
    let rendered: BTreeSet<&str> = spec.clusters.iter().map(|c| c.name()).collect();
    let present: BTreeSet<&str> = present.iter().map(String::as_str).collect();
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

/// The clusters the output directory holds: the directories below `clusters/`.
fn present_clusters(out: &Path) -> anyhow::Result<BTreeSet<String>> {
    let dir = out.join(layout::CLUSTERS);
    if !dir.is_dir() {
        return Ok(BTreeSet::new());
    }
    let mut present = BTreeSet::new();
    for entry in std::fs::read_dir(&dir).with_context(|| format!("cannot read `{}`", dir.display()))? {
        let entry = entry?;
        if entry.path().is_dir() {
            present.insert(entry.file_name().to_string_lossy().into_owned());
        }
    }
    Ok(present)
}

/// The end of the summary line: how much of the templating the memo saved (not said without a
/// memo), how many clusters were not rendered again, and how many other clusters were kept.
fn notes(sum: &Sum, kept: usize) -> String {
    let (reused, units) = (sum.reused, sum.units);
    let mut notes = if units == 0 { String::new() } else { format!("; {reused} of {units} templated units reused") };
    if let (kept @ 1.., namespaces) = sum.namespaces {
        notes.push_str(&format!("; {kept} of {namespaces} namespaces not rendered again"));
    }
    match sum.unchanged {
        0 => {}
        1 => notes.push_str("; 1 cluster unchanged, not rendered again"),
        n => notes.push_str(&format!("; {n} clusters unchanged, not rendered again")),
    }
    match kept {
        0 => {}
        1 => notes.push_str("; 1 other cluster kept"),
        n => notes.push_str(&format!("; {n} other clusters kept")),
    }
    notes
}
