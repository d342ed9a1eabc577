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

/// The fixtures' command with a memo directory of its own: the fleet's names (`staging`) must
/// not show up in the memos other test crates inspect.
fn command() -> Command {
    let mut command = common::fixture_command();
    command.env("TFRS_CACHE_DIR", concat!(env!("CARGO_TARGET_TMPDIR"), "/tfrs-memo-fleet"));
    command
}

fn tfrs(args: &[&str]) -> Output {
    command().args(args).output().unwrap()
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
    let repo = bare(dir.path(), "repo.git");
    let expected = "--cluster `prd`: no TFRCluster of the inputs has this name; they define `dev` (fixtures/fleet/clusters.yaml:8:9), \
                    `staging` (fixtures/fleet/clusters.yaml:17:9), `prod` (fixtures/fleet/clusters.yaml:26:9); did you mean `prod`?";
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

/// A bare repository `name` in `dir` whose `HEAD` names `main`.
fn bare(dir: &Path, name: &str) -> std::path::PathBuf {
    let repo = dir.join(name);
    assert!(Command::new("git").args(["init", "-q", "--bare", "-b", "main", s(&repo)]).status().unwrap().success());
    repo
}

/// In `dir`: a bare repository holding a commit of the whole fleet, and a copy of the fleet to
/// edit (with the DEV ONLY demo keys it seals with, where its specs look for them).
fn committed_fleet(dir: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let repo = bare(dir, "gitops.git");
    ok(&["commit", FLEET, "--repo", s(&repo), "--author", AUTHOR, "-q"]);
    let fleet = dir.join("fleet");
    common::copy_dir(&common::root().join(FLEET), &fleet);
    common::copy_dir(&common::root().join("fixtures/demo/keys"), &dir.join("demo/keys"));
    (repo, fleet)
}

/// The commit subjects of `branch`, newest first.
fn subjects(repo: &Path, branch: &str) -> Vec<String> {
    let log = Command::new("git").args(["log", "--format=%s", branch]).current_dir(repo).output().unwrap();
    String::from_utf8(log.stdout).unwrap().lines().map(str::to_owned).collect()
}

/// Three commits of `dev`, `staging` and `prod` at once to `repo` (a path or URL naming the
/// repository at `path`): all three land, and together they are a commit of the whole fleet.
fn commit_concurrently(dir: &Path, repo: &str, path: &Path) {
    let cache = dir.join("cache");
    all_at_once(["dev", "staging", "prod"].map(|name| {
        let mut commit = command();
        commit.env("XDG_CACHE_HOME", &cache).args(["commit", FLEET, "--repo", repo, "--author", AUTHOR, "--cluster", name]);
        commit
    }));
    let landed = subjects(path, "main");
    let renders: Vec<&String> = landed.iter().filter(|s| s.starts_with("tfrs: render ")).collect();
    assert_eq!(renders.len(), 3, "{repo}: one commit per cluster, none lost: {landed:?}");
    for name in ["dev", "staging", "prod"] {
        assert_eq!(renders.iter().filter(|s| s.starts_with(&format!("tfrs: render {name} ("))).count(), 1, "{repo}: {landed:?}");
    }
    // The three commits hold exactly what one commit of the whole fleet would.
    let mut again = command();
    let output = again.env("XDG_CACHE_HOME", &cache).args(["commit", FLEET, "--repo", repo, "--author", AUTHOR]).output().unwrap();
    assert!(String::from_utf8_lossy(&output.stdout).starts_with("no changes: `main`"), "{repo}: {}", report(&output));
}

#[test]
fn concurrent_commits_of_different_clusters_all_land_and_compose_to_the_whole_fleet() {
    let dir = tempfile::tempdir().unwrap();
    let repo = bare(dir.path(), "gitops.git");
    commit_concurrently(dir.path(), s(&repo), &repo);
    // A diff of one cluster does not call the others removed.
    let diff = tfrs(&["diff", FLEET, "--repo", s(&repo), "--cluster", "dev"]);
    assert_eq!(diff.status.code(), Some(0), "{}", report(&diff));
}

#[test]
fn concurrent_commits_through_a_url_push_with_a_compare_and_swap() {
    // NB: libgit2 moves the branch of a remote on this machine without comparing it: the push
    // must bring its own compare-and-swap, or one of three commits is lost.
    let dir = tempfile::tempdir().unwrap();
    let repo = bare(dir.path(), "gitops.git");
    commit_concurrently(dir.path(), &format!("file://{}", s(&repo)), &repo);
}

#[test]
fn concurrent_commits_into_a_checkout_keep_its_index_whole() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("gitops");
    git(dir.path(), &["init", "-q", "-b", "main", s(&repo)]);
    git(&repo, &["commit", "-q", "--allow-empty", "-m", "init"]);
    commit_concurrently(dir.path(), s(&repo), &repo);
    assert_eq!(git(&repo, &["status", "--porcelain"]), "", "the work tree and index follow the last commit");
}

#[test]
fn a_push_from_a_clone_that_is_behind_brings_its_work_tree_along() {
    let dir = tempfile::tempdir().unwrap();
    let origin = bare(dir.path(), "origin.git");
    let seed = dir.path().join("seed");
    git(dir.path(), &["clone", "-q", s(&origin), s(&seed)]);
    std::fs::write(seed.join("README.md"), "one\n").unwrap();
    git(&seed, &["add", "README.md"]);
    git(&seed, &["commit", "-q", "-m", "readme"]);
    git(&seed, &["push", "-q", "origin", "main"]);
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    git(dir.path(), &["clone", "-q", s(&origin), s(&a)]);
    git(dir.path(), &["clone", "-q", s(&origin), s(&b)]);
    std::fs::write(seed.join("README.md"), "two\n").unwrap();
    git(&seed, &["commit", "-q", "-am", "upstream"]);
    git(&seed, &["push", "-q", "origin", "main"]);
    ok(&["commit", FLEET, "--repo", s(&a), "--author", AUTHOR, "--cluster", "dev", "--push", "-q"]);
    // b is two commits behind: its branch, work tree and index follow the remote's changes.
    ok(&["commit", FLEET, "--repo", s(&b), "--author", AUTHOR, "--cluster", "prod", "--push", "-q"]);
    assert_eq!(git(&b, &["status", "--porcelain"]), "", "nothing the remote changed is staged as a revert");
    assert_eq!(std::fs::read_to_string(b.join("README.md")).unwrap(), "two\n");
    assert!(b.join("clusters/dev/plan.json").exists() && b.join("clusters/prod/plan.json").exists());
    // A file written by hand where the move would write one: the push lands, the branch stays.
    std::fs::create_dir_all(a.join("clusters/prod")).unwrap();
    std::fs::write(a.join("clusters/prod/plan.json"), "mine\n").unwrap();
    let before = git(&a, &["rev-parse", "main"]);
    let output = tfrs(&["commit", FLEET, "--repo", s(&a), "--author", AUTHOR, "--cluster", "staging", "--push"]);
    assert_eq!(output.status.code(), Some(0), "{}", report(&output));
    assert!(report(&output).contains("but local `main` was left as it is"), "{}", report(&output));
    assert_eq!(std::fs::read_to_string(a.join("clusters/prod/plan.json")).unwrap(), "mine\n", "never overwritten");
    assert_eq!(git(&a, &["rev-parse", "main"]), before);
    assert_eq!(subjects(&origin, "main").len(), 5, "seed, upstream, dev, prod, staging");
}

#[test]
fn a_commit_with_nothing_to_change_repairs_the_rendered_part_of_the_work_tree() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("gitops");
    git(dir.path(), &["init", "-q", "-b", "main", s(&repo)]);
    ok(&["commit", FLEET, "--repo", s(&repo), "--author", AUTHOR, "-q"]);
    // As a run stopped after it moved the branch leaves them: a file cut short, an index entry
    // of the commit before.
    let plan = repo.join("clusters/dev/plan.json");
    let bytes = std::fs::read(&plan).unwrap();
    std::fs::write(&plan, b"").unwrap();
    git(&repo, &["rm", "-q", "--cached", "clusters/prod/plan.json"]);
    let stdout = ok(&["commit", FLEET, "--repo", s(&repo), "--author", AUTHOR]);
    assert!(stdout.starts_with("no changes: `main`"), "{stdout}");
    assert_eq!(std::fs::read(&plan).unwrap(), bytes);
    assert_eq!(git(&repo, &["status", "--porcelain"]), "");
}

/// Runs `git args` in `dir` (with an identity for commits) and returns its standard output.
fn git(dir: &Path, args: &[&str]) -> String {
    let output = Command::new("git")
        .args(["-c", "user.name=Fleet Test", "-c", "user.email=fleet@example.com"])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(output.status.success(), "git {args:?}: {}", report(&output));
    String::from_utf8(output.stdout).unwrap()
}

/// Bytes of every file but those below `clusters/<cluster>/`.
fn except(all: &BTreeMap<String, Vec<u8>>, cluster: &str) -> BTreeMap<String, Vec<u8>> {
    let prefix = format!("clusters/{cluster}/");
    all.iter().filter(|(path, _)| !path.starts_with(&prefix)).map(|(p, b)| (p.clone(), b.clone())).collect()
}

/// What is compared between two renders of one cluster: every file but the sealed ones (their
/// ciphertext is random in a first render).
fn plain(files: &BTreeMap<String, Vec<u8>>) -> BTreeMap<String, Vec<u8>> {
    files.iter().filter(|(p, _)| !p.contains("sealedsecret-")).map(|(p, b)| (p.clone(), b.clone())).collect()
}

#[test]
fn rendering_one_cluster_into_a_checkout_holding_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let repo = bare(dir.path(), "gitops.git");
    ok(&["commit", FLEET, "--repo", s(&repo), "--author", AUTHOR, "--cluster", "dev", "--cluster", "staging", "-q"]);
    let checkout = dir.path().join("checkout");
    git(dir.path(), &["clone", "-q", s(&repo), s(&checkout)]);
    std::fs::write(checkout.join("README.md"), "The fleet's GitOps repository.\n").unwrap();
    std::fs::write(checkout.join("clusters/README.md"), "One directory per cluster.\n").unwrap();
    git(&checkout, &["add", "README.md", "clusters/README.md"]);
    git(&checkout, &["commit", "-q", "-m", "readme"]);
    let before = files(&checkout);
    let stdout = ok(&["render", FLEET, "--out", s(&checkout), "--cluster", "prod"]);
    assert!(stdout.ends_with("; 2 other clusters kept)\n"), "{stdout}");
    let after = files(&checkout);
    assert_eq!(except(&after, "prod"), except(&before, "prod"), "nothing but `clusters/prod/` changes, `.git` included");
    assert!(!checkout.join(".tfrs-output").exists(), "no marker in a checkout");
    assert_eq!(git(&checkout, &["status", "--porcelain"]), "?? clusters/prod/\n");
    let alone = dir.path().join("alone");
    ok(&["render", FLEET, "--out", s(&alone), "--cluster", "prod"]);
    assert_eq!(plain(&cluster(&after, "prod")), plain(&cluster(&files(&alone), "prod")), "the same files as into an empty directory");
    // Again: nothing to do. Committed with Git and rendered again: still nothing.
    assert!(ok(&["render", FLEET, "--out", s(&checkout), "--cluster", "prod"]).contains("(0 changed, 0 removed;"));
    git(&checkout, &["add", "-A"]);
    git(&checkout, &["commit", "-q", "-m", "prod"]);
    assert!(ok(&["render", FLEET, "--out", s(&checkout)]).contains("(0 changed, 0 removed;"));
    assert_eq!(git(&checkout, &["status", "--porcelain"]), "");
    // Removing a cluster is explicit, and removes only its directory.
    ok(&["render", FLEET, "--out", s(&checkout), "--cluster", "prod", "--remove-cluster", "staging"]);
    let removed = files(&checkout);
    assert!(cluster(&removed, "staging").is_empty());
    assert_eq!((cluster(&removed, "dev"), cluster(&removed, "prod")), (cluster(&after, "dev"), cluster(&after, "prod")));
    assert!(checkout.join("clusters/README.md").exists() && checkout.join("README.md").exists());
}

/// Runs `commands` all at once: each must succeed.
fn all_at_once(commands: impl IntoIterator<Item = Command>) {
    let children: Vec<_> =
        commands.into_iter().map(|mut command| command.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap()).collect();
    for child in children {
        let output = child.wait_with_output().unwrap();
        assert_eq!(output.status.code(), Some(0), "{}", report(&output));
    }
}

/// Renders of `clusters`, all at once, into `out`: each succeeds.
fn render_concurrently(out: &Path, clusters: &[&str]) {
    all_at_once(clusters.iter().map(|name| {
        let mut render = command();
        render.args(["render", FLEET, "--out", s(out), "--cluster", name]);
        render
    }));
}

#[test]
fn concurrent_renders_of_different_clusters_into_one_directory_all_land() {
    let dir = tempfile::tempdir().unwrap();
    let (whole, out, new) = (dir.path().join("whole"), dir.path().join("gitops"), dir.path().join("new"));
    ok(&["render", FLEET, "--out", s(&whole)]);
    ok(&["render", FLEET, "--out", s(&out), "--cluster", "dev"]);
    render_concurrently(&out, &["staging", "prod"]);
    // Into a directory that does not exist yet: the first render creates it, the others wait.
    render_concurrently(&new, &["dev", "staging", "prod"]);
    let whole = files(&whole);
    for out in [&out, &new] {
        let after = files(out);
        for name in ["dev", "staging", "prod"] {
            assert_eq!(plain(&cluster(&after, name)), plain(&cluster(&whole, name)), "{name}: every render landed, one after the other");
        }
        assert_eq!(after.keys().filter(|p| !p.starts_with("clusters/")).collect::<Vec<_>>(), [".tfrs-output"]);
    }
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert!(left.iter().all(|name| !name.contains(".tfrs-")), "no staging left beside them: {left:?}");
}

#[test]
fn one_commit_carries_several_selected_clusters() {
    let dir = tempfile::tempdir().unwrap();
    let repo = bare(dir.path(), "gitops.git");
    ok(&["commit", FLEET, "--repo", s(&repo), "--author", AUTHOR, "--cluster", "prod", "--cluster", "dev", "-q"]);
    let landed = subjects(&repo, "main");
    assert_eq!(landed.len(), 1, "{landed:?}");
    assert!(landed[0].starts_with("tfrs: render dev, prod ("), "{landed:?}");
    let tree = Command::new("git").args(["ls-tree", "--name-only", "main", "clusters/"]).current_dir(&repo).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&tree.stdout), "clusters/dev\nclusters/prod\n");
    // The whole fleet, then one environment changed: the subject names the cluster that changed.
    let fleet = dir.path().join("fleet");
    common::copy_dir(&common::root().join(FLEET), &fleet);
    common::copy_dir(&common::root().join("fixtures/demo/keys"), &dir.path().join("demo/keys"));
    ok(&["commit", s(&fleet), "--repo", s(&repo), "--author", AUTHOR, "-q"]);
    let dev = fleet.join("environments/dev.yaml");
    std::fs::write(&dev, std::fs::read_to_string(&dev).unwrap().replace("v1.9.0-rc.1", "v1.9.0-rc.2")).unwrap();
    ok(&["commit", s(&fleet), "--repo", s(&repo), "--author", AUTHOR, "-q"]);
    let landed = subjects(&repo, "main");
    assert!(landed[0].starts_with("tfrs: render dev ("), "{landed:?}");
    assert!(landed[1].starts_with("tfrs: render staging ("), "dev and prod were there already: {landed:?}");
}

#[test]
fn one_declaration_placed_in_several_clusters_with_its_environments() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("gitops");
    ok(&["render", FLEET, "--out", s(&out)]);
    let tenant = |cluster: &str, name: &str| out.join(format!("clusters/{cluster}/components/namespaces/{name}"));
    let instances = |cluster: &str| {
        let text = std::fs::read_to_string(tenant(cluster, "acme").join("postgresql/cluster-acme-pg.yaml")).unwrap();
        text.lines().find_map(|l| l.trim().strip_prefix("instances: ").map(str::to_owned)).unwrap()
    };
    // acme is declared once, placed in three clusters, sized by each environment.
    assert_eq!([instances("dev"), instances("staging"), instances("prod")], ["1", "2", "3"]);
    // The same names in three clusters: where each is placed, and only there.
    for (cluster, tenants) in [("dev", vec!["acme"]), ("staging", vec!["acme", "globex"]), ("prod", vec!["acme", "billing", "globex"])] {
        let mut found: Vec<String> = std::fs::read_dir(out.join(format!("clusters/{cluster}/components/namespaces")))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        found.sort();
        assert_eq!(found, tenants, "{cluster}");
    }
    assert!(tenant("prod", "globex").join("servers/sales-bot").exists(), "sales-bot is placed in prod");
    assert!(!tenant("staging", "globex").join("servers").exists(), "and only in prod");
    let image = |cluster: &str| {
        let text: String =
            files(&tenant(cluster, "acme").join("servers/helpdesk")).into_values().map(|b| String::from_utf8(b).unwrap()).collect();
        text.lines().find_map(|l| l.trim().strip_prefix("image: docker.cnb.cool/turingfocus/tfrobot:").map(str::to_owned)).unwrap()
    };
    assert_eq!((image("dev"), image("prod")), ("v1.9.0-rc.1".to_owned(), "v1.8.0".to_owned()), "versions per environment");
    // Generated secrets of two clusters never coincide.
    let password = |cluster: &str| {
        common::unsealed(&tenant(cluster, "acme").join("postgresql/sealedsecret-acme-pg-credentials.yaml"))["password"].clone()
    };
    let (dev, prod) = (password("dev"), password("prod"));
    assert!(dev.as_str().is_some_and(|p| p.len() >= 16), "{dev}");
    assert_ne!(dev, prod, "a dev database password is never prod's");
    // `--explain` shows the environment layer, in the environment's file.
    let explained = ok(&["validate", FLEET, "--explain", "spec.postgresql.instances"]);
    assert!(explained.contains("TFRTenant/acme in cluster `prod` spec.postgresql.instances = 3\n  built-in default: 1\n  spec at fixtures/fleet/tenants.yaml:9:28: 1\n  environment `prod` at fixtures/fleet/environments/prod.yaml:6:28: 3  (wins)\n"), "{explained}");
    // In a fleet an object placed in one cluster says its cluster too.
    assert!(explained.contains("TFRTenant/billing in cluster `prod` spec.postgresql.instances = 1\n"), "{explained}");
}

/// A copy of the fleet with `edit` applied to the text of `file`; `tfrs validate` of it must
/// fail with exactly `first` as one of its error lines, and `tfrs render` of it must write nothing.
fn refused(file: &str, edit: impl Fn(&str) -> String, first: &str) {
    let dir = tempfile::tempdir().unwrap();
    let fleet = dir.path().join("fleet");
    common::copy_dir(&common::root().join(FLEET), &fleet);
    common::copy_dir(&common::root().join("fixtures/demo/keys"), &dir.path().join("demo/keys"));
    let path = fleet.join(file);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    std::fs::write(&path, edit(&text)).unwrap();
    let output = command().current_dir(dir.path()).args(["validate", "fleet"]).output().unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", report(&output));
    let stderr = String::from_utf8(output.stderr.clone()).unwrap();
    assert!(stderr.lines().any(|l| l == first), "expected `{first}`: {}", report(&output));
    let rendered = command().current_dir(dir.path()).args(["render", "fleet", "--out", "out"]).output().unwrap();
    assert_eq!(rendered.status.code(), Some(1), "{}", report(&rendered));
    assert!(!dir.path().join("out").exists(), "nothing is written");
}

#[test]
fn a_server_placed_in_a_cluster_that_lacks_its_tenant() {
    refused(
        "servers.yaml",
        |text| text.replace("  clusters: [prod]", "  clusters: [prod, dev]"),
        "fleet/servers.yaml:16:20: spec.clusters[1]: TFRTenant `globex` is not placed in cluster `dev` (it is placed in `staging`, `prod`)",
    );
}

#[test]
fn a_server_placed_in_no_cluster_is_refused_not_placed_everywhere() {
    refused(
        "servers.yaml",
        |text| text.replace("  clusters: [prod]", "  clusters: []"),
        "fleet/servers.yaml:16:13: spec.clusters: expected at least one cluster, found an empty list",
    );
}

#[test]
fn a_tenant_placed_nowhere_is_one_error_not_one_more_per_environment_naming_it() {
    let output = validate_edited(&[("tenants.yaml", &|text: &str| text.replace("  clusters: [staging, prod]", "  clusters: []"))]);
    assert_eq!(output.status.code(), Some(1), "{}", report(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("fleet/tenants.yaml:16:13: spec.clusters: expected at least one cluster, found an empty list"), "{stderr}");
    assert!(!stderr.contains("no TFRTenant `globex` is placed"), "the environments naming it are not blamed: {stderr}");
    assert!(!stderr.contains("no TFRServer `sales-bot` is placed"), "nor its server's: {stderr}");
}

#[test]
fn an_environment_that_does_not_parse_is_said_as_one_and_hides_what_it_caused() {
    let broken = validate_edited(&[("environments/staging.yaml", &|_: &str| "kind: [oops\n".to_owned())]);
    assert_eq!(broken.status.code(), Some(1), "{}", report(&broken));
    let stderr = String::from_utf8_lossy(&broken.stderr);
    assert!(stderr.starts_with("fleet/environments/staging.yaml:1:7: (environment): invalid YAML"), "{stderr}");
    assert!(!stderr.contains("warning:"), "no warning that follows from the missing environment: {stderr}");
    let scalar = validate_edited(&[("environments/staging.yaml", &|_: &str| "just a scalar\n".to_owned())]);
    let stderr = String::from_utf8_lossy(&scalar.stderr);
    assert!(
        stderr.contains("fleet/environments/staging.yaml:1:1: (environment): expected a map with `kind`, `metadata` and `spec`"),
        "{stderr}"
    );
}

#[test]
fn one_environment_in_two_files_is_refused_not_one_of_them_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let fleet = dir.path().join("fleet");
    common::copy_dir(&common::root().join(FLEET), &fleet);
    let environment = "kind: TFRTenant\nmetadata: { name: acme }\nspec:\n  postgresql: { instances: 3 }\n";
    std::fs::write(fleet.join("environments/staging.yml"), environment).unwrap();
    let other = dir.path().join("more");
    std::fs::create_dir_all(other.join("environments")).unwrap();
    std::fs::write(other.join("servers.yaml"), "").unwrap();
    std::fs::write(other.join("environments/prod.yaml"), environment).unwrap();
    for (inputs, expected) in [
        (vec!["fleet"], "`fleet/environments/staging.yaml` and `fleet/environments/staging.yml`"),
        (vec!["more", "fleet/clusters.yaml"], "`more/environments/prod.yaml` and `fleet/environments/prod.yaml`"),
    ] {
        let name = if inputs.len() == 1 { "staging" } else { "prod" };
        let output = command().current_dir(dir.path()).arg("validate").args(&inputs).output().unwrap();
        assert_ne!(output.status.code(), Some(0), "{}", report(&output));
        let expected = format!("environment `{name}` is defined by two files, {expected}: keep one (one environment, one file)");
        assert!(String::from_utf8_lossy(&output.stderr).contains(&expected), "{expected}: {}", report(&output));
    }
}

#[test]
fn a_host_taken_twice_in_one_cluster_names_the_cluster() {
    refused(
        "servers.yaml",
        |text| {
            text.replace("  tenant: acme\n", "  tenant: acme\n  host: bot.example.com\n")
                .replace("  clusters: [prod]\n", "  clusters: [prod]\n  host: bot.example.com\n")
        },
        "fleet/servers.yaml:18:9: spec.host: host `bot.example.com` is already used by TFRServer `helpdesk` in cluster `prod`",
    );
}

#[test]
fn a_namespace_an_environment_takes_names_the_cluster_and_where_it_is_set() {
    // acme takes globex's namespace in staging only: the error names staging and the line of
    // the environment that set it.
    refused(
        "environments/staging.yaml",
        |text| text.replacen("  postgresql: { instances: 2 }\n", "  postgresql: { instances: 2 }\n  namespace: globex\n", 1),
        "fleet/tenants.yaml:14:9: metadata.name: namespace `globex` is already used by TFRTenant `acme`, set at fleet/environments/staging.yaml:7:14 (in cluster `staging`)",
    );
}

#[test]
fn a_problem_of_some_placements_names_their_clusters_once() {
    // acme's front is turned on for all three clusters; prod's environment gives it an image,
    // so dev and staging lack one: said once, naming both.
    let tenant: Edit<'_> = &|text| {
        text.replacen(
            "  postgresql: { instances: 1, storage: 5Gi }\n",
            "  postgresql: { instances: 1, storage: 5Gi }\n  front: { enabled: true }\n",
            1,
        )
    };
    let prod: Edit<'_> = &|text| {
        text.replacen(
            "  sharedCache: { storageClass: nfs-client }\n",
            "  sharedCache: { storageClass: nfs-client }\n  front: { image: docker.cnb.cool/turingfocus/tfrobot-front:v1.8.0 }\n",
            1,
        )
    };
    let output = validate_edited(&[("tenants.yaml", tenant), ("environments/prod.yaml", prod)]);
    assert_eq!(output.status.code(), Some(1), "{}", report(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    let line = "fleet/tenants.yaml:10:10: spec.front.image: required when `front.enabled` is true (in clusters `dev` and `staging`)";
    assert_eq!(stderr.lines().filter(|l| *l == line).count(), 1, "{}", report(&output));
    assert!(stderr.contains("error: 1 error in 1 file"), "{}", report(&output));
}

#[test]
fn a_problem_at_an_overlay_line_names_each_cluster_once() {
    // One overlay, selected by staging and prod, turns on the front of every tenant there
    // (acme and globex, two objects at the same overlay line in each cluster).
    let dir = tempfile::tempdir().unwrap();
    let fleet = dir.path().join("fleet");
    common::copy_dir(&common::root().join(FLEET), &fleet);
    std::fs::create_dir_all(fleet.join("overlays")).unwrap();
    std::fs::write(fleet.join("overlays/shared.yaml"), "kind: TFRTenant\nspec:\n  front: { enabled: true }\n").unwrap();
    let clusters = std::fs::read_to_string(fleet.join("clusters.yaml")).unwrap();
    let clusters = clusters.replace("  environments: [staging]\n", "  environments: [staging]\n  overlays: [shared]\n");
    std::fs::write(
        fleet.join("clusters.yaml"),
        clusters.replace("  environments: [prod]\n", "  environments: [prod]\n  overlays: [shared]\n"),
    )
    .unwrap();
    let output = command().current_dir(dir.path()).args(["validate", "fleet"]).output().unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", report(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    let line =
        "fleet/overlays/shared.yaml:3:10: spec.front.image: required when `front.enabled` is true (in clusters `prod` and `staging`)";
    assert_eq!(stderr.lines().filter(|l| *l == line).count(), 1, "{}", report(&output));
}

#[test]
fn explain_names_the_cluster_in_a_fleet_whose_tenants_are_all_in_one() {
    // Two clusters, every tenant in prod: still a fleet, so each tenant says its cluster, and
    // a cluster is its own name.
    let dir = tempfile::tempdir().unwrap();
    let fleet = dir.path().join("fleet");
    common::copy_dir(&common::root().join(FLEET), &fleet);
    let tenants = std::fs::read_to_string(fleet.join("tenants.yaml")).unwrap();
    let tenants =
        tenants.replace("clusters: [dev, staging, prod]", "clusters: [prod]").replace("clusters: [staging, prod]", "clusters: [prod]");
    std::fs::write(fleet.join("tenants.yaml"), tenants).unwrap();
    for environment in ["dev", "staging"] {
        std::fs::write(fleet.join(format!("environments/{environment}.yaml")), "").unwrap();
    }
    let output = command().current_dir(dir.path()).args(["validate", "fleet", "--explain", "spec.postgresql.instances"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("TFRTenant/acme in cluster `prod` spec.postgresql.instances = 3\n"), "{}", report(&output));
    let ingress = command().current_dir(dir.path()).args(["validate", "fleet", "--explain", "spec.ingress.domain"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&ingress.stdout);
    assert!(stdout.contains("TFRCluster/prod spec.ingress.domain = \"tfrs.example.com\"\n"), "{}", report(&ingress));
}

#[test]
fn a_job_of_a_component_one_environment_turns_off_says_where_and_in_which_cluster() {
    let dev: Edit<'_> = &|text| {
        format!(
            "{text}---\napiVersion: tfrs.turingfocus.cn/v1alpha1\nkind: TFRTenant\nmetadata: {{ name: acme }}\nspec:\n  minio: {{ enabled: false }}\n"
        )
    };
    let output = validate_edited(&[("environments/dev.yaml", dev)]);
    assert_eq!(output.status.code(), Some(0), "{}", report(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    let line = "fleet/servers.yaml:6:1: warning: spec.jobs.minioInit: tenant `acme` has `minio` disabled at fleet/environments/dev.yaml:18:21, so this job is not rendered (in cluster `dev`)";
    assert!(stderr.lines().any(|l| l == line), "{}", report(&output));
}

#[test]
fn a_host_an_environment_sets_is_blamed_where_it_is_set() {
    // helpdesk (first) takes sales-bot's default host in prod: the error is at the line that
    // set it, not at sales-bot, which sets no host.
    refused(
        "environments/prod.yaml",
        |text| text.replace("  apiWorker: { replicas: 3 }\n", "  apiWorker: { replicas: 3 }\n  host: sales-bot.globex.tfrs.example.com\n"),
        "fleet/environments/prod.yaml:20:9: spec.host: host `sales-bot.globex.tfrs.example.com` is the default host of TFRServer `sales-bot` in cluster `prod`",
    );
}

#[test]
fn an_environment_that_names_a_missing_object() {
    refused(
        "environments/prod.yaml",
        |text| text.replacen("metadata: { name: acme }", "metadata: { name: acmee }", 1),
        "fleet/environments/prod.yaml:4:19: metadata.name: no TFRTenant `acmee` is placed in a cluster of environment `prod` (`prod`)",
    );
}

#[test]
fn an_environment_that_changes_a_server_outside_the_clusters_it_lists() {
    // globex is in staging, but sales-bot lists only prod.
    refused(
        "environments/staging.yaml",
        |text| {
            format!(
                "{text}---\napiVersion: tfrs.turingfocus.cn/v1alpha1\nkind: TFRServer\nmetadata: {{ name: sales-bot }}\nspec:\n  image: {{ tag: v9 }}\n"
            )
        },
        "fleet/environments/staging.yaml:17:19: metadata.name: no TFRServer `sales-bot` is placed in a cluster of environment `staging` (`staging`)",
    );
}

/// The error lines of `tfrs validate` over the fleet with `environments/prod.yaml` edited.
fn prod_environment_errors(edit: impl Fn(&str) -> String) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let fleet = dir.path().join("fleet");
    common::copy_dir(&common::root().join(FLEET), &fleet);
    let path = fleet.join("environments/prod.yaml");
    std::fs::write(&path, edit(&std::fs::read_to_string(&path).unwrap())).unwrap();
    let output = command().current_dir(dir.path()).args(["validate", "fleet"]).output().unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", report(&output));
    String::from_utf8_lossy(&output.stderr).lines().filter(|l| l.starts_with("fleet/")).map(str::to_owned).collect()
}

#[test]
fn an_unknown_field_of_an_environment_lists_only_what_an_environment_may_set_once() {
    let errors = prod_environment_errors(|text| text.replacen("  apiWorker: { replicas: 3 }", "  apiWorkr: { replicas: 3 }", 1));
    assert_eq!(
        errors,
        [
            "fleet/environments/prod.yaml:19:3: spec.apiWorkr: unknown field, expected one of `image`, `apiWorker`, `robotWorker`, `host`, `secretData`, `configData`, `confzData`, `confzCredentialOverrides`, `jobs`"
        ],
        "placement fields are not offered, and the merged server does not say it again"
    );
    let errors = prod_environment_errors(|text| {
        text.replacen("  apiWorker: { replicas: 3 }", "  clusters: [prod]\n  apiWorker: { replicas: 3 }", 1)
    });
    assert_eq!(errors, ["fleet/environments/prod.yaml:19:3: spec.clusters: not allowed in an environment"], "not also an unknown field");
}

#[test]
fn two_environments_that_disagree_on_one_field() {
    let eu = "apiVersion: tfrs.turingfocus.cn/v1alpha1\nkind: TFRTenant\nmetadata: { name: acme }\nspec:\n  postgresql: { instances: 5 }\n";
    let dir_edit = |text: &str| text.replace("  environments: [prod]", "  environments: [prod, eu]");
    let dir = tempfile::tempdir().unwrap();
    let fleet = dir.path().join("fleet");
    common::copy_dir(&common::root().join(FLEET), &fleet);
    std::fs::write(fleet.join("environments/eu.yaml"), eu).unwrap();
    let clusters = fleet.join("clusters.yaml");
    std::fs::write(&clusters, dir_edit(&std::fs::read_to_string(&clusters).unwrap())).unwrap();
    let output = command().current_dir(dir.path()).args(["validate", "fleet"]).output().unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", report(&output));
    assert_eq!(
        String::from_utf8_lossy(&output.stderr).lines().next(),
        Some(
            "fleet/environments/eu.yaml:5:28: spec.postgresql.instances: TFRTenant `acme` in cluster `prod`: environment `eu` and environment `prod` (at fleet/environments/prod.yaml:6:28) both set `spec.postgresql.instances`, differently"
        ),
        "{}",
        report(&output)
    );
}

#[test]
fn two_documents_of_one_environment_that_disagree() {
    let again =
        "---\napiVersion: tfrs.turingfocus.cn/v1alpha1\nkind: TFRTenant\nmetadata: { name: acme }\nspec:\n  postgresql: { instances: 4 }\n";
    refused(
        "environments/prod.yaml",
        |text| format!("{text}{again}"),
        "fleet/environments/prod.yaml:25:28: spec.postgresql.instances: TFRTenant `acme` in cluster `prod`: two documents of environment `prod` (the other at fleet/environments/prod.yaml:6:28) both set `spec.postgresql.instances`, differently",
    );
}

/// A new text of a file from its old text.
type Edit<'a> = &'a dyn Fn(&str) -> String;

/// `tfrs validate` of a copy of the fleet with each of `edits` applied to its file.
fn validate_edited(edits: &[(&str, Edit<'_>)]) -> Output {
    let dir = tempfile::tempdir().unwrap();
    let fleet = dir.path().join("fleet");
    common::copy_dir(&common::root().join(FLEET), &fleet);
    for (file, edit) in edits {
        let path = fleet.join(file);
        std::fs::write(&path, edit(&std::fs::read_to_string(&path).unwrap())).unwrap();
    }
    command().current_dir(dir.path()).args(["validate", "fleet"]).output().unwrap()
}

#[test]
fn a_misspelt_cluster_is_said_once_not_again_for_the_environments_it_misses() {
    let acme: Edit<'_> = &|text| text.replace("clusters: [dev, staging, prod]", "clusters: [dev, stagin, prod]");
    let output = validate_edited(&[("tenants.yaml", acme)]);
    assert_eq!(output.status.code(), Some(1), "{}", report(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.starts_with("fleet/tenants.yaml:8:19: spec.clusters[1]: unknown TFRCluster `stagin`"), "{}", report(&output));
    assert!(stderr.contains("error: 1 error in 1 file"), "acme's staging environment is not reported as unmatched: {}", report(&output));
    // An environment of another cluster that names a tenant with a misspelt cluster still is.
    let globex: Edit<'_> = &|text| text.replace("clusters: [staging, prod]", "clusters: [stagin, prod]");
    let dev: Edit<'_> = &|text| {
        format!(
            "{text}---\napiVersion: tfrs.turingfocus.cn/v1alpha1\nkind: TFRTenant\nmetadata: {{ name: globex }}\nspec:\n  redis: {{ enabled: true }}\n"
        )
    };
    let output = validate_edited(&[("tenants.yaml", globex), ("environments/dev.yaml", dev)]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("no TFRTenant `globex` is placed in a cluster of environment `dev`"), "{}", report(&output));
    assert!(!stderr.contains("environment `staging`"), "{}", report(&output));
}

#[test]
fn a_duplicate_server_is_said_once_not_again_for_its_host() {
    let again: Edit<'_> = &|text| {
        format!(
            "{text}---\napiVersion: tfrs.turingfocus.cn/v1alpha1\nkind: TFRServer\nmetadata:\n  name: invoices\nspec:\n  tenant: billing\n  image: {{ repository: r.example/bot, tag: v1 }}\n"
        )
    };
    let output = validate_edited(&[("servers.yaml", again)]);
    assert_eq!(output.status.code(), Some(1), "{}", report(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains(": metadata.name: duplicate TFRServer `invoices` in cluster `prod`"), "{}", report(&output));
    assert!(stderr.contains("error: 1 error in 1 file"), "no host clash with itself: {}", report(&output));
}

#[test]
fn placement_mistakes_name_their_place() {
    refused(
        "tenants.yaml",
        |text| text.replace("  cluster: prod\n", "  cluster: prod\n  clusters: [prod]\n"),
        "fleet/tenants.yaml:24:3: spec.clusters: set either `cluster` or `clusters`, not both",
    );
    refused(
        "clusters.yaml",
        |text| text.replace("  environments: [staging]", "  environments: [stagng]"),
        "fleet/clusters.yaml:19:18: spec.environments[0]: unknown environment `stagng` (defined: `dev`, `prod`, `staging`)",
    );
    refused(
        "tenants.yaml",
        |text| text.replace("  clusters: [staging, prod]", "  clusters: [staging, prod, staging]"),
        "fleet/tenants.yaml:16:29: spec.clusters[2]: `staging` is listed twice",
    );
    refused(
        "tenants.yaml",
        |text| text.replace("  clusters: [staging, prod]", "  clusters: [staging, prd]"),
        "fleet/tenants.yaml:16:23: spec.clusters[1]: unknown TFRCluster `prd` (defined: `dev`, `prod`, `staging`)",
    );
    refused(
        "servers.yaml",
        |text| text.replace("  clusters: [prod]", "  clusters: [prd]"),
        "fleet/servers.yaml:16:14: spec.clusters[0]: unknown TFRCluster `prd` (defined: `dev`, `prod`, `staging`)",
    );
    refused(
        "environments/staging.yaml",
        |text| text.replacen("metadata: { name: acme }", "metadata: { name: acme", 1),
        "fleet/environments/staging.yaml:5:5: (environment): invalid YAML: while parsing a flow mapping, did not find expected ',' or '}'",
    );
    // The same name twice in one cluster is a duplicate there (and only there).
    refused(
        "tenants.yaml",
        |text| {
            format!(
                "{text}---\napiVersion: tfrs.turingfocus.cn/v1alpha1\nkind: TFRTenant\nmetadata:\n  name: billing\nspec:\n  cluster: prod\n"
            )
        },
        "fleet/tenants.yaml:29:9: metadata.name: duplicate TFRTenant `billing` in cluster `prod`, first defined at fleet/tenants.yaml:21:9",
    );
    // A declaration that repeats another in all its clusters is one mistake, said once.
    let again = "---\napiVersion: tfrs.turingfocus.cn/v1alpha1\nkind: TFRTenant\nmetadata:\n  name: acme\nspec:\n  clusters: [dev, staging, prod]\n";
    let dir = tempfile::tempdir().unwrap();
    let fleet = dir.path().join("fleet");
    common::copy_dir(&common::root().join(FLEET), &fleet);
    let tenants = fleet.join("tenants.yaml");
    std::fs::write(&tenants, format!("{}{again}", std::fs::read_to_string(&tenants).unwrap())).unwrap();
    let output = command().current_dir(dir.path()).args(["validate", "fleet"]).output().unwrap();
    let errors: Vec<String> =
        String::from_utf8_lossy(&output.stderr).lines().filter(|l| l.starts_with("fleet/")).map(str::to_owned).collect();
    assert_eq!(
        errors,
        [
            "fleet/tenants.yaml:29:9: metadata.name: duplicate TFRTenant `acme` in clusters `dev`, `staging` and `prod`, first defined at fleet/tenants.yaml:6:9"
        ],
        "{}",
        report(&output)
    );
}

#[test]
fn plan_summarises_the_fleet_and_what_differs_between_clusters() {
    let text = ok(&["plan", FLEET]);
    assert_eq!(
        text,
        "cluster dev (environments: dev): 1 tenant, 1 server
  acme (namespace acme): helpdesk
cluster staging (environments: staging): 2 tenants, 1 server
  acme (namespace acme): helpdesk
  globex (namespace globex): no servers
cluster prod (environments: prod): 3 tenants, 3 servers
  acme (namespace acme): helpdesk
  globex (namespace globex): sales-bot
  billing (namespace billing): invoices

differs between clusters:
  TFRTenant acme:
    spec.postgresql.instances: dev 1, staging 2, prod 3
    spec.postgresql.storage: dev 5Gi, staging 5Gi, prod 50Gi
    spec.rabbitmq.enabled: dev false, staging true, prod true
    spec.sharedCache.storageClass: dev \"\", staging nfs-client, prod nfs-client
  TFRServer helpdesk:
    spec.apiWorker.replicas: dev 2, staging 2, prod 3
    spec.image.tag: dev v1.9.0-rc.1, staging v1.8.0, prod v1.8.0
"
    );
    let json: serde_json::Value =
        serde_json::from_str(&ok(&["plan", FLEET, "--format", "json", "--cluster", "prod", "--cluster", "dev"])).unwrap();
    let names: Vec<&str> = json["clusters"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["dev", "prod"]);
    let instances = json["differences"].as_array().unwrap().iter().find(|d| d["field"] == "spec.postgresql.instances").unwrap();
    assert_eq!(instances["values"], serde_json::json!({ "dev": 1, "prod": 3 }));
    // The graph of one cluster is that cluster's alone.
    let graph = ok(&["graph", FLEET, "--cluster", "dev"]);
    assert!(graph.starts_with("%% tfrs components of cluster `dev`\n"), "{graph}");
    assert!(graph.contains("namespaces/acme/servers/helpdesk") && !graph.contains("globex"), "{graph}");
}

/// `tfrs args`, run beside a copy of the fleet (`fleet/`) whose `file` has its first `from`
/// made `to`.
fn in_edited_fleet(file: &str, from: &str, to: &str, args: &[&str]) -> Output {
    let dir = tempfile::tempdir().unwrap();
    let fleet = dir.path().join("fleet");
    common::copy_dir(&common::root().join(FLEET), &fleet);
    let path = fleet.join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains(from), "{file} holds {from:?}");
    std::fs::write(&path, text.replacen(from, to, 1)).unwrap();
    command().current_dir(dir.path()).args(args).output().unwrap()
}

#[test]
fn plan_never_shows_a_literal_secret() {
    let literal = "s3cret-prod-only-literal";
    let postgresql = "  postgresql: { instances: 3, storage: 50Gi }";
    let output = in_edited_fleet(
        "environments/prod.yaml",
        postgresql,
        &format!("{postgresql}\n  redis: {{ password: {{ value: {literal} }} }}"),
        &["plan", "fleet"],
    );
    assert_eq!(output.status.code(), Some(0), "{}", report(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("spec.redis.password.value: dev (not set), staging (not set), prod <redacted>"), "{stdout}");
    assert!(!report(&output).contains(literal));
}

#[test]
fn plan_compares_the_namespace_in_effect() {
    let rabbitmq = "  rabbitmq: { enabled: false }";
    let output = in_edited_fleet("environments/dev.yaml", rabbitmq, &format!("{rabbitmq}\n  namespace: acme-dev"), &["plan", "fleet"]);
    assert_eq!(output.status.code(), Some(0), "{}", report(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("  acme (namespace acme-dev): helpdesk\n"), "{stdout}");
    assert!(stdout.contains("    spec.namespace: dev acme-dev, staging acme, prod acme\n"), "not the empty field: {stdout}");
}

#[test]
fn a_removed_server_is_one_line_per_object_in_the_diff() {
    let dir = tempfile::tempdir().unwrap();
    let (repo, fleet) = committed_fleet(dir.path());
    let servers = fleet.join("servers.yaml");
    let text = std::fs::read_to_string(&servers).unwrap();
    let kept = &text[..text.rfind("---\napiVersion: tfrs.turingfocus.cn/v1alpha1\nkind: TFRServer\nmetadata:\n  name: invoices").unwrap()];
    std::fs::write(&servers, kept).unwrap();
    let diff = command().current_dir(dir.path()).args(["diff", "fleet", "--repo", s(&repo)]).output().unwrap();
    assert_eq!(diff.status.code(), Some(1), "{}", report(&diff));
    let text = String::from_utf8(diff.stdout).unwrap();
    let removed: Vec<&str> = text.lines().filter(|l| l.starts_with("  - removed ")).collect();
    assert!(removed.len() >= 5, "each removed object on its line: {text}");
    let headers: Vec<&str> = text.lines().filter(|l| l.trim_start().starts_with("--- a/")).collect();
    assert!(headers.iter().all(|h| !h.contains("/servers/invoices/")), "no removed object is dumped: {headers:?}");
    assert!(
        headers.iter().all(|h| !h.ends_with("/kustomization.yaml") && !h.ends_with("/plan.json")),
        "bookkeeping files are not dumped: {headers:?}"
    );
    assert!(text.lines().count() < 3 * removed.len() + 40, "short: {text}");
    // Machines still get every diff.
    let json = command().current_dir(dir.path()).args(["diff", "fleet", "--repo", s(&repo), "--format", "json"]).output().unwrap();
    let document: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let objects = document["objects"].as_array().unwrap();
    assert!(objects.iter().any(|o| o["change"] == "removed" && !o["diff"].as_str().unwrap_or_default().is_empty()), "{document}");
    let markdown = command().current_dir(dir.path()).args(["diff", "fleet", "--repo", s(&repo), "--format", "markdown"]).output().unwrap();
    let markdown = String::from_utf8(markdown.stdout).unwrap();
    assert!(markdown.contains("removed objects and bookkeeping files</summary>") || markdown.contains("\n- removed "), "{markdown}");
    assert!(!markdown.contains("```diff\n--- a/clusters/prod/components/namespaces/billing/servers/invoices"), "{markdown}");
}

#[test]
fn the_diff_says_first_what_rolls_and_what_is_risky() {
    let dir = tempfile::tempdir().unwrap();
    let (repo, fleet) = committed_fleet(dir.path());
    let edit = |file: &str, from: &str, to: &str| {
        let path = fleet.join(file);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains(from), "{from}");
        std::fs::write(&path, text.replace(from, to)).unwrap();
    };
    let diff = |args: &[&str]| {
        command().current_dir(dir.path()).args([&["diff", "fleet", "--repo", s(&repo)][..], args].concat()).output().unwrap()
    };
    // An image bump rolls the server's workloads, and is not risky.
    edit("environments/dev.yaml", "tag: v1.9.0-rc.1", "tag: v1.9.0-rc.2");
    let bump = diff(&[]);
    assert_eq!(bump.status.code(), Some(1), "{}", report(&bump));
    let text = String::from_utf8(bump.stdout).unwrap();
    assert!(
        text.starts_with("rolls: dev Deployment acme/helpdesk-api (image api-worker docker.cnb.cool/turingfocus/tfrobot:v1.9.0-rc.1 -> docker.cnb.cool/turingfocus/tfrobot:v1.9.0-rc.2)\n"),
        "{text}"
    );
    assert!(!text.contains("RISKY"), "{text}");
    assert_eq!(diff(&["--fail-on", "risky"]).status.code(), Some(0), "an image bump is not risky");
    // A storage class change and fewer database instances are risky, and named.
    edit("environments/staging.yaml", "  postgresql: { instances: 2 }", "  postgresql: { instances: 1 }");
    edit("environments/staging.yaml", "storageClass: nfs-client }\n---", "storageClass: gp3 }\n---");
    edit("environments/prod.yaml", "storage: 50Gi", "storage: 20Gi");
    let risky = diff(&["--fail-on", "risky", "--format", "json"]);
    assert_eq!(risky.status.code(), Some(1), "{}", report(&risky));
    let document: serde_json::Value = serde_json::from_slice(&risky.stdout).unwrap();
    let risks: Vec<String> = document["summary"]["risks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| format!("{} {}: {}", r["cluster"].as_str().unwrap(), r["object"].as_str().unwrap(), r["reason"].as_str().unwrap()))
        .collect();
    assert_eq!(
        risks,
        [
            "prod Cluster acme/acme-pg: storage size decreased at spec.storage.size: 50Gi -> 20Gi",
            "staging Cluster acme/acme-pg: database instances decreased 2 -> 1",
            "staging PersistentVolumeClaim acme/shared-cache: storage class changed at spec.storageClassName: \"nfs-client\" -> \"gp3\"",
        ]
    );
    assert_eq!(
        document["summary"]["rolls"][0]["reasons"][0],
        "image api-worker docker.cnb.cool/turingfocus/tfrobot:v1.9.0-rc.1 -> docker.cnb.cool/turingfocus/tfrobot:v1.9.0-rc.2"
    );
}

#[test]
fn an_invalid_object_is_not_also_called_missing_by_its_environments() {
    let output = in_edited_fleet(
        "tenants.yaml",
        "postgresql: { instances: 1, storage: 5Gi }",
        "postgresql: { instances: one, storage: 5Gi }",
        &["validate", "fleet"],
    );
    assert_eq!(output.status.code(), Some(1), "{}", report(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("fleet/tenants.yaml:9:28: spec.postgresql.instances: expected an integer"), "{stderr}");
    assert!(!stderr.contains("is placed in a cluster of environment"), "no follow-on errors: {stderr}");
}

/// A fleet is rendered cluster by cluster, but a problem in one cluster still stops the whole
/// render: every cluster's problems are reported at once, and the previous tree (and no staged
/// leftover) is all there is afterwards.
#[test]
fn problems_of_several_clusters_are_reported_at_once_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("fleet");
    std::fs::create_dir_all(spec.join("environments")).unwrap();
    let cert = common::root().join("fixtures/demo/keys/sealed-secrets.pem");
    for file in
        ["clusters.yaml", "servers.yaml", "tenants.yaml", "environments/dev.yaml", "environments/staging.yaml", "environments/prod.yaml"]
    {
        let text = std::fs::read_to_string(Path::new(FLEET).join(file)).unwrap();
        std::fs::write(spec.join(file), text.replace("../demo/keys/sealed-secrets.pem", s(&cert))).unwrap();
    }
    let out = dir.path().join("out");
    ok(&["render", s(&spec), "--out", s(&out)]);
    let before = files(&out);
    let clusters = spec.join("clusters.yaml");
    let text = std::fs::read_to_string(&clusters).unwrap();
    // dev's and prod's certificates are missing; staging's is there.
    let mut broken = text.replacen(s(&cert), "missing-dev.pem", 1);
    let last = broken.rfind(s(&cert)).unwrap();
    broken.replace_range(last..last + s(&cert).len(), "missing-prod.pem");
    std::fs::write(&clusters, broken).unwrap();
    let output = tfrs(&["render", s(&spec), "--out", s(&out)]);
    assert_eq!(output.status.code(), Some(2), "an environment problem: {}", report(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("missing-dev.pem") && stderr.contains("missing-prod.pem"), "both clusters' problems: {stderr}");
    assert_eq!(files(&out), before, "the previous tree is untouched");
    let leftovers: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(leftovers.len(), 2, "no staging directory left: {leftovers:?}");
}

#[test]
fn validate_counts_each_placement_and_says_how_many_names_there_are() {
    assert_eq!(
        ok(&["validate", FLEET]),
        "valid: 3 TFRClusters, 6 TFRTenants, 5 TFRServers (one per cluster each is placed in: 3 tenant names and 3 server names)\n"
    );
}

/// A document placed in three clusters lacks a master key in each: each field of its text is
/// named once, not once per cluster.
#[test]
fn a_missing_master_key_names_each_place_of_a_shared_document_once() {
    let dir = tempfile::tempdir().unwrap();
    let output = command().env_remove("TFRS_MASTER_KEY").args(["render", FLEET, "--out", s(&dir.path().join("out"))]).output().unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", report(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    let places: Vec<&str> = stderr.lines().filter(|line| line.starts_with("  = also at ")).collect();
    let distinct: std::collections::BTreeSet<&&str> = places.iter().collect();
    assert!(places.len() > 1, "{}", report(&output));
    assert_eq!(places.len(), distinct.len(), "a place said twice: {}", report(&output));
    assert!(!stderr.contains("more places"), "{}", report(&output));
    assert!(!dir.path().join("out").exists(), "nothing written");
}
