//! End-to-end tests of `tfrs render` and `tfrs graph`: rendered trees are snapshots, re-rendering
//! is byte-identical, hostile strings round-trip, no plaintext secret is written, a failed
//! render keeps the previous tree, and outside tools (kubectl kustomize, kubernetes-validate)
//! and the pinned upstream CRDs accept every tree.

#![allow(clippy::unwrap_used)] // a test crate: a panic is the failure report

mod common;
mod crd;

use common::report;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{ESO_CLIENT_ID, ESO_CLIENT_SECRET, OPENAI_KEY, REDIS_PASSWORD, REGISTRY_PASSWORD, RENDER_FIXTURES};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn master_key() -> String {
    std::fs::read_to_string(root().join("fixtures/demo/keys/master.key")).unwrap().trim().to_owned()
}

fn tfrs(args: &[&str]) -> Output {
    common::fixture_command().args(args).output().expect("the tfrs binary runs")
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
        assert!(String::from_utf8_lossy(&output.stdout).contains("(0 changed, 0 removed; "), "{fixture}: {}", report(&output));
        let (reused, units) = memo_counts(&output);
        assert!(reused == units && units > 0, "{fixture}: the memo gives every unit back: {}", report(&output));
        assert_eq!(first, read_tree(&out), "{fixture}: re-rendering changed bytes");
        // Without the memo: the same bytes.
        let output = tfrs(&["render", &format!("fixtures/{fixture}"), "--out", out.to_str().unwrap(), "--no-memo"]);
        assert!(String::from_utf8_lossy(&output.stdout).contains("(0 changed, 0 removed)"), "{fixture}: {}", report(&output));
        assert_eq!(first, read_tree(&out), "{fixture}: re-rendering without the memo changed bytes");
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

/// `(reused, units)` from a render's "; R of U templated units reused" note.
fn memo_counts(output: &Output) -> (usize, usize) {
    let stdout = String::from_utf8_lossy(&output.stdout);
    let note = stdout.split("; ").nth(1).and_then(|rest| rest.strip_suffix(" templated units reused)\n"));
    let Some((reused, units)) = note.and_then(|n| n.split_once(" of ")) else { panic!("no memo note: {stdout}") };
    (reused.parse().unwrap(), units.parse().unwrap())
}

#[test]
fn the_render_memo_reuses_only_what_still_holds() {
    let dir = tempfile::tempdir().unwrap();
    let spec = copy_fixture("demo", dir.path());
    let out = dir.path().join("out");
    let run = |extra: &[&str]| {
        let mut args = vec!["render", spec.to_str().unwrap(), "--out", out.to_str().unwrap()];
        args.extend_from_slice(extra);
        let output = tfrs(&args);
        assert_eq!(output.status.code(), Some(0), "{}", report(&output));
        output
    };
    let (reused, units) = memo_counts(&run(&[]));
    assert_eq!(reused, 0, "nothing to reuse yet");
    assert_eq!(memo_counts(&run(&[])), (units, units));

    // A hand edit of a rendered file is not trusted: that unit is rendered again and the file
    // restored.
    let edited = out.join("clusters/demo/components/namespaces/acme-corp/servers/robot1/config/configmap-robot1-config.yaml");
    let original = std::fs::read_to_string(&edited).unwrap();
    std::fs::write(&edited, original.replace("prod", "hacked")).unwrap();
    let output = run(&[]);
    assert!(String::from_utf8_lossy(&output.stdout).contains("(1 changed, 0 removed; "), "{}", report(&output));
    assert_eq!(memo_counts(&output), (units - 1, units));
    assert_eq!(std::fs::read_to_string(&edited).unwrap(), original);

    // A changed value renders the units that see it, and the tree is what a render without a
    // memo writes.
    let servers = spec.join("servers.yaml");
    std::fs::write(&servers, std::fs::read_to_string(&servers).unwrap().replace("TFS_PROFILE: prod", "TFS_PROFILE: staging")).unwrap();
    let output = run(&[]);
    let (reused, _) = memo_counts(&output);
    assert!(reused < units && reused > units / 2, "only what sees the value is rendered: {}", report(&output));
    assert!(std::fs::read_to_string(&edited).unwrap().contains("staging"));
    let fresh = dir.path().join("fresh");
    let output = tfrs(&["render", spec.to_str().unwrap(), "--out", fresh.to_str().unwrap(), "--no-memo"]);
    assert_eq!(output.status.code(), Some(0), "{}", report(&output));
    let (memoized, fresh) = (read_tree(&out), read_tree(&fresh));
    assert_eq!(memoized.keys().collect::<Vec<_>>(), fresh.keys().collect::<Vec<_>>());
    for (path, content) in &memoized {
        assert_eq!(mask_ciphertext(content), mask_ciphertext(&fresh[path]), "`{path}` differs from a render without the memo");
    }

    // The memo holds stamps, identities and paths: no value from the spec or its secrets.
    let memos: Vec<PathBuf> = std::fs::read_dir(concat!(env!("CARGO_TARGET_TMPDIR"), "/tfrs-memo"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    assert!(!memos.is_empty());
    let openai = std::fs::read_to_string(spec.join("secrets/openai-api-key.txt")).unwrap();
    for memo in memos {
        let text = std::fs::read_to_string(&memo).unwrap();
        assert!(!text.contains(openai.trim()) && !text.contains("staging") && !text.contains("Hello"), "{}", memo.display());
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
                // The chart and upstream-manifest Applications have their own repoURL and
                // targetRevision.
                let is_chart = value.pointer("/spec/source/helm").is_some() || value.pointer("/spec/source/kustomize").is_some();
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
    expect("/spec/source/helm/valuesObject/image/tag", "v1.2.3_rc-1");
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
    let tenant_generated = master.derive(
        "cluster/full/namespace/globex/postgresql/password",
        &tfrs_gitops::spec::model::Generate { length: 48, ..Default::default() },
    );
    let secrets = [
        registry_file.trim_end_matches('\n').to_owned(),
        REGISTRY_PASSWORD.to_owned(),
        REDIS_PASSWORD.to_owned(),
        generated.to_string(),
        tenant_generated.to_string(),
        "p@ss/w:rd#%'\"$x".to_owned(),
        OPENAI_KEY.to_owned(),
        "sk-file-anthropic-0042".to_owned(),
        "literal-token-9d2".to_owned(),
        ESO_CLIENT_ID.to_owned(),
        ESO_CLIENT_SECRET.to_owned(),
    ];
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
    let output = common::tfrs_command()
        .args(["render", "fixtures/render-argocd-tke", "--out", out.to_str().unwrap()])
        .env_remove("TFRS_TEST_REGISTRY_PASSWORD")
        .env_remove("TFRS_MASTER_KEY")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "an environment problem: {}", report(&output));
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
fn every_built_in_object_passes_kubernetes_validate() {
    let Some(python) = tool("python3", &["-c", "import kubernetes_validate, yaml"]) else { return };
    for fixture in RENDER_FIXTURES {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        render(fixture, &out);
        let output = Command::new(&python).arg(root().join("tests/tools/validate_tree.py")).arg(&out).output().unwrap();
        assert!(
            output.status.success(),
            "{fixture}:\n{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
}

/// Every custom resource of every fixture against the CRD its operator ships at the pinned
/// version (tests/crd/: strict structural schemas, served versions only).
#[test]
fn every_custom_object_passes_its_pinned_crd() {
    let Some(upstream) = crd::upstream("rendered custom resources against the pinned CRDs") else { return };
    let crds = crd::Crds::load(&upstream).unwrap();
    let mut problems = Vec::new();
    for fixture in RENDER_FIXTURES {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        render(fixture, &out);
        let mut checked = 0;
        for (path, text) in read_tree(&out) {
            if !path.ends_with(".yaml") || path.ends_with("/kustomization.yaml") {
                continue;
            }
            let object = tfrs_gitops::manifest::read_object(text.as_bytes()).unwrap();
            if crd::BUILTIN_GROUPS.contains(&crd::group_of(object["apiVersion"].as_str().unwrap_or_default())) {
                continue;
            }
            checked += 1;
            let id = format!("{} {}", object["apiVersion"].as_str().unwrap_or_default(), object["kind"].as_str().unwrap_or_default());
            problems.extend(crds.validate(&object).into_iter().map(|problem| format!("{fixture}: {path} ({id}): {problem}")));
        }
        assert!(checked > 0, "{fixture}: no custom resource checked");
    }
    assert!(problems.is_empty(), "{} problems:\n{}", problems.len(), problems.join("\n"));
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

/// `group/Kind/namespace/name` of a rendered object: what the apiserver keeps one of (the
/// version does not count).
fn identity(object: &serde_json::Value) -> String {
    let api_version = object["apiVersion"].as_str().unwrap_or_default();
    let group = api_version.rsplit_once('/').map_or("", |(group, _)| group);
    let namespace = object["metadata"]["namespace"].as_str().unwrap_or_default();
    format!(
        "{group}/{}/{namespace}/{}",
        object["kind"].as_str().unwrap_or_default(),
        object["metadata"]["name"].as_str().unwrap_or_default()
    )
}

#[test]
fn no_two_objects_of_a_shipped_fixture_share_an_identity() {
    for fixture in RENDER_FIXTURES {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        render(fixture, &out);
        // Checked here too, not only by the render's own gate: per cluster (each tree is applied
        // to its own cluster), every object file, `gitops/` included.
        let mut seen: BTreeMap<(String, String), String> = BTreeMap::new();
        let mut objects = 0;
        for (path, text) in read_tree(&out) {
            let file = path.rsplit('/').next().unwrap();
            if !path.ends_with(".yaml") || file == "kustomization.yaml" {
                continue;
            }
            let cluster = path.split('/').nth(1).unwrap().to_owned();
            let object = tfrs_gitops::manifest::read_object(text.as_bytes()).unwrap();
            objects += 1;
            if let Some(first) = seen.insert((cluster, identity(&object)), path.clone()) {
                panic!("{fixture}: `{}` is in both `{first}` and `{path}`", identity(&object));
            }
        }
        assert!(objects >= 5, "{fixture}: only {objects} objects");
    }
}

#[test]
fn a_tree_with_two_files_of_one_object_is_refused_by_every_command() {
    let dir = tempfile::tempdir().unwrap();
    let templates = dir.path().join("templates/cluster");
    std::fs::create_dir_all(&templates).unwrap();
    // Another version of the istiod component's HelmRelease, and of its own GitOps object.
    std::fs::write(
        templates.join("istio-telemetry.yaml"),
        "apiVersion: helm.toolkit.fluxcd.io/v2beta2\nkind: HelmRelease\nmetadata: {name: istiod, namespace: flux-system}\nspec: {}\n---\napiVersion: kustomize.toolkit.fluxcd.io/v1beta2\nkind: Kustomization\nmetadata: {name: demo-istiod, namespace: flux-system}\nspec: {}\n",
    )
    .unwrap();
    let templates_dir = dir.path().join("templates");
    let templates_dir = templates_dir.to_str().unwrap();
    let out = dir.path().join("out");
    let output = tfrs(&["render", "fixtures/demo", "--out", out.to_str().unwrap(), "--templates", templates_dir]);
    assert_eq!(output.status.code(), Some(1), "{}", report(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    for expected in [
        "`helm.toolkit.fluxcd.io/HelmRelease/flux-system/istiod` is written twice: `clusters/demo/components/cluster/istiod/helmrelease-istiod.yaml` and `clusters/demo/components/cluster/istio-telemetry/helmrelease-istiod.yaml`",
        "`kustomize.toolkit.fluxcd.io/Kustomization/flux-system/demo-istiod` is written twice: `clusters/demo/components/cluster/istio-telemetry/kustomization-demo-istiod.yaml` and `clusters/demo/gitops/kustomization-demo-istiod.yaml`",
        "nothing was written",
    ] {
        assert!(stderr.contains(expected), "{expected}\n{stderr}");
    }
    assert!(!out.exists(), "nothing written");
    // `commit` and `diff` build the same tree: refused alike (`diff` exits 2 on a failed
    // render, since its 1 means "changes").
    let repo = dir.path().join("gitops.git");
    git2::Repository::init_bare(&repo).unwrap();
    let repo = repo.to_str().unwrap();
    let output = tfrs(&["commit", "fixtures/demo", "--repo", repo, "--author", "CI <ci@example.com>", "--templates", templates_dir]);
    assert_eq!(output.status.code(), Some(1), "{}", report(&output));
    assert!(String::from_utf8_lossy(&output.stderr).contains("is written twice"), "{}", report(&output));
    assert!(git2::Repository::open(repo).unwrap().head().is_err(), "no commit");
    let output = tfrs(&["commit", "fixtures/demo", "--repo", repo, "--author", "CI <ci@example.com>"]);
    assert_eq!(output.status.code(), Some(0), "{}", report(&output));
    let output = tfrs(&["diff", "fixtures/demo", "--repo", repo, "--templates", templates_dir]);
    assert_eq!(output.status.code(), Some(2), "{}", report(&output));
    assert!(String::from_utf8_lossy(&output.stderr).contains("is written twice"), "{}", report(&output));
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
    let opened = unseal_all(&python, &out);
    assert!(!opened.is_empty());
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

fn plan(out: &Path, cluster: &str) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(out.join(format!("clusters/{cluster}/plan.json"))).unwrap()).unwrap()
}

/// Every object of the plan as `(component, kind, namespace, name)`.
fn planned(plan: &serde_json::Value) -> Vec<(String, String, String, String)> {
    let mut out = Vec::new();
    for component in plan["components"].as_array().unwrap() {
        for object in component["objects"].as_array().unwrap() {
            out.push((
                component["id"].as_str().unwrap().to_owned(),
                object["kind"].as_str().unwrap().to_owned(),
                object["namespace"].as_str().unwrap_or_default().to_owned(),
                object["name"].as_str().unwrap().to_owned(),
            ));
        }
    }
    out
}

#[test]
fn tenants_get_the_names_consumers_rely_on() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    render("demo", &out);
    let objects = planned(&plan(&out, "demo"));
    let has = |component: &str, kind: &str, namespace: &str, name: &str| {
        objects.iter().any(|(c, k, n, o)| c == component && k == kind && n == namespace && o == name)
    };
    for namespace in ["acme-corp", "personal-support"] {
        let id = |c: &str| format!("namespaces/{namespace}/{c}");
        // The names consumers rely on: `<ns>-pg-credentials`; the CNPG Cluster `<ns>-pg` serves `<ns>-pg-rw`.
        assert!(has(&id("postgresql"), "SealedSecret", namespace, &format!("{namespace}-pg-credentials")), "{namespace}");
        assert!(has(&id("postgresql"), "Cluster", namespace, &format!("{namespace}-pg")), "{namespace}");
        assert!(has(&id("redis"), "Service", namespace, "redis"), "{namespace}");
        assert!(has(&id("rabbitmq"), "RabbitmqCluster", namespace, "rabbitmq"), "{namespace}");
        // The MinIO operator owns the Service `minio` (port 80): we render the Tenant, never
        // the Service.
        assert!(has(&id("minio"), "Tenant", namespace, "minio"), "{namespace}");
        assert!(!objects.iter().any(|(_, k, n, o)| k == "Service" && n == namespace && o == "minio"), "{namespace}");
        assert!(has(&id("namespace"), "SealedSecret", namespace, "cnb-registry-secret"), "{namespace}: pull Secret copy");
        assert!(has(&id("mesh-policy"), "PeerAuthentication", namespace, "default"), "{namespace}");
        assert!(has(&id("mesh-policy"), "AuthorizationPolicy", namespace, "tenant-boundary"), "{namespace}");
    }
    assert!(has("cluster/image-registry", "SealedSecret", "tfr-image-credentials", "cnb-registry-secret"));
    assert!(has("namespaces/acme-corp/timescaledb", "Cluster", "acme-corp", "acme-corp-ts"));
    assert!(has("namespaces/acme-corp/namespace", "NetworkPolicy", "acme-corp", "deny-from-other-namespaces"));
    assert!(
        !objects.iter().any(|(_, k, n, _)| k == "NetworkPolicy" && n == "personal-support"),
        "personal namespaces have no NetworkPolicy"
    );
    // alice and bob share `personal-support`: its middleware is rendered once.
    let shared = objects.iter().filter(|(_, k, n, _)| k == "Cluster" && n == "personal-support").count();
    assert_eq!(shared, 1);
    // Consumers reach MinIO through the operator's Service on port 80 (no TLS).
    let tenant = std::fs::read_to_string(out.join("clusters/demo/components/namespaces/acme-corp/minio/tenant-minio.yaml")).unwrap();
    assert!(tenant.contains("requestAutoCert: false"), "{tenant}");
    let pg =
        std::fs::read_to_string(out.join("clusters/demo/components/namespaces/acme-corp/postgresql/cluster-acme-corp-pg.yaml")).unwrap();
    assert!(pg.contains("database: acme-corp") && pg.contains("owner: app_user") && pg.contains("name: acme-corp-pg-credentials"), "{pg}");
}

#[test]
fn tenant_components_wait_for_what_they_need() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    render("demo", &out);
    let plan = plan(&out, "demo");
    let depends_on = |id: &str| -> Vec<String> {
        let component = plan["components"].as_array().unwrap().iter().find(|c| c["id"] == id).unwrap_or_else(|| panic!("{id}"));
        component["dependsOn"].as_array().unwrap().iter().map(|d| d.as_str().unwrap().to_owned()).collect()
    };
    let ns = |c: &str| format!("namespaces/acme-corp/{c}");
    assert_eq!(depends_on(&ns("postgresql")), ["cluster/cnpg-operator", &ns("namespace")]);
    assert_eq!(depends_on(&ns("timescaledb")), ["cluster/cnpg-operator", &ns("postgresql")]);
    assert_eq!(depends_on(&ns("minio")), ["cluster/minio-operator", &ns("namespace")]);
    assert_eq!(depends_on(&ns("rabbitmq")), ["cluster/rabbitmq-operator", &ns("namespace")]);
    assert_eq!(depends_on(&ns("otel-collector")), [ns("jaeger"), ns("namespace")]);
    assert_eq!(depends_on(&ns("mesh-policy")), ["cluster/istiod", &ns("namespace")]);
    for component in ["redis", "jaeger", "prometheus", "grafana", "vector", "shared-cache", "front", "utils"] {
        assert_eq!(depends_on(&ns(component)), [ns("namespace")], "{component}");
    }
}

#[test]
fn disabled_components_leave_no_dangling_reference() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    render("render-enterprise-minimal", &out);
    let tree = read_tree(&out);
    let components: std::collections::BTreeSet<&str> = tree
        .keys()
        .filter_map(|p| p.strip_prefix("clusters/small/components/namespaces/initech-prod/"))
        .filter_map(|p| p.split('/').next())
        .collect();
    assert_eq!(components.into_iter().collect::<Vec<_>>(), ["grafana", "namespace", "otel-collector", "postgresql"]);
    for (path, content) in &tree {
        for gone in ["jaeger.initech-prod", "prometheus.initech-prod", "redis.initech-prod", "minio.initech-prod", "istio-system"] {
            assert!(!content.contains(gone), "`{path}` refers to disabled `{gone}`");
        }
    }
    let grafana = &tree["clusters/small/components/namespaces/initech-prod/grafana/helmrelease-initech-prod-grafana.yaml"];
    assert!(grafana.contains("datasources: []"), "{grafana}");
}

#[test]
fn tenant_credentials_open_to_the_derived_values() {
    let Some(python) = tool("python3", &["-c", "import kubesealpy"]) else { return };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    render("demo", &out);
    let opened = unseal_all(&python, &out);
    let master = tfrs_gitops::secrets::MasterKey::from_hex(&master_key()).unwrap();
    let derive = |path: &str, generate: tfrs_gitops::spec::model::Generate| master.derive(path, &generate).to_string();
    let default = tfrs_gitops::spec::model::Generate::default;
    let pg = &opened["namespaces/acme-corp/postgresql/sealedsecret-acme-corp-pg-credentials.yaml"];
    assert_eq!(pg["username"], "app_user");
    assert_eq!(pg["password"], derive("cluster/demo/namespace/acme-corp/postgresql/password", default()));
    let ts = &opened["namespaces/acme-corp/timescaledb/sealedsecret-acme-corp-ts-credentials.yaml"];
    let hex = tfrs_gitops::spec::model::Generate { length: 40, charset: tfrs_gitops::spec::model::Charset::Hex, rotation: 1 };
    assert_eq!(ts["password"], derive("cluster/demo/namespace/acme-corp/timescaledb/password", hex));
    let minio = &opened["namespaces/acme-corp/minio/sealedsecret-acme-corp-minio-env.yaml"];
    let base64 = tfrs_gitops::spec::model::Generate { charset: tfrs_gitops::spec::model::Charset::Base64, ..default() };
    let root_password = derive("cluster/demo/namespace/acme-corp/minio/rootPassword", base64);
    assert_eq!(minio["config.env"], format!("export MINIO_ROOT_USER=\"minio-root\"\nexport MINIO_ROOT_PASSWORD=\"{root_password}\"\n"));
    let mq = &opened["namespaces/acme-corp/rabbitmq/sealedsecret-acme-corp-rabbitmq-credentials.yaml"];
    assert_eq!(mq["username"], "app");
    assert_eq!(mq["password"], derive("cluster/demo/namespace/acme-corp/rabbitmq/password", default()));
    let grafana = &opened["namespaces/personal-support/grafana/sealedsecret-personal-support-grafana-admin.yaml"];
    assert_eq!(grafana["admin-password"], derive("cluster/demo/namespace/personal-support/grafana/adminPassword", default()));
    // The pull Secret copies hold the same value as the shared one.
    let copies: Vec<&BTreeMap<String, String>> =
        opened.iter().filter(|(p, _)| p.ends_with("sealedsecret-cnb-registry-secret.yaml")).map(|(_, v)| v).collect();
    assert_eq!(copies.len(), 3, "tfr-image-credentials and both tenant namespaces");
    assert!(copies.iter().all(|c| c[".dockerconfigjson"] == copies[0][".dockerconfigjson"]));
}

/// Every SealedSecret of a rendered tree, opened by kubesealpy, by path below `components/`.
fn unseal_all(python: &Path, out: &Path) -> BTreeMap<String, BTreeMap<String, String>> {
    let sealed: Vec<PathBuf> = read_tree(out).keys().filter(|p| p.contains("/sealedsecret-")).map(|p| out.join(p)).collect();
    let script = "import json, sys\nfrom kubesealpy import Unsealer, SealedSecret\nu = Unsealer.from_private_key_file(sys.argv[1])\nprint(json.dumps({p.split('/components/')[1]: {k: v.decode() for k, v in u.unseal(SealedSecret.from_yaml(open(p).read())).get_data_decoded().items()} for p in sys.argv[2:]}))\n";
    let output =
        Command::new(python).args(["-c", script]).arg(root().join("fixtures/demo/keys/sealed-secrets.key")).args(&sealed).output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout).unwrap()
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index] == b'%' {
            out.push(u8::from_str_radix(&text[index + 1..index + 3], 16).unwrap());
            index += 3;
        } else {
            out.push(bytes[index]);
            index += 1;
        }
    }
    String::from_utf8(out).unwrap()
}

#[test]
fn confz_holds_the_same_credentials_as_the_middleware_secrets() {
    let Some(python) = tool("python3", &["-c", "import kubesealpy"]) else { return };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    render("render-servers", &out);
    let opened = unseal_all(&python, &out);
    for (namespace, server) in
        [("umbrella", "everything"), ("umbrella", "tiny"), ("personal-research", "carol-bot"), ("personal-research", "dave-bot")]
    {
        let secret = |component: &str, name: &str| opened[&format!("namespaces/{namespace}/{component}/sealedsecret-{name}.yaml")].clone();
        let confz_text =
            &opened[&format!("namespaces/{namespace}/servers/{server}/config/sealedsecret-{server}-confz.yaml")]["config.toml"];
        let confz: toml::Table = confz_text.parse().unwrap();
        // Enterprise robots connect as the database owner, personal ones as their own role.
        let pg = match namespace {
            "umbrella" => secret("postgresql", "umbrella-pg-credentials"),
            _ => secret("postgresql", &format!("{server}-pg-role")),
        };
        assert_eq!(confz["postgresql"]["password"].as_str(), Some(pg["password"].as_str()), "{server}");
        assert_eq!(confz["postgresql"]["user"].as_str(), Some(pg["username"].as_str()));
        assert_eq!(confz["postgresql"]["dbname"].as_str(), Some(namespace));
        assert_eq!(confz["postgresql"]["host"].as_str(), Some(format!("{namespace}-pg-rw").as_str()));
        let redis = secret("redis", &format!("{namespace}-redis-credentials"));
        assert_eq!(confz["redis"]["password"].as_str(), Some(redis["password"].as_str()));
        assert_eq!(confz["redis"]["host"].as_str(), Some(format!("redis.{namespace}.svc.cluster.local").as_str()));
        let mq = secret("rabbitmq", &format!("{namespace}-rabbitmq-credentials"));
        let url = confz["celery"]["broker_url"].as_str().unwrap();
        let rest = url.strip_prefix("amqp://").unwrap();
        let (userinfo, host) = rest.rsplit_once('@').unwrap();
        let (user, password) = userinfo.split_once(':').unwrap();
        assert_eq!((percent_decode(user), percent_decode(password)), (mq["username"].clone(), mq["password"].clone()), "{url}");
        assert_eq!(host, format!("rabbitmq.{namespace}.svc.cluster.local:5672/"));
        if namespace == "umbrella" {
            let ts = secret("timescaledb", "umbrella-ts-credentials");
            assert_eq!(confz["timescaledb"]["password"].as_str(), Some(ts["password"].as_str()));
            let env = &secret("minio", "umbrella-minio-env")["config.env"];
            let root_password = env.lines().nth(1).unwrap().strip_prefix("export MINIO_ROOT_PASSWORD=\"").unwrap().trim_end_matches('"');
            assert_eq!(confz["cos"]["secret_key"].as_str(), Some(root_password));
            assert_eq!(confz["cos"]["bucket"].as_str(), Some(server), "each server has its own bucket");
        } else {
            assert!(!confz.contains_key("cos") && !confz.contains_key("timescaledb"), "{server}: only enabled middleware");
        }
    }
    // The hostile RabbitMQ password, percent-encoded.
    let everything: toml::Table =
        opened["namespaces/umbrella/servers/everything/config/sealedsecret-everything-confz.yaml"]["config.toml"].parse().unwrap();
    assert_eq!(
        everything["celery"]["broker_url"].as_str(),
        Some("amqp://celery%20user:p%40ss%2Fw%3Ard%23%25%3F%26%3D%2B%20x@rabbitmq.umbrella.svc.cluster.local:5672/")
    );
    // confzData merged over the generated config: tables merge, values replace.
    assert_eq!(everything["postgresql"]["port"].as_integer(), Some(6432));
    assert_eq!(everything["postgresql"]["sslmode"].as_str(), Some("require"));
    assert_eq!(everything["celery"]["broker_pool_limit"].as_integer(), Some(4));
    assert_eq!(everything["robot"]["max_sessions"].as_integer(), Some(50));
    // secretData from the environment, a file, a literal, and derived.
    let secret = &opened["namespaces/umbrella/servers/everything/config/sealedsecret-everything-secret.yaml"];
    assert_eq!(secret["OPENAI_API_KEY"], OPENAI_KEY);
    assert_eq!(secret["ANTHROPIC_API_KEY"], "sk-file-anthropic-0042");
    assert_eq!(secret["STATIC_TOKEN"], "literal-token-9d2");
    let master = tfrs_gitops::secrets::MasterKey::from_hex(&master_key()).unwrap();
    let generate = tfrs_gitops::spec::model::Generate { length: 64, charset: tfrs_gitops::spec::model::Charset::Hex, rotation: 0 };
    assert_eq!(secret["SESSION_SECRET"], master.derive("cluster/robots/server/everything/secretData/SESSION_SECRET", &generate).as_str());
}

#[test]
fn config_data_comes_out_byte_identical_and_injected_keys_win() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    render("render-servers", &out);
    let config = |namespace: &str, server: &str| -> serde_json::Value {
        let text = std::fs::read_to_string(
            out.join(format!("clusters/robots/components/namespaces/{namespace}/servers/{server}/config/configmap-{server}-config.yaml")),
        )
        .unwrap();
        tfrs_gitops::spec::yaml::parse(0, &text).unwrap()[0].to_json()["data"].clone()
    };
    let everything = config("umbrella", "everything");
    assert_eq!(everything["TFS_YAML"], "key: value\n- item\n---\n{{ x }} {% y %} # not a comment");
    assert_eq!(everything["TFS_FLAG"], "yes");
    assert_eq!(everything["TFS_EMPTY"], "");
    assert_eq!(everything["TFS_ROBOT__DOC_EXTRACTED_IMAGES_DIR"], "/mnt/cache", "the cache directory wins over configData");
    assert_eq!(everything["TFS_ROBOT__DB_SCHEMA"], "umbrella_main");
    assert!(config("umbrella", "tiny").get("TFS_ROBOT__DB_SCHEMA").is_none(), "enterprise schemas are not defaulted");
    assert_eq!(config("personal-research", "carol-bot")["TFS_ROBOT__DB_SCHEMA"], "carol_bot");
    assert_eq!(config("personal-research", "dave-bot")["TFS_ROBOT__DB_SCHEMA"], "dave_custom");
    // In the containers too: an explicit env entry wins over envFrom.
    for worker in ["api", "robot-worker"] {
        let text = std::fs::read_to_string(out.join(format!(
            "clusters/robots/components/namespaces/umbrella/servers/everything/{}/deployment-everything-{worker}.yaml",
            if worker == "api" { "api-worker" } else { "robot-worker" }
        )))
        .unwrap();
        let deployment = tfrs_gitops::spec::yaml::parse(0, &text).unwrap()[0].to_json();
        let container = &deployment["spec"]["template"]["spec"]["containers"][0];
        let env: Vec<&serde_json::Value> =
            container["env"].as_array().unwrap().iter().filter(|e| e["name"] == "TFS_ROBOT__DOC_EXTRACTED_IMAGES_DIR").collect();
        assert_eq!(env.len(), 1);
        assert_eq!(env[0]["value"], "/mnt/cache");
        assert!(container["volumeMounts"].as_array().unwrap().iter().any(|m| m["mountPath"] == "/mnt/cache"), "{worker}");
        assert!(deployment["spec"]["template"]["metadata"]["annotations"]["checksum/config"].is_string());
    }
}

#[test]
fn server_components_run_config_then_jobs_then_workers() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    render("render-servers", &out);
    let plan = plan(&out, "robots");
    let depends_on = |id: &str| -> Vec<String> {
        let component = plan["components"].as_array().unwrap().iter().find(|c| c["id"] == id).unwrap_or_else(|| panic!("{id}"));
        component["dependsOn"].as_array().unwrap().iter().map(|d| d.as_str().unwrap().to_owned()).collect()
    };
    let sorted = |mut ids: Vec<String>| {
        ids.sort();
        ids
    };
    let s = |c: &str| format!("namespaces/umbrella/servers/everything/{c}");
    let t = |c: &str| format!("namespaces/umbrella/{c}");
    assert_eq!(depends_on(&s("config")), sorted(vec![t("namespace")]));
    assert_eq!(depends_on(&s("db-init")), sorted(vec![s("config"), t("postgresql"), t("timescaledb")]));
    assert_eq!(depends_on(&s("minio-init")), sorted(vec![s("config"), t("minio")]));
    assert_eq!(depends_on(&s("grafana-sa")), sorted(vec![s("config"), t("grafana")]));
    let workers = [s("config"), s("db-init"), s("grafana-sa"), s("minio-init"), t("rabbitmq"), t("redis"), t("shared-cache")];
    assert_eq!(depends_on(&s("api-worker")), sorted(workers.to_vec()));
    assert_eq!(depends_on(&s("robot-worker")), sorted(workers.to_vec()));
    // Jobs switched off: the workers wait for the configuration and for what the jobs would
    // have waited for.
    let tiny = |c: &str| format!("namespaces/umbrella/servers/tiny/{c}");
    let expected = ["grafana", "minio", "postgresql", "rabbitmq", "redis", "shared-cache", "timescaledb"].map(t);
    assert_eq!(depends_on(&tiny("api-worker")), sorted(expected.into_iter().chain([tiny("config")]).collect()));
    // A VirtualService routes the custom host on the cluster Gateway, which now lists it.
    let vs = std::fs::read_to_string(
        out.join("clusters/robots/components/namespaces/umbrella/servers/everything/api-worker/virtualservice-everything.yaml"),
    )
    .unwrap();
    assert!(
        vs.contains("bot.umbrella-corp.example.org")
            && vs.contains("istio-ingress/tfrs-gateway")
            && vs.contains("everything-api.umbrella.svc.cluster.local"),
        "{vs}"
    );
    let gateway = std::fs::read_to_string(out.join("clusters/robots/components/cluster/gateway/gateway-tfrs-gateway.yaml")).unwrap();
    assert!(gateway.contains("bot.umbrella-corp.example.org"), "{gateway}");
}

#[test]
fn invalid_confz_data_stops_the_render_naming_the_toml_line() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let output = tfrs(&["render", "fixtures/err-invalid-confz-toml", "--out", out.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1), "{}", report(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("spec.confzData: invalid TOML (TOML line"), "{stderr}");
    assert!(!out.exists());
}

/// A copy of a fixture in a temp dir, to change.
fn copy_fixture(fixture: &str, dir: &Path) -> PathBuf {
    let target = dir.join(fixture);
    for (path, content) in read_tree(&root().join("fixtures").join(fixture)) {
        let destination = target.join(path);
        std::fs::create_dir_all(destination.parent().unwrap()).unwrap();
        std::fs::write(destination, content).unwrap();
    }
    target
}

#[test]
fn environment_problems_exit_2_and_name_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    // No master key: every generated secret is named, and the exit code is the environment's.
    let output = common::tfrs_command()
        .args(["render", "fixtures/demo", "--out", out.to_str().unwrap()])
        .env_remove("TFRS_MASTER_KEY")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", report(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("fixtures/demo/tenants.yaml:17:15: spec.postgresql.password: generated secrets need a master key"), "{stderr}");
    assert!(!out.exists());
    // A bad `OPERATOR_*` override names the variable.
    let output = common::tfrs_command()
        .args(["render", "fixtures/render-argocd-tke", "--out", out.to_str().unwrap()])
        .env("TFRS_MASTER_KEY", master_key())
        .env("TFRS_TEST_REGISTRY_PASSWORD", REGISTRY_PASSWORD)
        .env("OPERATOR_HELM_REPO_URL", "https://charts.example.com/tfrs")
        .env("OPERATOR_CHART_VERSION", "latest")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", report(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("spec.tfrsOperator.chart: expected an OCI chart reference") && stderr.contains("`OPERATOR_HELM_REPO_URL`"),
        "{stderr}"
    );
    assert!(stderr.contains("spec.tfrsOperator.version: expected a version") && stderr.contains("`OPERATOR_CHART_VERSION`"), "{stderr}");
    // Valid overrides win over the spec.
    let output = common::tfrs_command()
        .args(["render", "fixtures/render-argocd-tke", "--out", out.to_str().unwrap()])
        .env("TFRS_MASTER_KEY", master_key())
        .env("TFRS_TEST_REGISTRY_PASSWORD", REGISTRY_PASSWORD)
        .env("OPERATOR_HELM_REPO_URL", "oci://registry.example.com/charts/tfrs-operator")
        .env("OPERATOR_CHART_VERSION", "0.6.1")
        .env("OPERATOR_IMAGE_TAG", "v0.6.1-hotfix")
        .env("OPERATOR_RELEASE_NAME", "tfrs-op")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", report(&output));
    let app = std::fs::read_to_string(out.join("clusters/prod-sh/components/cluster/tfrs-operator/application-prod-sh-tfrs-op-chart.yaml"))
        .unwrap();
    for expected in [
        "repoURL: oci://registry.example.com/charts/tfrs-operator",
        "targetRevision: \"0.6.1\"",
        "tag: v0.6.1-hotfix",
        "releaseName: tfrs-op",
    ] {
        assert!(app.contains(expected), "{expected}: {app}");
    }
    // The release namespace is rendered, so the sealed pull Secret has somewhere to land.
    assert!(out.join("clusters/prod-sh/components/cluster/tfrs-operator/namespace-tfrs-operator-system.yaml").exists());
    // A non-UTF-8 credential file is an error, never altered.
    let spec_dir = copy_fixture("demo", dir.path());
    std::fs::write(spec_dir.join("secrets/registry-password.txt"), b"token\xff\xfe\n").unwrap();
    let output = tfrs(&["render", spec_dir.to_str().unwrap(), "--out", dir.path().join("out2").to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2), "{}", report(&output));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("spec.imageRegistry.password: the value is not UTF-8 text"),
        "{}",
        report(&output)
    );
    // A missing certificate is located.
    std::fs::remove_file(spec_dir.join("keys/sealed-secrets.pem")).unwrap();
    std::fs::write(spec_dir.join("secrets/registry-password.txt"), b"token\n").unwrap();
    let output = tfrs(&["render", spec_dir.to_str().unwrap(), "--out", dir.path().join("out3").to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2), "{}", report(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("cluster.yaml:") && stderr.contains(": spec.sealing.certFile: cannot read"), "{stderr}");
}

#[test]
fn the_output_directory_is_resolved_before_anything_is_written() {
    let dir = tempfile::tempdir().unwrap();
    // `--out` inside an input directory: the rendered tree is never read back as specs.
    let spec_dir = copy_fixture("render-minimal", dir.path());
    let inside = spec_dir.join("out");
    let first = tfrs(&["render", spec_dir.to_str().unwrap(), "--out", inside.to_str().unwrap()]);
    assert_eq!(first.status.code(), Some(0), "{}", report(&first));
    let again = tfrs(&["render", spec_dir.to_str().unwrap(), "--out", inside.to_str().unwrap()]);
    assert_eq!(again.status.code(), Some(0), "{}", report(&again));
    // The working directory (or a parent of it) cannot be swapped out, and nothing is left behind.
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let output = common::tfrs_command()
        .args(["render"])
        .arg(root().join("fixtures/render-minimal"))
        .args(["--out", "."])
        .current_dir(&empty)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", report(&output));
    assert!(String::from_utf8_lossy(&output.stderr).contains("contains the working directory"), "{}", report(&output));
    assert_eq!(std::fs::read_dir(&empty).unwrap().count(), 0);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2, "no sibling left behind");
    // A symlinked `--out` renders into its target.
    let target = dir.path().join("target");
    std::os::unix::fs::symlink(&target, dir.path().join("link")).unwrap();
    std::fs::create_dir(&target).unwrap();
    let output = tfrs(&["render", "fixtures/render-minimal", "--out", dir.path().join("link").to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(0), "{}", report(&output));
    assert!(target.join("clusters/bare/plan.json").exists());
    assert!(dir.path().join("link").symlink_metadata().unwrap().file_type().is_symlink());
}

#[test]
fn rendering_other_clusters_into_a_directory_warns_about_the_ones_it_removes() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    render("render-minimal", &out);
    let output = render("render-sops-docker-desktop", &out);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("warning: removing `clusters/bare/`: cluster `bare` is not in the inputs"), "{stderr}");
    assert!(!out.join("clusters/bare").exists());
}

#[test]
fn graph_of_several_clusters_is_one_document() {
    let output = tfrs(&["graph", "fixtures/render-minimal", "fixtures/render-sops-docker-desktop", "--format", "dot"]);
    assert_eq!(output.status.code(), Some(0), "{}", report(&output));
    let text = String::from_utf8_lossy(&output.stdout);
    assert_eq!(text.matches("digraph").count(), 1, "{text}");
    assert!(text.contains("\"laptop:cluster/istiod\" -> \"laptop:cluster/istio-ingress\""), "{text}");
    assert!(text.contains("\"bare:cluster/image-registry\""), "{text}");
}

#[test]
fn billing_renders_the_token_chain_only_where_a_collector_reads_it() {
    let Some(python) = tool("python3", &["-c", "import kubesealpy"]) else { return };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    render("render-billing", &out);
    let objects = planned(&plan(&out, "billed"));
    let has = |component: &str, kind: &str, namespace: &str, name: &str| {
        objects.iter().any(|(c, k, n, o)| c == component && k == kind && n == namespace && o == name)
    };
    assert!(has("cluster/external-secrets", "HelmRelease", "flux-system", "external-secrets"));
    assert!(has("cluster/billing-store", "ClusterSecretStore", "", "tfrs-otlp-infisical"));
    assert!(has("cluster/billing-store", "SealedSecret", "external-secrets", "tfrs-otlp-infisical-auth-source"));
    assert!(has("namespaces/hooli/billing-token", "ExternalSecret", "hooli", "tfrs-otlp-token"));
    assert!(!objects.iter().any(|(_, k, n, _)| k == "ExternalSecret" && n == "quiet"), "no collector, no token");
    let store =
        std::fs::read_to_string(out.join("clusters/billed/components/cluster/billing-store/clustersecretstore-tfrs-otlp-infisical.yaml"))
            .unwrap();
    for expected in [
        "hostAPI: https://secret-staging.example.com",
        "projectSlug: tfrs-staging",
        "environmentSlug: staging",
        "secretsPath: /otlp/billed",
    ] {
        assert!(store.contains(expected), "{expected}: {store}");
    }
    // Edges: ESO -> store -> ExternalSecret -> collector.
    let plan = plan(&out, "billed");
    let depends_on = |id: &str| -> Vec<String> {
        let component = plan["components"].as_array().unwrap().iter().find(|c| c["id"] == id).unwrap();
        component["dependsOn"].as_array().unwrap().iter().map(|d| d.as_str().unwrap().to_owned()).collect()
    };
    assert_eq!(depends_on("cluster/billing-store"), ["cluster/external-secrets"]);
    assert!(depends_on("namespaces/hooli/billing-token").contains(&"cluster/billing-store".to_owned()));
    assert!(depends_on("namespaces/hooli/otel-collector").contains(&"namespaces/hooli/billing-token".to_owned()));
    // The collector reads the token from the environment; the config never holds it.
    let collector =
        std::fs::read_to_string(out.join("clusters/billed/components/namespaces/hooli/otel-collector/deployment-otel-collector.yaml"))
            .unwrap();
    assert!(
        collector.contains("name: TFRS_OTLP_TOKEN")
            && collector.contains("name: tfrs-otlp-token")
            && collector.contains("key: PRIMARY_TOKEN"),
        "{collector}"
    );
    let config =
        std::fs::read_to_string(out.join("clusters/billed/components/namespaces/hooli/otel-collector/configmap-otel-collector.yaml"))
            .unwrap();
    assert!(
        config.contains("endpoint: https://otlp.example.com") && config.contains("Authorization: Bearer ${env:TFRS_OTLP_TOKEN}"),
        "{config}"
    );
    // The identity's Secret opens to the values from the environment.
    let opened = unseal_all(&python, &out);
    let auth = &opened["cluster/billing-store/sealedsecret-tfrs-otlp-infisical-auth-source.yaml"];
    assert_eq!(
        (auth["clientId"].as_str(), auth["clientSecret"].as_str(), auth["expiresAt"].as_str()),
        (ESO_CLIENT_ID, ESO_CLIENT_SECRET, "2099-05-19")
    );
    // Billing off: none of it, and no exporter left behind.
    let off = dir.path().join("off");
    render("demo", &off);
    for (path, content) in read_tree(&off) {
        assert!(!path.contains("external-secrets") && !path.contains("billing"), "{path}");
        assert!(!content.contains("otlp_http/billing") && !content.contains("TFRS_OTLP_TOKEN"), "{path}");
    }
}

#[test]
fn a_billing_secret_expiring_soon_is_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let spec_dir = copy_fixture("render-billing", dir.path());
    std::fs::write(spec_dir.join("keys.pem"), std::fs::read(root().join("fixtures/demo/keys/sealed-secrets.pem")).unwrap()).unwrap();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let soon = civil_date(now / 86_400 + 10);
    let text = std::fs::read_to_string(spec_dir.join("spec.yaml"))
        .unwrap()
        .replace("2099-05-19", &soon)
        .replace("../demo/keys/sealed-secrets.pem", "keys.pem");
    std::fs::write(spec_dir.join("spec.yaml"), text).unwrap();
    let output = tfrs(&["validate", spec_dir.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(0), "{}", report(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("spec.billing.infisical.expiresAt: the ESO machine identity's client secret expires in 10 days"), "{stderr}");
}

/// `YYYY-MM-DD` of a day count since 1970-01-01.
fn civil_date(days: u64) -> String {
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

#[test]
fn a_git_work_tree_is_never_replaced_but_can_be_checked() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    render("render-minimal", &out);
    assert!(Command::new("git").args(["init", "-q"]).current_dir(&out).status().unwrap().success());
    let output = tfrs(&["render", "fixtures/render-minimal", "--out", out.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2), "{}", report(&output));
    assert!(String::from_utf8_lossy(&output.stderr).contains("is a Git work tree"), "{}", report(&output));
    assert!(out.join(".git").exists());
    // `--check` writes nothing: it compares a checkout's `clusters/` with the render.
    let check = tfrs(&["render", "fixtures/render-minimal", "--out", out.to_str().unwrap(), "--check"]);
    assert_eq!(check.status.code(), Some(0), "{}", report(&check));
}

#[test]
fn credentials_the_middleware_would_misread_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("spec.yaml");
    std::fs::write(
        &spec,
        format!(
            "apiVersion: tfrs.turingfocus.cn/v1alpha1\nkind: TFRCluster\nmetadata: {{name: c}}\nspec:\n  ingress: {{domain: c.example.com}}\n  sealing: {{certFile: {}}}\n---\napiVersion: tfrs.turingfocus.cn/v1alpha1\nkind: TFRTenant\nmetadata: {{name: t}}\nspec:\n  cluster: c\n  minio: {{rootUser: {{value: \"mi\\\"nio\"}}}}\n  redis: {{password: {{value: \"two words\"}}}}\n",
            root().join("fixtures/demo/keys/sealed-secrets.pem").display()
        ),
    )
    .unwrap();
    let output = tfrs(&["render", spec.to_str().unwrap(), "--out", dir.path().join("out").to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1), "{}", report(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("spec.minio.rootUser: may not contain") && stderr.contains("spec.redis.password: may not contain whitespace"),
        "{stderr}"
    );
    assert!(!stderr.contains("two words") && !stderr.contains("mi\"nio"), "never the values");
}

#[test]
fn rotating_the_redis_password_rolls_redis() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    render("render-enterprise-full", &out);
    let deployment =
        || std::fs::read_to_string(out.join("clusters/full/components/namespaces/globex/redis/deployment-redis.yaml")).unwrap();
    let before = deployment();
    assert!(before.contains("checksum/credentials:"), "{before}");
    let output = common::tfrs_command()
        .args(["render", "fixtures/render-enterprise-full", "--out", out.to_str().unwrap()])
        .env("TFRS_MASTER_KEY", master_key())
        .env("TFRS_TEST_REGISTRY_PASSWORD", REGISTRY_PASSWORD)
        .env("TFRS_TEST_REDIS_PASSWORD", "a-rotated-redis-password")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", report(&output));
    assert_ne!(before, deployment(), "the pod template changes, so Redis restarts with the new password");
}

#[test]
fn a_markdown_diff_of_a_large_change_stays_under_a_pull_request_comment() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    assert!(Command::new("git").args(["init", "-q", "--bare", "-b", "main", repo.to_str().unwrap()]).status().unwrap().success());
    let spec = dir.path().join("spec.yaml");
    let mut text = format!(
        "apiVersion: tfrs.turingfocus.cn/v1alpha1\nkind: TFRCluster\nmetadata: {{name: big}}\nspec:\n  ingress: {{domain: big.example.com}}\n  sealing: {{certFile: {}}}\n",
        root().join("fixtures/demo/keys/sealed-secrets.pem").display()
    );
    for tenant in 0..40 {
        text.push_str(&format!(
            "---\napiVersion: tfrs.turingfocus.cn/v1alpha1\nkind: TFRTenant\nmetadata: {{name: t{tenant}}}\nspec: {{cluster: big}}\n"
        ));
    }
    std::fs::write(&spec, text).unwrap();
    let first = common::tfrs_command()
        .args(["commit", "fixtures/render-minimal", "--repo", repo.to_str().unwrap(), "--author", "T <t@example.com>"])
        .output()
        .unwrap();
    assert_eq!(first.status.code(), Some(0), "{}", report(&first));
    let output = tfrs(&["diff", spec.to_str().unwrap(), "--repo", repo.to_str().unwrap(), "--format", "markdown"]);
    assert_eq!(output.status.code(), Some(1), "{}", report(&output));
    assert!(output.stdout.len() < 65_536, "{} bytes", output.stdout.len());
}
