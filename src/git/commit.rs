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
use super::{Author, Error, Result, file_ids, previous_object};
use crate::layout::cluster_dirs;
use crate::tree::diff::{self, Diff};
use crate::tree::{self, Files, Kept};
use git2::build::CheckoutBuilder;
use git2::{ErrorCode, ObjectType, OdbLookupFlags, Oid, Repository, Signature, Tree};
use rand::CryptoRng;
use rayon::prelude::*;
use std::borrow::Cow;
use std::collections::{BTreeMap, HashSet};

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

/// The blob ids of the files below some cluster directories of one Git tree.
#[derive(Debug, Clone)]
pub struct KnownIds {
    /// The tree they were read from.
    pub tree: Oid,
    /// The cluster directories read (`clusters/<name>`), sorted.
    pub dirs: Vec<String>,
    /// Every file's blob id, by path.
    pub ids: BTreeMap<String, Oid>,
}

/// The memo checks its stamps against the branch's files by these ids (a blob id is the file's
/// content id), so they are read once, for both.
impl crate::render::memo::Contents for KnownIds {
    fn content_id(&self, path: &str) -> Option<crate::object::ContentId> {
        self.ids.get(path).and_then(|oid| Some(crate::object::ContentId(oid.as_bytes().try_into().ok()?)))
    }
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

/// Tree entry modes, as git writes them.
const TREE_MODE: i32 = 0o040_000;
const BLOB_MODE: i32 = 0o100_644;

/// A tree entry: name, mode, id.
type TreeEntry<'a> = (Cow<'a, [u8]>, i32, Oid);

/// The tree object holding `entries`, sorted as git sorts them (a tree's name as if it ended
/// in `/`).
fn tree_object(mut entries: Vec<TreeEntry<'_>>) -> Result<Object<'static>, git2::Error> {
    let key = |(name, mode, _): &TreeEntry<'_>| {
        let slash: &[u8] = if *mode == TREE_MODE { b"/" } else { b"" };
        name.iter().chain(slash).copied().collect::<Vec<u8>>()
    };
    entries.sort_by_cached_key(key);
    let mut data = Vec::with_capacity(entries.iter().map(|(name, _, _)| name.len() + 28).sum());
    for (name, mode, id) in &entries {
        data.extend_from_slice(format!("{mode:o} ").as_bytes());
        data.extend_from_slice(name);
        data.push(0);
        data.extend_from_slice(id.as_bytes());
    }
    Object::new(ObjectType::Tree, Cow::Owned(data))
}

/// A directory of the rendered tree: its entries by name.
#[derive(Default)]
struct Dir<'a> {
    entries: BTreeMap<&'a str, Node<'a>>,
}

enum Node<'a> {
    Blob(Oid),
    Dir(Dir<'a>),
}

impl<'a> Dir<'a> {
    /// Adds the blob `id` at `path` (relative, `/`-separated).
    fn insert(&mut self, path: &'a str, id: Oid) -> Result<(), git2::Error> {
        let (name, rest) = path.split_once('/').map_or((path, None), |(name, rest)| (name, Some(rest)));
        if name.is_empty() || name == "." || name == ".." || name.eq_ignore_ascii_case(".git") || name.contains('\0') {
            return Err(git2::Error::from_str(&format!("`{path}`: `{name}` cannot be a file or directory name in git")));
        }
        let conflict = || git2::Error::from_str(&format!("`{name}` is both a file and a directory"));
        match rest {
            None => match self.entries.insert(name, Node::Blob(id)) {
                Some(Node::Dir(_)) => Err(conflict()),
                _ => Ok(()),
            },
            Some(rest) => match self.entries.entry(name).or_insert_with(|| Node::Dir(Dir::default())) {
                Node::Dir(dir) => dir.insert(rest, id),
                Node::Blob(_) => Err(conflict()),
            },
        }
    }

    /// Pushes the tree objects of this directory and below onto `objects`; returns its id.
    fn write(self, objects: &mut Vec<Object<'_>>) -> Result<Oid, git2::Error> {
        let mut entries = Vec::with_capacity(self.entries.len());
        for (name, node) in self.entries {
            let (mode, id) = match node {
                Node::Blob(id) => (BLOB_MODE, id),
                Node::Dir(dir) => (TREE_MODE, dir.write(objects)?),
            };
            entries.push((Cow::Borrowed(name.as_bytes()), mode, id));
        }
        let tree = tree_object(entries)?;
        let id = tree.id;
        objects.push(tree);
        Ok(id)
    }
}

/// The id of `tree`, or of the empty tree (which need not be in the repository).
fn tree_id(tree: Option<&Tree<'_>>) -> Result<Oid, git2::Error> {
    tree.map_or_else(|| Ok(tree_object(Vec::new())?.id), |tree| Ok(tree.id()))
}

/// A new tree built in memory, nothing written yet.
struct Built<'a> {
    /// The root tree.
    root: Oid,
    /// Every blob and tree of the rendered directories and the trees above them (the
    /// repository may hold some already; duplicates are possible).
    objects: Vec<Object<'a>>,
    /// The blob of each rendered file under the cluster directories, by path.
    ids: BTreeMap<&'a str, Oid>,
}

/// Replaces `clusters/<cluster>/` of `base` with the rendered files, in memory: the blob ids
/// are computed in parallel, the trees above them from those. The `kept` files (the render
/// memo's, known by content id) are already in the repository: only their ids are entered.
fn build_tree<'a>(repo: &Repository, base: Option<&Tree<'_>>, files: &'a Files, kept: &'a Kept) -> Result<Built<'a>, git2::Error> {
    let dirs = cluster_dirs(files);
    let mut built = Built { root: tree_id(base)?, objects: Vec::new(), ids: BTreeMap::new() };
    if dirs.is_empty() {
        return Ok(built);
    }
    let mut clusters: Vec<TreeEntry<'_>> = Vec::new();
    for dir in &dirs {
        let prefix = format!("{dir}/");
        let inside: Vec<(&'a str, &'a str, &'a [u8])> = files
            .range(prefix.clone()..)
            .map_while(|(path, bytes)| path.strip_prefix(&prefix).map(|relative| (path.as_str(), relative, bytes.as_slice())))
            .collect();
        let blobs: Vec<Object<'a>> =
            inside.par_iter().map(|&(_, _, bytes)| Object::new(ObjectType::Blob, Cow::Borrowed(bytes))).collect::<Result<_, _>>()?;
        let mut tree = Dir::default();
        for (&(path, relative, _), blob) in inside.iter().zip(&blobs) {
            tree.insert(relative, blob.id)?;
            built.ids.insert(path, blob.id);
        }
        let unread = kept.range(prefix.clone()..).map_while(|(path, id)| Some((path.as_str(), path.strip_prefix(&prefix)?, id)));
        for (path, relative, id) in unread {
            let id = Oid::from_bytes(&id.0)?;
            tree.insert(relative, id)?;
            built.ids.insert(path, id);
        }
        let name = dir.strip_prefix("clusters/").unwrap_or(dir).as_bytes().to_vec();
        clusters.push((Cow::Owned(name), TREE_MODE, tree.write(&mut built.objects)?));
        built.objects.extend(blobs);
    }
    // `clusters/` keeps its other clusters, the root its other entries.
    let kept = |tree: Option<&Tree<'_>>, replaced: &[TreeEntry<'_>]| -> Vec<TreeEntry<'static>> {
        tree.into_iter()
            .flat_map(Tree::iter)
            .filter(|entry| !replaced.iter().any(|(name, _, _)| name[..] == *entry.name_bytes()))
            .map(|entry| (Cow::Owned(entry.name_bytes().to_vec()), entry.filemode_raw(), entry.id()))
            .collect()
    };
    let old_clusters = match base.and_then(|tree| tree.get_name("clusters")) {
        Some(entry) if entry.kind() == Some(ObjectType::Tree) => Some(repo.find_tree(entry.id())?),
        _ => None,
    };
    let mut entries = kept(old_clusters.as_ref(), &clusters);
    entries.extend(clusters);
    let clusters_tree = tree_object(entries)?;
    let clusters_entry: TreeEntry<'_> = (Cow::Borrowed(b"clusters"), TREE_MODE, clusters_tree.id);
    built.objects.push(clusters_tree);
    let mut entries = kept(base, std::slice::from_ref(&clusters_entry));
    entries.push(clusters_entry);
    let root = tree_object(entries)?;
    built.root = root.id;
    built.objects.push(root);
    Ok(built)
}

/// The files of `base` (under the cluster directories that `files` fill) and of `files` that
/// differ, by blob id; only the old blobs that differ are read, so a small change stays small.
/// [`diff::changes`] of these equals that of the whole trees.
fn changed_files(
    repo: &Repository,
    base: Option<&Tree<'_>>,
    files: &Files,
    kept: &Kept,
    (ids, known): (&BTreeMap<&str, Oid>, Option<&KnownIds>),
) -> Result<(Files, Files), git2::Error> {
    let mut walked = BTreeMap::new();
    let mut dirs = cluster_dirs(files);
    dirs.sort();
    let old_ids = match (base, known) {
        // NB: the same tree and directories the caller read: not walked again.
        (Some(base), Some(known)) if base.id() == known.tree && known.dirs == dirs => &known.ids,
        (Some(base), _) => {
            for dir in &dirs {
                file_ids(repo, base, dir, &mut walked)?;
            }
            &walked
        }
        (None, _) => &walked,
    };
    let mut old = Files::new();
    for (path, id) in old_ids {
        if ids.get(path.as_str()) != Some(id) {
            old.insert(path.clone(), repo.find_blob(*id)?.content().to_vec());
        }
    }
    let mut new: Files = files
        .iter()
        .filter(|(path, _)| ids.get(path.as_str()).is_none_or(|id| old_ids.get(path.as_str()) != Some(id)))
        .map(|(path, bytes)| (path.clone(), bytes.clone()))
        .collect();
    // A kept file differs from the base only when the branch moved since the memo was checked.
    for path in kept.keys().filter(|path| ids.get(path.as_str()) != old_ids.get(path.as_str())) {
        new.insert(path.clone(), repo.find_blob(ids[path.as_str()])?.content().to_vec());
    }
    Ok((old, new))
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
    let subject =
        options.message.clone().unwrap_or_else(|| format!("tfrs: render {} ({})", clusters.join(", "), diff::counts_text(&diff.totals())));
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
fn sync_worktree(repo: &Repository, branch: &str, commit: Oid, dirs: &[String]) -> Result<(), git2::Error> {
    if repo.is_bare() {
        return Ok(());
    }
    let head = repo.find_reference("HEAD")?;
    if head.symbolic_target() != Ok(Some(branch_ref(branch).as_str())) {
        return Ok(());
    }
    let tree = repo.find_commit(commit)?.tree()?;
    let mut checkout = CheckoutBuilder::new();
    checkout.force();
    for dir in dirs {
        checkout.path(dir);
    }
    repo.checkout_tree(tree.as_object(), Some(&mut checkout))
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

/// The commit (if any) of `tree` over `base`: the new tip and what changed.
struct Prepared {
    tip: Option<Oid>,
    diff: Option<Diff>,
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
        match remote::push(repo, &push.remote, branch, new_tip)? {
            Pushed::Accepted => pushed = true,
            Pushed::Rejected(reason) => return Ok(Attempt::Retry(Some(reason))),
        }
    }
    let mut warnings = Vec::new();
    if let Some(new_tip) = prepared.tip
        && Some(new_tip) != local_tip
    {
        let moved = if options.push.as_ref().is_some_and(|p| p.follow_remote) {
            repo.reference(&branch_ref(branch), new_tip, true, "tfrs commit").map(|_| true).unwrap_or(false)
        } else {
            compare_and_swap(repo, branch, local_tip, new_tip)?
        };
        if !moved {
            if !pushed {
                return Ok(Attempt::Retry(None));
            }
            warnings.push(format!("the commit was pushed, but local `{branch}` moved meanwhile and was left as it is"));
        } else if let Err(error) = sync_worktree(repo, branch, new_tip, &cluster_dirs(tree.files())) {
            warnings.push(format!("the work tree was not updated: {}", error.message()));
        }
    }
    Ok(Attempt::Done(match (prepared.diff, prepared.tip) {
        (Some(diff), Some(commit)) => Outcome::Committed { commit, parent: base, diff, attempt, pushed, warnings },
        _ => Outcome::NoChanges { tip: base, pushed },
    }))
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
    let built = build_tree(repo, base_tree.as_ref(), files, kept).map_err(Error::Write)?;
    if built.root == tree_id(base_tree.as_ref()).map_err(Error::Write)? {
        return Ok(Prepared { tip: base, diff: None });
    }
    let (old, new) = changed_files(repo, base_tree.as_ref(), files, kept, (&built.ids, options.known.as_ref())).map_err(read)?;
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
    Ok(Prepared { tip: Some(oid), diff: Some(diff) })
}

#[cfg(test)]
mod tests;
