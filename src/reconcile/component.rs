//! One component's run: apply its objects (CustomResourceDefinitions and Namespaces first, and
//! awaited before the rest), then poll them until ready, failed for good, or past the deadline.

use super::apply::{Cause, Change, Target};
use super::dry_run::Context;
use super::wait::{self, Readiness};
use super::{Failure, Mode, Options, Reason, Status, Unready, order};
use crate::object::ObjectId;
use serde_json::Value;
use std::time::Duration;
use tokio::time::Instant;

/// An object's last readiness verdict and its conditions (`Type=Status (Reason): message`).
type Verdict = (Readiness, Vec<String>);

/// One component being rolled out: where, under which options, until when, reporting how.
pub(super) struct Component<'a> {
    /// The cluster.
    pub(super) target: &'a Target,
    /// What the plan creates, for dry runs.
    pub(super) context: &'a Context,
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
        let changes = match self.options.mode {
            Mode::VerifyOnly => [0; 3],
            Mode::DryRun => return self.dry_run(&sorted).await,
            Mode::Apply => self.apply_in_order(&sorted).await?,
        };
        self.wait_ready(&sorted).await?;
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
    /// follow, then applies the rest.
    async fn apply_in_order(&self, sorted: &[&Value]) -> Result<[usize; 3], Failure> {
        let split = sorted.iter().position(|o| rank(o) == 2);
        let (first, rest) = sorted.split_at(split.unwrap_or(sorted.len()));
        let mut changes = [0usize; 3];
        self.apply(first, &mut changes).await?;
        if !first.is_empty() && !rest.is_empty() {
            (self.report)(Status::Waiting, "CustomResourceDefinitions and Namespaces".into());
            self.wait_ready(first).await?;
        }
        self.apply(rest, &mut changes).await?;
        Ok(changes)
    }

    /// Applies `objects` in turn, counting each change; stops at the first refusal.
    async fn apply(&self, objects: &[&Value], changes: &mut [usize; 3]) -> Result<(), Failure> {
        for object in objects {
            let (_, change) = self
                .target
                .apply(object, self.options.force_conflicts, false, self.deadline)
                .await
                .map_err(|c| self.api_failure(object, c))?;
            changes[change as usize] += 1;
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

    /// Polls `objects` until all are ready, one fails for good, or the deadline passes.
    async fn wait_ready(&self, objects: &[&Value]) -> Result<(), Failure> {
        let references: Vec<ObjectId> = objects.iter().map(|o| ObjectId::of(o)).collect();
        let mut last: Vec<Verdict> = vec![(Readiness::InProgress("not checked yet".into()), Vec::new()); objects.len()];
        let waiting_since = Instant::now();
        let mut shown = String::new();
        loop {
            self.read_unready(&references, &mut last).await?;
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
            let pause = pause(waiting_since, self.options.poll_interval);
            let left = self.deadline.saturating_duration_since(Instant::now());
            tokio::time::sleep(pause.min(left)).await;
        }
    }

    /// Reads every object not ready yet, keeping its verdict and conditions in `last`.
    async fn read_unready(&self, references: &[ObjectId], last: &mut [Verdict]) -> Result<(), Failure> {
        for (i, reference) in references.iter().enumerate() {
            if last[i].0.is_ready() {
                continue;
            }
            match self.target.get(reference, self.deadline).await {
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
                        component: self.id.to_owned(),
                        reason: Reason::Api { object: reference.to_string(), cause },
                        unready: Vec::new(),
                    });
                }
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
fn unready(references: &[ObjectId], last: &[Verdict], only_failed: bool) -> Vec<Unready> {
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
