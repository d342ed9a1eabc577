//! `commit`: write the rendered tree onto a branch as one commit, with a compare-and-swap on
//! the parent that was read, and optionally push it without force.
//!
//! # Guarantees
//!
//! - Exactly `clusters/<cluster>/` of each rendered cluster is replaced; every other path of the
//!   parent's tree is kept.
//! - No commit is made when the new tree equals the parent's.
//! - The branch only moves from the commit that was read to its child: if another writer moved
//!   it meanwhile, the branch is re-read, the rendered tree sealed again against it (reusing its
//!   ciphertext; nothing is rendered again) and re-applied, up to [`CommitOptions::attempts`]
//!   times, at once: an attempt costs milliseconds, so a loser's retry finds the winner's
//!   commit already in place. A push is never forced: a rejected push fetches and starts over
//!   on the new remote tip.
//!
//! # Caveats
//!
//! - In a repository with a work tree whose `HEAD` is the branch, the rendered directories of
//!   the work tree and index are overwritten to match the commit (tfrs owns them); other paths
//!   are left alone.

use super::pack::{self, Object};
use super::remote::{self, Pushed};
use super::{Author, Error, Result, previous_object};
use crate::layout::cluster_dirs;
use crate::tree::diff::{self, Diff};
use crate::tree::{self, Files};
use git2::build::CheckoutBuilder;
use git2::{ErrorCode, ObjectType, OdbLookupFlags, Oid, Repository, Signature};
use rand::CryptoRng;
use std::borrow::Cow;
use std::collections::{BTreeSet, HashSet};

/// Where to push.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Push {
    /// The remote's name (`origin`).
    pub remote: String,
    /// Build on the remote tip whatever the local branch holds (for the clone cache, which
    /// only mirrors the remote).
    pub follow_remote: bool,
}

/// What to commit and how.
pub struct CommitOptions {
    /// The branch (`main`).
    pub branch: String,
    /// The subject line; `None` for a generated one.
    pub message: Option<String>,
    /// Author and committer.
    pub author: Author,
    /// Push after committing.
    pub push: Option<Push>,
    /// How many times to re-read and re-apply when another writer moved the branch.
    pub attempts: usize,
    /// Trailers ending the message (provenance: the specs' commit, the tfrs version); the
    /// clusters of the commit are added to them.
    pub trailers: Vec<(String, String)>,
    /// The blob ids the caller already read from the branch's tree, if any: a commit over that
    /// same tree does not read them again.
    pub known: Option<KnownIds>,
}

impl Default for CommitOptions {
    fn default() -> Self {
        CommitOptions {
            branch: "main".to_owned(),
            message: None,
            author: Author { name: "tfrs".to_owned(), email: "tfrs@localhost".to_owned() },
            push: None,
            attempts: 5,
            trailers: Vec::new(),
            known: None,
        }
    }
}

/// How a commit ended.
#[derive(Debug)]
pub enum Outcome {
    /// The rendered tree equals the branch's; nothing was committed.
    NoChanges {
        /// The branch's tip, if it exists.
        tip: Option<Oid>,
        /// Whether local commits were pushed (the local branch was ahead of the remote).
        pushed: bool,
        /// The ids of the rendered cluster directories, as the branch holds them.
        ids: Vec<ClusterIds>,
    },
    /// A commit was made (and pushed, if asked).
    Committed {
        /// The new commit.
        commit: Oid,
        /// Its parent.
        parent: Option<Oid>,
        /// What changed.
        diff: Diff,
        /// The attempt that landed (1 when nobody raced us).
        attempt: usize,
        /// Whether it was pushed.
        pushed: bool,
        /// Problems after the commit landed (the local branch or work tree not updated).
        warnings: Vec<String>,
        /// The ids of the rendered cluster directories of the new commit.
        ids: Vec<ClusterIds>,
    },
}

fn branch_ref(branch: &str) -> String {
    format!("refs/heads/{branch}")
}

fn tip(repo: &Repository, name: &str) -> Result<Option<Oid>> {
    match repo.refname_to_id(name) {
        Ok(oid) => Ok(Some(oid)),
        Err(error) if error.code() == ErrorCode::NotFound => Ok(None),
        Err(source) => Err(Error::Resolve { name: name.to_owned(), source }),
    }
}

/// The base to build on, given the local and the remote tips.
fn choose(repo: &Repository, branch: &str, local: Option<Oid>, remote: Option<Oid>, push: &Push) -> Result<Option<Oid>> {
    let (Some(local), Some(remote_tip)) = (local, remote) else { return Ok(remote.or(local)) };
    if local == remote_tip || push.follow_remote {
        return Ok(Some(remote_tip));
    }
    let descends = |a, b| repo.graph_descendant_of(a, b).map_err(|source| Error::Resolve { name: branch.to_owned(), source });
    if descends(local, remote_tip)? {
        Ok(Some(local))
    } else if descends(remote_tip, local)? {
        Ok(Some(remote_tip))
    } else {
        Err(Error::Diverged { branch: branch.to_owned(), remote: push.remote.clone() })
    }
}

/// The commit object, byte for byte as libgit2's `git_commit_create` writes it.
fn commit_object(tree: Oid, parent: Option<Oid>, signature: &Signature<'_>, message: &str) -> Result<Object<'static>, git2::Error> {
    let mut data = format!("tree {tree}\n").into_bytes();
    if let Some(parent) = parent {
        data.extend_from_slice(format!("parent {parent}\n").as_bytes());
    }
    let when = signature.when();
    let sign = if when.offset_minutes() < 0 || when.sign() == '-' { '-' } else { '+' };
    let offset = when.offset_minutes().unsigned_abs();
    for header in ["author", "committer"] {
        data.extend_from_slice(format!("{header} ").as_bytes());
        data.extend_from_slice(signature.name_bytes());
        data.extend_from_slice(b" <");
        data.extend_from_slice(signature.email_bytes());
        data.extend_from_slice(format!("> {} {sign}{:02}{:02}\n", when.seconds(), offset / 60, offset % 60).as_bytes());
    }
    data.push(b'\n');
    data.extend_from_slice(message.as_bytes());
    Object::new(ObjectType::Commit, Cow::Owned(data))
}

/// Writes the objects the repository lacks as one pack (see [`pack`]).
fn store(repo: &Repository, objects: Vec<Object<'_>>) -> Result<()> {
    let odb = repo.odb().map_err(Error::Write)?;
    let mut seen = HashSet::with_capacity(objects.len());
    // No refresh per missing object: one missed because another writer packed it meanwhile is
    // only written twice.
    let new: Vec<Object<'_>> =
        objects.into_iter().filter(|object| seen.insert(object.id) && !odb.exists_ext(object.id, OdbLookupFlags::NO_REFRESH)).collect();
    pack::write(repo, &new).map_err(Error::Pack)?;
    Ok(())
}

fn message(options: &CommitOptions, files: &Files, diff: &Diff) -> String {
    let clusters: Vec<String> = cluster_dirs(files).iter().map(|d| d.trim_start_matches("clusters/").to_owned()).collect();
    // NB: the subject names the clusters the commit changes; the trailer every cluster rendered.
    let changed: BTreeSet<&str> = diff.entries.iter().map(|entry| entry.cluster.as_str()).filter(|c| !c.is_empty()).collect();
    let named = if changed.is_empty() { clusters.join(", ") } else { changed.into_iter().collect::<Vec<_>>().join(", ") };
    let subject = options.message.clone().unwrap_or_else(|| format!("tfrs: render {named} ({})", diff::counts_text(&diff.totals())));
    let mut message = format!("{}\n\n{}", subject.trim_end(), diff.summary());
    if !options.trailers.is_empty() {
        // NB: the last paragraph, `Key: value` lines only: what git reads as trailers.
        message = format!("{}\n\n", message.trim_end());
        for (key, value) in options.trailers.iter().chain(std::iter::once(&(super::provenance::CLUSTERS.to_owned(), clusters.join(", ")))) {
            message.push_str(&format!("{key}: {value}\n"));
        }
    }
    message
}

/// The lock file Git (and libgit2) takes to update `branch`.
fn ref_lock(repo: &Repository, branch: &str) -> std::path::PathBuf {
    repo.path().join(format!("{}.lock", branch_ref(branch)))
}

/// Moves `refs/heads/<branch>` from `from` to `to`; `Ok(false)` when another writer got there
/// first.
fn compare_and_swap(repo: &Repository, branch: &str, from: Option<Oid>, to: Oid) -> Result<bool> {
    let name = branch_ref(branch);
    let result = match from {
        Some(from) => repo.reference_matching(&name, to, true, from, "tfrs commit"),
        None => repo.reference(&name, to, false, "tfrs commit"),
    };
    match result {
        Ok(_) => Ok(true),
        Err(error) if matches!(error.code(), ErrorCode::Modified | ErrorCode::Exists | ErrorCode::Locked) => Ok(false),
        Err(source) => Err(Error::UpdateRef { branch: branch.to_owned(), source }),
    }
}

/// Brings the rendered directories of a checked-out branch's work tree and index up to date.
///
/// Commits of other clusters into this repository may run at the same time, each bringing its
/// own directories up to date: without care, each would read the index, change its entries
/// and write it back, and the last would drop what the others wrote. So this runs under a lock
/// on the repository's Git directory, reads the index again once it holds it, and checks the
/// directories out of the branch as it is then (which holds this commit, or one made on it).
///
/// With `repair` (nothing was committed, but a run stopped after it moved the branch may have
/// left the directories half-written), files of those directories that the branch does not
/// hold are removed too, and their index entries are made again from the files: a checkout
/// only looks at paths whose contents differ, not at index entries that went missing.
fn sync_worktree(repo: &Repository, branch: &str, dirs: &[String], repair: bool) -> Result<(), git2::Error> {
    if !checked_out(repo, branch)? {
        return Ok(());
    }
    let _lock = lock_git_dir(repo)?;
    let mut index = repo.index()?;
    index.read(true)?;
    let tree = repo.find_commit(repo.refname_to_id(&branch_ref(branch))?)?.tree()?;
    let mut checkout = CheckoutBuilder::new();
    checkout.force().remove_untracked(repair);
    for dir in dirs {
        checkout.path(dir);
    }
    repo.checkout_tree(tree.as_object(), Some(&mut checkout))?;
    if repair {
        index.read(true)?;
        index.update_all(dirs, None)?;
        index.add_all(dirs, git2::IndexAddOption::DEFAULT, None)?;
        index.write()?;
    }
    Ok(())
}

/// Brings the work tree and index of checked-out `branch` from the branch's commit to `commit`
/// (made on the remote's tip, which the local branch does not hold yet) as `git merge
/// --ff-only` would, before the branch moves: a safe checkout, so a file changed by hand that
/// the move would change stops it (the reason is returned; the branch is then left where it
/// is). Without it the index would keep the old commit's entries of every path the remote
/// changed, and a plain `git commit` would revert them.
fn fast_forward_worktree(repo: &Repository, branch: &str, commit: Oid) -> std::result::Result<(), String> {
    let result = (|| -> std::result::Result<(), git2::Error> {
        if checked_out(repo, branch)? {
            let _lock = lock_git_dir(repo)?;
            repo.index()?.read(true)?;
            let tree = repo.find_commit(commit)?.tree()?;
            let mut checkout = CheckoutBuilder::new();
            checkout.safe();
            repo.checkout_tree(tree.as_object(), Some(&mut checkout))?;
        }
        Ok(())
    })();
    result.map_err(|error| error.message().to_owned())
}

/// Seals `tree` against the branch and commits it (see the module docs).
///
/// # Errors
///
/// Repository, fetch and push failures; a branch that kept moving (or a push kept rejected)
/// for every attempt; a local branch diverged from the remote; a Secret that cannot be sealed.
pub fn commit<R: CryptoRng + ?Sized>(repo: &Repository, options: &CommitOptions, tree: &mut tree::Tree, rng: &mut R) -> Result<Outcome> {
    commit_with(repo, options, tree, rng, &|_| {})
}

/// One attempt's end: done, or start over because another writer moved the branch (or the
/// remote refused the push, with its reason).
enum Attempt {
    Done(Outcome),
    Retry(Option<String>),
}

/// [`commit`], calling `before_update` with the attempt number just before the branch (or the
/// remote) is updated: the tests play a concurrent writer there.
pub(crate) fn commit_with<R: CryptoRng + ?Sized>(
    repo: &Repository,
    options: &CommitOptions,
    tree: &mut tree::Tree,
    rng: &mut R,
    before_update: &dyn Fn(usize),
) -> Result<Outcome> {
    let attempts = options.attempts.max(1);
    let mut last_rejection = String::new();
    let lock = ref_lock(repo, &options.branch);
    for attempt in 1..=attempts {
        match try_commit(repo, options, tree, rng, attempt, before_update)? {
            Attempt::Done(outcome) => return Ok(outcome),
            Attempt::Retry(rejection) => last_rejection = rejection.unwrap_or(last_rejection),
        }
        // NB: another writer holds the branch's lock: give it time to finish.
        if lock.exists() && attempt < attempts {
            std::thread::sleep(std::time::Duration::from_millis(100 * attempt as u64));
        }
    }
    let branch = options.branch.clone();
    if lock.exists() {
        return Err(Error::Locked { branch, lock, attempts });
    }
    Err(match &options.push {
        Some(push) if !last_rejection.is_empty() => Error::PushRejected { remote: push.remote.clone(), attempts, reason: last_rejection },
        _ => Error::Contended { branch, attempts },
    })
}

/// The commit (if any) of `tree` over `base`: the new tip, what changed and the ids of the
/// rendered cluster directories.
struct Prepared {
    tip: Option<Oid>,
    diff: Option<Diff>,
    ids: Vec<ClusterIds>,
}

fn try_commit<R: CryptoRng + ?Sized>(
    repo: &Repository,
    options: &CommitOptions,
    tree: &mut tree::Tree,
    rng: &mut R,
    attempt: usize,
    before_update: &dyn Fn(usize),
) -> Result<Attempt> {
    let branch = options.branch.as_str();
    let remote_tip = match &options.push {
        Some(push) => remote::fetch(repo, &push.remote, branch)?,
        None => None,
    };
    let local_tip = tip(repo, &branch_ref(branch))?;
    let base = match &options.push {
        Some(push) => choose(repo, branch, local_tip, remote_tip, push)?,
        None => local_tip,
    };
    let prepared = prepare(repo, options, tree, rng, base)?;
    before_update(attempt);
    let mut pushed = false;
    if let (Some(push), Some(new_tip)) = (&options.push, prepared.tip)
        && Some(new_tip) != remote_tip
    {
        match remote::push(repo, &push.remote, branch, new_tip, remote_tip)? {
            Pushed::Accepted => pushed = true,
            Pushed::Rejected(reason) => return Ok(Attempt::Retry(Some(reason))),
        }
    }
    let mut warnings = Vec::new();
    let dirs = cluster_dirs(tree.files());
    if let Some(new_tip) = prepared.tip
        && Some(new_tip) != local_tip
    {
        if let Err(reason) = move_local(repo, options, (base, local_tip), new_tip)? {
            if !pushed {
                return Ok(Attempt::Retry(None));
            }
            warnings.push(format!("the commit was pushed, but local `{branch}` was left as it is: {reason}"));
        } else if let Err(error) = sync_worktree(repo, branch, &dirs, false) {
            warnings.push(format!("the work tree was not updated: {}", error.message()));
        }
    } else if let Err(error) = sync_worktree(repo, branch, &dirs, true) {
        // NB: nothing to commit, but a run stopped after it moved the branch may have left the
        // rendered directories of the work tree and index behind: they are brought up to date.
        eprintln!("warning: the work tree was not updated: {}", error.message());
    }
    let ids = prepared.ids;
    Ok(Attempt::Done(match (prepared.diff, prepared.tip) {
        (Some(diff), Some(commit)) => Outcome::Committed { commit, parent: base, diff, attempt, pushed, warnings, ids },
        _ => Outcome::NoChanges { tip: base, pushed, ids },
    }))
}

/// Moves the local branch from `local_tip` to `new_tip`, made on `base` (the two of `tips`):
/// with a compare-and-swap, or (following a remote) by force; where the branch is checked out
/// and `base` is a remote tip it does not hold, after the work tree followed. `Err(reason)` when
/// it was not moved.
fn move_local(
    repo: &Repository,
    options: &CommitOptions,
    (base, local_tip): (Option<Oid>, Option<Oid>),
    new_tip: Oid,
) -> Result<std::result::Result<(), String>> {
    let branch = options.branch.as_str();
    // NB: on a remote tip the local branch does not hold, the work tree follows first.
    let ready = if base == local_tip { Ok(()) } else { fast_forward_worktree(repo, branch, new_tip) };
    Ok(match ready {
        Err(reason) => Err(reason),
        Ok(()) if options.push.as_ref().is_some_and(|p| p.follow_remote) => {
            repo.reference(&branch_ref(branch), new_tip, true, "tfrs commit").map(drop).map_err(|e| e.message().to_owned())
        }
        Ok(()) if compare_and_swap(repo, branch, local_tip, new_tip)? => Ok(()),
        Ok(()) => Err("it moved meanwhile".to_owned()),
    })
}

/// Whether `repo` has a work tree whose `HEAD` is `branch`.
fn checked_out(repo: &Repository, branch: &str) -> std::result::Result<bool, git2::Error> {
    if repo.is_bare() {
        return Ok(false);
    }
    Ok(repo.find_reference("HEAD")?.symbolic_target() == Ok(Some(branch_ref(branch).as_str())))
}

/// A lock on `repo`'s Git directory, held until dropped: the steps that write its index take
/// turns (a run that waits says so).
fn lock_git_dir(repo: &Repository) -> std::result::Result<std::fs::File, git2::Error> {
    let waiting = || eprintln!("waiting for another tfrs run that updates the work tree of `{}`", repo.path().display());
    let lock = std::fs::File::open(repo.path()).and_then(|dir| crate::tree::write::lock_in_turn(&dir, waiting).map(|()| dir));
    lock.map_err(|error| git2::Error::from_str(&format!("cannot lock `{}`: {error}", repo.path().display())))
}

/// Seals `tree` against `base` and writes the commit of it over `base` (its objects stored,
/// no ref moved); no commit when the tree equals the base's.
fn prepare<R: CryptoRng + ?Sized>(
    repo: &Repository,
    options: &CommitOptions,
    tree: &mut tree::Tree,
    rng: &mut R,
    base: Option<Oid>,
) -> Result<Prepared> {
    let read = |source| Error::ReadTree { name: options.branch.clone(), source };
    // No base: an empty tree, which is not written (nor needed) anywhere.
    let base_tree = base.map(|oid| repo.find_commit(oid).and_then(|c| c.tree())).transpose().map_err(read)?;
    let previous = |path: &str| base_tree.as_ref().and_then(|tree| previous_object(repo, tree, path));
    tree.seal(&previous, rng).map_err(|e| Error::Seal(Box::new(e)))?;
    let (files, kept) = (tree.files(), tree.kept());
    let old = base_ids(repo, base_tree.as_ref(), cluster_dirs(files), options.known.as_ref()).map_err(read)?;
    let built = build_tree(repo, base_tree.as_ref(), files, kept, &old).map_err(Error::Write)?;
    if built.root == tree_id(base_tree.as_ref()).map_err(Error::Write)? {
        return Ok(Prepared { tip: base, diff: None, ids: built.clusters });
    }
    let (old, new) = changed_files(repo, files, kept, &built.differ, &old.ids).map_err(read)?;
    let mut diff = diff::changes(&old, &new);
    if let Some(commit) = base.and_then(|oid| repo.find_commit(oid).ok()) {
        let clusters = tree.sealers().into_iter().map(|(cluster, ..)| cluster).collect();
        let renders = super::provenance::last_renders(&commit, &clusters);
        let old_sealers =
            renders.iter().filter_map(|(cluster, trailers)| super::provenance::sealers(trailers).remove_entry(cluster)).collect();
        diff.mark_resealed(&tree.resealed(&old_sealers, &previous));
    }
    let signature = Signature::now(&options.author.name, &options.author.email).map_err(Error::Write)?;
    let commit = commit_object(built.root, base, &signature, &message(options, files, &diff)).map_err(Error::Write)?;
    let oid = commit.id;
    // The pack is on disk before any ref moves.
    store(repo, std::iter::once(commit).chain(built.objects).collect())?;
    Ok(Prepared { tip: Some(oid), diff: Some(diff), ids: built.clusters })
}

mod trees;

pub use trees::{ClusterIds, KnownIds};
use trees::{base_ids, build_tree, changed_files, tree_id};

#[cfg(test)]
mod tests;
