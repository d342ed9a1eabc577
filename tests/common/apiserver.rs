//! A real kube-apiserver and etcd (built by `scripts/kube-apiserver.sh`), started on 127.0.0.1
//! for one test, the pinned upstream CRDs registered in it, and strict server-side applies that
//! report the server's warnings and every field it dropped.
//!
//! Included with `#[path = "common/apiserver.rs"] mod apiserver;` by the crates that need it.

#![allow(dead_code)] // each test crate uses a part

use super::common;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, ValidationDirective};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Skips (one line on stderr) or, under `CI=true`, fails.
pub fn skip(what: &str) {
    assert!(!common::ci(), "CI=true but {what}");
    eprintln!("skipping: {what}");
}

/// The built kube-apiserver and etcd, or `None` after printing why (a failure under `CI=true`).
pub fn binaries() -> Option<(PathBuf, PathBuf)> {
    let script = common::root().join("scripts/kube-apiserver.sh");
    let ask = |what: &str| {
        let output = Command::new(&script).arg(what).output().ok()?;
        let path = String::from_utf8(output.stdout).ok()?.trim().to_owned();
        (output.status.success() && !path.is_empty()).then(|| PathBuf::from(path))
    };
    match (ask("path"), ask("etcd")) {
        (Some(apiserver), Some(etcd)) => Some((apiserver, etcd)),
        _ => {
            skip("kube-apiserver and etcd are not built (run `scripts/kube-apiserver.sh build`)");
            None
        }
    }
}

/// The directory of pinned upstream CRDs beside the checkout, or `None` after printing why.
pub fn upstream() -> Option<PathBuf> {
    let dir = common::root().join("../shared/upstream");
    if dir.is_dir() {
        return Some(dir);
    }
    skip("the pinned upstream CRDs (needs ../shared/upstream beside the checkout)");
    None
}

/// Every CustomResourceDefinition of the pinned upstream releases: the `crds/` directory of
/// each `<component>/<version>/`. CNPG's chart carries the same CRDs as its operator, as a Helm
/// template, so only the operator's are read.
pub fn pinned_crds(upstream: &Path) -> Vec<Value> {
    let mut crds: BTreeMap<String, Value> = BTreeMap::new();
    let mut components: Vec<PathBuf> = std::fs::read_dir(upstream).expect("read upstream").map(|e| e.expect("entry").path()).collect();
    components.sort();
    for component in components.iter().filter(|p| p.is_dir() && !p.ends_with("cloudnative-pg-chart")) {
        for version in std::fs::read_dir(component).expect("read a component").map(|e| e.expect("entry").path()) {
            let Ok(files) = std::fs::read_dir(version.join("crds")) else { continue };
            let mut files: Vec<PathBuf> = files.map(|e| e.expect("entry").path()).collect();
            files.sort();
            for file in files.iter().filter(|p| p.extension().is_some_and(|e| e == "yaml")) {
                let text = std::fs::read_to_string(file).expect("read a CRD file");
                for document in serde_saphyr::from_multiple::<Value>(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display())) {
                    if document["kind"] == "CustomResourceDefinition" {
                        let name = document["metadata"]["name"].as_str().expect("a CRD name").to_owned();
                        crds.insert(name, document);
                    }
                }
            }
        }
    }
    assert!(crds.len() > 50, "only {} CRDs under {}", crds.len(), upstream.display());
    crds.into_values().collect()
}

/// Kills the processes it holds when dropped (also when the test panics).
struct Processes(Vec<Child>);

impl Drop for Processes {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A running etcd + kube-apiserver in a temporary directory.
pub struct Server {
    processes: Processes,
    /// A kubeconfig for the server (token auth, `system:masters`).
    pub kubeconfig: PathBuf,
    /// Holds the data, logs and certificates.
    pub dir: tempfile::TempDir,
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("address").port()
}

fn spawn(command: &mut Command, log: &Path) -> Child {
    let file = std::fs::File::create(log).expect("log file");
    command.stdout(Stdio::null()).stderr(file).spawn().unwrap_or_else(|e| panic!("cannot start {command:?}: {e}"))
}

impl Server {
    /// Starts etcd and the apiserver; returns once the apiserver answers.
    pub async fn start(apiserver: &Path, etcd: &Path) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let (client, peer, secure) = (free_port(), free_port(), free_port());
        let etcd = spawn(
            Command::new(etcd)
                .arg(format!("--data-dir={}", dir.path().join("etcd").display()))
                .arg(format!("--listen-client-urls=http://127.0.0.1:{client}"))
                .arg(format!("--advertise-client-urls=http://127.0.0.1:{client}"))
                .arg(format!("--listen-peer-urls=http://127.0.0.1:{peer}"))
                .arg(format!("--initial-advertise-peer-urls=http://127.0.0.1:{peer}"))
                .arg(format!("--initial-cluster=default=http://127.0.0.1:{peer}"))
                .args(["--unsafe-no-fsync", "--log-level=warn"]),
            &dir.path().join("etcd.log"),
        );
        let mut processes = Processes(vec![etcd]);
        let key = dir.path().join("sa.key");
        let status =
            Command::new("openssl").args(["genrsa", "-out"]).arg(&key).arg("2048").stderr(Stdio::null()).status().expect("openssl");
        assert!(status.success(), "openssl genrsa failed");
        std::fs::write(dir.path().join("tokens.csv"), "tfrs-e2e-token,admin,admin,system:masters\n").expect("tokens");
        let server = spawn(
            Command::new(apiserver)
                .arg(format!("--etcd-servers=http://127.0.0.1:{client}"))
                .args(["--bind-address=127.0.0.1", "--advertise-address=127.0.0.1"])
                .arg(format!("--secure-port={secure}"))
                .arg(format!("--cert-dir={}", dir.path().join("certs").display()))
                .arg(format!("--token-auth-file={}", dir.path().join("tokens.csv").display()))
                .args(["--authorization-mode=AlwaysAllow", "--disable-admission-plugins=ServiceAccount"])
                .arg("--service-account-issuer=https://kubernetes.default.svc")
                .arg(format!("--service-account-key-file={}", key.display()))
                .arg(format!("--service-account-signing-key-file={}", key.display()))
                .args(["--service-cluster-ip-range=10.0.0.0/16", "--endpoint-reconciler-type=none"]),
            &dir.path().join("apiserver.log"),
        );
        processes.0.push(server);
        let kubeconfig = dir.path().join("kubeconfig");
        std::fs::write(
            &kubeconfig,
            format!(
                "apiVersion: v1\nkind: Config\nclusters:\n- name: e2e\n  cluster:\n    server: https://127.0.0.1:{secure}\n    insecure-skip-tls-verify: true\nusers:\n- name: e2e\n  user:\n    token: tfrs-e2e-token\ncontexts:\n- name: e2e\n  context:\n    cluster: e2e\n    user: e2e\ncurrent-context: e2e\n"
            ),
        )
        .expect("kubeconfig");
        let server = Server { processes, kubeconfig, dir };
        let client = server.client().await;
        let started = Instant::now();
        // Ready once the namespaces the apiserver itself creates exist (its post-start hooks ran).
        let namespaces: kube::Api<k8s_openapi::api::core::v1::Namespace> = kube::Api::all(client);
        while namespaces.get_opt("default").await.ok().flatten().is_none() {
            assert!(started.elapsed() < Duration::from_secs(300), "the apiserver did not come up: {}", server.log());
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
        server
    }

    /// A client of the server.
    pub async fn client(&self) -> kube::Client {
        let file = kube::config::Kubeconfig::read_from(&self.kubeconfig).expect("kubeconfig");
        let config = kube::Config::from_custom_kubeconfig(file, &kube::config::KubeConfigOptions::default()).await.expect("config");
        kube::Client::try_from(config).expect("client")
    }

    /// The apiserver's log, for failure messages.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("apiserver.log")).unwrap_or_default()
    }
}

/// Registers `crds` (server-side apply) and waits until each is Established.
pub async fn register_crds(client: &kube::Client, crds: &[Value]) {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    let api: kube::Api<CustomResourceDefinition> = kube::Api::all(client.clone());
    for crd in crds {
        let name = crd["metadata"]["name"].as_str().expect("name");
        let params = PatchParams::apply("tfrs-test-setup").validation(ValidationDirective::Strict);
        api.patch(name, &params, &Patch::Apply(crd)).await.unwrap_or_else(|e| panic!("register the CRD `{name}`: {e}"));
    }
    let started = Instant::now();
    for crd in crds {
        let name = crd["metadata"]["name"].as_str().expect("name");
        loop {
            let live = api.get(name).await.expect("get a CRD");
            let established =
                live.status.and_then(|s| s.conditions).unwrap_or_default().iter().any(|c| c.type_ == "Established" && c.status == "True");
            if established {
                break;
            }
            assert!(started.elapsed() < Duration::from_secs(60), "the CRD `{name}` was not established");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// Creates the namespaces `names` (the ones a tree expects to exist already).
pub async fn create_namespaces(client: &kube::Client, names: impl IntoIterator<Item = String>) {
    let api: kube::Api<k8s_openapi::api::core::v1::Namespace> = kube::Api::all(client.clone());
    for name in names {
        let object = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
        api.patch(&name, &PatchParams::apply("tfrs-test-setup"), &Patch::Apply(&object)).await.expect("create a namespace");
    }
}

/// The resources the server serves, by (apiVersion, kind).
pub async fn resources(client: &kube::Client) -> BTreeMap<(String, String), (ApiResource, bool)> {
    let discovery = kube::Discovery::new(client.clone()).run().await.expect("discovery");
    let mut out = BTreeMap::new();
    for group in discovery.groups() {
        for version in group.versions() {
            for (resource, capabilities) in group.versioned_resources(version) {
                if resource.plural.contains('/') {
                    continue;
                }
                let namespaced = capabilities.scope == kube::discovery::Scope::Namespaced;
                out.insert((resource.api_version.clone(), resource.kind.clone()), (resource, namespaced));
            }
        }
    }
    out
}

/// What one strict server-side apply gave back.
pub struct Applied {
    /// The object the server returned.
    pub object: Value,
    /// The server's `Warning` headers.
    pub warnings: Vec<String>,
}

/// Server-side applies `object` (field manager `tfrs`, `fieldValidation=Strict`, optionally
/// `dryRun=All`); an error is the server's message.
pub async fn apply_strict(
    client: &kube::Client,
    resources: &BTreeMap<(String, String), (ApiResource, bool)>,
    object: &Value,
    dry_run: bool,
) -> Result<Applied, String> {
    let api_version = object["apiVersion"].as_str().unwrap_or_default();
    let kind = object["kind"].as_str().unwrap_or_default();
    let name = object["metadata"]["name"].as_str().unwrap_or_default();
    let Some((resource, namespaced)) = resources.get(&(api_version.to_owned(), kind.to_owned())) else {
        return Err(format!("the server does not serve {api_version} {kind}"));
    };
    let namespace = object["metadata"]["namespace"].as_str();
    if *namespaced != namespace.is_some() {
        return Err(format!("{kind} is {}namespaced, the object says namespace {namespace:?}", if *namespaced { "" } else { "not " }));
    }
    let url = <DynamicObject as kube::Resource>::url_path(resource, namespace);
    let mut params = PatchParams::apply("tfrs").validation(ValidationDirective::Strict);
    if dry_run {
        params = params.dry_run();
    }
    let request = kube::core::Request::new(url).patch(name, &params, &Patch::Apply(object)).map_err(|e| e.to_string())?;
    let response = client.send(request.map(kube::client::Body::from)).await.map_err(|e| e.to_string())?;
    let status = response.status();
    let warnings =
        response.headers().get_all("warning").iter().map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned()).collect::<Vec<_>>();
    let body = response.into_body().collect_bytes().await.map_err(|e| e.to_string())?;
    let returned: Value = serde_json::from_slice(&body).map_err(|e| format!("{status}: {e}: {}", String::from_utf8_lossy(&body)))?;
    if !status.is_success() {
        return Err(returned["message"].as_str().map_or_else(|| returned.to_string(), str::to_owned));
    }
    Ok(Applied { object: returned, warnings })
}

/// The field paths of `sent` that `returned` lacks: what the server dropped (pruned). A Secret's
/// `stringData` is write-only: the server merges it into `data`, where it is looked for.
pub fn dropped_fields(sent: &Value, returned: &Value) -> Vec<String> {
    use base64::Engine as _;
    let mut sent = sent.clone();
    let is_secret = sent["kind"] == "Secret" && sent["apiVersion"] == "v1";
    if let Some(Value::Object(string_data)) = sent.as_object_mut().filter(|_| is_secret).and_then(|o| o.remove("stringData")) {
        for (key, value) in string_data {
            let encoded = base64::engine::general_purpose::STANDARD.encode(value.as_str().unwrap_or_default());
            sent["data"][key] = json!(encoded);
        }
    }
    fn walk(path: &str, sent: &Value, returned: Option<&Value>, out: &mut Vec<String>) {
        let Some(returned) = returned else {
            if !sent.is_null() {
                out.push(path.to_owned());
            }
            return;
        };
        match (sent, returned) {
            (Value::Object(sent), Value::Object(returned)) => {
                for (key, value) in sent {
                    walk(&format!("{path}.{key}"), value, returned.get(key), out);
                }
            }
            (Value::Array(sent), Value::Array(returned)) => {
                for (i, value) in sent.iter().enumerate() {
                    walk(&format!("{path}[{i}]"), value, returned.get(i), out);
                }
            }
            // An empty map or list that the server drops is no loss.
            (Value::Object(sent), _) if sent.is_empty() => {}
            (Value::Array(sent), _) if sent.is_empty() => {}
            (Value::Object(_) | Value::Array(_), _) => out.push(format!("{path} (now {returned})")),
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk("", &sent, Some(returned), &mut out);
    out
}

/// The GroupVersionKind of an object.
pub fn gvk(object: &Value) -> GroupVersionKind {
    let api_version = object["apiVersion"].as_str().unwrap_or_default();
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    GroupVersionKind::gvk(group, version, object["kind"].as_str().unwrap_or_default())
}

/// The API server's request counts so far (`apiserver_request_total` of `/metrics`), by verb,
/// resource and code, summed over its other labels; `None` when `/metrics` cannot be read.
#[allow(dead_code)]
pub async fn request_counts(client: &kube::Client) -> Option<BTreeMap<(String, String, String), f64>> {
    let request = http::Request::get("/metrics").body(Vec::new()).ok()?;
    let text = client.request_text(request).await.ok()?;
    let mut counts = BTreeMap::new();
    for line in text.lines().filter(|l| l.starts_with("apiserver_request_total{")) {
        let Some((labels, value)) = line.rsplit_once(' ') else { continue };
        let label =
            |name: &str| labels.split(&format!("{name}=\"")).nth(1).and_then(|r| r.split('"').next()).unwrap_or_default().to_owned();
        *counts.entry((label("verb"), label("resource"), label("code"))).or_insert(0.0) += value.parse::<f64>().unwrap_or(0.0);
    }
    Some(counts)
}
