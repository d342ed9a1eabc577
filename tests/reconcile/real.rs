//! The real kube-apiserver and etcd (`scripts/kube-apiserver.sh`), started on 127.0.0.1 for one
//! test with the pinned upstream CRDs registered, and a small status-writing helper acting as the
//! controllers (nothing else writes status there).

use super::sim::{created_namespace, has_controller, ready_status};
use super::{apiserver, common, demo_rollout};
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use serde_json::json;
use std::collections::HashMap;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tfrs_gitops::object::ObjectId;
use tfrs_gitops::reconcile::wait::readiness;

pub(super) async fn api_for(client: &kube::Client, reference: &ObjectId) -> Option<Api<DynamicObject>> {
    let (group, version) = reference.api_version.rsplit_once('/').unwrap_or(("", &reference.api_version));
    let gvk = kube::core::GroupVersionKind::gvk(group, version, &reference.kind);
    let (resource, _) = kube::discovery::pinned_kind(client, &gvk).await.ok()?;
    Some(match reference.namespace() {
        Some(namespace) => Api::namespaced_with(client.clone(), namespace, &resource),
        None => Api::all_with(client.clone(), &resource),
    })
}

/// The helper acting as every controller: writes a ready status for each object of the plan
/// that has a controller, 300 ms after it first sees it. It lists each kind (never a GET), so the
/// API server's count of GETs is reconcile's alone.
pub(super) async fn controllers(client: kube::Client, references: Vec<ObjectId>, stop: Arc<AtomicBool>) {
    let mut seen: HashMap<String, Instant> = HashMap::new();
    let mut kinds: HashMap<(String, String), Vec<ObjectId>> = HashMap::new();
    for reference in references {
        kinds.entry((reference.api_version.clone(), reference.kind.clone())).or_default().push(reference);
    }
    while !stop.load(Ordering::Relaxed) {
        for wanted in kinds.values() {
            let Some(all) = api_for(&client, &ObjectId { namespace: None, ..wanted[0].clone() }).await else { continue };
            let Ok(list) = all.list(&kube::api::ListParams::default()).await else { continue };
            for item in list.items {
                let mut live = serde_json::to_value(&item).expect("json");
                live["apiVersion"] = json!(wanted[0].api_version);
                live["kind"] = json!(wanted[0].kind);
                let reference = ObjectId::of(&live);
                if !wanted.contains(&reference) {
                    continue;
                }
                let first = *seen.entry(reference.to_string()).or_insert_with(Instant::now);
                if first.elapsed() >= Duration::from_millis(300) {
                    make_ready(&client, &reference, &live).await;
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Writes a ready status for `live` when it has a controller and is not ready yet (and the
/// namespace a HelmRelease would create).
async fn make_ready(client: &kube::Client, reference: &ObjectId, live: &serde_json::Value) {
    let group = reference.api_version.rsplit_once('/').map_or("", |(g, _)| g);
    if !has_controller(live) || group == "apiextensions.k8s.io" || reference.kind == "Namespace" || readiness(live).is_ready() {
        return;
    }
    let Some(api) = api_for(client, reference).await else { return };
    if let Some(namespace) = created_namespace(live) {
        let namespaces: Api<DynamicObject> =
            Api::all_with(client.clone(), &kube::discovery::ApiResource::erase::<k8s_openapi::api::core::v1::Namespace>(&()));
        let object = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}});
        if let Err(error) = namespaces.patch(&namespace, &PatchParams::apply("helm-controller"), &Patch::Apply(&object)).await {
            eprintln!("status helper: namespace `{namespace}`: {error}");
        }
    }
    let patch = json!({"status": ready_status(live)});
    // NB: Argo CD's Application CRD has no status subresource: its controller writes `status`
    // with the object.
    let written = if reference.kind == "Application" {
        api.patch(&reference.name, &PatchParams::default(), &Patch::Merge(&patch)).await
    } else {
        api.patch_status(&reference.name, &PatchParams::default(), &Patch::Merge(&patch)).await
    };
    if let Err(error) = written {
        eprintln!("status helper: `{reference}`: {error}");
    }
}

/// The API server's request counts by verb and resource (any code).
async fn request_counts(client: &kube::Client) -> HashMap<(String, String), f64> {
    let mut counts = HashMap::new();
    for ((verb, resource, _), count) in apiserver::request_counts(client).await.expect("/metrics") {
        *counts.entry((verb, resource)).or_insert(0.0) += count;
    }
    counts
}

/// Rolls the demo out against a fresh apiserver, then verifies it.
pub fn demo(apiserver_binary: &Path, etcd: &Path, upstream: &Path, tfrs: &Path) {
    let crds = apiserver::pinned_crds(upstream);
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("out");
    let rollout = demo_rollout(&out);
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    runtime.block_on(async {
        let server = apiserver::Server::start(apiserver_binary, etcd).await;
        let kubeconfig = server.kubeconfig.clone();
        let client = server.client().await;
        // Cluster prerequisites: the pinned CRDs (what the operators' charts install) and the
        // flux-system namespace.
        apiserver::register_crds(&client, &crds).await;
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

        // The cluster guard: a cluster with no identity is refused before any request writes,
        // and `--adopt` is refused with a dry run (it would write).
        let output = run(&["--dry-run"]).await.expect("join");
        assert_eq!(output.status.code(), Some(2), "{}", common::report(&output));
        assert!(String::from_utf8_lossy(&output.stderr).contains("has no tfrs identity (no ConfigMap `kube-system/tfrs`), so tfrs cannot tell it is `demo`"), "{}", common::report(&output));
        let output = run(&["--dry-run", "--adopt"]).await.expect("join");
        assert_eq!(output.status.code(), Some(2), "{}", common::report(&output));
        let target = tfrs_gitops::reconcile::apply::Target::new(client.clone());
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        let uid = tfrs_gitops::live::guard::live_uid(&target, deadline).await.expect("kube-system");
        let identity = tfrs_gitops::live::guard::Identity { cluster: "demo".into(), uid };
        tfrs_gitops::live::guard::record(&target, &identity, deadline).await.expect("record the identity");

        // A server-side dry run of the whole plan persists nothing: objects whose Namespace the
        // plan creates count as "would be created".
        let output = run(&["--dry-run"]).await.expect("join");
        assert_eq!(output.status.code(), Some(0), "{}", common::report(&output));
        assert!(String::from_utf8_lossy(&output.stdout).starts_with("dry-ran cluster `demo`"), "{}", common::report(&output));
        assert!(namespaces.get_opt("acme-corp").await.expect("get").is_none(), "the dry run created a namespace");

        let references: Vec<ObjectId> = rollout.objects.iter().flatten().map(ObjectId::of).collect();
        let stop = Arc::new(AtomicBool::new(false));
        let helper = tokio::spawn(controllers(client.clone(), references.clone(), stop.clone()));

        let before = request_counts(&client).await;
        let output = run(&["--progress", "json"]).await.expect("join");
        assert_eq!(output.status.code(), Some(0), "{}", common::report(&output));
        let events = String::from_utf8_lossy(&output.stdout).lines().filter(|l| l.contains("\"ready\"")).count();
        assert_eq!(events, rollout.plan.components.len(), "every component reported ready");
        readiness_was_watched(&client, &before, &rollout).await;
        stop.store(true, Ordering::Relaxed);
        helper.await.expect("helper");

        let output = run(&["--verify-only"]).await.expect("join");
        assert_eq!(output.status.code(), Some(0), "{}", common::report(&output));
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(stdout.starts_with(&format!("verified cluster `demo`: {} components ready", rollout.plan.components.len())), "{stdout}");

        // A Deployment that loses its replicas (the helper is stopped): verify-only names it.
        let redis = ObjectId::new("apps/v1", "Deployment", Some("acme-corp"), "redis");
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

        live_drift(tfrs, &kubeconfig, &client, &rollout).await;

        // A server removed from the specs: `--prune` deletes exactly its objects.
        let specs = dir.path().join("specs");
        common::copy_dir(&common::root().join("fixtures/demo"), &specs);
        let servers = std::fs::read_to_string(specs.join("servers.yaml")).expect("servers.yaml");
        let kept: Vec<&str> = servers.split("\n---\n").filter(|d| !d.contains("\n  name: robot2\n")).collect();
        assert_eq!(kept.len() + 1, servers.split("\n---\n").count(), "robot2 is one document of servers.yaml");
        std::fs::write(specs.join("servers.yaml"), kept.join("\n---\n")).expect("write servers.yaml");
        let pruned_out = dir.path().join("pruned");
        let output = common::tfrs_command()
            .arg("render")
            .arg(&specs)
            .args(["--master-key-file", "fixtures/demo/keys/master.key", "--out"])
            .arg(&pruned_out)
            .output()
            .expect("render");
        assert_eq!(output.status.code(), Some(0), "{}", common::report(&output));
        let removed: Vec<ObjectId> = rollout
            .plan
            .components
            .iter()
            .zip(&rollout.objects)
            .filter(|(component, _)| component.id.contains("/servers/robot2/"))
            .flat_map(|(_, objects)| objects.iter().map(ObjectId::of))
            .collect();
        assert!(removed.len() >= 5, "robot2 has objects: {removed:?}");
        // A GitOps entry point the engine applied from `clusters/demo/gitops/`: labelled as ours,
        // not in the plan, and never pruned.
        let entry = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "argocd-cm", "namespace": "flux-system", "labels": {
            "app.kubernetes.io/managed-by": "tfrs", "tfrs.turingfocus.cn/cluster": "demo", "app.kubernetes.io/component": "gitops"}}});
        let configmaps = api_for(&client, &ObjectId::of(&entry)).await.expect("configmaps");
        configmaps.patch("argocd-cm", &PatchParams::apply("argocd"), &Patch::Apply(&entry)).await.expect("entry point");
        // What a controller made for an owner, with the owner's labels (the Secret a
        // SealedSecret unseals): not ours, never pruned.
        let owner = configmaps.get("argocd-cm").await.expect("argocd-cm");
        let unsealed = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "unsealed", "namespace": "flux-system",
            "labels": {"app.kubernetes.io/managed-by": "tfrs", "tfrs.turingfocus.cn/cluster": "demo"},
            "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "argocd-cm", "uid": owner.metadata.uid.clone().expect("uid")}]}});
        configmaps.patch("unsealed", &PatchParams::apply("sealed-secrets-controller"), &Patch::Apply(&unsealed)).await.expect("owned object");
        let stop = Arc::new(AtomicBool::new(false));
        let helper = tokio::spawn(controllers(client.clone(), references.clone(), stop.clone()));
        let (tfrs, cluster, kubeconfig) = (tfrs.to_path_buf(), pruned_out.join("clusters/demo"), kubeconfig.clone());
        let output = tokio::task::spawn_blocking(move || {
            Command::new(tfrs)
                .arg("reconcile")
                .arg(&cluster)
                .arg("--kubeconfig")
                .arg(&kubeconfig)
                .args(["--poll-interval", "300ms", "--timeout", "2m", "--prune"])
                .output()
                .expect("run tfrs")
        })
        .await
        .expect("join");
        stop.store(true, Ordering::Relaxed);
        helper.await.expect("helper");
        assert_eq!(output.status.code(), Some(0), "{}", common::report(&output));
        for reference in &references {
            let api = api_for(&client, reference).await.expect("an API for every object");
            let exists = api.get_opt(&reference.name).await.expect("get").is_some();
            let was_removed = removed.iter().any(|r| r == reference);
            assert_eq!(exists, !was_removed, "`{}` {}", reference, if exists { "survived the prune" } else { "was pruned but is still rendered" });
        }
        assert!(configmaps.get_opt("argocd-cm").await.expect("get").is_some(), "prune deleted a GitOps entry point");
        assert!(configmaps.get_opt("unsealed").await.expect("get").is_some(), "prune deleted an object a controller made for an owner");
    });
}

/// Reconcile learnt readiness from watches: every kind whose objects a controller makes ready was
/// watched and its objects were not polled; and applies after a kind was listed did not read
/// their object first.
async fn readiness_was_watched(
    client: &kube::Client,
    before: &HashMap<(String, String), f64>,
    rollout: &tfrs_gitops::reconcile::rollout::Rollout,
) {
    let after = request_counts(client).await;
    let delta = |verb: &str, resource: &str| {
        let key = (verb.to_owned(), resource.to_owned());
        after.get(&key).copied().unwrap_or(0.0) - before.get(&key).copied().unwrap_or(0.0)
    };
    let mut controlled: HashMap<String, usize> = HashMap::new();
    for object in rollout.objects.iter().flatten().filter(|o| has_controller(o) && o["kind"] != "CustomResourceDefinition") {
        *controlled.entry(format!("{}s", object["kind"].as_str().unwrap_or_default().to_lowercase())).or_default() += 1;
    }
    let (mut all_gets, mut all_applied) = (0.0, 0);
    for resource in ["deployments", "helmreleases", "clusters"] {
        let applied = controlled.get(resource).copied().unwrap_or(0);
        assert!(applied > 0, "the demo has {resource}");
        assert!(delta("WATCH", resource) >= 1.0, "{resource} were not watched");
        let gets = delta("GET", resource);
        assert!(gets < 2.0 * applied as f64, "{gets} GETs of {applied} {resource}: readiness was polled, not watched");
        (all_gets, all_applied) = (all_gets + gets, all_applied + applied);
    }
    // NB: once a kind is listed, an apply learns what was there from the watch, not a read.
    assert!(all_gets < all_applied as f64, "{all_gets} GETs for {all_applied} applies: every apply read its object first");
}

/// `tfrs diff --live` of the demo, rolled out and ready.
async fn diff_live(tfrs: &Path, kubeconfig: &Path, extra: &[&str]) -> std::process::Output {
    let mut command = Command::new(tfrs);
    command.current_dir(common::root()).args(["diff", "fixtures/demo", "--live", "--master-key-file", "fixtures/demo/keys/master.key"]);
    command.arg("--kubeconfig").arg(kubeconfig).args(extra);
    tokio::task::spawn_blocking(move || command.output().expect("run tfrs")).await.expect("join")
}

/// No drift on a fresh rollout; a field changed by hand is named; a deleted object shows as
/// missing.
async fn live_drift(tfrs: &Path, kubeconfig: &Path, client: &kube::Client, rollout: &tfrs_gitops::reconcile::rollout::Rollout) {
    let output = diff_live(tfrs, kubeconfig, &[]).await;
    assert_eq!(output.status.code(), Some(0), "drift on a fresh rollout: {}", common::report(&output));
    assert!(String::from_utf8_lossy(&output.stdout).contains("no changes against `live cluster `demo``"), "{}", common::report(&output));

    let objects: Vec<&serde_json::Value> = rollout.objects.iter().flatten().collect();
    let config =
        objects.iter().find(|o| o["kind"] == "ConfigMap" && o["data"].as_object().is_some_and(|d| !d.is_empty())).expect("a ConfigMap");
    let reference = ObjectId::of(config);
    let key = config["data"].as_object().and_then(|d| d.keys().next()).expect("a key").clone();
    let api = api_for(client, &reference).await.expect("configmaps");
    let patch = json!({"data": {key.clone(): "edited by hand"}});
    api.patch(
        &reference.name,
        &PatchParams::apply("kubectl-edit").force(),
        &Patch::Apply(&json!({"apiVersion": "v1", "kind": "ConfigMap", "data": patch["data"]})),
    )
    .await
    .expect("edit");
    let service = objects.iter().find(|o| o["kind"] == "Service").map(|o| ObjectId::of(o)).expect("a Service");
    let services = api_for(client, &service).await.expect("services");
    services.delete(&service.name, &Default::default()).await.expect("delete");

    let output = diff_live(tfrs, kubeconfig, &["--format", "json"]).await;
    assert_eq!(output.status.code(), Some(1), "{}", common::report(&output));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).expect("a JSON report");
    let text = report.to_string();
    let objects = report["objects"].as_array().expect("objects");
    let changed = objects
        .iter()
        .find(|o| o["name"] == reference.name.as_str() && o["kind"] == "ConfigMap")
        .unwrap_or_else(|| panic!("the edited ConfigMap: {text}"));
    assert_eq!(changed["change"], "changed", "{changed}");
    let fields: Vec<&str> = changed["fields"].as_array().expect("fields").iter().filter_map(|f| f["path"].as_str()).collect();
    assert!(fields.iter().any(|f| f.contains(&key)), "the edited field `data.{key}` is named: {fields:?}");
    let missing = objects.iter().find(|o| o["name"] == service.name.as_str() && o["kind"] == "Service").expect("the deleted Service");
    assert_eq!(missing["change"], "added", "{missing}");
    assert_eq!(objects.len(), 2, "only the two changes: {text}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains(&format!("owned by another manager: `{reference}`: 409")), "{stderr}");
    // NB: the next rollout recreates both, as rendered.
    api.delete(&reference.name, &Default::default()).await.expect("delete the edited ConfigMap");
}
