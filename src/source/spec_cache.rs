//! The spec cache: the spec files' parsed pieces (`crate::spec::yaml::Pieces`), kept beside the
//! render memo of an output directory (`<memo dir>/specs.cache`) so that a render after a small
//! edit parses only the piece that holds it. Parsing the YAML of a 2,000-server platform is an
//! eighth of a one-server re-render; decoding the kept pieces is a fraction of that.
//!
//! A piece's text may hold literal secret values (`value:` sources), so nothing in the file is
//! plain: each piece is encrypted (AES-256-GCM, a random 96-bit nonce, the build and its id as
//! associated data) and named by an id that is keyed too, `HMAC-SHA256(id key, text)` (its lines
//! are stored counted from its start, so the id need not hold its place). Both keys are derived
//! from the master key (`tfrs/spec-cache-key/v1`), so without it there is no cache, and with
//! another key the file reads as empty. The first line names the tfrs build that wrote it (as
//! the memo does): another build parses everything again. A piece that does not decrypt or
//! decode is parsed; a cache that cannot be read or written costs time, never correctness.

use crate::secrets::MasterKey;
use crate::spec::yaml::{Node, Pieces, stored};
use aes_gcm::aead::{Aead, Payload};
use aes_gcm::{Aes256Gcm, KeyInit};
use hmac::{Hmac, Mac};
use sha2::Sha256;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use zeroize::Zeroizing;

/// The file's name in the memo directory.
const FILE: &str = "specs.cache";
/// How the first line begins; the build id follows.
const HEADER: &str = "tfrs spec cache v1";
/// The largest cache file read (the 2,000-server platform's is under 4 MB).
const MAX_FILE: u64 = 1 << 30;
/// The length of an id and of a nonce.
const ID: usize = 32;
const NONCE: usize = 12;

/// A piece's id: the keyed digest of its text.
type Id = [u8; ID];

/// The spec cache of one memo directory, as a render reads and adds to it.
pub(crate) struct SpecCache {
    path: PathBuf,
    build: String,
    ids: Zeroizing<[u8; 32]>,
    cipher: Aes256Gcm,
    /// The file as read.
    file: Vec<u8>,
    /// Where in `file` each piece's nonce and ciphertext are, by id.
    found: HashMap<Id, std::ops::Range<usize>>,
    /// The ids of `found` this run took (two pieces of the same text are one).
    taken: Mutex<HashSet<Id>>,
    /// The pieces this run parsed, sealed.
    added: Mutex<Vec<(Id, Vec<u8>)>>,
}

impl SpecCache {
    /// The cache in memo directory `dir` for `master`: what its file holds when a build like
    /// this one wrote it, else nothing.
    pub(crate) fn open(dir: &Path, master: &MasterKey) -> SpecCache {
        SpecCache::open_for(dir, master, super::memo_cache::build_id())
    }

    /// [`SpecCache::open`] for the build named `build`.
    fn open_for(dir: &Path, master: &MasterKey, build: String) -> SpecCache {
        let key = master.spec_cache_key();
        let derived = |label: &[u8]| Zeroizing::new(keyed(key.as_slice(), label));
        let cipher = Aes256Gcm::new_from_slice(derived(b"encryption").as_slice()).expect("a 32-byte key");
        let path = dir.join(FILE);
        // NB: a file larger than any cache of a real platform is not one this build wrote.
        let small = std::fs::metadata(&path).is_ok_and(|m| m.len() <= MAX_FILE);
        let file = if small { std::fs::read(&path).unwrap_or_default() } else { Vec::new() };
        let found = read(&file, &build).unwrap_or_default();
        SpecCache { path, build, ids: derived(b"ids"), cipher, file, found, taken: Mutex::default(), added: Mutex::default() }
    }

    /// A piece's id: its text only (its lines are kept relative to its start, so a piece moved
    /// down by an edit above it is still found).
    fn id(&self, text: &str) -> Id {
        keyed(self.ids.as_slice(), text.as_bytes())
    }

    /// What a piece's ciphertext is bound to: the build that wrote it (the header is not
    /// trusted on its own) and its id.
    fn associated(&self, id: &Id) -> Vec<u8> {
        let mut associated = self.build.as_bytes().to_vec();
        associated.push(0);
        associated.extend_from_slice(id);
        associated
    }

    /// Writes the pieces this run took or added, unless that is what the file holds already.
    /// Best effort: a cache that cannot be written is parsed again next time.
    pub(crate) fn save(self) {
        let taken = self.taken.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner);
        let added = self.added.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner);
        if added.is_empty() && taken.len() == self.found.len() {
            return;
        }
        let (file, found) = (&self.file, &self.found);
        let mut pieces: Vec<(Id, &[u8])> = taken.into_iter().filter_map(|id| Some((id, &file[found.get(&id)?.clone()]))).collect();
        pieces.extend(added.iter().map(|(id, sealed)| (*id, sealed.as_slice())));
        pieces.sort_by_key(|piece| piece.0);
        pieces.dedup_by(|a, b| a.0 == b.0);
        let mut bytes = format!("{HEADER} {}\n", self.build).into_bytes();
        bytes.reserve(pieces.iter().map(|(_, sealed)| ID + 8 + sealed.len()).sum());
        for (id, sealed) in &pieces {
            bytes.extend_from_slice(id);
            bytes.extend_from_slice(&(sealed.len() as u64).to_be_bytes());
            bytes.extend_from_slice(sealed);
        }
        // NB: named like a memo file put aside, so that a file a killed run left is swept with
        // them; made anew (never through a link left at that name).
        let temporary = self.path.with_file_name(format!(".{FILE}.{}{}", std::process::id(), super::memo_cache::ASIDE));
        // NB: the memo directory of a first render is made here, before the memo's own save.
        if let Some(dir) = self.path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let _ = std::fs::remove_file(&temporary);
        let written = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temporary)
            .and_then(|mut file| std::io::Write::write_all(&mut file, &bytes))
            .and_then(|()| std::fs::rename(&temporary, &self.path));
        if written.is_err() {
            let _ = std::fs::remove_file(&temporary);
        }
    }
}

/// `HMAC-SHA256(key, data)`.
fn keyed(key: &[u8], data: &[u8]) -> [u8; 32] {
    let mut mac = <Hmac<Sha256> as hmac::KeyInit>::new_from_slice(key).expect("HMAC takes any key length");
    mac.update(data);
    mac.finalize().into_bytes().into()
}

/// Where the pieces of a cache file's `bytes` written by build `build` are; `None` for any
/// other file.
fn read(bytes: &[u8], build: &str) -> Option<HashMap<Id, std::ops::Range<usize>>> {
    let end = memchr::memchr(b'\n', bytes)?;
    (bytes[..end] == *format!("{HEADER} {build}").as_bytes()).then_some(())?;
    let mut found = HashMap::new();
    let mut at = end + 1;
    while at < bytes.len() {
        let id: Id = bytes.get(at..at + ID)?.try_into().ok()?;
        let length = usize::try_from(u64::from_be_bytes(bytes.get(at + ID..at + ID + 8)?.try_into().ok()?)).ok()?;
        let start = at + ID + 8;
        let end = start.checked_add(length).filter(|end| *end <= bytes.len())?;
        found.insert(id, start..end);
        at = end;
    }
    Some(found)
}

impl Pieces for SpecCache {
    fn get(&self, file: usize, text: &str, lines: usize) -> Option<(Vec<Node>, usize)> {
        let id = self.id(text);
        let sealed = &self.file[self.found.get(&id)?.clone()];
        let (nonce, ciphertext) = sealed.split_at_checked(NONCE)?;
        let nonce: [u8; NONCE] = nonce.try_into().ok()?;
        let plain = Zeroizing::new(self.cipher.decrypt(&nonce.into(), Payload { msg: ciphertext, aad: &self.associated(&id) }).ok()?);
        let decoded = stored::decode(&plain, file, lines)?;
        self.taken.lock().unwrap_or_else(std::sync::PoisonError::into_inner).insert(id);
        Some(decoded)
    }

    fn put(&self, text: &str, lines: usize, documents: &[Node], nodes: usize) {
        use rand::Rng as _;
        let id = self.id(text);
        let plain = Zeroizing::new(stored::encode(documents, nodes, lines));
        let mut nonce = [0u8; NONCE];
        rand::rng().fill_bytes(&mut nonce);
        let Ok(ciphertext) = self.cipher.encrypt(&nonce.into(), Payload { msg: &plain, aad: &self.associated(&id) }) else { return };
        let mut sealed = nonce.to_vec();
        sealed.extend(ciphertext);
        self.added.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push((id, sealed));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::yaml::parse_kept;

    const TEXT: &str = "kind: TFRTenant\nmetadata: { name: acme }\nspec:\n  redis: { password: { value: hunter2 } }\n";

    #[test]
    fn a_piece_parsed_once_is_taken_from_the_cache_the_next_time_and_holds_nothing_plain() {
        let dir = tempfile::tempdir().unwrap();
        let key = MasterKey::from_bytes([5; 32]);
        let cache = SpecCache::open(dir.path(), &key);
        let parsed = parse_kept(2, TEXT, Some(&cache)).expect("parses");
        assert_eq!(cache.added.lock().unwrap().len(), 1, "parsed and kept");
        cache.save();
        let bytes = std::fs::read(dir.path().join(FILE)).unwrap();
        assert!(!String::from_utf8_lossy(&bytes).contains("hunter2") && !String::from_utf8_lossy(&bytes).contains("acme"));

        let cache = SpecCache::open(dir.path(), &key);
        let again = parse_kept(7, TEXT, Some(&cache)).expect("parses");
        assert!(cache.added.lock().unwrap().is_empty(), "taken, not parsed");
        assert_eq!(again, crate::spec::yaml::parse(7, TEXT).unwrap(), "the same nodes, in the file asked for");
        assert_ne!(again, parsed, "another file index");
        cache.save();
        assert_eq!(std::fs::read(dir.path().join(FILE)).unwrap(), bytes, "nothing new: the file is not written again");

        // Another master key reads nothing; an edited text is parsed again.
        let other = SpecCache::open(dir.path(), &MasterKey::from_bytes([6; 32]));
        assert!(other.get(2, TEXT, 0).is_none());
        let cache = SpecCache::open(dir.path(), &key);
        assert!(cache.get(2, &TEXT.replace("acme", "acmf"), 0).is_none());
        let (moved, _) = cache.get(2, TEXT, 10).expect("the same text further down is found");
        let below = crate::spec::yaml::parse(2, &format!("{}{TEXT}", "\n".repeat(10))).unwrap();
        assert_eq!(moved, below, "its lines moved with it");
    }

    #[test]
    fn two_pieces_of_one_text_are_one_and_an_unchanged_cache_is_not_written_again() {
        use std::os::unix::fs::MetadataExt as _;
        let dir = tempfile::tempdir().unwrap();
        let key = MasterKey::from_bytes([5; 32]);
        let run = || {
            let cache = SpecCache::open(dir.path(), &key);
            parse_kept(0, TEXT, Some(&cache)).expect("parses");
            parse_kept(1, TEXT, Some(&cache)).expect("parses");
            cache.save();
            std::fs::metadata(dir.path().join(FILE)).unwrap().ino()
        };
        let first = run();
        assert_eq!(run(), first, "the same file, not one written again");
    }

    #[test]
    fn a_piece_is_bound_to_the_build_that_wrote_it_whatever_the_header_says() {
        let dir = tempfile::tempdir().unwrap();
        let key = MasterKey::from_bytes([5; 32]);
        let cache = SpecCache::open_for(dir.path(), &key, "build-a".to_owned());
        parse_kept(0, TEXT, Some(&cache)).expect("parses");
        cache.save();
        let path = dir.path().join(FILE);
        assert!(SpecCache::open_for(dir.path(), &key, "build-a".to_owned()).get(0, TEXT, 0).is_some());
        let bytes = std::fs::read(&path).unwrap();
        let body = &bytes[memchr::memchr(b'\n', &bytes).unwrap()..];
        std::fs::write(&path, [format!("{HEADER} build-b").as_bytes(), body].concat()).unwrap();
        let other = SpecCache::open_for(dir.path(), &key, "build-b".to_owned());
        assert_eq!(other.found.len(), 1, "the header is read");
        assert!(other.get(0, TEXT, 0).is_none(), "but the piece was sealed for another build");
    }

    #[test]
    fn a_damaged_or_foreign_file_is_an_empty_cache() {
        let dir = tempfile::tempdir().unwrap();
        let key = MasterKey::from_bytes([5; 32]);
        let cache = SpecCache::open(dir.path(), &key);
        parse_kept(0, TEXT, Some(&cache)).expect("parses");
        cache.save();
        let path = dir.path().join(FILE);
        let bytes = std::fs::read(&path).unwrap();
        let mut flipped = bytes.clone();
        let last = flipped.len() - 1;
        flipped[last] ^= 1;
        std::fs::write(&path, &flipped).unwrap();
        assert!(SpecCache::open(dir.path(), &key).get(0, TEXT, 0).is_none(), "a changed byte fails authentication");
        std::fs::write(&path, &bytes[..bytes.len() - 3]).unwrap();
        assert!(SpecCache::open(dir.path(), &key).found.is_empty(), "cut short");
        let foreign = String::from_utf8_lossy(&bytes).replacen(HEADER, "tfrs spec cache v0", 1);
        std::fs::write(&path, foreign.as_bytes()).unwrap();
        assert!(SpecCache::open(dir.path(), &key).found.is_empty(), "another format or build");
    }
}
