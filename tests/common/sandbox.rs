//! A sandbox for `tfrs commit` and `tfrs diff` against repositories in a temp dir: its own
//! HOME and cache (no test reads the user's git config), bare repositories, fixture copies.
#![allow(dead_code)]

use super::{copy_dir, report, root};
use git2::{Oid, Repository};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub const AUTHOR: &str = "CI Bot <ci@example.com>";

/// A temp dir with its own HOME and cache, so no test reads the user's git config or cache.
pub struct Sandbox {
    dir: tempfile::TempDir,
}

impl Sandbox {
    pub fn new() -> Sandbox {
        Sandbox { dir: tempfile::tempdir().expect("temp dir") }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn command(&self, program: &str) -> Command {
        let mut command = Command::new(program);
        let home = self.path().join("home");
        std::fs::create_dir_all(&home).expect("home");
        command
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &home)
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .env("XDG_CACHE_HOME", self.path().join("cache"))
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("NO_COLOR", "1")
            .env("TFRS_MASTER_KEY", std::fs::read_to_string(root().join("fixtures/demo/keys/master.key")).expect("master key").trim())
            .current_dir(self.path());
        command
    }

    pub fn tfrs(&self, args: &[&str]) -> Output {
        self.command(env!("CARGO_BIN_EXE_tfrs")).args(args).output().expect("the tfrs binary runs")
    }

    /// `tfrs commit SPEC --repo REPO --author …` plus `extra`; must succeed.
    pub fn commit(&self, spec: &Path, repo: &Path, extra: &[&str]) -> String {
        let mut args = vec!["commit", path(spec), "--repo", path(repo), "--author", AUTHOR];
        args.extend_from_slice(extra);
        let output = self.tfrs(&args);
        assert_eq!(output.status.code(), Some(0), "{}", report(&output));
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    pub fn git(&self, dir: &Path, args: &[&str]) {
        let output = self
            .command("git")
            .current_dir(dir)
            .args(args)
            .env("GIT_AUTHOR_NAME", "Someone")
            .env("GIT_AUTHOR_EMAIL", "someone@example.com")
            .env("GIT_COMMITTER_NAME", "Someone")
            .env("GIT_COMMITTER_EMAIL", "someone@example.com")
            .output()
            .expect("git runs");
        assert!(output.status.success(), "git {args:?}: {}", report(&output));
    }

    /// A bare repository whose `HEAD` names `main` (its default branch).
    pub fn bare(&self, name: &str) -> PathBuf {
        self.bare_on(name, "main")
    }

    /// A bare repository whose `HEAD` names `branch`.
    pub fn bare_on(&self, name: &str, branch: &str) -> PathBuf {
        let path = self.path().join(name);
        let mut options = git2::RepositoryInitOptions::new();
        options.bare(true).initial_head(branch);
        Repository::init_opts(&path, &options).expect("init a bare repository");
        path
    }

    /// A copy of a fixture (to edit), at `specs/<name>`.
    pub fn fixture(&self, fixture: &str, name: &str) -> PathBuf {
        let to = self.path().join("specs").join(name);
        copy_dir(&root().join("fixtures").join(fixture), &to);
        to
    }

    /// The demo's cluster alone (SealedSecrets through its DEV ONLY certificate).
    pub fn demo_cluster(&self) -> PathBuf {
        let to = self.path().join("specs/demo");
        std::fs::create_dir_all(&to).expect("create");
        std::fs::copy(root().join("fixtures/demo/cluster.yaml"), to.join("cluster.yaml")).expect("copy");
        for dir in ["keys", "secrets", "overlays"] {
            copy_dir(&root().join("fixtures/demo").join(dir), &to.join(dir));
        }
        to
    }

    /// `render-minimal` under another cluster name.
    pub fn minimal(&self, cluster: &str) -> PathBuf {
        let dir = self.fixture("render-minimal", cluster);
        edit(&dir.join("spec.yaml"), "  name: bare\n", &format!("  name: {cluster}\n"));
        dir
    }
}

pub fn path(p: &Path) -> &str {
    p.to_str().expect("UTF-8 temp path")
}

pub fn edit(file: &Path, from: &str, to: &str) {
    let text = std::fs::read_to_string(file).expect("read");
    assert!(text.contains(from), "`{from}` not in {}", file.display());
    std::fs::write(file, text.replacen(from, to, 1)).expect("write");
}

pub fn tip(repo: &Path, branch: &str) -> Oid {
    Repository::open(repo).expect("open").refname_to_id(&format!("refs/heads/{branch}")).expect("branch exists")
}
