//! Git: commit the rendered tree to a branch ([`commit`]), read a ref's rendered files for a
//! diff, and talk to remotes ([`remote`]).
//!
//! Commits are built from in-memory trees: the blob, tree and commit objects a commit adds are
//! written into the object database as one pack ([`pack`]), so a bare repository works and no
//! work tree is ever needed.

pub mod commit;
pub mod pack;
pub mod provenance;
pub mod remote;
mod walk;

use crate::tree::Files;
use git2::{Repository, Tree};

use serde_json::Value as Json;
use std::path::PathBuf;
pub(crate) use walk::{extend_ids, file_ids};

/// Errors of the Git stage.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The repository cannot be opened (or created, for the clone cache).
    #[error("cannot open the repository `{path}`")]
    Open {
        /// The path or URL.
        path: String,
        /// The cause.
        #[source]
        source: git2::Error,
    },
    /// None of `TFRS_CACHE_DIR`, `XDG_CACHE_HOME` and `HOME` names a directory for the clone
    /// cache.
    #[error("no cache directory for the clone: set `TFRS_CACHE_DIR`, `XDG_CACHE_HOME` or `HOME`")]
    NoCacheDir,
    /// The clone cache directory cannot be created, or locked.
    #[error("cannot create or lock the clone cache `{}`", path.display())]
    Cache {
        /// The directory.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A ref cannot be resolved to a commit.
    #[error("cannot resolve `{name}` to a commit")]
    Resolve {
        /// The ref or revision.
        name: String,
        /// The cause.
        #[source]
        source: git2::Error,
    },
    /// Reading objects from the repository failed.
    #[error("cannot read the tree of `{name}`")]
    ReadTree {
        /// The ref or commit.
        name: String,
        /// The cause.
        #[source]
        source: git2::Error,
    },
    /// Writing blobs, trees or the commit failed.
    #[error("cannot write the commit")]
    Write(#[source] git2::Error),
    /// Writing the pack of new objects failed.
    #[error("cannot write the commit")]
    Pack(#[source] pack::Error),
    /// Updating the branch failed for another reason than a concurrent writer.
    #[error("cannot update `{branch}`")]
    UpdateRef {
        /// The branch.
        branch: String,
        /// The cause.
        #[source]
        source: git2::Error,
    },
    /// The branch's reference stayed locked through every attempt: another process holds the
    /// lock, or one was stopped while it held it (Git never removes such a lock by itself).
    #[error(
        "`{branch}` stayed locked through {attempts} attempts: `{}` exists; another git process is updating the branch, or one was stopped while it did: if none is running, remove that file and run again",
        lock.display()
    )]
    Locked {
        /// The branch.
        branch: String,
        /// The lock file.
        lock: std::path::PathBuf,
        /// Attempts made.
        attempts: usize,
    },
    /// Another writer kept moving the branch.
    #[error("`{branch}` kept moving under us: gave up after {attempts} attempts; nothing was lost, run again")]
    Contended {
        /// The branch.
        branch: String,
        /// Attempts made.
        attempts: usize,
    },
    /// The remote kept rejecting the push.
    #[error("push to `{remote}` was rejected {attempts} times (last: {reason}); nothing was force-pushed, run again")]
    PushRejected {
        /// The remote.
        remote: String,
        /// Attempts made.
        attempts: usize,
        /// The remote's last reason.
        reason: String,
    },
    /// The local branch and the remote branch both have commits the other lacks.
    #[error("local `{branch}` and `{remote}/{branch}` have diverged; reconcile them (pull or reset) first")]
    Diverged {
        /// The branch.
        branch: String,
        /// The remote.
        remote: String,
    },
    /// Fetching failed.
    #[error("cannot fetch `{branch}` from `{remote}`")]
    Fetch {
        /// The remote.
        remote: String,
        /// The branch.
        branch: String,
        /// The cause.
        #[source]
        source: git2::Error,
    },
    /// Pushing failed (unreachable, authentication, transfer), as opposed to rejected.
    #[error("cannot push `{branch}` to `{remote}`")]
    Push {
        /// The remote.
        remote: String,
        /// The branch.
        branch: String,
        /// The cause.
        #[source]
        source: git2::Error,
    },
    /// No author was given or configured.
    #[error(
        "no commit author: pass `--author \"Name <email>\"`, set `user.name` and `user.email` in git config, or set `GIT_AUTHOR_NAME` and `GIT_AUTHOR_EMAIL`"
    )]
    NoAuthor,
    /// `--author` is not `Name <email>`.
    #[error("`--author` must look like `Name <email>`")]
    BadAuthor,
    /// Sealing the tree against the branch failed (the cause says how).
    #[error("sealing failed")]
    Seal(#[source] Box<crate::tree::Error>),
}

/// The result type of this module.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A commit author (also the committer).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Author {
    /// The name.
    pub name: String,
    /// The email address.
    pub email: String,
}

impl Author {
    /// The author from `explicit` (`Name <email>`), else git config `user.name`/`user.email`,
    /// else `GIT_AUTHOR_NAME`/`GIT_AUTHOR_EMAIL` from `env`.
    ///
    /// # Errors
    ///
    /// A malformed `explicit`, or no author anywhere.
    pub fn resolve(explicit: Option<&str>, repo: &Repository, env: &dyn Fn(&str) -> Option<String>) -> Result<Author> {
        if let Some(text) = explicit {
            let (name, rest) = text.split_once('<').ok_or(Error::BadAuthor)?;
            let email = rest.strip_suffix('>').ok_or(Error::BadAuthor)?;
            let (name, email) = (name.trim(), email.trim());
            if name.is_empty() || email.is_empty() || email.contains(['<', '>']) {
                return Err(Error::BadAuthor);
            }
            return Ok(Author { name: name.to_owned(), email: email.to_owned() });
        }
        if let Ok(config) = repo.config()
            && let (Ok(name), Ok(email)) = (config.get_string("user.name"), config.get_string("user.email"))
            && !name.trim().is_empty()
            && !email.trim().is_empty()
        {
            return Ok(Author { name, email });
        }
        match (env("GIT_AUTHOR_NAME"), env("GIT_AUTHOR_EMAIL")) {
            (Some(name), Some(email)) if !name.trim().is_empty() && !email.trim().is_empty() => Ok(Author { name, email }),
            _ => Err(Error::NoAuthor),
        }
    }
}

/// Where URL repositories are cloned: below tfrs's cache directory, the render memo's
/// (`$TFRS_CACHE_DIR`, else `$XDG_CACHE_HOME/tfrs`, else `~/.cache/tfrs`).
fn cache_root() -> Result<PathBuf> {
    crate::cache::dir().ok_or(Error::NoCacheDir)
}

/// The branch a command uses when none is named: for a URL, the remote's default branch (its
/// `HEAD`); for a local repository, the branch its `HEAD` names, even one without commits yet
/// (`git init -b trunk`); else `main`.
///
/// # Errors
///
/// A URL's remote cannot be reached.
pub fn default_branch(repo: &Repository, is_url: bool) -> Result<String> {
    let named = if is_url {
        remote::default_branch(repo, "origin")?
    } else {
        repo.find_reference("HEAD")
            .ok()
            .and_then(|head| head.symbolic_target().ok().flatten().and_then(|t| t.strip_prefix("refs/heads/")).map(str::to_owned))
    };
    Ok(named.unwrap_or_else(|| "main".to_owned()))
}

/// Opens `--repo`: a local repository, or the cached clone of a URL (then `true`).
///
/// # Errors
///
/// The repository cannot be opened, or the clone cache cannot be made.
pub fn open(repo: &str) -> Result<(Repository, bool)> {
    if remote::is_url(repo) {
        return Ok((remote::cache(repo, &cache_root()?)?, true));
    }
    let repository = Repository::open(repo).map_err(|source| Error::Open { path: repo.to_owned(), source })?;
    Ok((repository, false))
}

/// The object stored at `path` in `tree`, parsed as the render's `previous` lookup expects.
#[must_use]
pub fn previous_object(repo: &Repository, tree: &Tree<'_>, path: &str) -> Option<Json> {
    let entry = tree.get_path(std::path::Path::new(path)).ok()?;
    let blob = entry.to_object(repo).ok()?.into_blob().ok()?;
    crate::manifest::read_object(blob.content())
}

/// Every file below `prefix` (a directory path, no trailing slash) in `tree`, by full path.
///
/// # Errors
///
/// An object of the tree cannot be read.
pub fn read_files(repo: &Repository, tree: &Tree<'_>, prefix: &str) -> Result<Files, git2::Error> {
    let mut ids = std::collections::BTreeMap::new();
    file_ids(repo, tree, prefix, &mut ids, None)?;
    ids.into_iter().map(|(path, id)| Ok((path, repo.find_blob(id)?.content().to_vec()))).collect()
}
