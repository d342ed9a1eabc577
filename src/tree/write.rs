//! The output directory: reading the previous tree, and replacing it atomically.
//!
//! Two ways to replace a tree, both leaving the previous tree as it was when anything fails
//! before the point of no return:
//!
//! - **Swap** (a new tree, or one where at least half the files change): the whole render is
//!   written into a temporary sibling directory (unchanged files hard-linked from the current
//!   tree), then swapped in with two renames. A run killed between the two renames leaves the
//!   previous tree under `.<name>.tfrs-old`, which the next run restores first.
//! - **Update** (fewer than half the files change, e.g. one server edited on a 55,000-file
//!   tree): only the changed files are written, into `.<name>.tfrs-update/files/`, then a
//!   journal naming the files to move in and the files to remove is renamed into place: that
//!   rename is the point of no return. The journal is then carried out (removals, emptied
//!   directories pruned, each staged file renamed over its target). A run killed after the
//!   journal is complete leaves it for the next run, which carries it out first (every step can
//!   be repeated); a run killed before leaves only a staging directory, which is removed.
//!   Linking and unlinking every unchanged file (what a swap costs) is what this saves.
//!
//! A non-empty directory without the marker file is never touched.

use anyhow::{Context as _, bail};
use rayon::prelude::*;
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

// The marker file at the root of every directory tfrs renders.
use crate::layout::RENDERED_MARKER as MARKER;
const MARKER_TEXT: &str = "This directory is written by `tfrs render`: each render replaces the clusters it renders.\n";

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
    let update = sibling(out, "tfrs-update");
    if update.join(JOURNAL).exists() {
        carry_out(out, &update).with_context(|| format!("cannot finish the interrupted update of `{}`", out.display()))?;
    } else if update.exists() {
        fs::remove_dir_all(&update).with_context(|| format!("cannot remove `{}`", update.display()))?;
    }
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

/// Fails when `dir`, or the rendered tree it lies in, is part-way through an update that a
/// killed `tfrs render` left (its journal is complete but not carried out): reading it now would
/// see a mix of the old and the new render. Commands that only read a rendered tree call this.
///
/// # Errors
///
/// The tree is part-way through an update.
pub fn check_settled(dir: &Path) -> anyhow::Result<()> {
    let dir = fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    let Some(root) = dir.ancestors().find(|a| a.join(MARKER).is_file()) else { return Ok(()) };
    if sibling(root, "tfrs-update").join(JOURNAL).exists() {
        bail!(
            "`{}` is part-way through an update left by an interrupted `tfrs render`\n  hint: run the same `tfrs render` into it again; it finishes the update first",
            root.display()
        );
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

/// Reads every file below `out` (except the marker), by relative path. Files are read in
/// parallel.
///
/// # Errors
///
/// I/O errors.
pub fn read_tree(out: &Path) -> anyhow::Result<BTreeMap<String, Vec<u8>>> {
    let read: Vec<anyhow::Result<(String, Vec<u8>)>> = list(out)?
        .into_par_iter()
        .map(|(relative, _)| {
            let path = out.join(&relative);
            let bytes = fs::read(&path).with_context(|| format!("cannot read `{}`", path.display()))?;
            Ok((relative, bytes))
        })
        .collect();
    read.into_iter().collect()
}

/// Every file below `out` (except the marker) by relative path, with its stat; empty when `out`
/// does not exist.
///
/// # Errors
///
/// I/O errors.
pub fn list(out: &Path) -> anyhow::Result<Vec<(String, Stat)>> {
    let mut files = Vec::new();
    if out.exists() {
        walk(out, out, &mut files)?;
    }
    files.retain(|(relative, _)| relative != MARKER);
    Ok(files)
}

/// The files below `dir`, by path relative to `root`, with their stats. Subdirectories are
/// walked in parallel (a large tree has tens of thousands of directories).
fn walk(root: &Path, dir: &Path, files: &mut Vec<(String, Stat)>) -> anyhow::Result<()> {
    let mut subdirectories = Vec::new();
    for entry in fs::read_dir(dir).with_context(|| format!("cannot read `{}`", dir.display()))? {
        let entry = entry?;
        let path = entry.path();
        let kind = entry.file_type()?;
        // NB: `file_type` does not follow symlinks, `is_dir` does: keep following them, as
        // before, for a symlinked directory below a `--templates` root.
        if kind.is_dir() || (kind.is_symlink() && path.is_dir()) {
            subdirectories.push(path);
        } else {
            let meta = if kind.is_symlink() { fs::metadata(&path) } else { entry.metadata() };
            let meta = meta.with_context(|| format!("cannot read `{}`", path.display()))?;
            let relative = path.strip_prefix(root).unwrap_or(&path).to_string_lossy().replace('\\', "/");
            files.push((relative, Stat::of(&meta)));
        }
    }
    let nested: Vec<anyhow::Result<Vec<(String, Stat)>>> = subdirectories
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

/// The journal of an update, in `.<name>.tfrs-update/`; its presence means "carry me out".
const JOURNAL: &str = "journal.json";
/// The staged files of an update, by their path relative to the output directory.
const STAGED: &str = "files";

/// What an update does to the output directory, once its journal is in place.
#[derive(serde::Serialize, serde::Deserialize)]
struct Journal {
    /// Files to remove (relative paths).
    remove: Vec<String>,
    /// Files staged under `files/` to rename over their targets (relative paths).
    write: Vec<String>,
}

/// A file's identity on disk, as the render memo records it: size, modification time
/// (nanoseconds since the epoch) and inode. A file whose stat still equals the recorded one
/// (and was not written just before the record, see `tree::current`) is trusted to hold what
/// was recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Stat {
    /// Bytes.
    pub size: u64,
    /// Modification time, nanoseconds since the Unix epoch.
    pub mtime: u64,
    /// Inode number (0 where the platform has none).
    pub ino: u64,
}

impl Stat {
    /// The stat of `meta`.
    #[must_use]
    pub fn of(meta: &fs::Metadata) -> Stat {
        let mtime = meta.modified().ok().and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok()).map_or(0, |d| d.as_nanos());
        #[cfg(unix)]
        let ino = std::os::unix::fs::MetadataExt::ino(meta);
        #[cfg(not(unix))]
        let ino = 0;
        Stat { size: meta.len(), mtime: u64::try_from(mtime).unwrap_or(u64::MAX), ino }
    }
}

/// What writing a render does to the output directory.
pub struct Update<'a> {
    /// The rendered files' bytes, by path relative to the output directory (the kept files
    /// aside, which are not in memory).
    pub files: &'a BTreeMap<String, Vec<u8>>,
    /// Paths of `files` that are new or whose bytes differ from the file there.
    pub changed: Vec<&'a str>,
    /// Files there that are not rendered any more.
    pub removed: Vec<&'a str>,
    /// Files there that stay as they are (unchanged, kept by the memo, other clusters').
    pub unchanged: Vec<&'a str>,
}

impl Update<'_> {
    /// How many files the tree holds once written.
    #[must_use]
    pub fn total(&self) -> usize {
        self.changed.len() + self.unchanged.len()
    }
}

/// Replaces `out` with the rendered tree, atomically as described in the module docs: by an
/// update when the current tree is a tfrs tree and fewer than half of its files change, by a
/// swap otherwise. Files are written in parallel. Returns the stat of every file it wrote.
///
/// # Errors
///
/// I/O errors; the previous tree is then left in place, or, past an update's point of no
/// return, completed by the next run.
pub fn write(out: &Path, update: &Update<'_>) -> anyhow::Result<BTreeMap<String, Stat>> {
    recover(out)?;
    check_writable(out)?;
    let (changed, removed) = (&update.changed, &update.removed);
    let before = update.unchanged.len() + removed.len() + changed.len();
    if out.join(MARKER).is_file() && (changed.len() + removed.len()) * 2 < update.total().max(before) {
        return journaled(out, update.files, changed, removed);
    }
    swap(out, update)
}

/// Creates, below `root`, the directory of every path in `paths` (in parallel).
fn create_parents<'a>(root: &Path, paths: impl Iterator<Item = &'a str>) -> std::io::Result<()> {
    let dirs: BTreeSet<&str> = paths.filter_map(|path| path.rsplit_once('/').map(|(dir, _)| dir)).collect();
    // NB: `create_dir_all` tolerates another thread creating a shared parent.
    dirs.par_iter().try_for_each(|dir| fs::create_dir_all(root.join(dir)))
}

/// Writes only `changed` (and removes `removed`) in place, through a journal.
fn journaled(out: &Path, files: &BTreeMap<String, Vec<u8>>, changed: &[&str], removed: &[&str]) -> anyhow::Result<BTreeMap<String, Stat>> {
    let (update, stats) = stage(out, files, changed, removed)?;
    carry_out(out, &update)
        .with_context(|| format!("the update of `{}` was interrupted; the next `tfrs render` into it finishes it first", out.display()))?;
    Ok(stats)
}

/// Writes `bytes` to `path` and returns the new file's stat (a rename keeps it).
fn write_file(path: &Path, bytes: &[u8]) -> std::io::Result<Stat> {
    use std::io::Write as _;
    let mut file = fs::File::create(path)?;
    file.write_all(bytes)?;
    Ok(Stat::of(&file.metadata()?))
}

/// Stages an update: the changed files, then its journal (the point of no return). Returns the
/// update directory and the staged files' stats; on error nothing is left behind.
fn stage(out: &Path, files: &BTreeMap<String, Vec<u8>>, changed: &[&str], removed: &[&str]) -> anyhow::Result<(PathBuf, BTreeMap<String, Stat>)> {
    let update = sibling(out, "tfrs-update");
    let staged = update.join(STAGED);
    let mut stats = BTreeMap::new();
    let result = (|| -> anyhow::Result<()> {
        fs::create_dir_all(&staged)?;
        create_parents(&staged, changed.iter().copied())?;
        let written: Vec<(String, Stat)> = changed
            .par_iter()
            .map(|path| write_file(&staged.join(path), &files[*path]).map(|stat| ((*path).to_owned(), stat)))
            .collect::<std::io::Result<_>>()?;
        stats.extend(written);
        let journal =
            Journal { remove: removed.iter().map(|p| (*p).to_owned()).collect(), write: changed.iter().map(|p| (*p).to_owned()).collect() };
        let partial = update.join(format!("{JOURNAL}.partial"));
        fs::write(&partial, serde_json::to_vec(&journal)?)?;
        // The point of no return: from here on the update is carried out, now or by the next run.
        fs::rename(&partial, update.join(JOURNAL))?;
        Ok(())
    })();
    if let Err(error) = result {
        let _ = fs::remove_dir_all(&update);
        return Err(error.context(format!("cannot write `{}`", update.display())));
    }
    Ok((update, stats))
}

/// Carries out the journal of `update` on `out`, then removes `update`. Every step may be
/// repeated: a file already removed, or already moved in, is skipped.
fn carry_out(out: &Path, update: &Path) -> anyhow::Result<()> {
    let journal: Journal = serde_json::from_slice(&fs::read(update.join(JOURNAL))?).context("the update journal is damaged")?;
    let tolerate_missing = |result: std::io::Result<()>| match result {
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
        other => other,
    };
    journal.remove.par_iter().try_for_each(|path| tolerate_missing(fs::remove_file(out.join(path))))?;
    // Directories the removals emptied, deepest first (a directory still holding files stays).
    let mut emptied: BTreeSet<&str> = BTreeSet::new();
    for path in &journal.remove {
        let mut rest = path.as_str();
        while let Some((dir, _)) = rest.rsplit_once('/') {
            emptied.insert(dir);
            rest = dir;
        }
    }
    let mut emptied: Vec<&str> = emptied.into_iter().collect();
    emptied.sort_by_key(|dir| std::cmp::Reverse(dir.matches('/').count()));
    for dir in emptied {
        match fs::remove_dir(out.join(dir)) {
            Err(error) if error.kind() != std::io::ErrorKind::NotFound && error.kind() != std::io::ErrorKind::DirectoryNotEmpty => {
                return Err(error.into());
            }
            _ => {}
        }
    }
    let staged = update.join(STAGED);
    journal.write.par_iter().try_for_each(|path| -> std::io::Result<()> {
        let (from, to) = (staged.join(path), out.join(path));
        if !from.exists() {
            return Ok(()); // moved in by the run that was interrupted
        }
        if let Some(parent) = to.parent() {
            fs::create_dir_all(parent)?;
        }
        fs::rename(&from, &to)
    })?;
    fs::remove_dir_all(update)?;
    Ok(())
}

/// Writes the whole tree beside `out` (unchanged files hard-linked from the current tree, which
/// is never modified, or copied where a link cannot be made) and swaps it in.
fn swap(out: &Path, update: &Update<'_>) -> anyhow::Result<BTreeMap<String, Stat>> {
    let staging = sibling(out, "tfrs-new");
    if let Some(parent) = staging.parent().filter(|p| !p.as_os_str().is_empty()) {
        fs::create_dir_all(parent).with_context(|| format!("cannot create `{}`", parent.display()))?;
    }
    let mut stats = BTreeMap::new();
    let result = (|| -> anyhow::Result<()> {
        fs::create_dir_all(&staging)?;
        fs::write(staging.join(MARKER), MARKER_TEXT)?;
        create_parents(&staging, update.changed.iter().chain(&update.unchanged).copied())?;
        update.unchanged.par_iter().try_for_each(|relative| -> std::io::Result<()> {
            let (from, to) = (out.join(relative), staging.join(relative));
            fs::hard_link(&from, &to).or_else(|_| fs::copy(&from, &to).map(drop))
        })?;
        let written: Vec<(String, Stat)> = update
            .changed
            .par_iter()
            .map(|relative| write_file(&staging.join(relative), &update.files[*relative]).map(|stat| ((*relative).to_owned(), stat)))
            .collect::<std::io::Result<_>>()?;
        stats.extend(written);
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
        remove_tree(&old).with_context(|| format!("cannot remove `{}`", old.display()))?;
    }
    Ok(stats)
}

/// `remove_dir_all`, with the files unlinked in parallel first (a tree of 55,000 files).
/// Symlinks are removed, never followed.
fn remove_tree(dir: &Path) -> anyhow::Result<()> {
    fn unlink_files(dir: &Path) -> std::io::Result<()> {
        let mut subdirectories = Vec::new();
        for entry in fs::read_dir(dir)? {
            let entry = entry?;
            if entry.file_type()?.is_dir() {
                subdirectories.push(entry.path());
            } else {
                fs::remove_file(entry.path())?;
            }
        }
        subdirectories.par_iter().try_for_each(|path| unlink_files(path))
    }
    unlink_files(dir)?;
    fs::remove_dir_all(dir)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writing `new` over `old` (both whole trees in memory).
    fn changes<'a>(new: &'a BTreeMap<String, Vec<u8>>, old: &'a BTreeMap<String, Vec<u8>>) -> Update<'a> {
        let mut update = Update { files: new, changed: Vec::new(), removed: Vec::new(), unchanged: Vec::new() };
        for (path, bytes) in new {
            if old.get(path) == Some(bytes) { update.unchanged.push(path) } else { update.changed.push(path) }
        }
        update.removed = old.keys().filter(|p| !new.contains_key(*p)).map(String::as_str).collect();
        update
    }

    fn tree(entries: &[(&str, &str)]) -> BTreeMap<String, Vec<u8>> {
        entries.iter().map(|(path, text)| ((*path).to_owned(), text.as_bytes().to_vec())).collect()
    }

    /// A rendered tree of `n` servers in `out` of a new temporary directory, written the way
    /// `tfrs render` writes it.
    fn rendered(n: usize) -> (tempfile::TempDir, PathBuf, BTreeMap<String, Vec<u8>>) {
        let temp = tempfile::tempdir().unwrap();
        let out = temp.path().join("out");
        let files: BTreeMap<String, Vec<u8>> =
            (0..n).map(|i| (format!("clusters/c/servers/s{i}/configmap-s{i}.yaml"), format!("i: {i}\n").into_bytes())).collect();
        write(&out, &changes(&files, &BTreeMap::new())).unwrap();
        assert_eq!(read_tree(&out).unwrap(), files);
        (temp, out, files)
    }

    #[cfg(unix)]
    fn inode(path: &Path) -> u64 {
        std::os::unix::fs::MetadataExt::ino(&fs::metadata(path).unwrap())
    }

    #[test]
    fn a_small_change_is_written_in_place_and_leaves_exactly_the_new_tree() {
        let (_temp, out, old) = rendered(10);
        let mut new = old.clone();
        new.insert("clusters/c/servers/s3/configmap-s3.yaml".into(), b"i: changed\n".to_vec());
        new.remove("clusters/c/servers/s4/configmap-s4.yaml");
        new.insert("clusters/c/servers/s10/secret-s10.yaml".into(), b"new\n".to_vec());
        #[cfg(unix)]
        let (untouched, root) = (inode(&out.join("clusters/c/servers/s0/configmap-s0.yaml")), inode(&out));
        write(&out, &changes(&new, &read_tree(&out).unwrap())).unwrap();
        assert_eq!(read_tree(&out).unwrap(), new);
        assert!(!out.join("clusters/c/servers/s4").exists(), "a directory the update emptied is removed");
        assert!(out.join(MARKER).is_file());
        assert!(!sibling(&out, "tfrs-update").exists());
        #[cfg(unix)]
        assert_eq!(
            (inode(&out.join("clusters/c/servers/s0/configmap-s0.yaml")), inode(&out)),
            (untouched, root),
            "updated in place: the same directory, an unchanged file not rewritten"
        );
    }

    #[test]
    fn a_large_change_swaps_the_whole_tree_and_reports_what_it_wrote() {
        let (_temp, out, old) = rendered(4);
        let new = tree(&[("clusters/c/a.yaml", "a\n"), ("clusters/c/servers/s0/configmap-s0.yaml", "i: 0\n")]);
        #[cfg(unix)]
        let (kept, root) = (inode(&out.join("clusters/c/servers/s0/configmap-s0.yaml")), inode(&out));
        let written = write(&out, &changes(&new, &old)).unwrap();
        assert_eq!(written.keys().collect::<Vec<_>>(), ["clusters/c/a.yaml"], "only the new file is written");
        assert_eq!(written["clusters/c/a.yaml"], Stat::of(&fs::metadata(out.join("clusters/c/a.yaml")).unwrap()));
        assert_eq!(read_tree(&out).unwrap(), new);
        assert!(!out.join("clusters/c/servers/s1").exists());
        assert!(!sibling(&out, "tfrs-old").exists() && !sibling(&out, "tfrs-new").exists());
        #[cfg(unix)]
        assert_eq!(inode(&out.join("clusters/c/servers/s0/configmap-s0.yaml")), kept, "an unchanged file is linked, not written");
        #[cfg(unix)]
        assert_ne!(inode(&out), root, "a new directory was swapped in");
    }

    #[test]
    fn an_update_interrupted_after_its_journal_is_finished_by_the_next_run() {
        let (_temp, out, old) = rendered(10);
        let mut new = old.clone();
        new.insert("clusters/c/servers/s1/configmap-s1.yaml".into(), b"one\n".to_vec());
        new.insert("clusters/c/servers/s2/configmap-s2.yaml".into(), b"two\n".to_vec());
        new.remove("clusters/c/servers/s5/configmap-s5.yaml");
        let changed = ["clusters/c/servers/s1/configmap-s1.yaml", "clusters/c/servers/s2/configmap-s2.yaml"];
        let (update, _) = stage(&out, &new, &changed, &["clusters/c/servers/s5/configmap-s5.yaml"]).unwrap();
        // Killed half-way: one staged file moved in, the removal not done.
        fs::rename(update.join(STAGED).join(changed[0]), out.join(changed[0])).unwrap();
        assert_ne!(read_tree(&out).unwrap(), new);
        recover(&out).unwrap();
        assert_eq!(read_tree(&out).unwrap(), new);
        assert!(!update.exists());
        // Carried out again (killed after the last step): nothing changes.
        recover(&out).unwrap();
        assert_eq!(read_tree(&out).unwrap(), new);
    }

    #[test]
    fn a_tree_part_way_through_an_update_is_not_read() {
        let (_temp, out, mut new) = rendered(10);
        check_settled(&out.join("clusters/c")).unwrap();
        new.insert("clusters/c/servers/s1/configmap-s1.yaml".into(), b"one\n".to_vec());
        let _ = stage(&out, &new, &["clusters/c/servers/s1/configmap-s1.yaml"], &[]).unwrap();
        let error = check_settled(&out.join("clusters/c")).unwrap_err().to_string();
        assert!(error.contains("part-way through an update"), "{error}");
        recover(&out).unwrap();
        check_settled(&out.join("clusters/c")).unwrap();
    }

    #[test]
    fn an_update_interrupted_before_its_journal_leaves_the_previous_tree() {
        let (_temp, out, old) = rendered(10);
        let mut new = old.clone();
        new.insert("clusters/c/servers/s1/configmap-s1.yaml".into(), b"one\n".to_vec());
        let (update, _) = stage(&out, &new, &["clusters/c/servers/s1/configmap-s1.yaml"], &[]).unwrap();
        fs::remove_file(update.join(JOURNAL)).unwrap(); // killed before the journal was renamed into place
        recover(&out).unwrap();
        assert_eq!(read_tree(&out).unwrap(), old);
        assert!(!update.exists());
    }

    #[test]
    fn a_swap_killed_between_its_renames_is_restored() {
        let (_temp, out, old) = rendered(3);
        fs::rename(&out, sibling(&out, "tfrs-old")).unwrap();
        fs::create_dir_all(sibling(&out, "tfrs-new")).unwrap();
        recover(&out).unwrap();
        assert_eq!(read_tree(&out).unwrap(), old);
        assert!(!sibling(&out, "tfrs-new").exists());
    }

    #[cfg(unix)]
    #[test]
    fn removing_a_tree_does_not_follow_symlinks() {
        let temp = tempfile::tempdir().unwrap();
        let kept = temp.path().join("kept");
        fs::create_dir_all(&kept).unwrap();
        fs::write(kept.join("file"), "x").unwrap();
        let doomed = temp.path().join("doomed");
        fs::create_dir_all(doomed.join("a")).unwrap();
        fs::write(doomed.join("a/file"), "y").unwrap();
        std::os::unix::fs::symlink(&kept, doomed.join("a/link")).unwrap();
        remove_tree(&doomed).unwrap();
        assert!(!doomed.exists());
        assert!(kept.join("file").is_file());
    }
}
