//! Rolls a rendered plan out to a cluster: server-side apply, readiness, dependency scheduling.
//!
//! [`reconcile`] starts each component as soon as every dependency is ready (never wave by
//! wave), at most [`Options::concurrency`] at a time, the longest remaining chain first
//! ([`order::Schedule`]). Inside a component, CustomResourceDefinitions and Namespaces are
//! applied first and awaited, then the rest; then every object is polled until
//! [`wait::readiness`] says ready, a terminal failure shows, or the component's timeout passes.
//!
//! # Guarantees
//!
//! - No object of a component is written before every dependency component is ready.
//! - No component runs past its deadline by more than one request timeout.
//! - [`Mode::VerifyOnly`] sends only reads; [`Mode::DryRun`] sends only `dryRun=All` writes.
//! - A failed component fails its dependents (reported as skipped); independent branches go on.
//!
//! # Caveats
//!
//! - Readiness is polled (GET), not watched.
//! - Pruning deletes objects labelled `app.kubernetes.io/managed-by=tfrs` and
//!   `tfrs.turingfocus.cn/cluster=<cluster>` that the plan no longer has, only after a rollout
//!   in which every component became ready.

pub mod apply;
pub mod order;
pub mod rollout;
pub mod wait;

use crate::object::ObjectId;
use apply::{Cause, Change, Target};
use futures::StreamExt;
use futures::stream::FuturesUnordered;
use order::{Graph, Schedule};
use rollout::Rollout;
use serde_json::Value;
use std::collections::BTreeSet;
use std::fmt;
use std::time::Duration;
use tokio::time::Instant;
use wait::Readiness;

/// A reconcile error that stops the whole run (not a component's failure).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The plan's graph is broken.
    #[error("the plan cannot be scheduled")]
    Graph(#[from] order::Error),
    /// The API server did not answer.
    #[error("cannot reach the API server")]
    Connect(#[source] Cause),
    /// An object's own timeout cannot be read: reconcile never guesses one.
    #[error("component `{component}`: `{object}` has `{field}: {value}`, {problem}")]
    Timeout {
        /// The component.
        component: String,
        /// `Kind/namespace/name`.
        object: String,
        /// The field, e.g. `spec.timeout`.
        field: &'static str,
        /// Its value, as JSON.
        value: String,
        /// What is wrong with it.
        problem: String,
    },
}

/// A `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What reconcile does to the cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// Apply, then wait for readiness.
    #[default]
    Apply,
    /// Server-side dry run of every apply; no waiting.
    DryRun,
    /// Read only: wait for readiness of what someone else applies (Argo CD, Flux).
    VerifyOnly,
}

/// Options of [`reconcile`].
#[derive(Debug, Clone)]
pub struct Options {
    /// Components running at once (at least 1).
    pub concurrency: usize,
    /// The timeout of every component; `None` uses [`default_timeout`] per component.
    pub timeout: Option<Duration>,
    /// The longest pause between two readiness polls (a pause is a tenth of the time waited so
    /// far, at least 50 ms, at most this).
    pub poll_interval: Duration,
    /// Apply, dry run or verify only.
    pub mode: Mode,
    /// Take over fields owned by other field managers (`force=true`).
    pub force_conflicts: bool,
    /// Delete labelled objects the plan no longer has (after a fully ready rollout).
    pub prune: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            concurrency: 16,
            timeout: None,
            poll_interval: Duration::from_secs(2),
            mode: Mode::Apply,
            force_conflicts: false,
            prune: false,
        }
    }
}

/// What a progress event says about a component.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Started (applying or waiting).
    Running,
    /// Still waiting; [`Event::detail`] says for what.
    Waiting,
    /// Ready.
    Ready,
    /// Failed or timed out.
    Failed,
    /// Never started: a dependency failed.
    Skipped,
}

impl Status {
    /// The lowercase name used in `--progress json`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Running => "running",
            Status::Waiting => "waiting",
            Status::Ready => "ready",
            Status::Failed => "failed",
            Status::Skipped => "skipped",
        }
    }
}

/// One progress event.
#[derive(Debug, Clone)]
pub struct Event {
    /// The component's step number (1-based, in start order; skipped ones get the next free).
    pub step: usize,
    /// The number of components.
    pub total: usize,
    /// The component id.
    pub component: String,
    /// What happened.
    pub status: Status,
    /// Time since the component started.
    pub elapsed: Duration,
    /// A short detail (what is awaited, the change summary, the failure's first line).
    pub detail: String,
}

/// An object that was not ready when its component failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unready {
    /// `Kind/namespace/name`.
    pub object: String,
    /// Why it is not ready (the last readiness verdict).
    pub reason: String,
    /// Its last conditions, `Type=Status (Reason): message`.
    pub conditions: Vec<String>,
}

/// Why a component failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reason {
    /// Not ready within the timeout.
    TimedOut(Duration),
    /// An object reported a terminal failure.
    Terminal,
    /// The API refused or failed a request for an object.
    Api {
        /// `Kind/namespace/name`.
        object: String,
        /// What the API said.
        cause: Cause,
    },
}

/// A failed component, fit for a report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The component id.
    pub component: String,
    /// Why.
    pub reason: Reason,
    /// Objects that were not ready (terminal ones first).
    pub unready: Vec<Unready>,
}

impl Failure {
    /// Whether the API server could not be reached (exit 2 rather than 1).
    #[must_use]
    pub fn is_connection(&self) -> bool {
        matches!(&self.reason, Reason::Api { cause, .. } if cause.is_connection())
    }

    /// The first line of the report.
    #[must_use]
    pub fn headline(&self) -> String {
        let component = &self.component;
        match &self.reason {
            Reason::TimedOut(after) => format!(
                "component `{component}` timed out after {}: {} not ready",
                format_duration(*after),
                plural(self.unready.len(), "object")
            ),
            Reason::Terminal => format!("component `{component}` failed: {} failed", plural(self.unready.len(), "object")),
            Reason::Api { object, cause } => format!("component `{component}`: `{object}`: {cause}"),
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.headline())?;
        for unready in &self.unready {
            write!(f, "\n  `{}`: {}", unready.object, unready.reason)?;
            for condition in &unready.conditions {
                write!(f, "\n    {condition}")?;
            }
        }
        Ok(())
    }
}

fn plural(count: usize, noun: &str) -> String {
    format!("{count} {noun}{}", if count == 1 { "" } else { "s" })
}

/// How one component ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ComponentResult {
    /// Ready (or, in a dry run, accepted by the server).
    Ready {
        /// How long it took.
        elapsed: Duration,
        /// Objects created, configured and unchanged (zero when verifying).
        changes: [usize; 3],
    },
    /// Failed.
    Failed(Failure),
    /// Not started because a dependency failed.
    Skipped {
        /// The failed dependency.
        dependency: String,
    },
}

/// The result of [`reconcile`].
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    /// Each component's result, in plan order.
    pub components: Vec<(String, Option<ComponentResult>)>,
    /// Objects deleted by `--prune`, `Kind/namespace/name`.
    pub pruned: Vec<String>,
    /// Objects `--prune` could not delete, with why.
    pub prune_failures: Vec<String>,
    /// The wall time of the whole rollout.
    pub elapsed: Duration,
}

impl Outcome {
    /// Whether every component is ready and pruning (if asked) went through.
    #[must_use]
    pub fn is_ready(&self) -> bool {
        self.prune_failures.is_empty() && self.components.iter().all(|(_, r)| matches!(r, Some(ComponentResult::Ready { .. })))
    }

    /// The failures, in plan order.
    #[must_use]
    pub fn failures(&self) -> Vec<&Failure> {
        self.components.iter().filter_map(|(_, r)| if let Some(ComponentResult::Failed(f)) = r { Some(f) } else { None }).collect()
    }
}

/// The default timeout of a component: the longest of its objects' defaults. A Flux
/// HelmRelease gets its own `spec.timeout`, else 5 minutes (the operator release's default timeout); a Job
/// its `activeDeadlineSeconds`, else 10 minutes; operator-managed data services (CNPG, MinIO,
/// RabbitMQ) 10 minutes; everything else 5 minutes.
///
/// # Errors
///
/// A `spec.timeout` that is not a duration of the spec grammar ([`crate::spec::duration::parse`],
/// what Flux's CRD accepts) or an `activeDeadlineSeconds` that is not a positive integer:
/// `(object, field, value, problem)`. It is never replaced by a default.
pub fn default_timeout(objects: &[Value]) -> std::result::Result<Duration, (String, &'static str, String, String)> {
    const FIVE_MINUTES: Duration = Duration::from_secs(300);
    const TEN_MINUTES: Duration = Duration::from_secs(600);
    let mut longest = FIVE_MINUTES;
    for object in objects {
        let reference = ObjectId::of(object);
        let bad = |field, value: &Value, problem: String| (reference.to_string(), field, value.to_string(), problem);
        let timeout = match (wait::group_of(&reference.api_version), reference.kind.as_str()) {
            ("helm.toolkit.fluxcd.io", "HelmRelease") => match object.pointer("/spec/timeout") {
                None | Some(Value::Null) => FIVE_MINUTES,
                Some(Value::String(text)) => crate::spec::duration::parse(text).map_err(|error| {
                    let better = crate::spec::duration::suggest(text).map(|b| format!("; write `{b}`")).unwrap_or_default();
                    bad("spec.timeout", &Value::from(text.as_str()), format!("which is not a duration: {error}{better}"))
                })?,
                Some(other) => return Err(bad("spec.timeout", other, "which is not a duration such as `5m`".to_owned())),
            },
            ("batch", "Job") => match object.pointer("/spec/activeDeadlineSeconds") {
                None | Some(Value::Null) => TEN_MINUTES,
                Some(value) => match value.as_u64() {
                    Some(seconds) if seconds > 0 => Duration::from_secs(seconds),
                    _ => return Err(bad("spec.activeDeadlineSeconds", value, "which is not a positive number of seconds".to_owned())),
                },
            },
            ("postgresql.cnpg.io", "Cluster") | ("minio.min.io", "Tenant") | ("rabbitmq.com", "RabbitmqCluster") => TEN_MINUTES,
            _ => FIVE_MINUTES,
        };
        longest = longest.max(timeout);
    }
    Ok(longest)
}

/// The timeout of every component of `rollout`: `--timeout`, else its [`default_timeout`].
///
/// # Errors
///
/// [`Error::Timeout`] for the first object whose own timeout cannot be read, even under
/// `--timeout` (the object is broken either way: Flux's CRD refuses such a `spec.timeout`).
pub fn component_timeouts(rollout: &Rollout, options: &Options) -> Result<Vec<Duration>> {
    rollout
        .plan
        .components
        .iter()
        .enumerate()
        .map(|(index, component)| {
            let objects = rollout.objects.get(index).map_or(&[][..], Vec::as_slice);
            let own = default_timeout(objects).map_err(|(object, field, value, problem)| Error::Timeout {
                component: component.id.clone(),
                object,
                field,
                value,
                problem,
            })?;
            Ok(options.timeout.unwrap_or(own))
        })
        .collect()
}

/// Parses a duration given on the command line: the spec grammar
/// ([`crate::spec::duration::parse`]: `90s`, `5m`, `1h30m`, `1.5h`, `250ms`), and `0`.
///
/// # Errors
///
/// A message naming what is wrong, and what to write instead when it can tell (`1d`: `24h`).
pub fn parse_duration(text: &str) -> std::result::Result<Duration, String> {
    let text = text.trim();
    if text == "0" {
        return Ok(Duration::ZERO);
    }
    crate::spec::duration::parse(text).map_err(|error| {
        let better = crate::spec::duration::suggest(text).map(|b| format!("; write `{b}`")).unwrap_or_default();
        format!("`{text}`: {error}{better}")
    })
}

/// Formats a duration the way [`parse_duration`] reads it (`1m30s`, `250ms`).
#[must_use]
pub fn format_duration(duration: Duration) -> String {
    let millis = duration.as_millis();
    if millis < 1000 {
        return format!("{millis}ms");
    }
    let seconds = duration.as_secs();
    let (hours, minutes, seconds) = (seconds / 3600, seconds / 60 % 60, seconds % 60);
    let mut text = String::new();
    if hours > 0 {
        text.push_str(&format!("{hours}h"));
    }
    if minutes > 0 {
        text.push_str(&format!("{minutes}m"));
    }
    if seconds > 0 || text.is_empty() {
        if hours == 0 && minutes == 0 && !millis.is_multiple_of(1000) {
            text.push_str(&format!("{:.1}s", duration.as_secs_f64()));
        } else {
            text.push_str(&format!("{seconds}s"));
        }
    }
    text
}

/// Rolls `rollout` out to `target` (see the module docs), calling `progress` for every event.
///
/// # Errors
///
/// [`Error::Graph`] for a plan that cannot be scheduled, [`Error::Connect`] when the API server
/// does not answer at the start. Component failures are in the [`Outcome`].
pub async fn reconcile(target: &Target, rollout: &Rollout, options: &Options, progress: &(dyn Fn(&Event) + Sync)) -> Result<Outcome> {
    let started = Instant::now();
    let graph = Graph::new(&rollout.plan)?;
    let timeouts = component_timeouts(rollout, options)?;
    target.check().await.map_err(Error::Connect)?;
    let total = graph.len();
    let mut schedule = Schedule::new(&graph);
    let mut results: Vec<Option<ComponentResult>> = vec![None; total];
    let mut steps = vec![0usize; total];
    let mut next_step = 1;
    let context = Context::new(rollout);
    let mut running = FuturesUnordered::new();
    loop {
        while running.len() < options.concurrency.max(1) {
            let Some(node) = schedule.start_next() else { break };
            steps[node] = next_step;
            next_step += 1;
            let id = graph.ids[node].clone();
            let event =
                |status, elapsed, detail: String| Event { step: steps[node], total, component: id.clone(), status, elapsed, detail };
            progress(&event(Status::Running, Duration::ZERO, String::new()));
            let objects = &rollout.objects[node];
            let timeout = timeouts[node];
            let step = steps[node];
            let component = id.clone();
            let context = &context;
            running.push(async move {
                let begun = Instant::now();
                let report = |status, detail: String| {
                    progress(&Event { step, total, component: component.clone(), status, elapsed: begun.elapsed(), detail });
                };
                let result = run_component(target, context, &component, objects, options, begun + timeout, timeout, &report).await;
                (node, begun.elapsed(), result)
            });
        }
        let Some((node, elapsed, result)) = running.next().await else { break };
        let id = &graph.ids[node];
        let event = |step, status, elapsed, detail: String| Event { step, total, component: id.clone(), status, elapsed, detail };
        match result {
            Ok(changes) => {
                schedule.ready(node);
                progress(&event(steps[node], Status::Ready, elapsed, summary(changes, options.mode)));
                results[node] = Some(ComponentResult::Ready { elapsed, changes });
            }
            Err(failure) => {
                progress(&event(steps[node], Status::Failed, elapsed, failure.headline()));
                results[node] = Some(ComponentResult::Failed(failure));
                for blocked in schedule.fail(node) {
                    steps[blocked] = next_step;
                    next_step += 1;
                    let blocked_id = graph.ids[blocked].clone();
                    progress(&Event {
                        step: steps[blocked],
                        total,
                        component: blocked_id,
                        status: Status::Skipped,
                        elapsed: Duration::ZERO,
                        detail: format!("dependency `{id}` failed"),
                    });
                    results[blocked] = Some(ComponentResult::Skipped { dependency: id.clone() });
                }
            }
        }
    }
    let mut outcome = Outcome {
        components: graph.ids.iter().cloned().zip(results).collect(),
        pruned: Vec::new(),
        prune_failures: Vec::new(),
        elapsed: Duration::ZERO,
    };
    if options.prune && options.mode == Mode::Apply && outcome.is_ready() {
        prune(target, rollout, &graph, options, &mut outcome).await;
    }
    outcome.elapsed = started.elapsed();
    Ok(outcome)
}

fn summary(changes: [usize; 3], mode: Mode) -> String {
    let [created, configured, unchanged] = changes;
    match mode {
        Mode::VerifyOnly => String::new(),
        Mode::Apply => format!("{created} created, {configured} configured, {unchanged} unchanged"),
        Mode::DryRun => format!("dry run: {created} would be created, {configured} configured, {unchanged} unchanged"),
    }
}

/// What the whole plan creates, for dry runs (a CR whose CRD or a namespace the plan creates,
/// directly or through a HelmRelease's `install.createNamespace`, cannot be dry-run before they
/// exist).
struct Context {
    planned_kinds: BTreeSet<(String, String)>,
    planned_namespaces: BTreeSet<String>,
}

impl Context {
    fn new(rollout: &Rollout) -> Self {
        let mut planned_kinds = BTreeSet::new();
        let mut planned_namespaces = BTreeSet::new();
        for object in rollout.objects.iter().flatten() {
            let reference = ObjectId::of(object);
            match (wait::group_of(&reference.api_version), reference.kind.as_str()) {
                ("apiextensions.k8s.io", "CustomResourceDefinition") => {
                    let group = object.pointer("/spec/group").and_then(Value::as_str).unwrap_or("");
                    let kind = object.pointer("/spec/names/kind").and_then(Value::as_str).unwrap_or("");
                    planned_kinds.insert((group.to_owned(), kind.to_owned()));
                }
                ("", "Namespace") => {
                    planned_namespaces.insert(reference.name);
                }
                // NB: a Flux HelmRelease with `install.createNamespace` creates its target
                // namespace when it installs (cert-manager, istio-system in the demo).
                ("helm.toolkit.fluxcd.io", "HelmRelease")
                    if object.pointer("/spec/install/createNamespace").and_then(Value::as_bool) == Some(true) =>
                {
                    if let Some(namespace) = object.pointer("/spec/targetNamespace").and_then(Value::as_str) {
                        planned_namespaces.insert(namespace.to_owned());
                    }
                }
                _ => {}
            }
        }
        Context { planned_kinds, planned_namespaces }
    }

    /// Whether a dry-run refusal is only because the plan has not created something yet.
    fn awaits_plan(&self, reference: &ObjectId, cause: &Cause) -> bool {
        match cause {
            Cause::NotServed { .. } => {
                self.planned_kinds.contains(&(wait::group_of(&reference.api_version).to_owned(), reference.kind.clone()))
            }
            Cause::Status { code: 404, .. } => reference.namespace().is_some_and(|n| self.planned_namespaces.contains(n)),
            _ => false,
        }
    }
}

#[allow(clippy::too_many_arguments)]
async fn run_component(
    target: &Target,
    context: &Context,
    component: &str,
    objects: &[Value],
    options: &Options,
    deadline: Instant,
    timeout: Duration,
    report: &(dyn Fn(Status, String) + Sync),
) -> std::result::Result<[usize; 3], Failure> {
    let api_failure = |object: &Value, cause: Cause| {
        let object = ObjectId::of(object).to_string();
        // NB: a transient error that outlived the deadline is the component timing out (exit 1),
        // not the API server being unreachable.
        if cause.is_transient() && Instant::now() >= deadline {
            let unready = vec![Unready { object, reason: format!("not applied: {cause}"), conditions: Vec::new() }];
            return Failure { component: component.to_owned(), reason: Reason::TimedOut(timeout), unready };
        }
        Failure { component: component.to_owned(), reason: Reason::Api { object, cause }, unready: Vec::new() }
    };
    let mut sorted: Vec<&Value> = objects.iter().collect();
    sorted.sort_by_key(|o| {
        let reference = ObjectId::of(o);
        order::object_rank(&reference.api_version, &reference.kind)
    });
    let split = sorted.iter().position(|o| {
        let reference = ObjectId::of(o);
        order::object_rank(&reference.api_version, &reference.kind) == 2
    });
    let (first, rest) = sorted.split_at(split.unwrap_or(sorted.len()));
    let mut changes = [0usize; 3];
    match options.mode {
        Mode::VerifyOnly => {}
        Mode::DryRun => {
            for object in &sorted {
                match target.apply(object, options.force_conflicts, true, deadline).await {
                    Ok((_, change)) => changes[change as usize] += 1,
                    Err(cause) if context.awaits_plan(&ObjectId::of(object), &cause) => changes[Change::Created as usize] += 1,
                    Err(cause) => return Err(api_failure(object, cause)),
                }
            }
            return Ok(changes);
        }
        Mode::Apply => {
            for object in first {
                let (_, change) =
                    target.apply(object, options.force_conflicts, false, deadline).await.map_err(|c| api_failure(object, c))?;
                changes[change as usize] += 1;
            }
            if !first.is_empty() && !rest.is_empty() {
                report(Status::Waiting, "CustomResourceDefinitions and Namespaces".into());
                wait_ready(target, component, first, options, deadline, timeout, report).await?;
            }
            for object in rest {
                let (_, change) =
                    target.apply(object, options.force_conflicts, false, deadline).await.map_err(|c| api_failure(object, c))?;
                changes[change as usize] += 1;
            }
        }
    }
    wait_ready(target, component, &sorted, options, deadline, timeout, report).await?;
    Ok(changes)
}

/// Polls `objects` until all are ready, one fails for good, or `deadline` passes.
async fn wait_ready(
    target: &Target,
    component: &str,
    objects: &[&Value],
    options: &Options,
    deadline: Instant,
    timeout: Duration,
    report: &(dyn Fn(Status, String) + Sync),
) -> std::result::Result<(), Failure> {
    let references: Vec<ObjectId> = objects.iter().map(|o| ObjectId::of(o)).collect();
    let mut last: Vec<(Readiness, Vec<String>)> = vec![(Readiness::InProgress("not checked yet".into()), Vec::new()); objects.len()];
    let waiting_since = Instant::now();
    let mut shown = String::new();
    loop {
        for (i, reference) in references.iter().enumerate() {
            if last[i].0.is_ready() {
                continue;
            }
            match target.get(reference, deadline).await {
                Ok(Some(live)) => last[i] = (wait::readiness(&live), wait::conditions(&live)),
                Ok(None) => last[i] = (Readiness::InProgress("not found".into()), Vec::new()),
                // NB: a read that keeps failing transiently (retries spent, or the deadline hit
                // during a slow answer) is not the component's failure yet: the object keeps its
                // last verdict, with the error, and the deadline decides.
                Err(cause) if cause.is_transient() => {
                    let conditions = std::mem::take(&mut last[i].1);
                    last[i] = (Readiness::InProgress(format!("last read failed: {cause}")), conditions);
                }
                Err(cause) => {
                    return Err(Failure {
                        component: component.to_owned(),
                        reason: Reason::Api { object: reference.to_string(), cause },
                        unready: Vec::new(),
                    });
                }
            }
        }
        let unready = |only_failed: bool| -> Vec<Unready> {
            references
                .iter()
                .zip(&last)
                .filter_map(|(reference, (readiness, conditions))| match readiness {
                    Readiness::Failed(reason) => {
                        Some(Unready { object: reference.to_string(), reason: reason.clone(), conditions: conditions.clone() })
                    }
                    Readiness::InProgress(reason) if !only_failed => {
                        Some(Unready { object: reference.to_string(), reason: reason.clone(), conditions: conditions.clone() })
                    }
                    _ => None,
                })
                .collect()
        };
        let failed = unready(true);
        if !failed.is_empty() {
            return Err(Failure { component: component.to_owned(), reason: Reason::Terminal, unready: failed });
        }
        let waiting = unready(false);
        let Some(first) = waiting.first() else { return Ok(()) };
        if Instant::now() >= deadline {
            return Err(Failure { component: component.to_owned(), reason: Reason::TimedOut(timeout), unready: waiting });
        }
        let detail = format!("`{}`: {}", first.object, first.reason);
        if detail != shown {
            report(Status::Waiting, detail.clone());
            shown = detail;
        }
        // NB: the pause grows with the time already waited (a tenth of it, 50 ms at least), so
        // noticing readiness late costs at most about 10% of a component's duration, without
        // hammering the API server during long waits.
        let pause = (waiting_since.elapsed() / 10).clamp(Duration::from_millis(50), options.poll_interval.max(Duration::from_millis(50)));
        let left = deadline.saturating_duration_since(Instant::now());
        tokio::time::sleep(pause.min(left)).await;
    }
}

async fn prune(target: &Target, rollout: &Rollout, graph: &Graph, options: &Options, outcome: &mut Outcome) {
    let deadline = Instant::now() + options.timeout.unwrap_or(Duration::from_secs(300));
    let selector = format!("app.kubernetes.io/managed-by=tfrs,tfrs.turingfocus.cn/cluster={}", rollout.plan.cluster);
    let keep: BTreeSet<(String, String, Option<String>, String)> = rollout
        .objects
        .iter()
        .flatten()
        .map(|o| {
            let r = ObjectId::of(o);
            (wait::group_of(&r.api_version).to_owned(), r.kind.clone(), r.namespace().map(str::to_owned), r.name.clone())
        })
        .collect();
    let live = match target.list_labelled(&selector, deadline).await {
        Ok(live) => live,
        Err(cause) => {
            outcome.prune_failures.push(format!("listing labelled objects failed: {cause}"));
            return;
        }
    };
    let _ = graph;
    let mut doomed: Vec<ObjectId> = live
        .iter()
        .map(ObjectId::of)
        .filter(|r| {
            !keep.contains(&(wait::group_of(&r.api_version).to_owned(), r.kind.clone(), r.namespace().map(str::to_owned), r.name.clone()))
        })
        .collect();
    // NB: the reverse of the apply order: custom resources and workloads, then Namespaces,
    // then CustomResourceDefinitions, so nothing is deleted under an object still using it.
    doomed.sort_by_key(|r| std::cmp::Reverse(order::object_rank(&r.api_version, &r.kind)));
    doomed.dedup();
    for reference in doomed {
        match target.delete(&reference, deadline).await {
            Ok(()) => outcome.pruned.push(reference.to_string()),
            Err(cause) => outcome.prune_failures.push(format!("`{}`: delete failed: {cause}", reference)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_duration("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        assert!(parse_duration("5").expect_err("no unit").contains("a unit is required"));
        assert_eq!(parse_duration("5d"), Err("`5d`: unknown unit `d` (expected `ms`, `s`, `m` or `h`); write `120h`".to_owned()));
        assert!(parse_duration("").is_err());
        // The spec grammar, as Flux's CRD has it: no leading `.`, no sign, no `µs`.
        assert!(parse_duration(".5s").is_err() && parse_duration("-5m").is_err() && parse_duration("5µs").is_err());
        assert_eq!(format_duration(Duration::from_secs(90)), "1m30s");
        assert_eq!(format_duration(Duration::from_millis(250)), "250ms");
        assert_eq!(format_duration(Duration::from_millis(2500)), "2.5s");
        assert_eq!(format_duration(Duration::from_secs(300)), "5m");
    }

    #[test]
    fn default_timeouts_per_kind() {
        let release = json!({"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease", "metadata": {"name": "tfrs-operator"}});
        assert_eq!(default_timeout(std::slice::from_ref(&release)), Ok(Duration::from_secs(300)));
        let mut slow = release;
        slow["spec"] = json!({"timeout": "15m"});
        assert_eq!(default_timeout(&[slow]), Ok(Duration::from_secs(900)));
        let job = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "init"}});
        let map = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}});
        assert_eq!(default_timeout(&[map.clone(), job]), Ok(Duration::from_secs(600)));
        assert_eq!(default_timeout(&[map]), Ok(Duration::from_secs(300)));
    }

    #[test]
    fn unreadable_timeouts_are_errors_not_defaults() {
        let release = |timeout: Value| json!({"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease", "metadata": {"name": "op", "namespace": "flux-system"}, "spec": {"timeout": timeout}});
        let (object, field, value, problem) = default_timeout(&[release(json!("1d"))]).expect_err("days are not a Go duration");
        assert_eq!((object.as_str(), field, value.as_str()), ("HelmRelease/flux-system/op", "spec.timeout", "\"1d\""));
        assert_eq!(problem, "which is not a duration: unknown unit `d` (expected `ms`, `s`, `m` or `h`); write `24h`");
        assert!(default_timeout(&[release(json!("5 minutes"))]).is_err());
        assert!(default_timeout(&[release(json!("0"))]).is_err(), "Flux refuses a bare 0");
        assert!(default_timeout(&[release(json!(300))]).is_err());
        assert_eq!(default_timeout(&[release(json!("1.5h"))]), Ok(Duration::from_secs(5400)));
        let job = |deadline: Value| json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "init", "namespace": "ns"}, "spec": {"activeDeadlineSeconds": deadline}});
        assert_eq!(default_timeout(&[job(json!(900))]), Ok(Duration::from_secs(900)));
        assert!(default_timeout(&[job(json!("900"))]).is_err());
        assert!(default_timeout(&[job(json!(0))]).is_err());
    }

    #[tokio::test]
    async fn an_unreadable_timeout_stops_reconcile_before_any_request() {
        let plan = crate::tree::Plan::parse(
            br#"{"cluster": "c", "components": [{"id": "cluster/tfrs-operator", "objects": [
                {"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease", "namespace": "flux-system", "name": "op", "file": "op.yaml"}]}]}"#,
        )
        .expect("plan");
        let release = json!({"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease", "metadata": {"name": "op", "namespace": "flux-system"}, "spec": {"timeout": "1d"}});
        let rollout = Rollout { plan, objects: vec![vec![release]] };
        // NB: nothing listens on port 9 of 127.0.0.1: a request would be a connection error.
        let config = kube::Config::new("http://127.0.0.1:9".parse().expect("url"));
        let target = Target::new(kube::Client::try_from(config).expect("client"));
        let error = reconcile(&target, &rollout, &Options::default(), &|_| {}).await.expect_err("a bad timeout");
        assert_eq!(
            error.to_string(),
            "component `cluster/tfrs-operator`: `HelmRelease/flux-system/op` has `spec.timeout: \"1d\"`, which is not a duration: unknown unit `d` (expected `ms`, `s`, `m` or `h`); write `24h`"
        );
        // `--timeout` does not hide it: Flux's CRD refuses the object anyway.
        let options = Options { timeout: Some(Duration::from_secs(60)), ..Options::default() };
        assert!(matches!(component_timeouts(&rollout, &options), Err(Error::Timeout { .. })));
    }

    #[test]
    fn failure_report_names_component_objects_and_conditions() {
        let failure = Failure {
            component: "cluster/cnpg-operator".into(),
            reason: Reason::TimedOut(Duration::from_secs(90)),
            unready: vec![Unready {
                object: "HelmRelease/flux-system/cnpg".into(),
                reason: "Ready=False (InstallFailed): timed out".into(),
                conditions: vec!["Ready=False (InstallFailed): timed out".into()],
            }],
        };
        assert_eq!(
            failure.to_string(),
            "component `cluster/cnpg-operator` timed out after 1m30s: 1 object not ready\n  `HelmRelease/flux-system/cnpg`: Ready=False (InstallFailed): timed out\n    Ready=False (InstallFailed): timed out"
        );
    }
}
