//! Kill tests: `tfrs render` and `tfrs commit` are SIGKILLed at spread-out moments. Afterwards
//! the output directory and the repository hold either the old state or the new one, never a
//! mix, and the next run leaves no temporary files behind.

#![allow(clippy::unwrap_used)] // a test crate: a panic is the failure report

mod common;

use common::report;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn command(args: &[&str]) -> Command {
    let mut command = common::tfrs_command();
    command
        .args(args)
        .env("TFRS_MASTER_KEY", std::fs::read_to_string(root().join("fixtures/demo/keys/master.key")).unwrap().trim())
        .env("GIT_AUTHOR_NAME", "Kill Test")
        .env("GIT_AUTHOR_EMAIL", "kill@example.com");
    command
}

fn run(args: &[&str]) -> Output {
    command(args).output().unwrap()
}

/// A platform big enough that a render takes a while: `tenants` tenants of 4 servers each.
fn platform(dir: &Path, cert_manager: &str, tenants: usize) -> PathBuf {
    let spec = dir.join(format!("spec-{cert_manager}"));
    std::fs::create_dir_all(&spec).unwrap();
    let mut text = format!(
        "apiVersion: tfrs.turingfocus.cn/v1alpha1\nkind: TFRCluster\nmetadata: {{name: kill}}\nspec:\n  ingress: {{domain: kill.example.com}}\n  certManager: {{version: {cert_manager}}}\n  imageRegistry: {{username: {{value: robot}}, password: {{}}}}\n  sealing: {{certFile: {}}}\n",
        root().join("fixtures/demo/keys/sealed-secrets.pem").display()
    );
    for tenant in 0..tenants {
        text.push_str(&format!("---\napiVersion: tfrs.turingfocus.cn/v1alpha1\nkind: TFRTenant\nmetadata: {{name: t{tenant}}}\nspec: {{cluster: kill, type: enterprise}}\n"));
        for server in 0..4 {
            text.push_str(&format!(
                "---\napiVersion: tfrs.turingfocus.cn/v1alpha1\nkind: TFRServer\nmetadata: {{name: s{tenant}x{server}}}\nspec:\n  tenant: t{tenant}\n  image: {{repository: docker.cnb.cool/turingfocus/tfrobot, tag: v1.8.0}}\n  secretData: {{TOKEN: {{}}}}\n"
            ));
        }
    }
    std::fs::write(spec.join("spec.yaml"), text).unwrap();
    spec
}

/// Starts `args`, SIGKILLs it after `delay` (unless it finished), and says whether it finished.
fn kill_after(args: &[&str], delay: Duration) -> bool {
    let mut child = command(args).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    let start = Instant::now();
    while start.elapsed() < delay {
        if child.try_wait().unwrap().is_some() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    false
}

/// How long a full run of `args` takes.
fn duration(args: &[&str]) -> Duration {
    let start = Instant::now();
    let output = run(args);
    assert!(output.status.success(), "{}", report(&output));
    start.elapsed()
}

fn leftovers(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".tfrs-"))
        .collect()
}

#[test]
fn a_killed_render_leaves_the_old_tree_or_the_new_one() {
    let dir = tempfile::tempdir().unwrap();
    let old = platform(dir.path(), "v1.20.2", 6);
    let new = platform(dir.path(), "v1.20.3", 6);
    let out = dir.path().join("out");
    let (old_arg, new_arg, out_arg) = (old.to_str().unwrap(), new.to_str().unwrap(), out.to_str().unwrap());
    let full = duration(&["render", new_arg, "--out", dir.path().join("probe").to_str().unwrap()]);
    for step in 0..6u32 {
        let output = run(&["render", old_arg, "--out", out_arg]);
        assert!(output.status.success(), "{}", report(&output));
        // Spread the kills over the whole run, from the start to just past the end.
        let delay = full.mul_f64(f64::from(step) / 5.0 * 1.1);
        let finished = kill_after(&["render", new_arg, "--out", out_arg], delay);
        let is_old = run(&["render", old_arg, "--out", out_arg, "--check"]).status.code() == Some(0);
        let is_new = run(&["render", new_arg, "--out", out_arg, "--check"]).status.code() == Some(0);
        assert!(is_old != is_new, "step {step} (finished: {finished}): the tree is old {is_old}, new {is_new}");
        if finished {
            assert!(is_new, "step {step}: a finished render leaves the new tree");
        }
        // The next run repairs and cleans up.
        let output = run(&["render", new_arg, "--out", out_arg]);
        assert!(output.status.success(), "{}", report(&output));
        assert!(leftovers(dir.path()).is_empty(), "step {step}: {:?}", leftovers(dir.path()));
    }
}

#[test]
fn a_killed_commit_leaves_the_old_branch_or_the_new_one() {
    let dir = tempfile::tempdir().unwrap();
    let old = platform(dir.path(), "v1.20.2", 4);
    let new = platform(dir.path(), "v1.20.3", 4);
    let repo = dir.path().join("repo");
    let git = |args: &[&str]| Command::new("git").args(args).current_dir(&repo).output().unwrap();
    assert!(Command::new("git").args(["init", "-q", "--bare", "-b", "main", repo.to_str().unwrap()]).status().unwrap().success());
    let (old_arg, new_arg, repo_arg) = (old.to_str().unwrap(), new.to_str().unwrap(), repo.to_str().unwrap());
    let full = duration(&["commit", old_arg, "--repo", repo_arg]);
    for step in 0..6u32 {
        let output = run(&["commit", old_arg, "--repo", repo_arg]);
        assert!(output.status.success(), "{}", report(&output));
        let before = String::from_utf8(git(&["rev-parse", "main"]).stdout).unwrap();
        let delay = full.mul_f64(f64::from(step) / 5.0 * 1.2);
        let finished = kill_after(&["commit", new_arg, "--repo", repo_arg], delay);
        let after = String::from_utf8(git(&["rev-parse", "main"]).stdout).unwrap();
        let is_new = run(&["diff", new_arg, "--repo", repo_arg]).status.code() == Some(0);
        assert!(after == before || is_new, "step {step} (finished: {finished}): the branch moved to a commit that is not the new tree");
        if after != before {
            let parent = String::from_utf8(git(&["rev-parse", "main^"]).stdout).unwrap();
            assert_eq!(parent, before, "step {step}: the new commit sits on the old one");
        }
        let fsck = git(&["fsck", "--no-dangling"]);
        assert!(fsck.status.success(), "step {step}: {}", report(&fsck));
        // NB: stopped while it updated the branch, a commit leaves the branch's lock behind,
        // as git does; the next commit names it, and once removed all goes on.
        let lock = repo.join("refs/heads/main.lock");
        if lock.exists() {
            let output = run(&["commit", new_arg, "--repo", repo_arg]);
            assert!(!output.status.success() && String::from_utf8_lossy(&output.stderr).contains("main.lock"), "{}", report(&output));
            std::fs::remove_file(&lock).unwrap();
        }
        let output = run(&["commit", new_arg, "--repo", repo_arg]);
        assert!(output.status.success(), "{}", report(&output));
        assert!(run(&["diff", new_arg, "--repo", repo_arg]).status.code() == Some(0));
    }
}
