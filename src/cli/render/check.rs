//! `tfrs render --check`: whether the output directory already holds the render, and what would
//! change.

use super::Status;
use std::io::Write;
use std::path::Path;

/// How many paths of each list `render --check` names.
const CHECK_NAMED: usize = 20;

/// `--check`: whether the directory already holds this render; when not, the count line, then
/// (unless `quiet`) the paths that would change and be removed, sorted, at most
/// [`CHECK_NAMED`] of each.
pub(super) fn check_report(
    stdout: &mut dyn Write,
    out: &Path,
    files: usize,
    changed: &[String],
    removed: &[String],
    quiet: bool,
) -> anyhow::Result<Status> {
    let (changed_paths, removed_paths) = (changed, removed);
    let (changed, removed) = (changed.len(), removed.len());
    if changed == 0 && removed == 0 {
        writeln!(stdout, "up to date: {files} files in `{}`", out.display())?;
        return Ok(Status::Success);
    }
    let files_would = if changed == 1 { "file would" } else { "files would" };
    writeln!(stdout, "out of date: {changed} {files_would} change and {removed} would be removed in `{}`", out.display())?;
    if !quiet {
        name_paths(stdout, "would change", changed_paths)?;
        name_paths(stdout, "would be removed", removed_paths)?;
    }
    Ok(Status::Failure)
}

/// `  <verb>: <path>` for the first [`CHECK_NAMED`] of `paths` in sorted order, then
/// `  <verb>: and N more`.
fn name_paths(stdout: &mut dyn Write, verb: &str, paths: &[String]) -> std::io::Result<()> {
    let mut sorted = paths.to_vec();
    sorted.sort_unstable();
    for path in sorted.iter().take(CHECK_NAMED) {
        writeln!(stdout, "  {verb}: {path}")?;
    }
    if sorted.len() > CHECK_NAMED {
        writeln!(stdout, "  {verb}: and {} more", sorted.len() - CHECK_NAMED)?;
    }
    Ok(())
}
