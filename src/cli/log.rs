//! `tfrs log`: the rendered commits of a branch with their provenance, read back from the
//! trailers `tfrs commit` writes: the specs' commit (and whether the inputs were dirty), the
//! tfrs version and the clusters.

use super::Status;
use super::args::{LogArgs, LogFormat};
use crate::git::provenance::{self, CLUSTERS, SOURCE_COMMIT, SOURCE_DIRTY, VERSION};
use anyhow::Context as _;
use serde_json::json;
use std::io::Write;

/// Runs `tfrs log`.
pub fn run(args: &LogArgs, stdout: &mut dyn Write) -> anyhow::Result<Status> {
    let (repo, is_url) = crate::git::open(&args.repo)?;
    let branch = match &args.branch {
        Some(branch) => branch.clone(),
        None => crate::git::default_branch(&repo, is_url)?,
    };
    let tip = if is_url {
        crate::git::remote::fetch(&repo, "origin", &branch)?
    } else {
        repo.find_reference(&format!("refs/heads/{branch}")).ok().and_then(|r| r.target())
    };
    let tip = tip.with_context(|| format!("`{}` has no branch `{branch}`", args.repo))?;
    let entries = entries(&repo, tip, args.max_count)?;
    if args.format == LogFormat::Json {
        writeln!(stdout, "{}", serde_json::to_string_pretty(&json!({ "branch": branch, "commits": entries }))?)?;
        return Ok(Status::Success);
    }
    for entry in &entries {
        text(entry, stdout)?;
    }
    Ok(Status::Success)
}

/// The newest `max` commits from `tip`, each with its provenance trailers.
fn entries(repo: &git2::Repository, tip: git2::Oid, max: usize) -> anyhow::Result<Vec<serde_json::Value>> {
    let mut walk = repo.revwalk()?;
    walk.push(tip)?;
    let mut entries = Vec::new();
    for oid in walk.take(max) {
        let commit = repo.find_commit(oid?)?;
        let message = String::from_utf8_lossy(commit.message_bytes()).into_owned();
        let trailers = provenance::read(&message);
        let get = |key: &str| trailers.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone());
        entries.push(json!({
            "commit": commit.id().to_string(),
            "time": commit.time().seconds(),
            "author": commit.author().name().unwrap_or_default(),
            "subject": message.lines().next().unwrap_or_default(),
            "source": get(SOURCE_COMMIT).map(|c| json!({ "commit": c, "dirty": get(SOURCE_DIRTY).as_deref() == Some("true") })),
            "version": get(VERSION),
            "clusters": get(CLUSTERS).map(|c| c.split(", ").filter(|s| !s.is_empty()).map(str::to_owned).collect::<Vec<_>>()),
        }));
    }
    Ok(entries)
}

/// One commit for people: its id and subject, then what it came from.
fn text(entry: &serde_json::Value, stdout: &mut dyn Write) -> std::io::Result<()> {
    let id = entry["commit"].as_str().unwrap_or_default();
    writeln!(stdout, "{} {}", &id[..12.min(id.len())], entry["subject"].as_str().unwrap_or_default())?;
    let mut said = Vec::new();
    match entry["source"].as_object() {
        Some(source) => {
            let commit = source["commit"].as_str().unwrap_or_default();
            let dirty = if source["dirty"] == true { " (with uncommitted changes)" } else { "" };
            said.push(format!("specs at {}{dirty}", &commit[..12.min(commit.len())]));
        }
        None if entry["version"].is_string() => said.push("specs outside Git".to_owned()),
        None => {}
    }
    if let Some(version) = entry["version"].as_str() {
        said.push(format!("tfrs {version}"));
    }
    if let Some(clusters) = entry["clusters"].as_array() {
        let names: Vec<&str> = clusters.iter().filter_map(|c| c.as_str()).collect();
        said.push(format!("clusters: {}", names.join(", ")));
    }
    if said.is_empty() {
        said.push("no tfrs provenance".to_owned());
    }
    writeln!(stdout, "  {}", said.join("; "))?;
    Ok(())
}
