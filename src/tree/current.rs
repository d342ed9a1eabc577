//! The tree now in the output directory, read only as far as a render needs it.
//!
//! A render compares what it renders with what is there, gives back the memo's units whose
//! files are unchanged, and reuses the ciphertext of sealed Secrets. Reading back every file of
//! a large tree (55,000 files) for that costs more than the rest of a one-server re-render, so
//! the render memo also keeps a [`Records`] of the files the last render left: per file its
//! [`Stat`] and content id. A file whose stat still equals its record is trusted to hold the
//! recorded content without being read, the way Git's index trusts a file's stat; any other file
//! is read and hashed. A record is not trusted for a file modified less than [`RACY`] before
//! the records were saved: an edit within the same clock tick as our own write would leave the
//! stat unchanged (Git calls such entries "racily clean"). Sealed Secrets are always read, for
//! their ciphertext.

use super::write::{self, Stat};
use super::{Files, Kept};
use crate::codec::{put_text, put_varint, read_blocks, write_blocks};
use crate::object::ContentId;
use crate::render::memo::Contents;
use anyhow::Context as _;
use rayon::prelude::*;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

/// A record younger than this when the records were saved is not trusted (nanoseconds).
pub const RACY: u64 = 2_000_000_000;

/// What the last render recorded of the files it left: when, and per file its stat and content.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Records {
    /// When the records were saved, nanoseconds since the Unix epoch.
    pub saved: u64,
    /// Per path relative to the output directory.
    pub files: BTreeMap<String, Record>,
    /// The stat of each directory whose entries were listed, per path relative to the output
    /// directory (see `tree::listing`).
    pub dirs: BTreeMap<String, Stat>,
}

/// One file's record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record {
    /// The file's stat when it was written or last read.
    pub stat: Stat,
    /// What it holds.
    pub content: ContentId,
}

/// The start of the records' file. After it: `u64 saved ‖ u64 files ‖ u64 directories` (each
/// little-endian), then the files' records and then the directories', in blocks of a few
/// thousand written and read side by side (`crate::codec::write_blocks`): a file's is
/// `text(path) ‖ content id (20 bytes) ‖ varint(size) ‖ varint(mtime) ‖ varint(inode)`, a
/// directory's `text(path) ‖ varint(size) ‖ varint(ctime) ‖ varint(inode)`. A binary form:
/// the line-based text it replaces took several times longer to write and read back.
const HEADER: &[u8] = b"tfrs file records v3\n";

impl Records {
    /// The records as [`Records::write_to`] writes them.
    #[must_use]
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut bytes = Vec::with_capacity(64 + self.files.len() * 100);
        let _ = self.write_to(&mut bytes);
        bytes
    }

    /// Writes the records to `out` (see [`HEADER`]).
    ///
    /// # Errors
    ///
    /// `out`'s.
    pub fn write_to(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        // NB: a path with a line break is left out (as in the line-based form this replaced):
        // that file is read again, and the listing never trusts the directory holding it.
        let files: Vec<(&String, &Record)> = self.files.iter().filter(|(path, _)| super::listing::recordable(path)).collect();
        let dirs: Vec<(&String, &Stat)> = self.dirs.iter().filter(|(path, _)| super::listing::recordable(path)).collect();
        out.write_all(HEADER)?;
        for number in [self.saved, files.len() as u64, dirs.len() as u64] {
            out.write_all(&number.to_le_bytes())?;
        }
        let put_stat = |stat: &Stat, block: &mut Vec<u8>| {
            for number in [stat.size, stat.mtime, stat.ino] {
                put_varint(block, number);
            }
        };
        write_blocks(out, &files, &|(path, record), block| {
            block.push(FILE);
            put_text(block, path);
            block.extend_from_slice(&record.content.0);
            put_stat(&record.stat, block);
        })?;
        write_blocks(out, &dirs, &|(path, stat), block| {
            block.push(DIR);
            put_text(block, path);
            put_stat(stat, block);
        })
    }

    /// What a listing may trust of these records: a directory changed within the racy window
    /// before they were saved is read.
    pub(crate) fn recorded(&self) -> super::listing::Recorded<'_, Record> {
        super::listing::Recorded { dirs: &self.dirs, files: &self.files, changed_by: self.saved.saturating_sub(RACY) }
    }

    /// Reads what [`Records::write_to`] wrote back; anything else (another format, bytes cut
    /// short or damaged) is no records at all, which costs the next render time, never
    /// correctness.
    #[must_use]
    pub fn from_bytes(bytes: &[u8]) -> Records {
        Records::try_from_bytes(bytes).unwrap_or_default()
    }

    fn try_from_bytes(bytes: &[u8]) -> Option<Records> {
        let rest = bytes.strip_prefix(HEADER)?;
        let (numbers, rest) = rest.split_first_chunk::<24>()?;
        let number = |at: usize| numbers[at..at + 8].try_into().ok().map(u64::from_le_bytes);
        let (saved, counts) = (number(0)?, (number(8)?, number(16)?));
        let lines = read_blocks(rest, &|reader| {
            let kind = reader.byte()?;
            let path = reader.text()?;
            let content = (kind == FILE).then(|| reader.take(20)?.try_into().ok().map(ContentId)).flatten();
            let stat = Stat { size: reader.varint()?, mtime: reader.varint()?, ino: reader.varint()? };
            match (kind, content) {
                (FILE, Some(content)) => Some(Line::File(path, Record { stat, content })),
                (DIR, None) => Some(Line::Dir(path, stat)),
                _ => None,
            }
        })?;
        let (mut files, mut dirs) = (Vec::new(), Vec::new());
        for line in lines {
            match line {
                Line::File(path, record) => files.push((path, record)),
                Line::Dir(path, stat) => dirs.push((path, stat)),
            }
        }
        // NB: collected, not inserted one by one: they are in order, and a map built from
        // sorted pairs costs no search per path.
        let records = Records { saved, files: files.into_iter().collect(), dirs: dirs.into_iter().collect() };
        (counts == (records.files.len() as u64, records.dirs.len() as u64)).then_some(records)
    }
}

/// The first byte of a file's record.
const FILE: u8 = 0;
/// The first byte of a directory's record.
const DIR: u8 = 1;

/// One record read back.
enum Line {
    File(String, Record),
    Dir(String, Stat),
}

/// Now, in nanoseconds since the Unix epoch (the records' times, and the render memo's).
pub(crate) fn now_nanos() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// `stat`, listed at `listed_at`, as a record: unchanged when it changed at least [`RACY`]
/// before that, else with a size no file has, so that the next run does not trust it. A change
/// within the clock tick of the one it shows could hide behind it: the records' own racy
/// window (from when they are saved, after the render) would not see that when the render took
/// longer than the window. The render's own files are written and stat'ed at its end.
fn settled(stat: Stat, listed_at: u64) -> Stat {
    if stat.mtime.saturating_add(RACY) <= listed_at { stat } else { Stat { size: u64::MAX, ..stat } }
}

/// The directories `dirs`, listed at `listed_at`, as records ([`settled`]).
fn settled_dirs(dirs: &[(String, Stat)], listed_at: u64) -> BTreeMap<String, Stat> {
    dirs.iter().map(|(path, stat)| (path.clone(), settled(*stat, listed_at))).collect()
}

/// `text` cut into pieces of whole lines, each of about `size` bytes or less.
pub(crate) fn line_pieces(text: &str, size: usize) -> Vec<&str> {
    let mut pieces = Vec::new();
    let mut rest = text;
    while rest.len() > size {
        // NB: a newline is one byte, so cutting after it is a character boundary.
        let cut = rest.as_bytes()[size..].iter().position(|&b| b == b'\n').map_or(rest.len(), |at| size + at + 1);
        let (piece, after) = rest.split_at(cut);
        pieces.push(piece);
        rest = after;
    }
    if !rest.is_empty() {
        pieces.push(rest);
    }
    pieces
}

/// The files now in the output directory: every path with its stat and content id, and the
/// bytes of those that had to be read.
#[derive(Debug, Default)]
pub struct Current {
    root: PathBuf,
    files: BTreeMap<String, (Stat, ContentId)>,
    read: HashMap<String, Vec<u8>>,
    /// The directories listed, with their stats, in order (none when listed without records).
    dirs: Vec<(String, Stat)>,
    /// How many files were trusted by their record.
    pub trusted: usize,
    /// How many directories were trusted by their record, not read.
    pub trusted_dirs: usize,
    /// When the listing started, nanoseconds since the Unix epoch.
    listed_at: u64,
}

impl Current {
    /// Lists `out` (the files `keep` accepts) and identifies each file: by its record in
    /// `records` when its stat still matches, else by reading it (in parallel).
    ///
    /// # Errors
    ///
    /// I/O errors.
    pub fn read(out: &Path, records: &Records, keep: &dyn Fn(&str) -> bool) -> anyhow::Result<Current> {
        let listed_at = now_nanos();
        let mut listed = write::list(out)?;
        listed.retain(|(path, _)| keep(path));
        Ok(Current { listed_at, ..Current::identify(out, listed, records)? })
    }

    /// [`Current::read`] of the files below directory `below` of `out` only (a relative path,
    /// not empty; paths still relative to `out`), the directories whose stat is still the one
    /// in `records` not read but taken from them (`tree::listing`).
    ///
    /// # Errors
    ///
    /// I/O errors.
    pub fn read_below(out: &Path, below: &str, records: &Records) -> anyhow::Result<Current> {
        let listed_at = now_nanos();
        let listing = super::listing::list_below(out, below, &records.recorded())?;
        let current = Current::identify(out, listing.files, records)?;
        Ok(Current { dirs: listing.dirs, trusted_dirs: listing.trusted_dirs, listed_at, ..current })
    }

    /// Whether every directory listed was trusted by its record (then records saved now would
    /// hold the same directories).
    #[must_use]
    pub fn dirs_all_trusted(&self) -> bool {
        self.trusted_dirs == self.dirs.len()
    }

    /// Identifies the files `listed` (in path order: a file out of order is read).
    fn identify(out: &Path, listed: Vec<(String, Stat)>, records: &Records) -> anyhow::Result<Current> {
        // NB: matched with the records in one ordered pass (a search per path of a large tree
        // costs more than the rest of this).
        let listed_paths = listed.iter().map(|(path, stat)| (path.as_str(), stat));
        let matched = merge_by_path(listed_paths, records.files.iter().map(|(path, record)| (path.as_str(), record)));
        let trusted: Vec<Option<ContentId>> = matched
            .filter_map(|(_, (stat, record))| {
                let trusted = record.filter(|r| Some(&r.stat) == stat && r.stat.mtime.saturating_add(RACY) <= records.saved);
                stat.map(|_| trusted.map(|r| r.content))
            })
            .collect();
        // Per file: its path, stat and content id, and its bytes when it had to be read.
        type Identified = (String, Stat, ContentId, Option<Vec<u8>>);
        let identified: Vec<anyhow::Result<Identified>> = listed
            .into_par_iter()
            .zip(trusted)
            .map(|((path, stat), trusted)| {
                if let Some(content) = trusted {
                    return Ok((path, stat, content, None));
                }
                let file = out.join(&path);
                let bytes = std::fs::read(&file).with_context(|| format!("cannot read `{}`", file.display()))?;
                Ok((path, stat, ContentId::of(&bytes), Some(bytes)))
            })
            .collect();
        let mut current = Current { root: out.to_path_buf(), ..Current::default() };
        let mut files = Vec::with_capacity(identified.len());
        for item in identified {
            let (path, stat, content, bytes) = item?;
            match bytes {
                Some(bytes) => drop(current.read.insert(path.clone(), bytes)),
                None => current.trusted += 1,
            }
            files.push((path, (stat, content)));
        }
        // NB: collected (sorted once), not inserted one by one: a search per path of a large
        // tree costs more than the sort.
        current.files = files.into_iter().collect();
        Ok(current)
    }

    /// Whether these are exactly the files `records` describe: the same paths, each with its
    /// recorded content (trusted by its stat, or read and found the same).
    #[must_use]
    pub fn is_described_by(&self, records: &Records) -> bool {
        self.files.len() == records.files.len()
            && self
                .files
                .iter()
                .zip(&records.files)
                .all(|((path, (_, content)), (recorded, record))| path == recorded && *content == record.content)
    }

    /// Records of these files as they are now (`saved` left at zero, for the caller to set),
    /// what changed just before the listing marked untrusted ([`settled`]).
    #[must_use]
    pub fn records(&self) -> Records {
        let record = |(path, (stat, content)): (&String, &(Stat, ContentId))| {
            (path.clone(), Record { stat: settled(*stat, self.listed_at), content: *content })
        };
        Records { saved: 0, files: self.files.iter().map(record).collect(), dirs: settled_dirs(&self.dirs, self.listed_at) }
    }

    /// The bytes of the file at `path` (read now if they were not yet); `None` when there is no
    /// such file or it cannot be read.
    #[must_use]
    pub fn bytes(&self, path: &str) -> Option<std::borrow::Cow<'_, [u8]>> {
        if !self.files.contains_key(path) {
            return None;
        }
        match self.read.get(path) {
            Some(bytes) => Some(std::borrow::Cow::Borrowed(bytes)),
            None => std::fs::read(self.root.join(path)).ok().map(std::borrow::Cow::Owned),
        }
    }

    /// Every path, in order.
    pub fn paths(&self) -> impl Iterator<Item = &str> {
        self.files.keys().map(String::as_str)
    }

    /// How many files there are.
    #[must_use]
    pub fn len(&self) -> usize {
        self.files.len()
    }

    /// Whether there are none.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// `path` as this tree holds it (borrowed from it), when it has a file there.
    #[must_use]
    pub fn path(&self, path: &str) -> Option<&str> {
        self.files.get_key_value(path).map(|(path, _)| path.as_str())
    }

    /// The paths below directory `dir` (a relative path without a trailing slash), in order.
    pub fn paths_under<'a>(&'a self, dir: &str) -> impl Iterator<Item = &'a str> + use<'a> {
        let prefix = format!("{dir}/");
        self.files.range(prefix.clone()..).map_while(move |(path, _)| path.starts_with(&prefix).then_some(path.as_str()))
    }

    /// Compares the rendered `files` and `kept` files with these: what changes, what is
    /// removed, what stays. Only current paths for which `scope` holds are looked at for
    /// removal; of those, the ones for which `stays` holds (other clusters' files) stay as they
    /// are although not rendered. Rendered files are hashed in parallel.
    #[must_use]
    pub fn changes<'a>(
        &'a self,
        files: &'a Files,
        kept: &'a Kept,
        scope: &dyn Fn(&str) -> bool,
        stays: &dyn Fn(&str) -> bool,
    ) -> Changes<'a> {
        let ids: Vec<(&'a str, ContentId)> = files.par_iter().map(|(path, bytes)| (path.as_str(), ContentId::of(bytes))).collect();
        let mut update = write::Update { files, changed: Vec::new(), removed: Vec::new(), unchanged: Vec::new() };
        let (mut staying, mut written) = (Vec::with_capacity(self.files.len()), Vec::new());
        // NB: one pass over the three sorted lists (a large cluster has 60,000 files: a search
        // per path costs more than the rest of this).
        // The new side: each path's content, and whether it was rendered (else kept).
        let rendered = ids.iter().map(|(path, id)| (*path, (*id, true)));
        let new = merge_by_path(rendered, kept.iter().map(|(path, id)| (path.as_str(), (*id, false))))
            .filter_map(|(path, (rendered, kept))| Some((path, rendered.or(kept)?)));
        for (path, sides) in merge_by_path(new, self.files.iter().map(|(path, old)| (path.as_str(), *old))) {
            match sides {
                (Some((id, true)), Some((stat, old))) if old == id => {
                    update.unchanged.push(path);
                    staying.push((path, Record { stat, content: id }));
                }
                (Some((id, true)), _) => {
                    update.changed.push(path);
                    written.push(id);
                }
                (Some((id, false)), old) => {
                    update.unchanged.push(path);
                    staying.extend(old.map(|(stat, _)| (path, Record { stat, content: id })));
                }
                (None, Some((stat, content))) if scope(path) => {
                    if stays(path) {
                        update.unchanged.push(path);
                        staying.push((path, Record { stat, content }));
                    } else {
                        update.removed.push(path);
                    }
                }
                (None, _) => {}
            }
        }
        Changes { update, staying, written, dirs: &self.dirs, listed_at: self.listed_at }
    }
}

/// Two iterators of `(path, value)` in path order, merged: each path once, with the value of
/// each side that has it.
pub(crate) fn merge_by_path<'a, A, B>(
    left: impl Iterator<Item = (&'a str, A)>,
    right: impl Iterator<Item = (&'a str, B)>,
) -> impl Iterator<Item = (&'a str, (Option<A>, Option<B>))> {
    let (mut left, mut right) = (left.peekable(), right.peekable());
    std::iter::from_fn(move || {
        let order = match (left.peek(), right.peek()) {
            (None, None) => return None,
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (Some((a, _)), Some((b, _))) => a.cmp(b),
        };
        Some(match order {
            std::cmp::Ordering::Less => left.next().map(|(path, a)| (path, (Some(a), None)))?,
            std::cmp::Ordering::Greater => right.next().map(|(path, b)| (path, (None, Some(b))))?,
            std::cmp::Ordering::Equal => {
                let (path, a) = left.next()?;
                (path, (Some(a), right.next().map(|(_, b)| b)))
            }
        })
    })
}

impl Contents for Current {
    fn content_id(&self, path: &str) -> Option<ContentId> {
        self.files.get(path).map(|(_, content)| *content)
    }
}

/// A render against the current tree: the write it takes, and what to record after it.
pub struct Changes<'a> {
    /// What writing it does.
    pub update: write::Update<'a>,
    /// The records of the files that stay as they are, in path order.
    staying: Vec<(&'a str, Record)>,
    /// The content of each file of `update.changed`, in its order.
    written: Vec<ContentId>,
    /// The directories listed, with their stats then: a directory the update writes in or
    /// removes from has another stat once written, so the next run reads it again.
    dirs: &'a [(String, Stat)],
    /// When the listing started.
    listed_at: u64,
}

impl Changes<'_> {
    /// The records of this part of the tree once written: the files that stay keep their
    /// current stat, the changed ones take `written` (their stats, in the order of
    /// `update.changed`, as [`write::Staging::add`] returns them); `saved` is left at zero,
    /// for the caller to set. What the listing found changed just before it is marked
    /// untrusted ([`settled`]).
    #[must_use]
    pub fn records(&self, written: &[Stat]) -> Records {
        let changed = self.update.changed.iter().zip(&self.written).zip(written);
        let changed = changed.map(|((path, content), stat)| (*path, Record { stat: *stat, content: *content }));
        let staying = self.staying.iter().map(|(path, record)| (*path, Record { stat: settled(record.stat, self.listed_at), ..*record }));
        // NB: two sorted runs, merged by the collect's sort.
        let files = staying.chain(changed).map(|(path, record)| (path.to_owned(), record)).collect();
        Records { saved: 0, files, dirs: settled_dirs(self.dirs, self.listed_at) }
    }
}

#[cfg(test)]
mod tests;
