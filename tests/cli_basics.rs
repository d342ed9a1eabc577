//! The command-line basics: shell completions, manual pages, `--color` and `NO_COLOR`,
//! `--quiet`, `--version`, and the file list of `render --check`.

#![allow(clippy::unwrap_used)] // a test crate: a panic is the failure report

mod common;

use common::{fixture_command, report, root};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const AUTHOR: &str = "CLI Test <cli@example.com>";

fn tfrs(args: &[&str]) -> Output {
    fixture_command().args(args).env_remove("NO_COLOR").output().unwrap()
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Every subcommand name, from the definition clap parses with.
fn subcommands() -> Vec<String> {
    let names: Vec<String> = tfrs_gitops::cli::command().get_subcommands().map(|c| c.get_name().to_owned()).collect();
    assert!(names.len() >= 12 && names.iter().any(|n| n == "completions") && names.iter().any(|n| n == "man"), "{names:?}");
    names
}

/// Finds an outside tool on PATH; a missing one skips the test with one printed line, or fails
/// it under `CI=true`.
fn outside_tool(name: &str, package: &str) -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|paths| std::env::split_paths(&paths).map(|p| p.join(name)).find(|p| p.is_file()));
    if found.is_none() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "`{name}` is required under CI=true (Debian package {package}; .ci/run installs it)"
        );
        eprintln!("skipped: `{name}` is not installed (Debian package {package})");
    }
    found
}

fn git(dir: &Path, args: &[&str]) {
    let output = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main"])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(output.status.success(), "git {args:?}: {}", report(&output));
}

/// A new repository at `dir/name` whose `main` holds one empty commit.
fn empty_repo(dir: &Path, name: &str) -> PathBuf {
    let repo = dir.join(name);
    git(dir, &["init", "-q", "-b", "main", repo.to_str().unwrap()]);
    git(&repo, &["commit", "-q", "--allow-empty", "-m", "init"]);
    repo
}

#[test]
fn the_bash_script_loads_in_bash() {
    let Some(bash) = outside_tool("bash", "bash") else { return };
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_tfrs"));
    let path = std::env::join_paths(
        std::iter::once(bin.parent().unwrap().to_path_buf()).chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())),
    )
    .unwrap();
    let output = Command::new(bash).args(["-c", "source <(tfrs completions bash) && complete -p tfrs"]).env("PATH", path).output().unwrap();
    assert!(output.status.success(), "{}", report(&output));
    assert!(stdout(&output).contains("-F _tfrs tfrs"), "{}", report(&output));
}

#[test]
fn every_completion_script_names_every_subcommand() {
    let names = subcommands();
    for shell in ["bash", "zsh", "fish", "powershell"] {
        let output = tfrs(&["completions", shell]);
        assert_eq!(output.status.code(), Some(0), "{shell}: {}", report(&output));
        let script = stdout(&output);
        assert!(script.len() > 1000, "{shell}: {script}");
        for name in &names {
            assert!(script.contains(name.as_str()), "{shell} does not complete `{name}`");
        }
        // Flags of a subcommand and the global `--color` values are completed too.
        assert!(script.contains("check") && script.contains("always"), "{shell}");
    }
    assert_eq!(tfrs(&["completions", "tcsh"]).status.code(), Some(2), "an unknown shell is a usage error");
}

#[test]
fn manual_pages_name_every_subcommand_and_format_cleanly() {
    let names = subcommands();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("man1");
    let output = tfrs(&["man", "--out", out.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(0), "{}", report(&output));
    let top = std::fs::read_to_string(out.join("tfrs.1")).unwrap();
    assert!(top.contains(".TH tfrs 1"), "{top}");
    for name in &names {
        assert!(top.contains(&format!("tfrs\\-{name}(1)")), "tfrs.1 does not name `{name}`");
        let page = std::fs::read_to_string(out.join(format!("tfrs-{name}.1"))).unwrap_or_else(|_| panic!("no tfrs-{name}.1"));
        assert!(page.contains(&format!(".TH tfrs-{name} 1")), "{name}: {page}");
    }
    let pages = std::fs::read_dir(&out).unwrap().count();
    assert_eq!(pages, names.len() + 1, "one page per subcommand and tfrs.1");
    // The version line, with the commit and the catalog digest, is on every page.
    let version = stdout(&tfrs(&["--version"]));
    let version = version.trim_end().strip_prefix("tfrs ").unwrap();
    assert!(top.contains(&format!("\"tfrs {version}\"")), "{top}");
    // Without `--out`: tfrs.1 on stdout.
    let printed = tfrs(&["man"]);
    assert_eq!(printed.status.code(), Some(0));
    assert_eq!(stdout(&printed), top);

    let Some(groff) = outside_tool("groff", "groff-base") else { return };
    for entry in std::fs::read_dir(&out).unwrap() {
        let page = entry.unwrap().path();
        let output = Command::new(&groff).args(["-man", "-Tutf8", "-ww", "-z"]).arg(&page).output().unwrap();
        assert!(output.status.success() && output.stderr.is_empty(), "{}: {}", page.display(), report(&output));
    }
}

#[test]
fn diff_colours_as_color_and_no_color_say() {
    let dir = tempfile::tempdir().unwrap();
    let repo = empty_repo(dir.path(), "repo");
    let repo = repo.to_str().unwrap();
    let run = |color: Option<&str>, no_color: Option<&str>| {
        let mut command = fixture_command();
        command.args(["diff", "fixtures/render-minimal", "--repo", repo]).env_remove("NO_COLOR");
        if let Some(color) = color {
            command.args(["--color", color]);
        }
        if let Some(value) = no_color {
            command.env("NO_COLOR", value);
        }
        let output = command.output().unwrap();
        assert_eq!(output.status.code(), Some(1), "everything is added: {}", report(&output));
        stdout(&output)
    };
    let plain = run(None, None);
    assert!(!plain.contains('\x1b') && plain.contains("  + added "), "{plain}");
    let coloured = run(Some("always"), None);
    assert!(coloured.contains("\x1b[32m  + added "), "{coloured}");
    let strip = ["0", "1", "31", "32", "33", "36"].iter().fold(coloured.clone(), |text, code| text.replace(&format!("\x1b[{code}m"), ""));
    assert_eq!(strip, plain, "colour adds escapes and nothing else");
    assert_eq!(run(Some("always"), Some("1")), coloured, "`--color always` wins over NO_COLOR");
    assert_eq!(run(Some("never"), None), plain);
    assert_eq!(run(Some("auto"), Some("1")), plain);
    assert_eq!(run(Some("auto"), Some("")), plain, "not a terminal");
    // The global flag goes before the subcommand too.
    let output = fixture_command().args(["--color", "always", "diff", "fixtures/render-minimal", "--repo", repo]).output().unwrap();
    assert_eq!(stdout(&output), coloured);
    // Other formats never colour.
    let json =
        fixture_command().args(["diff", "fixtures/render-minimal", "--repo", repo, "--format", "json", "--color", "always"]).output();
    assert!(!json.unwrap().stdout.contains(&0x1b));
}

#[test]
fn diff_quiet_prints_the_totals_line_only() {
    let dir = tempfile::tempdir().unwrap();
    let repo = empty_repo(dir.path(), "repo");
    let full = tfrs(&["diff", "fixtures/render-minimal", "--repo", repo.to_str().unwrap()]);
    let quiet = tfrs(&["diff", "fixtures/render-minimal", "--repo", repo.to_str().unwrap(), "-q"]);
    assert_eq!(quiet.status.code(), Some(1), "{}", report(&quiet));
    let last = stdout(&full).lines().last().unwrap().to_owned();
    assert!(last.ends_with(" against `main`") && last.contains(" added"), "{last}");
    assert_eq!(stdout(&quiet), format!("{last}\n"));
    // The documents for tools are printed whole.
    let json = tfrs(&["diff", "fixtures/render-minimal", "--repo", repo.to_str().unwrap(), "-q", "--format", "json"]);
    assert!(stdout(&json).contains("\"objects\""), "{}", report(&json));
}

#[test]
fn commit_quiet_prints_the_result_line_only() {
    let dir = tempfile::tempdir().unwrap();
    let loud = empty_repo(dir.path(), "loud");
    let quiet = empty_repo(dir.path(), "quiet");
    let full = tfrs(&["commit", "fixtures/render-minimal", "--repo", loud.to_str().unwrap(), "--author", AUTHOR]);
    assert_eq!(full.status.code(), Some(0), "{}", report(&full));
    let short = tfrs(&["commit", "fixtures/render-minimal", "--repo", quiet.to_str().unwrap(), "--author", AUTHOR, "--quiet"]);
    assert_eq!(short.status.code(), Some(0), "{}", report(&short));
    let (full, short) = (stdout(&full), stdout(&short));
    assert!(full.lines().count() > 5, "the summary lists every component: {full}");
    assert_eq!(short.lines().count(), 1, "{short}");
    assert!(short.starts_with("committed ") && short.contains(" to `main`: "), "{short}");
    // The same line but for the commit hash.
    let first = full.lines().next().unwrap();
    assert_eq!(first[22..], short.trim_end()[22..], "{first} / {short}");
    let again = tfrs(&["commit", "fixtures/render-minimal", "--repo", quiet.to_str().unwrap(), "--author", AUTHOR, "-q"]);
    assert!(stdout(&again).starts_with("no changes: `main` at "), "{}", report(&again));
}

#[test]
fn audit_quiet_prints_the_count_line_only() {
    let dir = tempfile::tempdir().unwrap();
    let repo = empty_repo(dir.path(), "repo");
    let token = std::fs::read_to_string(root().join("fixtures/demo/secrets/registry-password.txt")).unwrap();
    std::fs::write(repo.join("token.txt"), token).unwrap();
    git(&repo, &["add", "token.txt"]);
    git(&repo, &["commit", "-q", "-m", "a leak"]);
    let full = tfrs(&["audit", "fixtures/demo", "--repo", repo.to_str().unwrap()]);
    assert_eq!(full.status.code(), Some(1), "{}", report(&full));
    assert!(stdout(&full).starts_with("leak: commit "), "{}", report(&full));
    let quiet = tfrs(&["audit", "fixtures/demo", "--repo", repo.to_str().unwrap(), "-q"]);
    assert_eq!(quiet.status.code(), Some(1), "{}", report(&quiet));
    let quiet = stdout(&quiet);
    assert!(quiet.ends_with(" in 2 commits of `main`\n") && quiet.lines().count() == 1, "{quiet}");
    assert_eq!(stdout(&full).lines().last(), quiet.lines().next());
}

/// `tfrs 0.1.0 (commit <12 hex>[-dirty] | unknown, catalog sha256:<12 hex>)`.
fn check_version_line(line: &str) {
    let version = env!("CARGO_PKG_VERSION");
    let rest = line.strip_prefix(&format!("tfrs {version} (commit ")).unwrap_or_else(|| panic!("{line}"));
    let (commit, rest) = rest.split_once(", catalog sha256:").unwrap_or_else(|| panic!("{line}"));
    let hash = commit.strip_suffix("-dirty").unwrap_or(commit);
    assert!(commit == "unknown" || (hash.len() == 12 && hash.bytes().all(|b| b.is_ascii_hexdigit())), "{line}");
    let digest = rest.strip_suffix(')').unwrap_or_else(|| panic!("{line}"));
    assert!(digest.len() == 12 && digest.bytes().all(|b| b.is_ascii_hexdigit()), "{line}");
}

#[test]
fn version_names_the_commit_and_the_catalog() {
    let flag = tfrs(&["--version"]);
    assert_eq!(flag.status.code(), Some(0), "{}", report(&flag));
    let line = stdout(&flag);
    check_version_line(line.trim_end());
    assert_eq!(line.lines().count(), 1);
    // `tfrs version` prints the same first line, with or without the catalog.
    for args in [&["version"][..], &["version", "--components"]] {
        let output = tfrs(args);
        assert_eq!(stdout(&output).lines().next(), line.lines().next(), "{args:?}");
    }
    // The digest is the catalog's: the SHA-256 of the components JSON, compact.
    let json: serde_json::Value = serde_json::from_slice(&tfrs(&["version", "--components", "--format", "json"]).stdout).unwrap();
    use sha2::Digest as _;
    let digest = sha2::Sha256::digest(serde_json::to_vec(&json["components"]).unwrap());
    let hex: String = digest[..6].iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(json["catalog_digest"], hex.as_str());
    assert!(line.contains(&format!("catalog sha256:{hex})")), "{line}");
    let commit = line.split_once("(commit ").unwrap().1.split_once(',').unwrap().0;
    assert_eq!(json["commit"], commit);
    // Built in a Git checkout (as here), the commit is HEAD's.
    let head = Command::new("git").args(["rev-parse", "HEAD"]).current_dir(root()).output().ok();
    if let Some(head) = head.filter(|h| h.status.success()) {
        let head = String::from_utf8_lossy(&head.stdout);
        assert!(line.contains(&format!("(commit {}", &head[..12])), "{line} is not built from {head}");
    }
}

/// Renders `fixtures/<fixture>` into `out`.
fn render_fixture(fixture: &str, out: &Path) {
    let output = tfrs(&["render", &format!("fixtures/{fixture}"), "--out", out.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(0), "{}", report(&output));
}

fn render(out: &Path) {
    render_fixture("render-minimal", out);
}

fn check(out: &Path, extra: &[&str]) -> Output {
    check_fixture("render-minimal", out, extra)
}

fn check_fixture(fixture: &str, out: &Path, extra: &[&str]) -> Output {
    let spec = format!("fixtures/{fixture}");
    let mut args = vec!["render", spec.as_str(), "--out", out.to_str().unwrap(), "--check"];
    args.extend_from_slice(extra);
    tfrs(&args)
}

#[test]
fn check_names_the_files_that_would_change_and_be_removed() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    render(&out);
    std::fs::write(out.join("clusters/bare/plan.json"), "{}").unwrap();
    std::fs::write(out.join("clusters/bare/zz-stray.yaml"), "{}").unwrap();
    std::fs::write(out.join("clusters/bare/aa-stray.yaml"), "{}").unwrap();
    let output = check(&out, &[]);
    assert_eq!(output.status.code(), Some(1), "{}", report(&output));
    let expected = format!(
        "out of date: 1 file would change and 2 would be removed in `{}`\n  would change: clusters/bare/plan.json\n  would be removed: clusters/bare/aa-stray.yaml\n  would be removed: clusters/bare/zz-stray.yaml\n",
        out.display()
    );
    assert_eq!(stdout(&output), expected);
    let quiet = check(&out, &["--quiet"]);
    assert_eq!(quiet.status.code(), Some(1));
    assert_eq!(stdout(&quiet), expected.lines().next().unwrap().to_owned() + "\n");
    // Up to date: the one line, quiet or not.
    render(&out);
    let output = check(&out, &[]);
    assert_eq!(output.status.code(), Some(0), "{}", report(&output));
    assert_eq!(stdout(&output).lines().count(), 1);
    assert_eq!(stdout(&output), stdout(&check(&out, &["-q"])));
}

#[test]
fn check_names_the_first_20_of_each_list_then_the_rest_as_a_count() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let fixture = "render-enterprise-minimal";
    render_fixture(fixture, &out);
    let mut files: Vec<String> = Vec::new();
    collect(&out, &out, &mut files);
    files.retain(|f| f.starts_with("clusters/") && f.ends_with(".yaml"));
    files.sort();
    assert!(files.len() > 25, "{files:?}");
    for file in &files[..25] {
        std::fs::write(out.join(file), "changed: true\n").unwrap();
    }
    let cluster_dir = files[0].split('/').take(2).collect::<Vec<_>>().join("/");
    for index in 0..23 {
        std::fs::write(out.join(format!("{cluster_dir}/stray-{index:02}.yaml")), "{}").unwrap();
    }
    let output = check_fixture(fixture, &out, &[]);
    assert_eq!(output.status.code(), Some(1), "{}", report(&output));
    let text = stdout(&output);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], format!("out of date: 25 files would change and 23 would be removed in `{}`", out.display()), "{text}");
    assert_eq!(lines.len(), 1 + 21 + 21, "{text}");
    let changed: Vec<String> = files[..20].iter().map(|f| format!("  would change: {f}")).collect();
    assert_eq!(lines[1..21], changed[..], "{text}");
    assert_eq!(lines[21], "  would change: and 5 more");
    let removed: Vec<String> = (0..20).map(|i| format!("  would be removed: {cluster_dir}/stray-{i:02}.yaml")).collect();
    assert_eq!(lines[22..42], removed[..], "{text}");
    assert_eq!(lines[42], "  would be removed: and 3 more");
    let quiet = check_fixture(fixture, &out, &["-q"]);
    assert_eq!(stdout(&quiet), format!("{}\n", lines[0]));
}

fn collect(root: &Path, dir: &Path, into: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            collect(root, &path, into);
        } else {
            into.push(path.strip_prefix(root).unwrap().to_string_lossy().into_owned());
        }
    }
}

#[test]
fn quiet_is_in_the_help_of_each_listing_command() {
    for command in ["render", "diff", "commit", "audit"] {
        let help = stdout(&tfrs(&[command, "--help"]));
        assert!(help.contains("-q, --quiet"), "{command}: {help}");
        assert!(help.contains("--color <WHEN>"), "{command}: {help}");
    }
}

#[test]
fn usage_errors_follow_color_too() {
    let coloured = tfrs(&["--color", "always", "frobnicate"]);
    assert_eq!(coloured.status.code(), Some(2));
    assert!(coloured.stderr.contains(&0x1b), "{}", report(&coloured));
    let plain = tfrs(&["--color", "never", "frobnicate"]);
    assert_eq!(plain.status.code(), Some(2));
    assert!(!plain.stderr.contains(&0x1b), "{}", report(&plain));
    let invalid = tfrs(&["--color", "purple", "version"]);
    assert_eq!(invalid.status.code(), Some(2), "{}", report(&invalid));
}

/// Each command ends an invalid spec's report with what it did not do: files for `render`,
/// the cluster for `reconcile`; a command that only reads says nothing of the kind.
#[test]
fn an_invalid_spec_report_says_what_the_command_did_not_do() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("spec.yaml");
    std::fs::write(
        &spec,
        "apiVersion: tfrs.turingfocus.cn/v1alpha1\nkind: TFRCluster\nmetadata: {name: lab}\nspec: {ingress: {domian: x}}\n",
    )
    .unwrap();
    let spec = spec.to_str().unwrap();
    let out = dir.path().join("out");
    // NB: reconcile's 1 means a rollout that failed; anything that stops it before is 2.
    let cases: [(&[&str], &str, i32); 5] = [
        (&["render", spec, "--out", out.to_str().unwrap()], "error: 1 problem found; nothing was written\n", 1),
        (&["reconcile", spec, "--dry-run"], "error: 1 problem found; nothing was applied\n", 2),
        (&["plan", spec], "error: 1 problem found\n", 1),
        (&["graph", spec], "error: 1 problem found\n", 1),
        (&["validate", spec], "error: 1 error in 1 file\n", 1),
    ];
    for (args, ending, code) in cases {
        let output = tfrs(args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(code), "{args:?}: {}", report(&output));
        assert!(stderr.ends_with(ending), "{args:?} should end with {ending:?}:\n{stderr}");
    }
    assert!(!out.exists(), "render wrote nothing");
}
