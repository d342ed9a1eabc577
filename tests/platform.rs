//! What makes a rendered platform come up on a real cluster, checked on every render fixture:
//! images and charts only from sources upstream still publishes, pinned; one-shot Jobs that an
//! upgrade can replace and that finish in the mesh; no daily re-runs; the ordering edges that
//! keep pods from starting without their sidecar; no Service an operator owns; the Let's Encrypt
//! solver's IngressClass; Prometheus scrapes that STRICT mTLS admits; Argo CD's health check,
//! retries and ignored fields; chart versions pinned even when a spec gives a partial map.

#![allow(clippy::unwrap_used)] // a test crate: a panic is the failure report

mod common;

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// A rendered tree: every object with its file, and each cluster's plan.
struct Tree {
    _dir: tempfile::TempDir,
    objects: Vec<(String, Value)>,
    plans: Vec<Value>,
}

fn render_dir(specs: &Path) -> Tree {
    let dir = tempfile::tempdir().unwrap();
    let output = common::fixture_command().arg("render").arg(specs).arg("--no-memo").arg("--out").arg(dir.path()).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}: {}", specs.display(), common::report(&output));
    let mut objects = Vec::new();
    let mut plans = Vec::new();
    let mut stack = vec![dir.path().to_path_buf()];
    while let Some(current) = stack.pop() {
        for entry in std::fs::read_dir(&current).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if path.is_dir() {
                stack.push(path);
            } else if name == "plan.json" {
                plans.push(serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap());
            } else if name.ends_with(".yaml") && name != "kustomization.yaml" {
                let value: Value = serde_saphyr::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
                objects.push((path.strip_prefix(dir.path()).unwrap().display().to_string(), value));
            }
        }
    }
    objects.sort_by(|a, b| a.0.cmp(&b.0));
    Tree { _dir: dir, objects, plans }
}

fn render(fixture: &str) -> Tree {
    render_dir(&common::root().join("fixtures").join(fixture))
}

fn all() -> Vec<(&'static str, Tree)> {
    common::RENDER_FIXTURES.iter().map(|f| (*f, render(f))).collect()
}

fn of_kind<'a>(tree: &'a Tree, kind: &str) -> impl Iterator<Item = &'a (String, Value)> {
    let kind = kind.to_owned();
    tree.objects.iter().filter(move |(_, o)| o["kind"] == kind.as_str())
}

/// Every string under a key named `key`, anywhere in `value`.
fn strings_under<'a>(value: &'a Value, key: &str, out: &mut Vec<&'a str>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                if k == key
                    && let Some(text) = v.as_str()
                {
                    out.push(text);
                }
                strings_under(v, key, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|v| strings_under(v, key, out)),
        _ => {}
    }
}

/// Where an image or a chart comes from, in every object: images, image names, chart and
/// repository URLs.
fn sources(object: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for key in ["image", "imageName", "reference"] {
        let mut found = Vec::new();
        strings_under(object, key, &mut found);
        out.extend(found.into_iter().map(str::to_owned));
    }
    for pointer in ["/spec/url", "/spec/source/repoURL"] {
        if let Some(url) = object.pointer(pointer).and_then(Value::as_str) {
            out.push(url.to_owned());
        }
    }
    out
}

#[test]
fn images_and_charts_come_from_sources_upstream_still_publishes_and_are_pinned() {
    // Sources upstream stopped publishing, or never published.
    let gone = [
        ("bitnamicharts", "Bitnami's charts and images were removed from Docker Hub"),
        ("docker.io/bitnami/", "Bitnami's images were removed from Docker Hub"),
        ("ghcr.io/cloudnative-pg/timescaledb:", "never published; the image is timescaledb-oss"),
        ("ghcr.io/istio/release", "not Istio's chart registry"),
        ("docker.io/minio/operator", "the MinIO operator image is on quay.io"),
    ];
    let mut checked = 0;
    for (fixture, tree) in all() {
        for (file, object) in &tree.objects {
            for source in sources(object) {
                checked += 1;
                for (pattern, why) in gone {
                    assert!(!source.contains(pattern), "{fixture}: {file}: `{source}`: {why}");
                }
                assert!(!source.starts_with("bitnami/"), "{fixture}: {file}: `{source}`: Bitnami's Docker Hub images are gone");
                let is_image = !source.contains("://");
                if is_image {
                    let tag = source.rsplit('/').next().unwrap().split_once(':').map(|(_, t)| t);
                    assert!(tag.is_some_and(|t| !t.is_empty() && t != "latest"), "{fixture}: {file}: `{source}` is not pinned to a tag");
                }
            }
            // Every chart and upstream base names a version.
            for pointer in ["/spec/source/targetRevision", "/spec/ref/tag", "/spec/chart/spec/version"] {
                if let Some(version) = object.pointer(pointer) {
                    assert!(version.as_str().is_some_and(|v| !v.is_empty()), "{fixture}: {file}: {pointer} is empty");
                }
            }
        }
    }
    assert!(checked > 100, "only {checked} sources");
}

#[test]
fn jobs_are_replaced_not_updated_never_rerun_by_ttl_and_finish_in_the_mesh() {
    for (fixture, tree) in all() {
        let injected: BTreeSet<&str> = of_kind(&tree, "Namespace")
            .filter(|(_, o)| o["metadata"]["labels"]["istio-injection"] == "enabled")
            .filter_map(|(_, o)| o["metadata"]["name"].as_str())
            .collect();
        for (file, job) in of_kind(&tree, "Job") {
            let name = job["metadata"]["name"].as_str().unwrap();
            let hash = name.rsplit('-').next().unwrap();
            assert!(hash.len() == 8 && hash.bytes().all(|b| b.is_ascii_hexdigit()), "{fixture}: {file}: `{name}` is not named by its spec");
            assert!(
                job["spec"].get("ttlSecondsAfterFinished").is_none(),
                "{fixture}: {file}: a TTL makes the engine re-create and re-run it"
            );
            let pod = &job["spec"]["template"];
            let namespace = job["metadata"]["namespace"].as_str().unwrap();
            if injected.contains(namespace) {
                let no_sidecar = pod["metadata"]["annotations"]["sidecar.istio.io/inject"] == "false";
                let script = pod["spec"]["containers"][0]["command"].to_string();
                let stops_sidecar = script.contains("quitquitquit");
                assert!(no_sidecar || stops_sidecar, "{fixture}: {file}: in a meshed namespace the pod never finishes");
                if stops_sidecar {
                    assert_eq!(pod["spec"]["restartPolicy"], "Never", "{fixture}: {file}: a restarted container has no sidecar left");
                }
            }
        }
    }
}

#[test]
fn no_object_an_operator_owns_is_rendered() {
    for (fixture, tree) in all() {
        for (file, service) in of_kind(&tree, "Service") {
            // The MinIO operator's Services of a Tenant.
            let name = service["metadata"]["name"].as_str().unwrap();
            assert!(!["minio", "minio-hl", "minio-console"].contains(&name), "{fixture}: {file}: the MinIO operator owns `{name}`");
        }
    }
}

/// The components a component waits for, directly or not.
fn closure(plan: &Value, id: &str) -> BTreeSet<String> {
    let edges: BTreeMap<&str, Vec<&str>> = plan["components"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["id"].as_str().unwrap(), c["dependsOn"].as_array().unwrap().iter().map(|d| d.as_str().unwrap()).collect()))
        .collect();
    let mut out = BTreeSet::new();
    let mut stack = vec![id];
    while let Some(current) = stack.pop() {
        for dependency in edges.get(current).into_iter().flatten() {
            if out.insert((*dependency).to_owned()) {
                stack.push(dependency);
            }
        }
    }
    out
}

#[test]
fn no_pod_starts_before_its_sidecar_can_be_injected_and_nothing_waits_for_an_unbound_cache() {
    for (fixture, tree) in all() {
        for plan in &tree.plans {
            let ids: Vec<&str> = plan["components"].as_array().unwrap().iter().map(|c| c["id"].as_str().unwrap()).collect();
            if !ids.contains(&"cluster/istiod") {
                continue;
            }
            for id in ids.iter().filter(|id| id.starts_with("namespaces/")) {
                assert!(closure(plan, id).contains("cluster/istiod"), "{fixture}: `{id}` can start pods before istiod injects sidecars");
            }
        }
        for (file, kustomization) in of_kind(&tree, "Kustomization").filter(|(f, _)| f.contains("/gitops/")) {
            if kustomization["spec"]["path"].as_str().unwrap().ends_with("/shared-cache") {
                assert_eq!(
                    kustomization["spec"]["wait"], false,
                    "{fixture}: {file}: a WaitForFirstConsumer claim never binds before its consumers"
                );
            }
        }
        for (file, claim) in of_kind(&tree, "PersistentVolumeClaim").filter(|(f, _)| f.contains("/shared-cache/")) {
            assert_eq!(claim["metadata"]["annotations"]["argocd.argoproj.io/ignore-healthcheck"], "true", "{fixture}: {file}");
        }
    }
}

#[test]
fn lets_encrypt_solvers_name_an_ingress_class_that_exists() {
    let mut seen = 0;
    for (fixture, tree) in all() {
        let classes: BTreeSet<&str> = of_kind(&tree, "IngressClass").filter_map(|(_, o)| o["metadata"]["name"].as_str()).collect();
        for (file, issuer) in of_kind(&tree, "ClusterIssuer") {
            let mut names = Vec::new();
            strings_under(&issuer["spec"], "ingressClassName", &mut names);
            for name in names {
                seen += 1;
                assert!(classes.contains(name), "{fixture}: {file}: the solver's IngressClass `{name}` is not rendered");
            }
        }
        for (file, class) in of_kind(&tree, "IngressClass") {
            assert_eq!(class["spec"]["controller"], "istio.io/ingress-controller", "{fixture}: {file}");
        }
    }
    assert!(seen > 0, "no fixture uses Let's Encrypt");
}

#[test]
fn prometheus_scrapes_what_strict_mtls_admits() {
    let tree = render("demo");
    let (file, config) = of_kind(&tree, "ConfigMap").find(|(f, _)| f.ends_with("acme-corp/prometheus/configmap-prometheus.yaml")).unwrap();
    let text = config["data"].to_string();
    assert!(text.contains("__meta_kubernetes_pod_annotation_prometheus_io_port"), "{file}: no port relabel");
    let (file, deployment) =
        of_kind(&tree, "Deployment").find(|(f, _)| f.ends_with("acme-corp/prometheus/deployment-prometheus.yaml")).unwrap();
    assert_eq!(deployment["spec"]["template"]["metadata"]["annotations"]["sidecar.istio.io/inject"], "false", "{file}");
}

#[test]
fn argo_cd_waits_for_healthy_children_retries_for_ever_and_ignores_injected_fields() {
    let tree = render("render-argocd-tke");
    let (_, config) = of_kind(&tree, "ConfigMap").find(|(f, _)| f.contains("/gitops/")).expect("the argocd-cm health check");
    assert_eq!(config["metadata"]["name"], "argocd-cm");
    assert_eq!(config["metadata"]["namespace"], "argocd");
    assert!(config["metadata"]["annotations"]["argocd.argoproj.io/sync-options"].as_str().unwrap().contains("Prune=false"));
    let lua = config["data"]["resource.customizations.health.argoproj.io_Application"].as_str().unwrap();
    assert!(lua.contains("obj.status.health.status"), "{lua}");
    let applications: Vec<_> = of_kind(&tree, "Application").collect();
    assert!(applications.len() > 10);
    for (file, application) in applications {
        let policy = &application["spec"]["syncPolicy"];
        assert!(policy["retry"]["limit"].as_i64().unwrap() < 0, "{file}: retries give up");
        assert!(policy["retry"]["backoff"]["maxDuration"].is_string(), "{file}");
        if application.pointer("/spec/source/helm").is_some() || application.pointer("/spec/source/kustomize").is_some() {
            let ignored = application["spec"]["ignoreDifferences"].to_string();
            assert!(ignored.contains("caBundle") && ignored.contains("failurePolicy"), "{file}: {ignored}");
            assert!(policy["syncOptions"].to_string().contains("RespectIgnoreDifferences=true"), "{file}");
        }
    }
}

#[test]
fn versions_hold_field_by_field() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("spec.yaml"),
        "apiVersion: tfrs.turingfocus.cn/v1alpha1\nkind: TFRCluster\nmetadata: {name: partial}\nspec:\n  ingress: { domain: partial.example.com }\n  certManager: { enabled: true }\n  istio: { enabled: true }\n  operators:\n    cnpg: { enabled: true }\n    minio: { enabled: true }\n    rabbitmq: { enabled: true }\n  sealing: { backend: sops-age, ageRecipients: [age1763reswr756hamsur7pj5sq2slkhpr9zenkp94ua0sjallefrqqsgwe89c] }\n",
    )
    .unwrap();
    let tree = render_dir(dir.path());
    let output = common::tfrs_command().args(["version", "--components", "--format", "json"]).output().unwrap();
    let catalog: Value = serde_json::from_slice(&output.stdout).unwrap();
    let pinned = |name: &str| -> String {
        catalog["components"].as_array().unwrap().iter().find(|p| p["name"] == name).unwrap()["version"].as_str().unwrap().to_owned()
    };
    let versions: BTreeMap<String, String> = tree
        .objects
        .iter()
        .filter_map(|(_, o)| {
            let version = o.pointer("/spec/ref/tag").or_else(|| o.pointer("/spec/chart/spec/version"))?;
            Some((o["metadata"]["name"].as_str().unwrap().to_owned(), version.as_str().unwrap().to_owned()))
        })
        .collect();
    assert_eq!(versions.get("cert-manager"), Some(&pinned("cert-manager")), "{versions:?}");
    assert_eq!(versions.get("cnpg"), Some(&pinned("cloudnative-pg")), "{versions:?}");
    assert_eq!(versions.get("minio-operator"), Some(&pinned("minio-operator")), "{versions:?}");
    assert_eq!(versions.get("rabbitmq-cluster-operator"), Some(&pinned("rabbitmq-cluster-operator")), "{versions:?}");
    assert_eq!(versions.get("istiod"), Some(&pinned("istio")), "{versions:?}");
}

#[test]
fn what_a_job_writes_outlives_a_restart_and_the_operators_come_up_in_order() {
    for (fixture, tree) in all() {
        // Grafana keeps its database (the service accounts and tokens the Jobs create) on a volume.
        for (file, release) in of_kind(&tree, "HelmRelease").filter(|(_, o)| o["spec"]["releaseName"] == "grafana") {
            assert_eq!(release["spec"]["values"]["persistence"]["enabled"], true, "{fixture}: {file}");
            assert_eq!(release["spec"]["values"]["deploymentStrategy"]["type"], "Recreate", "{fixture}: {file}");
        }
        // The topology operator's base has no Namespace of its own: it comes after the cluster
        // operator's, which creates `rabbitmq-system`.
        for (file, kustomization) in
            of_kind(&tree, "Kustomization").filter(|(_, o)| o["metadata"]["name"] == "rabbitmq-messaging-topology-operator")
        {
            assert_eq!(kustomization["spec"]["dependsOn"][0]["name"], "rabbitmq-cluster-operator", "{fixture}: {file}");
        }
        for (file, application) in of_kind(&tree, "Application").filter(|(f, _)| f.contains("messaging-topology-operator-manifests")) {
            assert_eq!(application["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"], "1", "{fixture}: {file}");
        }
    }
}
