//! Readiness checked once, from objects already read: what `reconcile --verify-only --timeout 0`
//! reports, without reading them again (`tfrs diff --live` has every live object in hand).

use super::component::unready;
use super::observe::Verdict;
use super::order::Graph;
use super::rollout::Rollout;
use super::wait::{self, Readiness};
use super::{Failure, Reason, Result};
use crate::object::ObjectId;
use serde_json::Value;
use std::time::Duration;

/// The failed components of `rollout`, given each object as it is live (`lives[c][o]` for the
/// plan's component `c`, object `o`; `None`: not found). A component with a failed object fails
/// (terminal), one with an object not ready yet times out after 0 s, and one downstream of a
/// failed component is skipped (not listed), as in a rollout.
///
/// # Errors
///
/// The plan's graph is broken.
pub fn readiness_once(rollout: &Rollout, lives: &[Vec<Option<&Value>>]) -> Result<Vec<Failure>> {
    let graph = Graph::new(&rollout.plan)?;
    let mut failures: Vec<Option<Failure>> = vec![None; graph.len()];
    // NB: failed, or skipped because something upstream failed.
    let mut stopped = vec![false; graph.len()];
    for node in graph.topological()? {
        if graph.dependencies[node].iter().any(|&d| stopped[d]) {
            stopped[node] = true;
            continue;
        }
        failures[node] = judge(&graph.ids[node], &rollout.objects[node], &lives[node]);
        stopped[node] = failures[node].is_some();
    }
    Ok(failures.into_iter().flatten().collect())
}

/// One component's verdict from its live objects.
fn judge(component: &str, objects: &[Value], lives: &[Option<&Value>]) -> Option<Failure> {
    let references: Vec<ObjectId> = objects.iter().map(ObjectId::of).collect();
    let verdicts: Vec<Verdict> = lives
        .iter()
        .map(|live| match live {
            Some(live) => (wait::readiness(live), wait::conditions(live)),
            None => (Readiness::InProgress("not found".into()), Vec::new()),
        })
        .collect();
    let failed = unready(&references, &verdicts, true);
    if !failed.is_empty() {
        return Some(Failure { component: component.to_owned(), reason: Reason::Terminal, unready: failed });
    }
    let waiting = unready(&references, &verdicts, false);
    (!waiting.is_empty()).then(|| Failure { component: component.to_owned(), reason: Reason::TimedOut(Duration::ZERO), unready: waiting })
}
