//! `--prune`: deleting the labelled objects the plan no longer has, after a fully ready rollout.

use super::apply::Target;
use super::order::{self, Graph};
use super::rollout::Rollout;
use super::{Options, Outcome, wait};
use crate::object::ObjectId;
use std::collections::BTreeSet;
use std::time::Duration;
use tokio::time::Instant;

pub(super) async fn prune(target: &Target, rollout: &Rollout, graph: &Graph, options: &Options, outcome: &mut Outcome) {
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
