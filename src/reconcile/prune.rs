//! `--prune`: deleting the labelled objects the plan no longer has, after a fully ready rollout.

use super::apply::{Target, has_owner};
use super::order;
use super::rollout::Rollout;
use super::{Options, Outcome};
use crate::object::ObjectId;
use std::collections::BTreeSet;
use std::time::Duration;
use tokio::time::Instant;

/// The objects reconcile owns on a cluster: labelled as ours for `cluster`, except the GitOps
/// entry points (`app.kubernetes.io/component=gitops`: the components' Kustomizations or
/// Applications and Argo CD's `argocd-cm`), which the engine applies from `clusters/<cluster>/`
/// and the plan does not hold.
#[must_use]
pub fn owned_selector(cluster: &str) -> String {
    format!("app.kubernetes.io/managed-by=tfrs,tfrs.turingfocus.cn/cluster={cluster},app.kubernetes.io/component!=gitops")
}

pub(super) async fn prune(target: &Target, rollout: &Rollout, options: &Options, outcome: &mut Outcome) {
    let deadline = Instant::now() + options.timeout.unwrap_or(Duration::from_secs(300));
    let selector = owned_selector(&rollout.plan.cluster);
    // The plan's objects by the server's key (group, kind, namespace, name: any version).
    let keep: BTreeSet<String> = rollout.objects.iter().flatten().map(|o| ObjectId::of(o).server_key()).collect();
    let live = match target.list_labelled(&selector, deadline).await {
        Ok(live) => live,
        Err(cause) => {
            outcome.prune_failures.push(format!("listing labelled objects failed: {cause}"));
            return;
        }
    };
    let mut doomed: Vec<ObjectId> =
        live.iter().filter(|o| !has_owner(o)).map(ObjectId::of).filter(|r| !keep.contains(&r.server_key())).collect();
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
