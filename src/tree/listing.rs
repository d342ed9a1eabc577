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
//! file's record, it is not trusted when it changed less than the racy window before the
//! records were saved (`tree::current::RACY`). Any directory not trusted is read as before, and so is every directory below it that
//! the records do not name.

use super::write::Stat;
use anyhow::Context as _;
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::collections::HashMap;
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
    let prefix = format!("{below}/");
    let under = |path: &str| path.starts_with(&prefix);
    let recorded: Vec<(&str, &Stat)> = records
        .dirs
        .range(below.to_owned()..)
        .map(|(path, stat)| (path.as_str(), stat))
        .take_while(|(path, _)| *path == below || under(path))
        .collect();
    let found = find_recorded(out, &recorded, records.changed_by);
    // The recorded files of trusted directories: stat'ed, never read.
    let in_trusted = |path: &&str| path.rsplit_once('/').is_some_and(|(dir, _)| matches!(found.get(dir), Some(Found::Trusted(_))));
    let kept: Vec<&str> =
        records.files.range(prefix.clone()..).map(|(path, _)| path.as_str()).take_while(|path| under(path)).filter(in_trusted).collect();
    let stated: Vec<(&str, Option<Stat>)> = kept.par_iter().map(|path| (*path, regular_file(&out.join(path)))).collect();
    // NB: a trusted directory one of whose files is gone or is not a file any more (changed
    // within a clock tick) is read after all.
    let mut demoted: Vec<&str> =
        stated.iter().filter(|(_, stat)| stat.is_none()).filter_map(|(path, _)| path.rsplit_once('/').map(|(dir, _)| dir)).collect();
    demoted.dedup();
    let mut to_read: Vec<(String, Option<Stat>)> = Vec::new();
    for (dir, _) in &recorded {
        match found.get(dir) {
            Some(Found::Read(stat)) => to_read.push(((*dir).to_owned(), Some(*stat))),
            Some(Found::Trusted(_)) if demoted.contains(dir) => to_read.push(((*dir).to_owned(), None)),
            _ => {}
        }
    }
    if !matches!(found.get(below), Some(Found::Trusted(_) | Found::Read(_))) && out.join(below).is_dir() {
        // NB: no records of the top directory (the first render, records of an older form), or
        // it is a link to a directory now.
        to_read.push((below.to_owned(), None));
    }
    let skip = |dir: &str| matches!(found.get(dir), Some(Found::Trusted(_) | Found::Read(_)));
    let read: Vec<anyhow::Result<Listing>> = to_read.into_par_iter().map(|(dir, stat)| read_dir(out, &dir, stat, &skip)).collect();
    let mut listing = Listing::default();
    for (dir, _) in &recorded {
        if let Some(Found::Trusted(stat)) = found.get(dir)
            && !demoted.contains(dir)
        {
            listing.dirs.push(((*dir).to_owned(), *stat));
            listing.trusted_dirs += 1;
        }
    }
    listing.files.extend(
        stated
            .into_iter()
            .filter_map(|(path, stat)| Some((path.to_owned(), stat?)))
            .filter(|(path, _)| !path.rsplit_once('/').is_some_and(|(dir, _)| demoted.contains(&dir))),
    );
    for part in read {
        let part = part?;
        listing.files.extend(part.files);
        listing.dirs.extend(part.dirs);
    }
    listing.files.par_sort_unstable_by(|a, b| a.0.cmp(&b.0));
    listing.dirs.par_sort_unstable_by(|a, b| a.0.cmp(&b.0));
    Ok(listing)
}

/// How each of the `recorded` directories (in path order, the top one first when recorded) is
/// found now: stat'ed side by side, then each judged after its parent. A trusted directory one
/// of whose recorded directories is gone (or is a link now) is read: what stands there now is
/// found among its entries.
fn find_recorded<'a>(out: &Path, recorded: &[(&'a str, &Stat)], changed_by: u64) -> HashMap<&'a str, Found> {
    let stats: Vec<Option<Stat>> = recorded.par_iter().map(|(dir, _)| directory(&out.join(dir))).collect();
    let mut found = HashMap::with_capacity(recorded.len());
    for (index, ((dir, record), stat)) in recorded.iter().zip(stats).enumerate() {
        let parent = dir.rsplit_once('/').map(|(parent, _)| parent).filter(|_| index > 0);
        let parent_found = parent.and_then(|parent| found.get(parent).copied());
        let parent_is_there = parent.is_none() || matches!(parent_found, Some(Found::Trusted(_) | Found::Read(_)));
        let now = match stat {
            Some(stat) if parent_is_there && stat == **record && stat.mtime <= changed_by => Found::Trusted(stat),
            Some(stat) if parent_is_there => Found::Read(stat),
            _ => Found::Gone,
        };
        if let (Found::Gone, Some(parent), Some(Found::Trusted(stat))) = (now, parent, parent_found) {
            found.insert(parent, Found::Read(stat));
        }
        found.insert(*dir, now);
    }
    found
}

/// The entries of directory `dir` (relative to `out`) whose stat is `stat` (taken now when
/// `None`), and below it every directory `skip` does not name, read the same way.
fn read_dir(out: &Path, dir: &str, stat: Option<Stat>, skip: &(dyn Fn(&str) -> bool + Sync)) -> anyhow::Result<Listing> {
    let path = out.join(dir);
    // NB: the stat is taken before the entries are read: a change in between leaves a stat
    // that is not the directory's any more, so the next run reads it again.
    let stat = stat.or_else(|| directory(&path));
    let mut listing = Listing::default();
    let mut below = Vec::new();
    for entry in fs::read_dir(&path).with_context(|| format!("cannot read `{}`", path.display()))? {
        let entry = entry?;
        let name = entry.file_name();
        let relative = format!("{dir}/{}", name.to_string_lossy());
        let kind = entry.file_type()?;
        // NB: a symlinked directory is followed, as the listing without records does.
        if kind.is_dir() || (kind.is_symlink() && entry.path().is_dir()) {
            if !kind.is_dir() {
                // NB: recorded as a directory that is never found again, so that this one is
                // read every time and the link followed (`find_recorded`).
                listing.dirs.push((relative.clone(), LINK));
            }
            if !skip(&relative) {
                below.push(relative);
            }
        } else {
            let meta = if kind.is_symlink() { fs::metadata(entry.path()) } else { entry.metadata() };
            let meta = meta.with_context(|| format!("cannot read `{}`", entry.path().display()))?;
            listing.files.push((relative, Stat::of(&meta)));
        }
    }
    if let Some(stat) = stat {
        listing.dirs.push((dir.to_owned(), stat));
    }
    let parts: Vec<anyhow::Result<Listing>> = below.into_par_iter().map(|sub| read_dir(out, &sub, None, skip)).collect();
    for part in parts {
        let part = part?;
        listing.files.extend(part.files);
        listing.dirs.extend(part.dirs);
    }
    Ok(listing)
}

/// The record of a link to a directory.
const LINK: Stat = Stat { size: 0, mtime: 0, ino: 0 };

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
