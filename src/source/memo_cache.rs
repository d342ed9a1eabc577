//! Where the render memo (`crate::render::memo`) of an output directory is kept between runs:
//! `<cache>/memo-<digest of the directory's absolute path>/`, with `<cache>` the first of
//! `$TFRS_CACHE_DIR`, `$XDG_CACHE_HOME/tfrs`, `$HOME/.cache/tfrs`; in it, per cluster,
//! `<cluster>.jobs` (the memo's entries, in a compact binary form), `<cluster>.units` (its
//! tenant namespaces' entries, `crate::render::unit`, the same way), `<cluster>.files` (the records of
//! its files, `crate::tree::current`), `<cluster>.stamp` (the cluster's stamp,
//! `crate::render::stamp`) and, for `commit`, `<cluster>.ids` (the ids of the cluster's
//! directory in the commit it made, `crate::git::commit::ClusterIds`). Per cluster, so that a
//! render holds one cluster's memo at a time.
//!
//! It is outside the output directory on purpose: the tree stays exactly the layout
//! `docs/render.md` shows, and the memo, which names the tfrs executable it was made by, never
//! shows in a diff. It holds stamps, object identities and paths: no value. Beside it,
//! `specs.cache` holds the parsed spec files, encrypted (`super::spec_cache`). A missing,
//! unreadable or foreign memo is an empty one.

use crate::codec::{Reader, put_text, put_varint, read_blocks, write_blocks};
use crate::object::ObjectId;
use crate::render::memo::Previous;
use crate::render::stamp::ClusterStamp;
use crate::render::stamp::Read;
use crate::render::unit;
use crate::tree::current::Records;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The memo directory of output directory `out`; `None` when no cache directory is known.
pub(crate) fn path(out: &Path) -> Option<PathBuf> {
    let dir = crate::cache::dir()?;
    let absolute = std::path::absolute(out).ok()?;
    let digest = Sha256::digest(absolute.as_os_str().as_encoded_bytes());
    Some(dir.join(format!("memo-{}", crate::secrets::bytes::to_hex(&digest[..16]))))
}

/// The memo's entries of `cluster`, or none.
pub(crate) fn load_jobs(dir: &Path, cluster: &str) -> Previous {
    read_entries(&dir.join(format!("{cluster}.jobs"))).unwrap_or_default()
}

/// The entries of the tenant namespaces of `cluster`, or none.
pub(crate) fn load_units(dir: &Path, cluster: &str) -> unit::Previous {
    read_entries(&dir.join(format!("{cluster}.units"))).unwrap_or_default()
}

/// The first line of a file of memo entries. After it come blocks of a few thousand entries,
/// each `u32 (little-endian) length ‖ varint(count) ‖ (text(key) ‖ entry)*` in the fields of
/// `crate::codec` ([`Stored`] writes each entry), so that a large cluster's tens of thousands of
/// entries are made and read in pieces side by side. A binary form: reading the JSON this
/// replaced was several times slower.
const ENTRIES: &[u8] = b"tfrs memo entries v3\n";

/// A memo entry in the binary form of the memo's files.
pub(crate) trait Stored: Sized {
    /// Appends it.
    fn put(&self, out: &mut Vec<u8>);
    /// Reads one back; `None` when the bytes are not one.
    fn get(reader: &mut Reader<'_>) -> Option<Self>;
}

impl Stored for crate::render::memo::Entry {
    fn put(&self, out: &mut Vec<u8>) {
        put_text(out, &self.stamp);
        put_text(out, &self.dir);
        put_varint(out, self.objects.len() as u64);
        for object in &self.objects {
            let id = &object.id;
            for text in [&id.api_version, &id.kind, id.namespace.as_deref().unwrap_or(""), &id.name, &object.file] {
                put_text(out, text);
            }
        }
    }

    fn get(reader: &mut Reader<'_>) -> Option<Self> {
        let (stamp, dir) = (reader.text()?, reader.text()?);
        let count = reader.count()?;
        let mut objects = Vec::with_capacity(count);
        for _ in 0..count {
            let (api_version, kind, namespace, name) = (reader.text()?, reader.text()?, reader.text()?, reader.text()?);
            // NB: no namespace is written as an empty one, and read back as none.
            let id = ObjectId { api_version, kind, namespace: Some(namespace).filter(|n| !n.is_empty()), name };
            objects.push(crate::render::memo::Object { id, file: reader.text()? });
        }
        Some(crate::render::memo::Entry { stamp, dir, objects })
    }
}

impl Stored for unit::UnitEntry {
    fn put(&self, out: &mut Vec<u8>) {
        put_text(out, &self.stamp);
        put_varint(out, self.reads.len() as u64);
        for read in &self.reads {
            match read {
                Read::Env(name) => {
                    out.push(0);
                    put_text(out, name);
                }
                Read::File(path, from) => {
                    out.push(1);
                    put_text(out, path);
                    put_text(out, from);
                }
            }
        }
        put_varint(out, self.components.len() as u64);
        for component in &self.components {
            put_text(out, &component.id);
            put_text(out, &component.timeout);
            put_varint(out, component.sealed.len() as u64);
            component.sealed.iter().for_each(|job| put_text(out, job));
        }
    }

    fn get(reader: &mut Reader<'_>) -> Option<Self> {
        let stamp = reader.text()?;
        let mut reads = std::collections::BTreeSet::new();
        for _ in 0..reader.count()? {
            let read = match reader.byte()? {
                0 => Read::Env(reader.text()?),
                1 => Read::File(reader.text()?, reader.text()?),
                _ => return None,
            };
            reads.insert(read);
        }
        let count = reader.count()?;
        let mut components = Vec::with_capacity(count);
        for _ in 0..count {
            let (id, timeout) = (reader.text()?, reader.text()?);
            let sealed = (0..reader.count()?).map(|_| reader.text()).collect::<Option<Vec<_>>>()?;
            components.push(unit::UnitComponent { id, timeout, sealed });
        }
        Some(unit::UnitEntry { stamp, reads, components })
    }
}

/// The entries of the file at `path` (see [`ENTRIES`]), each to be taken once; `None` when it
/// cannot be read as such.
fn read_entries<V: Stored + Send>(path: &Path) -> Option<rustc_hash::FxHashMap<String, Mutex<Option<V>>>> {
    let bytes = std::fs::read(path).ok()?;
    // NB: a file cut exactly between two blocks reads as fewer entries: a job without its
    // entry is rendered again, so that costs time, never correctness.
    let pieces = read_blocks(bytes.strip_prefix(ENTRIES)?, &|reader| Some((reader.text()?, V::get(reader)?)))?;
    let mut entries = rustc_hash::FxHashMap::with_capacity_and_hasher(pieces.len(), rustc_hash::FxBuildHasher);
    for (key, value) in pieces {
        entries.insert(key, Mutex::new(Some(value)));
    }
    Some(entries)
}

/// Writes `entries` into `file` (see [`ENTRIES`]) and flushes it.
fn write_entries<V: Stored + Sync>(file: &mut std::io::BufWriter<std::fs::File>, entries: &Slice<'_, V>) -> std::io::Result<()> {
    use std::io::Write as _;
    file.write_all(ENTRIES)?;
    let all: Vec<(&String, &V)> = entries.iter().collect();
    write_blocks(file, &all, &|(key, value), block| {
        put_text(block, key);
        value.put(block);
    })?;
    file.flush()
}

/// The JSON file at `path`, when it can be read as a `T`.
fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Option<T> {
    serde_json::from_slice(&std::fs::read(path).ok()?).ok()
}

/// The records of the files of `cluster`, or none.
pub(crate) fn load_records(dir: &Path, cluster: &str) -> Records {
    std::fs::read(dir.join(format!("{cluster}.files"))).map(|bytes| Records::from_bytes(&bytes)).unwrap_or_default()
}

/// The ids the last commit of `cluster` left of its directory (`crate::git::commit::ClusterIds`),
/// when its tree then was `tree`.
pub(crate) fn load_ids(dir: &Path, cluster: &str, tree: git2::Oid) -> Option<crate::git::commit::ClusterIds> {
    use crate::git::commit::ClusterIds;
    let text = std::fs::read_to_string(dir.join(format!("{cluster}.ids"))).ok()?;
    // NB: the header names the tree: the ids of another tree are not parsed.
    (ClusterIds::tree_of(&text)? == tree).then(|| ClusterIds::parse(&text))?
}

/// The stamp of `cluster`, when there is one.
pub(crate) fn load_stamp(dir: &Path, cluster: &str) -> Option<ClusterStamp> {
    read_json(&dir.join(format!("{cluster}.stamp")))
}

/// The entries of a memo table whose key starts with a prefix (a cluster's, `<cluster>/`),
/// written without being copied out of it.
pub(crate) struct Slice<'a, V> {
    table: &'a BTreeMap<String, V>,
    prefix: &'a str,
}

impl<'a, V> Slice<'a, V> {
    /// The entries of `table` whose key starts with `prefix`.
    pub(crate) fn new(table: &'a BTreeMap<String, V>, prefix: &'a str) -> Slice<'a, V> {
        Slice { table, prefix }
    }

    /// Every entry of `table`.
    pub(crate) fn all(table: &'a BTreeMap<String, V>) -> Slice<'a, V> {
        Slice { table, prefix: "" }
    }

    /// Its entries, in key order.
    fn iter(&self) -> impl Iterator<Item = (&'a String, &'a V)> {
        let prefix = self.prefix;
        self.table.range(prefix.to_owned()..).take_while(move |(key, _)| key.starts_with(prefix))
    }
}

/// A memo not written for this long is removed when another is saved (output directories come
/// and go; their memos should not pile up).
const STALE: std::time::Duration = std::time::Duration::from_secs(30 * 24 * 3600);

/// Memo files written beside their place, put in place by [`Staged::commit`] once the tree they
/// describe is, and removed if dropped before.
#[derive(Default)]
pub(crate) struct Staged {
    files: Vec<(PathBuf, PathBuf)>,
}

impl Staged {
    /// Writes the memo of `cluster` (its entries and its namespaces' unless `None`, `records`,
    /// and `stamp` when given) into memo directory `dir`, beside its place. When a file cannot
    /// be written whole (a full disk), none of the cluster's is staged: a memo file cut short is
    /// never put in place.
    pub(crate) fn add(
        &mut self,
        dir: &Path,
        cluster: &str,
        jobs: Option<(&Slice<'_, crate::render::memo::Entry>, &Slice<'_, unit::UnitEntry>)>,
        records: &Records,
        stamp: Option<&ClusterStamp>,
    ) -> std::io::Result<()> {
        use std::io::Write as _;
        std::fs::create_dir_all(dir)?;
        // NB: the entries' file of earlier builds, which this one does not read.
        let _ = std::fs::remove_file(dir.join(format!("{cluster}.json")));
        let mut staged = Staged::default();
        // NB: streamed to the files a few thousand entries at a time, not built whole in memory
        // first (a large cluster's memo is tens of megabytes).
        let mut create = |name: String| staged.create(dir, name);
        if let Some(stamp) = stamp {
            let mut file = create(format!("{cluster}.stamp"))?;
            serde_json::to_writer(&mut file, stamp).map_err(std::io::Error::other)?;
            file.flush()?;
        }
        let mut lines = create(format!("{cluster}.files"))?;
        match jobs {
            None => records.write_to(&mut lines).and_then(|()| lines.flush())?,
            Some((jobs, units)) => {
                let mut namespaces = create(format!("{cluster}.units"))?;
                let mut entries = create(format!("{cluster}.jobs"))?;
                // NB: the three files are written side by side.
                let ((entries, namespaces), lines) = rayon::join(
                    || rayon::join(|| write_entries(&mut entries, jobs), || write_entries(&mut namespaces, units)),
                    || records.write_to(&mut lines).and_then(|()| lines.flush()),
                );
                entries.and(namespaces).and(lines)?;
            }
        }
        self.files.append(&mut staged.files);
        Ok(())
    }

    /// Writes the ids of the directory of `cluster` in the commit just made (see
    /// `crate::git::commit::ClusterIds`) into memo directory `dir`, beside its place.
    pub(crate) fn add_ids(&mut self, dir: &Path, cluster: &str, ids: &crate::git::commit::ClusterIds) -> std::io::Result<()> {
        use std::io::Write as _;
        std::fs::create_dir_all(dir)?;
        let mut staged = Staged::default();
        let mut file = staged.create(dir, format!("{cluster}.ids"))?;
        ids.write_to(&mut file)?;
        file.flush()?;
        drop(file);
        self.files.append(&mut staged.files);
        Ok(())
    }

    /// Takes the files `other` staged, to be put in place with these.
    pub(crate) fn absorb(&mut self, mut other: Staged) {
        self.files.append(&mut other.files);
    }

    /// A new file staged to become `dir/name`.
    fn create(&mut self, dir: &Path, name: String) -> std::io::Result<std::io::BufWriter<std::fs::File>> {
        let temporary = dir.join(format!(".{name}.{}", std::process::id()));
        self.files.push((temporary.clone(), dir.join(name)));
        Ok(std::io::BufWriter::with_capacity(1 << 16, std::fs::File::create(&temporary)?))
    }

    /// Puts every staged file in place, and removes the memos of other output directories not
    /// written for 30 days. A reader sees the old memo, the new one, or (between the two renames
    /// of a file) none, which costs it time, never correctness.
    pub(crate) fn commit(mut self) -> std::io::Result<()> {
        let mut dirs = Vec::new();
        for (temporary, file) in std::mem::take(&mut self.files) {
            // NB: the file it replaces is renamed aside, not renamed over: on ext4, renaming over
            // a file frees its blocks and starts writing the new one out before the rename
            // returns (about 10 ms for each of a large cluster's memo files). What is put aside
            // is removed by the next run, in the background ([`sweep`]).
            let aside = aside(&file);
            let moved = std::fs::rename(&file, &aside).is_ok();
            std::fs::rename(&temporary, &file).inspect_err(|_| {
                let _ = std::fs::remove_file(&temporary);
                if moved {
                    let _ = std::fs::rename(&aside, &file);
                }
            })?;
            if let Some(dir) = file.parent()
                && !dirs.iter().any(|d: &PathBuf| d == dir)
            {
                dirs.push(dir.to_path_buf());
            }
        }
        for dir in &dirs {
            if let Some(memos) = dir.parent() {
                prune(memos, Some(dir));
            }
        }
        Ok(())
    }
}

/// [`path`] of `out`; when `writing` (the run saves a memo), what earlier runs put aside
/// there is being removed ([`sweep`]).
pub(crate) fn open(out: &Path, writing: bool) -> Option<PathBuf> {
    let dir = path(out)?;
    if writing {
        sweep(&dir);
    }
    Some(dir)
}

/// Where [`Staged::commit`] puts the memo file `file` it replaces: a hidden name of this process.
fn aside(file: &Path) -> PathBuf {
    let name = file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    file.with_file_name(format!(".{name}.{}{ASIDE}", std::process::id()))
}

/// The end of the name of a memo file put aside.
pub(crate) const ASIDE: &str = ".aside";

/// Removes the memo files earlier runs put aside in memo directory `dir`, on a thread of its
/// own (freeing a large file waits on the file system). Best effort: what is not removed before
/// the process ends is removed by a later run.
fn sweep(dir: &Path) {
    let dir = dir.to_path_buf();
    std::thread::spawn(move || remove_aside(&dir));
}

/// Removes the memo files put aside in `dir`.
fn remove_aside(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        if entry.file_name().to_str().is_some_and(|name| name.starts_with('.') && name.ends_with(ASIDE)) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        for (temporary, _) in &self.files {
            let _ = std::fs::remove_file(temporary);
        }
    }
}

/// Forgets the memo of `cluster` in memo directory `dir` (its output was removed).
pub(crate) fn forget(dir: &Path, cluster: &str) {
    // NB: `json` is the entries' file of earlier builds.
    for extension in ["jobs", "json", "units", "files", "stamp", "ids"] {
        let _ = std::fs::remove_file(dir.join(format!("{cluster}.{extension}")));
    }
}

/// Names this tfrs build: its version and its executable (path, size, modification time), so a
/// rebuilt or upgraded tfrs renders everything again.
pub(crate) fn build_id() -> String {
    let exe = std::env::current_exe().ok();
    let meta = exe.as_deref().and_then(|e| std::fs::metadata(e).ok());
    let modified = meta.as_ref().and_then(|m| m.modified().ok()).and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok());
    format!(
        "tfrs {} {} {} {}",
        env!("CARGO_PKG_VERSION"),
        exe.as_deref().map(|e| e.display().to_string()).unwrap_or_default(),
        meta.map_or(0, |m| m.len()),
        modified.map_or(0, |d| d.as_nanos()),
    )
}

/// Removes the memos (`memo-*`) in `memos` not written for [`STALE`], but `keep`. Best effort.
fn prune(memos: &Path, keep: Option<&Path>) {
    let Ok(entries) = std::fs::read_dir(memos) else { return };
    let now = std::time::SystemTime::now();
    for entry in entries.flatten() {
        let path = entry.path();
        if !entry.file_name().to_str().is_some_and(|n| n.starts_with("memo-")) || Some(path.as_path()) == keep {
            continue;
        }
        let modified = entry.metadata().and_then(|m| m.modified());
        if modified.is_ok_and(|m| now.duration_since(m).is_ok_and(|age| age > STALE)) {
            let _ = if path.is_dir() { std::fs::remove_dir_all(&path) } else { std::fs::remove_file(&path) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cluster_whose_memo_cannot_be_written_whole_puts_none_of_it_in_place() {
        let dir = tempfile::tempdir().expect("temp dir");
        let (jobs, units) = (BTreeMap::new(), BTreeMap::new());
        let saved = (&Slice::all(&jobs), &Slice::all(&units));
        // NB: a directory where the entries' temporary file goes: that file cannot be made,
        // after the records' was.
        std::fs::create_dir_all(dir.path().join(format!(".c.jobs.{}", std::process::id()))).expect("blocker");
        let mut staged = Staged::default();
        assert!(staged.add(dir.path(), "c", Some(saved), &Records::default(), None).is_err());
        staged.add(dir.path(), "d", Some(saved), &Records::default(), None).expect("another cluster");
        staged.commit().expect("put in place");
        let names: Vec<String> = std::fs::read_dir(dir.path())
            .expect("listed")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .filter(|n| !n.starts_with('.'))
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        assert_eq!(names, ["d.files", "d.jobs", "d.units"], "nothing of `c`, and no temporary left");
        let left: Vec<_> = std::fs::read_dir(dir.path()).expect("listed").map(|e| e.expect("entry").file_name()).collect();
        assert_eq!(left.len(), 4, "the blocker and d's three files: {left:?}");
    }

    /// A job's entry with `objects` objects, one of them cluster-wide, and texts of every kind.
    fn entry(i: usize, objects: usize) -> crate::render::memo::Entry {
        let objects = (0..objects)
            .map(|n| crate::render::memo::Object {
                id: ObjectId::new("apps/v1", "Deployment", (n % 2 == 0).then_some("ns \"ü\""), &format!("web-{i}-{n}")),
                file: format!("deployment-web-{n}.yaml"),
            })
            .collect();
        crate::render::memo::Entry { stamp: format!("{i:064x}"), dir: format!("clusters/c/components/j{i}\n"), objects }
    }

    fn read_back<V: Stored + Send>(path: &Path) -> Option<BTreeMap<String, V>> {
        Some(read_entries::<V>(path)?.into_iter().map(|(key, value)| (key, value.into_inner().expect("lock").expect("entry"))).collect())
    }

    fn write(path: &Path, entries: &Slice<'_, impl Stored + Sync>) {
        let mut file = std::io::BufWriter::new(std::fs::File::create(path).expect("file"));
        write_entries(&mut file, entries).expect("written");
    }

    #[test]
    fn entries_read_back_as_written_in_pieces_and_a_damaged_file_is_none() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("c.jobs");
        // More entries than one block holds; none, one and several objects.
        let table: BTreeMap<String, crate::render::memo::Entry> =
            (0..5_000).map(|i| (format!("c/job \"{i}\"\n"), entry(i, i % 3))).collect();
        write(&path, &Slice::new(&table, "c/"));
        assert_eq!(read_back(&path), Some(table.clone()));
        // Only the slice's entries are written.
        write(&path, &Slice::new(&table, "c/job \"1"));
        let some = read_back::<crate::render::memo::Entry>(&path).expect("read");
        assert_eq!(some.len(), table.keys().filter(|key| key.starts_with("c/job \"1")).count());
        // Cut inside a block, lengthened, or of another form: no entries at all.
        let bytes = std::fs::read(&path).expect("bytes");
        for cut in [bytes.len() - 1, bytes.len() - 5, ENTRIES.len() + 3, 7] {
            std::fs::write(&path, &bytes[..cut]).expect("cut");
            assert!(read_back::<crate::render::memo::Entry>(&path).is_none(), "cut at {cut}");
        }
        std::fs::write(&path, [bytes.as_slice(), &[0]].concat()).expect("longer");
        assert!(read_back::<crate::render::memo::Entry>(&path).is_none(), "a byte after the last block");
        std::fs::write(&path, "tfrs memo entries v2\n[\"c/j\",{}]\n").expect("old form");
        assert!(read_back::<crate::render::memo::Entry>(&path).is_none());
    }

    #[test]
    fn namespace_entries_read_back_as_written() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("c.units");
        let component = |id: &str, sealed: &[&str]| unit::UnitComponent {
            id: id.to_owned(),
            timeout: "15m".to_owned(),
            sealed: sealed.iter().map(|s| (*s).to_owned()).collect(),
        };
        let entry = unit::UnitEntry {
            stamp: "ab".repeat(32),
            reads: [Read::Env("TOKEN".to_owned()), Read::File("keys/a.pem".to_owned(), "spec.yaml".to_owned())].into_iter().collect(),
            components: vec![component("namespaces/acme/namespace", &["c/sealed:x"]), component("namespaces/acme/redis", &[])],
        };
        let bare = unit::UnitEntry { stamp: String::new(), reads: std::collections::BTreeSet::new(), components: Vec::new() };
        let table: BTreeMap<String, unit::UnitEntry> =
            [("c/unit:acme".to_owned(), entry), ("c/unit:bare".to_owned(), bare)].into_iter().collect();
        write(&path, &Slice::all(&table));
        assert_eq!(read_back(&path), Some(table));
    }

    #[test]
    fn a_replaced_memo_file_is_put_aside_and_swept_later() {
        let dir = tempfile::tempdir().expect("temp dir");
        let records = |saved| Records { saved, ..Records::default() };
        let names = |dir: &Path| {
            let mut names: Vec<String> =
                std::fs::read_dir(dir).expect("list").map(|e| e.expect("entry").file_name().to_string_lossy().into_owned()).collect();
            names.sort();
            names
        };
        for saved in [1, 2] {
            let mut staged = Staged::default();
            staged.add(dir.path(), "c", None, &records(saved), None).expect("staged");
            staged.commit().expect("in place");
        }
        assert_eq!(load_records(dir.path(), "c"), records(2), "the new memo is in place");
        let aside = format!(".c.files.{}{ASIDE}", std::process::id());
        assert_eq!(names(dir.path()), vec![aside.clone(), "c.files".to_owned()], "the old one is put aside");
        assert_eq!(Records::from_bytes(&std::fs::read(dir.path().join(&aside)).expect("aside")), records(1));
        // Another memo file named like a temporary is not swept.
        std::fs::write(dir.path().join(".c.jobs.12"), "").expect("temporary");
        remove_aside(dir.path());
        assert_eq!(names(dir.path()), vec![".c.jobs.12".to_owned(), "c.files".to_owned()]);
    }

    #[test]
    fn kept_ids_are_read_back_for_their_tree_only_and_forgotten_with_the_cluster() {
        let dir = tempfile::tempdir().expect("temp dir");
        let id = |n: u8| git2::Oid::from_bytes(&[n; 20]).expect("id");
        let ids = crate::git::commit::ClusterIds {
            dir: "clusters/c".to_owned(),
            tree: id(1),
            files: vec![("clusters/c/a.yaml".to_owned(), id(2))],
            trees: vec![("clusters/c".to_owned(), id(1))],
        };
        let mut staged = Staged::default();
        staged.add_ids(dir.path(), "c", &ids).expect("staged");
        assert_eq!(load_ids(dir.path(), "c", id(1)), None, "not in place before the commit");
        let mut all = Staged::default();
        all.absorb(staged);
        all.commit().expect("in place");
        assert_eq!(load_ids(dir.path(), "c", id(1)), Some(ids));
        assert_eq!(load_ids(dir.path(), "c", id(9)), None, "another tree");
        assert_eq!(load_ids(dir.path(), "other", id(1)), None, "another cluster");
        forget(dir.path(), "c");
        assert_eq!(load_ids(dir.path(), "c", id(1)), None, "forgotten");
    }
}
