//! The output directory: reading the previous tree, and replacing it atomically.
//!
//! A render is written into a temporary sibling directory, then swapped in with two renames;
//! a failure before the swap leaves the previous tree as it was. A run killed between the two
//! renames leaves the previous tree under `.<name>.tfrs-old`, which the next run restores
//! first. A non-empty directory without the marker file is never touched.

use anyhow::{Context as _, bail};
use rayon::prelude::*;
use serde_json::Value as Json;
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The marker file at the root of every directory tfrs renders.
pub const MARKER: &str = crate::source::RENDERED_MARKER;
const MARKER_TEXT: &str = "This directory is written by `tfrs render`; it is replaced whole on every render.\n";

/// The output directory as an absolute path with symlinks resolved (a symlinked `--out` renders
/// into its target; `--out .` names the directory, not `.`).
///
/// # Errors
///
/// An output directory that contains the working directory (it could not be swapped out), or
/// an unreadable working directory.
pub fn resolve(out: &Path) -> anyhow::Result<PathBuf> {
    let cwd = std::env::current_dir().context("cannot read the working directory")?;
    let absolute = if out.exists() {
        fs::canonicalize(out).with_context(|| format!("cannot resolve `{}`", out.display()))?
    } else {
        let mut path = PathBuf::new();
        for component in cwd.join(out).components() {
            match component {
                std::path::Component::CurDir => {}
                std::path::Component::ParentDir => {
                    path.pop();
                }
                other => path.push(other),
            }
        }
        path
    };
    if fs::canonicalize(&cwd).unwrap_or(cwd).starts_with(&absolute) {
        bail!(
            "`{}` contains the working directory, so it cannot be replaced; render into a directory of its own, e.g. `--out out/`",
            out.display()
        );
    }
    Ok(absolute)
}

fn sibling(out: &Path, suffix: &str) -> PathBuf {
    let name = out.file_name().map_or_else(|| "out".to_owned(), |n| n.to_string_lossy().into_owned());
    out.with_file_name(format!(".{name}.{suffix}"))
}

/// Restores a tree left half-swapped by a killed run and removes stale temporary directories.
///
/// # Errors
///
/// I/O errors.
pub fn recover(out: &Path) -> anyhow::Result<()> {
    let old = sibling(out, "tfrs-old");
    let staging = sibling(out, "tfrs-new");
    if old.exists() {
        if out.exists() {
            fs::remove_dir_all(&old).with_context(|| format!("cannot remove `{}`", old.display()))?;
        } else {
            fs::rename(&old, out).with_context(|| format!("cannot restore `{}`", out.display()))?;
        }
    }
    if staging.exists() {
        fs::remove_dir_all(&staging).with_context(|| format!("cannot remove `{}`", staging.display()))?;
    }
    Ok(())
}

/// Checks that `out` may be written: missing, empty, or written by tfrs.
///
/// # Errors
///
/// A non-empty directory without the marker, or a path that is not a directory.
pub fn check_writable(out: &Path) -> anyhow::Result<()> {
    if !out.exists() {
        return Ok(());
    }
    if !out.is_dir() {
        bail!("`{}` exists and is not a directory", out.display());
    }
    if out.join(".git").exists() {
        bail!(
            "`{}` is a Git work tree; `tfrs render` replaces its directory whole and would delete `.git`\n  hint: use `tfrs commit --repo {}` to write into a repository, or render into a directory of its own",
            out.display(),
            out.display()
        );
    }
    let empty = fs::read_dir(out).with_context(|| format!("cannot read `{}`", out.display()))?.next().is_none();
    if !empty && !out.join(MARKER).exists() {
        bail!(
            "`{}` is not empty and was not written by tfrs (no `{MARKER}` file); refusing to replace it\n  hint: choose an empty directory, or use `tfrs commit` to write into a Git repository",
            out.display()
        );
    }
    Ok(())
}

/// The first document of a previously written file, as JSON, if it parses.
#[must_use]
pub fn parse_object(text: &str) -> Option<Json> {
    let documents = crate::spec::yaml::parse(0, text).ok()?;
    documents.first().map(crate::spec::yaml::Node::to_json)
}

/// Reads every file below `out` (except the marker), by relative path. Files are read in
/// parallel.
///
/// # Errors
///
/// I/O errors.
pub fn read_tree(out: &Path) -> anyhow::Result<BTreeMap<String, Vec<u8>>> {
    let mut paths = Vec::new();
    if out.exists() {
        walk(out, out, &mut paths)?;
    }
    let read: Vec<anyhow::Result<(String, Vec<u8>)>> = paths
        .into_par_iter()
        .map(|(relative, path)| {
            let bytes = fs::read(&path).with_context(|| format!("cannot read `{}`", path.display()))?;
            Ok((relative, bytes))
        })
        .collect();
    let mut files = read.into_iter().collect::<anyhow::Result<BTreeMap<_, _>>>()?;
    files.remove(MARKER);
    Ok(files)
}

/// The files below `dir`, by path relative to `root`. Subdirectories are walked in parallel (a
/// large tree has tens of thousands of directories).
fn walk(root: &Path, dir: &Path, files: &mut Vec<(String, PathBuf)>) -> anyhow::Result<()> {
    let mut subdirectories = Vec::new();
    for entry in fs::read_dir(dir).with_context(|| format!("cannot read `{}`", dir.display()))? {
        let entry = entry?;
        let path = entry.path();
        // NB: `file_type` does not follow symlinks, `is_dir` does: keep following them, as
        // before, for a symlinked directory below a `--templates` root.
        if entry.file_type().is_ok_and(|t| t.is_dir()) || (entry.file_type().is_ok_and(|t| t.is_symlink()) && path.is_dir()) {
            subdirectories.push(path);
        } else {
            let relative = path.strip_prefix(root).unwrap_or(&path).to_string_lossy().replace('\\', "/");
            files.push((relative, path));
        }
    }
    let nested: Vec<anyhow::Result<Vec<(String, PathBuf)>>> = subdirectories
        .into_par_iter()
        .map(|path| {
            let mut below = Vec::new();
            walk(root, &path, &mut below).map(|()| below)
        })
        .collect();
    for below in nested {
        files.extend(below?);
    }
    Ok(())
}

/// Replaces `out` with exactly `files` (paths relative to `out`), atomically as described in
/// the module docs. `old` holds the files of the current tree (as [`read_tree`] returned
/// them, or none): a file whose bytes are unchanged is hard-linked from the current tree into the new one
/// instead of written again (the current tree's files are never modified, so it stays intact
/// until the swap). Files are written in parallel.
///
/// # Errors
///
/// I/O errors; the previous tree is then left in place.
pub fn write(out: &Path, files: &BTreeMap<String, Vec<u8>>, old: &BTreeMap<String, Vec<u8>>) -> anyhow::Result<()> {
    recover(out)?;
    check_writable(out)?;
    let staging = sibling(out, "tfrs-new");
    if let Some(parent) = staging.parent().filter(|p| !p.as_os_str().is_empty()) {
        fs::create_dir_all(parent).with_context(|| format!("cannot create `{}`", parent.display()))?;
    }
    let result = (|| -> anyhow::Result<()> {
        fs::create_dir_all(&staging)?;
        fs::write(staging.join(MARKER), MARKER_TEXT)?;
        let mut dirs = BTreeSet::new();
        for relative in files.keys() {
            if let Some((dir, _)) = relative.rsplit_once('/') {
                dirs.insert(dir);
            }
        }
        // NB: `create_dir_all` tolerates another thread creating a shared parent.
        dirs.par_iter().try_for_each(|dir| fs::create_dir_all(staging.join(dir)))?;
        files.par_iter().try_for_each(|(relative, bytes)| -> std::io::Result<()> {
            let path = staging.join(relative);
            if old.get(relative) == Some(bytes) && fs::hard_link(out.join(relative), &path).is_ok() {
                return Ok(());
            }
            fs::write(&path, bytes)
        })?;
        Ok(())
    })();
    if let Err(error) = result {
        let _ = fs::remove_dir_all(&staging);
        return Err(error.context(format!("cannot write `{}`", staging.display())));
    }
    let old = sibling(out, "tfrs-old");
    if out.exists() {
        fs::rename(out, &old).with_context(|| format!("cannot move `{}` aside", out.display()))?;
    }
    if let Err(error) = fs::rename(&staging, out) {
        let _ = fs::rename(&old, out);
        return Err(anyhow::Error::new(error).context(format!("cannot move the new tree to `{}`", out.display())));
    }
    if old.exists() {
        fs::remove_dir_all(&old).with_context(|| format!("cannot remove `{}`", old.display()))?;
    }
    Ok(())
}
