//! Our output checked by real upstream tools, built from their Go modules by `scripts/peers.sh`:
//! Bitnami's `kubeseal --recovery-unseal` opens every SealedSecret that the sealed-secrets
//! fixtures render, to the same Secret as `tfrs unseal`, and honours all three sealing scopes;
//! `flux build kustomization --dry-run` builds every Flux Kustomization that the Flux fixtures
//! render. A peer that is not built skips with one line, except under `CI=true` where it fails.

#![allow(clippy::unwrap_used)] // a test crate: a panic is the failure report

mod common;

use base64::Engine as _;
use common::{report, root};
use serde_json::{Value as Json, json};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use tfrs_gitops::manifest::{read_object, to_yaml};
use tfrs_gitops::secrets::{Certificate, PlainSecret, Scope, Sealer, seal};
use zeroize::Zeroizing;

/// The demo sealed-secrets controller's private key (DEV ONLY, see fixtures/demo/keys/README.md).
const PRIVATE_KEY: &str = "fixtures/demo/keys/sealed-secrets.key";
const STANDARD: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

/// The peer `tool` built by `scripts/peers.sh`, or `None` (a failure under `CI=true`).
fn peer(tool: &str) -> Option<PathBuf> {
    let output = Command::new(root().join("scripts/peers.sh")).args(["path", tool]).output().expect("scripts/peers.sh runs");
    if output.status.success() {
        return Some(PathBuf::from(String::from_utf8(output.stdout).unwrap().trim()));
    }
    assert!(std::env::var("CI").as_deref() != Ok("true"), "the `{tool}` peer must be built under CI=true (scripts/peers.sh build)");
    eprintln!("skipping: the `{tool}` peer is not built (run scripts/peers.sh build)");
    None
}

/// The YAML documents of a stream (documents start at a `---` line), as JSON.
fn documents(text: &str) -> Vec<Json> {
    let mut chunks = vec![String::new()];
    for line in text.lines() {
        if line == "---" || line.starts_with("--- ") {
            chunks.push(String::new());
        } else {
            let chunk = chunks.last_mut().unwrap();
            chunk.push_str(line);
            chunk.push('\n');
        }
    }
    chunks.iter().filter_map(|chunk| read_object(chunk.as_bytes())).filter(Json::is_object).collect()
}

/// Every file below `dir`, sorted.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(files(&path));
        } else {
            out.push(path);
        }
    }
    out.sort();
    out
}

/// A rendered fixture and its cluster's sealing backend and GitOps engine.
struct Fixture {
    name: String,
    backend: String,
    engine: String,
}

/// Every fixture the render tests render (`demo`, `render-*`), read from its `TFRCluster`
/// (the spec's defaults: sealed-secrets, flux).
fn fixtures() -> Vec<Fixture> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(root().join("fixtures")).unwrap() {
        let dir = entry.unwrap().path();
        let name = dir.file_name().unwrap().to_str().unwrap().to_owned();
        if name != "demo" && !name.starts_with("render-") {
            continue;
        }
        let spec_files = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|e| e == "yaml"));
        let clusters: Vec<Json> = spec_files
            .flat_map(|p| documents(&std::fs::read_to_string(p).unwrap()))
            .filter(|d| d["kind"] == "TFRCluster")
            .map(|d| d["spec"].clone())
            .collect();
        assert_eq!(clusters.len(), 1, "{name}: one TFRCluster");
        let backend = clusters[0]["sealing"]["backend"].as_str().unwrap_or("sealed-secrets").to_owned();
        let engine = clusters[0]["gitops"]["engine"].as_str().unwrap_or("flux").to_owned();
        out.push(Fixture { name, backend, engine });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// `tfrs render fixtures/<fixture>` into `out`, with the demo master key and the values the
/// fixtures read from the environment.
fn render(fixture: &str, out: &Path) {
    let output = common::fixture_command().args(["render", &format!("fixtures/{fixture}"), "--out"]).arg(out).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{fixture}: {}", report(&output));
}

/// The parts of a Secret both unsealers must agree on, values as base64.
fn secret_view(secret: &Json, values: BTreeMap<String, String>) -> Json {
    let metadata = &secret["metadata"];
    let map_or_empty = |v: &Json| if v.is_null() { json!({}) } else { v.clone() };
    json!({
        "name": metadata["name"],
        "namespace": metadata["namespace"],
        "labels": map_or_empty(&metadata["labels"]),
        "annotations": map_or_empty(&metadata["annotations"]),
        "type": secret["type"],
        "data": values,
    })
}

/// The real `kubeseal --recovery-unseal` on `file`: the Secret's view, or the failure's text.
fn kubeseal_unseal(kubeseal: &Path, file: &Path) -> Result<Json, String> {
    let output = Command::new(kubeseal)
        .args(["--recovery-unseal", "--recovery-private-key"])
        .arg(root().join(PRIVATE_KEY))
        .arg("-f")
        .arg(file)
        .args(["-o", "json"])
        .env("KUBECONFIG", "/nonexistent/kubeconfig")
        .output()
        .unwrap();
    if !output.status.success() {
        return Err(report(&output));
    }
    let secret: Json = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!((&secret["apiVersion"], &secret["kind"]), (&json!("v1"), &json!("Secret")), "{}", file.display());
    // kubeseal prints an empty value as `null` (a nil Go slice), for its own SealedSecrets too.
    let values = secret["data"].as_object().unwrap().iter().map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned())).collect();
    Ok(secret_view(&secret, values))
}

/// `tfrs unseal --private-key` on `file`: the Secret's view, or the failure's text.
fn tfrs_unseal(file: &Path) -> Result<Json, String> {
    let output = common::tfrs_command().args(["unseal", "--private-key", PRIVATE_KEY]).arg(file).output().unwrap();
    if !output.status.success() {
        return Err(report(&output));
    }
    let secret = read_object(&output.stdout).unwrap();
    let mut values = BTreeMap::new();
    for (key, value) in secret["stringData"].as_object().into_iter().flatten() {
        values.insert(key.clone(), STANDARD.encode(value.as_str().unwrap()));
    }
    for (key, value) in secret["data"].as_object().into_iter().flatten() {
        assert!(values.insert(key.clone(), value.as_str().unwrap().to_owned()).is_none(), "{key} twice");
    }
    Ok(secret_view(&secret, values))
}

fn decoded(view: &Json, key: &str) -> Vec<u8> {
    STANDARD.decode(view["data"][key].as_str().unwrap()).unwrap()
}

fn scope_name(sealed: &Json) -> &'static str {
    let annotations = &sealed["metadata"]["annotations"];
    if annotations["sealedsecrets.bitnami.com/cluster-wide"] == "true" {
        "cluster-wide"
    } else if annotations["sealedsecrets.bitnami.com/namespace-wide"] == "true" {
        "namespace-wide"
    } else {
        "strict"
    }
}

#[test]
fn kubeseal_opens_every_rendered_sealed_secret_as_tfrs_unseal_does() {
    let Some(kubeseal) = peer("kubeseal") else { return };
    let dir = tempfile::tempdir().unwrap();
    let fixtures: Vec<Fixture> = fixtures().into_iter().filter(|f| f.backend == "sealed-secrets").collect();
    assert!(fixtures.iter().any(|f| f.name == "demo"), "the demo seals with sealed-secrets");
    let mut scopes = BTreeSet::new();
    let mut opened = BTreeMap::new();
    let mut known = 0;
    for fixture in &fixtures {
        let out = dir.path().join(&fixture.name);
        render(&fixture.name, &out);
        let sealed: Vec<(PathBuf, Json)> = files(&out)
            .into_iter()
            .filter_map(|p| Some((p.clone(), read_object(&std::fs::read(&p).ok()?)?)))
            .filter(|(_, o)| o["kind"] == "SealedSecret")
            .collect();
        opened.insert(fixture.name.as_str(), sealed.len());
        for (file, object) in &sealed {
            scopes.insert(scope_name(object));
            let by_kubeseal = kubeseal_unseal(&kubeseal, file).unwrap_or_else(|e| panic!("kubeseal cannot open {}:\n{e}", file.display()));
            let by_tfrs = tfrs_unseal(file).unwrap_or_else(|e| panic!("tfrs cannot open {}:\n{e}", file.display()));
            assert_eq!(by_kubeseal, by_tfrs, "{}", file.display());
            if fixture.name == "demo" && file.ends_with("components/cluster/image-registry/sealedsecret-cnb-registry-secret.yaml") {
                let token = std::fs::read_to_string(root().join("fixtures/demo/secrets/registry-password.txt")).unwrap();
                let token = token.trim_end_matches('\n');
                let auth = STANDARD.encode(format!("cnb:{token}"));
                let expected = json!({"auths": {"docker.cnb.cool": {"username": "cnb", "password": token, "auth": auth}}});
                let config: Json = serde_json::from_slice(&decoded(&by_kubeseal, ".dockerconfigjson")).unwrap();
                assert_eq!(config, expected, "the demo's pull Secret holds fixtures/demo/secrets/registry-password.txt");
                known += 1;
            }
        }
    }
    assert_eq!(known, 1, "the demo's image-pull SealedSecret was rendered and opened");
    // A fixture may seal nothing (render-hostile has no Secrets), but most seal several.
    assert!(opened.values().filter(|n| **n > 0).count() > 1, "{opened:?}");
    // Renders seal every Secret strict; the other two scopes are covered by the next test.
    assert!(scopes.contains("strict"), "{scopes:?}");
}

/// A SealedSecret sealed by our library in `scope`, written to `dir`, with its plaintext.
fn sealed_in_scope(dir: &Path, scope: Scope) -> (PathBuf, Json, BTreeMap<String, Vec<u8>>) {
    let plain: BTreeMap<String, Vec<u8>> = BTreeMap::from([
        ("password".to_owned(), b"s3cr3t: with a colon, \"quotes\" and\na newline".to_vec()),
        ("binary".to_owned(), vec![0xff, 0x00, 0xfe, 0x80]),
        ("empty".to_owned(), Vec::new()),
    ]);
    let secret = PlainSecret {
        name: "db".to_owned(),
        namespace: "tenant-acme".to_owned(),
        kind: "Opaque".to_owned(),
        labels: BTreeMap::from([("app.kubernetes.io/managed-by".to_owned(), "tfrs".to_owned())]),
        annotations: BTreeMap::new(),
        data: plain.iter().map(|(k, v)| (k.clone(), Zeroizing::new(v.clone()))).collect(),
        scope,
    };
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let pem = std::fs::read_to_string(root().join("fixtures/demo/keys/sealed-secrets.pem")).unwrap();
    let sealer = Sealer::SealedSecrets { certificate: Certificate::from_pem(&pem, i64::try_from(now).unwrap()).unwrap() };
    let object = seal(&secret, None, &sealer, None, &mut rand::rng()).unwrap();
    let file = dir.join(format!("{scope:?}.yaml"));
    std::fs::write(&file, to_yaml(&object).unwrap()).unwrap();
    (file, object, plain)
}

#[test]
fn kubeseal_honours_the_scope_of_sealed_secrets_in_all_three_scopes() {
    let Some(kubeseal) = peer("kubeseal") else { return };
    let dir = tempfile::tempdir().unwrap();
    for (scope, name) in [(Scope::Strict, "strict"), (Scope::NamespaceWide, "namespace-wide"), (Scope::ClusterWide, "cluster-wide")] {
        let (file, object, plain) = sealed_in_scope(dir.path(), scope);
        assert_eq!(scope_name(&object), name);
        let by_kubeseal = kubeseal_unseal(&kubeseal, &file).unwrap_or_else(|e| panic!("{name}: kubeseal cannot open it:\n{e}"));
        assert_eq!(Ok(&by_kubeseal), tfrs_unseal(&file).as_ref(), "{name}");
        for (key, value) in &plain {
            assert_eq!(&decoded(&by_kubeseal, key), value, "{name}: {key}");
        }
        assert_eq!(by_kubeseal["data"].as_object().unwrap().len(), plain.len(), "{name}");
        // The scope is bound into the ciphertext: strict to the name and namespace, namespace-wide
        // to the namespace, cluster-wide to neither. Both unsealers must refuse the same moves.
        for (field, value, opens) in [("name", "other", scope != Scope::Strict), ("namespace", "elsewhere", scope == Scope::ClusterWide)] {
            let mut moved = object.clone();
            moved["metadata"][field] = json!(value);
            let moved_file = dir.path().join(format!("{name}-{field}.yaml"));
            std::fs::write(&moved_file, to_yaml(&moved).unwrap()).unwrap();
            let by_kubeseal = kubeseal_unseal(&kubeseal, &moved_file);
            assert_eq!(by_kubeseal.is_ok(), opens, "{name} with another {field}: {by_kubeseal:?}");
            assert_eq!(tfrs_unseal(&moved_file).is_ok(), opens, "{name} with another {field}: tfrs unseal");
        }
    }
}

/// `flux build kustomization` of one rendered Flux Kustomization, checked against its files.
fn flux_build(flux: &Path, out: &Path, file: &Path, kustomization: &Json) -> usize {
    let name = kustomization["metadata"]["name"].as_str().unwrap();
    let namespace = kustomization["metadata"]["namespace"].as_str().unwrap_or("flux-system");
    // `--path` is the directory flux builds; `spec.path` is relative to the source's root,
    // which for a rendered tree is the output directory (`--dry-run` reads no source).
    let path = out.join(kustomization["spec"]["path"].as_str().unwrap());
    assert!(path.join("kustomization.yaml").is_file(), "{name}: spec.path {} has no kustomization.yaml", path.display());
    let output = Command::new(flux)
        .args(["build", "kustomization", name, "--namespace", namespace, "--dry-run", "--path"])
        .arg(&path)
        .arg("--kustomization-file")
        .arg(file)
        .env("KUBECONFIG", "/nonexistent/kubeconfig")
        .output()
        .unwrap();
    let built = String::from_utf8(output.stdout.clone()).unwrap();
    assert!(output.status.success() && !built.trim().is_empty(), "flux build kustomization {name}:\n{}", report(&output));
    let objects = documents(&built);
    // The objects of the files that the directory's kustomization.yaml lists, by identity.
    let listed = read_object(&std::fs::read(path.join("kustomization.yaml")).unwrap()).unwrap();
    let mut expected = BTreeMap::new();
    for resource in listed["resources"].as_array().unwrap() {
        for object in documents(&std::fs::read_to_string(path.join(resource.as_str().unwrap())).unwrap()) {
            let identity = format!("{}/{}/{}", object["apiVersion"], object["kind"], object["metadata"]["name"]);
            assert!(expected.insert(identity, object).is_none(), "{name}: an object twice");
        }
    }
    let identities: BTreeSet<String> =
        objects.iter().map(|o| format!("{}/{}/{}", o["apiVersion"], o["kind"], o["metadata"]["name"])).collect();
    assert_eq!(identities.len(), objects.len(), "{name}: flux built an object twice");
    assert_eq!(identities, expected.keys().cloned().collect(), "{name}: flux built other objects than the files hold");
    let mut masked = 0;
    for object in &objects {
        let labels = &object["metadata"]["labels"];
        assert_eq!(labels["kustomize.toolkit.fluxcd.io/name"], name, "{name}: {object}");
        assert_eq!(labels["kustomize.toolkit.fluxcd.io/namespace"], namespace, "{name}: {object}");
        let identity = format!("{}/{}/{}", object["apiVersion"], object["kind"], object["metadata"]["name"]);
        if expected[&identity].get("sops").is_some() {
            // flux recognises a SOPS file by its `sops` and `mac: ENC[` and masks its values.
            assert!(object.get("sops").is_none() && !object.to_string().contains("ENC["), "{name}: SOPS data not masked: {object}");
            masked += 1;
        }
    }
    masked
}

#[test]
fn flux_builds_every_rendered_kustomization() {
    let Some(flux) = peer("flux") else { return };
    let dir = tempfile::tempdir().unwrap();
    let fixtures: Vec<Fixture> = fixtures().into_iter().filter(|f| f.engine == "flux").collect();
    assert!(fixtures.iter().any(|f| f.backend == "sops-age") && fixtures.iter().any(|f| f.backend == "sealed-secrets"));
    let mut sops_total = 0;
    for fixture in &fixtures {
        let out = dir.path().join(&fixture.name);
        render(&fixture.name, &out);
        let mut built = 0;
        let mut masked = 0;
        for cluster in std::fs::read_dir(out.join("clusters")).unwrap() {
            for file in files(&cluster.unwrap().path().join("gitops")) {
                for object in documents(&std::fs::read_to_string(&file).unwrap()) {
                    let flux_kind = object["apiVersion"].as_str().unwrap().starts_with("kustomize.toolkit.fluxcd.io/");
                    if flux_kind && object["kind"] == "Kustomization" {
                        masked += flux_build(&flux, &out, &file, &object);
                        built += 1;
                    }
                }
            }
        }
        assert!(built > 0, "{}: no Flux Kustomization rendered", fixture.name);
        // Every SOPS file of the tree is built by some Kustomization (and masked).
        let sops_files =
            files(&out).iter().filter(|p| read_object(&std::fs::read(p).unwrap()).is_some_and(|o| o.get("sops").is_some())).count();
        assert_eq!(masked, sops_files, "{}: SOPS Secrets masked by flux", fixture.name);
        assert!(sops_files == 0 || fixture.backend == "sops-age", "{}", fixture.name);
        sops_total += sops_files;
    }
    assert!(sops_total > 0, "a Flux fixture renders SOPS Secrets");
}
