//! `tfrs commit` and `tfrs diff` against local repositories and bare remotes in temp dirs:
//! no-op commits, only affected files change, foreign files kept, racing writers, pushes,
//! clone-cache URLs, diff exit codes and formats, and no secret value anywhere in the history.

mod common;

use common::sandbox::{AUTHOR, Sandbox, edit, path, tip};
use common::{report, root};
use git2::{ObjectType, Oid, Repository, TreeWalkMode, TreeWalkResult};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The commits of `branch`, newest first.
fn history(repo: &Path, branch: &str) -> Vec<Oid> {
    let repository = Repository::open(repo).expect("open");
    let mut walk = repository.revwalk().expect("revwalk");
    walk.push(tip(repo, branch)).expect("push");
    walk.map(|oid| oid.expect("oid")).collect()
}

/// Every file path of `commit`'s tree.
fn paths(repo: &Path, commit: Oid) -> BTreeSet<String> {
    let repository = Repository::open(repo).expect("open");
    let tree = repository.find_commit(commit).expect("commit").tree().expect("tree");
    let mut out = BTreeSet::new();
    tree.walk(TreeWalkMode::PreOrder, |dir, entry| {
        if entry.kind() == Some(ObjectType::Blob) {
            out.insert(format!("{dir}{}", entry.name().unwrap_or_default()));
        }
        TreeWalkResult::Ok
    })
    .expect("walk");
    out
}

/// The paths that differ between two commits.
fn changed(repo: &Path, old: Oid, new: Oid) -> BTreeSet<String> {
    let repository = Repository::open(repo).expect("open");
    let old = repository.find_commit(old).expect("commit").tree().expect("tree");
    let new = repository.find_commit(new).expect("commit").tree().expect("tree");
    let diff = repository.diff_tree_to_tree(Some(&old), Some(&new), None).expect("diff");
    diff.deltas().filter_map(|d| d.new_file().path().or(d.old_file().path()).map(|p| p.display().to_string())).collect()
}

fn blob(repo: &Path, commit: Oid, file: &str) -> Vec<u8> {
    let repository = Repository::open(repo).expect("open");
    let tree = repository.find_commit(commit).expect("commit").tree().expect("tree");
    let entry = tree.get_path(Path::new(file)).expect("file in tree");
    repository.find_blob(entry.id()).expect("blob").content().to_vec()
}

#[test]
fn committing_an_unchanged_render_twice_makes_one_commit() {
    let sandbox = Sandbox::new();
    let repo = sandbox.bare("gitops.git");
    let spec = sandbox.fixture("render-sops-docker-desktop", "laptop");
    let first = sandbox.commit(&spec, &repo, &[]);
    assert!(first.starts_with("committed "), "{first}");
    let commit = tip(&repo, "main");
    let second = sandbox.commit(&spec, &repo, &[]);
    assert!(second.starts_with("no changes"), "{second}");
    assert_eq!(history(&repo, "main"), vec![commit], "exactly one commit");
    // The committed tree is what `tfrs render` writes (sealed secrets included, by reuse).
    let all = paths(&repo, commit);
    assert!(all.iter().all(|p| p.starts_with("clusters/laptop/")), "{all:?}");
    assert!(all.contains("clusters/laptop/plan.json"));
    let message = Repository::open(&repo).expect("open").find_commit(commit).expect("commit").message().expect("utf-8").to_owned();
    assert!(message.starts_with("tfrs: render laptop ("), "{message}");
    assert!(message.contains("\nlaptop cluster/image-registry: 3 added, 0 changed, 0 removed, 1 secret value\n  added Namespace tfr-image-credentials\n  added Secret tfr-image-credentials/cnb-registry-secret (secret .dockerconfigjson added)\n"), "{message}");
}

#[test]
fn the_demo_recommits_as_a_no_op_renders_back_to_its_bytes_and_never_leaks_a_secret() {
    let sandbox = Sandbox::new();
    let repo = sandbox.bare("gitops.git");
    let spec = sandbox.fixture("demo", "demo");
    sandbox.commit(&spec, &repo, &[]);
    let first = tip(&repo, "main");
    assert!(sandbox.commit(&spec, &repo, &[]).starts_with("no changes"));
    assert_eq!(history(&repo, "main"), vec![first]);

    // `tfrs render` over a checkout of the commit reproduces its bytes (sealed values reused).
    let out = sandbox.path().join("out");
    for file in paths(&repo, first) {
        let target = out.join(&file);
        std::fs::create_dir_all(target.parent().expect("parent")).expect("mkdir");
        std::fs::write(target, blob(&repo, first, &file)).expect("write");
    }
    std::fs::write(out.join(".tfrs-output"), "").expect("marker");
    let check = sandbox.tfrs(&["render", path(&spec), "--out", path(&out), "--check"]);
    assert_eq!(check.status.code(), Some(0), "{}", report(&check));

    std::fs::write(spec.join("secrets/registry-password.txt"), "rotated-dev-only-token-9876543210\n").expect("write");
    let out = sandbox.commit(&spec, &repo, &[]);
    assert!(out.contains("(secret .dockerconfigjson rotated)"), "{out}");
    let secrets = plaintexts(&sandbox, &repo, &spec.join("keys"));
    assert!(secrets.len() >= 10, "every sealed value of the demo is scanned: {}", secrets.len());
    let mut all = secrets;
    all.push("dev-only-registry-token-not-a-real-secret".to_owned());
    assert_no_plaintext(&repo, &all);
}

#[test]
fn a_changed_version_changes_only_its_files() {
    let sandbox = Sandbox::new();
    let repo = sandbox.bare("gitops.git");
    let spec = sandbox.fixture("render-sops-docker-desktop", "laptop");
    sandbox.commit(&spec, &repo, &[]);
    let before = tip(&repo, "main");
    edit(
        &spec.join("spec.yaml"),
        "  tfrsOperator: { enabled: true }\n",
        "  tfrsOperator: { enabled: true }\n  certManager: { version: v1.99.0 }\n",
    );
    let out = sandbox.commit(&spec, &repo, &["--message", "Bump cert-manager"]);
    assert!(out.contains("laptop cluster/cert-manager: 0 added, 1 changed, 0 removed"), "{out}");
    let after = tip(&repo, "main");
    assert_eq!(
        changed(&repo, before, after),
        BTreeSet::from(["clusters/laptop/components/cluster/cert-manager/ocirepository-cert-manager.yaml".to_owned()])
    );
    let message = Repository::open(&repo).expect("open").find_commit(after).expect("commit").message().expect("utf-8").to_owned();
    let (body, trailers) = message.split_once("\n\nTfrs-").expect("provenance trailers");
    assert_eq!(
        body,
        "Bump cert-manager\n\nlaptop cluster/cert-manager: 0 added, 1 changed, 0 removed\n  changed OCIRepository flux-system/cert-manager"
    );
    assert!(trailers.starts_with("Version: 0.1.0 (commit ") && trailers.ends_with("\nTfrs-Clusters: laptop\n"), "{message}");
}

#[test]
fn a_rotated_secret_is_named_in_the_message_but_never_its_value() {
    let sandbox = Sandbox::new();
    let repo = sandbox.bare("gitops.git");
    let spec = sandbox.demo_cluster();
    sandbox.commit(&spec, &repo, &[]);
    std::fs::write(spec.join("secrets/registry-password.txt"), "rotated-dev-only-token-0123456789\n").expect("write");
    let out = sandbox.commit(&spec, &repo, &[]);
    assert!(out.contains("changed SealedSecret tfr-image-credentials/cnb-registry-secret (secret .dockerconfigjson rotated)"), "{out}");
    let secrets = plaintexts(&sandbox, &repo, &spec.join("keys"));
    assert!(secrets.iter().any(|s| s == "rotated-dev-only-token-0123456789"), "the scan knows the new value: {}", secrets.len());
    let mut all = secrets;
    all.push("dev-only-registry-token-not-a-real-secret".to_owned());
    assert_no_plaintext(&repo, &all);
}

#[test]
fn files_outside_the_rendered_clusters_are_kept() {
    let sandbox = Sandbox::new();
    let work = sandbox.path().join("work");
    std::fs::create_dir_all(work.join("clusters/other")).expect("mkdir");
    std::fs::create_dir_all(work.join("clusters/laptop")).expect("mkdir");
    std::fs::write(work.join("README.md"), "# gitops\n").expect("write");
    std::fs::write(work.join("clusters/other/keep.yaml"), "kind: ConfigMap\n").expect("write");
    std::fs::write(work.join("clusters/laptop/stale.yaml"), "kind: ConfigMap\n").expect("write");
    sandbox.git(&work, &["init", "-q", "-b", "main"]);
    sandbox.git(&work, &["add", "."]);
    sandbox.git(&work, &["commit", "-q", "-m", "start"]);
    let spec = sandbox.fixture("render-sops-docker-desktop", "laptop");
    sandbox.commit(&spec, &work, &[]);
    let commit = tip(&work, "main");
    let all = paths(&work, commit);
    assert!(all.contains("README.md") && all.contains("clusters/other/keep.yaml"), "{all:?}");
    assert!(!all.contains("clusters/laptop/stale.yaml"), "`clusters/laptop/` is replaced whole");
    assert!(all.contains("clusters/laptop/kustomization.yaml"));
    // The checked-out branch's work tree follows the commit.
    assert!(work.join("clusters/laptop/plan.json").exists());
    assert!(!work.join("clusters/laptop/stale.yaml").exists());
    let status = sandbox.command("git").current_dir(&work).args(["status", "--porcelain"]).output().expect("git status");
    assert_eq!(String::from_utf8_lossy(&status.stdout), "", "clean work tree and index");
}

#[test]
fn racing_commits_all_land() {
    let sandbox = Sandbox::new();
    let repo = sandbox.bare("gitops.git");
    let specs: Vec<PathBuf> = ["alpha", "beta", "gamma"].iter().map(|c| sandbox.minimal(c)).collect();
    let children: Vec<std::process::Child> = specs
        .iter()
        .map(|spec| {
            sandbox
                .command(env!("CARGO_BIN_EXE_tfrs"))
                .args(["commit", path(spec), "--repo", path(&repo), "--author", AUTHOR])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("spawn")
        })
        .collect();
    for child in children {
        let output = child.wait_with_output().expect("wait");
        assert_eq!(output.status.code(), Some(0), "{}", report(&output));
    }
    let commits = history(&repo, "main");
    assert_eq!(commits.len(), 3, "one commit per writer, none lost");
    let all = paths(&repo, commits[0]);
    for cluster in ["alpha", "beta", "gamma"] {
        assert!(all.contains(&format!("clusters/{cluster}/plan.json")), "{cluster} is in the tip: {all:?}");
    }
}

#[test]
fn push_to_a_bare_remote_and_from_a_stale_clone() {
    let sandbox = Sandbox::new();
    let remote = sandbox.bare("remote.git");
    let first = sandbox.path().join("first");
    let second = sandbox.path().join("second");
    // An initial commit so both clones have `main`.
    let seed = sandbox.path().join("seed");
    std::fs::create_dir_all(&seed).expect("mkdir");
    std::fs::write(seed.join("README.md"), "# gitops\n").expect("write");
    sandbox.git(&seed, &["init", "-q", "-b", "main"]);
    sandbox.git(&seed, &["add", "."]);
    sandbox.git(&seed, &["commit", "-q", "-m", "start"]);
    sandbox.git(&seed, &["push", "-q", path(&remote), "main"]);
    sandbox.git(sandbox.path(), &["clone", "-q", path(&remote), path(&first)]);
    sandbox.git(sandbox.path(), &["clone", "-q", path(&remote), path(&second)]);

    let out = sandbox.commit(&sandbox.minimal("alpha"), &first, &["--push"]);
    assert!(out.contains("pushed `main` to `origin`"), "{out}");
    assert_eq!(tip(&remote, "main"), tip(&first, "main"));

    // `second` has not seen alpha's commit: it fetches, builds on the new tip, and pushes.
    let out = sandbox.commit(&sandbox.minimal("beta"), &second, &["--push"]);
    assert!(out.contains("pushed `main` to `origin`"), "{out}");
    let commits = history(&remote, "main");
    assert_eq!(commits.len(), 3);
    let all = paths(&remote, commits[0]);
    assert!(all.contains("README.md") && all.contains("clusters/alpha/plan.json") && all.contains("clusters/beta/plan.json"), "{all:?}");
    assert_eq!(tip(&second, "main"), commits[0], "the local branch follows");
}

#[test]
fn a_url_repository_is_cloned_into_the_cache_and_pushed() {
    let sandbox = Sandbox::new();
    let remote = sandbox.bare("remote.git");
    let url = format!("file://{}", path(&remote));
    let spec = sandbox.minimal("alpha");
    let out = sandbox.tfrs(&["commit", path(&spec), "--repo", &url, "--author", AUTHOR]);
    assert_eq!(out.status.code(), Some(0), "{}", report(&out));
    let commit = tip(&remote, "main");
    assert!(paths(&remote, commit).contains("clusters/alpha/plan.json"));
    assert!(sandbox.path().join("cache/tfrs/repos").read_dir().expect("cache").next().is_some(), "cloned under XDG_CACHE_HOME");
    let out = sandbox.tfrs(&["commit", path(&spec), "--repo", &url, "--author", AUTHOR]);
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("no changes"), "{}", report(&out));
    let out = sandbox.tfrs(&["diff", path(&spec), "--repo", &url]);
    assert_eq!(out.status.code(), Some(0), "{}", report(&out));
    // The memo's cache directory holds the clone too when it is set.
    let own = sandbox.path().join("own-cache");
    let out = sandbox
        .command(env!("CARGO_BIN_EXE_tfrs"))
        .env("TFRS_CACHE_DIR", &own)
        .args(["diff", path(&spec), "--repo", &url])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", report(&out));
    assert!(own.join("repos").read_dir().expect("cloned under TFRS_CACHE_DIR").next().is_some());
}

#[test]
fn the_author_comes_from_the_environment_or_the_command_fails_clearly() {
    let sandbox = Sandbox::new();
    let repo = sandbox.bare("gitops.git");
    let spec = sandbox.minimal("alpha");
    let out = sandbox.tfrs(&["commit", path(&spec), "--repo", path(&repo)]);
    assert_eq!(out.status.code(), Some(2), "{}", report(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no commit author"), "{}", report(&out));
    let out = sandbox
        .command(env!("CARGO_BIN_EXE_tfrs"))
        .args(["commit", path(&spec), "--repo", path(&repo)])
        .env("GIT_AUTHOR_NAME", "Env Author")
        .env("GIT_AUTHOR_EMAIL", "env@example.com")
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0), "{}", report(&out));
    let repository = Repository::open(&repo).expect("open");
    let commit = repository.find_commit(tip(&repo, "main")).expect("commit");
    assert_eq!((commit.author().name(), commit.author().email()), (Ok("Env Author"), Ok("env@example.com")));
}

/// Masks what changes from run to run (commit ids) in diff output.
fn stable(text: &[u8], sandbox: &Path) -> String {
    let text = String::from_utf8_lossy(text).replace(&sandbox.display().to_string(), "[sandbox]");
    let mut out = String::new();
    for line in text.lines() {
        if line.trim_start().starts_with("\"commit\":") {
            out.push_str("  \"commit\": \"[commit]\",\n");
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

#[test]
fn diff_exit_codes_and_formats() {
    let sandbox = Sandbox::new();
    let repo = sandbox.bare("gitops.git");
    let spec = sandbox.fixture("render-sops-docker-desktop", "laptop");
    // NB: the specs are in a Git work tree, so the commit records their commit and the diff
    // traces each change to the spec field that made it.
    sandbox.git(&spec, &["init", "-q"]);
    sandbox.git(&spec, &["add", "-A"]);
    sandbox.git(&spec, &["commit", "-qm", "specs"]);
    sandbox.commit(&spec, &repo, &[]);

    let out = sandbox.tfrs(&["diff", path(&spec), "--repo", path(&repo)]);
    assert_eq!(out.status.code(), Some(0), "{}", report(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "no changes against `main`\n");

    // A version bump (plain diff) and a new registry user (a rotated sealed value).
    edit(
        &spec.join("spec.yaml"),
        "  tfrsOperator: { enabled: true }\n",
        "  tfrsOperator: { enabled: true }\n  certManager: { version: v1.99.0 }\n",
    );
    edit(&spec.join("spec.yaml"), "username: { value: dev }", "username: { value: developer }");
    let committed = tip(&repo, "main");
    for format in ["text", "markdown", "json"] {
        let out = sandbox.tfrs(&["diff", path(&spec), "--repo", path(&repo), "--format", format]);
        assert_eq!(out.status.code(), Some(1), "{format}: {}", report(&out));
        let text = stable(&out.stdout, sandbox.path());
        assert!(!text.contains('\x1b'), "no colour when piped");
        assert!(out.stderr.is_empty(), "the base's specs are read: {}", report(&out));
        assert!(!text.contains("ENC[") && !text.contains("BEGIN AGE"), "no ciphertext: {text}");
        insta::assert_snapshot!(format!("diff_{format}"), text);
    }
    let json: serde_json::Value =
        serde_json::from_slice(&sandbox.tfrs(&["diff", path(&spec), "--repo", path(&repo), "--format", "json"]).stdout).expect("json");
    assert_eq!(json["commit"], committed.to_string());
    assert_eq!(tip(&repo, "main"), committed, "diff never writes");

    // A branch that does not exist yet is an empty tree (a new repository's first pull request);
    // a revision that resolves to nothing is an error.
    let out = sandbox.tfrs(&["diff", path(&spec), "--repo", path(&repo), "--ref", "no-such-branch"]);
    assert_eq!(out.status.code(), Some(1), "{}", report(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("note: `no-such-branch` does not exist in") && stderr.contains("yet (its branches: main)"), "{}", report(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("(its branches: main)"), "in the report too: {}", report(&out));
    let out = sandbox.tfrs(&["diff", path(&spec), "--repo", path(&repo), "--ref", "main~99"]);
    assert_eq!(out.status.code(), Some(2), "{}", report(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot resolve `main~99`"), "{}", report(&out));
    let out = sandbox.tfrs(&["diff", path(&root().join("fixtures/err-missing-kind")), "--repo", path(&repo)]);
    assert_eq!(out.status.code(), Some(2), "an invalid spec is an error: {}", report(&out));
}

/// The plaintext secret values of every sealed object in `repo`'s tip, opened with the DEV
/// ONLY keys: whole values and the credential fields inside them.
fn plaintexts(sandbox: &Sandbox, repo: &Path, keys: &Path) -> Vec<String> {
    let commit = tip(repo, "main");
    let scratch = sandbox.path().join("scratch.yaml");
    let mut values = Vec::new();
    for file in paths(repo, commit) {
        let bytes = blob(repo, commit, &file);
        let text = String::from_utf8_lossy(&bytes);
        let key = if text.contains("kind: SealedSecret") {
            ["--private-key", "sealed-secrets.key"]
        } else if text.contains("\nsops:\n") {
            ["--age-identity", "age.txt"]
        } else {
            continue;
        };
        std::fs::write(&scratch, &bytes).expect("write");
        let out = sandbox.tfrs(&["unseal", key[0], path(&keys.join(key[1])), path(&scratch)]);
        assert_eq!(out.status.code(), Some(0), "{file}: {}", report(&out));
        let documents = tfrs_gitops::spec::yaml::parse(0, &String::from_utf8_lossy(&out.stdout)).expect("unsealed YAML");
        let secret = documents[0].to_json();
        for (key, value) in secret["stringData"].as_object().expect("stringData").iter() {
            // NB: a user name is not secret (it is in the Postgres cluster spec, on purpose).
            if key.eq_ignore_ascii_case("username") || key.eq_ignore_ascii_case("user") {
                continue;
            }
            let value = value.as_str().expect("string").to_owned();
            if let Ok(inner) = serde_json::from_str::<serde_json::Value>(&value) {
                collect_credentials(&inner, &mut values);
            }
            values.push(value);
        }
    }
    values.retain(|v| v.len() >= 8);
    values
}

fn collect_credentials(value: &serde_json::Value, out: &mut Vec<String>) {
    match value {
        serde_json::Value::Object(map) => {
            for (key, value) in map {
                match value.as_str() {
                    Some(text) if ["password", "auth", "token"].contains(&key.as_str()) => out.push(text.to_owned()),
                    _ => collect_credentials(value, out),
                }
            }
        }
        serde_json::Value::Array(items) => items.iter().for_each(|v| collect_credentials(v, out)),
        _ => {}
    }
}

/// Where any value occurs in a blob or commit message of any commit reachable from any ref,
/// and how many commits were scanned.
fn find_plaintext(repo: &Path, values: &[String]) -> (Vec<String>, usize) {
    assert!(!values.is_empty());
    let repository = Repository::open(repo).expect("open");
    let mut walk = repository.revwalk().expect("revwalk");
    for reference in repository.references().expect("refs") {
        if let Some(target) = reference.expect("ref").target() {
            walk.push(target).expect("push");
        }
    }
    let mut found = Vec::new();
    let mut commits = 0;
    for oid in walk {
        let commit = repository.find_commit(oid.expect("oid")).expect("commit");
        commits += 1;
        if values.iter().any(|v| contains(commit.message_raw_bytes(), v.as_bytes())) {
            found.push(format!("message of {}", commit.id()));
        }
        commit
            .tree()
            .expect("tree")
            .walk(TreeWalkMode::PreOrder, |dir, entry| {
                if entry.kind() == Some(ObjectType::Blob) {
                    let blob = repository.find_blob(entry.id()).expect("blob");
                    if values.iter().any(|v| contains(blob.content(), v.as_bytes())) {
                        found.push(format!("{dir}{} of {}", entry.name().unwrap_or_default(), commit.id()));
                    }
                }
                TreeWalkResult::Ok
            })
            .expect("walk");
    }
    (found, commits)
}

fn assert_no_plaintext(repo: &Path, values: &[String]) {
    let (found, commits) = find_plaintext(repo, values);
    assert!(commits >= 2, "scanned {commits} commits");
    assert_eq!(found, Vec::<String>::new(), "secret values in the history");
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

#[test]
fn the_secret_scan_finds_a_planted_value() {
    // The scan above must be able to fail: plant a value and see it found.
    let sandbox = Sandbox::new();
    let repo = sandbox.bare("gitops.git");
    sandbox.commit(&sandbox.minimal("alpha"), &repo, &[]);
    let repository = Repository::open(&repo).expect("open");
    let parent = repository.find_commit(tip(&repo, "main")).expect("commit");
    let mut update = git2::build::TreeUpdateBuilder::new();
    update.upsert("leak.txt", repository.blob(b"token=planted-value-123").expect("blob"), git2::FileMode::Blob);
    let tree = repository.find_tree(update.create_updated(&repository, &parent.tree().expect("tree")).expect("tree")).expect("tree");
    let signature = git2::Signature::now("t", "t@example.com").expect("signature");
    repository.commit(Some("refs/heads/main"), &signature, &signature, "leak", &tree, &[&parent]).expect("commit");
    let (found, commits) = find_plaintext(&repo, &["planted-value-123".to_owned()]);
    assert_eq!(commits, 2);
    assert_eq!(found, vec![format!("leak.txt of {}", tip(&repo, "main"))]);
}

#[test]
fn without_branch_commit_and_diff_use_the_repositorys_default_branch() {
    let sandbox = Sandbox::new();
    let spec = sandbox.minimal("alpha");
    // A local repository: the branch its `HEAD` names, even before its first commit.
    let repo = sandbox.bare_on("trunk.git", "trunk");
    let stdout = sandbox.commit(&spec, &repo, &[]);
    assert!(stdout.contains("to `trunk`"), "{stdout}");
    assert!(paths(&repo, tip(&repo, "trunk")).contains("clusters/alpha/plan.json"));
    assert!(Repository::open(&repo).expect("open").find_reference("refs/heads/main").is_err(), "nothing on `main`");
    let diff = sandbox.tfrs(&["diff", path(&spec), "--repo", path(&repo)]);
    assert_eq!(diff.status.code(), Some(0), "compared with `trunk`: {}", report(&diff));
    // A URL: the remote's `HEAD`.
    let url = format!("file://{}", path(&repo));
    let other = sandbox.minimal("beta");
    let out = sandbox.tfrs(&["commit", path(&other), "--repo", &url, "--author", AUTHOR]);
    assert_eq!(out.status.code(), Some(0), "{}", report(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("to `trunk`"), "{}", report(&out));
    assert!(paths(&repo, tip(&repo, "trunk")).contains("clusters/beta/plan.json"));
    let json = sandbox.tfrs(&["diff", path(&other), "--repo", &url, "--format", "json"]);
    assert_eq!(json.status.code(), Some(0), "{}", report(&json));
    let document: serde_json::Value = serde_json::from_slice(&json.stdout).expect("json");
    assert_eq!(document["ref"], "trunk");
}

#[test]
fn a_branch_that_does_not_exist_yet_diffs_as_an_empty_tree() {
    let sandbox = Sandbox::new();
    let spec = sandbox.minimal("alpha");
    let repo = sandbox.bare("new.git");
    let url = format!("file://{}", path(&repo));
    for target in [path(&repo).to_owned(), url] {
        let out = sandbox.tfrs(&["diff", path(&spec), "--repo", &target, "--format", "json"]);
        assert_eq!(out.status.code(), Some(1), "everything is added: {}", report(&out));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("note: `main` does not exist in") && stderr.contains("compared with an empty tree"), "{stderr}");
        let document: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
        assert_eq!(document["commit"], serde_json::Value::Null);
        assert_eq!(document["totals"]["removed"], 0);
        assert_eq!(document["totals"]["changed"], 0);
        assert!(document["totals"]["added"].as_u64().is_some_and(|n| n > 0), "{document}");
    }
    // A revision that resolves to nothing is still an error, not an empty tree.
    sandbox.commit(&spec, &repo, &[]);
    let out = sandbox.tfrs(&["diff", path(&spec), "--repo", path(&repo), "--ref", "main~5"]);
    assert_eq!(out.status.code(), Some(2), "{}", report(&out));
}

#[test]
fn commits_carry_their_provenance_and_log_reads_it_back() {
    let sandbox = Sandbox::new();
    let repo = sandbox.bare("gitops.git");
    // The specs in a Git work tree of their own.
    let spec = sandbox.minimal("alpha");
    sandbox.git(&spec, &["init", "-q", "-b", "main"]);
    sandbox.git(&spec, &["add", "."]);
    sandbox.git(&spec, &["commit", "-q", "-m", "specs"]);
    let head = Repository::open(&spec).expect("open").head().expect("head").target().expect("oid").to_string();
    sandbox.commit(&spec, &repo, &[]);
    let message =
        Repository::open(&repo).expect("open").find_commit(tip(&repo, "main")).expect("commit").message().expect("utf-8").to_owned();
    let trailers: Vec<&str> = message.trim_end().rsplit("\n\n").next().expect("a last paragraph").lines().collect();
    assert_eq!(trailers[0], format!("Tfrs-Source-Commit: {head}"), "{message}");
    assert_eq!(trailers[1], "Tfrs-Source-Dirty: false");
    assert!(trailers[2].starts_with("Tfrs-Version: 0.1.0 (commit "), "{message}");
    assert!(trailers[3].starts_with("Tfrs-Sealer: alpha sops-age age1"), "{message}");
    assert_eq!(trailers[4], "Tfrs-Clusters: alpha");
    // Provenance alone never makes a commit: a comment changes no rendered file.
    let file = spec.join("spec.yaml");
    std::fs::write(&file, format!("# a comment\n{}", std::fs::read_to_string(&file).expect("read"))).expect("write");
    assert!(sandbox.commit(&spec, &repo, &[]).starts_with("no changes"), "zero-diff re-renders hold");
    // A real change, not committed in the specs' repository: dirty.
    edit(&file, "rabbitmq: { enabled: false }", "rabbitmq: { enabled: true }");
    sandbox.commit(&spec, &repo, &[]);
    let log = sandbox.tfrs(&["log", "--repo", path(&repo)]);
    assert_eq!(log.status.code(), Some(0), "{}", report(&log));
    let text = String::from_utf8_lossy(&log.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4, "two commits, two lines each: {text}");
    assert!(lines[1].starts_with(&format!("  specs at {} (with uncommitted changes); tfrs 0.1.0 (commit ", &head[..12])), "{text}");
    assert!(lines[1].ends_with("; clusters: alpha"), "{text}");
    assert!(lines[3].starts_with(&format!("  specs at {}; tfrs ", &head[..12])), "{text}");
    let json = sandbox.tfrs(&["log", "--repo", path(&repo), "--format", "json", "-n", "1"]);
    let document: serde_json::Value = serde_json::from_slice(&json.stdout).expect("json");
    assert_eq!(document["commits"].as_array().map(Vec::len), Some(1));
    assert_eq!(document["commits"][0]["source"], serde_json::json!({ "commit": head, "dirty": true }));
    assert_eq!(document["commits"][0]["clusters"], serde_json::json!(["alpha"]));
}

/// `tfrs commit` keeps a render memo per branch, checked against the branch tip's files by
/// their blob ids: a re-commit templates nothing, a changed value templates only what sees it,
/// and what it commits is what a commit without the memo commits.
#[test]
fn commit_reuses_its_memo_against_the_branch_and_commits_what_a_full_render_would() {
    let sandbox = Sandbox::new();
    let (repo, plain) = (sandbox.bare("gitops.git"), sandbox.bare("plain.git"));
    let spec = sandbox.fixture("demo", "demo");
    let first = sandbox.commit(&spec, &repo, &[]);
    assert!(first.lines().next().unwrap().contains(" (0 of "), "nothing to reuse yet: {first}");
    let again = sandbox.commit(&spec, &repo, &[]);
    let counts = |line: &str| -> (usize, usize) {
        let note = line.rsplit_once(" (").and_then(|(_, n)| n.strip_suffix(" templated units reused)")).expect("a memo note");
        let (reused, units) = note.split_once(" of ").expect("R of U");
        (reused.parse().expect("R"), units.parse().expect("U"))
    };
    let (reused, units) = counts(again.lines().next().unwrap());
    assert!(again.starts_with("no changes") && reused == units && units > 0, "{again}");
    // A changed value: only the units that see it are templated, and the commit equals one made
    // without the memo into a repository that holds the same previous commit.
    sandbox.commit(&spec, &plain, &["--no-memo"]);
    edit(&spec.join("servers.yaml"), "TFS_PROFILE: prod", "TFS_PROFILE: staging");
    let memo = sandbox.commit(&spec, &repo, &[]);
    let (reused, _) = counts(memo.lines().next().unwrap());
    assert!(memo.starts_with("committed ") && reused > units / 2 && reused < units, "only what sees the value: {memo}");
    let full = sandbox.commit(&spec, &plain, &["--no-memo"]);
    assert!(!full.contains("templated units reused"), "no memo, no note: {full}");
    let (a, b) = (tip(&repo, "main"), tip(&plain, "main"));
    assert_eq!(paths(&repo, a), paths(&plain, b));
    for file in paths(&repo, a) {
        let (x, y) = (blob(&repo, a, &file), blob(&plain, b, &file));
        if !file.contains("sealedsecret-") {
            assert_eq!(String::from_utf8_lossy(&x), String::from_utf8_lossy(&y), "{file}");
        }
    }
}

#[test]
fn a_commit_into_a_checkout_whose_git_directory_is_locked_says_it_waits_then_lands() {
    use std::io::{BufRead as _, BufReader};
    use std::process::Stdio;
    let sandbox = Sandbox::new();
    let checkout = sandbox.path().join("checkout");
    std::fs::create_dir_all(&checkout).expect("mkdir");
    sandbox.git(&checkout, &["init", "-q", "-b", "main"]);
    // Another run holds the Git directory (as one that updates the work tree does).
    let held = std::fs::File::open(checkout.join(".git")).expect("open .git");
    held.lock().expect("lock .git");
    let spec = sandbox.minimal("alpha");
    let mut child = sandbox
        .command(env!("CARGO_BIN_EXE_tfrs"))
        .args(["commit", path(&spec), "--repo", path(&checkout), "--author", AUTHOR])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("tfrs runs");
    let stderr = child.stderr.take().expect("stderr");
    let (said, heard) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = said.send(line);
        }
    });
    let line = heard.recv_timeout(std::time::Duration::from_secs(120));
    drop(held);
    let output = child.wait_with_output().expect("tfrs ends");
    let line = line.expect("a waiting run says so before it waits");
    assert!(line.contains("waiting for another tfrs run that updates the work tree of"), "{line}");
    assert_eq!(output.status.code(), Some(0), "{}", report(&output));
    assert!(checkout.join("clusters/alpha/plan.json").is_file(), "the work tree has the commit");
}
