//! Bitnami Sealed Secrets, byte-compatible with `kubeseal`.
//!
//! One blob per value: `u16be(len(k)) ‖ k ‖ c`, standard base64 with padding, where
//! `k = RSA-OAEP-SHA256(cert key, label, session_key)` (MGF1-SHA256), `session_key` 32 random
//! bytes, and `c = AES-256-GCM(session_key, nonce = 12 zero bytes, no AAD, plaintext) ‖ tag`.
//! The OAEP label binds the blob to its scope: `namespace/name` (strict), `namespace`
//! (namespace-wide) or empty (cluster-wide).

use super::Scope;
use super::bytes::to_hex;
use aes_gcm::aead::Aead;
use aes_gcm::{Aes256Gcm, KeyInit, Nonce};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use rand::CryptoRng;
use rsa::Oaep;
use rsa::pkcs1::DecodeRsaPrivateKey;
use rsa::pkcs8::{DecodePrivateKey, DecodePublicKey};
use rsa::traits::PublicKeyParts;
use serde_json::Value as Json;
use sha2::{Digest, Sha256};
use x509_cert::der::{DecodePem, Encode};
use zeroize::Zeroizing;

/// Annotation of a namespace-wide SealedSecret.
pub const NAMESPACE_WIDE: &str = "sealedsecrets.bitnami.com/namespace-wide";
/// Annotation of a cluster-wide SealedSecret.
pub const CLUSTER_WIDE: &str = "sealedsecrets.bitnami.com/cluster-wide";

const RSA_ENCRYPTION: &str = "1.2.840.113549.1.1.1";
const SESSION_KEY_BYTES: usize = 32;

/// Errors of this module. None of them holds a plaintext.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No `CERTIFICATE` PEM block.
    #[error("no `-----BEGIN CERTIFICATE-----` block found (expected the PEM that `kubeseal --fetch-cert` prints)")]
    NoCertificate,
    /// The certificate does not parse.
    #[error("the certificate does not parse: {0}")]
    BadCertificate(String),
    /// Not an RSA key.
    #[error("the certificate's key is not RSA (algorithm `{0}`); sealed-secrets needs an RSA certificate")]
    NotRsa(String),
    /// Too small for OAEP-SHA256 of a 32-byte key, or simply too weak.
    #[error("the certificate's RSA key has {0} bits; at least 1024 are required")]
    KeyTooSmall(usize),
    /// `notAfter` is in the past.
    #[error(
        "the certificate expired at {not_after} (unix seconds), refusing to seal with it (fetch a fresh one with `kubeseal --fetch-cert`)"
    )]
    Expired {
        /// `notAfter`, unix seconds.
        not_after: i64,
    },
    /// `notBefore` is in the future.
    #[error("the certificate is not valid before {not_before} (unix seconds); check the clock")]
    NotYetValid {
        /// `notBefore`, unix seconds.
        not_before: i64,
    },
    /// The private key does not parse as PKCS#1 or PKCS#8 PEM.
    #[error("the private key is neither PKCS#1 (`BEGIN RSA PRIVATE KEY`) nor PKCS#8 (`BEGIN PRIVATE KEY`) RSA PEM")]
    BadPrivateKey,
    /// The blob is not base64 or too short.
    #[error("the sealed value of `{key}` is malformed: {reason}")]
    Malformed {
        /// The data key.
        key: String,
        /// What is wrong.
        reason: String,
    },
    /// RSA or AES-GCM refused: wrong key, wrong name/namespace/scope, or tampered.
    #[error(
        "the sealed value of `{key}` does not open with this private key for scope `{scope}` (wrong key, name, namespace or scope, or tampered)"
    )]
    Decrypt {
        /// The data key.
        key: String,
        /// The scope tried.
        scope: &'static str,
    },
    /// The document is not a SealedSecret.
    #[error("not a SealedSecret: {0}")]
    NotSealedSecret(String),
}

/// A parsed sealed-secrets controller certificate (the first `CERTIFICATE` PEM block).
#[derive(Clone)]
pub struct Certificate {
    public_key: rsa::PublicKey,
    fingerprint: String,
    not_after: i64,
}

/// How close to its `notAfter` a sealing certificate draws a warning at render time.
pub const EXPIRY_WARNING_DAYS: i64 = 30;

impl std::fmt::Debug for Certificate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Certificate").field("fingerprint", &self.fingerprint).finish_non_exhaustive()
    }
}

impl Certificate {
    /// Parses the first `CERTIFICATE` block of `pem` and checks it at `now_unix_seconds`.
    ///
    /// # Errors
    ///
    /// No certificate, unparsable, not RSA, smaller than 1024 bits, expired, not yet valid.
    pub fn from_pem(pem: &str, now_unix_seconds: i64) -> Result<Certificate, Error> {
        const BEGIN: &str = "-----BEGIN CERTIFICATE-----";
        const END: &str = "-----END CERTIFICATE-----";
        let start = pem.find(BEGIN).ok_or(Error::NoCertificate)?;
        let end = pem[start..].find(END).ok_or(Error::NoCertificate)? + start + END.len();
        let cert = x509_cert::Certificate::from_pem(&pem[start..end]).map_err(|e| Error::BadCertificate(e.to_string()))?;
        let der = cert.to_der().map_err(|e| Error::BadCertificate(e.to_string()))?;
        let tbs = cert.tbs_certificate();
        let spki = tbs.subject_public_key_info();
        let oid = spki.algorithm.oid.to_string();
        if oid != RSA_ENCRYPTION {
            return Err(Error::NotRsa(oid));
        }
        let spki_der = spki.to_der().map_err(|e| Error::BadCertificate(e.to_string()))?;
        let public_key = rsa::PublicKey::from_public_key_der(&spki_der).map_err(|e| Error::BadCertificate(e.to_string()))?;
        let bits = public_key.size() * 8;
        if bits < 1024 {
            return Err(Error::KeyTooSmall(bits));
        }
        let validity = tbs.validity();
        let not_before = seconds(validity.not_before.to_unix_duration());
        let not_after = seconds(validity.not_after.to_unix_duration());
        if now_unix_seconds > not_after {
            return Err(Error::Expired { not_after });
        }
        if now_unix_seconds < not_before {
            return Err(Error::NotYetValid { not_before });
        }
        Ok(Certificate { public_key, fingerprint: to_hex(&Sha256::digest(&der)), not_after })
    }

    /// `notAfter`, unix seconds.
    #[must_use]
    pub fn not_after(&self) -> i64 {
        self.not_after
    }

    /// A warning when the certificate expires within [`EXPIRY_WARNING_DAYS`] of `now`.
    #[must_use]
    pub fn expiry_warning(&self, now_unix_seconds: i64) -> Option<String> {
        let left = self.not_after - now_unix_seconds;
        (left < EXPIRY_WARNING_DAYS * 86_400).then(|| {
            let days = left / 86_400;
            format!(
                "the certificate expires in {days} day{} (at {} unix seconds); after that tfrs refuses to seal with it: fetch the controller's current one with `kubeseal --fetch-cert`",
                if days == 1 { "" } else { "s" },
                self.not_after
            )
        })
    }

    /// Whether `key` is this certificate's private key.
    #[must_use]
    pub fn is_pair_of(&self, key: &PrivateKey) -> bool {
        self.public_key == key.0.to_public_key()
    }

    /// SHA-256 of the certificate's DER, lowercase hex.
    #[must_use]
    pub fn fingerprint(&self) -> String {
        self.fingerprint.clone()
    }
}

fn seconds(duration: std::time::Duration) -> i64 {
    i64::try_from(duration.as_secs()).unwrap_or(i64::MAX)
}

/// An RSA private key of a sealed-secrets controller (`tls.key`), for `tfrs unseal`.
pub struct PrivateKey(rsa::PrivateKey);

impl std::fmt::Debug for PrivateKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PrivateKey(..)")
    }
}

impl PrivateKey {
    /// Parses PKCS#1 (`BEGIN RSA PRIVATE KEY`) or PKCS#8 (`BEGIN PRIVATE KEY`) PEM.
    ///
    /// # Errors
    ///
    /// [`Error::BadPrivateKey`] (the key text is never shown).
    pub fn from_pem(pem: &str) -> Result<PrivateKey, Error> {
        let pem = pem.trim();
        rsa::PrivateKey::from_pkcs8_pem(pem)
            .or_else(|_| rsa::PrivateKey::from_pkcs1_pem(pem))
            .map(PrivateKey)
            .map_err(|_| Error::BadPrivateKey)
    }
}

/// The OAEP label of a scope.
#[must_use]
pub fn label(scope: Scope, namespace: &str, name: &str) -> Vec<u8> {
    match scope {
        Scope::Strict => format!("{namespace}/{name}").into_bytes(),
        Scope::NamespaceWide => namespace.as_bytes().to_vec(),
        Scope::ClusterWide => Vec::new(),
    }
}

/// The scope's name as sealed-secrets spells it (`strict`, `namespace-wide`, `cluster-wide`).
#[must_use]
pub fn scope_name(scope: Scope) -> &'static str {
    match scope {
        Scope::Strict => "strict",
        Scope::NamespaceWide => "namespace-wide",
        Scope::ClusterWide => "cluster-wide",
    }
}

/// The scope a SealedSecret's (outer) `metadata.annotations` declare, as the controller reads
/// them: `cluster-wide: "true"` wins over `namespace-wide: "true"`; anything else is strict.
#[must_use]
pub fn scope_of(annotations: Option<&Json>) -> Scope {
    let is_true = |name: &str| annotations.and_then(|a| a.get(name)).and_then(Json::as_str) == Some("true");
    if is_true(CLUSTER_WIDE) {
        Scope::ClusterWide
    } else if is_true(NAMESPACE_WIDE) {
        Scope::NamespaceWide
    } else {
        Scope::Strict
    }
}

/// Seals one value for `namespace`/`name` under `scope`: standard base64 with padding, one line.
///
/// `rng` supplies the session key and the OAEP seed: a seeded `rand::rngs::StdRng` in tests,
/// `rand::rng()` (OS-seeded) in the CLI.
pub fn seal_value<R: CryptoRng + ?Sized>(
    cert: &Certificate,
    scope: Scope,
    namespace: &str,
    name: &str,
    plaintext: &[u8],
    rng: &mut R,
) -> String {
    let mut session_key = Zeroizing::new([0u8; SESSION_KEY_BYTES]);
    rng.fill_bytes(session_key.as_mut_slice());
    let padding = Oaep::<Sha256>::new_with_label(label(scope, namespace, name));
    // Cannot fail: the key has >= 1024 bits (checked at parse), far more than OAEP-SHA256 of 32 bytes needs.
    let wrapped = cert.public_key.encrypt(rng, padding, session_key.as_slice()).expect("RSA-OAEP of a 32-byte key with a >= 1024-bit key");
    let cipher = Aes256Gcm::new_from_slice(session_key.as_slice()).expect("32-byte key");
    let sealed = cipher.encrypt(&Nonce::default(), plaintext).expect("AES-GCM encrypts any practical length");
    let length = u16::try_from(wrapped.len()).expect("RSA ciphertexts are shorter than 64 KiB");
    let mut blob = Vec::with_capacity(2 + wrapped.len() + sealed.len());
    blob.extend_from_slice(&length.to_be_bytes());
    blob.extend_from_slice(&wrapped);
    blob.extend_from_slice(&sealed);
    STANDARD.encode(blob)
}

/// Opens one blob (`spec.encryptedData[key]`) sealed for `namespace`/`name` under `scope`.
///
/// # Errors
///
/// Malformed base64 or layout; wrong key, name, namespace or scope; tampered ciphertext.
pub fn unseal_value(
    private_key: &PrivateKey,
    scope: Scope,
    namespace: &str,
    name: &str,
    blob_b64: &str,
) -> Result<Zeroizing<Vec<u8>>, Error> {
    open(private_key, scope, namespace, name, "", blob_b64)
}

fn open(
    private_key: &PrivateKey,
    scope: Scope,
    namespace: &str,
    name: &str,
    key: &str,
    blob_b64: &str,
) -> Result<Zeroizing<Vec<u8>>, Error> {
    let malformed = |reason: &str| Error::Malformed { key: key.to_owned(), reason: reason.to_owned() };
    let blob = STANDARD.decode(blob_b64.trim()).map_err(|_| malformed("not standard base64"))?;
    if blob.len() < 2 {
        return Err(malformed("shorter than its length prefix"));
    }
    let length = usize::from(u16::from_be_bytes([blob[0], blob[1]]));
    if blob.len() < 2 + length + 16 {
        return Err(malformed("shorter than its RSA part and GCM tag"));
    }
    let fail = || Error::Decrypt { key: key.to_owned(), scope: scope_name(scope) };
    let padding = Oaep::<Sha256>::new_with_label(label(scope, namespace, name));
    let session_key = Zeroizing::new(private_key.0.decrypt(padding, &blob[2..2 + length]).map_err(|_| fail())?);
    let cipher = Aes256Gcm::new_from_slice(&session_key).map_err(|_| fail())?;
    let plaintext = cipher.decrypt(&Nonce::default(), &blob[2 + length..]).map_err(|_| fail())?;
    Ok(Zeroizing::new(plaintext))
}

/// Opens every value of a SealedSecret (JSON, as parsed from kubeseal's or our YAML/JSON).
///
/// The scope comes from the outer annotations, name and namespace from the outer metadata,
/// as the controller does. Returns the template metadata, type and the plaintext values.
///
/// # Errors
///
/// Not a SealedSecret, a value that does not open.
pub fn unseal(private_key: &PrivateKey, sealed: &Json) -> Result<Unsealed, Error> {
    if sealed.get("kind").and_then(Json::as_str) != Some("SealedSecret") {
        return Err(Error::NotSealedSecret("`kind` is not `SealedSecret`".to_owned()));
    }
    let metadata = sealed.get("metadata").ok_or_else(|| Error::NotSealedSecret("no `metadata`".to_owned()))?;
    let text = |field: &str| metadata.get(field).and_then(Json::as_str).unwrap_or_default().to_owned();
    let (name, namespace) = (text("name"), text("namespace"));
    let scope = scope_of(metadata.get("annotations"));
    let spec = sealed.get("spec").ok_or_else(|| Error::NotSealedSecret("no `spec`".to_owned()))?;
    let encrypted = spec
        .get("encryptedData")
        .and_then(Json::as_object)
        .ok_or_else(|| Error::NotSealedSecret("no `spec.encryptedData` map".to_owned()))?;
    let mut data = std::collections::BTreeMap::new();
    for (key, blob) in encrypted {
        let blob = blob.as_str().ok_or_else(|| Error::Malformed { key: key.clone(), reason: "not a string".to_owned() })?;
        data.insert(key.clone(), open(private_key, scope, &namespace, &name, key, blob)?);
    }
    let template = spec.get("template").cloned().unwrap_or(Json::Null);
    Ok(Unsealed { name, namespace, scope, template, data })
}

/// The opened contents of a SealedSecret.
pub struct Unsealed {
    /// Outer `metadata.name`.
    pub name: String,
    /// Outer `metadata.namespace`.
    pub namespace: String,
    /// The scope used.
    pub scope: Scope,
    /// `spec.template` as found (metadata, type).
    pub template: Json,
    /// Plaintext values by key.
    pub data: std::collections::BTreeMap<String, Zeroizing<Vec<u8>>>,
}

impl std::fmt::Debug for Unsealed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Unsealed")
            .field("name", &self.name)
            .field("namespace", &self.namespace)
            .field("keys", &self.data.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    pub(crate) const CERT: &str = include_str!("../../fixtures/keys-test/rsa-1024.pem");
    pub(crate) const KEY: &str = include_str!("../../fixtures/keys-test/rsa-1024.key");
    const KEY_PKCS1: &str = include_str!("../../fixtures/keys-test/rsa-1024-pkcs1.key");
    const EXPIRED: &str = include_str!("../../fixtures/keys-test/expired.pem");
    const EC: &str = include_str!("../../fixtures/keys-test/ec-p256.pem");
    const DEMO_CERT: &str = include_str!("../../fixtures/demo/keys/sealed-secrets.pem");
    const DEMO_KEY: &str = include_str!("../../fixtures/demo/keys/sealed-secrets.key");
    /// 2030-01-01.
    pub(crate) const NOW: i64 = 1_893_456_000;

    pub(crate) fn cert() -> Certificate {
        Certificate::from_pem(CERT, NOW).unwrap()
    }

    #[test]
    fn round_trip_in_every_scope_and_wrong_bindings_fail() {
        let cert = cert();
        let key = PrivateKey::from_pem(KEY).unwrap();
        let mut rng = StdRng::seed_from_u64(1);
        for scope in [Scope::Strict, Scope::NamespaceWide, Scope::ClusterWide] {
            let blob = seal_value(&cert, scope, "apps", "db", b"hunter2", &mut rng);
            assert!(!blob.contains('\n'));
            let raw = STANDARD.decode(&blob).unwrap();
            assert_eq!(&raw[..2], &[0, 128]);
            assert_eq!(raw.len(), 2 + 128 + 7 + 16);
            assert_eq!(unseal_value(&key, scope, "apps", "db", &blob).unwrap().as_slice(), b"hunter2");
            let wrong_name = unseal_value(&key, scope, "apps", "other", &blob);
            let wrong_ns = unseal_value(&key, scope, "other", "db", &blob);
            match scope {
                Scope::Strict => assert!(wrong_name.is_err() && wrong_ns.is_err()),
                Scope::NamespaceWide => assert!(wrong_name.is_ok() && wrong_ns.is_err()),
                Scope::ClusterWide => assert!(wrong_name.is_ok() && wrong_ns.is_ok()),
            }
            for other in [Scope::Strict, Scope::NamespaceWide, Scope::ClusterWide] {
                if other != scope {
                    assert!(unseal_value(&key, other, "apps", "db", &blob).is_err(), "{scope:?} opened as {other:?}");
                }
            }
        }
        let error =
            unseal_value(&key, Scope::Strict, "apps", "other", &seal_value(&cert, Scope::Strict, "apps", "db", b"hunter2", &mut rng))
                .unwrap_err();
        assert!(!error.to_string().contains("hunter2"));
    }

    #[test]
    fn pkcs1_keys_and_the_demo_key_work() {
        let key = PrivateKey::from_pem(KEY_PKCS1).unwrap();
        let blob = seal_value(&cert(), Scope::Strict, "a", "b", b"x", &mut StdRng::seed_from_u64(2));
        assert_eq!(unseal_value(&key, Scope::Strict, "a", "b", &blob).unwrap().as_slice(), b"x");
        let demo = Certificate::from_pem(DEMO_CERT, NOW).unwrap();
        let blob = seal_value(&demo, Scope::Strict, "a", "b", b"y", &mut StdRng::seed_from_u64(3));
        assert_eq!(&STANDARD.decode(&blob).unwrap()[..2], &[1, 0], "2048-bit: a 256-byte RSA part");
        assert_eq!(unseal_value(&PrivateKey::from_pem(DEMO_KEY).unwrap(), Scope::Strict, "a", "b", &blob).unwrap().as_slice(), b"y");
        assert!(unseal_value(&key, Scope::Strict, "a", "b", &blob).is_err(), "another key");
        assert!(PrivateKey::from_pem(CERT).is_err());
    }

    #[test]
    fn tampering_is_detected() {
        let key = PrivateKey::from_pem(KEY).unwrap();
        let blob = seal_value(&cert(), Scope::Strict, "a", "b", b"secret", &mut StdRng::seed_from_u64(4));
        let mut raw = STANDARD.decode(&blob).unwrap();
        let last = raw.len() - 20;
        raw[last] ^= 1;
        assert!(unseal_value(&key, Scope::Strict, "a", "b", &STANDARD.encode(&raw)).is_err());
        assert!(matches!(unseal_value(&key, Scope::Strict, "a", "b", "AAA"), Err(Error::Malformed { .. })));
        assert!(matches!(unseal_value(&key, Scope::Strict, "a", "b", "!!"), Err(Error::Malformed { .. })));
    }

    #[test]
    fn seeded_rng_is_deterministic() {
        let a = seal_value(&cert(), Scope::Strict, "a", "b", b"v", &mut StdRng::seed_from_u64(9));
        let b = seal_value(&cert(), Scope::Strict, "a", "b", b"v", &mut StdRng::seed_from_u64(9));
        let c = seal_value(&cert(), Scope::Strict, "a", "b", b"v", &mut StdRng::seed_from_u64(10));
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn bad_certificates_are_refused() {
        assert!(matches!(Certificate::from_pem(EXPIRED, NOW), Err(Error::Expired { not_after: 978_307_200 })));
        assert!(Certificate::from_pem(EXPIRED, 960_000_000).is_ok());
        assert!(matches!(Certificate::from_pem(CERT, 0), Err(Error::NotYetValid { .. })));
        assert!(matches!(Certificate::from_pem(CERT, 5_000_000_000), Err(Error::Expired { .. })));
        let demo = Certificate::from_pem(CERT, NOW).unwrap();
        assert_eq!(demo.expiry_warning(NOW), None);
        let soon = demo.not_after() - 86_400 * 12 - 5;
        let warning = demo.expiry_warning(soon).expect("12 days left");
        assert!(warning.starts_with("the certificate expires in 12 days (at "), "{warning}");
        assert!(demo.expiry_warning(demo.not_after() - 86_400 * EXPIRY_WARNING_DAYS).is_none());
        assert!(demo.expiry_warning(demo.not_after() - 86_400 * EXPIRY_WARNING_DAYS + 1).is_some());
        let error = Certificate::from_pem(EC, NOW).unwrap_err();
        assert!(matches!(error, Error::NotRsa(_)), "{error}");
        assert!(error.to_string().contains("1.2.840.10045.2.1"), "{error}");
        assert!(matches!(Certificate::from_pem(KEY, NOW), Err(Error::NoCertificate)));
        assert!(matches!(
            Certificate::from_pem("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n", NOW),
            Err(Error::BadCertificate(_))
        ));
        // The first of several blocks is used (kubeseal's cert.pem may hold more).
        let two = format!("{CERT}{EC}");
        assert_eq!(Certificate::from_pem(&two, NOW).unwrap().fingerprint(), cert().fingerprint());
        assert_eq!(cert().fingerprint().len(), 64);
        assert_ne!(Certificate::from_pem(DEMO_CERT, NOW).unwrap().fingerprint(), cert().fingerprint());
    }

    #[test]
    fn scope_annotations() {
        use serde_json::json;
        assert_eq!(scope_of(None), Scope::Strict);
        assert_eq!(scope_of(Some(&json!({NAMESPACE_WIDE: "true"}))), Scope::NamespaceWide);
        assert_eq!(scope_of(Some(&json!({NAMESPACE_WIDE: "true", CLUSTER_WIDE: "true"}))), Scope::ClusterWide);
        assert_eq!(scope_of(Some(&json!({CLUSTER_WIDE: "True"}))), Scope::Strict);
    }
}
