//! `tfrs commit`: load -> build (render, lay out) -> seal against the branch and commit
//! (compare-and-swap) -> push.

use super::Status;
use super::args::CommitArgs;
use super::stages::{Effect, load, report, select};
use crate::git::Author;
use crate::git::commit::{ClusterIds, CommitOptions, KnownIds, Outcome, Push, commit};
use crate::pipeline::{self, Setup};
use crate::render::memo::{Stamper, Table};
use crate::render::unit;
use crate::source::memo_cache;
use crate::spec::{Bundle, Spec};
use anyhow::Context as _;
use std::io::Write;
use std::path::Path;

/// How many times a moved branch or a rejected push is retried.
const ATTEMPTS: usize = 5;

fn short(oid: git2::Oid) -> String {
    oid.to_string()[..12].to_owned()
}

/// Runs `tfrs commit`.
pub fn run(args: &CommitArgs, stdout: &mut dyn Write) -> anyhow::Result<Status> {
    let Some((spec, bundle, repo, is_url)) = load_and_open(args)? else {
        return Ok(Status::Failure);
    };
    let author = Author::resolve(args.author.as_deref(), &repo, &|name| std::env::var(name).ok())?;
    let push = (args.push || is_url)
        .then(|| Push { remote: if is_url { "origin".to_owned() } else { args.remote.clone() }, follow_remote: is_url });
    let branch = match &args.branch {
        Some(branch) => branch.clone(),
        None => crate::git::default_branch(&repo, is_url)?,
    };
    let source = crate::git::provenance::source(&args.inputs);
    // The memo of the last commit to this branch, checked against the files of its tip by
    // their Git blob ids: unchanged units are neither templated nor read.
    let memos = (!args.no_memo).then(|| memo_cache::open(&repo.path().join("tfrs-branches").join(&branch), true)).flatten();
    // The tree is built once; each attempt only seals it against the branch as it then is.
    let Some(WithMemo { mut tree, memo: mut jobs, reused, known, units }) =
        build_with_memo(&spec, &bundle, &args.settings, &repo, &branch, memos.as_deref())?
    else {
        return Ok(Status::Failure);
    };
    let mut trailers = crate::git::provenance::trailers(source.as_ref(), &super::version::line());
    trailers.extend(crate::git::provenance::sealer_trailers(&tree.sealers()));
    let options = CommitOptions {
        branch: branch.clone(),
        message: args.message.clone(),
        author,
        push: push.clone(),
        attempts: ATTEMPTS,
        trailers,
        known,
    };
    let outcome = commit(&repo, &options, &mut tree, &mut crate::source::inputs::system_rng())
        .with_context(|| format!("cannot commit to `{branch}` in `{}`", args.repo))?;
    // NB: how much of the templating the memo saved (not said without a memo).
    let note = if jobs.is_empty() { String::new() } else { format!(" ({reused} of {} templated units reused)", jobs.len()) };
    if let Some(memos) = memos.as_deref() {
        jobs.extend(tree.take_memo_entries());
        let ids = match &outcome {
            Outcome::Committed { ids, .. } | Outcome::NoChanges { ids, .. } => ids.as_slice(),
        };
        // NB: the namespaces' entries are made from the files as committed, by the blob ids the
        // commit computed (a file's content id), not hashed again.
        let content = |path: &str| committed_id(ids, path);
        let namespaces = units.map(|(stamper, outcomes)| unit::record(&stamper, outcomes, &jobs, &content)).unwrap_or_default();
        // NB: the tree (its plaintext zeroized) is dropped beside the memo's writing, and
        // before the process ends.
        let dropping = std::thread::spawn(move || drop(tree));
        save_memo(memos, &spec, (&jobs, &namespaces), ids);
        let _ = dropping.join();
        std::mem::forget(namespaces);
    }
    let remote = push.map(|p| p.remote).unwrap_or_default();
    // NB: the process ends next; freeing the specs, the memo's entries and the branch's ids one
    // object at a time is not worth its time (the tree, which holds plaintext Secrets, is
    // dropped and zeroized as usual).
    std::mem::forget((spec, bundle, jobs, options));
    print_outcome(stdout, outcome, &branch, &remote, &note, args.quiet)
}

/// The content id of the file at `path` in the cluster directories a commit gave `ids` of.
fn committed_id(ids: &[ClusterIds], path: &str) -> Option<crate::object::ContentId> {
    let files = &ids.iter().find(|ids| path.strip_prefix(ids.dir.as_str()).is_some_and(|rest| rest.starts_with('/')))?.files;
    let at = files.binary_search_by(|(file, _)| file.as_str().cmp(path)).ok()?;
    crate::git::pack::content_id(files[at].1)
}

/// The selected specs and the repository (and whether it was given as a URL), or `None` after
/// reporting invalid specs.
fn load_and_open(args: &CommitArgs) -> anyhow::Result<Option<(Spec, Bundle, git2::Repository, bool)>> {
    // NB: a local repository is opened while the specs load (the first use of libgit2 sets up
    // its TLS library, tens of milliseconds); its errors come after the specs'. A remote one is
    // fetched only for valid specs.
    let (loaded, opened) = std::thread::scope(|scope| {
        let opening = (!crate::git::remote::is_url(&args.repo)).then(|| scope.spawn(|| crate::git::open(&args.repo)));
        let loaded = load(&args.inputs, &args.settings.overlays, Effect::Writes);
        (loaded, opening.map(|opening| opening.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))))
    });
    let Some((spec, bundle)) = loaded? else {
        return Ok(None);
    };
    let spec = select(spec, &bundle, &args.settings.clusters)?;
    let (repo, is_url) = opened.unwrap_or_else(|| crate::git::open(&args.repo))?;
    Ok(Some((spec, bundle, repo, is_url)))
}

/// The result line (with `note` at its end), what changed unless `quiet`, the push.
fn print_outcome(stdout: &mut dyn Write, outcome: Outcome, branch: &str, remote: &str, note: &str, quiet: bool) -> anyhow::Result<Status> {
    match outcome {
        Outcome::NoChanges { tip, pushed, .. } => {
            let at = tip.map(|t| format!(" at {}", short(t))).unwrap_or_default();
            writeln!(stdout, "no changes: `{branch}`{at} already holds this render{note}")?;
            if pushed {
                writeln!(stdout, "pushed `{branch}` to `{remote}`")?;
            }
            Ok(Status::Success)
        }
        Outcome::Committed { commit, diff, attempt, pushed, warnings, .. } => {
            let retried = if attempt > 1 { format!(" (attempt {attempt}: the branch moved meanwhile)") } else { String::new() };
            writeln!(
                stdout,
                "committed {} to `{}`: {}{retried}{note}",
                short(commit),
                branch,
                crate::tree::diff::counts_text(&diff.totals())
            )?;
            if !quiet {
                write!(stdout, "{}", diff.summary())?;
            }
            if pushed {
                writeln!(stdout, "pushed `{branch}` to `{remote}`")?;
            }
            for warning in warnings {
                eprintln!("warning: {warning}");
            }
            Ok(Status::Success)
        }
    }
}

/// A tree built with the memo.
struct WithMemo {
    tree: crate::tree::Tree,
    /// This render's memo entries.
    memo: Table,
    /// How many of them the memo gave back.
    reused: usize,
    /// The blob ids read from the branch's tip.
    known: Option<KnownIds>,
    /// What the tenant namespaces' entries are made from, and the memo's stamper (with a memo).
    units: Option<(Stamper, Vec<unit::Outcome>)>,
}

/// Builds the tree of `spec` with a memo from `memos` (none without), checked against the files
/// of `branch`'s tip in `repo` by their Git blob ids; returns it with this render's memo
/// entries, how many of them the memo gave back and the blob ids it read (for the commit over
/// the same tip), or `None` after reporting a failure.
fn build_with_memo(
    spec: &Spec,
    bundle: &Bundle,
    settings: &super::args::RenderSettings,
    repo: &git2::Repository,
    branch: &str,
    memos: Option<&Path>,
) -> anyhow::Result<Option<WithMemo>> {
    let setup = Setup::new(settings.templates.as_deref(), settings.master_key_file.as_deref(), settings.allow_outside)?;
    let mut jobs = crate::render::memo::Previous::default();
    let mut namespaces = unit::Previous::default();
    let mut known = None;
    if let Some(memos) = memos {
        let tip = repo.find_reference(&format!("refs/heads/{branch}")).ok().and_then(|r| r.peel_to_tree().ok());
        // NB: the memo's files are read on a thread of their own while the branch's tree is
        // walked here, or the ids the last commit kept of it read (the repository is not shared
        // across threads).
        let names: Vec<&str> = spec.clusters.iter().map(|c| c.name()).collect();
        std::thread::scope(|scope| -> anyhow::Result<()> {
            let loading = scope.spawn(|| {
                let mut loaded = (crate::render::memo::Previous::default(), unit::Previous::default());
                for name in &names {
                    loaded.0.extend(memo_cache::load_jobs(memos, name));
                    loaded.1.extend(memo_cache::load_units(memos, name));
                }
                loaded
            });
            if let Some(tip) = tip.as_ref() {
                let mut dirs: Vec<String> = names.iter().map(|name| crate::layout::cluster_dir(name)).collect();
                dirs.sort();
                // NB: a cluster directory whose tree is the one the last commit made is not read:
                // its ids are those that commit kept.
                let cached = |dir: &str, tree| memo_cache::load_ids(memos, dir.strip_prefix("clusters/")?, tree);
                known = Some(KnownIds::read_cached(repo, tip, dirs, &cached)?);
            }
            (jobs, namespaces) = loading.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            Ok(())
        })?;
    }
    // NB: a branch without a tip has no files for the memo to keep.
    let none = crate::tree::Kept::new();
    let contents: &dyn crate::render::memo::Contents = known.as_ref().map_or(&none, |known| known);
    let memo = memos.and_then(|_| setup.memo(jobs, contents)).map(|memo| memo.with_units(namespaces, setup.unit_frames(spec, bundle)));
    match pipeline::build(spec, bundle, &setup, memo.as_ref()) {
        Ok(mut built) => {
            // NB: a sealed file the memo vouches for enters the commit by its blob id, unread.
            if let Some(memo) = &memo {
                built.tree.keep_sealed(memo);
            }
            let units = memo.as_ref().map(|memo| (memo.stamper(), built.units));
            Ok(Some(WithMemo { tree: built.tree, memo: built.memo, reused: built.reused, known, units }))
        }
        Err(failure) => report(failure, bundle, Effect::Writes).map(|()| None),
    }
}

/// Saves this commit's memo entries and the ids of its cluster directories, per cluster (a memo
/// that cannot be saved costs the next commit time, never correctness: every stamp is checked
/// against the branch's files, and the ids are taken only for the tree they were made for, from
/// a file whose last line counts them).
fn save_memo(memos: &Path, spec: &Spec, (jobs, namespaces): (&Table, &unit::Table), ids: &[ClusterIds]) {
    let (mut staged, mut with_ids) = (memo_cache::Staged::default(), memo_cache::Staged::default());
    for cluster in &spec.clusters {
        let prefix = format!("{}/", cluster.name());
        let saved = Some((&memo_cache::Slice::new(jobs, &prefix), &memo_cache::Slice::new(namespaces, &prefix)));
        let dir = crate::layout::cluster_dir(cluster.name());
        // NB: the ids are written beside the entries.
        let (ids, entries) = rayon::join(
            || ids.iter().find(|ids| ids.dir == dir).map_or(Ok(()), |ids| with_ids.add_ids(memos, cluster.name(), ids)),
            || staged.add(memos, cluster.name(), saved, &crate::tree::current::Records::default(), None),
        );
        if let Err(error) = ids.and(entries) {
            eprintln!("warning: the render memo of cluster `{}` was not saved: {error}", cluster.name());
            return;
        }
    }
    staged.absorb(with_ids);
    if let Err(error) = staged.commit() {
        eprintln!("warning: the render memo was not saved: {error}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_committed_file_s_content_id_is_its_blob_id() {
        let id = |n: u8| git2::Oid::from_bytes(&[n; 20]).expect("id");
        let cluster = |dir: &str, files: &[(&str, u8)]| ClusterIds {
            dir: dir.to_owned(),
            tree: id(0),
            files: files.iter().map(|&(path, n)| (path.to_owned(), id(n))).collect(),
            trees: Vec::new(),
        };
        let ids = [
            cluster("clusters/c", &[("clusters/c/a.yaml", 1), ("clusters/c/b/x.yaml", 2)]),
            cluster("clusters/cd", &[("clusters/cd/a.yaml", 3)]),
        ];
        let content = |path| committed_id(&ids, path).map(|content| content.0);
        assert_eq!(content("clusters/c/b/x.yaml"), Some([2; 20]));
        assert_eq!(content("clusters/cd/a.yaml"), Some([3; 20]), "the directory whose name it starts with");
        assert_eq!(content("clusters/c/b.yaml"), None);
        assert_eq!(content("clusters/other/a.yaml"), None);
    }
}
