//! Writing new objects as one pack: [`write()`] compresses the objects in parallel (no deltas),
//! writes the pack and its version-2 index under `objects/pack/`, syncs both to disk and only
//! then renames them into place (the index last, as git does), so a reader sees all of the pack
//! or none of it, and a ref moved afterwards never points at objects that are not on disk.
//!
//! The pack format is git's `Documentation/gitformat-pack.txt`: a 12-byte header, each object
//! as a type-and-size header and its zlib stream, the SHA-1 of all that; the index: magic,
//! version, the 256-entry fan-out, the sorted ids, each entry's CRC-32, the offsets (and the
//! 64-bit ones past 2 GiB), the pack's checksum and its own.

use git2::{ObjectType, Oid, Repository};
use rayon::prelude::*;
use sha1::{Digest, Sha1};
use std::borrow::Cow;
use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// An object to store.
#[derive(Debug, Clone)]
pub struct Object<'a> {
    /// Its id (`Oid::hash_object` of `kind` and `data`).
    pub id: Oid,
    /// Commit, tree, blob or tag.
    pub kind: ObjectType,
    /// The object's content, without git's `<kind> <size>\0` header.
    pub data: Cow<'a, [u8]>,
}

impl<'a> Object<'a> {
    /// The object of `kind` holding `data`, with its id computed.
    ///
    /// # Errors
    ///
    /// `kind` is not a storable kind.
    pub fn new(kind: ObjectType, data: Cow<'a, [u8]>) -> Result<Self, git2::Error> {
        Ok(Object { id: id_of(kind, &data)?, kind, data })
    }
}

/// Tree entry modes, as git writes them: a directory, a regular file.
pub const TREE_MODE: i32 = 0o040_000;
/// See [`TREE_MODE`].
pub const BLOB_MODE: i32 = 0o100_644;

/// Appends a tree's entry to its `data`, as git writes it: `<mode in octal> <name>\0<id>`.
pub fn push_tree_entry(data: &mut Vec<u8>, mode: i32, name: &[u8], id: Oid) {
    data.extend_from_slice(format!("{mode:o} ").as_bytes());
    data.extend_from_slice(name);
    data.push(0);
    data.extend_from_slice(id.as_bytes());
}

/// Whether `name` can name a file or directory in a tree tfrs writes: not empty, `.`, `..` or
/// `.git` (in any case), and without `/` or NUL.
#[must_use]
pub fn usable_name(name: &[u8]) -> bool {
    !matches!(name, b"" | b"." | b"..") && !name.eq_ignore_ascii_case(b".git") && !name.contains(&b'/') && !name.contains(&0)
}

/// The content id of a blob of id `id`: the same 20 bytes (a content id is a blob id).
#[must_use]
pub fn content_id(id: Oid) -> Option<crate::object::ContentId> {
    Some(crate::object::ContentId(id.as_bytes().try_into().ok()?))
}

/// The id git gives an object of `kind` holding `data`: SHA-1 over `<kind> <size>\0` and
/// `data`, as `Oid::hash_object` computes it (with the CPU's SHA instructions where it has them,
/// several times faster than libgit2's collision-detecting SHA-1 on a whole tree's blobs).
///
/// # Errors
///
/// `kind` is not a storable kind.
pub fn id_of(kind: ObjectType, data: &[u8]) -> Result<Oid, git2::Error> {
    if !kind.is_loose() {
        return Err(git2::Error::from_str(&format!("`{kind}` is not a kind of object git stores")));
    }
    let mut hasher = Sha1::new();
    hasher.update(format!("{kind} {}\0", data.len()).as_bytes());
    hasher.update(data);
    Oid::from_bytes(&hasher.finalize())
}

/// A pack written by [`write()`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    /// `objects/pack/pack-<checksum>.pack`.
    pub pack: PathBuf,
    /// How many objects it holds.
    pub objects: usize,
}

/// A failure to write the pack, with the file it concerned.
#[derive(Debug, thiserror::Error)]
#[error("cannot write the pack `{}`", path.display())]
pub struct Error {
    /// The file or directory.
    pub path: PathBuf,
    /// The cause.
    #[source]
    pub source: io::Error,
}

fn at(path: &Path) -> impl FnOnce(io::Error) -> Error + '_ {
    move |source| Error { path: path.to_owned(), source }
}

fn type_code(kind: ObjectType) -> io::Result<u8> {
    match kind {
        ObjectType::Commit => Ok(1),
        ObjectType::Tree => Ok(2),
        ObjectType::Blob => Ok(3),
        ObjectType::Tag => Ok(4),
        other => Err(io::Error::new(io::ErrorKind::InvalidInput, format!("a {other} is not a storable object"))),
    }
}

/// One object as stored in the pack: the type-and-size header, then the zlib stream.
fn entry(object: &Object<'_>) -> io::Result<Vec<u8>> {
    let mut size = object.data.len();
    let mut out = Vec::with_capacity(size / 3 + 32);
    // Low 4 bits of the size beside the type, then 7 bits a byte, high bit set while more follow.
    let mut byte = (type_code(object.kind)? << 4) | (size & 0x0f) as u8;
    size >>= 4;
    while size > 0 {
        out.push(byte | 0x80);
        byte = (size & 0x7f) as u8;
        size >>= 7;
    }
    out.push(byte);
    // Level 1, as git and libgit2 use for loose objects: `git gc` recompresses with deltas later.
    let mut encoder = flate2::write::ZlibEncoder::new(out, flate2::Compression::fast());
    encoder.write_all(&object.data)?;
    encoder.finish()
}

/// Writes `bytes` to a new temporary file in `dir`, synced to disk; returns its path.
fn write_temporary(dir: &Path, what: &str, bytes: &[&[u8]]) -> Result<PathBuf, Error> {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
    let path = dir.join(format!("tmp_{what}_tfrs_{}_{nanos}", std::process::id()));
    let result = (|| {
        let mut file = File::options().write(true).create_new(true).open(&path)?;
        for part in bytes {
            file.write_all(part)?;
        }
        file.sync_all()?;
        let mut permissions = file.metadata()?.permissions();
        permissions.set_readonly(true);
        file.set_permissions(permissions)
    })();
    match result {
        Ok(()) => Ok(path),
        Err(source) => {
            let _ = std::fs::remove_file(&path);
            Err(Error { path, source })
        }
    }
}

/// Stores `objects` in `repo` as one pack (an empty list writes nothing) and makes the
/// repository's object database see it. Duplicates are the caller's to remove.
///
/// # Errors
///
/// The pack directory cannot be created or written; an object of a kind that cannot be stored.
pub fn write(repo: &Repository, objects: &[Object<'_>]) -> Result<Option<Written>, Error> {
    if objects.is_empty() {
        return Ok(None);
    }
    let dir = repo.commondir().join("objects").join("pack");
    std::fs::create_dir_all(&dir).map_err(at(&dir))?;
    let entries: Vec<Vec<u8>> = objects.par_iter().map(entry).collect::<io::Result<_>>().map_err(at(&dir))?;
    let crcs: Vec<u32> = entries.par_iter().map(|e| crc32fast::hash(e)).collect();

    let count = u32::try_from(objects.len()).map_err(|_| io::Error::other("more than 2^32 objects")).map_err(at(&dir))?;
    let mut header = Vec::with_capacity(12);
    header.extend_from_slice(b"PACK");
    header.extend_from_slice(&2u32.to_be_bytes());
    header.extend_from_slice(&count.to_be_bytes());
    let mut hasher = Sha1::new();
    hasher.update(&header);
    let mut offsets = Vec::with_capacity(entries.len());
    let mut offset = header.len() as u64;
    for entry in &entries {
        offsets.push(offset);
        hasher.update(entry);
        offset += entry.len() as u64;
    }
    let checksum: [u8; 20] = hasher.finalize().into();

    let index = index(objects, &offsets, &crcs, &checksum);
    let mut parts: Vec<&[u8]> = Vec::with_capacity(entries.len() + 2);
    parts.push(&header);
    parts.extend(entries.iter().map(Vec::as_slice));
    parts.push(&checksum);
    let name = format!("pack-{}", Oid::from_bytes(&checksum).map_err(|e| at(&dir)(io::Error::other(e.message().to_owned())))?);
    let temporary_pack = write_temporary(&dir, "pack", &parts)?;
    let temporary_index = match write_temporary(&dir, "idx", &[&index]) {
        Ok(path) => path,
        Err(error) => {
            let _ = std::fs::remove_file(&temporary_pack);
            return Err(error);
        }
    };
    let pack = dir.join(format!("{name}.pack"));
    let idx = dir.join(format!("{name}.idx"));
    // The pack first: git and libgit2 find packs by their index.
    for (from, to) in [(&temporary_pack, &pack), (&temporary_index, &idx)] {
        if let Err(source) = std::fs::rename(from, to) {
            let _ = std::fs::remove_file(&temporary_pack);
            let _ = std::fs::remove_file(&temporary_index);
            return Err(Error { path: to.clone(), source });
        }
    }
    // The renames themselves are durable once the directory is synced.
    #[cfg(unix)]
    File::open(&dir).and_then(|d| d.sync_all()).map_err(at(&dir))?;
    repo.odb().and_then(|odb| odb.refresh()).map_err(|e| Error { path: idx.clone(), source: io::Error::other(e.message().to_owned()) })?;
    Ok(Some(Written { pack, objects: objects.len() }))
}

/// The version-2 index of a pack holding `objects` at `offsets`.
fn index(objects: &[Object<'_>], offsets: &[u64], crcs: &[u32], checksum: &[u8; 20]) -> Vec<u8> {
    let mut order: Vec<usize> = (0..objects.len()).collect();
    order.sort_unstable_by(|&a, &b| objects[a].id.as_bytes().cmp(objects[b].id.as_bytes()));
    let mut out = Vec::with_capacity(8 + 256 * 4 + objects.len() * 28 + 40);
    out.extend_from_slice(b"\xfftOc");
    out.extend_from_slice(&2u32.to_be_bytes());
    let mut fanout = [0u32; 256];
    for object in objects {
        fanout[usize::from(object.id.as_bytes()[0])] += 1;
    }
    let mut total = 0u32;
    for slot in fanout {
        total += slot;
        out.extend_from_slice(&total.to_be_bytes());
    }
    for &i in &order {
        out.extend_from_slice(objects[i].id.as_bytes());
    }
    for &i in &order {
        out.extend_from_slice(&crcs[i].to_be_bytes());
    }
    let mut large = Vec::new();
    for &i in &order {
        let small = match u32::try_from(offsets[i]) {
            Ok(small) if small < 0x8000_0000 => small,
            _ => {
                large.push(offsets[i]);
                0x8000_0000 | (large.len() - 1) as u32
            }
        };
        out.extend_from_slice(&small.to_be_bytes());
    }
    for offset in large {
        out.extend_from_slice(&offset.to_be_bytes());
    }
    out.extend_from_slice(checksum);
    let own: [u8; 20] = Sha1::digest(&out).into();
    out.extend_from_slice(&own);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_ids_are_libgit2s() {
        let long: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        for kind in [ObjectType::Blob, ObjectType::Tree, ObjectType::Commit, ObjectType::Tag] {
            for data in [&b""[..], b"x", b"kind: ConfigMap\n", &long] {
                assert_eq!(id_of(kind, data).expect("id"), Oid::hash_object(kind, data).expect("id"), "{kind} of {} bytes", data.len());
            }
        }
        assert!(id_of(ObjectType::Any, b"x").is_err());
    }

    fn bare() -> (tempfile::TempDir, Repository) {
        let dir = tempfile::tempdir().expect("temp dir");
        let repo = Repository::init_bare(dir.path()).expect("init");
        (dir, repo)
    }

    fn blob(bytes: &[u8]) -> Object<'_> {
        Object::new(ObjectType::Blob, Cow::Borrowed(bytes)).expect("blob")
    }

    #[test]
    fn objects_read_back_from_the_pack_and_git_verifies_it() {
        let (dir, repo) = bare();
        let big: Vec<u8> = (0..200_000u32).flat_map(|i| format!("line {i}\n").into_bytes()).collect();
        let objects = vec![blob(b""), blob(b"a\n"), blob(&big)];
        let written = write(&repo, &objects).expect("writes").expect("a pack");
        assert_eq!(written.objects, 3);
        for object in &objects {
            assert_eq!(repo.find_blob(object.id).expect("found").content(), &object.data[..]);
        }
        let pack_dir = dir.path().join("objects/pack");
        let mut names: Vec<String> =
            std::fs::read_dir(&pack_dir).expect("pack dir").map(|e| e.expect("entry").file_name().to_string_lossy().into_owned()).collect();
        names.sort();
        let stem = written.pack.file_stem().expect("stem").to_string_lossy().into_owned();
        assert_eq!(names, [format!("{stem}.idx"), format!("{stem}.pack")], "no temporary file is left behind");
        if let Ok(out) = std::process::Command::new("git").arg("verify-pack").arg("-v").arg(pack_dir.join(format!("{stem}.idx"))).output() {
            assert!(out.status.success(), "git verify-pack: {}", String::from_utf8_lossy(&out.stderr));
        }
    }

    #[test]
    fn nothing_to_write_writes_no_pack() {
        let (dir, repo) = bare();
        assert_eq!(write(&repo, &[]).expect("writes"), None);
        assert!(!dir.path().join("objects/pack").read_dir().expect("pack dir").any(|_| true));
    }

    #[test]
    fn a_large_offset_goes_to_the_64_bit_table() {
        let objects = vec![blob(b"a\n"), blob(b"b\n")];
        let checksum = [7u8; 20];
        let index = index(&objects, &[12, 0x9_0000_0000], &[1, 2], &checksum);
        let n = 2;
        let offsets_at = 8 + 256 * 4 + n * 20 + n * 4;
        let large_at = offsets_at + n * 4;
        assert_eq!(index.len(), large_at + 8 + 40);
        let sorted_first = usize::from(objects[0].id.as_bytes() > objects[1].id.as_bytes());
        let word = |at: usize| u32::from_be_bytes(index[at..at + 4].try_into().expect("4 bytes"));
        let (small, big) = if sorted_first == 0 { (offsets_at, offsets_at + 4) } else { (offsets_at + 4, offsets_at) };
        assert_eq!(word(small), 12);
        assert_eq!(word(big), 0x8000_0000);
        assert_eq!(u64::from_be_bytes(index[large_at..large_at + 8].try_into().expect("8 bytes")), 0x9_0000_0000);
    }
}
