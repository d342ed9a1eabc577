//! Keyed fingerprints of sealed values, for zero-diff reuse.
//!
//! A fingerprint says "this ciphertext holds this plaintext, sealed this way" without revealing
//! the plaintext: it is an HMAC under a key derived from the master key, so someone reading the
//! Git repository cannot test guesses against it (a plain hash of a short password could be
//! brute-forced offline).
//!
//! `fingerprint = hex(HMAC-SHA256(fingerprint_key, "tfrs/fingerprint/v1" ‖ lp(backend) ‖
//! lp(sealer) ‖ lp(scope) ‖ lp(namespace) ‖ lp(name) ‖ lp(key) ‖ lp(value)))[..32]` (128 bits),
//! with `lp(x) = u64be(len(x)) ‖ x`.

use super::bytes::{push_lp, to_hex};
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;
use zeroize::Zeroizing;

/// The annotation holding the fingerprints: a compact JSON object, key -> fingerprint.
pub const ANNOTATION: &str = "tfrs.turingfocus.cn/fingerprints";

/// The HMAC key of the fingerprints (derived from the master key). Zeroized on drop.
#[derive(Clone)]
pub struct FingerprintKey(Zeroizing<[u8; 32]>);

impl std::fmt::Debug for FingerprintKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FingerprintKey(..)")
    }
}

/// Everything a sealed value is bound to besides its key and plaintext.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Binding<'a> {
    /// `sealed-secrets` or `sops-age`.
    pub backend: &'a str,
    /// The sealer's identity: the certificate fingerprint, or the sorted age recipients.
    pub sealer: &'a str,
    /// `strict`, `namespace-wide` or `cluster-wide`.
    pub scope: &'a str,
    /// The Secret's namespace.
    pub namespace: &'a str,
    /// The Secret's name.
    pub name: &'a str,
}

impl FingerprintKey {
    /// A key from raw bytes.
    #[must_use]
    pub fn from_bytes(bytes: [u8; 32]) -> FingerprintKey {
        FingerprintKey(Zeroizing::new(bytes))
    }

    /// The fingerprint of `value` stored under `key` with `binding`: 32 lowercase hex characters.
    #[must_use]
    pub fn fingerprint(&self, binding: &Binding<'_>, key: &str, value: &[u8]) -> String {
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(self.0.as_slice()).expect("HMAC takes any key length");
        let mut input = Zeroizing::new(Vec::with_capacity(128 + value.len()));
        input.extend_from_slice(b"tfrs/fingerprint/v1");
        for field in [binding.backend, binding.sealer, binding.scope, binding.namespace, binding.name, key] {
            push_lp(&mut input, field.as_bytes());
        }
        push_lp(&mut input, value);
        mac.update(&input);
        let digest: [u8; 32] = mac.finalize().into_bytes().into();
        to_hex(&digest[..16])
    }

    #[cfg(test)]
    pub(crate) fn digest_for_tests(&self) -> String {
        self.fingerprint(&Binding { backend: "", sealer: "", scope: "", namespace: "", name: "" }, "", b"")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_field_counts_and_fields_do_not_run_together() {
        let key = FingerprintKey::from_bytes([1; 32]);
        let base = Binding { backend: "sealed-secrets", sealer: "abc", scope: "strict", namespace: "ns", name: "db" };
        let fp = key.fingerprint(&base, "password", b"hunter2");
        assert_eq!(fp.len(), 32);
        assert_eq!(fp, key.fingerprint(&base, "password", b"hunter2"));
        let variants = [
            key.fingerprint(&Binding { backend: "sops-age", ..base }, "password", b"hunter2"),
            key.fingerprint(&Binding { sealer: "abd", ..base }, "password", b"hunter2"),
            key.fingerprint(&Binding { scope: "cluster-wide", ..base }, "password", b"hunter2"),
            key.fingerprint(&Binding { namespace: "ns2", ..base }, "password", b"hunter2"),
            key.fingerprint(&Binding { name: "dbx", ..base }, "password", b"hunter2"),
            key.fingerprint(&base, "passwor", b"dhunter2"),
            key.fingerprint(&base, "password", b"hunter3"),
            FingerprintKey::from_bytes([2; 32]).fingerprint(&base, "password", b"hunter2"),
        ];
        for variant in variants {
            assert_ne!(variant, fp);
        }
        assert_eq!(format!("{key:?}"), "FingerprintKey(..)");
    }
}
