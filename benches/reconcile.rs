//! `reconcile` of the scale platform (20 tenants, 200 servers by default) against a real
//! kube-apiserver (`scripts/kube-apiserver.sh`) with the pinned CRDs, next to the two floors it
//! is measured against. Printed side by side, from the same run:
//!
//! - **(a) critical path**: the longest chain of the stand-in controller's delays through the
//!   component graph, a component costing the longest delay among its objects that have a
//!   controller (what a perfect scheduler with free requests would take);
//! - **(b) bulk apply**: a server-side apply of every object, one PATCH each, no read first
//!   (`Target::apply_after` with `Before::Absent`: the server is fresh), CustomResourceDefinitions
//!   and Namespaces first, 16 at a time, nothing awaited, on a fresh API server;
//! - **reconcile**: the library's `reconcile` (default options; `CONCURRENCY` overrides the
//!   requests in flight) on another fresh API server, until every component is ready, with the
//!   ratio `wall / max(a, b)` (goal: at most 1.25; nothing is asserted);
//! - **(c) the graph's bound at (b)'s rate**: no scheduler can finish before the largest
//!   `t + requests(start >= t) / rate`, where a component starts when its dependencies could
//!   be ready at the earliest and `rate` is (b)'s objects per second; printed with the
//!   stand-in's status writes counted as free and as costing an apply each. On two cores this
//!   bound, not the scheduler, is what keeps reconcile above 1.25x at 200 servers;
//! - where reconcile's time went: the chain of components that decided its end, split into
//!   time spent running and time between a dependency's readiness and the start; when the last
//!   component finished applying its objects.
//!
//! The stand-in controller watches each kind the plan has (one watch per kind, no polling) and
//! marks an object ready a fixed delay after it first appeared: 1 s for a Flux HelmRelease or
//! an Argo CD Application (operators and charts), 2 s for a database (CNPG `Cluster`,
//! `RabbitmqCluster`, MinIO `Tenant`), 0.5 s for a Job, 0.2 s for anything else a controller
//! writes status for (`tests/reconcile/sim/status.rs`: `has_controller`, `ready_status`).
//! CustomResourceDefinitions and Namespaces are made ready by the API server itself.
//!
//! ```console
//! $ cargo bench --bench reconcile
//! $ RUNS=3 TENANTS=20 SERVERS=200 CONCURRENCY=16 cargo bench --bench reconcile
//! ```
//!
//! `RUNS` (default 1) repeats (b) and reconcile, each on a fresh API server, and prints medians.
//! `PPROF_DIR=DIR` saves a CPU profile of the API server during each
//! (`go tool pprof -top DIR/reconcile.pb.gz`).
//! Needs the built API server and etcd, and the pinned CRDs in `../shared/upstream` beside the
//! checkout; without them it says so in one line and exits 0.

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
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, WatchEvent, WatchParams};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tfrs_gitops::object::ObjectId;
use tfrs_gitops::reconcile::apply::{Before, Target};
use tfrs_gitops::reconcile::rollout::{Plan, Rollout};
use tfrs_gitops::reconcile::{Event, Options, Status, reconcile};

/// Requests in flight in the bulk apply.
const BULK_CONCURRENCY: usize = 16;

/// The group of an `apiVersion` (empty for the core group); `status.rs` needs it.
fn group_of(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or("", |(group, _)| group)
}

/// The string at `pointer`, or empty; `status.rs` needs it.
fn text<'a>(object: &'a Value, pointer: &str) -> &'a str {
    object.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

/// How long the stand-in controller takes to make an object ready (see the module docs).
fn delay(object: &Value) -> Duration {
    let millis = match (group_of(text(object, "/apiVersion")), text(object, "/kind")) {
        ("helm.toolkit.fluxcd.io", "HelmRelease") | ("argoproj.io", "Application") => 1_000,
        ("postgresql.cnpg.io", "Cluster") | ("rabbitmq.com", "RabbitmqCluster") | ("minio.min.io", "Tenant") => 2_000,
        ("batch", "Job") => 500,
        _ => 200,
    };
    Duration::from_millis(millis)
}

/// Whether the stand-in writes this object's status: it has a controller, and it is not made
/// ready by the API server itself (CustomResourceDefinitions, Namespaces).
fn stand_in_owns(object: &Value) -> bool {
    status::has_controller(object)
        && group_of(text(object, "/apiVersion")) != "apiextensions.k8s.io"
        && text(object, "/kind") != "Namespace"
}

/// CPU seconds used so far by this process, by every running `kube-apiserver` and `etcd`, and
/// by the whole machine (user + system, from `/proc`; clock ticks taken as 100 per second,
/// Linux's value).
fn cpu() -> [f64; 4] {
    let ticks = |stat: &str| -> f64 {
        // NB: fields after the `(comm)`: state is the 1st, utime the 12th, stime the 13th.
        let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
        let fields: Vec<&str> = rest.split_whitespace().collect();
        (fields.get(11).and_then(|f| f.parse::<f64>().ok()).unwrap_or(0.0)
            + fields.get(12).and_then(|f| f.parse::<f64>().ok()).unwrap_or(0.0))
            / 100.0
    };
    // NB: the machine's busy time: the first line of /proc/stat, all fields but idle and iowait.
    let all = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let fields: Vec<f64> = all.lines().next().unwrap_or_default().split_whitespace().skip(1).filter_map(|f| f.parse().ok()).collect();
    let busy = fields.iter().enumerate().filter(|(i, _)| *i != 3 && *i != 4).map(|(_, v)| v).sum::<f64>() / 100.0;
    let mut used = [ticks(&std::fs::read_to_string("/proc/self/stat").unwrap_or_default()), 0.0, 0.0, busy];
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let comm = std::fs::read_to_string(entry.path().join("comm")).unwrap_or_default();
        let slot = match comm.trim() {
            "kube-apiserver" => 1,
            "etcd" => 2,
            _ => continue,
        };
        used[slot] += ticks(&std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default());
    }
    used
}

/// Prints the CPU used since `before` (from [`cpu`]).
fn cpu_since(what: &str, before: [f64; 4]) {
    let now = cpu();
    println!(
        "  CPU during {what}: this process (tfrs and the stand-in) {:.1} s, kube-apiserver {:.1} s, etcd {:.1} s, anything else on the machine {:.1} s",
        now[0] - before[0],
        now[1] - before[1],
        now[2] - before[2],
        (now[3] - before[3]) - (now[0] - before[0]) - (now[1] - before[1]) - (now[2] - before[2])
    );
}

/// With `PPROF_DIR` set, starts a CPU profile of the API server for `seconds` into
/// `PPROF_DIR/<name>.pb.gz` (its `/debug/pprof/profile`, read with `go tool pprof -top`); the
/// returned process is waited for by [`profiled`].
fn profile(server: &apiserver::Server, name: &str, seconds: u64) -> Option<std::process::Child> {
    let dir = PathBuf::from(std::env::var_os("PPROF_DIR")?);
    let kubeconfig = std::fs::read_to_string(&server.kubeconfig).ok()?;
    let address = kubeconfig.lines().find_map(|l| l.trim().strip_prefix("server: "))?.to_owned();
    std::fs::create_dir_all(&dir).ok()?;
    std::process::Command::new("curl")
        .args(["-sSk", "-H", "Authorization: Bearer tfrs-e2e-token", "-o"])
        .arg(dir.join(format!("{name}.pb.gz")))
        .arg(format!("{address}/debug/pprof/profile?seconds={seconds}"))
        .spawn()
        .ok()
}

/// Waits for a profile started by [`profile`].
fn profiled(child: Option<std::process::Child>) {
    if let Some(mut child) = child {
        let _ = child.wait();
    }
}

/// The API server's requests so far, by verb (`apiserver_request_total`), as one line.
async fn requests(client: &kube::Client) -> String {
    let Some(counts) = apiserver::request_counts(client).await else { return "no /metrics".into() };
    let mut by_verb: std::collections::BTreeMap<String, f64> = std::collections::BTreeMap::new();
    for ((verb, _, code), count) in counts {
        let key = if code.starts_with('2') { verb } else { format!("{verb} {code}") };
        *by_verb.entry(key).or_default() += count;
    }
    by_verb.iter().map(|(k, v)| format!("{k} {v}")).collect::<Vec<_>>().join(", ")
}

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn seconds(duration: Duration) -> f64 {
    duration.as_secs_f64()
}

fn median(values: &[Duration]) -> Duration {
    let mut sorted = values.to_vec();
    sorted.sort();
    match sorted.len() {
        0 => Duration::ZERO,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2,
    }
}

fn main() {
    // NB: `cargo bench` passes `--bench`; this harness takes no arguments.
    let Some((binary, etcd)) = apiserver::binaries() else { return };
    let Some(upstream) = apiserver::upstream() else { return };
    let (tenants, servers) = (env_number("TENANTS", 20), env_number("SERVERS", 200));
    let runs = env_number("RUNS", 1).max(1);
    let concurrency = env_number("CONCURRENCY", Options::default().concurrency);
    let dir = tempfile::tempdir().expect("tempdir");
    let specs = dir.path().join("specs");
    platform::write(&specs, tenants, servers, None, None).expect("write the scale platform");
    let rollout = render(&specs, &dir.path().join("out"));
    let objects = rollout.objects.iter().map(Vec::len).sum::<usize>();
    let owned = rollout.objects.iter().flatten().filter(|o| stand_in_owns(o)).count();
    let crds = apiserver::pinned_crds(&upstream);
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    println!(
        "machine: nproc {}; platform: {tenants} tenants, {servers} servers; runs: {runs}; reconcile concurrency: {concurrency}",
        std::thread::available_parallelism().map_or(1, usize::from)
    );
    println!("objects: {objects} ({owned} made ready by the stand-in controller), components: {}", rollout.plan.components.len());
    let critical = critical_path(&rollout);
    println!("(a) critical path of the stand-in's delays: {:.2} s", seconds(critical));
    let (mut bulks, mut walls, mut lives) = (Vec::new(), Vec::new(), Vec::new());
    for run in 1..=runs {
        let bulk = runtime.block_on(bulk_apply(&binary, &etcd, &crds, &rollout));
        let (wall, timeline, live) = runtime.block_on(reconciled(&binary, &etcd, &crds, &rollout, concurrency, &specs));
        let floor = critical.max(bulk);
        println!(
            "run {run}: (b) bulk apply {:.2} s; reconcile {:.2} s = {:.2}x max(a, b)",
            seconds(bulk),
            seconds(wall),
            seconds(wall) / seconds(floor)
        );
        let rate = objects as f64 / seconds(bulk);
        let (applies, all) = (throughput_bound(&rollout, rate, false), throughput_bound(&rollout, rate, true));
        println!(
            "run {run}: (c) the graph at (b)'s rate ({rate:.0} requests/s): at least {:.2} s = {:.2}x max(a, b) if the stand-in's writes were free, {:.2} s = {:.2}x counting them as applies; reconcile = {:.2}x the latter",
            seconds(applies),
            seconds(applies) / seconds(floor),
            seconds(all),
            seconds(all) / seconds(floor),
            seconds(wall) / seconds(all)
        );
        breakdown(&rollout, &timeline, wall, concurrency);
        println!("run {run}: diff --live (no drift) {:.2} s = {:.2}x (b)", seconds(live), seconds(live) / seconds(bulk));
        bulks.push(bulk);
        walls.push(wall);
        lives.push(live);
    }
    let (bulk, wall) = (median(&bulks), median(&walls));
    let floor = critical.max(bulk);
    let which = if critical >= bulk { "a" } else { "b" };
    println!("(b) bulk server-side apply, {BULK_CONCURRENCY} at a time, median: {:.2} s", seconds(bulk));
    println!("reconcile wall time, median: {:.2} s", seconds(wall));
    println!(
        "ratio wall / max(a, b) = {:.2} / {:.2} ({which}) = {:.2}x (goal: at most 1.25x)",
        seconds(wall),
        seconds(floor),
        seconds(wall) / seconds(floor)
    );
    let live = median(&lives);
    println!("diff --live, no drift, median: {:.2} s = {:.2}x (b) (goal: at most 2x)", seconds(live), seconds(live) / seconds(bulk));
}

/// Renders the specs with the binary and loads the one cluster's rollout.
fn render(specs: &Path, out: &Path) -> Rollout {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_tfrs"))
        .arg("render")
        .arg(specs)
        .arg("--master-key-file")
        .arg(specs.join("keys/master.key"))
        .arg("--out")
        .arg(out)
        .env("TFRS_CACHE_DIR", out.with_extension("memo"))
        .output()
        .expect("run tfrs render");
    assert!(output.status.success(), "{}", common::report(&output));
    let clusters: Vec<PathBuf> = std::fs::read_dir(out.join("clusters")).expect("clusters").map(|e| e.expect("entry").path()).collect();
    let cluster = clusters.first().expect("a cluster").clone();
    let plan = Plan::parse(&std::fs::read(cluster.join("plan.json")).expect("plan.json")).expect("plan");
    Rollout::load(plan, &|f| std::fs::read(cluster.join(f)).ok(), None).expect("rollout")
}

/// Each component's own cost: the longest stand-in delay among its objects.
fn own_delay(objects: &[Value]) -> Duration {
    objects.iter().filter(|o| stand_in_owns(o)).map(delay).max().unwrap_or_default()
}

/// (a): the longest chain of delays through the component graph.
fn critical_path(rollout: &Rollout) -> Duration {
    earliest_starts(rollout).iter().zip(&rollout.objects).map(|(start, objects)| *start + own_delay(objects)).max().unwrap_or_default()
}

/// When each component (in plan order) could start at the earliest: once its dependencies
/// could be ready, each costing only its own delay.
fn earliest_starts(rollout: &Rollout) -> Vec<Duration> {
    let mut ready: HashMap<&str, Duration> = HashMap::new();
    let mut starts = Vec::with_capacity(rollout.plan.components.len());
    // NB: the plan lists components in dependency order.
    for (component, objects) in rollout.plan.components.iter().zip(&rollout.objects) {
        let start = component.depends_on.iter().filter_map(|d| ready.get(d.as_str())).max().copied().unwrap_or_default();
        ready.insert(&component.id, start + own_delay(objects));
        starts.push(start);
    }
    starts
}

/// (c): a bound no scheduler can beat on this machine, from the graph and the API server's
/// throughput. A component cannot start before its dependencies could be ready (their delays,
/// with no other cost), and the requests of components that start at `t` or later cannot be
/// served faster than `rate` per second, so the rollout takes at least the largest
/// `t + requests(start >= t) / rate`. Requests are the applies and, with `status_writes`, the
/// stand-in's writes (a status per object it owns, a namespace per HelmRelease that creates
/// one), each counted as costing the API server what an apply does.
fn throughput_bound(rollout: &Rollout, rate: f64, status_writes: bool) -> Duration {
    let requests = |objects: &Vec<Value>| {
        let writes = if status_writes {
            objects.iter().filter(|o| stand_in_owns(o)).count() + objects.iter().filter(|o| status::created_namespace(o).is_some()).count()
        } else {
            0
        };
        objects.len() + writes
    };
    let mut starts: Vec<(Duration, usize)> = earliest_starts(rollout).into_iter().zip(rollout.objects.iter().map(requests)).collect();
    starts.sort();
    let mut remaining: usize = starts.iter().map(|(_, n)| n).sum();
    let mut bound = Duration::ZERO;
    for (start, requests) in starts {
        bound = bound.max(start + Duration::from_secs_f64(remaining as f64 / rate));
        remaining -= requests;
    }
    bound
}

/// A fresh API server with the pinned CRDs and `flux-system` (the cluster's prerequisites).
async fn prepared(binary: &Path, etcd: &Path, crds: &[Value]) -> apiserver::Server {
    let server = apiserver::Server::start(binary, etcd).await;
    let client = server.client().await;
    apiserver::register_crds(&client, crds).await;
    apiserver::create_namespaces(&client, ["flux-system".to_owned()]).await;
    server
}

/// (b): applies every object, CRDs and Namespaces first, 16 at a time, on a fresh API server.
async fn bulk_apply(binary: &Path, etcd: &Path, crds: &[Value], rollout: &Rollout) -> Duration {
    let server = prepared(binary, etcd, crds).await;
    let target = Target::new(server.client().await);
    let mut objects: Vec<&Value> = rollout.objects.iter().flatten().collect();
    objects.sort_by_key(|o| match text(o, "/kind") {
        "CustomResourceDefinition" => 0,
        "Namespace" => 1,
        _ => 2,
    });
    // NB: what helm-controller creates for a HelmRelease with `install.createNamespace`
    // (untimed: no controller runs here).
    let created: Vec<String> = objects.iter().filter_map(|o| status::created_namespace(o)).collect();
    apiserver::create_namespaces(&server.client().await, created).await;
    let split = objects.iter().position(|o| !matches!(text(o, "/kind"), "CustomResourceDefinition" | "Namespace")).unwrap_or(objects.len());
    let profiling = profile(&server, "bulk", 6);
    let (started, before) = (Instant::now(), cpu());
    let deadline = tokio::time::Instant::now() + Duration::from_secs(600);
    for part in [&objects[..split], &objects[split..]] {
        let results: Vec<_> = futures::stream::iter(part.iter())
            .map(|o| target.apply_after(o, false, false, Before::Absent, deadline))
            .buffer_unordered(BULK_CONCURRENCY)
            .collect()
            .await;
        for result in results {
            result.expect("a bulk apply");
        }
    }
    let elapsed = started.elapsed();
    cpu_since("the bulk apply", before);
    profiled(profiling);
    println!("  requests by the API server's count (setup included): {}", requests(&server.client().await).await);
    elapsed
}

/// When each component started and became ready, by id.
#[derive(Default)]
struct Timeline {
    started: HashMap<String, Instant>,
    /// When it first waited (its objects applied), or became ready without waiting.
    applied: HashMap<String, Instant>,
    ready: HashMap<String, Instant>,
    /// When `reconcile` was called.
    origin: Option<Instant>,
}

/// Reconciles the platform on a fresh API server with the stand-in controller running; returns
/// the wall time and when each component started and became ready.
async fn reconciled(
    binary: &Path,
    etcd: &Path,
    crds: &[Value],
    rollout: &Rollout,
    concurrency: usize,
    specs: &Path,
) -> (Duration, Timeline, Duration) {
    let server = prepared(binary, etcd, crds).await;
    let client = server.client().await;
    let stop = Arc::new(AtomicBool::new(false));
    let watching = Arc::new(AtomicUsize::new(0));
    let watches = stand_in(&client, rollout, &stop, &watching);
    // NB: controllers run before a rollout starts: the clock starts once the stand-in watches
    // every kind served now (a kind whose CRD the plan installs is watched when it appears).
    let served = served_kinds(&client, rollout).await;
    let waited = Instant::now();
    while watching.load(Ordering::Relaxed) < served && waited.elapsed() < Duration::from_secs(60) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let target = Target::new(client);
    let timeline = Mutex::new(Timeline::default());
    let record = |event: &Event| {
        let mut timeline = timeline.lock().expect("timeline");
        let now = Instant::now();
        match event.status {
            Status::Running => timeline.started.entry(event.component.clone()).or_insert(now),
            Status::Waiting => timeline.applied.entry(event.component.clone()).or_insert(now),
            Status::Ready => {
                timeline.applied.entry(event.component.clone()).or_insert(now);
                timeline.ready.entry(event.component.clone()).or_insert(now)
            }
            _ => return,
        };
    };
    let options = Options { concurrency, ..Options::default() };
    let profiling = profile(&server, "reconcile", 12);
    let (started, before) = (Instant::now(), cpu());
    timeline.lock().expect("timeline").origin = Some(started);
    let outcome = reconcile(&target, rollout, &options, &record).await.expect("reconcile");
    let wall = started.elapsed();
    cpu_since("reconcile", before);
    profiled(profiling);
    println!("  requests by the API server's count (setup and the stand-in included): {}", requests(&server.client().await).await);
    stop.store(true, Ordering::Relaxed);
    for watch in watches {
        watch.abort();
    }
    assert!(outcome.is_ready(), "the rollout failed: {:?}", outcome.failures());
    let live = diff_live(&target, &server, &rollout.plan.cluster, specs).await;
    (wall, timeline.into_inner().expect("timeline"), live)
}

/// `tfrs diff --live` (the command: specs rendered in memory) of the reconciled platform, which
/// has no drift; the identity is recorded first, as `tfrs bootstrap` would.
async fn diff_live(target: &Target, server: &apiserver::Server, cluster: &str, specs: &Path) -> Duration {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let uid = tfrs_gitops::live::guard::live_uid(target, deadline).await.expect("kube-system");
    let identity = tfrs_gitops::live::guard::Identity { cluster: cluster.to_owned(), uid };
    tfrs_gitops::live::guard::record(target, &identity, deadline).await.expect("record the identity");
    let (specs, kubeconfig) = (specs.to_path_buf(), server.kubeconfig.clone());
    let started = Instant::now();
    let output = tokio::task::spawn_blocking(move || {
        std::process::Command::new(env!("CARGO_BIN_EXE_tfrs"))
            .arg("diff")
            .arg(&specs)
            .args(["--live", "--quiet", "--master-key-file"])
            .arg(specs.join("keys/master.key"))
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .output()
            .expect("run tfrs diff --live")
    })
    .await
    .expect("join");
    let elapsed = started.elapsed();
    if output.status.code() != Some(0) {
        println!("note: diff --live did not exit 0: {}", common::report(&output).lines().take(12).collect::<Vec<_>>().join("\n"));
    }
    elapsed
}

/// Prints where reconcile's time went: the chain of components that decided when it ended
/// (each one's last dependency to become ready, back from the last component), split into time
/// running and time between its dependencies' readiness and its start; and, over all
/// components, the time each ran beyond its own stand-in delay, how many ran at once, and when
/// the last one finished applying.
fn breakdown(rollout: &Rollout, timeline: &Timeline, wall: Duration, slots: usize) {
    let Some(origin) = timeline.origin else { return };
    let index: HashMap<&str, usize> = rollout.plan.components.iter().enumerate().map(|(i, c)| (c.id.as_str(), i)).collect();
    let ready = |id: &str| timeline.ready.get(id).copied();
    let Some(mut current) = rollout.plan.components.iter().map(|c| c.id.as_str()).max_by_key(|id| ready(id)) else { return };
    let (mut running, mut queued, mut chain, mut delays) = (Duration::ZERO, Duration::ZERO, 0usize, Duration::ZERO);
    let mut steps = Vec::new();
    let at = |instant: Option<&Instant>| instant.map_or(f64::NAN, |i| seconds(i.saturating_duration_since(origin)));
    while let (Some(start), Some(end)) = (timeline.started.get(current).copied(), ready(current)) {
        let component = &rollout.plan.components[index[current]];
        running += end - start;
        let own = own_delay(&rollout.objects[index[current]]);
        delays += own;
        chain += 1;
        steps.push(format!(
            "    {current} ({} objects, own delay {:.2} s): started {:.2} s, applied {:.2} s, ready {:.2} s",
            rollout.objects[index[current]].len(),
            seconds(own),
            at(Some(&start)),
            at(timeline.applied.get(current)),
            at(Some(&end))
        ));
        let gate = component.depends_on.iter().map(String::as_str).max_by_key(|d| ready(d));
        let released = gate.and_then(ready).unwrap_or(origin);
        queued += start.saturating_duration_since(released);
        match gate {
            Some(gate) => current = gate,
            None => break,
        }
    }
    let mut overheads: Vec<Duration> = rollout
        .plan
        .components
        .iter()
        .zip(&rollout.objects)
        .filter_map(|(c, objects)| {
            let run = ready(&c.id)?.checked_duration_since(*timeline.started.get(&c.id)?)?;
            Some(run.saturating_sub(own_delay(objects)))
        })
        .collect();
    overheads.sort();
    let (mut busy, mut delays_all) = (Duration::ZERO, Duration::ZERO);
    for (c, objects) in rollout.plan.components.iter().zip(&rollout.objects) {
        if let (Some(start), Some(end)) = (timeline.started.get(&c.id), ready(&c.id)) {
            busy += end.saturating_duration_since(*start);
        }
        delays_all += own_delay(objects);
    }
    let at = |q: f64| overheads.get(((overheads.len().saturating_sub(1)) as f64 * q) as usize).copied().unwrap_or_default();
    let total: Duration = overheads.iter().sum();
    println!(
        "  the deciding chain: {chain} components, {:.2} s running (their stand-in delays: {:.2} s) + {:.2} s between a dependency's readiness and its start, of {:.2} s",
        seconds(running),
        seconds(delays),
        seconds(queued),
        seconds(wall)
    );
    for step in steps.iter().rev() {
        println!("{step}");
    }
    println!(
        "  a component's run beyond its own delay: median {:.2} s, p90 {:.2} s, max {:.2} s; summed over {} components {:.1} s (= {:.1} components on average)",
        seconds(at(0.5)),
        seconds(at(0.9)),
        seconds(at(1.0)),
        overheads.len(),
        seconds(total),
        seconds(total) / seconds(wall)
    );
    let applied = timeline.applied.values().max().map_or(Duration::ZERO, |last| last.saturating_duration_since(origin));
    // NB: when the work became available: the objects' components' start times, weighted by
    // their objects.
    let mut starts: Vec<Duration> = rollout
        .plan
        .components
        .iter()
        .zip(&rollout.objects)
        .filter_map(|(c, objects)| Some((timeline.started.get(&c.id)?.saturating_duration_since(origin), objects.len())))
        .flat_map(|(at, n)| std::iter::repeat_n(at, n))
        .collect();
    starts.sort();
    let quantile = |q: f64| starts.get(((starts.len().saturating_sub(1)) as f64 * q) as usize).copied().unwrap_or_default();
    println!(
        "  objects whose component had started: 25% by {:.2} s, 50% by {:.2} s, 75% by {:.2} s, all by {:.2} s",
        seconds(quantile(0.25)),
        seconds(quantile(0.5)),
        seconds(quantile(0.75)),
        seconds(quantile(1.0))
    );
    println!(
        "  components running at once: {:.1} on average (their own delays summed: {:.1} s); requests in flight at most {slots}; the last component finished applying at {:.2} s",
        seconds(busy) / seconds(wall),
        seconds(delays_all),
        seconds(applied)
    );
}

/// Objects the stand-in makes ready, by `(apiVersion, kind)`, then `namespace/name`, with each
/// one's delay.
type Wanted = HashMap<(String, String), HashMap<String, Duration>>;

/// Starts the stand-in controller: one task per kind of the plan that it makes ready.
fn stand_in(
    client: &kube::Client,
    rollout: &Rollout,
    stop: &Arc<AtomicBool>,
    watching: &Arc<AtomicUsize>,
) -> Vec<tokio::task::JoinHandle<()>> {
    let mut wanted: Wanted = HashMap::new();
    for object in rollout.objects.iter().flatten().filter(|o| stand_in_owns(o)) {
        let kind = (text(object, "/apiVersion").to_owned(), text(object, "/kind").to_owned());
        let key = format!("{}/{}", text(object, "/metadata/namespace"), text(object, "/metadata/name"));
        wanted.entry(kind).or_default().insert(key, delay(object));
    }
    wanted
        .into_iter()
        .map(|(kind, objects)| tokio::spawn(watch_kind(client.clone(), kind, objects, stop.clone(), watching.clone())))
        .collect()
}

fn gvk(api_version: &str, kind: &str) -> GroupVersionKind {
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    GroupVersionKind::gvk(group, version, kind)
}

/// How many of the kinds the stand-in watches the API server serves now.
async fn served_kinds(client: &kube::Client, rollout: &Rollout) -> usize {
    let kinds: std::collections::BTreeSet<(&str, &str)> =
        rollout.objects.iter().flatten().filter(|o| stand_in_owns(o)).map(|o| (text(o, "/apiVersion"), text(o, "/kind"))).collect();
    let mut served = 0;
    for (api_version, kind) in kinds {
        served += usize::from(kube::discovery::pinned_kind(client, &gvk(api_version, kind)).await.is_ok());
    }
    served
}

/// Watches one kind (re-watching when the stream ends) and, for each wanted object that is not
/// ready, schedules its ready status `delay` after it was first seen.
async fn watch_kind(
    client: kube::Client,
    (api_version, kind): (String, String),
    wanted: HashMap<String, Duration>,
    stop: Arc<AtomicBool>,
    watching: Arc<AtomicUsize>,
) {
    let gvk = gvk(&api_version, &kind);
    let first_seen: Arc<Mutex<HashMap<String, Instant>>> = Arc::default();
    let pending: Arc<Mutex<std::collections::HashSet<String>>> = Arc::default();
    let (mut resource_version, mut counted) = ("0".to_owned(), false);
    while !stop.load(Ordering::Relaxed) {
        // NB: a kind whose CRD the plan itself installs is not served at first.
        let Ok((resource, _)) = kube::discovery::pinned_kind(&client, &gvk).await else {
            tokio::time::sleep(Duration::from_millis(200)).await;
            continue;
        };
        let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
        let Ok(stream) = api.watch(&WatchParams::default().timeout(290), &resource_version).await else {
            tokio::time::sleep(Duration::from_millis(200)).await;
            continue;
        };
        if !counted {
            watching.fetch_add(1, Ordering::Relaxed);
            counted = true;
        }
        let mut stream = std::pin::pin!(stream);
        while let Some(event) = stream.next().await {
            let object = match event {
                Ok(WatchEvent::Added(object) | WatchEvent::Modified(object)) => object,
                Ok(WatchEvent::Error(status)) if status.code == 410 => {
                    resource_version = "0".to_owned();
                    break;
                }
                Ok(_) => continue,
                Err(_) => break,
            };
            if let Some(seen) = object.metadata.resource_version.clone() {
                resource_version = seen;
            }
            let Ok(mut found) = serde_json::to_value(&object) else { continue };
            found["apiVersion"] = json!(api_version);
            found["kind"] = json!(kind);
            let key = format!("{}/{}", text(&found, "/metadata/namespace"), text(&found, "/metadata/name"));
            let Some(&delay) = wanted.get(&key) else { continue };
            if tfrs_gitops::reconcile::wait::readiness(&found).is_ready() || !pending.lock().expect("pending").insert(key.clone()) {
                continue;
            }
            let first = *first_seen.lock().expect("first seen").entry(key.clone()).or_insert_with(Instant::now);
            let (client, resource, pending, stop) = (client.clone(), resource.clone(), pending.clone(), stop.clone());
            tokio::spawn(async move {
                tokio::time::sleep_until((first + delay).into()).await;
                for _ in 0..5 {
                    if stop.load(Ordering::Relaxed) || mark_ready(&client, &resource, &found).await {
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                pending.lock().expect("pending").remove(&key);
            });
        }
    }
}

/// Writes `object`'s ready status (and, for a HelmRelease that creates its namespace, the
/// namespace, as helm-controller does); `false` (after saying why) when the write failed.
async fn mark_ready(client: &kube::Client, resource: &ApiResource, object: &Value) -> bool {
    if let Some(namespace) = status::created_namespace(object) {
        apiserver::create_namespaces(client, [namespace]).await;
    }
    let reference = ObjectId::of(object);
    let api: Api<DynamicObject> = match reference.namespace() {
        Some(namespace) => Api::namespaced_with(client.clone(), namespace, resource),
        None => Api::all_with(client.clone(), resource),
    };
    let patch = json!({"status": status::ready_status(object)});
    // NB: Argo CD's Application CRD has no status subresource: its controller writes `status`
    // with the object.
    let written = if reference.kind == "Application" {
        api.patch(&reference.name, &PatchParams::default(), &Patch::Merge(&patch)).await
    } else {
        api.patch_status(&reference.name, &PatchParams::default(), &Patch::Merge(&patch)).await
    };
    if let Err(error) = &written {
        eprintln!("stand-in: `{reference}`: {error}");
    }
    written.is_ok()
}
