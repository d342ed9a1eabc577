//! Where a rendered commit came from: Git trailers in the commit message (never a file of the
//! tree, so a re-render that changes no file still makes no commit), and reading them back
//! (`tfrs log`).
//!
//! ```text
//! Tfrs-Source-Commit: 4f3c2a1e9b8d…      the commit of the specs' repository
//! Tfrs-Source-Dirty: false              whether the inputs had uncommitted changes
//! Tfrs-Version: 0.1.0 (commit …, catalog sha256:…)
//! Tfrs-Clusters: dev, prod
//! Tfrs-Sealer: dev sealed-secrets 5c1f…   how each cluster's Secrets were sealed
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
/// The trailer saying how one cluster's Secrets were sealed, one per cluster:
/// `<cluster> <backend> <identity>` (the certificate's fingerprint, or the age recipients
/// separated by spaces). A later diff tells a value resealed for a new certificate or new
/// recipients from a value that changed.
pub const SEALER: &str = "Tfrs-Sealer";

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

/// Writes what `inputs` held at commit `source` of their repository under `into`, each at its
/// path relative to the work tree, with the `overlays/` and `environments/` beside a file input;
/// returns the inputs as paths under `into`. The inputs' repository is the one [`source`]
/// reads.
///
/// # Errors
///
/// Why not, in words: no repository, a commit it does not hold (a shallow clone), an input
/// missing at that commit, an I/O error.
pub fn checkout_inputs(inputs: &[PathBuf], source: &str, into: &Path) -> Result<Vec<PathBuf>, String> {
    let first = inputs.first().ok_or("no inputs")?;
    let repo = Repository::discover(first).map_err(|_| "the specs are not in a Git repository".to_owned())?;
    let workdir = repo.workdir().and_then(|w| w.canonicalize().ok()).ok_or("the specs' repository has no work tree")?;
    let commit = git2::Oid::from_str(source)
        .and_then(|id| repo.find_commit(id))
        .map_err(|_| format!("the specs' repository does not hold commit {source} (a shallow clone? fetch more history)"))?;
    let tree = commit.tree().map_err(|e| e.message().to_owned())?;
    let mut out = Vec::new();
    for input in inputs {
        let relative = relative_to(&workdir, input).ok_or_else(|| format!("`{}` is outside the specs' repository", input.display()))?;
        let mut wanted = vec![relative.clone()];
        if input.is_file() {
            let parent = relative.parent().map(Path::to_path_buf).unwrap_or_default();
            wanted.extend([parent.join("overlays"), parent.join("environments")]);
        }
        for (index, path) in wanted.iter().enumerate() {
            match write_path(&repo, &tree, path, into) {
                Ok(()) => {}
                Err(git2::ErrorCode::NotFound) if index > 0 => {}
                Err(_) => return Err(format!("`{}` is not in commit {source}", path.display())),
            }
        }
        out.push(into.join(relative));
    }
    Ok(out)
}

/// Writes the blob or subtree at `path` of `tree` under `into`.
fn write_path(repo: &Repository, tree: &git2::Tree<'_>, path: &Path, into: &Path) -> Result<(), git2::ErrorCode> {
    let object = if path.as_os_str().is_empty() {
        tree.as_object().clone()
    } else {
        tree.get_path(path).and_then(|entry| entry.to_object(repo)).map_err(|e| e.code())?
    };
    let io = |_| git2::ErrorCode::GenericError;
    if let Some(blob) = object.as_blob() {
        std::fs::create_dir_all(into.join(path).parent().unwrap_or(into)).map_err(io)?;
        return std::fs::write(into.join(path), blob.content()).map_err(io);
    }
    let Some(subtree) = object.as_tree() else { return Ok(()) };
    let mut failed = None;
    subtree
        .walk(git2::TreeWalkMode::PreOrder, |dir, entry| {
            let Ok(name) = entry.name() else { return git2::TreeWalkResult::Ok };
            let target = into.join(path).join(dir).join(name);
            let written = match entry.kind() {
                Some(git2::ObjectType::Blob) => entry.to_object(repo).ok().and_then(|o| o.into_blob().ok()).map(|blob| {
                    std::fs::create_dir_all(target.parent().unwrap_or(into)).and_then(|()| std::fs::write(&target, blob.content()))
                }),
                _ => None,
            };
            if let Some(Err(_)) = written {
                failed = Some(git2::ErrorCode::GenericError);
                return git2::TreeWalkResult::Abort;
            }
            git2::TreeWalkResult::Ok
        })
        .map_err(|e| e.code())?;
    failed.map_or(Ok(()), Err)
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

/// The [`SEALER`] trailers of `sealers` (cluster, backend, identity), one per cluster.
#[must_use]
pub fn sealer_trailers(sealers: &[(String, &str, String)]) -> Vec<(String, String)> {
    sealers
        .iter()
        .map(|(cluster, backend, identity)| {
            let identity: Vec<&str> = identity.split_whitespace().collect();
            (SEALER.to_owned(), format!("{cluster} {backend} {}", identity.join(" ")))
        })
        .collect()
}

/// Per cluster, the backend and sealer identity its [`SEALER`] trailer records (the identity
/// as [`crate::secrets::seal::sealer_identity`] writes it: recipients one per line).
#[must_use]
pub fn sealers(trailers: &[(String, String)]) -> std::collections::BTreeMap<String, (String, String)> {
    trailers
        .iter()
        .filter(|(key, _)| key == SEALER)
        .filter_map(|(_, value)| {
            let mut words = value.split_whitespace();
            let (cluster, backend) = (words.next()?, words.next()?);
            let identity: Vec<&str> = words.collect();
            (!identity.is_empty()).then(|| (cluster.to_owned(), (backend.to_owned(), identity.join("\n"))))
        })
        .collect()
}

/// How far back a branch is walked for a cluster's last render.
pub const WALK: usize = 500;

/// The trailers of each cluster's last render: walking the branch back from `tip` (first
/// parents, at most [`WALK`] commits), the newest commit whose `Tfrs-Clusters` names it. A
/// cluster no commit names is left out.
#[must_use]
pub fn last_renders(
    tip: &git2::Commit<'_>,
    clusters: &std::collections::BTreeSet<String>,
) -> std::collections::BTreeMap<String, Vec<(String, String)>> {
    let mut found = std::collections::BTreeMap::new();
    let mut next = Some(tip.clone());
    for _ in 0..WALK {
        let Some(commit) = next.take() else { break };
        let trailers = read(commit.message().unwrap_or_default());
        let named = trailers.iter().filter(|(k, _)| k == CLUSTERS).flat_map(|(_, v)| v.split(',').map(str::trim));
        for cluster in named.filter(|c| clusters.contains(*c)).map(str::to_owned).collect::<Vec<_>>() {
            found.entry(cluster).or_insert_with(|| trailers.clone());
        }
        if found.len() == clusters.len() {
            break;
        }
        next = commit.parent(0).ok();
    }
    found
}

/// The trailers of a commit message, in order (git's own trailer parser).
#[must_use]
pub fn read(message: &str) -> Vec<(String, String)> {
    git2::message_trailers_strs(message)
        .map(|trailers| trailers.iter().map(|(key, value)| (key.to_owned(), value.to_owned())).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sealer_trailers_read_back_as_written_recipients_included() {
        let written = vec![
            ("dev".to_owned(), "sops-age", "age1aaa\nage1bbb".to_owned()),
            ("prod".to_owned(), "sealed-secrets", "4c1c6567".to_owned()),
        ];
        let trailers = sealer_trailers(&written);
        assert_eq!(trailers[0], (SEALER.to_owned(), "dev sops-age age1aaa age1bbb".to_owned()));
        let message = format!("subject\n\nbody\n\n{}\n", trailers.iter().map(|(k, v)| format!("{k}: {v}")).collect::<Vec<_>>().join("\n"));
        let read = super::sealers(&super::read(&message));
        assert_eq!(read["dev"], ("sops-age".to_owned(), "age1aaa\nage1bbb".to_owned()));
        assert_eq!(read["prod"], ("sealed-secrets".to_owned(), "4c1c6567".to_owned()));
        assert!(super::sealers(&[(SEALER.to_owned(), "dev sops-age".to_owned())]).is_empty(), "no identity: ignored");
    }
}
