//! Records the Git commit the binary is built from as `TFRS_GIT_COMMIT` (`tfrs --version`):
//! the short hash, with `-dirty` when the work tree has uncommitted changes, or `unknown`
//! outside a Git checkout or without `git`. It never fails the build.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let root = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let commit = describe(&root).unwrap_or_else(|| "unknown".to_owned());
    println!("cargo:rustc-env=TFRS_GIT_COMMIT={commit}");
    // Rerun when HEAD moves (a commit, a checkout), when the index changes (staging) or when
    // anything compiled into the binary changes: those are when the answer can change. Listing
    // paths replaces Cargo's default (any file of the package), so docs or test edits alone do
    // not rebuild the crate.
    println!("cargo:rerun-if-changed=build.rs");
    for path in ["src", "templates", "overlays", "Cargo.toml", "Cargo.lock"] {
        if root.join(path).exists() {
            println!("cargo:rerun-if-changed={path}");
        }
    }
    for path in git_files(&root) {
        // NB: a listed path that does not exist reruns the script on every build.
        if path.exists() {
            println!("cargo:rerun-if-changed={}", path.display());
        }
    }
}

/// Runs `git` in `root`; its trimmed stdout when it succeeds.
fn git(root: &Path, args: &[&str]) -> Option<String> {
    // NB: `--no-optional-locks`: `git status` must not rewrite the index, or every build would
    // see it changed and rerun this script.
    let output = Command::new("git").arg("--no-optional-locks").args(args).current_dir(root).output().ok()?;
    output.status.success().then(|| String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

/// `<short hash>[-dirty]`, when `root` is the top of a Git work tree.
fn describe(root: &Path) -> Option<String> {
    // Only this checkout counts: a crate unpacked inside another repository is not built from
    // that repository's commit.
    let top = git(root, &["rev-parse", "--show-toplevel"])?;
    if std::fs::canonicalize(&top).ok()? != std::fs::canonicalize(root).ok()? {
        return None;
    }
    let hash = git(root, &["rev-parse", "--short=12", "HEAD"]).filter(|h| !h.is_empty())?;
    let status = git(root, &["status", "--porcelain", "--untracked-files=no"])?;
    Some(if status.is_empty() { hash } else { format!("{hash}-dirty") })
}

/// The files of the Git directory whose change means another commit or other staged changes:
/// `HEAD`, the index, the current branch's ref and the packed refs (in a linked work tree,
/// `HEAD` and the index are its own, the refs shared).
fn git_files(root: &Path) -> Vec<PathBuf> {
    let (Some(git_dir), Some(common)) = (git(root, &["rev-parse", "--git-dir"]), git(root, &["rev-parse", "--git-common-dir"])) else {
        return Vec::new();
    };
    let (git_dir, common) = (root.join(git_dir), root.join(common));
    let mut files = vec![git_dir.join("HEAD"), git_dir.join("index"), common.join("packed-refs")];
    if let Some(branch) = git(root, &["symbolic-ref", "-q", "HEAD"]) {
        files.push(common.join(branch));
    }
    files
}
