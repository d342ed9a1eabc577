//! End-to-end tests of `tfrs render` and `tfrs graph`: rendered trees are snapshots, re-rendering
//! is byte-identical, hostile strings round-trip, no plaintext secret is written, a failed
//! render keeps the previous tree, and outside tools (kubectl kustomize, kubernetes-validate,
//! the CRD schemas) accept every tree.

#![allow(clippy::unwrap_used)] // a test crate: a panic is the failure report

mod common;

use common::report;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const RENDER_FIXTURES: &[&str] = &["demo", "render-argocd-tke", "render-sops-docker-desktop", "render-minimal", "render-hostile"];
const REGISTRY_PASSWORD: &str = "test-registry-token-7f3a9c";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn master_key() -> String {
    std::fs::read_to_string(root().join("fixtures/demo/keys/master.key")).unwrap().trim().to_owned()
}

fn tfrs(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tfrs"))
        .args(args)
        .current_dir(root())
        .env("TFRS_MASTER_KEY", master_key())
        .env("TFRS_TEST_REGISTRY_PASSWORD", REGISTRY_PASSWORD)
        .env("ACME_OPENAI_API_KEY", "sk-test-acme-openai-key")
        .env_remove("OPERATOR_HELM_REPO_URL")
        .env_remove("OPERATOR_CHART_VERSION")
        .env_remove("OPERATOR_IMAGE_TAG")
        .env_remove("OPERATOR_RELEASE_NAME")
        .output()
        .expect("the tfrs binary runs")
}

fn render(fixture: &str, out: &Path) -> Output {
    let output = tfrs(&["render", &format!("fixtures/{fixture}"), "--out", out.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(0), "{fixture}: {}", report(&output));
    output
}

fn read_tree(dir: &Path) -> BTreeMap<String, String> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                let relative = path.strip_prefix(root).unwrap().to_string_lossy().into_owned();
                out.insert(relative, std::fs::read_to_string(&path).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// Replaces ciphertext (fresh on every seal by design) with a marker, so snapshots show
/// structure and tests can compare two independent renders.
fn mask_ciphertext(text: &str) -> String {
    let mut out = String::new();
    let mut in_encrypted_data = false;
    let mut in_age_block = false;
    for line in text.lines() {
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        if in_age_block {
            if trimmed.starts_with("-----END AGE ENCRYPTED FILE-----") {
                in_age_block = false;
            }
            continue;
        }
        if trimmed.starts_with("encryptedData:") {
            in_encrypted_data = true;
            out.push_str(line);
            out.push('\n');
            continue;
        }
        if in_encrypted_data && indent >= 4 && trimmed.contains(": ") {
            let key = trimmed.split(": ").next().unwrap_or_default();
            out.push_str(&format!("{}{key}: <sealed>\n", " ".repeat(indent)));
            continue;
        }
        in_encrypted_data = in_encrypted_data && indent >= 4;
        if trimmed.starts_with("-----BEGIN AGE ENCRYPTED FILE-----") {
            in_age_block = true;
            out.push_str(&format!("{}<age-wrapped data key>\n", " ".repeat(indent)));
            continue;
        }
        if let Some(start) = line.find("ENC[AES256_GCM,") {
            out.push_str(&format!("{}ENC[<sops>]\n", &line[..start]));
            continue;
        }
        if trimmed.starts_with("lastmodified:") || trimmed.starts_with("tfrs.turingfocus.cn/fingerprints:") {
            let key = trimmed.split(':').next().unwrap_or_default();
            out.push_str(&format!("{}{key}: <varies>\n", " ".repeat(indent)));
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

#[test]
fn rendered_trees_match_their_snapshots() {
    for fixture in RENDER_FIXTURES {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        render(fixture, &out);
        let tree = read_tree(&out);
        let mut text = String::new();
        for (path, content) in &tree {
            text.push_str(&format!("=== {path}\n{}", mask_ciphertext(content)));
        }
        insta::assert_snapshot!(format!("tree@{fixture}"), text);
    }
}

#[test]
fn re_rendering_unchanged_specs_changes_no_byte() {
    for fixture in ["demo", "render-argocd-tke", "render-sops-docker-desktop"] {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        render(fixture, &out);
        let first = read_tree(&out);
        let output = render(fixture, &out);
        assert!(String::from_utf8_lossy(&output.stdout).contains("(0 changed, 0 removed)"), "{fixture}: {}", report(&output));
        assert_eq!(first, read_tree(&out), "{fixture}: re-rendering changed bytes");
        let check = tfrs(&["render", &format!("fixtures/{fixture}"), "--out", out.to_str().unwrap(), "--check"]);
        assert_eq!(check.status.code(), Some(0), "{}", report(&check));
        // Into a fresh directory: the same tree but for fresh ciphertext.
        let fresh = dir.path().join("fresh");
        render(fixture, &fresh);
        let second = read_tree(&fresh);
        assert_eq!(first.keys().collect::<Vec<_>>(), second.keys().collect::<Vec<_>>());
        let mut differing = 0;
        for (path, content) in &first {
            if content != &second[path] {
                differing += 1;
                assert!(path.contains("sealedsecret-") || path.contains("/secret-"), "{fixture}: `{path}` differs between two renders");
                assert_eq!(mask_ciphertext(content), mask_ciphertext(&second[path]), "{fixture}: `{path}` differs beyond ciphertext");
            }
        }
        assert!(differing > 0, "{fixture}: sealing must be randomised");
    }
}

#[test]
fn check_mode_reports_an_out_of_date_tree() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    render("render-minimal", &out);
    std::fs::write(out.join("clusters/bare/plan.json"), "{}").unwrap();
    let check = tfrs(&["render", "fixtures/render-minimal", "--out", out.to_str().unwrap(), "--check"]);
    assert_eq!(check.status.code(), Some(1), "{}", report(&check));
    assert_eq!(std::fs::read_to_string(out.join("clusters/bare/plan.json")).unwrap(), "{}", "--check never writes");
}

#[test]
fn hostile_strings_come_out_as_the_same_strings() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    render("render-hostile", &out);
    let tree = read_tree(&out);
    let mut found = BTreeMap::new();
    let mut objects = 0;
    for (path, content) in &tree {
        if !path.ends_with(".yaml") {
            continue;
        }
        let documents = tfrs_gitops::spec::yaml::parse(0, content).unwrap_or_else(|e| panic!("{path}: {e:?}"));
        for document in documents {
            let value = document.to_json();
            objects += 1;
            assert_ne!(value["kind"], "ClusterRole", "{path}: a spec string became an object");
            for pointer in
                ["/spec/source/repoURL", "/spec/source/targetRevision", "/spec/acme/email", "/spec/source/helm/valuesObject/image/tag"]
            {
                // The chart Applications have their own repoURL and targetRevision.
                let is_chart = value.pointer("/spec/source/helm").is_some();
                if pointer.starts_with("/spec/source/") && !pointer.contains("helm") && is_chart {
                    continue;
                }
                if let Some(text) = value.pointer(pointer).and_then(|v| v.as_str()) {
                    found.entry(pointer).or_insert_with(Vec::new).push(text.to_owned());
                }
            }
            if let Some(annotations) = value.pointer("/spec/source/helm/valuesObject/service/annotations") {
                found
                    .entry("tkeClbId")
                    .or_insert_with(Vec::new)
                    .push(annotations["service.kubernetes.io/tke-existed-lbid"].as_str().unwrap().to_owned());
            }
        }
    }
    let expect = |key: &str, value: &str| {
        let values = found.get(key).unwrap_or_else(|| panic!("no `{key}` rendered"));
        assert!(values.iter().all(|v| v == value), "{key}: {values:?} != {value:?}");
    };
    expect(
        "/spec/source/repoURL",
        "ssh://git@example.com/x.git\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: pwned}",
    );
    expect("/spec/source/targetRevision", "main'\"{{ 7*7 }}{% if true %}x{% endif %}");
    expect("/spec/acme/email", "ops@example.com\"\n  injected: true");
    expect("/spec/source/helm/valuesObject/image/tag", "v1 }}\n{{ cluster }}: \"yes\"");
    expect("tkeClbId", "lb-1: {a: b} # not a comment\n... ---");
    let plan: serde_json::Value = serde_json::from_str(&tree["clusters/hostile/plan.json"]).unwrap();
    let planned: usize = plan["components"].as_array().unwrap().iter().map(|c| c["objects"].as_array().unwrap().len()).sum();
    let gitops = tree.keys().filter(|p| p.contains("/gitops/") && !p.ends_with("kustomization.yaml")).count();
    let kustomizations = tree.keys().filter(|p| p.ends_with("kustomization.yaml")).count();
    assert_eq!(objects, planned + gitops + kustomizations, "every rendered document is a planned object");
}

#[test]
fn no_plaintext_secret_is_written() {
    let registry_file = std::fs::read_to_string(root().join("fixtures/demo/secrets/registry-password.txt")).unwrap();
    let master = tfrs_gitops::secrets::MasterKey::from_hex(&master_key()).unwrap();
    let generated =
        master.derive("cluster/laptop/imageRegistry/password", &tfrs_gitops::spec::model::Generate { length: 24, ..Default::default() });
    let secrets = [registry_file.trim_end_matches('\n').to_owned(), REGISTRY_PASSWORD.to_owned(), generated.to_string()];
    for fixture in RENDER_FIXTURES {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let output = render(fixture, &out);
        let logs = report(&output);
        for (path, content) in read_tree(&out) {
            for secret in &secrets {
                assert!(!content.contains(secret.as_str()), "{fixture}: plaintext secret in `{path}`");
            }
        }
        for secret in &secrets {
            assert!(!logs.contains(secret.as_str()), "{fixture}: plaintext secret in the output of tfrs");
        }
    }
}

#[test]
fn a_failed_render_leaves_the_previous_tree() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    render("render-argocd-tke", &out);
    let before = read_tree(&out);
    let output = Command::new(env!("CARGO_BIN_EXE_tfrs"))
        .args(["render", "fixtures/render-argocd-tke", "--out", out.to_str().unwrap()])
        .current_dir(root())
        .env_remove("TFRS_TEST_REGISTRY_PASSWORD")
        .env_remove("TFRS_MASTER_KEY")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", report(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("fixtures/render-argocd-tke/spec.yaml:") && stderr.contains("spec.imageRegistry.password"), "{stderr}");
    assert!(stderr.contains("TFRS_TEST_REGISTRY_PASSWORD"), "{stderr}");
    assert_eq!(before, read_tree(&out), "the previous tree is untouched");
    let leftovers: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(leftovers.len(), 1, "no temporary directories left: {leftovers:?}");
}

#[test]
fn refuses_to_replace_a_directory_tfrs_did_not_write() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "mine").unwrap();
    let output = tfrs(&["render", "fixtures/render-minimal", "--out", dir.path().to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2), "{}", report(&output));
    assert!(String::from_utf8_lossy(&output.stderr).contains("was not written by tfrs"), "{}", report(&output));
    assert_eq!(std::fs::read_to_string(dir.path().join("notes.txt")).unwrap(), "mine");
}

#[test]
fn a_secret_without_sealing_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("spec.yaml");
    std::fs::write(
        &spec,
        "apiVersion: tfrs.turingfocus.cn/v1alpha1\nkind: TFRCluster\nmetadata: {name: x}\nspec:\n  ingress: {domain: x.example.com}\n  imageRegistry: {username: {value: u}, password: {value: p4ssw0rd-literal}}\n",
    )
    .unwrap();
    let out = dir.path().join("out");
    let output = tfrs(&["render", spec.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1), "{}", report(&output));
    assert!(String::from_utf8_lossy(&output.stderr).contains("spec.sealing.certFile"), "{}", report(&output));
    assert!(!out.exists(), "nothing written");
}

#[test]
fn graph_draws_the_cluster_components() {
    let mermaid = tfrs(&["graph", "fixtures/demo"]);
    assert_eq!(mermaid.status.code(), Some(0), "{}", report(&mermaid));
    let dot = tfrs(&["graph", "fixtures/demo", "--format", "dot"]);
    assert_eq!(dot.status.code(), Some(0), "{}", report(&dot));
    insta::assert_snapshot!("graph-mermaid", String::from_utf8_lossy(&mermaid.stdout));
    insta::assert_snapshot!("graph-dot", String::from_utf8_lossy(&dot.stdout));
}

/// A tool from PATH that answers `probe` successfully, or `None` (a failure under `CI=true`).
fn tool(name: &str, probe: &[&str]) -> Option<PathBuf> {
    let found = Command::new(name).args(probe).output().is_ok_and(|o| o.status.success());
    if found {
        return Some(PathBuf::from(name));
    }
    assert!(std::env::var("CI").as_deref() != Ok("true"), "`{name} {}` must work under CI=true", probe.join(" "));
    eprintln!("skipping: `{name} {}` failed", probe.join(" "));
    None
}

#[test]
fn kubectl_kustomize_builds_every_directory() {
    let Some(kubectl) = tool("kubectl", &["version", "--client"]) else { return };
    for fixture in RENDER_FIXTURES {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        render(fixture, &out);
        let mut built = 0;
        for path in read_tree(&out).keys().filter(|p| p.ends_with("kustomization.yaml")) {
            let directory = out.join(path).parent().unwrap().to_path_buf();
            let output = Command::new(&kubectl).args(["kustomize"]).arg(&directory).output().unwrap();
            assert!(
                output.status.success(),
                "{fixture}: kubectl kustomize {}: {}",
                directory.display(),
                String::from_utf8_lossy(&output.stderr)
            );
            built += 1;
        }
        assert!(built > 2, "{fixture}: only {built} kustomizations");
    }
}

#[test]
fn every_rendered_object_passes_schema_validation() {
    let schemas = root().join("../shared/schemas/crds");
    assert!(schemas.exists(), "`../shared/schemas/crds` must be beside the checkout");
    let Some(python) = tool("python3", &["-c", "import kubernetes_validate, jsonschema, yaml"]) else { return };
    for fixture in RENDER_FIXTURES {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        render(fixture, &out);
        let output = Command::new(&python).arg(root().join("tests/tools/validate_tree.py")).arg(&out).arg(&schemas).output().unwrap();
        assert!(
            output.status.success(),
            "{fixture}:\n{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
}

#[test]
fn user_templates_override_built_ins_and_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    let templates = dir.path().join("templates/cluster");
    std::fs::create_dir_all(&templates).unwrap();
    std::fs::write(
        templates.join("istio-telemetry.yaml"),
        "apiVersion: telemetry.istio.io/v1\nkind: Telemetry\nmetadata:\n  name: custom\n  namespace: istio-system\nspec: {}\n",
    )
    .unwrap();
    let out = dir.path().join("out");
    let templates_dir = dir.path().join("templates");
    let output = tfrs(&["render", "fixtures/demo", "--out", out.to_str().unwrap(), "--templates", templates_dir.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(0), "{}", report(&output));
    assert!(out.join("clusters/demo/components/cluster/istio-telemetry/telemetry-custom.yaml").exists());
    // A template that writes a plaintext Secret or leaves its namespaces is refused, with the
    // template named, and nothing is written.
    std::fs::write(
        templates.join("istio-telemetry.yaml"),
        "apiVersion: v1\nkind: Secret\nmetadata: {name: leak, namespace: istio-system}\nstringData: {a: b}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: kube-system}\n",
    )
    .unwrap();
    let before = read_tree(&out);
    let output = tfrs(&["render", "fixtures/demo", "--out", out.to_str().unwrap(), "--templates", templates_dir.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1), "{}", report(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("template `cluster/istio-telemetry.yaml` document 1") && stderr.contains("must not produce Secrets"),
        "{stderr}"
    );
    assert!(stderr.contains("document 2") && stderr.contains("may only touch namespaces `flux-system`, `istio-system`"), "{stderr}");
    assert_eq!(before, read_tree(&out));
    // A template error names the template and line.
    std::fs::write(templates.join("istio-telemetry.yaml"), "a: {{ cluster.spec.nope }}\n").unwrap();
    let output = tfrs(&["render", "fixtures/demo", "--out", out.to_str().unwrap(), "--templates", templates_dir.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1), "{}", report(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("undefined") && stderr.contains("cluster/istio-telemetry.yaml"), "{stderr}");
}

/// The plaintext the demo's pull Secret must hold: the registry token of `fromFile`.
fn expected_docker_config(server: &str, user: &str, password: &str) -> serde_json::Value {
    use base64::Engine as _;
    let auth = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
    serde_json::json!({"auths": {server: {"username": user, "password": password, "auth": auth}}})
}

#[test]
fn kubesealpy_opens_every_sealed_secret_of_a_rendered_tree() {
    let Some(python) = tool("python3", &["-c", "import kubesealpy"]) else { return };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    render("demo", &out);
    let sealed: Vec<PathBuf> = read_tree(&out).keys().filter(|p| p.contains("/sealedsecret-")).map(|p| out.join(p)).collect();
    assert!(!sealed.is_empty());
    let script = "import json, sys\nfrom kubesealpy import Unsealer, SealedSecret\nu = Unsealer.from_private_key_file(sys.argv[1])\nprint(json.dumps({p: {k: v.decode() for k, v in u.unseal(SealedSecret.from_yaml(open(p).read())).get_data_decoded().items()} for p in sys.argv[2:]}))\n";
    let output = Command::new(&python)
        .args(["-c", script])
        .arg(root().join("fixtures/demo/keys/sealed-secrets.key"))
        .args(&sealed)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let opened: BTreeMap<String, BTreeMap<String, String>> = serde_json::from_slice(&output.stdout).unwrap();
    let token = std::fs::read_to_string(root().join("fixtures/demo/secrets/registry-password.txt")).unwrap();
    let pull = opened.iter().find(|(p, _)| p.ends_with("image-registry/sealedsecret-cnb-registry-secret.yaml")).expect("the pull Secret").1;
    let config: serde_json::Value = serde_json::from_str(&pull[".dockerconfigjson"]).unwrap();
    assert_eq!(config, expected_docker_config("docker.cnb.cool", "cnb", token.trim_end_matches('\n')));
}

#[test]
fn real_sops_decrypts_every_secret_of_a_rendered_tree() {
    let Some(sops) = tool("sops", &["--version"]) else { return };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    render("render-sops-docker-desktop", &out);
    let master = tfrs_gitops::secrets::MasterKey::from_hex(&master_key()).unwrap();
    let password =
        master.derive("cluster/laptop/imageRegistry/password", &tfrs_gitops::spec::model::Generate { length: 24, ..Default::default() });
    let files: Vec<String> = read_tree(&out).keys().filter(|p| p.contains("/secret-")).cloned().collect();
    assert_eq!(files.len(), 2, "{files:?}");
    for file in files {
        let output = Command::new(&sops)
            .args(["--disable-version-check", "--decrypt", "--output-type", "json"])
            .arg(out.join(&file))
            .env("SOPS_AGE_KEY_FILE", root().join("fixtures/demo/keys/age.txt"))
            .env_remove("SOPS_AGE_KEY")
            .output()
            .unwrap();
        assert!(output.status.success(), "{file}: {}", String::from_utf8_lossy(&output.stderr));
        let secret: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
        if file.ends_with("secret-cnb-registry-secret.yaml") {
            let config: serde_json::Value = serde_json::from_str(secret["stringData"][".dockerconfigjson"].as_str().unwrap()).unwrap();
            assert_eq!(config, expected_docker_config("docker.cnb.cool", "dev", &password));
        } else {
            let values = secret["stringData"]["values.yaml"].as_str().unwrap();
            let values: serde_json::Value = serde_json::from_str(values).unwrap();
            assert_eq!(values["imageCredentials"][0]["password"], password.as_str());
            assert_eq!(values["imageCredentials"][0]["name"], "cnb-registry-secret");
        }
    }
}
