//! The scheduling loop: starts each component once its dependencies are ready (every one that
//! may start, at once: what is bounded is their requests, [`super::limit`]), numbers the steps,
//! reports progress and records each component's result (a failed one's dependents are skipped).

use super::apply::Target;
use super::component::Component;
use super::dry_run::Context;
use super::limit::{Budget, Limiter};
use super::observe::Observer;
use super::order::{Graph, Schedule};
use super::rollout::Rollout;
use super::{ComponentResult, Event, Failure, Mode, Options, Status};
use futures::StreamExt;
use futures::stream::FuturesUnordered;
use std::time::Duration;
use tokio::time::Instant;

/// Runs every component of `rollout`, calling `progress` for every event; returns each
/// component's result, in plan order (`None` for one that never ended).
pub(super) async fn run(
    target: &Target,
    rollout: &Rollout,
    graph: &Graph,
    timeouts: &[Duration],
    options: &Options,
    progress: &(dyn Fn(&Event) + Sync),
) -> Vec<Option<ComponentResult>> {
    let context = Context::new(rollout);
    let observer = Observer::new(super::prune::owned_selector(&rollout.plan.cluster));
    let limiter = Limiter::new(options.concurrency);
    if options.mode != super::Mode::DryRun {
        observer.prepare(target, rollout).await;
    }
    let mut scheduler = Scheduler::new(graph, options.mode, progress);
    let mut running = FuturesUnordered::new();
    loop {
        while let Some((node, step)) = scheduler.start_next() {
            let (component, objects, timeout, total) = (graph.ids[node].clone(), &rollout.objects[node], timeouts[node], scheduler.total);
            let (context, observer) = (&context, &observer);
            let budget = Budget { limiter: limiter.clone(), priority: graph.chain[node] };
            running.push(budget.scope(async move {
                let begun = Instant::now();
                let report = |status, detail: String| {
                    progress(&Event { step, total, component: component.clone(), status, elapsed: begun.elapsed(), detail });
                };
                let deadline = begun + timeout;
                let run = Component { target, context, observer, options, id: &component, deadline, timeout, report: &report };
                let result = run.run(objects).await;
                (node, begun.elapsed(), result)
            }));
        }
        let Some((node, elapsed, result)) = running.next().await else { break };
        scheduler.finish(node, elapsed, result);
    }
    scheduler.results
}

/// The state of a run: which components may start, their step numbers and their results.
struct Scheduler<'a> {
    schedule: Schedule<'a>,
    ids: &'a [String],
    total: usize,
    mode: Mode,
    progress: &'a (dyn Fn(&Event) + Sync),
    /// Each component's step number (0 until it starts or is skipped).
    steps: Vec<usize>,
    next_step: usize,
    results: Vec<Option<ComponentResult>>,
}

impl<'a> Scheduler<'a> {
    fn new(graph: &'a Graph, mode: Mode, progress: &'a (dyn Fn(&Event) + Sync)) -> Self {
        let total = graph.len();
        Scheduler {
            schedule: Schedule::new(graph),
            ids: &graph.ids,
            total,
            mode,
            progress,
            steps: vec![0; total],
            next_step: 1,
            results: vec![None; total],
        }
    }

    /// The next component that may start, with its step number, reported as running.
    fn start_next(&mut self) -> Option<(usize, usize)> {
        let node = self.schedule.start_next()?;
        let step = self.number(node);
        self.report(node, Status::Running, Duration::ZERO, String::new());
        Some((node, step))
    }

    /// Records how a component ended; a failure skips every component downstream of it.
    fn finish(&mut self, node: usize, elapsed: Duration, result: Result<[usize; 3], Failure>) {
        match result {
            Ok(changes) => {
                self.schedule.ready(node);
                self.report(node, Status::Ready, elapsed, summary(changes, self.mode));
                self.results[node] = Some(ComponentResult::Ready { elapsed, changes });
            }
            Err(failure) => {
                self.report(node, Status::Failed, elapsed, failure.headline());
                self.results[node] = Some(ComponentResult::Failed(failure));
                for blocked in self.schedule.fail(node) {
                    self.skip(blocked, node);
                }
            }
        }
    }

    /// `blocked` never starts because its dependency `failed` failed.
    fn skip(&mut self, blocked: usize, failed: usize) {
        self.number(blocked);
        let dependency = self.ids[failed].clone();
        self.report(blocked, Status::Skipped, Duration::ZERO, format!("dependency `{dependency}` failed"));
        self.results[blocked] = Some(ComponentResult::Skipped { dependency });
    }

    /// Gives a component the next step number (in start order; skipped ones get the next free).
    fn number(&mut self, node: usize) -> usize {
        self.steps[node] = self.next_step;
        self.next_step += 1;
        self.steps[node]
    }

    fn report(&self, node: usize, status: Status, elapsed: Duration, detail: String) {
        let event = Event { step: self.steps[node], total: self.total, component: self.ids[node].clone(), status, elapsed, detail };
        (self.progress)(&event);
    }
}

/// The detail of a ready component's event: what changed.
fn summary(changes: [usize; 3], mode: Mode) -> String {
    let [created, configured, unchanged] = changes;
    match mode {
        Mode::VerifyOnly => String::new(),
        Mode::Apply => format!("{created} created, {configured} configured, {unchanged} unchanged"),
        Mode::DryRun => format!("dry run: {created} would be created, {configured} configured, {unchanged} unchanged"),
    }
}
