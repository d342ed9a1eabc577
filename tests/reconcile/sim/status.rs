//! What the simulator's fake controllers write: which objects have a controller at all, the
//! namespace a Flux HelmRelease creates, and the status of a ready, a pending and a failed object.

use super::{group_of, text};
use serde_json::{Value, json};

/// Whether a controller writes status for this object at all.
pub fn has_controller(object: &Value) -> bool {
    let group = group_of(text(object, "/apiVersion"));
    match (group, text(object, "/kind")) {
        ("apps", "Deployment" | "StatefulSet" | "DaemonSet") | ("batch", "Job") | ("", "PersistentVolumeClaim") => true,
        // NB: the API server itself makes a Namespace Active at once.
        ("", "Namespace") => false,
        ("apiextensions.k8s.io", _) => true,
        (group, _) if group.is_empty() || !group.contains('.') || group.ends_with(".k8s.io") => false,
        (group, _) => !group.ends_with("istio.io"),
    }
}

/// The namespace a Flux HelmRelease creates when installed (`install.createNamespace`), as
/// helm-controller does.
pub fn created_namespace(object: &Value) -> Option<String> {
    let release = group_of(text(object, "/apiVersion")) == "helm.toolkit.fluxcd.io" && text(object, "/kind") == "HelmRelease";
    let create = object.pointer("/spec/install/createNamespace").and_then(Value::as_bool) == Some(true);
    let namespace = text(object, "/spec/targetNamespace");
    (release && create && !namespace.is_empty()).then(|| namespace.to_owned())
}

/// The status a controller writes once the object is ready.
pub fn ready_status(object: &Value) -> Value {
    let generation = object.pointer("/metadata/generation").and_then(Value::as_i64).unwrap_or(1);
    let replicas = object.pointer("/spec/replicas").and_then(Value::as_i64).unwrap_or(1);
    let condition = |kind: &str, reason: &str| json!({"type": kind, "status": "True", "reason": reason, "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z", "observedGeneration": generation});
    match (group_of(text(object, "/apiVersion")), text(object, "/kind")) {
        ("apps", "Deployment") => json!({
            "observedGeneration": generation, "replicas": replicas, "updatedReplicas": replicas,
            "readyReplicas": replicas, "availableReplicas": replicas,
            "conditions": [condition("Available", "MinimumReplicasAvailable"), condition("Progressing", "NewReplicaSetAvailable")]
        }),
        ("apps", "StatefulSet") => json!({
            "observedGeneration": generation, "replicas": replicas, "readyReplicas": replicas,
            "currentReplicas": replicas, "updatedReplicas": replicas, "currentRevision": "r1", "updateRevision": "r1"
        }),
        ("apps", "DaemonSet") => json!({
            "observedGeneration": generation, "desiredNumberScheduled": 1, "currentNumberScheduled": 1,
            "updatedNumberScheduled": 1, "numberAvailable": 1, "numberReady": 1, "numberMisscheduled": 0
        }),
        ("batch", "Job") => json!({
            "startTime": "2026-01-01T00:00:00Z", "completionTime": "2026-01-01T00:00:01Z", "succeeded": 1,
            // NB: a real apiserver refuses Complete without SuccessCriteriaMet (Kubernetes 1.31+).
            "conditions": [
                {"type": "SuccessCriteriaMet", "status": "True", "lastProbeTime": "2026-01-01T00:00:01Z", "lastTransitionTime": "2026-01-01T00:00:01Z"},
                {"type": "Complete", "status": "True", "lastProbeTime": "2026-01-01T00:00:01Z", "lastTransitionTime": "2026-01-01T00:00:01Z"}
            ]
        }),
        ("", "PersistentVolumeClaim") => json!({"phase": "Bound"}),
        ("", "Namespace") => json!({"phase": "Active"}),
        ("apiextensions.k8s.io", _) => json!({
            "conditions": [condition("NamesAccepted", "NoConflicts"), condition("Established", "InitialNamesAccepted")],
            "acceptedNames": object.pointer("/spec/names").cloned().unwrap_or(json!({})), "storedVersions": []
        }),
        // The fields the pinned Tenant CRD requires of a status.
        ("minio.min.io", "Tenant") => json!({
            "currentState": "Initialized", "healthStatus": "green", "availableReplicas": 1, "certificates": {}, "pools": [],
            "revision": 0, "syncVersion": "v7.1.1"
        }),
        // The pinned User CRD requires `username`.
        ("rabbitmq.com", "User") => json!({"username": "app", "conditions": [condition("Ready", "SuccessfulCreateOrUpdate")]}),
        ("postgresql.cnpg.io", "Cluster") => {
            json!({"phase": "Cluster in healthy state", "conditions": [condition("Ready", "ClusterIsReady")]})
        }
        ("rabbitmq.com", "RabbitmqCluster") => json!({
            "observedGeneration": generation,
            "conditions": [condition("AllReplicasReady", "AllPodsAreReady"), condition("ClusterAvailable", "AtLeastOneEndpointAvailable"), condition("ReconcileSuccess", "Success")]
        }),
        ("argoproj.io", "Application") => json!({"sync": {"status": "Synced"}, "health": {"status": "Healthy"}}),
        _ => json!({"observedGeneration": generation, "conditions": [condition("Ready", "Succeeded")]}),
    }
}

/// The status a controller writes while it works (never ready).
pub fn pending_status(object: &Value) -> Value {
    let generation = object.pointer("/metadata/generation").and_then(Value::as_i64).unwrap_or(1);
    let not_ready = json!({"type": "Ready", "status": "False", "reason": "Progressing", "message": "waiting for pods to become ready", "lastTransitionTime": "2026-01-01T00:00:00Z"});
    match (group_of(text(object, "/apiVersion")), text(object, "/kind")) {
        ("apps", "Deployment") => json!({
            "observedGeneration": generation, "replicas": 1, "updatedReplicas": 1, "readyReplicas": 0, "availableReplicas": 0,
            "conditions": [{"type": "Available", "status": "False", "reason": "MinimumReplicasUnavailable", "message": "Deployment does not have minimum availability.", "lastTransitionTime": "2026-01-01T00:00:00Z"}]
        }),
        ("batch", "Job") => json!({"startTime": "2026-01-01T00:00:00Z", "active": 1}),
        ("", "PersistentVolumeClaim") => json!({"phase": "Pending"}),
        ("minio.min.io", "Tenant") => json!({"currentState": "Provisioning initial users"}),
        _ => json!({"observedGeneration": generation, "conditions": [not_ready]}),
    }
}

/// The status a controller writes when it gives up (a terminal failure).
pub fn failed_status(object: &Value) -> Value {
    match (group_of(text(object, "/apiVersion")), text(object, "/kind")) {
        ("batch", "Job") => {
            json!({"startTime": "2026-01-01T00:00:00Z", "failed": 3, "conditions": [{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded", "message": "Job has reached the specified backoff limit"}]})
        }
        ("apps", "Deployment") => {
            json!({"observedGeneration": object.pointer("/metadata/generation").cloned().unwrap_or(json!(1)), "conditions": [{"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded", "message": "ReplicaSet has timed out progressing."}]})
        }
        _ => {
            json!({"conditions": [{"type": "Stalled", "status": "True", "reason": "InstallFailed", "message": "install retries exhausted"}, {"type": "Ready", "status": "False", "reason": "InstallFailed", "message": "install retries exhausted"}]})
        }
    }
}
