//! The commit stage's tests: races, packs, trees and commit objects against libgit2's.

use super::trees::*;
use super::*;
use crate::git::file_ids;
use crate::tree::Kept;
use git2::FileMode;
use git2::Tree;
use git2::build::TreeUpdateBuilder;
use std::cell::Cell;
use std::collections::{BTreeMap, HashMap};

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

fn run(repo: &Repository, options: &CommitOptions, version: &str) -> Outcome {
    run_racing(repo, options, version, &|_| {}).expect("commits")
}

fn run_racing(repo: &Repository, options: &CommitOptions, version: &str, hook: &dyn Fn(usize)) -> Result<Outcome> {
    commit_with(repo, options, &mut tree::Tree::from_files(files(version)), &mut rand::rng(), hook)
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
    let Outcome::Committed { commit, parent, attempt, .. } = run_racing(&repo, &CommitOptions::default(), "2", &hook).expect("commits")
    else {
        panic!("expected a commit")
    };
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
    let options = CommitOptions { attempts: 3, ..CommitOptions::default() };
    let error = run_racing(&repo, &options, "2", &hook).expect_err("gives up");
    assert_eq!(error.to_string(), "`main` kept moving under us: gave up after 3 attempts; nothing was lost, run again");
}

#[test]
fn a_lock_left_on_the_branch_is_named_not_taken_for_a_moving_branch() {
    let (_dir, repo) = bare();
    run(&repo, &CommitOptions::default(), "1");
    let before = repo.refname_to_id("refs/heads/main").expect("main");
    // NB: what a git process stopped while it updated `main` leaves behind.
    let lock = repo.path().join("refs/heads/main.lock");
    std::fs::write(&lock, format!("{before}\n")).expect("lock");
    let options = CommitOptions { attempts: 2, ..CommitOptions::default() };
    let error = run_racing(&repo, &options, "2", &|_| {}).expect_err("locked");
    let message = error.to_string();
    assert!(matches!(error, Error::Locked { attempts: 2, .. }), "{message}");
    assert!(message.contains(&lock.display().to_string()) && message.contains("remove that file"), "{message}");
    assert_eq!(repo.refname_to_id("refs/heads/main").expect("main"), before, "the branch is untouched");
    std::fs::remove_file(&lock).expect("unlock");
    assert!(matches!(run(&repo, &CommitOptions::default(), "2"), Outcome::Committed { .. }), "then it commits");
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
    let options = CommitOptions { push: Some(Push { remote: "origin".to_owned(), follow_remote: false }), ..CommitOptions::default() };
    let Outcome::Committed { commit, parent, attempt, pushed, .. } = run_racing(&local, &options, "2", &hook).expect("commits") else {
        panic!("expected a commit")
    };
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
                std::fs::read_dir(&dir).expect("fan-out dir").map(|e| format!("{name}{}", e.expect("entry").file_name().to_string_lossy())),
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

/// [`build_tree`] over the files of `base` as they are read.
fn build<'a>(repo: &Repository, base: Option<&Tree<'_>>, files: &'a Files, kept: &'a Kept) -> Result<Built<'a>, git2::Error> {
    let old = base_ids(repo, base, cluster_dirs(files), None)?;
    build_tree(repo, base, files, kept, &old)
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
    let none = Kept::new();
    let built = build(&repo, Some(&base), &rendered, &none).expect("built");
    assert_eq!(built.root, libgit2_tree(&repo, &base, &rendered));
    assert_eq!(built.differ.len(), rendered.len() + 1, "every rendered file, and the stale one");
    // Into an empty repository too, and with nothing under `clusters/` nothing changes.
    let built = build(&repo, None, &rendered, &none).expect("built");
    assert_eq!(built.root, libgit2_tree(&repo, &empty, &rendered));
    // Files the memo kept enter by their content id (a Git blob id), and give the same tree.
    let (mut bytes, mut kept) = (rendered.clone(), Kept::new());
    for path in ["clusters/a/components/app/inner.yaml", "clusters/b/same.yaml"] {
        kept.insert(path.to_owned(), crate::object::ContentId::of(&bytes.remove(path).expect("rendered")));
    }
    assert_eq!(build(&repo, None, &bytes, &kept).expect("built").root, built.root);
    let outside: Files = [("notes.txt".to_owned(), b"x\n".to_vec())].into();
    assert_eq!(build(&repo, Some(&base), &outside, &Kept::new()).expect("built").root, base.id());
    assert_eq!(build(&repo, None, &outside, &Kept::new()).expect("built").root, empty.id());
}

#[test]
fn a_path_git_cannot_hold_is_refused() {
    let (_dir, repo) = bare();
    for bad in ["clusters/c/a//b.yaml", "clusters/c/../x.yaml", "clusters/c/.git/config", "clusters/c/./x.yaml"] {
        let rendered: Files = [(bad.to_owned(), b"x\n".to_vec())].into();
        assert!(build(&repo, None, &rendered, &Kept::new()).is_err(), "{bad}");
    }
    // A directory's names are checked once for all its files: a bad one after good files of
    // its parent, or of a sibling, is still refused, and named.
    for bad in ["clusters/c/ok/.git/b.yaml", "clusters/c/ok/x/../b.yaml", "clusters/c/ok/.GIT"] {
        let rendered: Files =
            ["clusters/c/ok/a.yaml", "clusters/c/ok/x/a.yaml", bad].into_iter().map(|p| (p.to_owned(), b"x\n".to_vec())).collect();
        let error = build(&repo, None, &rendered, &Kept::new()).err().expect(bad);
        assert!(error.message().contains(&format!("`{}`", bad.trim_start_matches("clusters/c/"))), "{bad}: {error}");
    }
    let both: Files = [("clusters/c/x".to_owned(), b"x\n".to_vec()), ("clusters/c/x/y".to_owned(), b"y\n".to_vec())].into();
    assert!(build(&repo, None, &both, &Kept::new()).is_err(), "a file and a directory of the same name");
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

#[test]
fn blob_ids_the_caller_read_are_used_only_over_the_tree_they_were_read_from() {
    let (_dir, repo) = bare();
    run(&repo, &CommitOptions::default(), "1");
    let tip = || repo.find_commit(repo.refname_to_id("refs/heads/main").expect("main")).expect("commit").tree().expect("tree").id();
    let counts = |outcome: Outcome| match outcome {
        Outcome::Committed { diff, .. } => crate::tree::diff::counts_text(&diff.totals()),
        Outcome::NoChanges { .. } => panic!("expected a commit"),
    };
    let known =
        |tree: Oid, ids: BTreeMap<String, Oid>| Some(KnownIds { tree, dirs: vec!["clusters/c".to_owned()], ids, trees: HashMap::new() });
    // Claimed for another tree: not used (the branch's files are read), so the diff is right.
    let elsewhere = CommitOptions { known: known(Oid::ZERO_SHA1, BTreeMap::new()), ..CommitOptions::default() };
    assert_eq!(counts(run(&repo, &elsewhere, "2")), "0 added, 1 changed, 0 removed");
    // Read from the branch's tree: used as they are (here none, so every file looks added).
    let here = CommitOptions { known: known(tip(), BTreeMap::new()), ..CommitOptions::default() };
    assert_eq!(counts(run(&repo, &here, "3")), "2 added, 0 changed, 0 removed");
    // The real ids of the branch's tree give the diff a read gives.
    let mut ids = BTreeMap::new();
    file_ids(&repo, &repo.find_tree(tip()).expect("tree"), "clusters/c", &mut ids, None).expect("ids");
    let read = CommitOptions { known: known(tip(), ids), ..CommitOptions::default() };
    assert_eq!(counts(run(&repo, &read, "4")), "0 added, 1 changed, 0 removed");
}

/// The tree of `files` (libgit2's, regular files), with `extra` entries in place of or beside them.
fn tree_with(repo: &Repository, files: &Files, extra: &[(&str, Oid, FileMode)]) -> Oid {
    let empty = repo.find_tree(repo.treebuilder(None).expect("builder").write().expect("empty")).expect("empty");
    let mut update = TreeUpdateBuilder::new();
    for (path, bytes) in files.iter().filter(|(path, _)| !extra.iter().any(|(other, ..)| other == path)) {
        update.upsert(path.as_str(), repo.blob(bytes).expect("blob"), FileMode::Blob);
    }
    for &(path, id, mode) in extra {
        update.upsert(path, id, mode);
    }
    update.create_updated(repo, &empty).expect("tree")
}

fn many(changed: &str) -> Files {
    let mut files = Files::new();
    for dir in ["a", "b/inner", "c", "d"] {
        for name in ["x.yaml", "y.yaml"] {
            let path = format!("clusters/c/{dir}/{name}");
            let text = if !changed.is_empty() && path.ends_with(changed) { "changed\n".to_owned() } else { format!("path: {path}\n") };
            files.insert(path, text.into_bytes());
        }
    }
    files
}

#[test]
fn a_file_named_as_a_directory_taken_whole_is_refused() {
    let (_dir, repo) = bare();
    let none = Kept::new();
    let base = repo.find_tree(tree_with(&repo, &many(""), &[])).expect("base");
    // `clusters/c/a` unchanged below, and a file of the same name beside it.
    let mut both = many("");
    both.insert("clusters/c/a".to_owned(), b"x\n".to_vec());
    assert!(build(&repo, Some(&base), &both, &none).is_err(), "a file and a directory of the same name");
}

#[test]
fn a_commit_makes_only_the_trees_above_a_change_and_takes_no_tree_that_is_not_plain() {
    let (_dir, repo) = bare();
    let none = Kept::new();
    let trees = |built: &Built<'_>| built.objects.iter().filter(|object| object.kind == ObjectType::Tree).count();
    // One changed file: its directory, the cluster's, `clusters/` and the root are made; the
    // other directories are the base's trees, and the whole equals libgit2's.
    let base = repo.find_tree(tree_with(&repo, &many(""), &[])).expect("base");
    let rendered = many("a/x.yaml");
    let built = build(&repo, Some(&base), &rendered, &none).expect("built");
    assert_eq!(built.root, libgit2_tree(&repo, &base, &rendered));
    assert_eq!(trees(&built), 4, "clusters/c/a, clusters/c, clusters and the root");
    // A removed file changes its directory too.
    let mut fewer = many("");
    fewer.remove("clusters/c/b/inner/y.yaml");
    let built = build(&repo, Some(&base), &fewer, &none).expect("built");
    assert_eq!(built.root, libgit2_tree(&repo, &base, &fewer));
    assert_eq!(trees(&built), 5, "clusters/c/b/inner, clusters/c/b, clusters/c, clusters and the root");
    // What another writer may leave where no rendered file changed (an executable or a symlink
    // with a rendered file's content, an empty tree, a submodule) is not the rendered tree:
    // the directories holding them are made again, without them.
    let same = many("");
    let blob = |path: &str| repo.blob(&same[path]).expect("blob");
    let empty = repo.treebuilder(None).expect("builder").write().expect("empty");
    for (path, id, mode) in [
        ("clusters/c/a/x.yaml", blob("clusters/c/a/x.yaml"), FileMode::BlobExecutable),
        ("clusters/c/b/inner/x.yaml", blob("clusters/c/b/inner/x.yaml"), FileMode::Link),
        ("clusters/c/c/empty", empty, FileMode::Tree),
        ("clusters/c/d/module", base.id(), FileMode::Commit),
    ] {
        let other = repo.find_tree(tree_with(&repo, &same, &[(path, id, mode)])).expect("other");
        assert_ne!(other.id(), base.id(), "{path}");
        let built = build(&repo, Some(&other), &same, &none).expect("built");
        assert_eq!(built.root, base.id(), "{path}");
    }
}

#[test]
fn the_ids_a_commit_keeps_are_those_a_read_of_its_tree_gives() {
    let (_dir, repo) = bare();
    let options = CommitOptions::default();
    let dirs = || vec!["clusters/c".to_owned()];
    // The first commit makes every tree; the second takes most of them whole.
    for changed in ["", "b/inner/x.yaml"] {
        let outcome = commit_with(&repo, &options, &mut tree::Tree::from_files(many(changed)), &mut rand::rng(), &|_| {}).expect("commits");
        let Outcome::Committed { ids, commit, .. } = outcome else { panic!("expected a commit") };
        let tip = repo.find_commit(commit).expect("commit").tree().expect("tree");
        let [ids] = ids.as_slice() else { panic!("one cluster") };
        assert_eq!(ids.tree, tip.get_path(std::path::Path::new("clusters/c")).expect("cluster").id());
        let read = KnownIds::read(&repo, &tip, dirs()).expect("read");
        assert_eq!(ids.files, read.ids.clone().into_iter().collect::<Vec<_>>(), "{changed}");
        assert_eq!(ids.trees.iter().cloned().collect::<HashMap<_, _>>(), read.trees, "{changed}");
        // Kept as text and read back, and taken for that tree only.
        let mut text = Vec::new();
        assert!(ids.write_to(&mut text).expect("written"));
        let back = ClusterIds::parse(std::str::from_utf8(&text).expect("text")).expect("parsed");
        assert_eq!(&back, ids);
        let cached = KnownIds::read_cached(&repo, &tip, dirs(), &|_, _| Some(back.clone())).expect("read");
        assert_eq!((cached.ids, cached.trees), (read.ids.clone(), read.trees.clone()));
        let other = ClusterIds { tree: Oid::ZERO_SHA1, files: Vec::new(), ..back.clone() };
        let ignored = KnownIds::read_cached(&repo, &tip, dirs(), &|_, _| Some(other.clone())).expect("read");
        assert_eq!(ignored.ids, read.ids, "ids of another tree are not taken");
    }
    // No commit: the ids are those of the branch as it is.
    let outcome = commit_with(&repo, &options, &mut tree::Tree::from_files(many("b/inner/x.yaml")), &mut rand::rng(), &|_| {});
    let Outcome::NoChanges { ids, tip: Some(tip), .. } = outcome.expect("no commit") else { panic!("expected no commit") };
    let tip = repo.find_commit(tip).expect("commit").tree().expect("tree");
    let read = KnownIds::read(&repo, &tip, dirs()).expect("read");
    let [ids] = ids.as_slice() else { panic!("one cluster") };
    assert_eq!((ids.files.clone(), ids.trees.iter().cloned().collect::<HashMap<_, _>>()), (read.ids.into_iter().collect(), read.trees));
}

#[test]
fn kept_ids_cut_short_or_with_a_line_break_in_a_path_are_none() {
    let id = |n: u8| Oid::from_bytes(&[n; 20]).expect("id");
    let ids = ClusterIds {
        dir: "clusters/c".to_owned(),
        tree: id(1),
        files: vec![("clusters/c/a/x.yaml".to_owned(), id(2)), ("clusters/c/b.yaml".to_owned(), id(3))],
        trees: vec![("clusters/c/a".to_owned(), id(4)), ("clusters/c/ab".to_owned(), id(5))],
    };
    let mut text = Vec::new();
    assert!(ids.write_to(&mut text).expect("written"));
    let text = String::from_utf8(text).expect("text");
    assert_eq!(ClusterIds::parse(&text).as_ref(), Some(&ids));
    // Cut at every byte: at a line's end (a line lost) or inside one, never ids.
    for cut in 0..text.len() {
        assert_eq!(ClusterIds::parse(&text[..cut]), None, "cut at {cut}: {:?}", &text[..cut]);
    }
    for bad in ["clusters/c/a\r", "clusters/c/a\nb"] {
        let with = ClusterIds { files: vec![(bad.to_owned(), id(2))], ..ids.clone() };
        let mut out = Vec::new();
        assert!(!with.write_to(&mut out).expect("written"), "{bad:?}");
        assert!(out.is_empty());
    }
}
