//! Finding secret values in bytes: the pure half of `tfrs audit`.
//!
//! Each secret is searched raw, base64-encoded (standard and URL-safe, at every byte alignment, so
//! it is found inside a longer encoded blob), percent-encoded and JSON-escaped. A hit names the
//! secret by its logical path and the encoding, never by its value.

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE_NO_PAD};
use memchr::memmem::Finder;
use zeroize::Zeroizing;

/// Values shorter than this are not searched: they match by chance (`app`, `cnb`).
pub const MIN_LENGTH: usize = 8;

/// A secret to look for.
pub struct Needle {
    /// Its logical path (what a hit reports).
    pub path: String,
    /// The plaintext.
    pub value: Zeroizing<Vec<u8>>,
}

/// Where a secret was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hit {
    /// The logical path of the secret found.
    pub secret: String,
    /// How it was written: `raw`, `base64`, `base64url`, `percent`, `json`.
    pub encoding: &'static str,
    /// The byte offset of the match in the haystack.
    pub at: usize,
}

/// Compiled search patterns for a set of secrets.
pub struct Scanner {
    patterns: Vec<(usize, &'static str, Finder<'static>)>,
    secrets: Vec<String>,
}

impl Scanner {
    /// Compiles the patterns of every needle of at least [`MIN_LENGTH`] bytes.
    #[must_use]
    pub fn new(needles: &[Needle]) -> Scanner {
        let mut patterns = Vec::new();
        let mut secrets = Vec::new();
        for needle in needles.iter().filter(|n| n.value.len() >= MIN_LENGTH) {
            let index = secrets.len();
            secrets.push(needle.path.clone());
            for (encoding, pattern) in encodings(&needle.value) {
                patterns.push((index, encoding, Finder::new(&pattern).into_owned()));
            }
        }
        Scanner { patterns, secrets }
    }

    /// How many secrets are searched.
    #[must_use]
    pub fn len(&self) -> usize {
        self.secrets.len()
    }

    /// Whether no secret is searched.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.secrets.is_empty()
    }

    /// Every secret found in `haystack` (each secret once, with the first encoding that hit).
    #[must_use]
    pub fn scan(&self, haystack: &[u8]) -> Vec<Hit> {
        let mut hits: Vec<Hit> = Vec::new();
        for (index, encoding, finder) in &self.patterns {
            if hits.iter().any(|h| h.secret == self.secrets[*index]) {
                continue;
            }
            if let Some(at) = finder.find(haystack) {
                hits.push(Hit { secret: self.secrets[*index].clone(), encoding, at });
            }
        }
        hits
    }
}

/// The byte patterns of one value, by encoding; duplicates and short patterns dropped.
fn encodings(value: &[u8]) -> Vec<(&'static str, Vec<u8>)> {
    let mut out: Vec<(&'static str, Vec<u8>)> = vec![("raw", value.to_vec())];
    for (name, engine) in [("base64", &STANDARD_NO_PAD), ("base64url", &URL_SAFE_NO_PAD)] {
        for offset in 0..3usize {
            // Encode behind `offset` filler bytes, then keep only the characters that depend on
            // the value alone: the value as it appears inside any longer base64 text.
            let mut input = vec![0u8; offset];
            input.extend_from_slice(value);
            let encoded = engine.encode(&input);
            // Character i holds input bits [6i, 6i + 6): it depends on the value alone from
            // bit 8 * offset on, and is complete up to bit 8 * len.
            let start = (8 * offset).div_ceil(6);
            let end = ((8 * input.len()) / 6).min(encoded.len());
            if end > start + MIN_LENGTH {
                out.push((name, encoded.as_bytes()[start..end].to_vec()));
            }
        }
    }
    // Encoders differ on what they leave alone and on the case of hex digits: try each way.
    for keep in [&b"-._~"[..], &b""[..]] {
        for upper in [true, false] {
            let percent: String = value
                .iter()
                .map(|b| {
                    if b.is_ascii_alphanumeric() || keep.contains(b) {
                        char::from(*b).to_string()
                    } else if upper {
                        format!("%{b:02X}")
                    } else {
                        format!("%{b:02x}")
                    }
                })
                .collect();
            out.push(("percent", percent.into_bytes()));
        }
    }
    if let Ok(text) = std::str::from_utf8(value) {
        let json = serde_json::to_string(text).unwrap_or_default();
        out.push(("json", json.as_bytes()[1..json.len() - 1].to_vec()));
    }
    let mut seen = std::collections::BTreeSet::new();
    out.retain(|(_, pattern)| pattern.len() >= MIN_LENGTH.min(value.len()) && seen.insert(pattern.clone()));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scanner(value: &str) -> Scanner {
        Scanner::new(&[Needle { path: "cluster/x/secret".into(), value: Zeroizing::new(value.as_bytes().to_vec()) }])
    }

    #[test]
    fn finds_every_encoding_at_any_alignment() {
        let secret = "p@ss/w:rd#%9Zq\"x";
        let scanner = scanner(secret);
        let standard = base64::engine::general_purpose::STANDARD;
        for prefix in ["", "a", "ab", "abc"] {
            let blob = standard.encode(format!("{prefix}{secret}tail"));
            assert_eq!(scanner.scan(blob.as_bytes())[0].encoding, "base64", "prefix {prefix:?}");
        }
        assert_eq!(scanner.scan(format!("x{secret}y").as_bytes())[0].encoding, "raw");
        assert_eq!(scanner.scan(b"amqp://u:p%40ss%2Fw%3Ard%23%259Zq%22x@h")[0].encoding, "percent");
        assert_eq!(scanner.scan(br#"{"v":"p@ss/w:rd#%9Zq\"x"}"#)[0].encoding, "json");
        assert!(scanner.scan(b"nothing to see").is_empty());
    }

    #[test]
    fn short_values_are_not_searched() {
        assert!(scanner("app").is_empty());
        assert_eq!(scanner("a-longer-secret").len(), 1);
    }
}
