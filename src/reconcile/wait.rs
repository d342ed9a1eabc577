//! Readiness of one object, as a pure function of its JSON (kstatus rules plus stricter ones).
//!
//! [`readiness`] never reads the clock or the network: the caller polls the API and decides when
//! to give up. Rules, in order (see docs/reconcile.md):
//!
//! 1. `metadata.deletionTimestamp` set: in progress (terminating); then objects whose status means
//!    nothing are decided by their spec alone (a Flux `HelmRepository` of `type: oci`);
//! 2. `status.observedGeneration` present and different from `metadata.generation`: in progress;
//! 3. condition `Stalled=True`: **failed**; `Reconciling=True`: in progress;
//! 4. rules per kind (Deployment, StatefulSet, DaemonSet, Job, Pod, PVC, Service, CRD, and the
//!    custom kinds of our operators: Sealed Secrets, cert-manager, External Secrets, CNPG, MinIO,
//!    RabbitMQ, Flux, Argo CD);
//! 5. otherwise a `Ready` condition decides;
//! 6. otherwise built-in kinds and custom kinds that never report status are ready, and any other
//!    custom resource without a status is not (its operator has not acted yet).
//!
//! Where the rules live: the order above in [`readiness`] here; the built-in kinds' rules in
//! `builtin`, the operators' custom kinds' in `operators`; the readers of fields and conditions
//! they share in `status`.

mod builtin;
mod operators;
mod status;
#[cfg(test)]
mod tests;

pub use status::conditions;

use builtin::{crd, daemon_set, deployment, job, persistent_volume_claim, pod, service, stateful_set};
use operators::{
    argo_application, certificate, cluster_external_secret, cnpg_cluster, flux, is_suspended, minio_tenant, rabbitmq_cluster,
    sealed_secret, suspended,
};
use serde_json::Value;
use status::{condition, generation_of, has_status, integer, text};

/// What [`readiness`] concluded about an object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Readiness {
    /// The object is ready.
    Ready,
    /// Not ready yet; the reason says what is awaited.
    InProgress(String),
    /// A terminal failure: waiting longer will not help.
    Failed(String),
}

impl Readiness {
    /// Whether this is [`Readiness::Ready`].
    #[must_use]
    pub fn is_ready(&self) -> bool {
        matches!(self, Readiness::Ready)
    }
}

/// API groups whose custom resources are never given a status by their controllers, so existing
/// is being ready (Istio configuration objects).
const STATUSLESS_GROUPS: [&str; 3] = ["networking.istio.io", "security.istio.io", "telemetry.istio.io"];

/// Whether an API group belongs to Kubernetes itself (kstatus' fallback applies: no `Ready`
/// condition means ready).
fn is_builtin_group(group: &str) -> bool {
    group.is_empty() || !group.contains('.') || group.ends_with(".k8s.io")
}

/// Decides whether an object (as the API server returned it) is ready.
#[must_use]
pub fn readiness(object: &Value) -> Readiness {
    if object.pointer("/metadata/deletionTimestamp").is_some_and(|v| !v.is_null()) {
        return Readiness::InProgress("terminating".into());
    }
    let group = crate::object::api_group(text(object, "/apiVersion"));
    let kind = text(object, "/kind");
    if let Some(found) = by_spec(group, kind, object) {
        return found;
    }
    let generation = integer(object, "/metadata/generation");
    if let Some(observed) = integer(object, "/status/observedGeneration")
        && let Some(generation) = generation
        && observed != generation
    {
        return Readiness::InProgress(format!("generation {generation} not observed yet (observed {observed})"));
    }
    if let Some(stalled) = condition(object, "Stalled")
        && stalled.is_true()
    {
        return Readiness::Failed(format!("stalled: {}", stalled.describe()));
    }
    if let Some(reconciling) = condition(object, "Reconciling")
        && reconciling.is_true()
    {
        return Readiness::InProgress(format!("reconciling: {}", reconciling.describe()));
    }
    if let Some(found) = by_kind(group, kind, object) {
        return found;
    }
    if let Some(ready) = condition(object, "Ready") {
        return if ready.is_true() { Readiness::Ready } else { Readiness::InProgress(ready.describe()) };
    }
    if is_builtin_group(group) || STATUSLESS_GROUPS.contains(&group) || has_status(object) {
        Readiness::Ready
    } else {
        Readiness::InProgress("no status yet: its controller has not acted".into())
    }
}

/// Kinds whose status means nothing, decided by their spec before any status rule.
fn by_spec(group: &str, kind: &str, object: &Value) -> Option<Readiness> {
    match (group, kind) {
        // NB: source-controller no longer reconciles a HelmRepository of `type: oci`: it deletes
        // the artifact, drops the finalizer and resets the status to `{}` once ("migration to
        // static"), so existing is being ready (Flux's docs; Argo CD's health check says the same).
        // Status left from before that reset is stale, hence this rule comes before rules 2-3.
        ("source.toolkit.fluxcd.io", "HelmRepository") if text(object, "/spec/type") == "oci" => {
            Some(if is_suspended(object) { suspended() } else { Readiness::Ready })
        }
        _ => None,
    }
}

/// Rule 4: the kinds with rules of their own.
fn by_kind(group: &str, kind: &str, object: &Value) -> Option<Readiness> {
    match (group, kind) {
        ("apps", "Deployment") => Some(deployment(object)),
        ("apps", "StatefulSet") => Some(stateful_set(object)),
        ("apps", "DaemonSet") => Some(daemon_set(object)),
        ("batch", "Job") => Some(job(object)),
        ("", "Pod") => Some(pod(object)),
        ("", "PersistentVolumeClaim") => Some(persistent_volume_claim(object)),
        ("", "Service") => Some(service(object)),
        ("", "ConfigMap" | "Secret" | "ServiceAccount") | ("batch", "CronJob") | ("policy", "PodDisruptionBudget") => {
            Some(Readiness::Ready)
        }
        ("apiextensions.k8s.io", "CustomResourceDefinition") => Some(crd(object)),
        ("bitnami.com", "SealedSecret") => sealed_secret(object),
        ("cert-manager.io", "Certificate") => Some(certificate(object)),
        ("external-secrets.io", "ClusterExternalSecret") => Some(cluster_external_secret(object)),
        ("postgresql.cnpg.io", "Cluster") => Some(cnpg_cluster(object)),
        ("minio.min.io", "Tenant") => Some(minio_tenant(object)),
        ("rabbitmq.com", "RabbitmqCluster") => Some(rabbitmq_cluster(object)),
        ("helm.toolkit.fluxcd.io", "HelmRelease")
        | ("kustomize.toolkit.fluxcd.io", "Kustomization")
        | ("source.toolkit.fluxcd.io", "GitRepository" | "OCIRepository" | "HelmRepository" | "HelmChart" | "Bucket") => {
            Some(flux(object, generation_of(object)))
        }
        ("argoproj.io", "Application") => Some(argo_application(object)),
        _ => None,
    }
}
