//! `tfrs reconcile` against the in-process API simulator (`tests/reconcile/sim.rs`) and, when it
//! is built, a real, current kube-apiserver (`scripts/kube-apiserver.sh`).
//! The tests of the `tfrs reconcile` command itself are the module `command`
//! (`tests/reconcile/command.rs`).

#[path = "reconcile/command.rs"]
mod command;
mod common;
#[path = "reconcile/sim.rs"]
mod sim;

use serde_json::{Value, json};
use sim::{Behaviour, Config, Fault, FaultAction, Sim};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;
use tfrs_gitops::object::ObjectId;
use tfrs_gitops::reconcile::apply::Target;
use tfrs_gitops::reconcile::rollout::{Plan, Rollout};
use tfrs_gitops::reconcile::{ComponentResult, Event, Mode, Options, Outcome, Reason, Status, reconcile};

const LABELS: &str = r#"{"app.kubernetes.io/managed-by": "tfrs", "tfrs.turingfocus.cn/cluster": "small"}"#;

fn object(api_version: &str, kind: &str, namespace: Option<&str>, name: &str, rest: Value) -> Value {
    let mut metadata = json!({"name": name, "labels": serde_json::from_str::<Value>(LABELS).expect("labels")});
    if let Some(namespace) = namespace {
        metadata["namespace"] = json!(namespace);
    }
    let mut object = json!({"apiVersion": api_version, "kind": kind, "metadata": metadata});
    if let (Some(map), Some(rest)) = (object.as_object_mut(), rest.as_object()) {
        map.extend(rest.clone());
    }
    object
}

fn deployment(name: &str) -> Value {
    object(
        "apps/v1",
        "Deployment",
        Some("app"),
        name,
        json!({"spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}}, "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [{"name": name, "image": "busybox"}]}}}}),
    )
}

/// A small plan: base (Namespace, ConfigMap) <- db, cache, widgets (CRD + CR in one component)
/// <- api (Deployment + Job) which needs db and cache.
fn small() -> Vec<(&'static str, Vec<&'static str>, Vec<Value>)> {
    let crd = object(
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        None,
        "widgets.example.com",
        json!({"spec": {"group": "example.com", "scope": "Namespaced", "names": {"kind": "Widget", "plural": "widgets", "singular": "widget", "listKind": "WidgetList"},
            "versions": [{"name": "v1", "served": true, "storage": true, "subresources": {"status": {}}, "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}}),
    );
    let job = object(
        "batch/v1",
        "Job",
        Some("app"),
        "migrate",
        json!({"spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "m", "image": "busybox"}]}}}}),
    );
    vec![
        (
            "base",
            vec![],
            vec![
                object("v1", "ConfigMap", Some("app"), "settings", json!({"data": {"mode": "fast"}})),
                object("v1", "Namespace", None, "app", json!({})),
            ],
        ),
        ("db", vec!["base"], vec![deployment("db")]),
        ("cache", vec!["base"], vec![deployment("cache")]),
        ("widgets", vec!["base"], vec![object("example.com/v1", "Widget", Some("app"), "w1", json!({"spec": {"size": 1}})), crd]),
        ("api", vec!["db", "cache"], vec![deployment("api"), job]),
    ]
}

fn rollout(components: &[(&str, Vec<&str>, Vec<Value>)]) -> Rollout {
    let plan = json!({"cluster": "small", "components": components.iter().map(|(id, deps, objects)| json!({
        "id": id, "path": format!("components/{id}"), "dependsOn": deps,
        "objects": objects.iter().map(|o| {
            let r = ObjectId::of(o);
            json!({"apiVersion": r.api_version, "kind": r.kind, "namespace": r.namespace, "name": r.name, "file": format!("{id}/{}-{}.yaml", r.kind.to_lowercase(), r.name)})
        }).collect::<Vec<_>>()
    })).collect::<Vec<_>>()});
    let mut files = BTreeMap::new();
    for (id, _, objects) in components {
        for o in objects {
            let r = ObjectId::of(o);
            files.insert(format!("{id}/{}-{}.yaml", r.kind.to_lowercase(), r.name), serde_json::to_vec(o).expect("json"));
        }
    }
    files.insert("plan.json".into(), serde_json::to_vec_pretty(&plan).expect("plan"));
    let plan = Plan::parse(&files["plan.json"]).expect("plan");
    Rollout::load(plan, &|f| files.get(f).cloned(), None).expect("rollout")
}

/// Writes a rollout's files (JSON is YAML) into `dir`, for the binary.
fn write_dir(components: &[(&str, Vec<&str>, Vec<Value>)], dir: &Path) {
    let plan = json!({"cluster": "small", "components": components.iter().map(|(id, deps, objects)| json!({
        "id": id, "path": format!("components/{id}"), "dependsOn": deps,
        "objects": objects.iter().map(|o| {
            let r = ObjectId::of(o);
            json!({"apiVersion": r.api_version, "kind": r.kind, "namespace": r.namespace, "name": r.name, "file": format!("{id}/{}-{}.yaml", r.kind.to_lowercase(), r.name)})
        }).collect::<Vec<_>>()
    })).collect::<Vec<_>>()});
    for (id, _, objects) in components {
        std::fs::create_dir_all(dir.join(id)).expect("mkdir");
        for o in objects {
            let r = ObjectId::of(o);
            std::fs::write(dir.join(format!("{id}/{}-{}.yaml", r.kind.to_lowercase(), r.name)), serde_json::to_vec(o).expect("json"))
                .expect("write");
        }
    }
    std::fs::write(dir.join("plan.json"), serde_json::to_vec_pretty(&plan).expect("plan")).expect("write plan");
}

fn options() -> Options {
    Options { concurrency: 4, timeout: Some(Duration::from_secs(20)), poll_interval: Duration::from_millis(50), ..Options::default() }
}

async fn run(sim: &Sim, rollout: &Rollout, options: &Options) -> (Outcome, Vec<Event>) {
    let events = Mutex::new(Vec::new());
    let target = Target::new(sim.client());
    let outcome =
        reconcile(&target, rollout, options, &|e: &Event| events.lock().expect("events").push(e.clone())).await.expect("reconcile");
    (outcome, events.into_inner().expect("events"))
}

fn result<'a>(outcome: &'a Outcome, id: &str) -> &'a ComponentResult {
    outcome.components.iter().find(|(i, _)| i == id).and_then(|(_, r)| r.as_ref()).unwrap_or_else(|| panic!("no result for {id}"))
}

/// Every edge: no object of a component is written before every object of each dependency is
/// ready.
fn assert_order(sim: &Sim, rollout: &Rollout) {
    let lives = sim.lives();
    let ids: BTreeMap<&str, Vec<String>> = rollout
        .plan
        .components
        .iter()
        .zip(&rollout.objects)
        .map(|(c, objects)| (c.id.as_str(), objects.iter().map(|o| ObjectId::of(o).to_string()).collect()))
        .collect();
    let mut edges = 0;
    for component in &rollout.plan.components {
        let first_write = ids[component.id.as_str()].iter().filter_map(|o| lives.get(o).and_then(|l| l.applied)).min().expect("written");
        for dependency in &component.depends_on {
            let ready = ids[dependency.as_str()]
                .iter()
                .map(|o| lives.get(o).and_then(|l| l.ready).expect("dependency ready"))
                .max()
                .expect("objects");
            assert!(first_write >= ready, "`{}` was written before its dependency `{dependency}` was ready", component.id);
            edges += 1;
        }
    }
    assert!(edges > 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn small_plan_rolls_out_in_order_with_crds_first() {
    let sim = Sim::start(Config::default()).await;
    let rollout = rollout(&small());
    let (outcome, events) = run(&sim, &rollout, &options()).await;
    assert!(outcome.is_ready(), "{:?}", outcome.failures());
    assert_order(&sim, &rollout);
    let lives = sim.lives();
    let crd = &lives["CustomResourceDefinition/widgets.example.com"];
    assert!(
        crd.ready.expect("crd ready") <= lives["Widget/app/w1"].applied.expect("widget applied"),
        "the CRD is established before its CR is applied"
    );
    assert!(lives["Namespace/app"].applied <= lives["ConfigMap/app/settings"].applied, "the Namespace goes first");
    let statuses: Vec<(String, Status)> =
        events.iter().filter(|e| e.status != Status::Waiting).map(|e| (e.component.clone(), e.status)).collect();
    for id in ["base", "db", "cache", "widgets", "api"] {
        assert!(statuses.contains(&(id.into(), Status::Running)) && statuses.contains(&(id.into(), Status::Ready)), "{id}: {statuses:?}");
    }
    let ComponentResult::Ready { changes, .. } = result(&outcome, "base") else { panic!("base not ready") };
    assert_eq!(changes, &[2, 0, 0], "two objects created");

    // A second rollout changes nothing and writes the same objects again (SSA is idempotent).
    let (again, _) = run(&sim, &rollout, &options()).await;
    let ComponentResult::Ready { changes, .. } = result(&again, "base") else { panic!("base not ready") };
    assert_eq!(changes, &[0, 0, 2]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn demo_plan_respects_every_edge_and_overlaps_parallel_branches() {
    let out = tempfile::tempdir().expect("tempdir");
    let rollout = demo_rollout(out.path());
    let sim = Sim::start(Config::default()).await;
    prepare_demo(&sim, &rollout);
    for (i, object) in rollout.objects.iter().flatten().enumerate() {
        // Recorded, varied delays: 10..=100 ms.
        sim.behave(&ObjectId::of(object).to_string(), Behaviour::ReadyAfter(Duration::from_millis(10 + (i as u64 * 37) % 91)));
    }
    let (outcome, _) = run(&sim, &rollout, &Options { concurrency: 8, ..options() }).await;
    assert!(outcome.is_ready(), "{:?}", outcome.failures());
    assert_order(&sim, &rollout);

    // Parallel branches overlap: some two components with no path between them were in flight
    // at the same time.
    let lives = sim.lives();
    let spans: Vec<(usize, std::time::Instant, std::time::Instant)> = rollout
        .objects
        .iter()
        .enumerate()
        .map(|(i, objects)| {
            let ids: Vec<String> = objects.iter().map(|o| ObjectId::of(o).to_string()).collect();
            let start = ids.iter().filter_map(|o| lives[o].applied).min().expect("start");
            let end = ids.iter().filter_map(|o| lives[o].ready).max().expect("end");
            (i, start, end)
        })
        .collect();
    let graph = tfrs_gitops::reconcile::order::Graph::new(&rollout.plan).expect("graph");
    let overlapping = spans
        .iter()
        .flat_map(|a| spans.iter().map(move |b| (a, b)))
        .filter(|(a, b)| a.0 < b.0 && !graph.downstream(a.0).contains(&b.0) && !graph.downstream(b.0).contains(&a.0))
        .filter(|(a, b)| a.1 < b.2 && b.1 < a.2)
        .count();
    assert!(overlapping > 0, "no two independent components were in flight together");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn faults_are_survived() {
    let sim = Sim::start(Config::default()).await;
    let fault = |method, path: &str, action, times| sim.fault(Fault { method, path: path.into(), action, times });
    fault(Some("PATCH"), "/deployments/db", FaultAction::Status(429), 2);
    fault(Some("GET"), "/deployments/cache", FaultAction::Status(500), 3);
    fault(Some("PATCH"), "/jobs/migrate", FaultAction::Drop, 2);
    fault(Some("GET"), "/apis/example.com/v1", FaultAction::Status(503), 1);
    fault(Some("GET"), "/version", FaultAction::Drop, 1);
    fault(Some("GET"), "/configmaps/settings", FaultAction::Delay(Duration::from_millis(300)), 1);
    let rollout = rollout(&small());
    let (outcome, _) = run(&sim, &rollout, &options()).await;
    assert!(outcome.is_ready(), "{:?}", outcome.failures());
    assert_eq!(sim.faults_fired(), 10, "every injected fault was met");
    assert_order(&sim, &rollout);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn never_ready_times_out_naming_component_objects_and_conditions() {
    let sim = Sim::start(Config::default()).await;
    sim.behave("Deployment/app/db", Behaviour::Never);
    let rollout = rollout(&small());
    let (outcome, events) = run(&sim, &rollout, &Options { timeout: Some(Duration::from_secs(1)), ..options() }).await;
    assert!(!outcome.is_ready());
    let ComponentResult::Failed(failure) = result(&outcome, "db") else { panic!("db did not fail") };
    assert_eq!(failure.reason, Reason::TimedOut(Duration::from_secs(1)));
    assert_eq!(
        failure.to_string(),
        "component `db` timed out after 1s: 1 object not ready\n  `Deployment/app/db`: 0 of 1 replicas available, 0 ready\n    Available=False (MinimumReplicasUnavailable): Deployment does not have minimum availability."
    );
    assert_eq!(result(&outcome, "api"), &ComponentResult::Skipped { dependency: "db".into() });
    assert!(matches!(result(&outcome, "cache"), ComponentResult::Ready { .. }), "an independent branch goes on");
    assert!(matches!(result(&outcome, "widgets"), ComponentResult::Ready { .. }));
    assert!(sim.object("Deployment/app/api").is_none(), "nothing of a skipped component is written");
    assert!(events.iter().any(|e| e.component == "api" && e.status == Status::Skipped));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_too_slow_to_answer_is_a_timeout_not_a_hang() {
    let sim = Sim::start(Config::default()).await;
    sim.behave("Deployment/app/db", Behaviour::Never);
    sim.fault(Fault {
        method: Some("GET"),
        path: "/deployments/db".into(),
        action: FaultAction::Delay(Duration::from_secs(30)),
        times: 1000,
    });
    let rollout = rollout(&small());
    let (outcome, _) = run(&sim, &rollout, &Options { timeout: Some(Duration::from_secs(1)), ..options() }).await;
    let ComponentResult::Failed(failure) = result(&outcome, "db") else { panic!("db did not fail") };
    assert_eq!(failure.reason, Reason::TimedOut(Duration::from_secs(1)), "{failure}");
    assert!(!failure.is_connection());
    assert_eq!(failure.unready[0].object, "Deployment/app/db");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terminal_failure_fails_fast() {
    let sim = Sim::start(Config::default()).await;
    sim.behave("Job/app/migrate", Behaviour::FailAfter(Duration::from_millis(20)));
    let rollout = rollout(&small());
    // NB: no --timeout: the Job's default is 10 minutes, so only failing fast ends this test.
    let (outcome, _) = run(&sim, &rollout, &Options { timeout: None, ..options() }).await;
    let ComponentResult::Failed(failure) = result(&outcome, "api") else { panic!("api did not fail") };
    assert_eq!(failure.reason, Reason::Terminal);
    assert_eq!(failure.unready.len(), 1);
    assert_eq!(failure.unready[0].object, "Job/app/migrate");
    assert_eq!(failure.unready[0].reason, "job failed: Failed=True (BackoffLimitExceeded): Job has reached the specified backoff limit");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verify_only_writes_nothing() {
    let sim = Sim::start(Config::default()).await;
    let rollout = rollout(&small());
    let verify = Options { mode: Mode::VerifyOnly, timeout: Some(Duration::ZERO), ..options() };
    let (outcome, _) = run(&sim, &rollout, &verify).await;
    assert!(!outcome.is_ready());
    let ComponentResult::Failed(failure) = result(&outcome, "base") else { panic!("base did not fail") };
    assert!(failure.to_string().contains("`Namespace/app`: not found"), "{failure}");
    assert!(sim.writes().is_empty(), "verify-only wrote: {:?}", sim.writes());

    let (applied, _) = run(&sim, &rollout, &options()).await;
    assert!(applied.is_ready());
    let writes = sim.writes().len();
    let (verified, _) = run(&sim, &rollout, &Options { timeout: Some(Duration::from_secs(5)), ..verify }).await;
    assert!(verified.is_ready(), "{:?}", verified.failures());
    assert_eq!(sim.writes().len(), writes, "verify-only wrote");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dry_run_persists_nothing() {
    let sim = Sim::start(Config::default()).await;
    let before = sim.count();
    let rollout = rollout(&small());
    let (outcome, _) = run(&sim, &rollout, &Options { mode: Mode::DryRun, ..options() }).await;
    assert!(outcome.is_ready(), "{:?}", outcome.failures());
    assert_eq!(sim.count(), before);
    let writes = sim.writes();
    assert!(!writes.is_empty() && writes.iter().all(|w| w.query.contains("dryRun=All")), "{writes:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conflicts_fail_unless_forced() {
    let sim = Sim::start(Config::default()).await;
    sim.seed_namespace("app");
    let api: kube::Api<kube::api::DynamicObject> =
        kube::Api::namespaced_with(sim.client(), "app", &kube::discovery::ApiResource::erase::<k8s_openapi::api::core::v1::ConfigMap>(&()));
    let theirs = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}, "data": {"mode": "slow"}});
    api.patch("settings", &kube::api::PatchParams::apply("kubectl"), &kube::api::Patch::Apply(&theirs)).await.expect("their apply");
    let rollout = rollout(&small());
    let (outcome, _) = run(&sim, &rollout, &options()).await;
    let ComponentResult::Failed(failure) = result(&outcome, "base") else { panic!("base did not fail") };
    assert_eq!(
        failure.headline(),
        "component `base`: `ConfigMap/app/settings`: 409 Conflict: Apply failed with 1 conflict: conflict with \"kubectl\": .data.mode"
    );
    let (forced, _) = run(&sim, &rollout, &Options { force_conflicts: true, ..options() }).await;
    assert!(forced.is_ready(), "{:?}", forced.failures());
    assert_eq!(sim.object("ConfigMap/app/settings").expect("settings")["data"]["mode"], "fast");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prune_deletes_what_the_plan_dropped() {
    let sim = Sim::start(Config::default()).await;
    let full = small();
    let (outcome, _) = run(&sim, &rollout(&full), &options()).await;
    assert!(outcome.is_ready());
    let smaller: Vec<_> = full
        .into_iter()
        .filter(|(id, _, _)| *id != "cache")
        .map(|(id, deps, objects)| (id, deps.into_iter().filter(|d| *d != "cache").collect(), objects))
        .collect();
    let (kept, _) = run(&sim, &rollout(&smaller), &options()).await;
    assert!(kept.pruned.is_empty(), "no prune without --prune");
    let (pruned, _) = run(&sim, &rollout(&smaller), &Options { prune: true, ..options() }).await;
    assert!(pruned.is_ready(), "{:?} {:?}", pruned.failures(), pruned.prune_failures);
    assert_eq!(pruned.pruned, vec!["Deployment/app/cache".to_owned()]);
    assert!(sim.object("Deployment/app/cache").is_none());
    assert!(sim.object("Deployment/app/db").is_some());
}

fn tfrs() -> std::process::Command {
    common::tfrs_command()
}

// ---------------------------------------------------------------------------------------------
// The demo plan.

/// Renders the demo into `out` and loads its plan.
fn demo_rollout(out: &Path) -> Rollout {
    let root = common::root();
    let output = tfrs()
        .current_dir(&root)
        .args(["render", "fixtures/demo", "--master-key-file", "fixtures/demo/keys/master.key", "--out"])
        .arg(out)
        .output()
        .expect("render");
    assert!(output.status.success(), "{}", common::report(&output));
    let cluster = out.join("clusters/demo");
    let plan = Plan::parse(&std::fs::read(cluster.join("plan.json")).expect("plan.json")).expect("plan");
    Rollout::load(plan, &|f| std::fs::read(cluster.join(f)).ok(), None).expect("rollout")
}

/// A plural the way CRDs in the demo spell them.
fn plural(kind: &str) -> String {
    let lower = kind.to_lowercase();
    match lower.strip_suffix('y') {
        Some(stem) if !stem.ends_with(['a', 'e', 'i', 'o', 'u']) => format!("{stem}ies"),
        _ => format!("{lower}s"),
    }
}

/// The custom kinds of a rollout: (apiVersion, kind, namespaced).
fn custom_kinds(rollout: &Rollout) -> Vec<(String, String, bool)> {
    let mut kinds: Vec<(String, String, bool)> = rollout
        .objects
        .iter()
        .flatten()
        .map(ObjectId::of)
        .filter(|r| r.api_version.split_once('/').is_some_and(|(g, _)| g.contains('.') && !g.ends_with(".k8s.io")))
        .map(|r| (r.api_version.clone(), r.kind.clone(), r.namespace().is_some()))
        .collect();
    kinds.sort();
    kinds.dedup();
    kinds
}

/// The cluster's prerequisites: the custom kinds' CRDs, and the `flux-system` namespace.
fn prepare_demo(sim: &Sim, rollout: &Rollout) {
    for (api_version, kind, namespaced) in custom_kinds(rollout) {
        sim.serve(&api_version, &kind, &plural(&kind), namespaced);
    }
    sim.seed_namespace("flux-system");
}

// ---------------------------------------------------------------------------------------------
// The benchmark (run by scripts/reconcile-bench.sh; it prints, it asserts no timing).

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a benchmark: scripts/reconcile-bench.sh"]
async fn bench_wall_time_vs_critical_path() {
    use tfrs_gitops::reconcile::order::{Graph, critical_path, level_by_level};
    let out = tempfile::tempdir().expect("tempdir");
    let rollout = demo_rollout(out.path());
    let sim = Sim::start(Config::default()).await;
    prepare_demo(&sim, &rollout);
    // Recorded readiness delays per component, spread 1..=9 units (default unit 1 s, as
    // operators take seconds; TFRS_BENCH_UNIT_MS scales them).
    let unit: u64 = std::env::var("TFRS_BENCH_UNIT_MS").ok().and_then(|u| u.parse().ok()).unwrap_or(1000);
    let delays: Vec<Duration> =
        (0..rollout.plan.components.len()).map(|i| Duration::from_millis(unit * (1 + (i as u64 * 7) % 9))).collect();
    for (objects, delay) in rollout.objects.iter().zip(&delays) {
        for object in objects {
            sim.behave(&ObjectId::of(object).to_string(), Behaviour::ReadyAfter(*delay));
        }
    }
    let concurrency: usize = std::env::var("TFRS_BENCH_CONCURRENCY").ok().and_then(|c| c.parse().ok()).unwrap_or(64);
    let (outcome, _) = run(
        &sim,
        &rollout,
        &Options { concurrency, poll_interval: Duration::from_secs(2), timeout: Some(Duration::from_secs(120)), ..options() },
    )
    .await;
    assert!(outcome.is_ready());
    let graph = Graph::new(&rollout.plan).expect("graph");
    let critical = critical_path(&graph, &delays);
    let levels = level_by_level(&graph, &delays);
    let wall = outcome.elapsed;
    println!(
        "components {} concurrency {concurrency}\ncritical path {:.3}s\nlevel-by-level {:.3}s\nreconcile wall {:.3}s\nwall/critical {:.3}\nlevel/critical {:.3}",
        graph.len(),
        critical.as_secs_f64(),
        levels.as_secs_f64(),
        wall.as_secs_f64(),
        wall.as_secs_f64() / critical.as_secs_f64(),
        levels.as_secs_f64() / critical.as_secs_f64()
    );
}

// ---------------------------------------------------------------------------------------------
// The real kube-apiserver (scripts/kube-apiserver.sh), started here on 127.0.0.1 with the pinned
// upstream CRDs.

#[path = "common/apiserver.rs"]
mod apiserver;
#[path = "reconcile/bootstrap.rs"]
mod bootstrap;
#[path = "reconcile/real.rs"]
mod real;

#[test]
fn cluster_demo_against_a_real_kube_apiserver() {
    let Some((binary, etcd)) = apiserver::binaries() else { return };
    let Some(upstream) = apiserver::upstream() else { return };
    real::demo(&binary, &etcd, &upstream, &PathBuf::from(env!("CARGO_BIN_EXE_tfrs")));
}

#[test]
fn bootstrap_of_the_demo_against_a_real_kube_apiserver() {
    let Some((binary, etcd)) = apiserver::binaries() else { return };
    let Some(upstream) = apiserver::upstream() else { return };
    bootstrap::demo(&binary, &etcd, &upstream, &PathBuf::from(env!("CARGO_BIN_EXE_tfrs")));
}

#[test]
fn bootstrap_with_argocd_and_with_sops_against_a_real_kube_apiserver() {
    let Some((binary, etcd)) = apiserver::binaries() else { return };
    let Some(upstream) = apiserver::upstream() else { return };
    bootstrap::other_engines(&binary, &etcd, &upstream, &PathBuf::from(env!("CARGO_BIN_EXE_tfrs")));
}
