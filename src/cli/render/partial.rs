//! A cluster rendered in part: when the cluster stamp does not hold but its parts show that only
//! some tenant namespaces changed (`crate::render::parts`), those namespaces and the cluster's
//! own components are rendered, sealed and compared with their files, and the rest of the
//! cluster's tree, its memo entries and its namespaces' entries are kept as the last render left
//! them. What is laid out must show that nothing else can change, or the whole cluster is
//! rendered after all.

use super::{Context, Saved, Sum, discard, load_memo, namespace_entries, save_memo, seal_against};
use crate::layout;
use crate::pipeline::{self, Built, Failure, Setup};
use crate::render::memo::is_templated;
use crate::render::parts::{Inputs, Layout, Parts, REST, namespace_of};
use crate::render::stamp::{ClusterStamp, Outcomes, Read, absorb_reads, read_again};
use crate::render::unit;
use crate::source::memo_cache;
use crate::spec::Spec;
use crate::tree::current::Current;
use crate::tree::write;
use std::collections::{BTreeSet, HashSet};
use std::path::Path;

/// What a cluster's stamp is checked and made with: its memo key, build, inputs digest and
/// parts (`render::stamp`, `render::parts`), and the stamp its last render left.
pub(super) struct Stamping<'a> {
    key: zeroize::Zeroizing<[u8; 32]>,
    build: String,
    name: &'a str,
    inputs: [u8; 32],
    parts: Option<Inputs>,
    setup: &'a Setup,
    last: Option<ClusterStamp>,
}

impl<'a> Stamping<'a> {
    /// `None` without a master key, or when the inputs digest cannot be made (the render says
    /// why).
    pub(super) fn new(memos: &Path, name: &'a str, part: &Spec, context: &Context<'a>) -> Option<Stamping<'a>> {
        let key = context.setup.memo_key()?;
        let inputs = context.setup.cluster_inputs(part, context.bundle)?;
        let last = memo_cache::load_stamp(memos, name);
        // NB: made as the last parts were, to compare with them.
        let files = last.as_ref().and_then(|last| last.parts.as_ref()).map(|parts| parts.files.clone()).unwrap_or_default();
        let parts = context.setup.part_inputs(part, context.bundle, &files);
        Some(Stamping { key, build: context.setup.memo_build(), name, inputs, parts, setup: context.setup, last })
    }

    /// The last stamp, when it holds for the inputs now, beside records saved at `records`.
    pub(super) fn held(&self, records: u64) -> Option<ClusterStamp> {
        let last = self.last.as_ref()?;
        last.holds(&self.key, &self.build, self.name, &self.inputs, records, self.setup.secret_inputs()).then(|| last.clone())
    }

    /// What the parts of a render of `part` that read `outcomes` are made from, `reading` the
    /// namespaces that read a `fromFile` file: with which file each field was written in, for
    /// those and (when the render read any file) for the rest.
    pub(super) fn inputs_for(
        &self,
        part: &Spec,
        context: &Context<'_>,
        outcomes: &Outcomes,
        mut reading: BTreeSet<String>,
    ) -> Option<Inputs> {
        if outcomes.keys().any(|read| matches!(read, Read::File(..))) {
            reading.insert(REST.to_owned());
        }
        match &self.parts {
            Some(inputs) if inputs.files == reading => Some(inputs.clone()),
            _ => context.setup.part_inputs(part, context.bundle, &reading),
        }
    }

    /// The stamp of a render that read `outcomes` (what each secret input gave it), had `units`
    /// templated units and laid out `layout` from `inputs` ([`Stamping::inputs_for`]), beside
    /// records saved at `records`.
    pub(super) fn stamp(&self, outcomes: &Outcomes, records: u64, units: usize, parts: (Option<&Inputs>, Option<&Layout>)) -> ClusterStamp {
        let stamp = ClusterStamp::of(&self.key, &self.build, self.name, &self.inputs, outcomes);
        let reads = |mac: &mut hmac::Hmac<sha2::Sha256>| absorb_reads(mac, outcomes);
        let (inputs, layout) = parts;
        let parts = inputs.zip(layout).map(|(inputs, layout)| Parts::new(&self.key, self.id(), inputs, layout, &reads));
        ClusterStamp { stamp, records, units, reads: outcomes.keys().cloned().collect(), parts }
    }

    /// The layout of a whole render's `tree`, by part.
    pub(super) fn layout(&self, tree: &crate::tree::Tree) -> Option<Layout> {
        let units = &self.parts.as_ref()?.units;
        let (plan, digests) = tree.laid_out(0)?;
        let ids = plan.components.iter().map(|c| c.id.as_str());
        Some(Layout::of(ids.zip(digests?.iter().copied()), &|namespace| units.contains_key(namespace)))
    }

    /// The namespaces whose objects changed since the last render, and what each secret input
    /// it read gives now, when the rest of the cluster may be kept as it is (see the module
    /// docs): the last stamp's parts hold beside records saved at `records`.
    fn changed(&self, records: u64) -> Option<(Vec<String>, Outcomes, &Parts)> {
        let last = self.last.as_ref().filter(|last| last.records == records)?;
        let parts = last.parts.as_ref()?;
        let outcomes = read_again(&last.reads, self.setup.secret_inputs());
        if !parts.holds(&self.key, self.id(), &|mac| absorb_reads(mac, &outcomes)) {
            return None;
        }
        Some((parts.changed(self.parts.as_ref()?)?, outcomes, parts))
    }

    /// How many templated units the last render had.
    fn last_units(&self) -> Option<usize> {
        self.last.as_ref().map(|last| last.units)
    }

    fn id(&self) -> (&str, &str) {
        (&self.build, self.name)
    }
}

/// What rendering a cluster in part did.
pub(super) enum Partial {
    /// It was rendered in part (or failed, reported as a whole render would).
    Done(Result<(), Failure>),
    /// It cannot be: render it whole, with the memo given back.
    Whole(Saved),
}

/// The files of cluster `name` now and as its records describe them, its last memo, and where
/// it is written.
pub(super) struct Tree<'t> {
    pub(super) current: &'t Current,
    pub(super) records: &'t crate::tree::current::Records,
    pub(super) saved: Saved,
}

/// Renders cluster `name` (`part`) in part when its stamping shows that only some namespaces
/// changed and its files are as its records describe (see the module docs); else gives its memo
/// back, untouched, to render it whole.
///
/// # Errors
///
/// Writing the staged files.
pub(super) fn render(
    part: &Spec,
    (name, last): (&str, bool),
    context: &Context<'_>,
    (stamping, tree): (&Stamping<'_>, Tree<'_>),
    staging: Option<&mut write::Staging>,
    sum: &mut Sum,
) -> anyhow::Result<Partial> {
    let Tree { current, records, saved } = tree;
    // NB: the rest of the cluster keeps the memo's entries as they are, so all must be there (a
    // memo file lost or cut short renders the whole cluster, which makes them again).
    let complete = Some(saved.0.keys().filter(|job| is_templated(job)).count()) == stamping.last_units();
    let found = stamping.changed(records.saved).filter(|_| complete && current.is_described_by(records));
    let (Some((changed, outcomes, parts)), Some(memos)) = (found, context.memos) else { return Ok(Partial::Whole(saved)) };
    let only: BTreeSet<String> = changed.iter().cloned().collect();
    let Some(memo) = context.setup.memo(saved.0, current) else { return Ok(Partial::Whole(load_memo(memos, name))) };
    let memo = memo.with_units(saved.1, context.setup.unit_frames(part, context.bundle)).with_only(only);
    let (built, reads) = pipeline::build_recording(part, context.bundle, context.setup, Some(&memo));
    // NB: a render in part that fails is done again whole, which reports every problem.
    let Ok(Built { mut tree, memo: mut jobs, reused, units: outcomes_now }) = built else {
        return Ok(Partial::Whole(load_memo(memos, name)));
    };
    let Some(layout) = kept_as_laid_out(&tree, current, parts, &changed) else {
        drop((tree, memo));
        return Ok(Partial::Whole(load_memo(memos, name)));
    };
    let templated = jobs.len();
    tree.keep_sealed(&memo);
    let sealed = seal_against(&mut tree, current)?;
    jobs.extend(tree.take_memo_entries());
    let scope = Scope::of(name, &tree);
    let (files, unread) = tree.into_files();
    let changes = current.changes(&files, &unread, &|_| true, &|path| !scope.holds(path));
    let writing = staging.is_some();
    let stats = sum.add(&changes.update, None, staging)?;
    sum.count_kept(current, &changes.update);
    let records = writing.then(|| changes.records(&stats));
    let reading = reading_files(&outcomes_now);
    let namespaces = namespace_entries(Some(&memo), records.as_ref(), outcomes_now, &jobs);
    drop((changes, sealed));
    // NB: the rest of the cluster's entries, then this render's, which replace theirs.
    let (untaken_jobs, mut untaken_units) = memo.into_untaken();
    untaken_units.retain(|(job, _)| unit::parse_job(job).is_none_or(|(_, namespace)| !changed.iter().any(|c| c == namespace)));
    let jobs = crate::sorted::into_map(untaken_jobs.into_iter().chain(jobs).collect());
    let namespaces = crate::sorted::into_map(untaken_units.into_iter().chain(namespaces.unwrap_or_default()).collect());
    let units = jobs.keys().filter(|job| is_templated(job)).count();
    sum.count_part((units - (templated - reused), units), (parts.units.len() - changed.len(), parts.units.len()));
    discard((files, unread), last);
    let mut all = outcomes;
    all.extend(reads);
    let layout = parts.layout_with(&layout);
    let kept = parts.files.iter().filter(|part| **part != REST && !changed.contains(*part)).cloned();
    let inputs = stamping.inputs_for(part, context, &all, kept.chain(reading).collect());
    let stamp = |saved| stamping.stamp(&all, saved, units, (inputs.as_ref(), Some(&layout)));
    save_memo((context, name), records, Some(&stamp), (&jobs, &namespaces), sum);
    discard((jobs, namespaces), last);
    Ok(Partial::Done(Ok(())))
}

/// The namespaces of `outcomes` that read a `fromFile` file.
pub(super) fn reading_files(outcomes: &[unit::Outcome]) -> BTreeSet<String> {
    let file = |read: &Read| matches!(read, Read::File(..));
    let reads = |outcome: &unit::Outcome| match outcome {
        unit::Outcome::Kept { entry, .. } => entry.reads.iter().any(file),
        unit::Outcome::Rendered { outcomes, .. } => outcomes.keys().any(file),
    };
    let job = |outcome: &unit::Outcome| match outcome {
        unit::Outcome::Kept { job, .. } | unit::Outcome::Rendered { job, .. } => unit::parse_job(job).map(|(_, n)| n.to_owned()),
    };
    outcomes.iter().filter(|outcome| reads(outcome)).filter_map(job).collect()
}

/// The layout of a render in part (`tree`, of the namespaces `changed` and the cluster's own
/// components), when it shows that the rest of the cluster's tree stays as it is: each part is
/// laid out as the last render recorded (`parts`), every component waits only for components
/// rendered with it, and every file it lays out is one of `current`'s.
fn kept_as_laid_out(tree: &crate::tree::Tree, current: &Current, parts: &Parts, changed: &[String]) -> Option<Layout> {
    let (plan, digests) = tree.laid_out(0)?;
    let ids: HashSet<&str> = plan.components.iter().map(|c| c.id.as_str()).collect();
    if !plan.components.iter().all(|c| c.depends_on.iter().all(|d| ids.contains(d.as_str()))) {
        return None;
    }
    let rendered: HashSet<&str> = changed.iter().map(String::as_str).collect();
    let layout = Layout::of(plan.components.iter().map(|c| c.id.as_str()).zip(digests?.iter().copied()), &|n| rendered.contains(n));
    if !parts.same_layout(changed, &layout) {
        return None;
    }
    let mut paths = tree.files().keys().chain(tree.kept().keys()).map(String::as_str).chain(tree.pending_paths());
    paths.all(|path| current.path(path).is_some()).then_some(layout)
}

/// The files a render in part stands for: the directories of the components it rendered and the
/// GitOps entries it wrote; every other file of the cluster stays as it is.
struct Scope {
    dirs: Vec<String>,
    gitops: HashSet<String>,
}

impl Scope {
    /// The scope of `tree`, a render in part of cluster `name`: a rendered namespace's
    /// directory whole (its components are all of it), each of the cluster's own components'.
    fn of(name: &str, tree: &crate::tree::Tree) -> Scope {
        let mut dirs: BTreeSet<String> = BTreeSet::new();
        for component in tree.plans().iter().flat_map(|plan| &plan.components) {
            let id = match namespace_of(&component.id) {
                Some(namespace) => format!("namespaces/{namespace}"),
                None => component.id.clone(),
            };
            dirs.insert(format!("{}/", layout::component_dir(name, &id)));
        }
        let gitops = format!("{}/", layout::gitops_dir(name));
        let gitops = tree.files().keys().chain(tree.kept().keys()).filter(|path| path.starts_with(&gitops)).cloned().collect();
        Scope { dirs: dirs.into_iter().collect(), gitops }
    }

    fn holds(&self, path: &str) -> bool {
        self.gitops.contains(path) || self.dirs.iter().any(|dir| path.starts_with(dir.as_str()))
    }
}
