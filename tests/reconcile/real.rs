//! The real kube-apiserver v1.20.2 + Debian's etcd, started on 127.0.0.1 for one test, with a
//! small status-writing helper acting as the controllers (nothing else writes status there).

use super::sim::{created_namespace, has_controller, ready_status};
use super::{common, custom_kinds, demo_rollout, plural};
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tfrs_gitops::reconcile::plan::ObjectRef;
use tfrs_gitops::reconcile::wait::readiness;

/// The built apiserver (`scripts/kube-apiserver.sh path`), if any, with etcd installed.
pub fn apiserver_binary() -> Option<PathBuf> {
    let output = Command::new(common::root().join("scripts/kube-apiserver.sh")).arg("path").output().ok()?;
    let path = String::from_utf8(output.stdout).ok()?.trim().to_owned();
    (output.status.success() && !path.is_empty()).then(|| PathBuf::from(path))
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

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("address").port()
}

fn spawn(command: &mut Command, log: &Path) -> Child {
    let file = std::fs::File::create(log).expect("log file");
    command.stdout(Stdio::null()).stderr(file).spawn().unwrap_or_else(|e| panic!("cannot start {command:?}: {e}"))
}

/// Starts etcd and the apiserver in `dir`; returns them and a kubeconfig path.
fn start(apiserver: &Path, dir: &Path) -> (Processes, PathBuf) {
    let (client, peer, secure) = (free_port(), free_port(), free_port());
    let etcd = spawn(
        Command::new("etcd")
            .arg(format!("--data-dir={}", dir.join("etcd").display()))
            .arg(format!("--listen-client-urls=http://127.0.0.1:{client}"))
            .arg(format!("--advertise-client-urls=http://127.0.0.1:{client}"))
            .arg(format!("--listen-peer-urls=http://127.0.0.1:{peer}"))
            .arg(format!("--initial-advertise-peer-urls=http://127.0.0.1:{peer}"))
            .arg(format!("--initial-cluster=default=http://127.0.0.1:{peer}")),
        &dir.join("etcd.log"),
    );
    let mut processes = Processes(vec![etcd]);
    let key = dir.join("sa.key");
    let status = Command::new("openssl").args(["genrsa", "-out"]).arg(&key).arg("2048").stderr(Stdio::null()).status().expect("openssl");
    assert!(status.success(), "openssl genrsa failed");
    std::fs::write(dir.join("tokens.csv"), "tfrs-e2e-token,admin,admin,system:masters\n").expect("tokens");
    let server = spawn(
        Command::new(apiserver)
            .arg(format!("--etcd-servers=http://127.0.0.1:{client}"))
            .args(["--bind-address=127.0.0.1", "--advertise-address=127.0.0.1"])
            .arg(format!("--secure-port={secure}"))
            .arg(format!("--cert-dir={}", dir.join("certs").display()))
            .arg(format!("--token-auth-file={}", dir.join("tokens.csv").display()))
            .args(["--authorization-mode=AlwaysAllow", "--disable-admission-plugins=ServiceAccount"])
            .arg("--service-account-issuer=https://kubernetes.default.svc")
            .arg(format!("--service-account-key-file={}", key.display()))
            .arg(format!("--service-account-signing-key-file={}", key.display()))
            .args(["--service-cluster-ip-range=10.0.0.0/24", "--endpoint-reconciler-type=none"]),
        &dir.join("apiserver.log"),
    );
    processes.0.push(server);
    let kubeconfig = dir.join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: e2e\n  cluster:\n    server: https://127.0.0.1:{secure}\n    insecure-skip-tls-verify: true\nusers:\n- name: e2e\n  user:\n    token: tfrs-e2e-token\ncontexts:\n- name: e2e\n  context:\n    cluster: e2e\n    user: e2e\ncurrent-context: e2e\n"
        ),
    )
    .expect("kubeconfig");
    (processes, kubeconfig)
}

async fn client(kubeconfig: &Path) -> kube::Client {
    let file = kube::config::Kubeconfig::read_from(kubeconfig).expect("kubeconfig");
    let config = kube::Config::from_custom_kubeconfig(file, &kube::config::KubeConfigOptions::default()).await.expect("config");
    kube::Client::try_from(config).expect("client")
}

/// A minimal CRD for a custom kind: any fields, a status subresource.
fn crd(group: &str, versions: &[String], kind: &str, namespaced: bool) -> Value {
    let plural = plural(kind);
    let versions: Vec<Value> = versions
        .iter()
        .enumerate()
        .map(|(i, v)| {
            json!({"name": v, "served": true, "storage": i == 0, "subresources": {"status": {}},
            "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}})
        })
        .collect();
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": format!("{plural}.{group}")},
        "spec": {"group": group, "scope": if namespaced { "Namespaced" } else { "Cluster" },
            "names": {"kind": kind, "plural": plural, "singular": kind.to_lowercase(), "listKind": format!("{kind}List")}, "versions": versions}})
}

async fn api_for(client: &kube::Client, reference: &ObjectRef) -> Option<Api<DynamicObject>> {
    let (group, version) = reference.api_version.rsplit_once('/').unwrap_or(("", &reference.api_version));
    let gvk = kube::core::GroupVersionKind::gvk(group, version, &reference.kind);
    let (resource, _) = kube::discovery::pinned_kind(client, &gvk).await.ok()?;
    Some(match reference.namespace() {
        Some(namespace) => Api::namespaced_with(client.clone(), namespace, &resource),
        None => Api::all_with(client.clone(), &resource),
    })
}

/// The helper acting as every controller: writes a ready status for each object of the plan
/// that has a controller, 300 ms after it first sees it.
async fn controllers(client: kube::Client, references: Vec<ObjectRef>, stop: Arc<AtomicBool>) {
    let mut seen: std::collections::HashMap<String, Instant> = std::collections::HashMap::new();
    while !stop.load(Ordering::Relaxed) {
        for reference in &references {
            let Some(api) = api_for(&client, reference).await else { continue };
            let Ok(Some(live)) = api.get_opt(&reference.name).await else { continue };
            let live = serde_json::to_value(&live).expect("json");
            let group = reference.api_version.rsplit_once('/').map_or("", |(g, _)| g);
            if !has_controller(&live) || group == "apiextensions.k8s.io" || reference.kind == "Namespace" || readiness(&live).is_ready() {
                continue;
            }
            let first = *seen.entry(reference.id()).or_insert_with(Instant::now);
            if first.elapsed() < Duration::from_millis(300) {
                continue;
            }
            if let Some(namespace) = created_namespace(&live) {
                let namespaces: Api<DynamicObject> =
                    Api::all_with(client.clone(), &kube::discovery::ApiResource::erase::<k8s_openapi::api::core::v1::Namespace>(&()));
                let object = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}});
                if let Err(error) = namespaces.patch(&namespace, &PatchParams::apply("helm-controller"), &Patch::Apply(&object)).await {
                    eprintln!("status helper: namespace `{namespace}`: {error}");
                }
            }
            let patch = json!({"status": ready_status(&live)});
            if let Err(error) = api.patch_status(&reference.name, &PatchParams::default(), &Patch::Merge(&patch)).await {
                eprintln!("status helper: `{}`: {error}", reference.id());
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Rolls the demo out against a fresh apiserver, then verifies it.
pub fn demo(apiserver: &Path, tfrs: &Path) {
    let dir = tempfile::tempdir().expect("tempdir");
    let (_processes, kubeconfig) = start(apiserver, dir.path());
    let out = dir.path().join("out");
    let rollout = demo_rollout(&out);
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    runtime.block_on(async {
        let client = client(&kubeconfig).await;
        let started = Instant::now();
        while client.apiserver_version().await.is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(90),
                "the apiserver did not come up: {}",
                std::fs::read_to_string(dir.path().join("apiserver.log")).unwrap_or_default()
            );
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        // Cluster prerequisites: the custom kinds' CRDs (what the operators' charts install)
        // and the flux-system namespace.
        let mut groups: std::collections::BTreeMap<(String, String, bool), Vec<String>> = std::collections::BTreeMap::new();
        for (api_version, kind, namespaced) in custom_kinds(&rollout) {
            let (group, version) = api_version.split_once('/').expect("a group");
            groups.entry((group.to_owned(), kind, namespaced)).or_default().push(version.to_owned());
        }
        let crds: Api<DynamicObject> = Api::all_with(
            client.clone(),
            &kube::discovery::ApiResource::erase::<
                k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
            >(&()),
        );
        for ((group, kind, namespaced), versions) in &groups {
            let object = crd(group, versions, kind, *namespaced);
            let name = object["metadata"]["name"].as_str().expect("name").to_owned();
            crds.patch(&name, &PatchParams::apply("e2e-setup"), &Patch::Apply(&object)).await.expect("apply a CRD");
        }
        let namespaces: Api<DynamicObject> =
            Api::all_with(client.clone(), &kube::discovery::ApiResource::erase::<k8s_openapi::api::core::v1::Namespace>(&()));
        let flux = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "flux-system"}});
        namespaces.patch("flux-system", &PatchParams::apply("e2e-setup"), &Patch::Apply(&flux)).await.expect("flux-system");

        let cluster = out.join("clusters/demo");
        let run = |extra: &'static [&'static str]| {
            let (tfrs, cluster, kubeconfig) = (tfrs.to_path_buf(), cluster.clone(), kubeconfig.clone());
            tokio::task::spawn_blocking(move || {
                let mut command = Command::new(tfrs);
                command.arg("reconcile").arg(&cluster).arg("--kubeconfig").arg(&kubeconfig).args(["--poll-interval", "300ms"]);
                if !extra.contains(&"--timeout") {
                    command.args(["--timeout", "2m"]);
                }
                command.args(extra).output().expect("run tfrs")
            })
        };

        // A server-side dry run of the whole plan persists nothing: objects whose Namespace the
        // plan creates count as "would be created".
        let output = run(&["--dry-run"]).await.expect("join");
        assert_eq!(output.status.code(), Some(0), "{}", common::report(&output));
        assert!(String::from_utf8_lossy(&output.stdout).starts_with("dry-ran cluster `demo`"), "{}", common::report(&output));
        assert!(namespaces.get_opt("acme-corp").await.expect("get").is_none(), "the dry run created a namespace");

        let references: Vec<ObjectRef> = rollout.objects.iter().flatten().map(ObjectRef::of).collect();
        let stop = Arc::new(AtomicBool::new(false));
        let helper = tokio::spawn(controllers(client.clone(), references, stop.clone()));

        let output = run(&["--progress", "json"]).await.expect("join");
        assert_eq!(output.status.code(), Some(0), "{}", common::report(&output));
        let events = String::from_utf8_lossy(&output.stdout).lines().filter(|l| l.contains("\"ready\"")).count();
        assert_eq!(events, rollout.plan.components.len(), "every component reported ready");
        stop.store(true, Ordering::Relaxed);
        helper.await.expect("helper");

        let output = run(&["--verify-only"]).await.expect("join");
        assert_eq!(output.status.code(), Some(0), "{}", common::report(&output));
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(stdout.starts_with(&format!("verified cluster `demo`: {} components ready", rollout.plan.components.len())), "{stdout}");

        // A Deployment that loses its replicas (the helper is stopped): verify-only names it.
        let redis = ObjectRef {
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            namespace: Some("acme-corp".into()),
            name: "redis".into(),
            file: String::new(),
        };
        let deployments = api_for(&client, &redis).await.expect("deployments");
        let patch = json!({"status": {"readyReplicas": 0, "availableReplicas": 0, "conditions": [{"type": "Available", "status": "False", "reason": "MinimumReplicasUnavailable", "message": "Deployment does not have minimum availability."}]}});
        deployments.patch_status("redis", &PatchParams::default(), &Patch::Merge(&patch)).await.expect("status");
        let output = run(&["--verify-only", "--timeout", "2s"]).await.expect("join");
        assert_eq!(output.status.code(), Some(1), "{}", common::report(&output));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains("error: component `namespaces/acme-corp/redis` timed out after 2s: 1 object not ready\n  `Deployment/acme-corp/redis`: 0 of 1 replicas available, 0 ready\n    Available=False (MinimumReplicasUnavailable): Deployment does not have minimum availability."),
            "{stderr}"
        );
        assert!(stderr.contains("skipped because `namespaces/acme-corp/redis` failed: "), "{stderr}");
        let patch = json!({"status": ready_status(&serde_json::to_value(deployments.get("redis").await.expect("redis")).expect("json"))});
        deployments.patch_status("redis", &PatchParams::default(), &Patch::Merge(&patch)).await.expect("status");

        // A second apply changes nothing.
        let output = run(&[]).await.expect("join");
        assert_eq!(output.status.code(), Some(0), "{}", common::report(&output));
        let stderr = String::from_utf8_lossy(&output.stderr);
        let ready: Vec<&str> = stderr.lines().filter(|l| l.contains(" ... ready (")).collect();
        assert_eq!(ready.len(), rollout.plan.components.len(), "{stderr}");
        assert!(ready.iter().all(|l| l.contains("; 0 created, 0 configured, ")), "a re-apply changed something: {stderr}");
    });
}
