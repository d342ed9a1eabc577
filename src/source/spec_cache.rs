//! The spec cache: the spec files' parsed pieces (`crate::spec::yaml::Pieces`), kept beside the
//! render memo of an output directory (`<memo dir>/specs.cache`) so that a render after a small
//! edit parses only the piece that holds it. Parsing the YAML of a 2,000-server platform is an
//! eighth of a one-server re-render; decoding the kept pieces is a fraction of that.
//!
//! A piece's text may hold literal secret values (`value:` sources), so nothing in the file is
//! plain: each piece is encrypted (AES-256-GCM, a random 96-bit nonce, its id as associated
//! data) and named by an id that is keyed too, `HMAC-SHA256(id key, lines ‖ text)`. Both keys
//! are derived from the master key (`tfrs/spec-cache-key/v1`), so without it there is no cache,
//! and with another key the file reads as empty. The first line names the tfrs build that wrote
//! it (as the memo does): another build parses everything again. A piece that does not decrypt
//! or decode is parsed; a cache that cannot be read or written costs time, never correctness.

use crate::secrets::MasterKey;
use crate::spec::yaml::{Node, Pieces, stored};
use aes_gcm::aead::{Aead, Payload};
use aes_gcm::{Aes256Gcm, KeyInit};
use hmac::{Hmac, Mac};
use sha2::Sha256;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use zeroize::Zeroizing;

/// The file's name in the memo directory.
const FILE: &str = "specs.cache";
/// How the first line begins; the build id follows.
const HEADER: &str = "tfrs spec cache v1";
/// The length of an id and of a nonce.
const ID: usize = 32;
const NONCE: usize = 12;

/// A piece's id: the keyed digest of its text and the lines before it.
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
    /// The ids of `found` this run took.
    taken: Mutex<Vec<Id>>,
    /// The pieces this run parsed, sealed.
    added: Mutex<Vec<(Id, Vec<u8>)>>,
}

impl SpecCache {
    /// The cache in memo directory `dir` for `master`: what its file holds when a build like
    /// this one wrote it, else nothing.
    pub(crate) fn open(dir: &Path, master: &MasterKey) -> SpecCache {
        let key = master.spec_cache_key();
        let derived = |label: &[u8]| -> Zeroizing<[u8; 32]> {
            let mut mac = <Hmac<Sha256> as hmac::KeyInit>::new_from_slice(key.as_slice()).expect("HMAC takes any key length");
            mac.update(label);
            Zeroizing::new(mac.finalize().into_bytes().into())
        };
        let cipher = Aes256Gcm::new_from_slice(derived(b"encryption").as_slice()).expect("a 32-byte key");
        let path = dir.join(FILE);
        let build = super::memo_cache::build_id();
        let file = std::fs::read(&path).unwrap_or_default();
        let found = read(&file, &build).unwrap_or_default();
        SpecCache { path, build, ids: derived(b"ids"), cipher, file, found, taken: Mutex::default(), added: Mutex::default() }
    }

    fn id(&self, text: &str, lines: usize) -> Id {
        let mut mac = <Hmac<Sha256> as hmac::KeyInit>::new_from_slice(self.ids.as_slice()).expect("HMAC takes any key length");
        mac.update(&(lines as u64).to_be_bytes());
        mac.update(text.as_bytes());
        mac.finalize().into_bytes().into()
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
        let temporary = self.path.with_file_name(format!(".{FILE}.{}", std::process::id()));
        // NB: the memo directory of a first render is made here, before the memo's own save.
        if let Some(dir) = self.path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        if std::fs::write(&temporary, &bytes).and_then(|()| std::fs::rename(&temporary, &self.path)).is_err() {
            let _ = std::fs::remove_file(&temporary);
        }
    }
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
        let id = self.id(text, lines);
        let sealed = &self.file[self.found.get(&id)?.clone()];
        let (nonce, ciphertext) = sealed.split_at_checked(NONCE)?;
        let nonce: [u8; NONCE] = nonce.try_into().ok()?;
        let plain = Zeroizing::new(self.cipher.decrypt(&nonce.into(), Payload { msg: ciphertext, aad: &id }).ok()?);
        let decoded = stored::decode(&plain, file)?;
        self.taken.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(id);
        Some(decoded)
    }

    fn put(&self, text: &str, lines: usize, documents: &[Node], nodes: usize) {
        use rand::Rng as _;
        let id = self.id(text, lines);
        let plain = Zeroizing::new(stored::encode(documents, nodes));
        let mut nonce = [0u8; NONCE];
        rand::rng().fill_bytes(&mut nonce);
        let Ok(ciphertext) = self.cipher.encrypt(&nonce.into(), Payload { msg: &plain, aad: &id }) else { return };
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
        assert!(cache.get(2, TEXT, 1).is_none(), "the lines before it are part of its id");
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
