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
use super::remote::{self, Pushed};
use super::{Author, Error, Result, cluster_dirs, previous_object, read_files};
use git2::build::{CheckoutBuilder, TreeUpdateBuilder};
use git2::{ErrorCode, FileMode, Oid, Repository, Signature, Tree};
use serde_json::Value as Json;

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

/// Replaces `clusters/<cluster>/` of `base` with the rendered files; returns the new tree.
fn build_tree(repo: &Repository, base: &Tree<'_>, files: &Files) -> Result<Oid, git2::Error> {
    let empty = repo.find_tree(repo.treebuilder(None)?.write()?)?;
    let mut update = TreeUpdateBuilder::new();
    for dir in cluster_dirs(files) {
        let prefix = format!("{dir}/");
        let mut subtree = TreeUpdateBuilder::new();
        for (path, bytes) in files.range(prefix.clone()..) {
            let Some(relative) = path.strip_prefix(&prefix) else { break };
            subtree.upsert(relative, repo.blob(bytes)?, FileMode::Blob);
        }
        update.upsert(dir.as_str(), subtree.create_updated(repo, &empty)?, FileMode::Tree);
    }
    update.create_updated(repo, base)
}

/// The files of `tree` under the cluster directories that `files` fill.
fn old_files(repo: &Repository, tree: &Tree<'_>, files: &Files) -> Result<Files, git2::Error> {
    let mut old = Files::new();
    for dir in cluster_dirs(files) {
        old.extend(read_files(repo, tree, &dir)?);
    }
    Ok(old)
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
        let base_tree = match base {
            Some(oid) => repo.find_commit(oid).and_then(|c| c.tree()).map_err(read)?,
            None => repo.find_tree(repo.treebuilder(None).and_then(|b| b.write()).map_err(Error::Write)?).map_err(read)?,
        };
        let previous = |path: &str| previous_object(repo, &base_tree, path);
        let Some(files) = render(&previous).map_err(Error::Render)? else { return Ok(Outcome::RenderFailed) };
        let new_tree = build_tree(repo, &base_tree, &files).map_err(Error::Write)?;
        let (new_tip, change) = if new_tree == base_tree.id() {
            (base, None)
        } else {
            let old = old_files(repo, &base_tree, &files).map_err(read)?;
            let diff = diff::changes(&old, &files);
            let signature = Signature::now(&options.author.name, &options.author.email).map_err(Error::Write)?;
            let tree = repo.find_tree(new_tree).map_err(Error::Write)?;
            let parent = base.map(|oid| repo.find_commit(oid)).transpose().map_err(Error::Write)?;
            let parents: Vec<&git2::Commit<'_>> = parent.iter().collect();
            let oid = repo.commit(None, &signature, &signature, &message(options, &files, &diff), &tree, &parents).map_err(Error::Write)?;
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
        let repo = Repository::init_bare(dir.path()).expect("init");
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
}
