//! Rolls a rendered plan out to a cluster: server-side apply, readiness, dependency scheduling.
//!
//! [`reconcile`] starts each component as soon as every dependency is ready (never wave by
//! wave); at most [`Options::concurrency`] requests are in flight, those of the component with
//! the longest remaining chain first ([`order::Schedule`], `limit`). Inside a component,
//! CustomResourceDefinitions and Namespaces are applied first and awaited, then the rest; then
//! every object is followed until [`wait::readiness`] says ready, a terminal failure shows, or
//! the component's timeout passes.
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
//! - Readiness comes from one watch per kind (`observe`); where a kind cannot be watched (no
//!   list or watch permission cluster-wide, a server that serves no watches), it is polled.
//! - Pruning deletes objects labelled `app.kubernetes.io/managed-by=tfrs` and
//!   `tfrs.turingfocus.cn/cluster=<cluster>` that the plan no longer has, only after a rollout
//!   in which every component became ready; never the GitOps entry points
//!   ([`prune::owned_selector`]).
//!
//! # Where things live
//!
//! - this module: the entry point [`reconcile`], its [`Options`] and [`Error`];
//! - `scheduler`: the loop that starts components as their dependencies become ready;
//! - `component`: one component's apply and readiness wait;
//! - `dry_run`: which dry-run refusals only mean the plan creates a kind or namespace first;
//! - `prune`: deleting what the plan no longer has;
//! - `limit`: the bound on requests in flight, served by priority;
//! - `observe`: readiness from one watch per kind;
//! - `once`: readiness checked once from objects already read;
//! - `outcome`: progress events, results and failure reports;
//! - `timeout`: component timeouts and the duration syntax of the command line;
//! - [`apply`] (requests to the API server), [`order`] (the dependency graph), [`rollout`] (the
//!   plan and its objects) and [`wait`] (readiness of one object).

pub mod apply;
mod component;
mod dry_run;
mod limit;
mod observe;
mod once;
pub mod order;
mod outcome;
pub mod prune;
pub mod rollout;
mod scheduler;
mod timeout;
pub mod wait;

pub use once::readiness_once;
pub use outcome::{ComponentResult, Event, Failure, Outcome, Reason, Status, Unready};
pub use timeout::{component_timeouts, default_timeout, format_duration, parse_duration};

use apply::{Cause, Target};
use order::Graph;
use prune::prune;
use rollout::Rollout;
use std::time::Duration;
use tokio::time::Instant;

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
    /// Requests to the API server in flight at once (at least 1); every component whose
    /// dependencies are ready runs, and a waiting one holds none.
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

/// Rolls `rollout` out to `target` (see the module docs), calling `progress` for every event.
///
/// In turn: the checks that need no component to run (the graph, every timeout, the API server
/// answering), the components themselves (`scheduler`), then `--prune` if everything is ready.
///
/// # Errors
///
/// [`Error::Graph`] for a plan that cannot be scheduled, [`Error::Timeout`] for an object whose
/// own timeout cannot be read, [`Error::Connect`] when the API server does not answer at the
/// start. Component failures are in the [`Outcome`].
pub async fn reconcile(target: &Target, rollout: &Rollout, options: &Options, progress: &(dyn Fn(&Event) + Sync)) -> Result<Outcome> {
    let started = Instant::now();
    let graph = Graph::new(&rollout.plan)?;
    let timeouts = component_timeouts(rollout, options)?;
    target.check().await.map_err(Error::Connect)?;
    let results = scheduler::run(target, rollout, &graph, &timeouts, options, progress).await;
    let mut outcome = Outcome {
        components: graph.ids.iter().cloned().zip(results).collect(),
        pruned: Vec::new(),
        prune_failures: Vec::new(),
        elapsed: Duration::ZERO,
    };
    if options.prune && options.mode == Mode::Apply && outcome.is_ready() {
        prune(target, rollout, options, &mut outcome).await;
    }
    outcome.elapsed = started.elapsed();
    Ok(outcome)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
}
