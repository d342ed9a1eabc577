//! Remotes: URL detection, the clone cache, credentials, fetch and non-forced push.
//!
//! Transports: local paths and `file://` always; `ssh://` and scp-like `user@host:path` with a
//! key from ssh-agent; `https://` with a token from `TFRS_GIT_TOKEN` (user
//! `TFRS_GIT_USERNAME`, default `x-access-token`), else git's credential helpers.

use super::{Error, Result};
use git2::{Cred, CredentialType, Direction, FetchOptions, Oid, PushOptions, RemoteCallbacks, Repository};
use sha2::{Digest, Sha256};
use std::cell::{Cell, RefCell};
use std::path::{Path, PathBuf};

/// True when `repo` names a remote URL (`scheme://…` or scp-like `user@host:path`) rather than
/// a local path.
#[must_use]
pub fn is_url(repo: &str) -> bool {
    if repo.contains("://") {
        return true;
    }
    // scp-like: `user@host:path`, with no slash before the colon.
    match repo.split_once(':') {
        Some((head, _)) => head.contains('@') && !head.contains('/'),
        None => false,
    }
}

/// The bare clone of `url` under tfrs's cache directory `cache_root` (`<cache_root>/repos/<hash>`), created on
/// first use, with remote `origin` pointing at `url`.
///
/// # Errors
///
/// The cache directory cannot be created or opened.
pub fn cache(url: &str, cache_root: &Path) -> Result<Repository> {
    let hash = Sha256::digest(url.as_bytes());
    let name: String = hash.iter().take(10).map(|b| format!("{b:02x}")).collect();
    let path: PathBuf = cache_root.join("repos").join(name);
    let open = |path: &Path| -> std::result::Result<Repository, git2::Error> {
        let repo = match Repository::open_bare(path) {
            Ok(repo) => repo,
            Err(_) => Repository::init_bare(path)?,
        };
        match repo.find_remote("origin") {
            Ok(remote) if remote.url() == Ok(url) => {}
            Ok(_) => repo.remote_set_url("origin", url)?,
            Err(_) => {
                repo.remote("origin", url)?;
            }
        }
        Ok(repo)
    };
    // NB: locked before it is opened: creating it, or setting its remote, writes its config.
    std::fs::create_dir_all(&path).map_err(|source| Error::Cache { path: path.clone(), source })?;
    hold(&path, url).map_err(|source| Error::Cache { path: path.clone(), source })?;
    open(&path).map_err(|source| Error::Open { path: path.display().to_string(), source })
}

/// The clone caches this process holds, each locked until it ends.
static HELD: std::sync::Mutex<Vec<std::fs::File>> = std::sync::Mutex::new(Vec::new());

/// Locks the clone cache at `path` until the process ends: runs of tfrs on one machine that
/// use one remote (concurrent commits of different clusters) take turns with its refs, rather
/// than fail on each other's ref locks. A run that has to wait says so.
fn hold(path: &Path, url: &str) -> std::io::Result<()> {
    let dir = std::fs::File::open(path)?;
    crate::tree::write::lock_in_turn(&dir, || eprintln!("waiting for another tfrs run that uses `{url}`"))?;
    HELD.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(dir);
    Ok(())
}

/// Callbacks answering credential requests from ssh-agent, `TFRS_GIT_TOKEN` or git's
/// credential helpers. Each source is tried once, so a wrong credential fails instead of
/// looping.
fn callbacks<'a>(config: Option<git2::Config>) -> RemoteCallbacks<'a> {
    let mut callbacks = RemoteCallbacks::new();
    let tried_agent = Cell::new(false);
    let tried_token = Cell::new(false);
    let tried_helper = Cell::new(false);
    let config = RefCell::new(config);
    callbacks.credentials(move |url, username, allowed| {
        if allowed.contains(CredentialType::SSH_KEY) && !tried_agent.replace(true) {
            return Cred::ssh_key_from_agent(username.unwrap_or("git"));
        }
        if allowed.contains(CredentialType::USER_PASS_PLAINTEXT) {
            if !tried_token.replace(true)
                && let Ok(token) = std::env::var("TFRS_GIT_TOKEN")
            {
                let user = std::env::var("TFRS_GIT_USERNAME").unwrap_or_else(|_| "x-access-token".to_owned());
                return Cred::userpass_plaintext(&user, &token);
            }
            if !tried_helper.replace(true)
                && let Some(config) = config.borrow().as_ref()
            {
                return Cred::credential_helper(config, url, username);
            }
        }
        if allowed.contains(CredentialType::USERNAME) {
            return Cred::username(username.unwrap_or("git"));
        }
        Err(git2::Error::from_str("no credentials: for ssh run an ssh-agent with the key loaded; for https set `TFRS_GIT_TOKEN`"))
    });
    callbacks
}

/// Fetches `branch` of `remote` into `refs/remotes/<remote>/<branch>`; returns its tip, or
/// `None` when the remote has no such branch.
///
/// # Errors
///
/// The remote is unknown or cannot be reached.
pub fn fetch(repo: &Repository, remote: &str, branch: &str) -> Result<Option<Oid>> {
    let fail = |source| Error::Fetch { remote: remote.to_owned(), branch: branch.to_owned(), source };
    let tracking = tracking_ref(remote, branch);
    // NB: libgit2 keeps a stale tracking ref when the remote branch is gone, and fetching a
    // missing branch is no error; so ask the remote what it has first.
    let wanted = format!("refs/heads/{branch}");
    let exists = {
        let mut handle = repo.find_remote(remote).map_err(fail)?;
        let connection = handle.connect_auth(Direction::Fetch, Some(callbacks(repo.config().ok())), None).map_err(fail)?;
        connection.list().map_err(fail)?.iter().any(|head| head.name() == wanted)
    };
    if !exists {
        if let Ok(mut reference) = repo.find_reference(&tracking) {
            let _ = reference.delete();
        }
        return Ok(None);
    }
    let mut handle = repo.find_remote(remote).map_err(fail)?;
    let mut options = FetchOptions::new();
    options.remote_callbacks(callbacks(repo.config().ok())).update_fetchhead(false);
    // NB: the leading `+` only concerns our remote-tracking ref, which mirrors the remote.
    let refspec = format!("+{wanted}:{tracking}");
    handle.fetch(&[refspec.as_str()], Some(&mut options), None).map_err(fail)?;
    repo.refname_to_id(&tracking).map(Some).map_err(fail)
}

/// The branch `remote`'s `HEAD` names (its default branch); `None` for a remote without one
/// (an empty repository).
///
/// # Errors
///
/// The remote is unknown or cannot be reached.
pub fn default_branch(repo: &Repository, remote: &str) -> Result<Option<String>> {
    let fail = |source| Error::Fetch { remote: remote.to_owned(), branch: "HEAD".to_owned(), source };
    let mut handle = repo.find_remote(remote).map_err(fail)?;
    let connection = handle.connect_auth(Direction::Fetch, Some(callbacks(repo.config().ok())), None).map_err(fail)?;
    let Ok(head) = connection.default_branch() else { return Ok(None) };
    Ok(head.as_str().ok().and_then(|name| name.strip_prefix("refs/heads/")).map(str::to_owned))
}

/// `refs/remotes/<remote>/<branch>`.
#[must_use]
pub fn tracking_ref(remote: &str, branch: &str) -> String {
    format!("refs/remotes/{remote}/{branch}")
}

/// How a push ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pushed {
    /// The remote branch now points at the commit.
    Accepted,
    /// The remote refused (it moved and the push was not a fast-forward); the reason given.
    Rejected(String),
}

/// Pushes `commit` to `refs/heads/<branch>` of `remote`, never forced (a fast-forward only),
/// and only over `expected`, the tip the commit was made against (`None`: the branch must not
/// exist yet).
///
/// Over a network the receiving end moves the branch only from the tip it advertised, under its
/// lock. A remote on this machine (a path or `file://`) is written by libgit2 itself, which
/// moves the branch without comparing it again: two concurrent pushes could both succeed and
/// one commit be lost. So there the commit is pushed to a ref of its own, which carries its
/// objects over, and the branch of the remote repository is then moved with a compare-and-swap
/// on `expected`.
///
/// # Errors
///
/// The remote cannot be reached or the transfer fails. A refusal because the remote moved is
/// [`Pushed::Rejected`], not an error.
pub fn push(repo: &Repository, remote: &str, branch: &str, commit: Oid, expected: Option<Oid>) -> Result<Pushed> {
    let fail = |source| Error::Push { remote: remote.to_owned(), branch: branch.to_owned(), source };
    let mut handle = repo.find_remote(remote).map_err(fail)?;
    let local = handle.url().ok().and_then(local_path);
    let target = match &local {
        Some(_) => format!("refs/tfrs/incoming/{commit}"),
        None => format!("refs/heads/{branch}"),
    };
    if let Some(reason) = push_ref(repo, &mut handle, commit, &target).map_err(fail)? {
        return Ok(Pushed::Rejected(reason));
    }
    if let Some(path) = local {
        let moved = move_branch_on_this_machine(&path, branch, commit, expected, &target).map_err(fail)?;
        if !moved {
            return Ok(Pushed::Rejected("the remote branch moved since it was fetched".to_owned()));
        }
    }
    // Record what the remote now has, so the next read starts from it.
    let _ = repo.reference(&tracking_ref(remote, branch), commit, true, "tfrs push");
    Ok(Pushed::Accepted)
}

/// Pushes `commit` to ref `target` of the remote `handle`; `Some(reason)` when it refused.
fn push_ref(
    repo: &Repository,
    handle: &mut git2::Remote<'_>,
    commit: Oid,
    target: &str,
) -> std::result::Result<Option<String>, git2::Error> {
    let rejected: RefCell<Option<String>> = RefCell::new(None);
    let mut callbacks = callbacks(repo.config().ok());
    callbacks.push_update_reference(|_, status| {
        if let Some(status) = status {
            *rejected.borrow_mut() = Some(status.to_owned());
        }
        Ok(())
    });
    let mut options = PushOptions::new();
    options.remote_callbacks(callbacks);
    // A temporary ref names the commit: libgit2 resolves the source of a push refspec as a ref.
    let temporary = format!("refs/tfrs/push/{commit}");
    repo.reference(&temporary, commit, true, "tfrs push")?;
    let refspec = format!("{temporary}:{target}");
    let result = handle.push(&[refspec.as_str()], Some(&mut options));
    drop(options);
    if let Ok(mut reference) = repo.find_reference(&temporary) {
        let _ = reference.delete();
    }
    match result {
        Ok(()) => Ok(rejected.into_inner()),
        Err(error) if error.code() == git2::ErrorCode::NotFastForward => Ok(Some(error.message().to_owned())),
        Err(error) => Err(error),
    }
}

/// The repository on this machine that remote URL `url` names (a path, or `file://` with an
/// empty or `localhost` host and `%XX` escapes, as libgit2 reads it), if it does.
fn local_path(url: &str) -> Option<PathBuf> {
    let Some(rest) = url.strip_prefix("file://") else { return (!is_url(url)).then(|| PathBuf::from(url)) };
    let path = rest.strip_prefix("localhost").unwrap_or(rest);
    let mut bytes = Vec::with_capacity(path.len());
    let mut input = path.bytes();
    while let Some(byte) = input.next() {
        if byte == b'%' {
            let hex: Vec<u8> = input.by_ref().take(2).collect();
            let escaped = std::str::from_utf8(&hex).ok().filter(|h| h.len() == 2).and_then(|h| u8::from_str_radix(h, 16).ok());
            bytes.push(escaped?);
        } else {
            bytes.push(byte);
        }
    }
    String::from_utf8(bytes).ok().map(PathBuf::from)
}

/// Moves `branch` of the repository at `path` from `expected` to `commit` (whose objects ref
/// `incoming` brought over), then removes `incoming`; `false` when the branch is not at
/// `expected` any more (or, for `None`, exists already).
fn move_branch_on_this_machine(
    path: &Path,
    branch: &str,
    commit: Oid,
    expected: Option<Oid>,
    incoming: &str,
) -> std::result::Result<bool, git2::Error> {
    let remote = Repository::open(path)?;
    let name = format!("refs/heads/{branch}");
    let moved = match expected {
        Some(old) => remote.reference_matching(&name, commit, true, old, "tfrs push"),
        None => remote.reference(&name, commit, false, "tfrs push"),
    };
    if let Ok(mut reference) = remote.find_reference(incoming) {
        let _ = reference.delete();
    }
    match moved {
        Ok(_) => Ok(true),
        Err(error) if matches!(error.code(), git2::ErrorCode::Modified | git2::ErrorCode::Exists | git2::ErrorCode::Locked) => Ok(false),
        Err(error) => Err(error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn https_and_ssh_are_compiled_in() {
        let version = git2::Version::get();
        assert!(version.https() && version.ssh(), "docs/git.md promises both transports");
    }

    #[test]
    fn urls_and_paths_are_told_apart() {
        for url in ["https://git.example.com/a.git", "ssh://git@host/a.git", "file:///tmp/a.git", "git@github.com:org/repo.git"] {
            assert!(is_url(url), "{url}");
        }
        for path in ["/tmp/repo", "repo", "./a:b", "dir/user@host:x", "C"] {
            assert!(!is_url(path), "{path}");
        }
    }

    #[test]
    fn a_remote_on_this_machine_is_found_as_libgit2_finds_it() {
        for (url, path) in [
            ("file:///tmp/a.git", Some("/tmp/a.git")),
            ("file://localhost/tmp/a.git", Some("/tmp/a.git")),
            ("file:///tmp/with%20space.git", Some("/tmp/with space.git")),
            ("../gitops.git", Some("../gitops.git")),
            ("file:///tmp/bad%2", None),
            ("https://git.example.com/a.git", None),
            ("git@github.com:org/repo.git", None),
        ] {
            assert_eq!(local_path(url), path.map(PathBuf::from), "{url}");
        }
    }
}
