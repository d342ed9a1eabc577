//! Where a rendered commit came from: Git trailers in the commit message (never a file of the
//! tree, so a re-render that changes no file still makes no commit), and reading them back
//! (`tfrs log`).
//!
//! ```text
//! Tfrs-Source-Commit: 4f3c2a1e9b8d…      the commit of the specs' repository
//! Tfrs-Source-Dirty: false              whether the inputs had uncommitted changes
//! Tfrs-Version: 0.1.0 (commit …, catalog sha256:…)
//! Tfrs-Clusters: dev, prod
//! ```

use git2::{Repository, StatusOptions};
use std::path::{Path, PathBuf};

/// The trailer naming the specs' commit.
pub const SOURCE_COMMIT: &str = "Tfrs-Source-Commit";
/// The trailer saying whether the inputs had uncommitted changes.
pub const SOURCE_DIRTY: &str = "Tfrs-Source-Dirty";
/// The trailer naming the tfrs that rendered.
pub const VERSION: &str = "Tfrs-Version";
/// The trailer naming the clusters the commit holds renders of.
pub const CLUSTERS: &str = "Tfrs-Clusters";

/// The specs' Git state: the commit their work tree is at, and whether any input has
/// uncommitted changes (modified, staged, new or deleted files under an input).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    /// The `HEAD` commit of the repository holding the inputs.
    pub commit: git2::Oid,
    /// Whether an input differs from that commit.
    pub dirty: bool,
}

/// The Git state of `inputs`, when the first lies in a Git work tree that has a commit; `None`
/// otherwise (inputs outside Git, or a repository without commits).
#[must_use]
pub fn source(inputs: &[PathBuf]) -> Option<Source> {
    let first = inputs.first()?;
    let repo = Repository::discover(first).ok()?;
    let commit = repo.head().ok()?.peel_to_commit().ok()?.id();
    let workdir = repo.workdir()?.canonicalize().ok()?;
    let mut options = StatusOptions::new();
    options.include_untracked(true).recurse_untracked_dirs(true).include_ignored(false);
    let relative: Vec<PathBuf> = inputs.iter().map(|input| relative_to(&workdir, input)).collect::<Option<_>>()?;
    // NB: an input that is the work tree's root takes in every path (no pathspec at all).
    if !relative.iter().any(|path| path.as_os_str().is_empty()) {
        for path in &relative {
            options.pathspec(path);
        }
    }
    let dirty = repo.statuses(Some(&mut options)).map_or(true, |statuses| !statuses.is_empty());
    Some(Source { commit, dirty })
}

fn relative_to(root: &Path, input: &Path) -> Option<PathBuf> {
    let absolute = input.canonicalize().ok()?;
    absolute.strip_prefix(root).ok().map(Path::to_path_buf)
}

/// The provenance trailers of a commit: the source (when known) and the tfrs version line.
/// The clusters are added by the commit itself, which knows them.
#[must_use]
pub fn trailers(source: Option<&Source>, version: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    if let Some(source) = source {
        out.push((SOURCE_COMMIT.to_owned(), source.commit.to_string()));
        out.push((SOURCE_DIRTY.to_owned(), source.dirty.to_string()));
    }
    out.push((VERSION.to_owned(), version.to_owned()));
    out
}

/// The trailers of a commit message, in order (git's own trailer parser).
#[must_use]
pub fn read(message: &str) -> Vec<(String, String)> {
    git2::message_trailers_strs(message)
        .map(|trailers| trailers.iter().map(|(key, value)| (key.to_owned(), value.to_owned())).collect())
        .unwrap_or_default()
}
