//! Readiness of Kubernetes' own kinds that need more than a `Ready` condition: Deployment,
//! StatefulSet, DaemonSet, Job, Pod, PersistentVolumeClaim, Service and CustomResourceDefinition
//! (rule 4 of [`super::readiness`] for them; the operators' custom kinds are in `operators`).

use super::Readiness;
use super::status::{condition, generation_of, has_status, integer, is_true, text};
use serde_json::Value;

pub(super) fn deployment(object: &Value) -> Readiness {
    if let Some(progressing) = condition(object, "Progressing")
        && progressing.field("reason") == "ProgressDeadlineExceeded"
    {
        return Readiness::Failed(format!("progress deadline exceeded: {}", progressing.describe()));
    }
    if !has_status(object) {
        return Readiness::InProgress("no status yet".into());
    }
    let wanted = integer(object, "/spec/replicas").unwrap_or(1);
    let replicas = integer(object, "/status/replicas").unwrap_or(0);
    let updated = integer(object, "/status/updatedReplicas").unwrap_or(0);
    let available = integer(object, "/status/availableReplicas").unwrap_or(0);
    let ready = integer(object, "/status/readyReplicas").unwrap_or(0);
    if wanted > replicas || wanted > updated {
        return Readiness::InProgress(format!("{updated} of {wanted} replicas updated"));
    }
    if replicas > wanted {
        return Readiness::InProgress(format!("{} old replicas pending termination", replicas - wanted));
    }
    if updated > available || wanted > ready {
        return Readiness::InProgress(format!("{available} of {wanted} replicas available, {ready} ready"));
    }
    if object.pointer("/spec/progressDeadlineSeconds").is_some()
        && !condition(object, "Progressing").is_some_and(|c| c.is_true() && c.field("reason") == "NewReplicaSetAvailable")
    {
        return Readiness::InProgress("rollout not finished (Progressing is not NewReplicaSetAvailable)".into());
    }
    if !is_true(object, "Available") {
        return Readiness::InProgress("not Available".into());
    }
    Readiness::Ready
}

pub(super) fn stateful_set(object: &Value) -> Readiness {
    if text(object, "/spec/updateStrategy/type") == "OnDelete" {
        return Readiness::Ready;
    }
    if !has_status(object) || integer(object, "/status/observedGeneration").is_none() {
        return Readiness::InProgress("no status yet".into());
    }
    let wanted = integer(object, "/spec/replicas").unwrap_or(1);
    let replicas = integer(object, "/status/replicas").unwrap_or(0);
    let ready = integer(object, "/status/readyReplicas").unwrap_or(0);
    if wanted > replicas || wanted > ready {
        return Readiness::InProgress(format!("{ready} of {wanted} replicas ready"));
    }
    if replicas > wanted {
        return Readiness::InProgress(format!("{} extra replicas pending termination", replicas - wanted));
    }
    if let Some(partition) = integer(object, "/spec/updateStrategy/rollingUpdate/partition") {
        let updated = integer(object, "/status/updatedReplicas").unwrap_or(0);
        return if updated < wanted - partition {
            Readiness::InProgress(format!("{updated} of {} partitioned replicas updated", wanted - partition))
        } else {
            Readiness::Ready
        };
    }
    let current = integer(object, "/status/currentReplicas").unwrap_or(0);
    if wanted > current {
        return Readiness::InProgress(format!("{current} of {wanted} replicas at the current revision"));
    }
    if text(object, "/status/currentRevision") != text(object, "/status/updateRevision") {
        return Readiness::InProgress("update revision not rolled out".into());
    }
    Readiness::Ready
}

pub(super) fn daemon_set(object: &Value) -> Readiness {
    if generation_of(object).is_none() || integer(object, "/status/observedGeneration").is_none() {
        return Readiness::InProgress("no status yet".into());
    }
    let Some(desired) = integer(object, "/status/desiredNumberScheduled") else {
        return Readiness::InProgress("desired number of pods not known yet".into());
    };
    for (field, label) in [
        ("/status/currentNumberScheduled", "scheduled"),
        ("/status/updatedNumberScheduled", "updated"),
        ("/status/numberAvailable", "available"),
        ("/status/numberReady", "ready"),
    ] {
        let count = integer(object, field).unwrap_or(0);
        if desired > count {
            return Readiness::InProgress(format!("{count} of {desired} pods {label}"));
        }
    }
    Readiness::Ready
}

pub(super) fn job(object: &Value) -> Readiness {
    if is_true(object, "Complete") {
        return Readiness::Ready;
    }
    if let Some(failed) = condition(object, "Failed")
        && failed.is_true()
    {
        return Readiness::Failed(format!("job failed: {}", failed.describe()));
    }
    if is_true(object, "Suspended") && object.pointer("/spec/suspend").and_then(Value::as_bool) == Some(true) {
        return Readiness::Ready;
    }
    // NB: stricter than kstatus, which calls a started Job ready: a Job is a step that must finish.
    let active = integer(object, "/status/active").unwrap_or(0);
    Readiness::InProgress(format!("not complete ({active} active)"))
}

pub(super) fn pod(object: &Value) -> Readiness {
    match text(object, "/status/phase") {
        "Succeeded" => return Readiness::Ready,
        "Failed" => return Readiness::Failed(format!("pod failed: {}", text(object, "/status/reason"))),
        "Running" if is_true(object, "Ready") => return Readiness::Ready,
        _ => {}
    }
    let waiting = object
        .pointer("/status/containerStatuses")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| c.pointer("/state/waiting/reason").and_then(Value::as_str))
        .next();
    match waiting {
        Some(reason) => Readiness::InProgress(format!("container waiting: {reason}")),
        None => Readiness::InProgress("pod not ready".into()),
    }
}

pub(super) fn crd(object: &Value) -> Readiness {
    if let Some(names) = condition(object, "NamesAccepted")
        && names.field("status") == "False"
    {
        return Readiness::Failed(format!("names not accepted: {}", names.describe()));
    }
    match condition(object, "Established") {
        Some(established) if established.is_true() => Readiness::Ready,
        Some(established) if established.field("status") == "False" && established.field("reason") != "Installing" => {
            Readiness::Failed(format!("not established: {}", established.describe()))
        }
        _ => Readiness::InProgress("not Established yet".into()),
    }
}

pub(super) fn persistent_volume_claim(object: &Value) -> Readiness {
    match text(object, "/status/phase") {
        "Bound" => Readiness::Ready,
        // A `WaitForFirstConsumer` claim binds only once a consumer is scheduled, and its
        // consumers may wait for it: waiting here would deadlock. Until the scheduler picks
        // a node it counts as ready; a claim that never binds shows in its consumer's pod.
        "Pending" if object.pointer("/metadata/annotations/volume.kubernetes.io~1selected-node").is_none() => Readiness::Ready,
        "Lost" => Readiness::Failed("claim lost its volume".into()),
        "" => Readiness::InProgress("not bound yet".into()),
        phase => Readiness::InProgress(format!("phase {phase}")),
    }
}

pub(super) fn service(object: &Value) -> Readiness {
    let load_balancer = text(object, "/spec/type") == "LoadBalancer";
    if load_balancer && text(object, "/spec/clusterIP").is_empty() {
        Readiness::InProgress("no cluster IP yet".into())
    } else {
        Readiness::Ready
    }
}
