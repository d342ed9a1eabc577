//! Every rendered tree is valid: hostile strings round-trip, outside tools (kubectl kustomize,
//! kubernetes-validate) and the pinned upstream CRDs accept it, user templates are checked like
//! built-ins, and no object is written twice.

use super::common::RENDER_FIXTURES;
use super::{crd, read_tree, render, report, root, tfrs, tool};
use std::collections::BTreeMap;
use std::process::Command;

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
