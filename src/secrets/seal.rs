//! The seal stage: a [`PlainSecret`] in, the object that is written out (a `SealedSecret` or a
//! SOPS-encrypted `Secret`), reusing the previous ciphertext wherever the plaintext is unchanged.
//!
//! Zero-diff rules (see `docs/secrets.md`):
//! - SealedSecrets: a key keeps its old blob byte for byte when `previous` is a SealedSecret of
//!   the same name, namespace and scope and its fingerprint annotation holds the same
//!   fingerprint for that key (the fingerprint covers backend, certificate, scope, namespace,
//!   name, key and value). Other keys are sealed afresh; removed keys are dropped. When every key
//!   is reused the output equals `previous`.
//! - SOPS: `previous` is returned whole when it is a SOPS file with the same recipients, the same
//!   metadata, type and key set, and matching fingerprints for every key. Otherwise everything is
//!   re-encrypted under a fresh data key (without the old data key, values cannot be merged).
//! - Without a fingerprint key (no master key) nothing is reused and no fingerprints are written.

use super::fingerprint::{ANNOTATION, Binding, FingerprintKey};
use super::sealed::{self, CLUSTER_WIDE, Certificate, NAMESPACE_WIDE, scope_name};
use super::{PlainSecret, Scope, sops};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use rand::CryptoRng;
use serde_json::{Map, Value as Json};
use std::collections::BTreeMap;

/// How secrets are sealed (from `spec.sealing`).
#[derive(Debug, Clone)]
pub enum Sealer {
    /// Bitnami Sealed Secrets with the controller's certificate.
    SealedSecrets {
        /// The controller certificate.
        certificate: Certificate,
    },
    /// SOPS for age recipients.
    SopsAge {
        /// `age1…` X25519 recipients.
        recipients: Vec<String>,
        /// `sops.lastmodified`: RFC 3339 UTC, whole seconds, `Z` (from an injected clock).
        lastmodified: String,
    },
}

impl Sealer {
    /// The object a Secret is sealed into: a `bitnami.com/v1alpha1` SealedSecret, or a `v1`
    /// Secret whose values SOPS encrypts; same namespace and name.
    #[must_use]
    pub fn target(&self, secret: &PlainSecret) -> crate::object::ObjectId {
        let (api_version, kind) = match self {
            Sealer::SealedSecrets { .. } => (SEALED_SECRET_API, "SealedSecret"),
            Sealer::SopsAge { .. } => ("v1", "Secret"),
        };
        crate::object::ObjectId::new(api_version, kind, Some(&secret.namespace), &secret.name)
    }
}

/// The API version of the SealedSecret kind.
const SEALED_SECRET_API: &str = "bitnami.com/v1alpha1";

/// Errors of the seal stage (kept small: callers embed it in their own errors).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// SOPS encryption failed (bad recipient, bad `lastmodified`).
    #[error("cannot encrypt Secret `{secret}` with sops: {source}")]
    Sops {
        /// `namespace/name` of the Secret.
        secret: String,
        /// The cause.
        source: Box<sops::Error>,
    },
    /// A data key of the Secret is empty.
    #[error("Secret `{secret}` has an empty data key")]
    EmptyKey {
        /// `namespace/name` of the Secret.
        secret: String,
    },
}

/// `sealed-secrets` or `sops-age`: the backend part of a fingerprint's binding.
#[must_use]
pub fn backend_name(sealer: &Sealer) -> &'static str {
    match sealer {
        Sealer::SealedSecrets { .. } => "sealed-secrets",
        Sealer::SopsAge { .. } => "sops-age",
    }
}

/// The sealer part of a fingerprint's binding: the certificate's fingerprint, or the sorted age
/// recipients one per line. Public: a certificate and recipients are public keys.
#[must_use]
pub fn sealer_identity(sealer: &Sealer) -> String {
    match sealer {
        Sealer::SealedSecrets { certificate } => certificate.fingerprint(),
        Sealer::SopsAge { recipients, .. } => {
            let mut sorted: Vec<&str> = recipients.iter().map(|r| r.trim()).collect();
            sorted.sort_unstable();
            sorted.dedup();
            sorted.join("\n")
        }
    }
}

fn string_map(map: &BTreeMap<String, String>) -> Json {
    Json::Object(map.iter().map(|(k, v)| (k.clone(), Json::String(v.clone()))).collect())
}

fn scope_annotation(scope: Scope) -> Option<&'static str> {
    match scope {
        Scope::Strict => None,
        Scope::NamespaceWide => Some(NAMESPACE_WIDE),
        Scope::ClusterWide => Some(CLUSTER_WIDE),
    }
}

/// `name`, `namespace`, then `labels` and `annotations` when not empty.
fn metadata(secret: &PlainSecret, labels: &BTreeMap<String, String>, annotations: &BTreeMap<String, String>) -> Json {
    let mut m = Map::new();
    m.insert("name".to_owned(), Json::String(secret.name.clone()));
    m.insert("namespace".to_owned(), Json::String(secret.namespace.clone()));
    if !labels.is_empty() {
        m.insert("labels".to_owned(), string_map(labels));
    }
    if !annotations.is_empty() {
        m.insert("annotations".to_owned(), string_map(annotations));
    }
    Json::Object(m)
}

/// The fingerprints recorded in an object's `metadata.annotations`, if any.
#[must_use]
pub fn recorded_fingerprints(object: &Json) -> Option<BTreeMap<String, String>> {
    let text = object.get("metadata")?.get("annotations")?.get(ANNOTATION)?.as_str()?;
    serde_json::from_str(text).ok()
}

/// Seals `secret`, reusing ciphertext from `previous` (the object written last time, as JSON)
/// where the fingerprints allow.
///
/// `rng` supplies all randomness we choose (session keys, OAEP seeds, SOPS data keys and IVs):
/// pass a seeded `rand::rngs::StdRng` in tests and `rand::rng()` in the CLI.
///
/// # Errors
///
/// SOPS encryption problems (bad recipients or `lastmodified`), an empty data key.
pub fn seal<R: CryptoRng + ?Sized>(
    secret: &PlainSecret,
    previous: Option<&Json>,
    sealer: &Sealer,
    fingerprint_key: Option<&FingerprintKey>,
    rng: &mut R,
) -> Result<Json, Error> {
    if secret.data.keys().any(String::is_empty) {
        return Err(Error::EmptyKey { secret: format!("{}/{}", secret.namespace, secret.name) });
    }
    let backend = backend_name(sealer);
    let identity = sealer_identity(sealer);
    let binding = binding(secret, backend, &identity);
    let fingerprints: Option<BTreeMap<String, String>> =
        fingerprint_key.map(|fk| secret.data.iter().map(|(key, value)| (key.clone(), fk.fingerprint(&binding, key, value))).collect());
    match sealer {
        Sealer::SealedSecrets { certificate } => Ok(seal_sealed_secret(secret, previous, certificate, fingerprints.as_ref(), rng)),
        Sealer::SopsAge { recipients, lastmodified } => seal_sops(secret, previous, recipients, lastmodified, fingerprints.as_ref(), rng),
    }
}

/// What a fingerprint of `secret`'s values is bound to under sealer `identity` of `backend`.
fn binding<'s>(secret: &'s PlainSecret, backend: &'s str, identity: &'s str) -> Binding<'s> {
    Binding { backend, sealer: identity, scope: scope_name(secret.scope), namespace: &secret.namespace, name: &secret.name }
}

/// A digest of everything [`seal`]'s output depends on but the previous ciphertext and the
/// RNG: the backend, the sealer's identity, the Secret's identity, type, scope, labels and
/// annotations, and each key with its value's fingerprint (never the value). When a file was
/// written by [`seal`] from equal inputs, sealing again over that file gives the same bytes:
/// every fingerprint matches, so every ciphertext is kept (sealed-secrets) or the file is
/// returned as it is (SOPS). What lets the render memo keep a sealed file without reading it.
#[must_use]
pub fn seal_inputs(secret: &PlainSecret, sealer: &Sealer, fingerprint_key: &FingerprintKey) -> [u8; 32] {
    use sha2::{Digest, Sha256};
    let (backend, identity) = (backend_name(sealer), sealer_identity(sealer));
    let binding = binding(secret, backend, &identity);
    let mut bytes = Vec::with_capacity(512);
    bytes.extend_from_slice(b"tfrs/seal-inputs/v1");
    for field in [backend, identity.as_str(), binding.scope, &secret.namespace, &secret.name, &secret.kind] {
        crate::secrets::bytes::push_lp(&mut bytes, field.as_bytes());
    }
    for map in [&secret.labels, &secret.annotations] {
        bytes.extend_from_slice(&(map.len() as u64).to_be_bytes());
        for (key, value) in map {
            crate::secrets::bytes::push_lp(&mut bytes, key.as_bytes());
            crate::secrets::bytes::push_lp(&mut bytes, value.as_bytes());
        }
    }
    bytes.extend_from_slice(&(secret.data.len() as u64).to_be_bytes());
    for (key, value) in &secret.data {
        crate::secrets::bytes::push_lp(&mut bytes, key.as_bytes());
        crate::secrets::bytes::push_lp(&mut bytes, fingerprint_key.fingerprint(&binding, key, value).as_bytes());
    }
    Sha256::digest(&bytes).into()
}

/// The keys of `secret` whose value `previous` already held, sealed by another sealer
/// (`backend`, `identity`: what [`backend_name`] and [`sealer_identity`] said of it): its
/// recorded fingerprints are recomputed under that sealer's binding. What a new certificate
/// or new recipients reseal without changing a value.
#[must_use]
pub fn same_values(secret: &PlainSecret, previous: &Json, backend: &str, identity: &str, fingerprint_key: &FingerprintKey) -> Vec<String> {
    let Some(recorded) = recorded_fingerprints(previous) else { return Vec::new() };
    let binding = binding(secret, backend, identity);
    secret
        .data
        .iter()
        .filter(|(key, value)| recorded.get(*key).is_some_and(|fp| *fp == fingerprint_key.fingerprint(&binding, key, value)))
        .map(|(key, _)| key.clone())
        .collect()
}

fn fingerprint_annotation(fingerprints: &BTreeMap<String, String>) -> String {
    serde_json::to_string(fingerprints).expect("a string map serializes")
}

fn seal_sealed_secret<R: CryptoRng + ?Sized>(
    secret: &PlainSecret,
    previous: Option<&Json>,
    certificate: &Certificate,
    fingerprints: Option<&BTreeMap<String, String>>,
    rng: &mut R,
) -> Json {
    // The blobs we may keep: same kind, name, namespace and scope, and recorded fingerprints.
    let reusable = previous.filter(|p| {
        p.get("kind").and_then(Json::as_str) == Some("SealedSecret")
            && p.get("metadata").and_then(|m| m.get("name")).and_then(Json::as_str) == Some(secret.name.as_str())
            && p.get("metadata").and_then(|m| m.get("namespace")).and_then(Json::as_str) == Some(secret.namespace.as_str())
            && sealed::scope_of(p.get("metadata").and_then(|m| m.get("annotations"))) == secret.scope
    });
    let old_fingerprints = reusable.and_then(recorded_fingerprints).unwrap_or_default();
    let old_blobs = reusable.and_then(|p| p.get("spec")?.get("encryptedData")?.as_object());
    let mut encrypted = Map::new();
    for (key, value) in &secret.data {
        let kept = fingerprints
            .and_then(|new| new.get(key))
            .filter(|fp| old_fingerprints.get(key) == Some(*fp))
            .and_then(|_| old_blobs?.get(key)?.as_str());
        let blob = match kept {
            Some(blob) => blob.to_owned(),
            None => sealed::seal_value(certificate, secret.scope, &secret.namespace, &secret.name, value, rng),
        };
        encrypted.insert(key.clone(), Json::String(blob));
    }
    let mut outer_annotations = BTreeMap::new();
    let mut template_annotations = secret.annotations.clone();
    if let Some(annotation) = scope_annotation(secret.scope) {
        outer_annotations.insert(annotation.to_owned(), "true".to_owned());
        template_annotations.insert(annotation.to_owned(), "true".to_owned());
    }
    if let Some(fingerprints) = fingerprints {
        outer_annotations.insert(ANNOTATION.to_owned(), fingerprint_annotation(fingerprints));
    }
    let mut template = Map::new();
    template.insert("metadata".to_owned(), metadata(secret, &secret.labels, &template_annotations));
    template.insert("type".to_owned(), Json::String(secret_type(secret)));
    let mut spec = Map::new();
    spec.insert("encryptedData".to_owned(), Json::Object(encrypted));
    spec.insert("template".to_owned(), Json::Object(template));
    let mut out = Map::new();
    out.insert("apiVersion".to_owned(), Json::String(SEALED_SECRET_API.to_owned()));
    out.insert("kind".to_owned(), Json::String("SealedSecret".to_owned()));
    out.insert("metadata".to_owned(), metadata(secret, &secret.labels, &outer_annotations));
    out.insert("spec".to_owned(), Json::Object(spec));
    Json::Object(out)
}

fn secret_type(secret: &PlainSecret) -> String {
    if secret.kind.is_empty() { "Opaque".to_owned() } else { secret.kind.clone() }
}

/// The plaintext Secret a SOPS file holds: UTF-8 values in `stringData`, others base64 in `data`.
fn sops_plain(secret: &PlainSecret, fingerprints: Option<&BTreeMap<String, String>>) -> Json {
    let mut annotations = secret.annotations.clone();
    if let Some(fingerprints) = fingerprints {
        annotations.insert(ANNOTATION.to_owned(), fingerprint_annotation(fingerprints));
    }
    let mut out = Map::new();
    out.insert("apiVersion".to_owned(), Json::String("v1".to_owned()));
    out.insert("kind".to_owned(), Json::String("Secret".to_owned()));
    out.insert("metadata".to_owned(), metadata(secret, &secret.labels, &annotations));
    out.insert("type".to_owned(), Json::String(secret_type(secret)));
    let (mut text, mut binary) = (Map::new(), Map::new());
    for (key, value) in &secret.data {
        match std::str::from_utf8(value) {
            Ok(utf8) => text.insert(key.clone(), Json::String(utf8.to_owned())),
            Err(_) => binary.insert(key.clone(), Json::String(STANDARD.encode(value.as_slice()))),
        };
    }
    let has_binary = !binary.is_empty();
    if has_binary {
        out.insert("data".to_owned(), Json::Object(binary));
    }
    if !text.is_empty() || !has_binary {
        out.insert("stringData".to_owned(), Json::Object(text));
    }
    Json::Object(out)
}

fn key_set(object: &Json) -> Vec<(String, String)> {
    let mut keys = Vec::new();
    for section in ["data", "stringData"] {
        if let Some(map) = object.get(section).and_then(Json::as_object) {
            keys.extend(map.keys().map(|k| (section.to_owned(), k.clone())));
        }
    }
    keys.sort();
    keys
}

fn seal_sops<R: CryptoRng + ?Sized>(
    secret: &PlainSecret,
    previous: Option<&Json>,
    recipients: &[String],
    lastmodified: &str,
    fingerprints: Option<&BTreeMap<String, String>>,
    rng: &mut R,
) -> Result<Json, Error> {
    let plain = sops_plain(secret, fingerprints);
    if let (Some(previous), Some(fingerprints)) = (previous, fingerprints) {
        let mut wanted: Vec<String> = recipients.iter().map(|r| r.trim().to_owned()).collect();
        wanted.sort();
        wanted.dedup();
        let unchanged = sops::is_sops(previous)
            && sops::recipients_of(previous) == wanted
            && ["apiVersion", "kind", "metadata", "type"].iter().all(|f| previous.get(f) == plain.get(f))
            && key_set(previous) == key_set(&plain)
            && recorded_fingerprints(previous).as_ref() == Some(fingerprints);
        if unchanged {
            return Ok(previous.clone());
        }
    }
    sops::encrypt(&plain, recipients, lastmodified, rng)
        .map_err(|source| Error::Sops { secret: format!("{}/{}", secret.namespace, secret.name), source: Box::new(source) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::secrets::sealed::tests::{KEY, cert};
    use crate::secrets::sealed::{PrivateKey, unseal};
    use crate::secrets::sops::tests::{IDENTITY, RECIPIENT};
    use rand::SeedableRng;
    use rand::rngs::StdRng;
    use zeroize::Zeroizing;

    fn plain(scope: Scope) -> PlainSecret {
        let mut data = BTreeMap::new();
        data.insert("password".to_owned(), Zeroizing::new(b"hunter2".to_vec()));
        data.insert("username".to_owned(), Zeroizing::new(b"app".to_vec()));
        data.insert("blob".to_owned(), Zeroizing::new(vec![0xff, 0x00, 0x10]));
        PlainSecret {
            name: "db".to_owned(),
            namespace: "apps".to_owned(),
            kind: "Opaque".to_owned(),
            labels: BTreeMap::from([("app.kubernetes.io/name".to_owned(), "pg".to_owned())]),
            annotations: BTreeMap::from([("note".to_owned(), "x".to_owned())]),
            data,
            scope,
        }
    }

    fn fk() -> FingerprintKey {
        FingerprintKey::from_bytes([5; 32])
    }

    /// What the writer does, then what the next render reads back.
    fn through_yaml(value: &Json) -> (String, Json) {
        let text = crate::manifest::to_yaml(value).unwrap();
        let parsed = crate::spec::yaml::parse(0, &text).unwrap()[0].to_json();
        (text, parsed)
    }

    fn sealed_secrets() -> Sealer {
        Sealer::SealedSecrets { certificate: cert() }
    }

    fn sops_sealer(lastmodified: &str) -> Sealer {
        Sealer::SopsAge { recipients: vec![RECIPIENT.to_owned()], lastmodified: lastmodified.to_owned() }
    }

    #[test]
    fn seal_inputs_change_with_whatever_the_sealed_file_depends_on() {
        let base = seal_inputs(&plain(Scope::Strict), &sealed_secrets(), &fk());
        assert_eq!(base, seal_inputs(&plain(Scope::Strict), &sealed_secrets(), &fk()));
        // NB: SOPS's `lastmodified` is not an input: an unchanged SOPS file is kept whole.
        assert_eq!(
            seal_inputs(&plain(Scope::Strict), &sops_sealer("a"), &fk()),
            seal_inputs(&plain(Scope::Strict), &sops_sealer("b"), &fk())
        );
        type Change = Box<dyn Fn(&mut PlainSecret)>;
        let changes: Vec<(&str, Change)> = vec![
            ("a value", Box::new(|s| s.data.insert("password".into(), Zeroizing::new(b"hunter3".to_vec())).map(drop).unwrap_or(()))),
            ("a key", Box::new(|s| s.data.insert("extra".into(), Zeroizing::new(b"1".to_vec())).map(drop).unwrap_or(()))),
            ("a label", Box::new(|s| s.labels.insert("tier".into(), "db".into()).map(drop).unwrap_or(()))),
            ("an annotation", Box::new(|s| s.annotations.insert("note".into(), "y".into()).map(drop).unwrap_or(()))),
            ("the type", Box::new(|s| s.kind = "kubernetes.io/basic-auth".into())),
            ("the scope", Box::new(|s| s.scope = Scope::NamespaceWide)),
            ("the name", Box::new(|s| s.name = "db2".into())),
            ("the namespace", Box::new(|s| s.namespace = "other".into())),
        ];
        for (what, change) in changes {
            let mut secret = plain(Scope::Strict);
            change(&mut secret);
            assert_ne!(seal_inputs(&secret, &sealed_secrets(), &fk()), base, "{what}");
        }
        assert_ne!(seal_inputs(&plain(Scope::Strict), &sops_sealer("a"), &fk()), base, "the backend");
        assert_ne!(seal_inputs(&plain(Scope::Strict), &sealed_secrets(), &FingerprintKey::from_bytes([6; 32])), base, "the master key");
    }

    #[test]
    fn sealed_secret_shape_and_unseal_in_every_scope() {
        let key = PrivateKey::from_pem(KEY).unwrap();
        for scope in [Scope::Strict, Scope::NamespaceWide, Scope::ClusterWide] {
            let out = seal(&plain(scope), None, &sealed_secrets(), Some(&fk()), &mut StdRng::seed_from_u64(1)).unwrap();
            assert_eq!(out["apiVersion"], "bitnami.com/v1alpha1");
            assert_eq!(out["kind"], "SealedSecret");
            assert_eq!(out["metadata"]["labels"], out["spec"]["template"]["metadata"]["labels"]);
            assert_eq!(out["spec"]["template"]["type"], "Opaque");
            assert_eq!(out["spec"]["template"]["metadata"]["annotations"]["note"], "x");
            assert!(out["metadata"]["annotations"].get("note").is_none());
            let keys: Vec<&String> = out["spec"]["encryptedData"].as_object().unwrap().keys().collect();
            assert_eq!(keys, ["blob", "password", "username"]);
            if let Some(annotation) = scope_annotation(scope) {
                assert_eq!(out["metadata"]["annotations"][annotation], "true");
                assert_eq!(out["spec"]["template"]["metadata"]["annotations"][annotation], "true");
            }
            let fps = recorded_fingerprints(&out).unwrap();
            assert_eq!(fps.len(), 3);
            let opened = unseal(&key, &out).unwrap();
            assert_eq!(opened.scope, scope);
            assert_eq!(opened.data["password"].as_slice(), b"hunter2");
            assert_eq!(opened.data["blob"].as_slice(), &[0xff, 0x00, 0x10]);
            // Renamed: strict and namespace-wide blobs no longer open.
            let mut renamed = out.clone();
            renamed["metadata"]["name"] = Json::from("other");
            assert_eq!(unseal(&key, &renamed).is_ok(), scope != Scope::Strict);
            let text = serde_json::to_string(&out).unwrap();
            assert!(!text.contains("hunter2"));
        }
    }

    #[test]
    fn unchanged_input_gives_identical_bytes_through_yaml() {
        let first = seal(&plain(Scope::Strict), None, &sealed_secrets(), Some(&fk()), &mut StdRng::seed_from_u64(1)).unwrap();
        let (text, previous) = through_yaml(&first);
        // Another RNG: everything must come from `previous`.
        let second = seal(&plain(Scope::Strict), Some(&previous), &sealed_secrets(), Some(&fk()), &mut StdRng::seed_from_u64(99)).unwrap();
        assert_eq!(through_yaml(&second).0, text);
    }

    #[test]
    fn one_changed_key_reseals_only_that_key() {
        let first = seal(&plain(Scope::Strict), None, &sealed_secrets(), Some(&fk()), &mut StdRng::seed_from_u64(1)).unwrap();
        let (_, previous) = through_yaml(&first);
        let mut changed = plain(Scope::Strict);
        changed.data.insert("password".to_owned(), Zeroizing::new(b"hunter3".to_vec()));
        changed.data.remove("blob");
        changed.data.insert("new".to_owned(), Zeroizing::new(b"n".to_vec()));
        let second = seal(&changed, Some(&previous), &sealed_secrets(), Some(&fk()), &mut StdRng::seed_from_u64(2)).unwrap();
        let (old, new) = (&first["spec"]["encryptedData"], &second["spec"]["encryptedData"]);
        assert_eq!(old["username"], new["username"]);
        assert_ne!(old["password"], new["password"]);
        assert!(new.get("blob").is_none());
        assert!(new.get("new").is_some());
        let opened = unseal(&PrivateKey::from_pem(KEY).unwrap(), &second).unwrap();
        assert_eq!(opened.data["password"].as_slice(), b"hunter3");
        assert_eq!(opened.data["username"].as_slice(), b"app");
    }

    #[test]
    fn a_changed_binding_reseals_everything() {
        let first = seal(&plain(Scope::Strict), None, &sealed_secrets(), Some(&fk()), &mut StdRng::seed_from_u64(1)).unwrap();
        let (_, previous) = through_yaml(&first);
        let blobs = |v: &Json| v["spec"]["encryptedData"].as_object().unwrap().values().cloned().collect::<Vec<_>>();
        let mut renamed = plain(Scope::Strict);
        renamed.name = "db2".to_owned();
        let mut wider = plain(Scope::NamespaceWide);
        wider.name = "db".to_owned();
        let other_cert = Sealer::SealedSecrets {
            certificate: Certificate::from_pem(include_str!("../../fixtures/demo/keys/sealed-secrets.pem"), 1_893_456_000).unwrap(),
        };
        let cases = [
            seal(&renamed, Some(&previous), &sealed_secrets(), Some(&fk()), &mut StdRng::seed_from_u64(2)).unwrap(),
            seal(&wider, Some(&previous), &sealed_secrets(), Some(&fk()), &mut StdRng::seed_from_u64(2)).unwrap(),
            seal(&plain(Scope::Strict), Some(&previous), &other_cert, Some(&fk()), &mut StdRng::seed_from_u64(2)).unwrap(),
            seal(
                &plain(Scope::Strict),
                Some(&previous),
                &sealed_secrets(),
                Some(&FingerprintKey::from_bytes([6; 32])),
                &mut StdRng::seed_from_u64(2),
            )
            .unwrap(),
            // No fingerprint key: never reuse, and record nothing.
            seal(&plain(Scope::Strict), Some(&previous), &sealed_secrets(), None, &mut StdRng::seed_from_u64(2)).unwrap(),
        ];
        for case in &cases {
            for blob in blobs(case) {
                assert!(!blobs(&first).contains(&blob));
            }
        }
        assert!(recorded_fingerprints(&cases[4]).is_none());
    }

    #[test]
    fn seeded_rng_is_deterministic() {
        let a = seal(&plain(Scope::Strict), None, &sealed_secrets(), Some(&fk()), &mut StdRng::seed_from_u64(7)).unwrap();
        let b = seal(&plain(Scope::Strict), None, &sealed_secrets(), Some(&fk()), &mut StdRng::seed_from_u64(7)).unwrap();
        assert_eq!(serde_json::to_string(&a).unwrap(), serde_json::to_string(&b).unwrap());
    }

    #[test]
    fn sops_output_and_whole_file_reuse() {
        let sealer = sops_sealer("2025-01-02T03:04:05Z");
        let first = seal(&plain(Scope::Strict), None, &sealer, Some(&fk()), &mut StdRng::seed_from_u64(1)).unwrap();
        assert_eq!(first["kind"], "Secret");
        assert!(recorded_fingerprints(&first).is_some());
        assert!(first["stringData"]["password"].as_str().unwrap().ends_with("type:str]"));
        assert!(first["data"]["blob"].as_str().unwrap().starts_with("ENC["));
        let decrypted = sops::decrypt(&first, IDENTITY).unwrap();
        assert_eq!(decrypted["stringData"]["password"], "hunter2");
        assert_eq!(decrypted["data"]["blob"], "/wAQ");
        let (text, previous) = through_yaml(&first);
        // A later clock: unchanged input still gives the same file.
        let later = sops_sealer("2026-01-02T03:04:05Z");
        let again = seal(&plain(Scope::Strict), Some(&previous), &later, Some(&fk()), &mut StdRng::seed_from_u64(2)).unwrap();
        assert_eq!(through_yaml(&again).0, text);
        // One changed value: the whole file is re-encrypted and still decrypts.
        let mut changed = plain(Scope::Strict);
        changed.data.insert("password".to_owned(), Zeroizing::new(b"hunter3".to_vec()));
        let third = seal(&changed, Some(&previous), &later, Some(&fk()), &mut StdRng::seed_from_u64(2)).unwrap();
        assert_eq!(third["sops"]["lastmodified"], "2026-01-02T03:04:05Z");
        assert_eq!(sops::decrypt(&third, IDENTITY).unwrap()["stringData"]["password"], "hunter3");
        // A changed label also re-encrypts (it is covered by the MAC).
        let mut relabelled = plain(Scope::Strict);
        relabelled.labels.insert("x".to_owned(), "y".to_owned());
        let fourth = seal(&relabelled, Some(&previous), &later, Some(&fk()), &mut StdRng::seed_from_u64(2)).unwrap();
        assert_ne!(fourth["sops"]["mac"], first["sops"]["mac"]);
        // No fingerprint key: always re-encrypted.
        let fifth = seal(&plain(Scope::Strict), Some(&previous), &later, None, &mut StdRng::seed_from_u64(2)).unwrap();
        assert_ne!(fifth["sops"]["mac"], first["sops"]["mac"]);
    }

    #[test]
    fn sops_errors_name_the_secret() {
        let sealer = Sealer::SopsAge { recipients: vec!["nope".to_owned()], lastmodified: "2025-01-02T03:04:05Z".to_owned() };
        let error = seal(&plain(Scope::Strict), None, &sealer, None, &mut StdRng::seed_from_u64(1)).unwrap_err().to_string();
        assert!(error.contains("`apps/db`") && error.contains("`nope`"), "{error}");
    }
}
