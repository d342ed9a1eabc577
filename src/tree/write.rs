//! The output directory: reading the previous tree, and replacing it atomically.
//!
//! Two ways to replace a tree, both leaving the previous tree as it was when anything fails
//! before the point of no return:
//!
//! - **Swap** (a new or empty directory): the whole render is written into a temporary sibling
//!   directory, then swapped in with two renames. A run killed between the two renames leaves
//!   the previous tree under `.<name>.tfrs-old`, which the next run restores first.
//! - **Update** (a directory tfrs wrote before, whatever the share of files that change): only
//!   the changed files are written, into `.<name>.tfrs-update/files/`, then a
//!   journal naming the files to move in and the files to remove is renamed into place: that
//!   rename is the point of no return. The journal is then carried out (removals, emptied
//!   directories pruned, each staged file renamed over its target). A run killed after the
//!   journal is complete leaves it for the next run, which carries it out first (every step can
//!   be repeated); a run killed before leaves only a staging directory, which is removed.
//!   Linking and unlinking every unchanged file (what a swap costs) is what this saves.
//!
//! Either way the render is staged cluster by cluster ([`Staging::add`]), so a fleet's files
//! need not be in memory at once; the point of no return comes after the last cluster.
//!
//! A non-empty directory without the marker file is never touched, but for a Git checkout,
//! which is always updated, never swapped, and where only the rendered clusters' files change.

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

/// Takes the lock of output directory `out`, held until the file returned is dropped: renders
/// into one directory (two CI jobs rendering different clusters into one checkout) run one
/// after the other, each reading what the one before left, rather than mixing their updates.
/// The lock is an advisory lock (`flock`) on the directory itself, so nothing is written for
/// it; while `out` does not exist yet, on its parent directory (two first renders into one new
/// directory would otherwise stage into one temporary directory). A render that swapped in a
/// new directory leaves the lock on the old one (or on the parent), so a waiting run that gets
/// it checks that it holds what stands for `out` now, and locks again if not. A run that has
/// to wait says so. Without a parent directory either, nothing is locked.
///
/// # Errors
///
/// The directory cannot be opened or locked.
pub fn lock(out: &Path) -> anyhow::Result<Option<fs::File>> {
    let mut said = false;
    loop {
        let exists = out.exists();
        let target = if exists { out } else { out.parent().filter(|p| p.is_dir()).unwrap_or(out) };
        let dir = match fs::File::open(target) {
            Ok(dir) => dir,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(error) => return Err(anyhow::Error::new(error).context(format!("cannot open `{}` to lock it", target.display()))),
        };
        lock_in_turn(&dir, || {
            if !said {
                eprintln!("waiting for another `tfrs render` into `{}` to finish", out.display());
                said = true;
            }
        })
        .with_context(|| format!("cannot lock `{}`", target.display()))?;
        if out.exists() == exists && same_file(&dir, target) {
            return Ok(Some(dir));
        }
    }
}

/// Takes the advisory lock (`flock`) of open `file`, calling `waiting` first when another
/// process holds it (to say so), then waiting for it.
///
/// # Errors
///
/// The lock cannot be taken.
pub fn lock_in_turn(file: &fs::File, waiting: impl FnOnce()) -> std::io::Result<()> {
    match file.try_lock() {
        Ok(()) => Ok(()),
        Err(fs::TryLockError::WouldBlock) => {
            waiting();
            file.lock()
        }
        Err(fs::TryLockError::Error(error)) => Err(error),
    }
}

/// Whether the open `file` is the one at `path` now (same device and inode).
fn same_file(file: &fs::File, path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt as _;
        match (file.metadata(), fs::metadata(path)) {
            (Ok(held), Ok(now)) => held.dev() == now.dev() && held.ino() == now.ino(),
            _ => false,
        }
    }
    #[cfg(not(unix))]
    {
        let _ = (file, path);
        true
    }
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
    // NB: a Git checkout holds no marker; its own update journal is beside it.
    let Some(root) = dir.ancestors().find(|a| a.join(MARKER).is_file() || is_checkout(a)) else { return Ok(()) };
    if sibling(root, "tfrs-update").join(JOURNAL).exists() {
        bail!(
            "`{}` is part-way through an update left by an interrupted `tfrs render`\n  hint: run the same `tfrs render` into it again; it finishes the update first",
            root.display()
        );
    }
    Ok(())
}

/// Whether `out` is the work tree of a Git repository (it holds `.git`: a directory, or a file
/// for a linked work tree or a submodule). A render into a checkout updates only the
/// directories of the clusters it renders (or is told to remove), in place: it writes no marker
/// and never removes, or swaps out, anything else.
#[must_use]
pub fn is_checkout(out: &Path) -> bool {
    out.join(".git").exists()
}

/// Checks that `out` may be written: missing, empty, written by tfrs, or a Git checkout.
///
/// # Errors
///
/// A non-empty directory without the marker that is not a Git checkout, or a path that is not
/// a directory.
pub fn check_writable(out: &Path) -> anyhow::Result<()> {
    if !out.exists() {
        return Ok(());
    }
    if !out.is_dir() {
        bail!("`{}` exists and is not a directory", out.display());
    }
    if is_checkout(out) {
        return Ok(());
    }
    let empty = fs::read_dir(out).with_context(|| format!("cannot read `{}`", out.display()))?.next().is_none();
    if !empty && !out.join(MARKER).exists() {
        bail!(
            "`{}` is not empty and was not written by tfrs (no `{MARKER}` file); refusing to replace it\n  hint: choose an empty directory or a Git checkout (there a render writes only `clusters/<cluster>/`), or use `tfrs commit` to write into a Git repository",
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
    list_below(out, "", &|_| false)
}

/// The files below directory `below` of `out` (a relative path; empty for all of `out`), by
/// path relative to `out` in order, with their stats, except the marker and what lies in a
/// directory (relative to `out`) for which `skip` holds; empty when there is no such directory.
///
/// # Errors
///
/// I/O errors.
pub fn list_below(out: &Path, below: &str, skip: &(dyn Fn(&str) -> bool + Sync)) -> anyhow::Result<Vec<(String, Stat)>> {
    let found = std::sync::Mutex::new(Vec::new());
    let dir = if below.is_empty() { out.to_path_buf() } else { out.join(below) };
    if dir.is_dir() {
        walk(&dir, below.trim_end_matches('/'), skip, &found)?;
    }
    let mut files = found.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner);
    files.retain(|(relative, _)| relative != MARKER);
    files.par_sort_unstable_by(|a, b| a.0.cmp(&b.0));
    Ok(files)
}

/// Adds the files below `dir` (whose path relative to the output directory is `relative`) to
/// `found`, with their stats, but in the directories `skip` names. Subdirectories are walked in
/// parallel (a large tree has tens of thousands of directories); each directory's files are
/// added at once.
fn walk(
    dir: &Path,
    relative: &str,
    skip: &(dyn Fn(&str) -> bool + Sync),
    found: &std::sync::Mutex<Vec<(String, Stat)>>,
) -> anyhow::Result<()> {
    let mut files = Vec::new();
    let mut subdirectories = Vec::new();
    for entry in fs::read_dir(dir).with_context(|| format!("cannot read `{}`", dir.display()))? {
        let entry = entry?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let path = if relative.is_empty() { name.into_owned() } else { format!("{relative}/{name}") };
        let kind = entry.file_type()?;
        // NB: `file_type` does not follow symlinks, `is_dir` does: keep following them, as
        // before, for a symlinked directory below a `--templates` root.
        if kind.is_dir() || (kind.is_symlink() && entry.path().is_dir()) {
            if !skip(&path) {
                subdirectories.push((entry.path(), path));
            }
        } else {
            let meta = if kind.is_symlink() { fs::metadata(entry.path()) } else { entry.metadata() };
            let meta = meta.with_context(|| format!("cannot read `{}`", entry.path().display()))?;
            files.push((path, Stat::of(&meta)));
        }
    }
    found.lock().unwrap_or_else(std::sync::PoisonError::into_inner).extend(files);
    subdirectories.into_par_iter().try_for_each(|(dir, relative)| walk(&dir, &relative, skip, found))
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

    /// The stat of the directory `meta` describes, its change time in place of the
    /// modification time: adding, removing or renaming an entry moves both, and setting the
    /// times back by hand moves the change time. `None` where there is no change time.
    #[must_use]
    pub fn of_directory(meta: &fs::Metadata) -> Option<Stat> {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt as _;
            let ctime =
                u64::try_from(meta.ctime()).ok()?.checked_mul(1_000_000_000)?.checked_add(u64::try_from(meta.ctime_nsec()).ok()?)?;
            Some(Stat { size: meta.len(), mtime: ctime, ino: meta.ino() })
        }
        #[cfg(not(unix))]
        {
            let _ = meta;
            None
        }
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

/// Replaces `out` with the rendered tree in one step: [`Staging::begin`], [`Staging::add`],
/// [`Staging::finish`]. Returns the stat of every file it wrote.
///
/// # Errors
///
/// I/O errors; the previous tree is then left in place, or, past an update's point of no
/// return, completed by the next run.
pub fn write(out: &Path, update: &Update<'_>) -> anyhow::Result<BTreeMap<String, Stat>> {
    let mut staging = Staging::begin(out)?;
    let stats = staging.add(update)?;
    staging.finish()?;
    Ok(update.changed.iter().map(|p| (*p).to_owned()).zip(stats).collect())
}

/// A render being staged beside the output directory, part by part; dropped unfinished, it is
/// removed and the output directory is as it was.
pub struct Staging {
    out: PathBuf,
    /// The staging directory: the new tree (swap) or the update's directory.
    dir: PathBuf,
    swap: bool,
    journal: Journal,
    done: bool,
}

impl Staging {
    /// Starts staging a render of `out`: a swap for a new or empty directory, an update for a
    /// tree tfrs wrote.
    ///
    /// # Errors
    ///
    /// `out` may not be written ([`check_writable`]); I/O errors.
    pub fn begin(out: &Path) -> anyhow::Result<Staging> {
        recover(out)?;
        check_writable(out)?;
        let swap = !out.join(MARKER).is_file() && !is_checkout(out);
        let dir = sibling(out, if swap { "tfrs-new" } else { "tfrs-update" });
        let staging =
            Staging { out: out.to_path_buf(), dir, swap, journal: Journal { remove: Vec::new(), write: Vec::new() }, done: false };
        let created = if swap {
            fs::create_dir_all(&staging.dir).and_then(|()| fs::write(staging.dir.join(MARKER), MARKER_TEXT))
        } else {
            fs::create_dir_all(staging.dir.join(STAGED))
        };
        created.with_context(|| format!("cannot create `{}`", staging.dir.display()))?;
        Ok(staging)
    }

    /// Stages one part of the render: its changed files are written (in parallel), its
    /// unchanged files linked into a swap, its removals noted. Returns the stat of each changed
    /// file, in order: the stat it keeps once in place (a rename keeps it).
    ///
    /// # Errors
    ///
    /// I/O errors.
    pub fn add(&mut self, update: &Update<'_>) -> anyhow::Result<Vec<Stat>> {
        let root = if self.swap { self.dir.clone() } else { self.dir.join(STAGED) };
        let result = (|| -> std::io::Result<Vec<Stat>> {
            let linked: &[&str] = if self.swap { &update.unchanged } else { &[] };
            create_parents(&root, update.changed.iter().chain(linked).copied())?;
            linked.par_iter().try_for_each(|relative| -> std::io::Result<()> {
                let (from, to) = (self.out.join(relative), root.join(relative));
                fs::hard_link(&from, &to).or_else(|_| fs::copy(&from, &to).map(drop))
            })?;
            update.changed.par_iter().map(|relative| write_file(&root.join(relative), &update.files[*relative])).collect()
        })();
        let stats = result.with_context(|| format!("cannot write `{}`", self.dir.display()))?;
        // NB: a swap needs no journal (and a fleet's paths are not kept twice).
        if !self.swap {
            self.journal.write.extend(update.changed.iter().map(|p| (*p).to_owned()));
            self.journal.remove.extend(update.removed.iter().map(|p| (*p).to_owned()));
        }
        Ok(stats)
    }

    /// Puts the staged render in place: the swap's renames, or the update's journal carried out.
    ///
    /// # Errors
    ///
    /// I/O errors: before the point of no return the previous tree is left in place; after it
    /// the next run completes the update.
    pub fn finish(mut self) -> anyhow::Result<()> {
        if self.swap {
            self.swap_in()?;
        } else {
            self.seal_journal()?;
            carry_out(&self.out, &self.dir).with_context(|| {
                format!("the update of `{}` was interrupted; the next `tfrs render` into it finishes it first", self.out.display())
            })?;
        }
        Ok(())
    }

    /// Writes the journal of an update: the point of no return.
    fn seal_journal(&mut self) -> anyhow::Result<()> {
        let partial = self.dir.join(format!("{JOURNAL}.partial"));
        let result = fs::write(&partial, serde_json::to_vec(&self.journal)?).and_then(|()| fs::rename(&partial, self.dir.join(JOURNAL)));
        result.with_context(|| format!("cannot write `{}`", self.dir.display()))?;
        // From here on the update is carried out, now or by the next run.
        self.done = true;
        Ok(())
    }

    /// Swaps the staged tree in with two renames.
    fn swap_in(&mut self) -> anyhow::Result<()> {
        let (out, old) = (&self.out, sibling(&self.out, "tfrs-old"));
        if out.exists() {
            fs::rename(out, &old).with_context(|| format!("cannot move `{}` aside", out.display()))?;
        }
        if let Err(error) = fs::rename(&self.dir, out) {
            let _ = fs::rename(&old, out);
            return Err(anyhow::Error::new(error).context(format!("cannot move the new tree to `{}`", out.display())));
        }
        self.done = true;
        if old.exists() {
            remove_tree(&old).with_context(|| format!("cannot remove `{}`", old.display()))?;
        }
        Ok(())
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if !self.done {
            let _ = fs::remove_dir_all(&self.dir);
        }
    }
}

/// Creates, below `root`, the directory of every path in `paths` (in parallel).
fn create_parents<'a>(root: &Path, paths: impl Iterator<Item = &'a str>) -> std::io::Result<()> {
    let dirs: BTreeSet<&str> = paths.filter_map(|path| path.rsplit_once('/').map(|(dir, _)| dir)).collect();
    // NB: `create_dir_all` tolerates another thread creating a shared parent.
    dirs.par_iter().try_for_each(|dir| fs::create_dir_all(root.join(dir)))
}

/// Writes `bytes` to `path` and returns the new file's stat (a rename keeps it).
fn write_file(path: &Path, bytes: &[u8]) -> std::io::Result<Stat> {
    use std::io::Write as _;
    let mut file = fs::File::create(path)?;
    file.write_all(bytes)?;
    Ok(Stat::of(&file.metadata()?))
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
mod tests;
