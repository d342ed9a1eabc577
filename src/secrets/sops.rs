//! SOPS with age recipients, exactly as `sops` 3.x writes and reads it (what Flux decrypts).
//!
//! - A random 32-byte data key; every value under a key matching `^(data|stringData)$` is
//!   AES-256-GCM encrypted with a random **32-byte** IV and the key path as AAD
//!   (`stringData:password:`; list indices are not part of the path), written as
//!   `ENC[AES256_GCM,data:…,iv:…,tag:…,type:str]`. Empty strings stay `""`.
//! - MAC: SHA-512 over the plaintext bytes of every leaf (encrypted or not) in document order,
//!   uppercase hex, encrypted like a value with `lastmodified` as AAD.
//! - The data key is wrapped once per recipient as an armored age file.
//!
//! Randomness: the data key and IVs come from the injected RNG; the age wrapping uses the age
//! crate's own OS randomness (its ephemeral keys), so `sops.age[].enc` differs run to run.

use aes_gcm::aead::consts::U32;
use aes_gcm::aead::{Aead, Payload};
use aes_gcm::aes::Aes256;
use aes_gcm::{AesGcm, KeyInit};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use rand::CryptoRng;
use serde_json::{Map, Value as Json};
use sha2::{Digest, Sha512};
use std::str::FromStr;
use zeroize::Zeroizing;

/// The `sops.version` we write (a three-part string: YAML would read `3.11` as a float).
pub const VERSION: &str = "3.11.0";
/// The encryption rule we write: everything under `data` / `stringData`.
pub const ENCRYPTED_REGEX: &str = "^(data|stringData)$";
/// sops's default rule, which [`Rule::Every`] writes: a key ending so stays plaintext (we write
/// no such key).
pub const UNENCRYPTED_SUFFIX: &str = "_unencrypted";

type Cipher = AesGcm<Aes256, U32>;

/// Errors of this module. None holds a plaintext or a key.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The document is not a map, or has a top-level `sops` key already.
    #[error("cannot encrypt: {0}")]
    Input(String),
    /// A recipient is not an `age1…` X25519 recipient.
    #[error("`{0}` is not an age X25519 recipient (`age1…`)")]
    Recipient(String),
    /// No recipients.
    #[error("no age recipients")]
    NoRecipients,
    /// `lastmodified` is not `YYYY-MM-DDTHH:MM:SSZ`.
    #[error("`lastmodified` must be RFC 3339 UTC with whole seconds and `Z`, e.g. `2025-01-02T03:04:05Z`")]
    Lastmodified,
    /// age refused to encrypt.
    #[error("age encryption failed: {0}")]
    Age(String),
    /// The document has no usable `sops` metadata.
    #[error("not a SOPS file: {0}")]
    NotSops(String),
    /// The identity text holds no `AGE-SECRET-KEY-1…` line, or a bad one.
    #[error("no usable age identity (`AGE-SECRET-KEY-1…` line) in the identity file")]
    Identity,
    /// None of the identities opens any `sops.age[].enc`.
    #[error("none of the given age identities matches a recipient of this file ({0})")]
    NoMatchingIdentity(String),
    /// An `ENC[…]` value is malformed.
    #[error("malformed encrypted value at `{0}`")]
    Malformed(String),
    /// An `ENC[…]` value does not decrypt (wrong key, moved, tampered).
    #[error("the value at `{0}` does not decrypt (tampered, or moved to another key)")]
    Decrypt(String),
    /// The MAC does not match the content.
    #[error("MAC mismatch: the file was modified after encryption")]
    MacMismatch,
}

/// Whether `document` looks like a SOPS-encrypted file (a top-level `sops` with a `mac`, as
/// Flux tests it).
#[must_use]
pub fn is_sops(document: &Json) -> bool {
    document.get("sops").and_then(|s| s.get("mac")).and_then(Json::as_str).is_some_and(|m| !m.is_empty())
}

/// The `sops.age[].recipient`s of a SOPS file, sorted.
#[must_use]
pub fn recipients_of(document: &Json) -> Vec<String> {
    let mut recipients: Vec<String> = document
        .get("sops")
        .and_then(|s| s.get("age"))
        .and_then(Json::as_array)
        .map(|list| list.iter().filter_map(|e| e.get("recipient").and_then(Json::as_str).map(str::to_owned)).collect())
        .unwrap_or_default();
    recipients.sort();
    recipients
}

fn is_lastmodified(text: &str) -> bool {
    let b = text.as_bytes();
    b.len() == 20
        && b.iter().enumerate().all(|(i, &c)| match i {
            4 | 7 => c == b'-',
            10 => c == b'T',
            13 | 16 => c == b':',
            19 => c == b'Z',
            _ => c.is_ascii_digit(),
        })
}

fn encrypt_one<R: CryptoRng + ?Sized>(key: &[u8; 32], plaintext: &[u8], aad: &[u8], kind: &str, rng: &mut R) -> String {
    let mut iv = [0u8; 32];
    rng.fill_bytes(&mut iv);
    let cipher = Cipher::new_from_slice(key).expect("32-byte key");
    let sealed = cipher.encrypt(&iv.into(), Payload { msg: plaintext, aad }).expect("AES-GCM encrypts any practical length");
    let (data, tag) = sealed.split_at(sealed.len() - 16);
    format!("ENC[AES256_GCM,data:{},iv:{},tag:{},type:{kind}]", STANDARD.encode(data), STANDARD.encode(iv), STANDARD.encode(tag))
}

/// Decrypts one `ENC[…]`: the plaintext and its type.
fn decrypt_one(key: &[u8; 32], text: &str, aad: &[u8], at: &str) -> Result<(Zeroizing<Vec<u8>>, String), Error> {
    let malformed = || Error::Malformed(at.to_owned());
    let inner = text.strip_prefix("ENC[AES256_GCM,").and_then(|t| t.strip_suffix(']')).ok_or_else(malformed)?;
    let (mut data, mut iv, mut tag, mut kind) = (None, None, None, None);
    for part in inner.split(',') {
        let (name, value) = part.split_once(':').ok_or_else(malformed)?;
        match name {
            "data" => data = Some(STANDARD.decode(value).map_err(|_| malformed())?),
            "iv" => iv = Some(STANDARD.decode(value).map_err(|_| malformed())?),
            "tag" => tag = Some(STANDARD.decode(value).map_err(|_| malformed())?),
            "type" => kind = Some(value.to_owned()),
            _ => return Err(malformed()),
        }
    }
    let (Some(mut data), Some(iv), Some(tag), Some(kind)) = (data, iv, tag, kind) else { return Err(malformed()) };
    let iv: [u8; 32] = iv.try_into().map_err(|_| malformed())?;
    if tag.len() != 16 {
        return Err(malformed());
    }
    data.extend_from_slice(&tag);
    let cipher = Cipher::new_from_slice(key).expect("32-byte key");
    let plaintext = cipher.decrypt(&iv.into(), Payload { msg: &data, aad }).map_err(|_| Error::Decrypt(at.to_owned()))?;
    Ok((Zeroizing::new(plaintext), kind))
}

/// The plaintext bytes of an unencrypted leaf, as sops hashes it (`ToBytes`). `None`: no leaf.
fn leaf_bytes(value: &Json) -> Option<Vec<u8>> {
    match value {
        Json::String(s) => Some(s.as_bytes().to_vec()),
        Json::Bool(b) => Some(if *b { b"True".to_vec() } else { b"False".to_vec() }),
        Json::Number(n) => Some(n.to_string().into_bytes()),
        Json::Null | Json::Array(_) | Json::Object(_) => None,
    }
}

fn aad(path: &[String]) -> String {
    let mut text = path.join(":");
    text.push(':');
    text
}

fn should_encrypt(path: &[String]) -> bool {
    path.iter().any(|k| k == "data" || k == "stringData")
}

struct Encrypter<'a, R: ?Sized> {
    key: &'a [u8; 32],
    mac: Sha512,
    rng: &'a mut R,
    rule: Rule,
}

impl<R: CryptoRng + ?Sized> Encrypter<'_, R> {
    fn walk(&mut self, value: &Json, path: &mut Vec<String>) -> Json {
        match value {
            Json::Object(map) => {
                let mut out = Map::new();
                for (k, v) in map {
                    path.push(k.clone());
                    out.insert(k.clone(), self.walk(v, path));
                    path.pop();
                }
                Json::Object(out)
            }
            Json::Array(items) => Json::Array(items.iter().map(|item| self.walk(item, path)).collect()),
            leaf => {
                let Some(bytes) = leaf_bytes(leaf) else { return leaf.clone() };
                let bytes = Zeroizing::new(bytes);
                self.mac.update(&bytes);
                let encrypted = match self.rule {
                    Rule::DataOnly => should_encrypt(path),
                    Rule::Every => !path.last().is_some_and(|k| k.ends_with(UNENCRYPTED_SUFFIX)),
                };
                if !encrypted || (leaf.is_string() && bytes.is_empty()) {
                    return leaf.clone();
                }
                let kind = match leaf {
                    Json::Bool(_) => "bool",
                    Json::Number(n) if n.is_f64() => "float",
                    Json::Number(_) => "int",
                    _ => "str",
                };
                Json::String(encrypt_one(self.key, &bytes, aad(path).as_bytes(), kind, self.rng))
            }
        }
    }
}

/// Encrypts `document` (a map without a top-level `sops`) for the age X25519 `recipients`.
///
/// `lastmodified` must be RFC 3339 UTC with whole seconds and `Z` (sops re-formats it before
/// using it as the MAC's AAD). `rng` supplies the data key and the IVs.
///
/// # Errors
///
/// Not a map, a `sops` key present, no or invalid recipients, bad `lastmodified`.
pub fn encrypt<R: CryptoRng + ?Sized>(document: &Json, recipients: &[String], lastmodified: &str, rng: &mut R) -> Result<Json, Error> {
    encrypt_with(document, recipients, lastmodified, Rule::DataOnly, rng)
}

/// Which values a SOPS file encrypts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// Only values under `data` / `stringData` (`encrypted_regex: ^(data|stringData)$`): a
    /// Kubernetes Secret whose metadata stays readable.
    DataOnly,
    /// Every value (sops's own default, written as `unencrypted_suffix: _unencrypted`): a flat
    /// file of variables, as `sops -e` encrypts a `.yaml` or dotenv file.
    Every,
}

/// [`encrypt`] with the encryption rule chosen.
///
/// # Errors
///
/// As [`encrypt`].
pub fn encrypt_with<R: CryptoRng + ?Sized>(
    document: &Json,
    recipients: &[String],
    lastmodified: &str,
    rule: Rule,
    rng: &mut R,
) -> Result<Json, Error> {
    let Some(map) = document.as_object() else { return Err(Error::Input("the document is not a map".to_owned())) };
    if map.contains_key("sops") {
        return Err(Error::Input("a top-level `sops` key is reserved".to_owned()));
    }
    if recipients.is_empty() {
        return Err(Error::NoRecipients);
    }
    if !is_lastmodified(lastmodified) {
        return Err(Error::Lastmodified);
    }
    let parsed: Vec<age::x25519::Recipient> = recipients
        .iter()
        .map(|r| age::x25519::Recipient::from_str(r.trim()).map_err(|_| Error::Recipient(r.clone())))
        .collect::<Result<_, _>>()?;
    let mut key = Zeroizing::new([0u8; 32]);
    rng.fill_bytes(key.as_mut_slice());
    let mut encrypter = Encrypter { key: &key, mac: Sha512::new(), rng, rule };
    let mut out = match encrypter.walk(document, &mut Vec::new()) {
        Json::Object(out) => out,
        _ => unreachable!("a map walks to a map"),
    };
    let digest = encrypter.mac.finalize();
    let mac_hex: String = digest.iter().map(|b| format!("{b:02X}")).collect();
    let mac = encrypt_one(&key, mac_hex.as_bytes(), lastmodified.as_bytes(), "str", encrypter.rng);
    let mut age_entries = Vec::new();
    for (text, recipient) in recipients.iter().zip(&parsed) {
        let mut enc = age::encrypt_and_armor(recipient, key.as_slice()).map_err(|e| Error::Age(e.to_string()))?;
        if !enc.ends_with('\n') {
            enc.push('\n');
        }
        let mut entry = Map::new();
        entry.insert("recipient".to_owned(), Json::String(text.trim().to_owned()));
        entry.insert("enc".to_owned(), Json::String(enc));
        age_entries.push(Json::Object(entry));
    }
    let mut sops = Map::new();
    sops.insert("age".to_owned(), Json::Array(age_entries));
    sops.insert("lastmodified".to_owned(), Json::String(lastmodified.to_owned()));
    sops.insert("mac".to_owned(), Json::String(mac));
    match rule {
        Rule::DataOnly => sops.insert("encrypted_regex".to_owned(), Json::String(ENCRYPTED_REGEX.to_owned())),
        Rule::Every => sops.insert("unencrypted_suffix".to_owned(), Json::String(UNENCRYPTED_SUFFIX.to_owned())),
    };
    sops.insert("version".to_owned(), Json::String(VERSION.to_owned()));
    out.insert("sops".to_owned(), Json::Object(sops));
    Ok(Json::Object(out))
}

/// Go's `time.Parse(RFC3339, s).Format(RFC3339)` for the common cases: fractional seconds are
/// dropped and `+00:00` becomes `Z`.
fn normalize_lastmodified(text: &str) -> String {
    let mut text = text.to_owned();
    if let Some(stripped) = text.strip_suffix("+00:00") {
        text = format!("{stripped}Z");
    }
    if let Some(dot) = text.find('.') {
        let end = text[dot + 1..].find(|c: char| !c.is_ascii_digit()).map_or(text.len(), |i| dot + 1 + i);
        text.replace_range(dot..end, "");
    }
    text
}

struct Decrypter<'a> {
    key: &'a [u8; 32],
    mac: Sha512,
    only_encrypted: bool,
}

impl Decrypter<'_> {
    fn walk(&mut self, value: &Json, path: &mut Vec<String>) -> Result<Json, Error> {
        Ok(match value {
            Json::Object(map) => {
                let mut out = Map::new();
                for (k, v) in map {
                    path.push(k.clone());
                    out.insert(k.clone(), self.walk(v, path)?);
                    path.pop();
                }
                Json::Object(out)
            }
            Json::Array(items) => Json::Array(items.iter().map(|item| self.walk(item, path)).collect::<Result<_, _>>()?),
            Json::String(text) if text.starts_with("ENC[AES256_GCM,") => {
                let at = path.join(".");
                let (plaintext, kind) = decrypt_one(self.key, text, aad(path).as_bytes(), &at)?;
                if kind == "comment" {
                    return Ok(value.clone());
                }
                self.mac.update(plaintext.as_slice());
                let text = std::str::from_utf8(&plaintext).map_err(|_| Error::Malformed(at.clone()))?;
                match kind.as_str() {
                    "int" => text.parse::<i64>().map(Json::from).map_err(|_| Error::Malformed(at))?,
                    "float" => {
                        text.parse::<f64>().ok().and_then(serde_json::Number::from_f64).map(Json::Number).ok_or(Error::Malformed(at))?
                    }
                    "bool" => Json::Bool(text == "True"),
                    _ => Json::String(text.to_owned()),
                }
            }
            leaf => {
                if !self.only_encrypted
                    && let Some(bytes) = leaf_bytes(leaf)
                {
                    self.mac.update(&bytes);
                }
                leaf.clone()
            }
        })
    }
}

/// Parses every `AGE-SECRET-KEY-1…` line of an identity file (comments and blank lines skipped).
fn identities(text: &str) -> Result<Vec<age::x25519::Identity>, Error> {
    let found: Vec<_> = text
        .lines()
        .map(str::trim)
        .filter(|line| line.starts_with("AGE-SECRET-KEY-"))
        .map(|line| age::x25519::Identity::from_str(line).map_err(|_| Error::Identity))
        .collect::<Result<_, _>>()?;
    if found.is_empty() {
        return Err(Error::Identity);
    }
    Ok(found)
}

/// Decrypts a SOPS file with the age identities in `identity_text` (an `age-keygen` file) and
/// verifies its MAC. Returns the document without its `sops` block.
///
/// # Errors
///
/// Not a SOPS file, no matching identity, a value that does not decrypt, a MAC mismatch.
pub fn decrypt(document: &Json, identity_text: &str) -> Result<Json, Error> {
    let sops = document.get("sops").and_then(Json::as_object).ok_or_else(|| Error::NotSops("no top-level `sops` map".to_owned()))?;
    let entries = sops
        .get("age")
        .and_then(Json::as_array)
        .filter(|a| !a.is_empty())
        .ok_or_else(|| Error::NotSops("no `sops.age` recipients".to_owned()))?;
    let lastmodified =
        sops.get("lastmodified").and_then(Json::as_str).ok_or_else(|| Error::NotSops("no `sops.lastmodified`".to_owned()))?;
    let mac = sops.get("mac").and_then(Json::as_str).ok_or_else(|| Error::NotSops("no `sops.mac`".to_owned()))?;
    let only_encrypted = sops.get("mac_only_encrypted").and_then(Json::as_bool) == Some(true);
    let identities = identities(identity_text)?;
    let mut key = None;
    'entries: for entry in entries {
        let Some(enc) = entry.get("enc").and_then(Json::as_str) else { continue };
        for identity in &identities {
            if let Ok(bytes) = age::decrypt(identity, enc.as_bytes()) {
                let bytes = Zeroizing::new(bytes);
                if let Ok(array) = <[u8; 32]>::try_from(bytes.as_slice()) {
                    key = Some(Zeroizing::new(array));
                    break 'entries;
                }
            }
        }
    }
    let Some(key) = key else { return Err(Error::NoMatchingIdentity(recipients_of(document).join(", "))) };
    let mut body = document.as_object().cloned().unwrap_or_default();
    body.remove("sops");
    let mut decrypter = Decrypter { key: &key, mac: Sha512::new(), only_encrypted };
    if only_encrypted {
        // sops' MACOnlyEncryptedInitialization: sha256("sops").
        decrypter.mac.update(sha2::Sha256::digest(b"sops"));
    }
    let plain = decrypter.walk(&Json::Object(body), &mut Vec::new())?;
    let computed: String = decrypter.mac.finalize().iter().map(|b| format!("{b:02X}")).collect();
    let (stored, _) = decrypt_one(&key, mac, normalize_lastmodified(lastmodified).as_bytes(), "sops.mac")?;
    if stored.as_slice() != computed.as_bytes() {
        return Err(Error::MacMismatch);
    }
    Ok(plain)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn every_value_rule_encrypts_a_flat_file_and_opens_again() {
        let document = serde_json::json!({ "DB_PASSWORD": "s3cret-value", "EMPTY": "", "PORT": 5432 });
        let mut rng = StdRng::seed_from_u64(2);
        let encrypted = encrypt_with(&document, &[RECIPIENT.to_owned()], "2026-01-02T03:04:05Z", Rule::Every, &mut rng).unwrap();
        assert!(encrypted["DB_PASSWORD"].as_str().unwrap().starts_with("ENC[AES256_GCM,"));
        assert!(encrypted["PORT"].as_str().unwrap().ends_with(",type:int]"));
        assert_eq!(encrypted["EMPTY"], "");
        assert_eq!(encrypted["sops"]["unencrypted_suffix"], UNENCRYPTED_SUFFIX);
        assert!(encrypted["sops"].get("encrypted_regex").is_none());
        assert!(!encrypted.to_string().contains("s3cret-value"));
        assert_eq!(decrypt(&encrypted, IDENTITY).unwrap(), document);
    }
    use rand::SeedableRng;
    use rand::rngs::StdRng;
    use serde_json::json;

    pub(crate) const IDENTITY: &str = include_str!("../../fixtures/demo/keys/age.txt");
    pub(crate) const RECIPIENT: &str = "age1763reswr756hamsur7pj5sq2slkhpr9zenkp94ua0sjallefrqqsgwe89c";
    const OTHER_IDENTITY: &str = "AGE-SECRET-KEY-1GFPYYSJZGFPYYSJZGFPYYSJZGFPYYSJZGFPYYSJZGFPYYSJZGFPQ4EGAEX";

    fn secret() -> Json {
        json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "db", "namespace": "apps", "labels": {"app": "pg"}},
            "type": "Opaque",
            "stringData": {"password": "hunter2", "empty": "", "list": ["a", "b"]},
            "data": {"bin": "AAEC"}
        })
    }

    #[test]
    fn round_trip_with_mac_and_shape() {
        let mut rng = StdRng::seed_from_u64(1);
        let encrypted = encrypt(&secret(), &[RECIPIENT.to_owned()], "2025-01-02T03:04:05Z", &mut rng).unwrap();
        let text = serde_json::to_string(&encrypted).unwrap();
        assert!(!text.contains("hunter2"));
        assert!(is_sops(&encrypted));
        assert_eq!(encrypted["metadata"], secret()["metadata"]);
        assert_eq!(encrypted["stringData"]["empty"], "");
        let password = encrypted["stringData"]["password"].as_str().unwrap();
        assert!(password.starts_with("ENC[AES256_GCM,data:") && password.ends_with(",type:str]"), "{password}");
        let iv = password.split(",iv:").nth(1).unwrap().split(',').next().unwrap();
        assert_eq!(STANDARD.decode(iv).unwrap().len(), 32);
        let keys: Vec<&String> = encrypted["sops"].as_object().unwrap().keys().collect();
        assert_eq!(keys, ["age", "lastmodified", "mac", "encrypted_regex", "version"]);
        assert!(encrypted["sops"]["age"][0]["enc"].as_str().unwrap().starts_with("-----BEGIN AGE ENCRYPTED FILE-----\n"));
        assert_eq!(recipients_of(&encrypted), [RECIPIENT]);
        assert_eq!(decrypt(&encrypted, IDENTITY).unwrap(), secret());
        assert!(matches!(decrypt(&encrypted, OTHER_IDENTITY), Err(Error::NoMatchingIdentity(_))));
        assert!(matches!(decrypt(&encrypted, "# nothing"), Err(Error::Identity)));
    }

    #[test]
    fn tampering_is_detected() {
        let mut rng = StdRng::seed_from_u64(2);
        let encrypted = encrypt(&secret(), &[RECIPIENT.to_owned()], "2025-01-02T03:04:05Z", &mut rng).unwrap();
        // An unencrypted field: only the MAC notices.
        let mut changed = encrypted.clone();
        changed["metadata"]["labels"]["app"] = json!("evil");
        assert!(matches!(decrypt(&changed, IDENTITY), Err(Error::MacMismatch)));
        // Moving a ciphertext to another key breaks its AAD.
        let mut moved = encrypted.clone();
        moved["stringData"]["other"] = encrypted["stringData"]["password"].clone();
        assert!(matches!(decrypt(&moved, IDENTITY), Err(Error::Decrypt(at)) if at == "stringData.other"));
        // Dropping a value changes the MAC.
        let mut dropped = encrypted.clone();
        dropped["stringData"].as_object_mut().unwrap().shift_remove("password");
        assert!(matches!(decrypt(&dropped, IDENTITY), Err(Error::MacMismatch)));
        // Another lastmodified breaks the MAC's AAD.
        let mut stamped = encrypted.clone();
        stamped["sops"]["lastmodified"] = json!("2025-01-02T03:04:06Z");
        assert!(matches!(decrypt(&stamped, IDENTITY), Err(Error::Decrypt(_))));
        // Equivalent spellings of the same instant still verify, as in sops.
        let mut respelled = encrypted.clone();
        respelled["sops"]["lastmodified"] = json!("2025-01-02T03:04:05.000+00:00");
        assert!(decrypt(&respelled, IDENTITY).is_ok());
    }

    #[test]
    fn inputs_are_checked() {
        let mut rng = StdRng::seed_from_u64(3);
        let r = [RECIPIENT.to_owned()];
        assert!(matches!(encrypt(&secret(), &r, "2025-01-02T03:04:05.5Z", &mut rng), Err(Error::Lastmodified)));
        assert!(matches!(encrypt(&secret(), &r, "2025-01-02 03:04:05Z", &mut rng), Err(Error::Lastmodified)));
        assert!(matches!(encrypt(&secret(), &[], "2025-01-02T03:04:05Z", &mut rng), Err(Error::NoRecipients)));
        assert!(matches!(encrypt(&secret(), &["age1nope".to_owned()], "2025-01-02T03:04:05Z", &mut rng), Err(Error::Recipient(_))));
        assert!(matches!(encrypt(&json!({"sops": 1}), &r, "2025-01-02T03:04:05Z", &mut rng), Err(Error::Input(_))));
        assert!(matches!(decrypt(&secret(), IDENTITY), Err(Error::NotSops(_))));
    }

    #[test]
    fn values_from_real_sops_decrypt() {
        // Made by sops 3.11.0: `sops -e --age <demo> --encrypted-regex '^(data|stringData)$'`.
        let real: Json = serde_json::from_str(REAL_SOPS).unwrap();
        let plain = decrypt(&real, IDENTITY).unwrap();
        assert_eq!(plain["stringData"]["password"], "hunter2");
        assert_eq!(plain["metadata"]["annotations"]["a"], "b");
    }

    const REAL_SOPS: &str = r#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"db","namespace":"apps","annotations":{"a":"b"}},"type":"Opaque","stringData":{"password":"ENC[AES256_GCM,data:TlR2QwGrnA==,iv:aIJAQE7fTfyasbM1KkNUdGAVmaPU7rrgxLoQLTHyHTs=,tag:mCvPfAMQT3YdNG+i+p3WsA==,type:str]","empty":""},"sops":{"age":[{"recipient":"age1763reswr756hamsur7pj5sq2slkhpr9zenkp94ua0sjallefrqqsgwe89c","enc":"-----BEGIN AGE ENCRYPTED FILE-----\nYWdlLWVuY3J5cHRpb24ub3JnL3YxCi0+IFgyNTUxOSBTMDE1S3Vzdlp0bk12YTVP\nbUMzcnFTQnZCK0NPT2hYaUxvbElKMnFoc1YwCnRhbDBNcVcrcldDQXkrbktrZnB3\nVXUwRlI4Z0haZnU0cmlXd2pVUm5Tbm8KLS0tIE14d0tCckxBSHdJYnpySlByT0w0\nekFjQlR6c0VGYVVjSG9VSnhuSlhsRU0Kh79hv81M10gNxagWMkTg3BVNBB+tDKFv\nqP+VW0Jo4SRp0YGtRi9gkfcYHgQ8ywu6wD//0v7pp2xrRQXVkbXuzQ==\n-----END AGE ENCRYPTED FILE-----\n"}],"lastmodified":"2026-12-03T07:37:03Z","mac":"ENC[AES256_GCM,data:S12o+H2NgNHTSbLKrMKnlwVfoS4dbg7acTmUd1429ro/GvGBDdIPb+S1QMe6eUa9EYMAwKf7FgUT8gANgGkSnZJBPOGumHUuM17/1Z8oZIqn3AH/3whcoVg08RQa1ZJ4Vp9w1dEAy7zdnI488MavQpTlzHb2rWwe6zSYS7kxnUU=,iv:b1sCZuRuiDzYbf9ZL+p41bupEAeKw7DvICZPt/oLz3w=,tag:w0is1UjB/LnO2Gm3LNWwVA==,type:str]","encrypted_regex":"^(data|stringData)$","version":"3.11.0"}}"#;
}
