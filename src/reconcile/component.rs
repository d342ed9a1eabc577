//! One component's run: apply its objects (CustomResourceDefinitions and Namespaces first, and
//! awaited before the rest), then wait until they are ready, failed for good, or past the
//! deadline. An object the apply's answer already shows ready is not waited on; the others are
//! followed through the rollout's watches ([`Observer`]), or read when no watch can answer.

use super::apply::{Cause, Change, Target};
use super::dry_run::Context;
use super::observe::{Observer, Seen, Since, Verdict};
use super::wait::{self, Readiness};
use super::{Failure, Mode, Options, Reason, Status, Unready, order};
use crate::object::ObjectId;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;
use tokio::time::Instant;

/// The verdict of an object no one has looked at yet.
const NOT_CHECKED: &str = "not checked yet";

/// One component being rolled out: where, under which options, until when, reporting how.
pub(super) struct Component<'a> {
    /// The cluster.
    pub(super) target: &'a Target,
    /// What the plan creates, for dry runs.
    pub(super) context: &'a Context,
    /// The rollout's watches.
    pub(super) observer: &'a Observer,
    /// The options of the whole rollout.
    pub(super) options: &'a Options,
    /// The component id.
    pub(super) id: &'a str,
    /// When the component times out.
    pub(super) deadline: Instant,
    /// Its timeout (for reports).
    pub(super) timeout: Duration,
    /// Reports progress (waiting for what).
    pub(super) report: &'a (dyn Fn(Status, String) + Sync),
}

impl Component<'_> {
    /// Applies (or dry-runs, or only reads) `objects` as [`Options::mode`] says, then waits until
    /// they are ready (not in a dry run). Returns the objects created, configured and unchanged.
    pub(super) async fn run(&self, objects: &[Value]) -> Result<[usize; 3], Failure> {
        let sorted = in_apply_order(objects);
        let (changes, answers) = match self.options.mode {
            Mode::VerifyOnly => ([0; 3], Vec::new()),
            Mode::DryRun => return self.dry_run(&sorted).await,
            Mode::Apply => self.apply_in_order(&sorted).await?,
        };
        self.wait_ready(&sorted, &answers).await?;
        Ok(changes)
    }

    /// Dry-runs every object; a refusal only because the plan has not created a kind or a
    /// namespace yet counts as created.
    async fn dry_run(&self, sorted: &[&Value]) -> Result<[usize; 3], Failure> {
        let mut changes = [0usize; 3];
        for object in sorted {
            match self.target.apply(object, self.options.force_conflicts, true, self.deadline).await {
                Ok((_, change)) => changes[change as usize] += 1,
                Err(cause) if self.context.awaits_plan(&ObjectId::of(object), &cause) => changes[Change::Created as usize] += 1,
                Err(cause) => return Err(self.api_failure(object, cause)),
            }
        }
        Ok(changes)
    }

    /// Applies the CustomResourceDefinitions and Namespaces, waits for them when other objects
    /// follow, then applies the rest. Returns the changes and the server's answers, in order.
    async fn apply_in_order(&self, sorted: &[&Value]) -> Result<([usize; 3], Vec<Value>), Failure> {
        let split = sorted.iter().position(|o| rank(o) == 2);
        let (first, rest) = sorted.split_at(split.unwrap_or(sorted.len()));
        let mut changes = [0usize; 3];
        let mut answers = Vec::with_capacity(sorted.len());
        self.apply(first, &mut changes, &mut answers).await?;
        if !first.is_empty() && !rest.is_empty() {
            (self.report)(Status::Waiting, "CustomResourceDefinitions and Namespaces".into());
            self.wait_ready(first, &answers).await?;
        }
        self.apply(rest, &mut changes, &mut answers).await?;
        Ok((changes, answers))
    }

    /// Applies `objects` all at once (the rollout bounds the requests in flight), counting each
    /// change and keeping the server's answers in order; the first refusal, in order, fails the
    /// component.
    async fn apply(&self, objects: &[&Value], changes: &mut [usize; 3], answers: &mut Vec<Value>) -> Result<(), Failure> {
        let applied = futures::future::join_all(objects.iter().map(|object| {
            let before = self.observer.before(self.target, &ObjectId::of(object));
            self.target.apply_after(object, self.options.force_conflicts, false, before, self.deadline)
        }))
        .await;
        for (object, result) in objects.iter().zip(applied) {
            let (answer, change) = result.map_err(|c| self.api_failure(object, c))?;
            changes[change as usize] += 1;
            answers.push(answer);
        }
        Ok(())
    }

    /// The failure for a request about `object` that failed with `cause`.
    fn api_failure(&self, object: &Value, cause: Cause) -> Failure {
        let object = ObjectId::of(object).to_string();
        // NB: a transient error that outlived the deadline is the component timing out (exit 1),
        // not the API server being unreachable.
        if cause.is_transient() && Instant::now() >= self.deadline {
            let unready = vec![Unready { object, reason: format!("not applied: {cause}"), conditions: Vec::new() }];
            return Failure { component: self.id.to_owned(), reason: Reason::TimedOut(self.timeout), unready };
        }
        Failure { component: self.id.to_owned(), reason: Reason::Api { object, cause }, unready: Vec::new() }
    }

    /// Waits until `objects` are all ready, one fails for good, or the deadline passes.
    /// `answers` are the server's answers to applying them (empty when nothing was applied):
    /// the first verdicts, and the versions a watched verdict must be at least as new as.
    async fn wait_ready(&self, objects: &[&Value], answers: &[Value]) -> Result<(), Failure> {
        let references: Vec<ObjectId> = objects.iter().map(|o| ObjectId::of(o)).collect();
        let (mut last, since): (Vec<Verdict>, Vec<Since>) = if answers.len() >= objects.len() {
            answers.iter().map(|a| ((wait::readiness(a), wait::conditions(a)), Since::of(a))).unzip()
        } else {
            (0..objects.len()).map(|_| ((Readiness::InProgress(NOT_CHECKED.into()), Vec::new()), Since::any())).unzip()
        };
        let bell = Arc::new(Notify::new());
        let mut followed = vec![false; objects.len()];
        let waiting_since = Instant::now();
        let mut shown = String::new();
        loop {
            let watched = self.read_unready(&references, &since, &mut last, &bell, &mut followed).await?;
            let failed = unready(&references, &last, true);
            if !failed.is_empty() {
                return Err(Failure { component: self.id.to_owned(), reason: Reason::Terminal, unready: failed });
            }
            let waiting = unready(&references, &last, false);
            let Some(first) = waiting.first() else { return Ok(()) };
            if Instant::now() >= self.deadline {
                return Err(Failure { component: self.id.to_owned(), reason: Reason::TimedOut(self.timeout), unready: waiting });
            }
            let detail = format!("`{}`: {}", first.object, first.reason);
            if detail != shown {
                (self.report)(Status::Waiting, detail.clone());
                shown = detail;
            }
            // NB: when the watches answer for every object, a change rings the bell; the pause
            // is only a safety net.
            let pause = if watched { self.options.poll_interval } else { pause(waiting_since, self.options.poll_interval) };
            let left = self.deadline.saturating_duration_since(Instant::now());
            let _ = tokio::time::timeout(pause.min(left), bell.notified()).await;
        }
    }

    /// Updates the verdict of every object not ready yet, from the watches where they answer,
    /// else by reading it; returns whether the watches answered for all of them.
    async fn read_unready(
        &self,
        references: &[ObjectId],
        since: &[Since],
        last: &mut [Verdict],
        bell: &Arc<Notify>,
        followed: &mut [bool],
    ) -> Result<bool, Failure> {
        let mut watched = true;
        for (i, reference) in references.iter().enumerate() {
            if last[i].0.is_ready() {
                continue;
            }
            if !followed[i] {
                followed[i] = self.observer.follow(self.target, reference, bell);
            }
            match self.observer.seen(reference, since[i]) {
                Seen::Verdict(verdict) => last[i] = verdict,
                // NB: the watch lags behind our own write; the apply's answer stays the verdict.
                Seen::NotYet(reason) if last[i].0 == Readiness::InProgress(NOT_CHECKED.into()) => {
                    last[i] = (Readiness::InProgress(reason), Vec::new());
                }
                Seen::NotYet(_) => {}
                Seen::Unwatched => {
                    watched = false;
                    self.read(reference, &mut last[i]).await?;
                }
            }
        }
        Ok(watched)
    }

    /// Reads one object, keeping its verdict and conditions in `last`.
    async fn read(&self, reference: &ObjectId, last: &mut Verdict) -> Result<(), Failure> {
        match self.target.get(reference, self.deadline).await {
            Ok(Some(live)) => *last = (wait::readiness(&live), wait::conditions(&live)),
            Ok(None) => *last = (Readiness::InProgress("not found".into()), Vec::new()),
            // NB: a read that keeps failing transiently (retries spent, or the deadline hit during
            // a slow answer) is not the component's failure yet: the object keeps its last
            // verdict, with the error, and the deadline decides.
            Err(cause) if cause.is_transient() => {
                let conditions = std::mem::take(&mut last.1);
                *last = (Readiness::InProgress(format!("last read failed: {cause}")), conditions);
            }
            Err(cause) => {
                return Err(Failure {
                    component: self.id.to_owned(),
                    reason: Reason::Api { object: reference.to_string(), cause },
                    unready: Vec::new(),
                });
            }
        }
        Ok(())
    }
}

/// The objects in apply order: CustomResourceDefinitions, then Namespaces, then the rest (plan
/// order kept within each rank).
fn in_apply_order(objects: &[Value]) -> Vec<&Value> {
    let mut sorted: Vec<&Value> = objects.iter().collect();
    sorted.sort_by_key(|o| rank(o));
    sorted
}

/// [`order::object_rank`] of an object: 0 and 1 are applied and awaited first, 2 after.
fn rank(object: &Value) -> u8 {
    let reference = ObjectId::of(object);
    order::object_rank(&reference.api_version, &reference.kind)
}

/// The objects that are not ready, with their last verdicts: only the failed ones when
/// `only_failed`, else the failed and the in-progress ones.
pub(super) fn unready(references: &[ObjectId], last: &[Verdict], only_failed: bool) -> Vec<Unready> {
    references
        .iter()
        .zip(last)
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
}

/// The pause before the next poll.
///
/// NB: the pause grows with the time already waited (a tenth of it, 50 ms at least), so noticing
/// readiness late costs at most about 10% of a component's duration, without hammering the API
/// server during long waits.
fn pause(waiting_since: Instant, poll_interval: Duration) -> Duration {
    (waiting_since.elapsed() / 10).clamp(Duration::from_millis(50), poll_interval.max(Duration::from_millis(50)))
}
