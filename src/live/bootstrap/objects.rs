//! The objects `tfrs bootstrap` writes itself (everything else comes from the rendered tree):
//! the sealing key material, the GitOps engine's root object, and the reuse of live ciphertext
//! so that a second run changes nothing.

use crate::render::names::{ARGOCD_NAMESPACE, FLUX_NAMESPACE};
use crate::secrets::seal::recorded_fingerprints;
use base64::Engine as _;
use serde_json::{Value, json};

/// The label every object bootstrap writes carries as `app.kubernetes.io/managed-by`. It is not
/// `tfrs`, so `reconcile --prune` (which deletes `managed-by=tfrs` objects the plan no longer
/// has) never deletes the key material or the root object that the plan does not hold.
pub const MANAGED_BY: &str = "tfrs-bootstrap";

/// The label the sealed-secrets controller reads its keys by (`--key-label`, default), with the
/// value that makes a key one it unseals with.
pub const SEALING_KEY_LABEL: (&str, &str) = ("sealedsecrets.bitnami.com/sealed-secrets-key", "active");

/// The prefix of the controller's key Secrets (`--key-prefix`, default).
const SEALING_KEY_PREFIX: &str = "sealed-secrets-key";

/// The Secret Flux's kustomize-controller decrypts SOPS files with (the rendered Kustomizations'
/// `decryption.secretRef`), and its one key: the controller takes every key ending in `.agekey`.
pub const SOPS_SECRET: (&str, &str) = ("sops-age", "age.agekey");

fn labels(cluster: &str) -> Value {
    json!({"app.kubernetes.io/managed-by": MANAGED_BY, "app.kubernetes.io/part-of": "tfrs", "tfrs.turingfocus.cn/bootstrap": cluster})
}

fn base64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The name of the key Secret for a certificate: the controller's prefix, then `tfrs` and the
/// first 12 hex digits of the certificate's SHA-256, so that a rotated certificate gets a new
/// Secret and the old key stays (the controller unseals with every active key).
#[must_use]
pub fn sealing_key_name(fingerprint: &str) -> String {
    format!("{SEALING_KEY_PREFIX}-tfrs-{}", &fingerprint[..fingerprint.len().min(12)])
}

/// The controller's key pair as the controller stores its own: a `kubernetes.io/tls` Secret
/// with `tls.crt` and `tls.key`, labelled as an active sealing key, in its namespace.
#[must_use]
pub fn sealing_key(cluster: &str, namespace: &str, fingerprint: &str, certificate: &[u8], private_key: &[u8]) -> Value {
    let mut labels = labels(cluster);
    labels[SEALING_KEY_LABEL.0] = json!(SEALING_KEY_LABEL.1);
    json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": sealing_key_name(fingerprint), "namespace": namespace, "labels": labels},
        "type": "kubernetes.io/tls",
        "data": {"tls.crt": base64(certificate), "tls.key": base64(private_key)},
    })
}

/// The `sops-age` Secret in `flux-system` holding the age identity file.
#[must_use]
pub fn sops_age(cluster: &str, identity: &[u8]) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": SOPS_SECRET.0, "namespace": FLUX_NAMESPACE, "labels": labels(cluster)},
        "type": "Opaque",
        "data": {SOPS_SECRET.1: base64(identity)},
    })
}

/// A Namespace, for a controller namespace that may not exist yet.
#[must_use]
pub fn namespace(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
}

/// The name of the root object: `tfrs-<cluster>`.
#[must_use]
pub fn root_name(cluster: &str) -> String {
    format!("tfrs-{cluster}")
}

/// Where the engine finds the tree.
#[derive(Debug, Clone)]
pub struct Source {
    /// The repository URL.
    pub url: String,
    /// The branch (Flux) or revision (Argo CD).
    pub revision: String,
    /// Flux: the GitRepository name.
    pub source_ref: String,
    /// Flux: the Secret with the repository's credentials, if any.
    pub secret: Option<String>,
}

/// Flux's GitRepository for the tree's repository.
#[must_use]
pub fn git_repository(cluster: &str, source: &Source) -> Value {
    let mut spec = json!({"interval": "1m", "url": source.url, "ref": {"branch": source.revision}});
    if let Some(secret) = &source.secret {
        spec["secretRef"] = json!({"name": secret});
    }
    json!({
        "apiVersion": "source.toolkit.fluxcd.io/v1",
        "kind": "GitRepository",
        "metadata": {"name": source.source_ref, "namespace": FLUX_NAMESPACE, "labels": labels(cluster)},
        "spec": spec,
    })
}

/// Flux's root Kustomization: applies `./clusters/<cluster>` (the components' Kustomizations),
/// pruning what the tree drops. No `decryption`: each component's Kustomization has its own.
#[must_use]
pub fn flux_root(cluster: &str, source: &Source) -> Value {
    json!({
        "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
        "kind": "Kustomization",
        "metadata": {"name": root_name(cluster), "namespace": FLUX_NAMESPACE, "labels": labels(cluster)},
        "spec": {
            "interval": "10m",
            "retryInterval": "1m",
            "timeout": "5m",
            "path": format!("./{}", crate::layout::cluster_dir(cluster)),
            "prune": true,
            "wait": false,
            "sourceRef": {"kind": "GitRepository", "name": source.source_ref},
        },
    })
}

/// Argo CD's root Application (app of apps): creates the components' Applications from
/// `clusters/<cluster>` at the spec's revision, pruning and self-healing.
#[must_use]
pub fn argocd_root(cluster: &str, source: &Source) -> Value {
    json!({
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": {"name": root_name(cluster), "namespace": ARGOCD_NAMESPACE, "labels": labels(cluster)},
        "spec": {
            "project": "default",
            "source": {"repoURL": source.url, "targetRevision": source.revision, "path": crate::layout::cluster_dir(cluster)},
            "destination": {"server": "https://kubernetes.default.svc", "namespace": ARGOCD_NAMESPACE},
            // NB: an automated sync does not retry a failed sync of the same revision by
            // itself; the components' Applications retry the same way.
            "syncPolicy": {
                "automated": {"prune": true, "selfHeal": true},
                "retry": {"limit": -1, "backoff": {"duration": "10s", "factor": 2, "maxDuration": "5m"}},
            },
        },
    })
}

/// `url` without a trailing `/` or `.git`, for comparing two spellings of one repository.
#[must_use]
pub fn same_repository(a: &str, b: &str) -> bool {
    let normal = |url: &str| url.trim_end_matches('/').trim_end_matches(".git").to_ascii_lowercase();
    normal(a) == normal(b)
}

/// Keeps the live ciphertext of every sealed value whose keyed fingerprint is the same in
/// `desired` and `live`: the value is the same, so re-sealing it would only change the bytes
/// (sealing is randomized) and make every run a change.
pub fn reuse_sealed(desired: &mut Value, live: &Value) {
    if desired.get("kind").and_then(Value::as_str) != Some("SealedSecret") {
        return;
    }
    let (Some(wanted), Some(found)) = (recorded_fingerprints(desired), recorded_fingerprints(live)) else { return };
    let Some(live_data) = live.pointer("/spec/encryptedData").and_then(Value::as_object) else { return };
    let Some(data) = desired.pointer_mut("/spec/encryptedData").and_then(Value::as_object_mut) else { return };
    for (key, value) in data.iter_mut() {
        if let (Some(a), Some(b), Some(old)) = (wanted.get(key), found.get(key), live_data.get(key))
            && a == b
        {
            *value = old.clone();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_value_keeps_its_live_ciphertext_only_when_its_fingerprint_is_the_same() {
        let sealed = |fingerprints: &str, a: &str, b: &str| {
            json!({"kind": "SealedSecret", "metadata": {"annotations": {"tfrs.turingfocus.cn/fingerprints": fingerprints}},
                "spec": {"encryptedData": {"a": a, "b": b}}})
        };
        let live = sealed(r#"{"a":"1","b":"2"}"#, "live-a", "live-b");
        let mut desired = sealed(r#"{"a":"1","b":"3"}"#, "new-a", "new-b");
        reuse_sealed(&mut desired, &live);
        assert_eq!(desired["spec"]["encryptedData"], json!({"a": "live-a", "b": "new-b"}));
    }

    #[test]
    fn names_and_repositories() {
        assert_eq!(sealing_key_name("0123456789abcdef0123"), "sealed-secrets-key-tfrs-0123456789ab");
        assert!(same_repository("ssh://git@git.example.com/platform/gitops.git", "ssh://git@git.example.com/platform/gitops/"));
        assert!(!same_repository("https://a/x", "https://a/y"));
    }
}
