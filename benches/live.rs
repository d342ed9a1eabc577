//! `tfrs reconcile` and `tfrs diff --live` of the scale platform (20 tenants, 200 servers by
//! default) against a real kube-apiserver (`scripts/kube-apiserver.sh`) with the pinned CRDs,
//! and a stand-in controller that marks each object ready a fixed delay after it first sees it
//! (per kind, below). Printed side by side, from one run:
//!
//! - **critical path**: the longest chain of the stand-in's delays through the component graph
//!   (what a perfect scheduler with free requests would take);
//! - **bulk apply**: server-side apply of every object, 16 at a time, nothing awaited, on a
//!   fresh API server;
//! - **reconcile**: the library's `reconcile` (16 at a time, default polling), on a fresh API
//!   server, until every component is ready;
//! - **diff --live**: the command, spec inputs rendered in memory, on the reconciled cluster
//!   with no drift (exit 0 expected).
//!
//! Goals (docs/performance.md): reconcile at most 1.25x the larger of the first two; diff
//! --live at most 2x the bulk apply. Nothing is asserted: the figures are printed.
//!
//! ```console
//! $ cargo bench --bench live
//! $ TFRS_BENCH_TENANTS=20 TFRS_BENCH_SERVERS=200 cargo bench --bench live
//! ```
//!
//! Needs the built API server and etcd, and the pinned CRDs in `../shared/upstream` beside the
//! checkout; without them it says so and exits 0.

#[path = "../tests/common/apiserver.rs"]
mod apiserver;
#[path = "../tests/common/mod.rs"]
#[allow(dead_code)]
mod common;
#[path = "scale/platform.rs"]
#[allow(dead_code)]
mod platform;
#[path = "../tests/reconcile/sim/status.rs"]
#[allow(dead_code)]
mod status;

use futures::StreamExt as _;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams};
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tfrs_gitops::object::ObjectId;
use tfrs_gitops::reconcile::apply::Target;
use tfrs_gitops::reconcile::rollout::{Plan, Rollout};
use tfrs_gitops::reconcile::{Options, reconcile};

/// The group of an `apiVersion` (empty for the core group); `status.rs` needs it.
fn group_of(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or("", |(group, _)| group)
}

/// The string at `pointer`, or empty; `status.rs` needs it.
fn text<'a>(object: &'a Value, pointer: &str) -> &'a str {
    object.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

/// How long the stand-in controller takes to make an object ready.
fn delay(object: &Value) -> Duration {
    let millis = match (group_of(text(object, "/apiVersion")), text(object, "/kind")) {
        ("helm.toolkit.fluxcd.io", _) | ("argoproj.io", _) => 1_000,
        ("postgresql.cnpg.io", "Cluster") | ("rabbitmq.com", "RabbitmqCluster") | ("minio.min.io", "Tenant") => 2_000,
        ("batch", "Job") => 500,
        _ => 200,
    };
    Duration::from_millis(millis)
}

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn main() {
    // NB: `cargo bench` passes `--bench`; this harness takes no arguments.
    let Some((binary, etcd)) = apiserver::binaries() else { return };
    let Some(upstream) = apiserver::upstream() else { return };
    let (tenants, servers) = (env_number("TFRS_BENCH_TENANTS", 20), env_number("TFRS_BENCH_SERVERS", 200));
    let dir = tempfile::tempdir().expect("tempdir");
    let specs = dir.path().join("specs");
    platform::write(&specs, tenants, servers, None, None).expect("write the scale platform");
    let (rollout, cluster) = render(&specs, &dir.path().join("out"));
    let objects = rollout.objects.iter().map(Vec::len).sum::<usize>();
    let crds = apiserver::pinned_crds(&upstream);
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    println!(
        "# machine: {} cores; platform: {tenants} tenants, {servers} servers",
        std::thread::available_parallelism().map_or(1, usize::from)
    );
    println!("objects: {objects}, components: {}", rollout.plan.components.len());
    let critical = critical_path(&rollout);
    println!("critical path of the stand-in's delays: {:.2} s", critical.as_secs_f64());
    let bulk = runtime.block_on(bulk_apply(&binary, &etcd, &crds, &rollout));
    println!("bulk server-side apply, 16 at a time: {:.2} s", bulk.as_secs_f64());
    let (reconciled, live) = runtime.block_on(reconcile_and_diff(&binary, &etcd, &crds, &rollout, &specs, &cluster));
    let floor = critical.max(bulk);
    println!(
        "reconcile: {:.2} s = {:.2}x the larger of the two (goal: at most 1.25x)",
        reconciled.as_secs_f64(),
        reconciled.as_secs_f64() / floor.as_secs_f64()
    );
    println!(
        "diff --live, no drift: {:.2} s = {:.2}x the bulk apply (goal: at most 2x)",
        live.as_secs_f64(),
        live.as_secs_f64() / bulk.as_secs_f64()
    );
}

/// Renders the specs with the binary and loads the one cluster's rollout.
fn render(specs: &Path, out: &Path) -> (Rollout, PathBuf) {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_tfrs"))
        .arg("render")
        .arg(specs)
        .arg("--master-key-file")
        .arg(specs.join("keys/master.key"))
        .arg("--out")
        .arg(out)
        .output()
        .expect("run tfrs render");
    assert!(output.status.success(), "{}", common::report(&output));
    let clusters: Vec<PathBuf> = std::fs::read_dir(out.join("clusters")).expect("clusters").map(|e| e.expect("entry").path()).collect();
    let cluster = clusters.first().expect("a cluster").clone();
    let plan = Plan::parse(&std::fs::read(cluster.join("plan.json")).expect("plan.json")).expect("plan");
    (Rollout::load(plan, &|f| std::fs::read(cluster.join(f)).ok(), None).expect("rollout"), cluster)
}

/// The longest chain of delays: a component costs the longest delay among its objects that
/// have a controller.
fn critical_path(rollout: &Rollout) -> Duration {
    let mut finish: HashMap<&str, Duration> = HashMap::new();
    // NB: the plan lists components in dependency order.
    for (component, objects) in rollout.plan.components.iter().zip(&rollout.objects) {
        let own = objects.iter().filter(|o| status::has_controller(o)).map(delay).max().unwrap_or_default();
        let start = component.depends_on.iter().filter_map(|d| finish.get(d.as_str())).max().copied().unwrap_or_default();
        finish.insert(&component.id, start + own);
    }
    finish.values().max().copied().unwrap_or_default()
}

async fn prepared(binary: &Path, etcd: &Path, crds: &[Value]) -> apiserver::Server {
    let server = apiserver::Server::start(binary, etcd).await;
    let client = server.client().await;
    apiserver::register_crds(&client, crds).await;
    apiserver::create_namespaces(&client, ["flux-system".to_owned()]).await;
    server
}

/// Applies every object, CRDs and Namespaces first, 16 at a time; returns the time taken.
async fn bulk_apply(binary: &Path, etcd: &Path, crds: &[Value], rollout: &Rollout) -> Duration {
    let server = prepared(binary, etcd, crds).await;
    let target = Target::new(server.client().await);
    let mut objects: Vec<&Value> = rollout.objects.iter().flatten().collect();
    objects.sort_by_key(|o| match text(o, "/kind") {
        "CustomResourceDefinition" => 0,
        "Namespace" => 1,
        _ => 2,
    });
    // NB: what helm-controller would create for a HelmRelease with `install.createNamespace`.
    let created: Vec<String> = objects.iter().filter_map(|o| status::created_namespace(o)).collect();
    apiserver::create_namespaces(&server.client().await, created).await;
    let split = objects.iter().position(|o| !matches!(text(o, "/kind"), "CustomResourceDefinition" | "Namespace")).unwrap_or(objects.len());
    let started = Instant::now();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(600);
    for part in [&objects[..split], &objects[split..]] {
        let results: Vec<_> =
            futures::stream::iter(part.iter()).map(|o| target.apply(o, false, false, deadline)).buffer_unordered(16).collect().await;
        for result in results {
            result.expect("a bulk apply");
        }
    }
    started.elapsed()
}

/// Rolls the platform out with the stand-in controller, then runs `tfrs diff --live` on it.
async fn reconcile_and_diff(
    binary: &Path,
    etcd: &Path,
    crds: &[Value],
    rollout: &Rollout,
    specs: &Path,
    cluster: &Path,
) -> (Duration, Duration) {
    let server = prepared(binary, etcd, crds).await;
    let client = server.client().await;
    let target = Target::new(client.clone());
    let stop = Arc::new(AtomicBool::new(false));
    let helper = tokio::spawn(stand_in(client, rollout.objects.iter().flatten().cloned().collect(), stop.clone()));
    let started = Instant::now();
    let options = Options { concurrency: env_number("TFRS_BENCH_CONCURRENCY", Options::default().concurrency), ..Options::default() };
    let outcome = reconcile(&target, rollout, &options, &|_| {}).await.expect("reconcile");
    let reconciled = started.elapsed();
    assert!(outcome.is_ready(), "the rollout failed: {:?}", outcome.failures());
    stop.store(true, Ordering::Relaxed);
    helper.await.expect("stand-in");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let uid = tfrs_gitops::live::guard::live_uid(&target, deadline).await.expect("kube-system");
    let name = cluster.file_name().and_then(|n| n.to_str()).expect("cluster name").to_owned();
    let identity = tfrs_gitops::live::guard::Identity { cluster: name, uid };
    tfrs_gitops::live::guard::record(&target, &identity, deadline).await.expect("record the identity");
    let (specs, kubeconfig) = (specs.to_path_buf(), server.kubeconfig.clone());
    let started = Instant::now();
    let output = tokio::task::spawn_blocking(move || {
        std::process::Command::new(env!("CARGO_BIN_EXE_tfrs"))
            .arg("diff")
            .arg(&specs)
            .arg("--live")
            .arg("--master-key-file")
            .arg(specs.join("keys/master.key"))
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args(["--quiet"])
            .output()
            .expect("run tfrs diff --live")
    })
    .await
    .expect("join");
    let live = started.elapsed();
    if output.status.code() != Some(0) {
        println!("note: diff --live did not exit 0: {}", common::report(&output).lines().take(20).collect::<Vec<_>>().join("\n"));
    }
    (reconciled, live)
}

/// Marks each object that has a controller ready once `delay` has passed since it first showed
/// up, listing each kind once per tick.
async fn stand_in(client: kube::Client, objects: Vec<Value>, stop: Arc<AtomicBool>) {
    let mut kinds: BTreeMap<(String, String), Vec<Value>> = BTreeMap::new();
    for object in objects.into_iter().filter(status::has_controller) {
        if group_of(text(&object, "/apiVersion")) == "apiextensions.k8s.io" {
            continue;
        }
        kinds.entry((text(&object, "/apiVersion").to_owned(), text(&object, "/kind").to_owned())).or_default().push(object);
    }
    let mut seen: HashMap<String, Instant> = HashMap::new();
    while !stop.load(Ordering::Relaxed) {
        for ((api_version, kind), wanted) in &kinds {
            let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
            let Ok((resource, _)) = kube::discovery::pinned_kind(&client, &GroupVersionKind::gvk(group, version, kind)).await else {
                continue;
            };
            let all: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
            let Ok(list) = all.list(&ListParams::default()).await else { continue };
            let live: HashMap<String, Value> = list
                .items
                .into_iter()
                .filter_map(|item| serde_json::to_value(item).ok())
                .map(|item| (format!("{}/{}", text(&item, "/metadata/namespace"), text(&item, "/metadata/name")), item))
                .collect();
            for object in wanted {
                let key = format!("{}/{}", text(object, "/metadata/namespace"), text(object, "/metadata/name"));
                let Some(found) = live.get(&key) else { continue };
                let mut found = found.clone();
                found["apiVersion"] = json!(api_version);
                found["kind"] = json!(kind);
                if tfrs_gitops::reconcile::wait::readiness(&found).is_ready() {
                    continue;
                }
                let first = *seen.entry(format!("{kind}/{key}")).or_insert_with(Instant::now);
                if first.elapsed() < delay(object) {
                    continue;
                }
                if let Some(namespace) = status::created_namespace(&found) {
                    apiserver::create_namespaces(&client, [namespace]).await;
                }
                mark_ready(&client, &resource, &found, kind).await;
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn mark_ready(client: &kube::Client, resource: &ApiResource, object: &Value, kind: &str) {
    let reference = ObjectId::of(object);
    let api: Api<DynamicObject> = match reference.namespace() {
        Some(namespace) => Api::namespaced_with(client.clone(), namespace, resource),
        None => Api::all_with(client.clone(), resource),
    };
    let patch = json!({"status": status::ready_status(object)});
    let written = if kind == "Application" {
        api.patch(&reference.name, &PatchParams::default(), &Patch::Merge(&patch)).await
    } else {
        api.patch_status(&reference.name, &PatchParams::default(), &Patch::Merge(&patch)).await
    };
    if let Err(error) = written {
        eprintln!("stand-in: `{reference}`: {error}");
    }
}
