//! Generated secrets: derived from the master key, never stored.
//!
//! Construction (also in `docs/secrets.md`): for block counter `i = 0, 1, 2, …`
//!
//! ```text
//! block_i = HMAC-SHA256(master_key, "tfrs/derive/v1" ‖ 0x00 ‖ lp(path) ‖ lp(charset) ‖ u32be(rotation) ‖ u64be(i))
//! ```
//!
//! where `lp(x) = u64be(len(x)) ‖ x`. The concatenated blocks are a byte stream; each byte `b` is
//! kept if `b < 256 - 256 mod n` (`n` = alphabet size) and maps to `alphabet[b mod n]`, otherwise
//! it is skipped (rejection sampling, so every character is exactly uniform). The value is the
//! first `length` characters: a longer `length` extends a shorter one.

use super::bytes::push_lp;
use super::fingerprint::FingerprintKey;
use crate::spec::model::{Charset, Generate};
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;
use zeroize::{Zeroize, Zeroizing};

/// Errors of this module.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum Error {
    /// The master key text is not 64 hex characters. The text itself is never shown.
    #[error("the master key must be 64 hex characters (32 bytes), e.g. from `openssl rand -hex 32`; found {found}")]
    MasterKeyFormat {
        /// What was found, without the key: `41 characters`, `a non-hex character`.
        found: String,
    },
}

/// The 32-byte master key every generated secret (and the fingerprint key) is derived from.
///
/// Zeroized on drop; `Debug` prints nothing about the key.
#[derive(Clone)]
pub struct MasterKey(Zeroizing<[u8; 32]>);

impl std::fmt::Debug for MasterKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MasterKey(..)")
    }
}

/// `A-Z a-z 0-9`.
const ALPHANUMERIC: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
/// `0-9 a-f`.
const HEX: &[u8] = b"0123456789abcdef";
/// `A-Z a-z 0-9 + /`.
const BASE64: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// The alphabet and the name (part of the HMAC input) of a charset.
#[must_use]
pub fn alphabet(charset: Charset) -> (&'static str, &'static [u8]) {
    match charset {
        Charset::Alphanumeric => ("alphanumeric", ALPHANUMERIC),
        Charset::Hex => ("hex", HEX),
        Charset::Base64 => ("base64", BASE64),
    }
}

impl MasterKey {
    /// Parses 64 hex characters (either case); surrounding whitespace and newlines are trimmed.
    ///
    /// # Errors
    ///
    /// [`Error::MasterKeyFormat`], which says what was expected and never echoes the text.
    pub fn from_hex(text: &str) -> Result<MasterKey, Error> {
        let text = text.trim();
        let count = text.chars().count();
        if count != 64 {
            return Err(Error::MasterKeyFormat { found: format!("{count} characters") });
        }
        let mut key = Zeroizing::new([0u8; 32]);
        let bytes = text.as_bytes();
        for (index, byte) in key.iter_mut().enumerate() {
            match (hex_digit(bytes[2 * index]), hex_digit(bytes[2 * index + 1])) {
                (Some(high), Some(low)) => *byte = high << 4 | low,
                _ => return Err(Error::MasterKeyFormat { found: "a non-hex character".to_owned() }),
            }
        }
        Ok(MasterKey(key))
    }

    /// A master key from raw bytes (tests, or a caller that already holds bytes).
    #[must_use]
    pub fn from_bytes(bytes: [u8; 32]) -> MasterKey {
        MasterKey(Zeroizing::new(bytes))
    }

    fn mac(&self) -> Hmac<Sha256> {
        <Hmac<Sha256> as KeyInit>::new_from_slice(self.0.as_slice()).expect("HMAC takes any key length")
    }

    /// The generated value for the secret at logical `path` (e.g. `tenant/acme/postgresql/password`).
    ///
    /// Same key, path, charset and rotation give the same value on every machine; any other
    /// path, rotation or key gives an unrelated one.
    #[must_use]
    pub fn derive(&self, path: &str, generate: &Generate) -> Zeroizing<String> {
        let (charset_name, alphabet) = alphabet(generate.charset);
        let n = alphabet.len();
        let limit = 256 - 256 % n;
        let length = generate.length as usize;
        let mut prefix = Vec::with_capacity(64 + path.len());
        prefix.extend_from_slice(b"tfrs/derive/v1\0");
        push_lp(&mut prefix, path.as_bytes());
        push_lp(&mut prefix, charset_name.as_bytes());
        prefix.extend_from_slice(&generate.rotation.to_be_bytes());
        let mut out = Zeroizing::new(String::with_capacity(length));
        let mut counter: u64 = 0;
        while out.len() < length {
            let mut mac = self.mac();
            mac.update(&prefix);
            mac.update(&counter.to_be_bytes());
            let mut block: [u8; 32] = mac.finalize().into_bytes().into();
            for &byte in &block {
                if out.len() == length {
                    break;
                }
                if usize::from(byte) < limit {
                    out.push(char::from(alphabet[usize::from(byte) % n]));
                }
            }
            block.zeroize();
            counter += 1;
        }
        out
    }

    /// The key of the zero-diff fingerprints: `HMAC-SHA256(master_key, "tfrs/fingerprint-key/v1")`,
    /// independent of every generated value.
    #[must_use]
    pub fn fingerprint_key(&self) -> FingerprintKey {
        let mut mac = self.mac();
        mac.update(b"tfrs/fingerprint-key/v1");
        FingerprintKey::from_bytes(mac.finalize().into_bytes().into())
    }

    /// The key of the spec cache (`crate::source::spec_cache`), which encrypts the parsed spec
    /// files kept between renders and names their pieces:
    /// `HMAC-SHA256(master_key, "tfrs/spec-cache-key/v1")`, independent of every other key.
    #[must_use]
    pub fn spec_cache_key(&self) -> Zeroizing<[u8; 32]> {
        let mut mac = self.mac();
        mac.update(b"tfrs/spec-cache-key/v1");
        Zeroizing::new(mac.finalize().into_bytes().into())
    }

    /// The key of the render memo's stamps (`crate::render::memo`):
    /// `HMAC-SHA256(master_key, "tfrs/memo-key/v1")`, independent of every other key.
    #[must_use]
    pub fn memo_key(&self) -> Zeroizing<[u8; 32]> {
        let mut mac = self.mac();
        mac.update(b"tfrs/memo-key/v1");
        Zeroizing::new(mac.finalize().into_bytes().into())
    }
}

fn hex_digit(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";

    fn key() -> MasterKey {
        MasterKey::from_hex(KEY).unwrap()
    }

    fn generate(length: u32, charset: Charset, rotation: u32) -> Generate {
        Generate { length, charset, rotation }
    }

    #[test]
    fn parsing_accepts_64_hex_with_whitespace_and_never_echoes() {
        assert!(MasterKey::from_hex(&format!("  {}\n", KEY.to_uppercase())).is_ok());
        let secretish = "zz".repeat(32);
        let error = MasterKey::from_hex(&secretish).unwrap_err().to_string();
        assert!(error.contains("64 hex characters") && error.contains("non-hex"), "{error}");
        assert!(!error.contains("zz"), "{error}");
        let error = MasterKey::from_hex(&KEY[..40]).unwrap_err().to_string();
        assert!(error.contains("found 40 characters") && !error.contains(&KEY[..40]), "{error}");
        assert!(MasterKey::from_hex("").is_err());
        // Multi-byte characters are counted as characters and refused, not sliced.
        assert!(MasterKey::from_hex(&"é".repeat(64)).is_err());
        assert_eq!(format!("{:?}", key()), "MasterKey(..)");
    }

    #[test]
    fn derivation_is_deterministic_and_independent() {
        let g = Generate::default();
        let a = key().derive("tenant/acme/postgresql/password", &g);
        assert_eq!(*a, *key().derive("tenant/acme/postgresql/password", &g));
        assert_eq!(a.len(), 32);
        let others = [
            key().derive("tenant/acme/postgresql/passwore", &g),
            key().derive("tenant/acme/postgresql/password", &generate(32, Charset::Alphanumeric, 1)),
            MasterKey::from_bytes([7; 32]).derive("tenant/acme/postgresql/password", &g),
        ];
        for other in &others {
            assert_ne!(**other, *a);
            // Unrelated: no shared prefix beyond chance.
            assert_ne!(other[..4], a[..4]);
        }
        // A longer value extends a shorter one of the same charset.
        let long = key().derive("tenant/acme/postgresql/password", &generate(100, Charset::Alphanumeric, 0));
        assert!(long.starts_with(a.as_str()));
    }

    #[test]
    fn pinned_vector() {
        // Changing the construction changes every deployed password: this must fail loudly.
        let value = key().derive("cluster/demo/registry", &generate(16, Charset::Alphanumeric, 0));
        assert_eq!(value.len(), 16);
        // Checked against an independent Python implementation of the documented construction.
        assert_eq!(*value, "LFYteEhPtgvhqX7Q");
    }

    #[test]
    fn charsets_lengths_and_membership() {
        for (charset, alphabet) in [(Charset::Alphanumeric, ALPHANUMERIC), (Charset::Hex, HEX), (Charset::Base64, BASE64)] {
            for length in [1, 8, 31, 32, 33, 100, 4096] {
                let value = key().derive("x/y", &generate(length, charset, 0));
                assert_eq!(value.len(), length as usize);
                assert!(value.bytes().all(|b| alphabet.contains(&b)), "{charset:?}");
            }
        }
        let zero = key().derive("x/y", &generate(0, Charset::Hex, 0));
        assert!(zero.is_empty());
    }

    #[test]
    fn alphanumeric_is_unbiased_enough() {
        // Chi-square smoke test over 62 symbols: 62_000 draws, 61 degrees of freedom.
        // The 99.99th percentile is about 112; a `b % 62` mapping without rejection gives ~128+.
        let mut counts = [0usize; 62];
        let value = key().derive("bias", &generate(62_000, Charset::Alphanumeric, 0));
        for b in value.bytes() {
            counts[ALPHANUMERIC.iter().position(|&c| c == b).unwrap()] += 1;
        }
        let expected = 1000.0;
        let chi: f64 = counts.iter().map(|&c| (c as f64 - expected).powi(2) / expected).sum();
        assert!(chi < 112.0, "chi-square {chi}");
    }

    #[test]
    fn fingerprint_key_is_separate() {
        let a = key().fingerprint_key();
        let b = MasterKey::from_bytes([7; 32]).fingerprint_key();
        assert_ne!(a.digest_for_tests(), b.digest_for_tests());
        assert_eq!(a.digest_for_tests(), key().fingerprint_key().digest_for_tests());
    }

    #[test]
    fn hex_encoding() {
        assert_eq!(super::super::bytes::to_hex(&[0, 15, 16, 255]), "000f10ff");
    }
}
