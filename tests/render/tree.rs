//! The rendered tree on disk: re-rendering changes no byte, the render memo, `--check`, a failed
//! render keeps the previous tree, where `--out` may point, and a diff against a GitOps repository.

use super::common;
use super::{copy_fixture, mask_ciphertext, read_tree, render, report, root, tfrs};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

#[test]
fn re_rendering_unchanged_specs_changes_no_byte() {
    for fixture in ["demo", "render-argocd-tke", "render-sops-docker-desktop"] {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        render(fixture, &out);
        let first = read_tree(&out);
        let output = render(fixture, &out);
        assert!(String::from_utf8_lossy(&output.stdout).contains("(0 changed, 0 removed; "), "{fixture}: {}", report(&output));
        let (reused, units) = memo_counts(&output);
        assert!(reused == units && units > 0, "{fixture}: the memo gives every unit back: {}", report(&output));
        assert_eq!(first, read_tree(&out), "{fixture}: re-rendering changed bytes");
        // Without the memo: the same bytes.
        let output = tfrs(&["render", &format!("fixtures/{fixture}"), "--out", out.to_str().unwrap(), "--no-memo"]);
        assert!(String::from_utf8_lossy(&output.stdout).contains("(0 changed, 0 removed)"), "{fixture}: {}", report(&output));
        assert_eq!(first, read_tree(&out), "{fixture}: re-rendering without the memo changed bytes");
        let check = render_check(fixture, &out);
        assert_eq!(check.status.code(), Some(0), "{}", report(&check));
        // Into a fresh directory: the same tree but for fresh ciphertext.
        let fresh = dir.path().join("fresh");
        render(fixture, &fresh);
        let second = read_tree(&fresh);
        assert_eq!(first.keys().collect::<Vec<_>>(), second.keys().collect::<Vec<_>>());
        let mut differing = 0;
        for (path, content) in &first {
            if content != &second[path] {
                differing += 1;
                assert!(path.contains("sealedsecret-") || path.contains("/secret-"), "{fixture}: `{path}` differs between two renders");
                assert_eq!(mask_ciphertext(content), mask_ciphertext(&second[path]), "{fixture}: `{path}` differs beyond ciphertext");
            }
        }
        assert!(differing > 0, "{fixture}: sealing must be randomised");
    }
}

/// `tfrs render --check` of fixture `fixture` against `out`.
fn render_check(fixture: &str, out: &Path) -> Output {
    tfrs(&["render", &format!("fixtures/{fixture}"), "--out", out.to_str().unwrap(), "--check"])
}

/// `(reused, units)` from a render's "; R of U templated units reused" note.
fn memo_counts(output: &Output) -> (usize, usize) {
    let stdout = String::from_utf8_lossy(&output.stdout);
    let note = stdout
        .split("; ")
        .find_map(|part| part.strip_suffix(" templated units reused").or_else(|| part.strip_suffix(" templated units reused)\n")));
    let Some((reused, units)) = note.and_then(|n| n.split_once(" of ")) else { panic!("no memo note: {stdout}") };
    (reused.parse().unwrap(), units.parse().unwrap())
}

#[test]
fn the_render_memo_reuses_only_what_still_holds() {
    let dir = tempfile::tempdir().unwrap();
    let spec = copy_fixture("demo", dir.path());
    let out = dir.path().join("out");
    // NB: a memo directory of its own: the check at the end reads every memo in it, and other
    // tests' fixtures (render-enterprise-full's `staging` billing environment) must not count.
    let memos = dir.path().join("memos");
    let run = |extra: &[&str]| {
        let mut args = vec!["render", spec.to_str().unwrap(), "--out", out.to_str().unwrap()];
        args.extend_from_slice(extra);
        let output = common::fixture_command().env("TFRS_CACHE_DIR", &memos).args(&args).output().expect("tfrs runs");
        assert_eq!(output.status.code(), Some(0), "{}", report(&output));
        output
    };
    let (reused, units) = memo_counts(&run(&[]));
    assert_eq!(reused, 0, "nothing to reuse yet");
    let again = run(&[]);
    assert_eq!(memo_counts(&again), (units, units));
    assert!(String::from_utf8_lossy(&again.stdout).contains("; 1 cluster unchanged, not rendered again)"), "{}", report(&again));

    // A hand edit of a rendered file is not trusted: that unit is rendered again and the file
    // restored.
    let edited = out.join("clusters/demo/components/namespaces/acme-corp/servers/robot1/config/configmap-robot1-config.yaml");
    let original = std::fs::read_to_string(&edited).unwrap();
    std::fs::write(&edited, original.replace("prod", "hacked")).unwrap();
    let output = run(&[]);
    assert!(String::from_utf8_lossy(&output.stdout).contains("(1 changed, 0 removed; "), "{}", report(&output));
    assert_eq!(memo_counts(&output), (units - 1, units));
    assert_eq!(std::fs::read_to_string(&edited).unwrap(), original);

    // A changed value renders the units that see it, and the tree is what a render without a
    // memo writes.
    let servers = spec.join("servers.yaml");
    std::fs::write(&servers, std::fs::read_to_string(&servers).unwrap().replace("TFS_PROFILE: prod", "TFS_PROFILE: staging")).unwrap();
    let output = run(&[]);
    let (reused, _) = memo_counts(&output);
    assert!(reused < units && reused > units / 2, "only what sees the value is rendered: {}", report(&output));
    assert!(std::fs::read_to_string(&edited).unwrap().contains("staging"));
    let fresh = dir.path().join("fresh");
    let output = tfrs(&["render", spec.to_str().unwrap(), "--out", fresh.to_str().unwrap(), "--no-memo"]);
    assert_eq!(output.status.code(), Some(0), "{}", report(&output));
    let (memoized, fresh) = (read_tree(&out), read_tree(&fresh));
    assert_eq!(memoized.keys().collect::<Vec<_>>(), fresh.keys().collect::<Vec<_>>());
    for (path, content) in &memoized {
        assert_eq!(mask_ciphertext(content), mask_ciphertext(&fresh[path]), "`{path}` differs from a render without the memo");
    }

    // The memo holds stamps, identities and paths: no value from the spec or its secrets.
    // One directory per output directory, one memo and one record file per cluster in it.
    let memos: Vec<PathBuf> = std::fs::read_dir(&memos)
        .unwrap()
        .flat_map(|dir| std::fs::read_dir(dir.unwrap().path()).unwrap())
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jobs" || e == "units" || e == "files" || e == "stamp"))
        .collect();
    assert_eq!(memos.len(), 4, "{memos:?}");
    let openai = std::fs::read_to_string(spec.join("secrets/openai-api-key.txt")).unwrap();
    for memo in memos {
        // NB: the entries are binary; their texts are whole in it.
        let text = String::from_utf8_lossy(&std::fs::read(&memo).unwrap()).into_owned();
        assert!(!text.contains(openai.trim()) && !text.contains("staging") && !text.contains("Hello"), "{}", memo.display());
    }
}

#[test]
fn check_mode_reports_an_out_of_date_tree() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    render("render-minimal", &out);
    std::fs::write(out.join("clusters/bare/plan.json"), "{}").unwrap();
    let check = render_check("render-minimal", &out);
    assert_eq!(check.status.code(), Some(1), "{}", report(&check));
    assert_eq!(std::fs::read_to_string(out.join("clusters/bare/plan.json")).unwrap(), "{}", "--check never writes");
}

#[test]
fn a_failed_render_leaves_the_previous_tree() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    render("render-argocd-tke", &out);
    let before = read_tree(&out);
    let output = common::tfrs_command()
        .args(["render", "fixtures/render-argocd-tke", "--out", out.to_str().unwrap()])
        .env_remove("TFRS_TEST_REGISTRY_PASSWORD")
        .env_remove("TFRS_MASTER_KEY")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "an environment problem: {}", report(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("fixtures/render-argocd-tke/spec.yaml:") && stderr.contains("spec.imageRegistry.password"), "{stderr}");
    assert!(stderr.contains("TFRS_TEST_REGISTRY_PASSWORD"), "{stderr}");
    assert_eq!(before, read_tree(&out), "the previous tree is untouched");
    let leftovers: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(leftovers.len(), 1, "no temporary directories left: {leftovers:?}");
}

#[test]
fn refuses_to_replace_a_directory_tfrs_did_not_write() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "mine").unwrap();
    let output = tfrs(&["render", "fixtures/render-minimal", "--out", dir.path().to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2), "{}", report(&output));
    assert!(String::from_utf8_lossy(&output.stderr).contains("was not written by tfrs"), "{}", report(&output));
    assert_eq!(std::fs::read_to_string(dir.path().join("notes.txt")).unwrap(), "mine");
}

#[test]
fn the_output_directory_is_resolved_before_anything_is_written() {
    let dir = tempfile::tempdir().unwrap();
    // `--out` inside an input directory: the rendered tree is never read back as specs.
    let spec_dir = copy_fixture("render-minimal", dir.path());
    let inside = spec_dir.join("out");
    let first = tfrs(&["render", spec_dir.to_str().unwrap(), "--out", inside.to_str().unwrap()]);
    assert_eq!(first.status.code(), Some(0), "{}", report(&first));
    let again = tfrs(&["render", spec_dir.to_str().unwrap(), "--out", inside.to_str().unwrap()]);
    assert_eq!(again.status.code(), Some(0), "{}", report(&again));
    // The working directory (or a parent of it) cannot be swapped out, and nothing is left behind.
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let output = common::tfrs_command()
        .args(["render"])
        .arg(root().join("fixtures/render-minimal"))
        .args(["--out", "."])
        .current_dir(&empty)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", report(&output));
    assert!(String::from_utf8_lossy(&output.stderr).contains("contains the working directory"), "{}", report(&output));
    assert_eq!(std::fs::read_dir(&empty).unwrap().count(), 0);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2, "no sibling left behind");
    // A symlinked `--out` renders into its target.
    let target = dir.path().join("target");
    std::os::unix::fs::symlink(&target, dir.path().join("link")).unwrap();
    std::fs::create_dir(&target).unwrap();
    let output = tfrs(&["render", "fixtures/render-minimal", "--out", dir.path().join("link").to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(0), "{}", report(&output));
    assert!(target.join("clusters/bare/plan.json").exists());
    assert!(dir.path().join("link").symlink_metadata().unwrap().file_type().is_symlink());
}

#[test]
fn rendering_other_clusters_into_a_directory_keeps_the_ones_it_does_not_render() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    render("render-minimal", &out);
    let plan = std::fs::read(out.join("clusters/bare/plan.json")).unwrap();
    let output = render("render-sops-docker-desktop", &out);
    assert!(String::from_utf8_lossy(&output.stdout).contains("; 1 other cluster kept)"), "{}", report(&output));
    assert_eq!(std::fs::read(out.join("clusters/bare/plan.json")).unwrap(), plan, "never a side effect");
}

#[test]
fn a_git_work_tree_is_updated_in_place_never_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    render("render-minimal", &out);
    assert!(Command::new("git").args(["init", "-q"]).current_dir(&out).status().unwrap().success());
    std::fs::write(out.join("README.md"), "the repository's own\n").unwrap();
    let output = tfrs(&["render", "fixtures/render-sops-docker-desktop", "--out", out.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(0), "{}", report(&output));
    assert!(out.join(".git/HEAD").exists() && out.join("README.md").exists(), "a checkout keeps what is not a cluster's");
    assert!(out.join("clusters/bare/plan.json").exists(), "and the clusters it does not render");
    // `--check` compares a checkout's `clusters/` with the render.
    let check = render_check("render-minimal", &out);
    assert_eq!(check.status.code(), Some(0), "{}", report(&check));
}

#[test]
fn check_refuses_a_tree_left_part_way_through_an_update() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    render("render-minimal", &out);
    // As a render killed after its journal was in place leaves it.
    let update = dir.path().join(".out.tfrs-update");
    std::fs::create_dir_all(&update).unwrap();
    std::fs::write(update.join("journal.json"), r#"{"remove":[],"write":[]}"#).unwrap();
    let check = render_check("render-minimal", &out);
    assert_eq!(check.status.code(), Some(2), "{}", report(&check));
    assert!(
        String::from_utf8_lossy(&check.stderr).contains("is part-way through an update left by an interrupted `tfrs render`"),
        "{}",
        report(&check)
    );
    // The render finishes it; then the check passes.
    render("render-minimal", &out);
    let check = render_check("render-minimal", &out);
    assert_eq!(check.status.code(), Some(0), "{}", report(&check));
}

#[test]
fn a_markdown_diff_of_a_large_change_stays_under_a_pull_request_comment() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    assert!(Command::new("git").args(["init", "-q", "--bare", "-b", "main", repo.to_str().unwrap()]).status().unwrap().success());
    let spec = dir.path().join("spec.yaml");
    let mut text = format!(
        "apiVersion: tfrs.turingfocus.cn/v1alpha1\nkind: TFRCluster\nmetadata: {{name: big}}\nspec:\n  ingress: {{domain: big.example.com}}\n  sealing: {{certFile: {}}}\n",
        root().join("fixtures/demo/keys/sealed-secrets.pem").display()
    );
    for tenant in 0..40 {
        text.push_str(&format!(
            "---\napiVersion: tfrs.turingfocus.cn/v1alpha1\nkind: TFRTenant\nmetadata: {{name: t{tenant}}}\nspec: {{cluster: big}}\n"
        ));
    }
    std::fs::write(&spec, text).unwrap();
    let first = common::tfrs_command()
        .args(["commit", "fixtures/render-minimal", "--repo", repo.to_str().unwrap(), "--author", "T <t@example.com>"])
        .output()
        .unwrap();
    assert_eq!(first.status.code(), Some(0), "{}", report(&first));
    let output = tfrs(&["diff", spec.to_str().unwrap(), "--repo", repo.to_str().unwrap(), "--format", "markdown"]);
    assert_eq!(output.status.code(), Some(1), "{}", report(&output));
    assert!(output.stdout.len() < 65_536, "{} bytes", output.stdout.len());
}

/// A file the memo's records still describe (same size, modification time and inode) is not
/// read back: a byte changed behind the stat's back goes unseen, the way Git's index trusts a
/// file's stat. Any ordinary edit moves the modification time, and is seen and undone.
#[test]
fn files_whose_stat_is_unchanged_are_not_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let memos = dir.path().join("memos");
    let run = || {
        let output = common::fixture_command()
            .env("TFRS_CACHE_DIR", &memos)
            .args(["render", "fixtures/demo", "--out", out.to_str().unwrap()])
            .output()
            .expect("tfrs runs");
        assert_eq!(output.status.code(), Some(0), "{}", report(&output));
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    run();
    // Records of files written just before they were saved are not trusted (an edit within the
    // same clock tick would keep the stat): wait that out, and render again to record them.
    std::thread::sleep(std::time::Duration::from_millis(2_100));
    run();
    let file = out.join("clusters/demo/components/namespaces/acme-corp/servers/robot1/config/configmap-robot1-config.yaml");
    let original = std::fs::read_to_string(&file).unwrap();
    let modified = std::fs::metadata(&file).unwrap().modified().unwrap();
    let sneaky = original.replacen("prod", "dorp", 1);
    assert_eq!(sneaky.len(), original.len());
    {
        let handle = std::fs::OpenOptions::new().write(true).open(&file).unwrap();
        std::io::Write::write_all(&mut &handle, sneaky.as_bytes()).unwrap();
        handle.set_modified(modified).unwrap();
    }
    let stdout = run();
    assert!(stdout.contains("(0 changed, 0 removed; "), "{stdout}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), sneaky, "trusted by its stat, not read");
    // An ordinary edit (a new modification time) is seen, and the file restored.
    std::fs::write(&file, &sneaky).unwrap();
    let stdout = run();
    assert!(stdout.contains("(1 changed, 0 removed; "), "{stdout}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), original);
    // Directories are trusted by their stat too (`docs/render.md`): a file or a directory
    // added to one is still found, and removed.
    let server = file.parent().unwrap().parent().unwrap();
    std::fs::write(server.join("stray.yaml"), "kind: Stray\n").unwrap();
    std::fs::create_dir_all(server.join("stray/deeper")).unwrap();
    std::fs::write(server.join("stray/deeper/more.yaml"), "kind: Stray\n").unwrap();
    // NB: past the racy window, so that only the directory's stat tells it changed.
    std::thread::sleep(std::time::Duration::from_millis(2_100));
    let stdout = run();
    assert!(stdout.contains("(0 changed, 2 removed; "), "{stdout}");
    assert!(!server.join("stray.yaml").exists() && !server.join("stray/deeper/more.yaml").exists());
}

/// Everything a server's templates see from outside its own spec, changed one at a time: each
/// memoised render must write what a render without the memo writes. A server's components are
/// looked up by a digest of their inputs, not of their values (`docs/render.md`), so an input
/// that digest missed would leave a stale file here.
#[test]
fn the_memo_follows_every_input_of_a_server() {
    let dir = tempfile::tempdir().unwrap();
    let spec = copy_fixture("demo", dir.path());
    let (out, fresh, memos) = (dir.path().join("out"), dir.path().join("fresh"), dir.path().join("memos"));
    let edit = |file: &str, from: &str, to: &str| {
        let path = spec.join(file);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains(from), "`{from}` in {file}");
        std::fs::write(&path, text.replace(from, to)).unwrap();
    };
    // A value read from the environment, for a server's `secretData`.
    edit("servers.yaml", "    SESSION_SECRET: {}\n", "    SESSION_SECRET: {}\n    FROM_ENV: { fromEnv: TFRS_MEMO_TEST_VALUE }\n");
    let render_into = |target: &PathBuf, value: &str, extra: &[&str]| {
        let mut args = vec!["render", spec.to_str().unwrap(), "--out", target.to_str().unwrap()];
        args.extend_from_slice(extra);
        let mut command = common::fixture_command();
        command.env("TFRS_CACHE_DIR", &memos).env("TFRS_MEMO_TEST_VALUE", value).args(&args);
        let output = command.output().expect("tfrs runs");
        assert_eq!(output.status.code(), Some(0), "{}", report(&output));
        output
    };
    render_into(&out, "one", &[]);
    // (file, text replaced, replacement, the environment's value): a value resolved for a
    // server from a file and from the environment, its tenant's spec, a tenant sharing its
    // namespace, its robot's schema, the cluster's spec.
    let changes = [
        ("secrets/openai-api-key.txt", "sk-", "sk-rotated-", "one"),
        ("servers.yaml", "FROM_ENV", "FROM_ENV", "two"),
        ("tenants.yaml", "cacheDir: /data/shared-cache", "cacheDir: /data/cache-2", "two"),
        (
            "tenants.yaml",
            "ghcr.io/cloudnative-pg/postgresql:16-minimal-bookworm",
            "ghcr.io/cloudnative-pg/postgresql:16.9-minimal-bookworm",
            "two",
        ),
        (
            "tenants.yaml",
            "  function: support\n",
            "  function: support\n  postgresql: { image: ghcr.io/cloudnative-pg/postgresql:17-minimal-bookworm }\n",
            "two",
        ),
        ("servers.yaml", "    TFS_PROFILE: personal\n", "    TFS_PROFILE: personal\n    TFS_ROBOT__DB_SCHEMA: alice_custom\n", "two"),
        ("cluster.yaml", "domain: tfrs.demo.example.com", "domain: tfrs.example.org", "two"),
        ("cluster.yaml", "istio: { enabled: true", "istio: { enabled: false", "two"),
    ];
    for (file, from, to, value) in changes {
        edit(file, from, to);
        let before = read_tree(&out);
        let output = render_into(&out, value, &[]);
        let (reused, units) = memo_counts(&output);
        // NB: a change to the cluster's shared values (its domain) renders every unit again.
        assert!(reused < units, "{file}: `{to}` ({value}) renders units again: {}", report(&output));
        let memoised = read_tree(&out);
        let moved = memoised.iter().filter(|(p, text)| p.contains("/servers/") && before.get(*p) != Some(text)).count();
        assert!(moved > 0, "{file}: `{to}` ({value}) changes a server's files");
        render_into(&fresh, value, &["--no-memo"]);
        let fresh = read_tree(&fresh);
        assert_eq!(memoised.keys().collect::<Vec<_>>(), fresh.keys().collect::<Vec<_>>(), "{file}: `{to}`");
        for (path, content) in &memoised {
            assert_eq!(mask_ciphertext(content), mask_ciphertext(&fresh[path]), "{file}: `{to}` ({value}): `{path}` is stale");
        }
    }
}
