//! `commit`: write the rendered tree onto a branch as one commit, with a compare-and-swap on
//! the parent that was read, and optionally push it without force.
//!
//! # Guarantees
//!
//! - Exactly `clusters/<cluster>/` of each rendered cluster is replaced; every other path of the
//!   parent's tree is kept.
//! - No commit is made when the new tree equals the parent's.
//! - The branch only moves from the commit that was read to its child: if another writer moved
//!   it meanwhile, the tree is re-read, re-rendered (reusing the new ciphertext) and re-applied,
//!   up to [`CommitOptions::attempts`] times. A push is never forced: a rejected push fetches
//!   and starts over on the new remote tip.
//!
//! # Caveats
//!
//! - In a repository with a work tree whose `HEAD` is the branch, the rendered directories of
//!   the work tree and index are overwritten to match the commit (tfrs owns them); other paths
//!   are left alone.

use super::diff::{self, Diff, Files};
use super::pack::{self, Object};
use super::remote::{self, Pushed};
use super::{Author, Error, Result, cluster_dirs, file_ids, previous_object};
use git2::build::CheckoutBuilder;
use git2::{ErrorCode, ObjectType, OdbLookupFlags, Oid, Repository, Signature, Tree};
use rayon::prelude::*;
use serde_json::Value as Json;
use std::borrow::Cow;
use std::collections::{BTreeMap, HashSet};

/// The render step, called once per attempt with the `previous` lookup over the parent's tree.
/// `Ok(None)` means the spec was invalid (already reported).
pub type RenderStep<'a> = dyn FnMut(&dyn Fn(&str) -> Option<Json>) -> Result<Option<Files>, Box<dyn std::error::Error + Send + Sync>> + 'a;

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
pub struct CommitOptions<'a> {
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
    /// Called with the attempt number just before the branch (or the remote) is updated; for
    /// tests that play a concurrent writer.
    pub before_update: Option<&'a dyn Fn(usize)>,
}

impl Default for CommitOptions<'_> {
    fn default() -> Self {
        CommitOptions {
            branch: "main".to_owned(),
            message: None,
            author: Author { name: "tfrs".to_owned(), email: "tfrs@localhost".to_owned() },
            push: None,
            attempts: 5,
            before_update: None,
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
    /// The spec was invalid; the render step reported it.
    RenderFailed,
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
/// are computed in parallel, the trees above them from those.
fn build_tree<'a>(repo: &Repository, base: Option<&Tree<'_>>, files: &'a Files) -> Result<Built<'a>, git2::Error> {
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
    ids: &BTreeMap<&str, Oid>,
) -> Result<(Files, Files), git2::Error> {
    let mut old_ids = BTreeMap::new();
    if let Some(base) = base {
        for dir in cluster_dirs(files) {
            file_ids(repo, base, &dir, &mut old_ids)?;
        }
    }
    let mut old = Files::new();
    for (path, id) in &old_ids {
        if ids.get(path.as_str()) != Some(id) {
            old.insert(path.clone(), repo.find_blob(*id)?.content().to_vec());
        }
    }
    let new = files
        .iter()
        .filter(|(path, _)| ids.get(path.as_str()).is_none_or(|id| old_ids.get(path.as_str()) != Some(id)))
        .map(|(path, bytes)| (path.clone(), bytes.clone()))
        .collect();
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

fn message(options: &CommitOptions<'_>, files: &Files, diff: &Diff) -> String {
    let subject = options.message.clone().unwrap_or_else(|| {
        let clusters: Vec<String> = cluster_dirs(files).iter().map(|d| d.trim_start_matches("clusters/").to_owned()).collect();
        format!("tfrs: render {} ({})", clusters.join(", "), diff::counts_text(&diff.totals()))
    });
    format!("{}\n\n{}", subject.trim_end(), diff.summary())
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

/// Renders against the branch and commits the result (see the module docs).
///
/// # Errors
///
/// Repository, fetch and push failures; a branch that kept moving (or a push kept rejected)
/// for every attempt; a local branch diverged from the remote; a failing render step.
pub fn commit(repo: &Repository, options: &CommitOptions<'_>, render: &mut RenderStep<'_>) -> Result<Outcome> {
    let branch = options.branch.as_str();
    let local_name = branch_ref(branch);
    let attempts = options.attempts.max(1);
    let mut last_rejection = String::new();
    for attempt in 1..=attempts {
        if attempt > 1 {
            // Spread racing writers apart a little.
            std::thread::sleep(std::time::Duration::from_millis(20 * attempt as u64));
        }
        let remote_tip = match &options.push {
            Some(push) => remote::fetch(repo, &push.remote, branch)?,
            None => None,
        };
        let local_tip = tip(repo, &local_name)?;
        let base = match &options.push {
            Some(push) => choose(repo, branch, local_tip, remote_tip, push)?,
            None => local_tip,
        };
        let read = |source| Error::ReadTree { name: branch.to_owned(), source };
        // No base: an empty tree, which is not written (nor needed) anywhere.
        let base_tree = base.map(|oid| repo.find_commit(oid).and_then(|c| c.tree())).transpose().map_err(read)?;
        let previous = |path: &str| base_tree.as_ref().and_then(|tree| previous_object(repo, tree, path));
        let Some(files) = render(&previous).map_err(Error::Render)? else { return Ok(Outcome::RenderFailed) };
        let built = build_tree(repo, base_tree.as_ref(), &files).map_err(Error::Write)?;
        let (new_tip, change) = if built.root == tree_id(base_tree.as_ref()).map_err(Error::Write)? {
            (base, None)
        } else {
            let (old, new) = changed_files(repo, base_tree.as_ref(), &files, &built.ids).map_err(read)?;
            let diff = diff::changes(&old, &new);
            let signature = Signature::now(&options.author.name, &options.author.email).map_err(Error::Write)?;
            let commit = commit_object(built.root, base, &signature, &message(options, &files, &diff)).map_err(Error::Write)?;
            let oid = commit.id;
            // The pack is on disk before any ref moves below.
            store(repo, std::iter::once(commit).chain(built.objects).collect())?;
            (Some(oid), Some(diff))
        };
        if let Some(hook) = options.before_update {
            hook(attempt);
        }
        let mut pushed = false;
        if let (Some(push), Some(new_tip)) = (&options.push, new_tip)
            && Some(new_tip) != remote_tip
        {
            match remote::push(repo, &push.remote, branch, new_tip)? {
                Pushed::Accepted => pushed = true,
                Pushed::Rejected(reason) => {
                    last_rejection = reason;
                    continue;
                }
            }
        }
        let mut warnings = Vec::new();
        if let Some(new_tip) = new_tip
            && Some(new_tip) != local_tip
        {
            let moved = if options.push.as_ref().is_some_and(|p| p.follow_remote) {
                repo.reference(&local_name, new_tip, true, "tfrs commit").map(|_| true).unwrap_or(false)
            } else {
                compare_and_swap(repo, branch, local_tip, new_tip)?
            };
            if !moved {
                if !pushed {
                    continue;
                }
                warnings.push(format!("the commit was pushed, but local `{branch}` moved meanwhile and was left as it is"));
            } else if let Err(error) = sync_worktree(repo, branch, new_tip, &cluster_dirs(&files)) {
                warnings.push(format!("the work tree was not updated: {}", error.message()));
            }
        }
        return Ok(match (change, new_tip) {
            (Some(diff), Some(commit)) => Outcome::Committed { commit, parent: base, diff, attempt, pushed, warnings },
            _ => Outcome::NoChanges { tip: base, pushed },
        });
    }
    Err(match &options.push {
        Some(push) if !last_rejection.is_empty() => Error::PushRejected { remote: push.remote.clone(), attempts, reason: last_rejection },
        _ => Error::Contended { branch: branch.to_owned(), attempts },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use git2::FileMode;
    use git2::build::TreeUpdateBuilder;
    use std::cell::Cell;

    fn files(version: &str) -> Files {
        [
            ("clusters/c/kustomization.yaml".to_owned(), b"resources: []\n".to_vec()),
            (
                "clusters/c/components/cluster/app/configmap-app.yaml".to_owned(),
                format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  namespace: apps\ndata:\n  version: \"{version}\"\n")
                    .into_bytes(),
            ),
        ]
        .into()
    }

    fn bare() -> (tempfile::TempDir, Repository) {
        let dir = tempfile::tempdir().expect("temp dir");
        let repo = Repository::init_opts(dir.path(), git2::RepositoryInitOptions::new().bare(true).initial_head("main")).expect("init");
        (dir, repo)
    }

    fn run(repo: &Repository, options: &CommitOptions<'_>, version: &str) -> Outcome {
        let mut step = |_: &dyn Fn(&str) -> Option<Json>| -> Result<Option<Files>, Box<dyn std::error::Error + Send + Sync>> {
            Ok(Some(files(version)))
        };
        commit(repo, options, &mut step).expect("commits")
    }

    /// A commit by someone else on `branch`, touching `path` only.
    fn foreign_commit(repo: &Repository, branch: &str, path: &str) -> Oid {
        let parent = repo.find_commit(repo.refname_to_id(&branch_ref(branch)).expect("branch")).expect("commit");
        let mut update = TreeUpdateBuilder::new();
        update.upsert(path, repo.blob(b"theirs\n").expect("blob"), FileMode::Blob);
        let tree = repo.find_tree(update.create_updated(repo, &parent.tree().expect("tree")).expect("tree")).expect("tree");
        let signature = Signature::now("other", "other@example.com").expect("signature");
        repo.commit(Some(&branch_ref(branch)), &signature, &signature, "other", &tree, &[&parent]).expect("commit")
    }

    #[test]
    fn an_unchanged_render_makes_no_commit() {
        let (_dir, repo) = bare();
        let options = CommitOptions::default();
        assert!(matches!(run(&repo, &options, "1"), Outcome::Committed { parent: None, attempt: 1, .. }));
        let first = repo.refname_to_id("refs/heads/main").expect("main");
        assert!(matches!(run(&repo, &options, "1"), Outcome::NoChanges { tip: Some(tip), .. } if tip == first));
        assert_eq!(repo.refname_to_id("refs/heads/main").expect("main"), first);
    }

    #[test]
    fn a_moved_branch_is_reread_and_nothing_is_lost() {
        let (_dir, repo) = bare();
        let options = CommitOptions::default();
        run(&repo, &options, "1");
        let calls = Cell::new(0);
        let theirs = Cell::new(None);
        let hook = |attempt: usize| {
            calls.set(calls.get() + 1);
            if attempt == 1 {
                theirs.set(Some(foreign_commit(&repo, "main", "README.md")));
            }
        };
        let racing = CommitOptions { before_update: Some(&hook), ..CommitOptions::default() };
        let Outcome::Committed { commit, parent, attempt, .. } = run(&repo, &racing, "2") else { panic!("expected a commit") };
        assert_eq!(attempt, 2);
        assert_eq!(parent, theirs.get(), "rebuilt on the other writer's commit");
        let tree = repo.find_commit(commit).expect("commit").tree().expect("tree");
        assert!(tree.get_path(std::path::Path::new("README.md")).is_ok(), "their file is kept");
        assert_eq!(calls.get(), 2);
    }

    #[test]
    fn a_branch_that_keeps_moving_fails_clearly() {
        let (_dir, repo) = bare();
        run(&repo, &CommitOptions::default(), "1");
        let counter = Cell::new(0);
        let hook = |_: usize| {
            counter.set(counter.get() + 1);
            foreign_commit(&repo, "main", &format!("other-{}", counter.get()));
        };
        let options = CommitOptions { before_update: Some(&hook), attempts: 3, ..CommitOptions::default() };
        let mut step =
            |_: &dyn Fn(&str) -> Option<Json>| -> Result<Option<Files>, Box<dyn std::error::Error + Send + Sync>> { Ok(Some(files("2"))) };
        let error = commit(&repo, &options, &mut step).expect_err("gives up");
        assert_eq!(error.to_string(), "`main` kept moving under us: gave up after 3 attempts; nothing was lost, run again");
    }

    #[test]
    fn a_rejected_push_is_rebuilt_on_the_new_remote_tip() {
        let (_remote_dir, remote_repo) = bare();
        run(&remote_repo, &CommitOptions::default(), "1");
        let local_dir = tempfile::tempdir().expect("temp dir");
        let local = Repository::clone(&remote_repo.path().display().to_string(), local_dir.path()).expect("clone");
        let theirs = Cell::new(None);
        let hook = |attempt: usize| {
            if attempt == 1 {
                theirs.set(Some(foreign_commit(&remote_repo, "main", "NOTES.md")));
            }
        };
        let options = CommitOptions {
            push: Some(Push { remote: "origin".to_owned(), follow_remote: false }),
            before_update: Some(&hook),
            ..CommitOptions::default()
        };
        let Outcome::Committed { commit, parent, attempt, pushed, .. } = run(&local, &options, "2") else { panic!("expected a commit") };
        assert_eq!((attempt, pushed), (2, true));
        assert_eq!(parent, theirs.get());
        assert_eq!(remote_repo.refname_to_id("refs/heads/main").expect("main"), commit, "the remote has our commit");
        assert_eq!(local.refname_to_id("refs/heads/main").expect("main"), commit, "and so does the local branch");
        assert!(local.find_commit(commit).expect("commit").tree().expect("tree").get_path(std::path::Path::new("NOTES.md")).is_ok());
    }

    /// Loose objects (`objects/??/*`) of a repository's object database.
    fn loose_objects(objects: &std::path::Path) -> Vec<String> {
        let mut found = Vec::new();
        for dir in std::fs::read_dir(objects).expect("objects dir").map(|e| e.expect("entry").path()) {
            let name = dir.file_name().expect("name").to_string_lossy().into_owned();
            if name.len() == 2 && dir.is_dir() {
                found.extend(
                    std::fs::read_dir(&dir)
                        .expect("fan-out dir")
                        .map(|e| format!("{name}{}", e.expect("entry").file_name().to_string_lossy())),
                );
            }
        }
        found
    }

    /// The ids in each pack of `objects/pack/`, by pack name (read from the version-2 indexes).
    fn packs(objects: &std::path::Path) -> BTreeMap<String, std::collections::BTreeSet<Oid>> {
        let mut packs = BTreeMap::new();
        for path in std::fs::read_dir(objects.join("pack")).expect("pack dir").map(|e| e.expect("entry").path()) {
            let name = path.file_name().expect("name").to_string_lossy().into_owned();
            let Some(stem) = name.strip_suffix(".idx") else {
                assert!(name.ends_with(".pack"), "only packs and their indexes in objects/pack: {name}");
                continue;
            };
            let index = std::fs::read(&path).expect("index");
            assert_eq!(&index[..8], b"\xfftOc\0\0\0\x02", "{name} is a version-2 index");
            let count = u32::from_be_bytes(index[8 + 255 * 4..8 + 256 * 4].try_into().expect("4 bytes")) as usize;
            let ids = (0..count).map(|i| Oid::from_bytes(&index[8 + 1024 + i * 20..8 + 1024 + (i + 1) * 20]).expect("id")).collect();
            packs.insert(stem.to_owned(), ids);
        }
        packs
    }

    /// `git fsck --full` of `dir` passes and finds nothing to say (no dangling object either).
    fn fsck(dir: &std::path::Path) {
        let home = tempfile::tempdir().expect("home");
        let output = std::process::Command::new("git")
            .args(["fsck", "--full", "--strict", "--no-progress"])
            .current_dir(dir)
            .env("HOME", home.path())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
            .expect("git runs");
        let said = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
        assert!(output.status.success() && said.is_empty(), "git fsck --full: {said}");
    }

    #[test]
    fn a_commit_is_one_pack_that_git_fsck_accepts_and_an_unchanged_one_writes_nothing() {
        let (dir, repo) = bare();
        let objects = dir.path().join("objects");
        let Outcome::Committed { commit, .. } = run(&repo, &CommitOptions::default(), "1") else { panic!("expected a commit") };
        assert_eq!(loose_objects(&objects), Vec::<String>::new(), "no loose object, not even the empty tree");
        let first = packs(&objects);
        assert_eq!(first.len(), 1, "one pack");
        // The commit, root, clusters, c, components, cluster and app trees, and the two blobs.
        assert_eq!(first.values().next().map(std::collections::BTreeSet::len), Some(9));
        assert!(first.values().any(|ids| ids.contains(&commit)));
        fsck(dir.path());
        assert!(matches!(run(&repo, &CommitOptions::default(), "1"), Outcome::NoChanges { .. }));
        assert_eq!(packs(&objects), first, "an unchanged render writes no pack");
        assert_eq!(loose_objects(&objects), Vec::<String>::new());
    }

    #[test]
    fn a_one_file_change_packs_only_its_blob_the_trees_above_it_and_the_commit() {
        let (dir, repo) = bare();
        let objects = dir.path().join("objects");
        run(&repo, &CommitOptions::default(), "1");
        let before = packs(&objects);
        let Outcome::Committed { commit, .. } = run(&repo, &CommitOptions::default(), "2") else { panic!("expected a commit") };
        let mut after = packs(&objects);
        after.retain(|name, _| !before.contains_key(name));
        let tree = repo.find_commit(commit).expect("commit").tree().expect("tree");
        let at = |path: &str| tree.get_path(std::path::Path::new(path)).expect(path).id();
        let expected: std::collections::BTreeSet<Oid> = [
            commit,
            tree.id(),
            at("clusters"),
            at("clusters/c"),
            at("clusters/c/components"),
            at("clusters/c/components/cluster"),
            at("clusters/c/components/cluster/app"),
            at("clusters/c/components/cluster/app/configmap-app.yaml"),
        ]
        .into();
        assert_eq!(after.into_values().collect::<Vec<_>>(), [expected], "one new pack with only the new objects");
        assert_eq!(loose_objects(&objects), Vec::<String>::new());
        fsck(dir.path());
    }

    #[test]
    fn a_checked_out_branch_of_a_repository_with_a_work_tree_follows_the_commit() {
        let dir = tempfile::tempdir().expect("temp dir");
        let repo = Repository::init_opts(dir.path(), git2::RepositoryInitOptions::new().initial_head("main")).expect("init");
        run(&repo, &CommitOptions::default(), "1");
        let Outcome::Committed { .. } = run(&repo, &CommitOptions::default(), "2") else { panic!("expected a commit") };
        let written = std::fs::read(dir.path().join("clusters/c/components/cluster/app/configmap-app.yaml")).expect("checked out");
        assert_eq!(written, files("2")["clusters/c/components/cluster/app/configmap-app.yaml"]);
        assert!(repo.statuses(None).expect("status").is_empty(), "clean work tree and index");
        assert_eq!(loose_objects(&dir.path().join(".git/objects")), Vec::<String>::new());
        fsck(dir.path());
    }

    /// What `build_tree` did before it built trees in memory: libgit2's tree updates.
    fn libgit2_tree(repo: &Repository, base: &Tree<'_>, files: &Files) -> Oid {
        let empty = repo.find_tree(repo.treebuilder(None).expect("builder").write().expect("empty tree")).expect("empty tree");
        let mut update = TreeUpdateBuilder::new();
        for dir in cluster_dirs(files) {
            let prefix = format!("{dir}/");
            let mut subtree = TreeUpdateBuilder::new();
            for (path, bytes) in files.range(prefix.clone()..) {
                let Some(relative) = path.strip_prefix(&prefix) else { break };
                subtree.upsert(relative, repo.blob(bytes).expect("blob"), FileMode::Blob);
            }
            update.upsert(dir.as_str(), subtree.create_updated(repo, &empty).expect("subtree"), FileMode::Tree);
        }
        update.create_updated(repo, base).expect("tree")
    }

    #[test]
    fn trees_built_in_memory_equal_libgit2s_and_keep_what_is_outside_the_clusters() {
        let (_dir, repo) = bare();
        // A base with other clusters, root files, a stale file in a rendered cluster and an
        // executable, as another writer may have left them.
        let mut base_files = Files::new();
        for (path, bytes) in [
            ("README.md", "# gitops\n"),
            ("clusters.txt", "next to clusters/\n"),
            ("clusters/other/keep.yaml", "kind: ConfigMap\n"),
            ("clusters/a/stale.yaml", "kind: ConfigMap\n"),
            ("clusters/z/keep.yaml", "kind: Secret\n"),
        ] {
            base_files.insert(path.to_owned(), bytes.as_bytes().to_vec());
        }
        let mut update = TreeUpdateBuilder::new();
        for (path, bytes) in &base_files {
            update.upsert(path.as_str(), repo.blob(bytes).expect("blob"), FileMode::Blob);
        }
        update.upsert("bin/run.sh", repo.blob(b"#!/bin/sh\n").expect("blob"), FileMode::BlobExecutable);
        let empty = repo.find_tree(repo.treebuilder(None).expect("builder").write().expect("empty")).expect("empty");
        let base = repo.find_tree(update.create_updated(&repo, &empty).expect("base")).expect("base");
        // Names that sort differently as files and as directories (`app/` after `app.yaml`,
        // before `app0.yaml`), two clusters, a deep path.
        let mut rendered = Files::new();
        for path in [
            "clusters/a/components/app-x.yaml",
            "clusters/a/components/app.yaml",
            "clusters/a/components/app/inner.yaml",
            "clusters/a/components/app0.yaml",
            "clusters/a/kustomization.yaml",
            "clusters/b/deep/er/and/deeper/x.yaml",
            "clusters/b/same.yaml",
            "clusters/b/same-too.yaml",
        ] {
            rendered.insert(path.to_owned(), format!("path: {}\n", if path.contains("same") { "same" } else { path }).into_bytes());
        }
        let built = build_tree(&repo, Some(&base), &rendered).expect("built");
        assert_eq!(built.root, libgit2_tree(&repo, &base, &rendered));
        assert_eq!(built.ids.len(), rendered.len());
        // Into an empty repository too, and with nothing under `clusters/` nothing changes.
        let built = build_tree(&repo, None, &rendered).expect("built");
        assert_eq!(built.root, libgit2_tree(&repo, &empty, &rendered));
        let outside: Files = [("notes.txt".to_owned(), b"x\n".to_vec())].into();
        assert_eq!(build_tree(&repo, Some(&base), &outside).expect("built").root, base.id());
        assert_eq!(build_tree(&repo, None, &outside).expect("built").root, empty.id());
    }

    #[test]
    fn a_path_git_cannot_hold_is_refused() {
        let (_dir, repo) = bare();
        for bad in ["clusters/c/a//b.yaml", "clusters/c/../x.yaml", "clusters/c/.git/config", "clusters/c/./x.yaml"] {
            let rendered: Files = [(bad.to_owned(), b"x\n".to_vec())].into();
            assert!(build_tree(&repo, None, &rendered).is_err(), "{bad}");
        }
        let both: Files = [("clusters/c/x".to_owned(), b"x\n".to_vec()), ("clusters/c/x/y".to_owned(), b"y\n".to_vec())].into();
        assert!(build_tree(&repo, None, &both).is_err(), "a file and a directory of the same name");
    }

    #[test]
    fn the_commit_object_is_byte_for_byte_libgit2s() {
        let (_dir, repo) = bare();
        let tree = repo.find_tree(repo.treebuilder(None).expect("builder").write().expect("tree")).expect("tree");
        for offset in [-330, 0, 60, 345] {
            let signature = Signature::new("A. Person", "a@example.com", &git2::Time::new(1_700_000_000, offset)).expect("signature");
            let parent_id = repo.commit(None, &signature, &signature, "parent\n", &tree, &[]).expect("parent");
            let parent = repo.find_commit(parent_id).expect("parent");
            let message = "tfrs: render c (1 added)\n\nbody\n";
            for parents in [vec![], vec![&parent]] {
                let expected = repo.commit_create_buffer(&signature, &signature, message, &tree, &parents).expect("buffer");
                let ours = commit_object(tree.id(), parents.first().map(|p| p.id()), &signature, message).expect("object");
                assert_eq!(String::from_utf8_lossy(&ours.data), String::from_utf8_lossy(&expected), "offset {offset}");
            }
        }
    }
}
