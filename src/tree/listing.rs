//! Listing a rendered cluster directory with the help of its records.
//!
//! A one-server re-render of a large cluster lists tens of thousands of files in over ten
//! thousand directories. Reading a directory costs four system calls or more (open, stat,
//! read its entries until the end, close) where a stat costs one. So the records also keep
//! each listed directory's stat, and a directory whose stat is still the recorded one is not
//! read: its entries are the recorded ones, each still stat'ed (an edited file keeps its
//! directory's stat, a file added, removed or renamed does not). This is how Git's untracked
//! cache skips reading directories. A directory's stat here is its change time (which moves
//! with its modification time, and also when its times are set back by hand) and inode; like a
//! file's record, it is not trusted when it changed within the racy window before the records
//! were saved or before the listing that recorded it started (`tree::current::RACY`). Any
//! directory not trusted is read as before, and so is every directory below it that the
//! records do not name. Where directories have no change time (not Unix), every directory is
//! read.

use super::write::Stat;
use anyhow::Context as _;
use rayon::prelude::*;
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

/// The files below a directory and the stat of each directory whose entries they come from.
#[derive(Debug, Default)]
pub(crate) struct Listing {
    /// Paths relative to the output directory, in order, with their stats.
    pub files: Vec<(String, Stat)>,
    /// The directories listed, with their stat taken before their entries were.
    pub dirs: Vec<(String, Stat)>,
    /// How many of `dirs` were trusted by their record, not read.
    pub trusted_dirs: usize,
}

/// How a directory the records name is found now.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Found {
    /// Its stat is the recorded one (this): its entries are.
    Trusted(Stat),
    /// A directory, with this stat: read its entries.
    Read(Stat),
    /// Gone, not a directory, or below one of those: what is there is found from its parent.
    Gone,
}

impl Found {
    /// Whether `found` (a directory's, if the records name it) is a directory there now.
    fn is_there(found: Option<&Found>) -> bool {
        matches!(found, Some(Found::Trusted(_) | Found::Read(_)))
    }
}

impl Listing {
    /// Adds `other`'s files and directories (unordered until the caller sorts them).
    fn absorb(&mut self, other: Listing) {
        self.files.extend(other.files);
        self.dirs.extend(other.dirs);
    }
}

/// What the last listing recorded: the stat of each directory, the files (by path, in order),
/// and the latest change time a directory may have to be trusted.
pub(crate) struct Recorded<'a, V> {
    pub dirs: &'a BTreeMap<String, Stat>,
    pub files: &'a BTreeMap<String, V>,
    pub changed_by: u64,
}

/// The files below directory `below` of `out` (a relative path, not empty), by path relative
/// to `out`, trusting the entries of the directories whose stat is still the `records` one.
///
/// # Errors
///
/// I/O errors.
pub(crate) fn list_below<V>(out: &Path, below: &str, records: &Recorded<'_, V>) -> anyhow::Result<Listing> {
    if !cfg!(unix) {
        return Ok(Listing { files: super::write::list_below(out, below, &|_| false)?, ..Listing::default() });
    }
    let prefix = format!("{below}/");
    let under = |path: &str| path.starts_with(&prefix);
    let recorded: Vec<(&str, &Stat)> = records
        .dirs
        .range(below.to_owned()..)
        .map(|(path, stat)| (path.as_str(), stat))
        .take_while(|(path, _)| *path == below || under(path))
        .collect();
    let found = find_recorded(out, &recorded, records.changed_by);
    let files: Vec<&str> = records.files.range(prefix.clone()..).map(|(path, _)| path.as_str()).take_while(|path| under(path)).collect();
    // NB: a recorded file whose directory is not recorded (records damaged or cut short) has
    // the nearest recorded directory above it read: that directory may be trusted, and would
    // not name it.
    let mut demoted: HashSet<&str> =
        files.par_iter().map(|path| parent(path)).filter(|dir| !found.contains_key(dir)).filter_map(|dir| nearest(&found, dir)).collect();
    let trusted = |dir: &str| matches!(found.get(dir), Some(Found::Trusted(_)));
    // The recorded files of trusted directories: stat'ed, never read.
    let stated: Vec<(&str, Option<Stat>)> =
        files.par_iter().filter(|p| trusted(parent(p)) && !demoted.contains(parent(p))).map(|p| (*p, regular_file(&out.join(p)))).collect();
    // NB: a trusted directory one of whose files is gone or is not a file any more (changed
    // within a clock tick) is read after all.
    demoted.extend(stated.iter().filter(|(_, stat)| stat.is_none()).map(|(path, _)| parent(path)));
    let mut to_read: Vec<(String, Option<Stat>)> = Vec::new();
    let mut listing = Listing::default();
    for (dir, _) in &recorded {
        match found.get(dir) {
            Some(Found::Read(stat)) => to_read.push(((*dir).to_owned(), Some(*stat))),
            Some(Found::Trusted(_)) if demoted.contains(dir) => to_read.push(((*dir).to_owned(), None)),
            Some(Found::Trusted(stat)) => {
                listing.dirs.push(((*dir).to_owned(), *stat));
                listing.trusted_dirs += 1;
            }
            _ => {}
        }
    }
    if !Found::is_there(found.get(below)) && out.join(below).is_dir() {
        // NB: no records of the top directory (the first render, records of an older form), or
        // it is a link to a directory now.
        to_read.push((below.to_owned(), None));
    }
    let skip = |dir: &str| Found::is_there(found.get(dir));
    let read: Vec<anyhow::Result<Listing>> =
        to_read.into_par_iter().map(|(dir, stat)| read_dir(&out.join(&dir), dir, stat, &skip)).collect();
    let kept = stated.into_par_iter().filter(|(path, _)| !demoted.contains(parent(path)));
    listing.files = kept.filter_map(|(path, stat)| Some((path.to_owned(), stat?))).collect();
    for part in read {
        listing.absorb(part?);
    }
    listing.files.par_sort_unstable_by(|a, b| a.0.cmp(&b.0));
    listing.dirs.par_sort_unstable_by(|a, b| a.0.cmp(&b.0));
    Ok(listing)
}

/// The directory of relative path `path` (empty at the top).
fn parent(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(dir, _)| dir)
}

/// The nearest directory above `dir` that `found` has found, trusted or read.
fn nearest<'a>(found: &HashMap<&'a str, Found>, mut dir: &str) -> Option<&'a str> {
    while !dir.is_empty() {
        dir = parent(dir);
        if let Some((key, now)) = found.get_key_value(dir)
            && Found::is_there(Some(now))
        {
            return Some(key);
        }
    }
    None
}

/// How each of the `recorded` directories (in path order, the top one first when recorded) is
/// found now: stat'ed side by side, then each judged after its parent. A trusted directory
/// above a recorded directory that is gone, is a link now or has no recorded parent is read:
/// what stands there now is found among its entries.
fn find_recorded<'a>(out: &Path, recorded: &[(&'a str, &Stat)], changed_by: u64) -> HashMap<&'a str, Found> {
    let stats: Vec<Option<Stat>> = recorded.par_iter().map(|(dir, _)| directory(&out.join(dir))).collect();
    let mut found = HashMap::with_capacity_and_hasher(recorded.len(), rustc_hash::FxBuildHasher);
    for (index, ((dir, record), stat)) in recorded.iter().zip(stats).enumerate() {
        let parent_is_there = index == 0 || Found::is_there(found.get(parent(dir)));
        let now = match stat {
            Some(stat) if parent_is_there && stat == **record && stat.mtime <= changed_by => Found::Trusted(stat),
            Some(stat) if parent_is_there => Found::Read(stat),
            _ => Found::Gone,
        };
        if now == Found::Gone
            && let Some(above) = nearest(&found, dir)
            && let Some(Found::Trusted(stat)) = found.get(above).copied()
        {
            found.insert(above, Found::Read(stat));
        }
        found.insert(*dir, now);
    }
    found
}

/// The entries of directory `path` (`dir` relative to the output directory) whose stat is
/// `stat` (taken now when `None`), and below it every directory `skip` does not name, read the
/// same way. A directory gone meanwhile has none.
fn read_dir(path: &Path, dir: String, stat: Option<Stat>, skip: &(dyn Fn(&str) -> bool + Sync)) -> anyhow::Result<Listing> {
    // NB: the stat is taken before the entries are read: a change in between leaves a stat
    // that is not the directory's any more, so the next run reads it again.
    let mut stat = stat.or_else(|| directory(path)).unwrap_or(UNTRUSTED);
    let mut listing = Listing::default();
    let mut below = Vec::new();
    let entries = match fs::read_dir(path) {
        Err(error) if gone(&error) => return Ok(listing),
        entries => entries.with_context(|| format!("cannot read `{}`", path.display()))?,
    };
    for entry in entries {
        let entry = entry?;
        let relative = format!("{dir}/{}", entry.file_name().to_string_lossy());
        let kind = entry.file_type()?;
        if !recordable(&relative) {
            // NB: an entry the records cannot name: this directory is read every time.
            stat = UNTRUSTED;
        }
        // NB: a symlinked directory is followed, as the listing without records does.
        if kind.is_dir() || (kind.is_symlink() && entry.path().is_dir()) {
            if !skip(&relative) {
                below.push((entry.path(), relative));
            }
        } else {
            let meta = match if kind.is_symlink() { fs::metadata(entry.path()) } else { entry.metadata() } {
                // NB: removed since its directory was read (a broken link fails, as it did).
                Err(error) if gone(&error) && !kind.is_symlink() => continue,
                meta => meta.with_context(|| format!("cannot read `{}`", entry.path().display()))?,
            };
            listing.files.push((relative, Stat::of(&meta)));
        }
    }
    if recordable(&dir) {
        listing.dirs.push((dir, stat));
    }
    let parts: Vec<anyhow::Result<Listing>> = below.into_par_iter().map(|(path, sub)| read_dir(&path, sub, None, skip)).collect();
    for part in parts {
        listing.absorb(part?);
    }
    Ok(listing)
}

/// Whether `error` says what was to be read is not there (any more).
fn gone(error: &std::io::Error) -> bool {
    matches!(error.kind(), std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory)
}

/// Whether the records' lines can hold relative path `path`.
pub(crate) fn recordable(path: &str) -> bool {
    !path.contains(['\n', '\r'])
}

/// The record of a directory never to be trusted: a link to one (found from its parent, which
/// is then read), one without a change time, or one holding an entry the records cannot name.
const UNTRUSTED: Stat = Stat { size: 0, mtime: 0, ino: 0 };

/// The stat of the directory at `path` (its change time in place of a file's modification
/// time), when it is a directory and not a link to one.
fn directory(path: &Path) -> Option<Stat> {
    let meta = fs::symlink_metadata(path).ok().filter(fs::Metadata::is_dir)?;
    Stat::of_directory(&meta)
}

/// The stat of the regular file at `path`, when it is one.
fn regular_file(path: &Path) -> Option<Stat> {
    fs::symlink_metadata(path).ok().filter(fs::Metadata::is_file).map(|meta| Stat::of(&meta))
}

#[cfg(test)]
mod tests;
