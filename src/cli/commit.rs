//! `tfrs commit`: load -> render against the branch -> commit (compare-and-swap) -> push.

use super::Status;
use super::args::CommitArgs;
use super::render::{load, render_tree_with};
use crate::git::commit::{CommitOptions, Outcome, Push, commit};
use crate::git::{Author, remote};
use anyhow::{Context as _, bail};
use git2::Repository;
use serde_json::Value as Json;
use std::io::Write;
use std::path::PathBuf;

/// How many times a moved branch or a rejected push is retried.
const ATTEMPTS: usize = 5;

/// Where URL repositories are cloned: `$XDG_CACHE_HOME`, else `~/.cache`.
fn cache_root() -> anyhow::Result<PathBuf> {
    if let Some(dir) = std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(dir));
    }
    match std::env::var_os("HOME").filter(|d| !d.is_empty()) {
        Some(home) => Ok(PathBuf::from(home).join(".cache")),
        None => bail!("no cache directory for the clone: set `XDG_CACHE_HOME` or `HOME`"),
    }
}

/// Opens `--repo`: a local repository, or the cached clone of a URL (`true`).
pub(crate) fn open(repo: &str) -> anyhow::Result<(Repository, bool)> {
    if remote::is_url(repo) {
        return Ok((remote::cache(repo, &cache_root()?)?, true));
    }
    let repository = Repository::open(repo).map_err(|source| crate::git::Error::Open { path: repo.to_owned(), source })?;
    Ok((repository, false))
}

fn short(oid: git2::Oid) -> String {
    oid.to_string()[..12].to_owned()
}

/// Runs `tfrs commit`.
pub fn run(args: &CommitArgs, stdout: &mut dyn Write) -> anyhow::Result<Status> {
    let Some((spec, bundle)) = load(&args.inputs, &args.settings.overlays)? else {
        return Ok(Status::Failure);
    };
    let (repo, is_url) = open(&args.repo)?;
    let author = Author::resolve(args.author.as_deref(), &repo, &|name| std::env::var(name).ok())?;
    let push = (args.push || is_url)
        .then(|| Push { remote: if is_url { "origin".to_owned() } else { args.remote.clone() }, follow_remote: is_url });
    let options = CommitOptions {
        branch: args.branch.clone(),
        message: args.message.clone(),
        author,
        push: push.clone(),
        attempts: ATTEMPTS,
        before_update: None,
    };
    let mut step = |previous: &dyn Fn(&str) -> Option<Json>| {
        render_tree_with(
            &spec,
            &bundle,
            args.settings.templates.as_deref(),
            args.settings.master_key_file.as_deref(),
            args.settings.allow_outside,
            previous,
        )
        .map_err(Into::into)
    };
    let outcome = commit(&repo, &options, &mut step).with_context(|| format!("cannot commit to `{}` in `{}`", args.branch, args.repo))?;
    let remote = push.map(|p| p.remote).unwrap_or_default();
    match outcome {
        Outcome::RenderFailed => Ok(Status::Failure),
        Outcome::NoChanges { tip, pushed } => {
            let at = tip.map(|t| format!(" at {}", short(t))).unwrap_or_default();
            writeln!(stdout, "no changes: `{}`{at} already holds this render", args.branch)?;
            if pushed {
                writeln!(stdout, "pushed `{}` to `{remote}`", args.branch)?;
            }
            Ok(Status::Success)
        }
        Outcome::Committed { commit, diff, attempt, pushed, warnings, .. } => {
            let retried = if attempt > 1 { format!(" (attempt {attempt}: the branch moved meanwhile)") } else { String::new() };
            writeln!(
                stdout,
                "committed {} to `{}`: {}{retried}",
                short(commit),
                args.branch,
                crate::git::diff::counts_text(&diff.totals())
            )?;
            write!(stdout, "{}", diff.summary())?;
            if pushed {
                writeln!(stdout, "pushed `{}` to `{remote}`", args.branch)?;
            }
            for warning in warnings {
                eprintln!("warning: {warning}");
            }
            Ok(Status::Success)
        }
    }
}
