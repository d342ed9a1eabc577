//! One component's run: apply its objects (CustomResourceDefinitions and Namespaces first), then
//! poll them until ready, failed for good, or past the deadline.

use super::apply::{Cause, Change, Target};
use super::dry_run::Context;
use super::wait::{self, Readiness};
use super::{Failure, Mode, Options, Reason, Status, Unready, order};
use crate::object::ObjectId;
use serde_json::Value;
use std::time::Duration;
use tokio::time::Instant;

#[allow(clippy::too_many_arguments)]
pub(super) async fn run_component(
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
