//! A fleet in one output directory or repository (`fixtures/fleet`: dev, staging, prod):
//! `--cluster` renders, commits and diffs some clusters and never touches the others' files;
//! removing a cluster's output is an explicit `--remove-cluster`; concurrent commits of
//! different clusters to one branch all land; a `--cluster` that names no cluster is a usage
//! error that writes nothing.

#![allow(clippy::unwrap_used)] // a test crate: a panic is the failure report

mod common;

use common::report;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output, Stdio};

const FLEET: &str = "fixtures/fleet";
const AUTHOR: &str = "Fleet Test <fleet@example.com>";

fn tfrs(args: &[&str]) -> Output {
    common::fixture_command().args(args).output().unwrap()
}

fn ok(args: &[&str]) -> String {
    let output = tfrs(args);
    assert_eq!(output.status.code(), Some(0), "tfrs {args:?}: {}", report(&output));
    String::from_utf8(output.stdout).unwrap()
}

fn s(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// Every file below `dir`, by relative path, with its bytes.
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                out.insert(path.strip_prefix(root).unwrap().to_string_lossy().into_owned(), std::fs::read(&path).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

fn cluster(all: &BTreeMap<String, Vec<u8>>, name: &str) -> BTreeMap<String, Vec<u8>> {
    let prefix = format!("clusters/{name}/");
    all.iter().filter(|(path, _)| path.starts_with(&prefix)).map(|(p, b)| (p.clone(), b.clone())).collect()
}

#[test]
fn rendering_some_clusters_never_touches_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("gitops");
    ok(&["render", FLEET, "--out", s(&out)]);
    let full = files(&out);
    // Re-rendering prod alone: nothing changes, the other two are kept and said so.
    let stdout = ok(&["render", FLEET, "--out", s(&out), "--cluster", "prod"]);
    assert!(stdout.starts_with("rendered 1 cluster into "), "{stdout}");
    assert!(stdout.contains("(0 changed, 0 removed;") && stdout.ends_with("; 2 other clusters kept)\n"), "{stdout}");
    assert_eq!(files(&out), full, "a render of one cluster is that cluster's part of the render of all");
    // Another spec tree rendered into the same directory adds its cluster and keeps the fleet.
    ok(&["render", "fixtures/render-minimal", "--out", s(&out)]);
    let after = files(&out);
    for name in ["dev", "staging", "prod"] {
        assert_eq!(cluster(&after, name), cluster(&full, name), "{name} is kept byte for byte");
    }
    assert!(after.contains_key("clusters/bare/plan.json"));
    // Into an empty directory, prod alone renders prod's files only, the same but for ciphertext.
    let alone = dir.path().join("alone");
    ok(&["render", FLEET, "--out", s(&alone), "--cluster", "prod"]);
    let alone = files(&alone);
    assert!(alone.keys().all(|p| !p.starts_with("clusters/") || p.starts_with("clusters/prod/")), "{:?}", alone.keys());
    let plain = |files: &BTreeMap<String, Vec<u8>>| -> BTreeMap<String, Vec<u8>> {
        files.iter().filter(|(p, _)| !p.contains("sealedsecret-")).map(|(p, b)| (p.clone(), b.clone())).collect()
    };
    assert_eq!(plain(&cluster(&alone, "prod")), plain(&cluster(&full, "prod")));
}

#[test]
fn removing_a_clusters_output_is_explicit_and_checked() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("gitops");
    ok(&["render", FLEET, "--out", s(&out)]);
    let full = files(&out);
    for (remove, error) in [
        ("prod", "--remove-cluster `prod`: this render writes that cluster"),
        ("stagng", "--remove-cluster `stagng`: the output directory holds no such cluster (it holds `dev`, `prod`, `staging`)"),
    ] {
        let refused = tfrs(&["render", FLEET, "--out", s(&out), "--cluster", "prod", "--remove-cluster", remove]);
        assert_eq!(refused.status.code(), Some(2), "{}", report(&refused));
        assert!(String::from_utf8_lossy(&refused.stderr).contains(error), "{}", report(&refused));
        assert_eq!(files(&out), full, "a refused removal writes nothing");
    }
    let stdout = ok(&["render", FLEET, "--out", s(&out), "--cluster", "prod", "--remove-cluster", "staging"]);
    assert!(stdout.contains("; 1 other cluster kept)"), "{stdout}");
    let after = files(&out);
    assert!(cluster(&after, "staging").is_empty(), "staging is removed");
    assert_eq!(cluster(&after, "dev"), cluster(&full, "dev"));
    assert_eq!(cluster(&after, "prod"), cluster(&full, "prod"));
}

#[test]
fn an_unknown_cluster_is_a_usage_error_that_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("gitops");
    let repo = dir.path().join("repo.git");
    let init = Command::new("git").args(["init", "-q", "--bare", "-b", "main", s(&repo)]).output().unwrap();
    assert!(init.status.success());
    let expected = "--cluster `prd`: no TFRCluster of the inputs has this name; they define `dev` (fixtures/fleet/clusters.yaml:7:9), \
                    `staging` (fixtures/fleet/clusters.yaml:15:9), `prod` (fixtures/fleet/clusters.yaml:23:9); did you mean `prod`?";
    for args in [
        vec!["render", FLEET, "--out", s(&out), "--cluster", "prod", "--cluster", "prd"],
        vec!["commit", FLEET, "--repo", s(&repo), "--author", AUTHOR, "--cluster", "prd"],
        vec!["diff", FLEET, "--repo", s(&repo), "--cluster", "prd"],
    ] {
        let output = tfrs(&args);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {}", report(&output));
        assert_eq!(String::from_utf8_lossy(&output.stderr), format!("error: {expected}\n"), "{args:?}");
    }
    assert!(!out.exists(), "render wrote nothing");
    let branches = Command::new("git").args(["branch", "--list"]).current_dir(&repo).output().unwrap();
    assert!(branches.stdout.is_empty(), "commit wrote nothing");
}

/// The commit subjects of `branch`, newest first.
fn subjects(repo: &Path, branch: &str) -> Vec<String> {
    let log = Command::new("git").args(["log", "--format=%s", branch]).current_dir(repo).output().unwrap();
    String::from_utf8(log.stdout).unwrap().lines().map(str::to_owned).collect()
}

#[test]
fn concurrent_commits_of_different_clusters_all_land_and_compose_to_the_whole_fleet() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("gitops.git");
    let init = Command::new("git").args(["init", "-q", "--bare", "-b", "main", s(&repo)]).output().unwrap();
    assert!(init.status.success());
    let children: Vec<_> = ["dev", "staging", "prod"]
        .iter()
        .map(|name| {
            common::fixture_command()
                .args(["commit", FLEET, "--repo", s(&repo), "--author", AUTHOR, "--cluster", name])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        let output = child.wait_with_output().unwrap();
        assert_eq!(output.status.code(), Some(0), "{}", report(&output));
    }
    let landed = subjects(&repo, "main");
    assert_eq!(landed.len(), 3, "one commit per cluster, none lost: {landed:?}");
    for name in ["dev", "staging", "prod"] {
        assert_eq!(landed.iter().filter(|s| s.starts_with(&format!("tfrs: render {name} ("))).count(), 1, "{landed:?}");
    }
    // The three commits hold exactly what one commit of the whole fleet would.
    let stdout = ok(&["commit", FLEET, "--repo", s(&repo), "--author", AUTHOR]);
    assert!(stdout.starts_with("no changes: `main`"), "{stdout}");
    // A diff of one cluster does not call the others removed.
    let diff = tfrs(&["diff", FLEET, "--repo", s(&repo), "--cluster", "dev"]);
    assert_eq!(diff.status.code(), Some(0), "{}", report(&diff));
}

#[test]
fn one_commit_carries_several_selected_clusters() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("gitops.git");
    let init = Command::new("git").args(["init", "-q", "--bare", "-b", "main", s(&repo)]).output().unwrap();
    assert!(init.status.success());
    ok(&["commit", FLEET, "--repo", s(&repo), "--author", AUTHOR, "--cluster", "prod", "--cluster", "dev", "-q"]);
    let landed = subjects(&repo, "main");
    assert_eq!(landed.len(), 1, "{landed:?}");
    assert!(landed[0].starts_with("tfrs: render dev, prod ("), "{landed:?}");
    let tree = Command::new("git").args(["ls-tree", "--name-only", "main", "clusters/"]).current_dir(&repo).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&tree.stdout), "clusters/dev\nclusters/prod\n");
}
