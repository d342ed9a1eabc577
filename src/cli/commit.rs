//! `tfrs commit`: load -> build (render, lay out) -> seal against the branch and commit
//! (compare-and-swap) -> push.

use super::Status;
use super::args::CommitArgs;
use super::stages::{build, load, select};
use crate::git::Author;
use crate::git::commit::{CommitOptions, Outcome, Push, commit};
use anyhow::Context as _;
use std::io::Write;

/// How many times a moved branch or a rejected push is retried.
const ATTEMPTS: usize = 5;

fn short(oid: git2::Oid) -> String {
    oid.to_string()[..12].to_owned()
}

/// Runs `tfrs commit`.
pub fn run(args: &CommitArgs, stdout: &mut dyn Write) -> anyhow::Result<Status> {
    let Some((spec, bundle)) = load(&args.inputs, &args.settings.overlays)? else {
        return Ok(Status::Failure);
    };
    let spec = select(spec, &bundle, &args.settings.clusters)?;
    let (repo, is_url) = crate::git::open(&args.repo)?;
    let author = Author::resolve(args.author.as_deref(), &repo, &|name| std::env::var(name).ok())?;
    let push = (args.push || is_url)
        .then(|| Push { remote: if is_url { "origin".to_owned() } else { args.remote.clone() }, follow_remote: is_url });
    let branch = match &args.branch {
        Some(branch) => branch.clone(),
        None => crate::git::default_branch(&repo, is_url)?,
    };
    let source = crate::git::provenance::source(&args.inputs);
    // The tree is built once; each attempt only seals it against the branch as it then is.
    let Some(mut tree) = build(&spec, &bundle, &args.settings)? else {
        return Ok(Status::Failure);
    };
    let mut trailers = crate::git::provenance::trailers(source.as_ref(), &super::version::line());
    trailers.extend(crate::git::provenance::sealer_trailers(&tree.sealers()));
    let options =
        CommitOptions { branch: branch.clone(), message: args.message.clone(), author, push: push.clone(), attempts: ATTEMPTS, trailers };
    let outcome = commit(&repo, &options, &mut tree, &mut crate::source::inputs::system_rng())
        .with_context(|| format!("cannot commit to `{branch}` in `{}`", args.repo))?;
    let remote = push.map(|p| p.remote).unwrap_or_default();
    match outcome {
        Outcome::NoChanges { tip, pushed } => {
            let at = tip.map(|t| format!(" at {}", short(t))).unwrap_or_default();
            writeln!(stdout, "no changes: `{branch}`{at} already holds this render")?;
            if pushed {
                writeln!(stdout, "pushed `{branch}` to `{remote}`")?;
            }
            Ok(Status::Success)
        }
        Outcome::Committed { commit, diff, attempt, pushed, warnings, .. } => {
            let retried = if attempt > 1 { format!(" (attempt {attempt}: the branch moved meanwhile)") } else { String::new() };
            writeln!(stdout, "committed {} to `{}`: {}{retried}", short(commit), branch, crate::tree::diff::counts_text(&diff.totals()))?;
            if !args.quiet {
                write!(stdout, "{}", diff.summary())?;
            }
            if pushed {
                writeln!(stdout, "pushed `{branch}` to `{remote}`")?;
            }
            for warning in warnings {
                eprintln!("warning: {warning}");
            }
            Ok(Status::Success)
        }
    }
}
