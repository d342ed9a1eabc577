//! Every rendered object against a real, current kube-apiserver with the pinned upstream CRDs
//! registered (`scripts/kube-apiserver.sh`):
//!
//! - every render fixture, under every engine and sealing backend the spec allows, is
//!   server-side applied object by object with `fieldValidation=Strict`, first `dryRun=All`,
//!   then for real: zero errors, zero warnings, and no field the server dropped;
//! - the upgrades users make (an image tag, a `configData` value, a `confzData` table, replicas,
//!   a secret rotation, a chart version, a removed server) apply over the previous render with
//!   zero errors: immutable fields (Jobs, StatefulSet selectors, PVCs) must not change.
//!
//! SOPS-encrypted Secrets are decrypted first (`tfrs unseal`), as Flux's kustomize-controller
//! does before it applies them. Namespaces that the tree expects to exist (those of the GitOps
//! engine and the ones Helm releases create) are created first.

#![allow(clippy::unwrap_used)] // a test crate: a panic is the failure report

#[path = "common/apiserver.rs"]
mod apiserver;
mod common;

use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

const AGE_RECIPIENT: &str = "age1763reswr756hamsur7pj5sq2slkhpr9zenkp94ua0sjallefrqqsgwe89c";

/// The engines and sealing backends a fixture is rendered under. Argo CD with SOPS is refused
/// by validation (Argo CD has no SOPS decryption of its own), so it is not a variant.
const VARIANTS: &[(&str, &str)] = &[("flux", "sealed-secrets"), ("flux", "sops-age"), ("argocd", "sealed-secrets")];

/// A rendered object and the file it is in.
type Object = (String, Value);
/// A change to one spec document.
type Edit = Box<dyn Fn(&mut Value)>;

/// A fixture copied into a temporary directory, with its cluster spec rewritten as asked.
struct Specs {
    dir: tempfile::TempDir,
    fixture: &'static str,
}

impl Specs {
    fn new(fixture: &'static str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        common::copy_dir(&common::root().join("fixtures").join(fixture), &dir.path().join("fixtures").join(fixture));
        common::copy_dir(&common::root().join("fixtures/demo/keys"), &dir.path().join("fixtures/demo/keys"));
        Specs { dir, fixture }
    }

    fn path(&self) -> PathBuf {
        self.dir.path().join("fixtures").join(self.fixture)
    }

    /// Rewrites every document of `kind` through `edit` (a document that `edit` turns into
    /// null is removed). Other documents keep their text.
    fn edit(&self, kind: &str, mut edit: impl FnMut(&mut Value)) {
        let mut files: Vec<PathBuf> = std::fs::read_dir(self.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
            .collect();
        files.sort();
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap();
            let mut documents: Vec<String> = Vec::new();
            let mut current = String::new();
            for line in text.split_inclusive('\n') {
                if line.trim_end() == "---" {
                    documents.push(std::mem::take(&mut current));
                } else {
                    current.push_str(line);
                }
            }
            documents.push(current);
            let mut changed = false;
            for document in &mut documents {
                let Ok(mut value) = serde_saphyr::from_str::<Value>(document) else { continue };
                if value["kind"] != kind {
                    continue;
                }
                edit(&mut value);
                *document = if value.is_null() { String::new() } else { serde_saphyr::to_string(&value).unwrap() };
                changed = true;
            }
            if changed {
                let documents: Vec<String> = documents.into_iter().filter(|d| !d.trim().is_empty()).collect();
                std::fs::write(&file, documents.join("---\n")).unwrap();
            }
        }
    }

    /// Sets the GitOps engine and the sealing backend (leaving them as they are when equal).
    fn variant(&self, engine: &str, backend: &str) {
        let cert = if self.fixture == "demo" { "keys/sealed-secrets.pem" } else { "../demo/keys/sealed-secrets.pem" };
        self.edit("TFRCluster", |cluster| {
            let spec = &mut cluster["spec"];
            if spec["gitops"]["engine"].as_str().unwrap_or("flux") != engine {
                spec["gitops"]["engine"] = json!(engine);
                if engine == "argocd" && spec["gitops"]["repoURL"].is_null() {
                    spec["gitops"]["repoURL"] = json!("ssh://git@git.example.com/platform/gitops.git");
                }
            }
            if spec["sealing"]["backend"].as_str().unwrap_or("sealed-secrets") != backend {
                spec["sealing"] = match backend {
                    "sops-age" => json!({"backend": "sops-age", "ageRecipients": [AGE_RECIPIENT]}),
                    _ => json!({"backend": "sealed-secrets", "certFile": cert}),
                };
            }
        });
    }

    /// Renders into a new temporary directory; returns it with the cluster's objects.
    fn render(&self) -> (tempfile::TempDir, Vec<(String, Value)>) {
        let out = tempfile::tempdir().unwrap();
        let output =
            common::fixture_command().arg("render").arg(self.path()).arg("--out").arg(out.path()).arg("--no-memo").output().unwrap();
        assert_eq!(output.status.code(), Some(0), "{}: {}", self.fixture, common::report(&output));
        let objects = objects(out.path());
        (out, objects)
    }
}

/// Every object of a rendered tree with the file it is in (kustomization files and `plan.json`
/// are not objects); SOPS files decrypted.
fn objects(out: &Path) -> Vec<(String, Value)> {
    let mut objects = Vec::new();
    let mut stack = vec![out.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let name = path.file_name().unwrap().to_string_lossy();
            if !name.ends_with(".yaml") || name == "kustomization.yaml" {
                continue;
            }
            let relative = path.strip_prefix(out).unwrap().to_string_lossy().into_owned();
            let text = std::fs::read_to_string(&path).unwrap();
            let mut object: Value = serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{relative}: {e}"));
            if object.get("sops").is_some() {
                let output =
                    common::tfrs_command().args(["unseal", "--age-identity", "fixtures/demo/keys/age.txt"]).arg(&path).output().unwrap();
                assert_eq!(output.status.code(), Some(0), "{relative}: {}", common::report(&output));
                object = serde_saphyr::from_str(&String::from_utf8(output.stdout).unwrap()).unwrap();
            }
            objects.push((relative, object));
        }
    }
    objects.sort_by(|a, b| a.0.cmp(&b.0));
    objects
}

/// The namespaces the objects live in that the tree does not create itself.
fn expected_namespaces(objects: &[(String, Value)]) -> BTreeSet<String> {
    let created: BTreeSet<&str> =
        objects.iter().filter(|(_, o)| o["kind"] == "Namespace").filter_map(|(_, o)| o["metadata"]["name"].as_str()).collect();
    objects.iter().filter_map(|(_, o)| o["metadata"]["namespace"].as_str()).filter(|n| !created.contains(n)).map(str::to_owned).collect()
}

/// Applies `objects` strictly, dry run first, then for real; returns every problem, each naming
/// the file and the object.
async fn apply_all(client: &kube::Client, objects: &[(String, Value)], label: &str) -> Vec<String> {
    apiserver::create_namespaces(client, expected_namespaces(objects)).await;
    let resources = apiserver::resources(client).await;
    let mut problems = Vec::new();
    // Namespaces first, so that the dry run of what lives in them can be checked.
    let (namespaces, rest): (Vec<&Object>, Vec<&Object>) = objects.iter().partition(|(_, o)| o["kind"] == "Namespace");
    for batch in [namespaces, rest] {
        for dry_run in [true, false] {
            let results = futures::future::join_all(batch.iter().map(|(file, object)| {
                let resources = &resources;
                async move { (file, object, apiserver::apply_strict(client, resources, object, dry_run).await) }
            }))
            .await;
            let mode = if dry_run { "dry run" } else { "apply" };
            for (file, object, result) in results {
                let id = format!(
                    "{label}: {file} ({} {})",
                    object["kind"].as_str().unwrap_or("?"),
                    object["metadata"]["name"].as_str().unwrap_or("?")
                );
                match result {
                    Err(error) => problems.push(format!("{id}: {mode}: {error}")),
                    Ok(applied) => {
                        problems.extend(applied.warnings.iter().map(|w| format!("{id}: {mode}: warning: {w}")));
                        problems.extend(
                            apiserver::dropped_fields(object, &applied.object).iter().map(|f| format!("{id}: {mode}: dropped `{f}`")),
                        );
                    }
                }
            }
        }
    }
    problems
}

/// Runs `body` against a fresh apiserver with the pinned CRDs registered; skips (one line) or,
/// under `CI=true`, fails when the apiserver or the CRDs are missing.
fn with_server<F, Fut>(body: F)
where
    F: FnOnce(kube::Client) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let Some((apiserver_binary, etcd)) = apiserver::binaries() else { return };
    let Some(upstream) = apiserver::upstream() else { return };
    let crds = apiserver::pinned_crds(&upstream);
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    runtime.block_on(async {
        let server = apiserver::Server::start(&apiserver_binary, &etcd).await;
        let client = server.client().await;
        apiserver::register_crds(&client, &crds).await;
        body(client).await;
    });
}

/// The changes users make between two renders, one spec edit each, applied in turn.
fn upgrades() -> Vec<(&'static str, &'static str, Edit)> {
    fn first_server(edit: impl Fn(&mut Value) + 'static) -> Edit {
        let done = std::cell::Cell::new(false);
        Box::new(move |server| {
            if !done.replace(true) {
                edit(server);
            }
        })
    }
    vec![
        (
            "TFRServer",
            "an image tag",
            first_server(|server| {
                server["spec"]["image"]["tag"] = json!("v9.9.9");
            }),
        ),
        (
            "TFRServer",
            "a configData value",
            first_server(|server| {
                server["spec"]["configData"]["TFS_UPGRADE_MARK"] = json!("two");
            }),
        ),
        (
            "TFRServer",
            "a confzData table",
            first_server(|server| {
                let before = server["spec"]["confzData"].as_str().unwrap_or_default().to_owned();
                server["spec"]["confzData"] = json!(format!("{before}\n[upgrade]\nlevel = 2\n"));
            }),
        ),
        (
            "TFRServer",
            "replicas",
            first_server(|server| {
                let replicas = server["spec"]["apiWorker"]["replicas"].as_u64().unwrap_or(1);
                server["spec"]["apiWorker"]["replicas"] = json!(replicas + 1);
                server["spec"]["robotWorker"]["replicas"] = json!(3);
            }),
        ),
        (
            "TFRServer",
            "a secret rotation",
            first_server(|server| {
                server["spec"]["secretData"]["SESSION_SECRET"] = json!({"generate": {"rotation": 1}});
            }),
        ),
        (
            "TFRTenant",
            "a secret rotation",
            Box::new(|tenant| {
                tenant["spec"]["redis"]["password"] = json!({"generate": {"rotation": 2}});
            }),
        ),
        (
            "TFRTenant",
            "an image tag (PostgreSQL, which the database Jobs run)",
            Box::new(|tenant| {
                tenant["spec"]["postgresql"]["image"] = json!("ghcr.io/cloudnative-pg/postgresql:16.10-minimal-bookworm");
            }),
        ),
        (
            "TFRCluster",
            "a chart version",
            Box::new(|cluster| {
                cluster["spec"]["certManager"]["version"] = json!("v1.21.0");
                cluster["spec"]["operators"]["cnpg"]["version"] = json!("0.28.3");
            }),
        ),
        (
            "TFRServer",
            "the removal of a server",
            first_server(|server| {
                *server = Value::Null;
            }),
        ),
    ]
}

/// One fixture: every variant strictly applied, then the upgrades over its own render.
fn check_fixture(fixture: &'static str) {
    with_server(|client| async move {
        let mut problems = Vec::new();
        let mut checked = 0;
        for (engine, backend) in VARIANTS {
            let specs = Specs::new(fixture);
            specs.variant(engine, backend);
            let (_out, objects) = specs.render();
            checked += objects.len();
            problems.extend(apply_all(&client, &objects, &format!("{fixture} ({engine}, {backend})")).await);
        }
        // Upgrades, each over the previous render, from the fixture as written.
        let specs = Specs::new(fixture);
        let (_out, objects) = specs.render();
        problems.extend(apply_all(&client, &objects, &format!("{fixture} render 1")).await);
        let has_servers = objects.iter().any(|(file, _)| file.contains("/servers/"));
        for (step, (kind, what, edit)) in upgrades().into_iter().enumerate() {
            if kind == "TFRServer" && !has_servers {
                continue;
            }
            specs.edit(kind, edit);
            let (_out, objects) = specs.render();
            problems.extend(apply_all(&client, &objects, &format!("{fixture} render {} ({what})", step + 2)).await);
        }
        assert!(checked > 10, "{fixture}: only {checked} objects");
        assert!(problems.is_empty(), "{} problems:\n{}", problems.len(), problems.join("\n"));
    });
}

macro_rules! fixtures {
    ($($test:ident => $fixture:literal),* $(,)?) => {
        $(
            #[test]
            fn $test() {
                check_fixture($fixture);
            }
        )*
        /// The fixtures with a test of their own here.
        const COVERED: &[&str] = &[$($fixture),*];
    };
}

#[test]
fn every_render_fixture_is_applied() {
    assert_eq!(COVERED, common::RENDER_FIXTURES);
}

fixtures! {
    demo_applies_strictly_and_upgrades => "demo",
    argocd_tke_applies_strictly_and_upgrades => "render-argocd-tke",
    sops_docker_desktop_applies_strictly_and_upgrades => "render-sops-docker-desktop",
    minimal_applies_strictly_and_upgrades => "render-minimal",
    hostile_applies_strictly_and_upgrades => "render-hostile",
    enterprise_full_applies_strictly_and_upgrades => "render-enterprise-full",
    enterprise_minimal_applies_strictly_and_upgrades => "render-enterprise-minimal",
    servers_applies_strictly_and_upgrades => "render-servers",
    billing_applies_strictly_and_upgrades => "render-billing",
}

/// The checks can fail: a field no pinned CRD has, a field no built-in kind has, a changed
/// Job template, and a field the server prunes are each reported.
#[test]
fn the_strict_apply_reports_unknown_fields_immutable_changes_and_pruning() {
    with_server(|client| async move {
        let cluster = json!({"apiVersion": "postgresql.cnpg.io/v1", "kind": "Cluster", "metadata": {"name": "ts", "namespace": "t"},
            "spec": {"instances": 1, "storage": {"size": "1Gi"}, "postgresql": {"noSuchField": []}}});
        let problems = apply_all(&client, &[("cluster.yaml".into(), cluster)], "self-test").await;
        assert!(problems.iter().any(|p| p.contains("dry run") && p.contains("noSuchField")), "{problems:?}");
        let config_map =
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "t"}, "data": {"a": "b"}, "spec": {}});
        let problems = apply_all(&client, &[("cm.yaml".into(), config_map)], "self-test").await;
        assert!(problems.iter().any(|p| p.contains(".spec: field not declared in schema")), "{problems:?}");
        let job = |image: &str| {
            json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "namespace": "t"},
                "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": image}]}}}})
        };
        assert_eq!(apply_all(&client, &[("job.yaml".into(), job("busybox:1"))], "self-test").await, Vec::<String>::new());
        let problems = apply_all(&client, &[("job.yaml".into(), job("busybox:2"))], "self-test").await;
        assert!(problems.iter().any(|p| p.contains("field is immutable")), "{problems:?}");
        let sent = json!({"spec": {"a": 1, "b": {"c": [1, {"d": 2}]}}});
        let returned = json!({"spec": {"b": {"c": [1, {}]}}, "status": {}});
        assert_eq!(apiserver::dropped_fields(&sent, &returned), vec![".spec.a".to_owned(), ".spec.b.c[1].d".to_owned()]);
    });
}

/// The pinned CRDs register in the server, all of them structural (the server refuses others).
#[test]
fn the_pinned_crds_register() {
    let Some(upstream) = apiserver::upstream() else { return };
    let crds = apiserver::pinned_crds(&upstream);
    with_server(|client| async move {
        let version = client.apiserver_version().await.unwrap();
        let minor: u32 = version.minor.trim_end_matches('+').parse().unwrap();
        assert!(version.major == "1" && minor >= 34, "the apiserver is {}.{}", version.major, version.minor);
        let resources = apiserver::resources(&client).await;
        for crd in &crds {
            let kind = crd["spec"]["names"]["kind"].as_str().unwrap();
            let group = crd["spec"]["group"].as_str().unwrap();
            for version in crd["spec"]["versions"].as_array().unwrap().iter().filter(|v| v["served"] == true) {
                let api_version = format!("{group}/{}", version["name"].as_str().unwrap());
                assert!(resources.contains_key(&(api_version.clone(), kind.to_owned())), "{api_version} {kind} is not served");
            }
        }
    });
}

/// The releases whose CRDs the tests register are the ones the catalog pins: each catalog row
/// with CRDs (or chart files) upstream has its version's directory there, and it is the only one.
#[test]
fn the_catalog_pins_the_releases_the_tests_register() {
    let Some(upstream) = apiserver::upstream() else { return };
    let output = common::tfrs_command().args(["version", "--components", "--format", "json"]).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", common::report(&output));
    let document: Value = serde_json::from_slice(&output.stdout).unwrap();
    let pins: std::collections::BTreeMap<&str, &Value> =
        document["components"].as_array().unwrap().iter().map(|p| (p["name"].as_str().unwrap(), p)).collect();
    let field = |name: &str, field: &str| pins[name][field].as_str().unwrap().to_owned();
    let with_v = |version: String| if version.starts_with('v') { version } else { format!("v{version}") };
    // (catalog row, the upstream directory, the version directory it must be)
    let expected = [
        ("cert-manager", "cert-manager", field("cert-manager", "version")),
        ("istio", "istio", field("istio", "version")),
        ("cloudnative-pg", "cloudnative-pg-chart", field("cloudnative-pg", "version")),
        ("cloudnative-pg", "cloudnative-pg", field("cloudnative-pg", "app_version")),
        ("minio-operator", "minio-operator", with_v(field("minio-operator", "version"))),
        ("external-secrets", "external-secrets", with_v(field("external-secrets", "version"))),
        ("jaeger", "jaeger-chart", field("jaeger", "version")),
        ("grafana", "grafana-chart", field("grafana", "version")),
        ("flux", "flux2", field("flux", "version")),
        ("argo-cd", "argo-cd", field("argo-cd", "version")),
        ("sealed-secrets", "sealed-secrets", with_v(field("sealed-secrets", "app_version"))),
    ];
    for (name, directory, version) in expected {
        let versions: Vec<String> =
            std::fs::read_dir(upstream.join(directory)).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        assert_eq!(versions, vec![version.clone()], "catalog row `{name}` pins {version}; the registered upstream release is {versions:?}");
    }
}

/// Every duration `pattern` of the pinned Flux HelmRelease and Kustomization CRDs (where a
/// timeout lands) is the spec's: what validates is what Flux accepts.
#[test]
fn flux_crds_accept_exactly_the_spec_grammar() {
    fn patterns<'a>(value: &'a Value, out: &mut Vec<&'a str>) {
        match value {
            Value::Object(map) => {
                if let Some(pattern) = map.get("pattern").and_then(Value::as_str) {
                    out.push(pattern);
                }
                map.values().for_each(|v| patterns(v, out));
            }
            Value::Array(items) => items.iter().for_each(|v| patterns(v, out)),
            _ => {}
        }
    }
    let Some(upstream) = apiserver::upstream() else { return };
    let mut checked = 0;
    for crd in apiserver::pinned_crds(&upstream) {
        let group = crd["spec"]["group"].as_str().unwrap();
        if !["helm.toolkit.fluxcd.io", "kustomize.toolkit.fluxcd.io"].contains(&group) {
            continue;
        }
        let mut found = Vec::new();
        patterns(&crd["spec"]["versions"], &mut found);
        for pattern in found.into_iter().filter(|p| p.contains("(ms|s|m|h)")) {
            assert_eq!(pattern, tfrs_gitops::spec::duration::GO_PATTERN, "{}", crd["metadata"]["name"]);
            checked += 1;
        }
    }
    assert!(checked > 3, "only {checked} duration patterns in the pinned Flux CRDs");
}
