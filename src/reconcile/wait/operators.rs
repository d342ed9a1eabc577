//! Readiness of the custom kinds of the operators we install: Sealed Secrets, cert-manager,
//! External Secrets, CloudNativePG, MinIO, RabbitMQ, Flux and Argo CD (rule 4 of
//! [`super::readiness`] for them; the built-in kinds' rules are in `builtin`).

use super::Readiness;
use super::status::{Condition, condition, has_status, integer, is_true, text};
use serde_json::Value;

/// The sealed-secrets controller reports one condition, `Synced`: `True` once the Secret is written,
/// `False` with the error otherwise. It retries a failure only a few times (rate-limited, within a
/// second) and then forgets it, with no periodic resync: only a change to the SealedSecret (or its
/// Secret) or a controller restart tries again, so `Synced=False` for the current generation is
/// terminal for a rollout (sealed with another cluster's certificate, renamed, or a Secret of that
/// name not managed by it). Without `Synced` the general rules decide (no status: not acted yet).
pub(super) fn sealed_secret(object: &Value) -> Option<Readiness> {
    let synced = condition(object, "Synced")?;
    if synced.is_true() {
        return Some(Readiness::Ready);
    }
    let error = synced.field("message");
    let error = if error.is_empty() { synced.describe() } else { error.to_owned() };
    // NB: without status.observedGeneration the failure may be about an older spec.
    Some(if integer(object, "/status/observedGeneration").is_some() {
        let hint = if error.contains("no key could decrypt") { "; was it sealed with this cluster's certificate?" } else { "" };
        Readiness::Failed(format!("not unsealed: {error} (the sealed-secrets controller gave up{hint})"))
    } else {
        Readiness::InProgress(format!("not unsealed: {error}"))
    })
}

/// External Secrets appends each new condition at the end of `status.conditions` (removing the
/// earlier one of the same type), and older releases wrote `PartiallyReady` / `NotReady` where
/// current ones write `Ready=False`, which can linger after an upgrade: the last condition is the
/// current one.
pub(super) fn cluster_external_secret(object: &Value) -> Readiness {
    let Some(last) = object.pointer("/status/conditions").and_then(Value::as_array).and_then(|all| all.last()).map(Condition) else {
        return Readiness::InProgress("no status yet: External Secrets has not acted".into());
    };
    if last.field("type") == "Ready" && last.is_true() {
        return Readiness::Ready;
    }
    let failed: Vec<String> = object
        .pointer("/status/failedNamespaces")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|f| format!("{} ({})", text(f, "/namespace"), text(f, "/reason")))
        .collect();
    if failed.is_empty() {
        Readiness::InProgress(last.describe())
    } else {
        Readiness::InProgress(format!("{}; failed in {}", last.describe(), failed.join(", ")))
    }
}

pub(super) fn certificate(object: &Value) -> Readiness {
    if let Some(issuing) = condition(object, "Issuing")
        && issuing.is_true()
    {
        return Readiness::InProgress(format!("issuing: {}", issuing.describe()));
    }
    match condition(object, "Ready") {
        Some(ready) if ready.is_true() => Readiness::Ready,
        Some(ready) => Readiness::InProgress(ready.describe()),
        None => Readiness::InProgress("no status yet: cert-manager has not acted".into()),
    }
}

/// A CNPG cluster whose reconciliation is disabled or that is hibernated (or being hibernated) is
/// never ready while so, whatever its last phase and `Ready` condition say: the operator keeps
/// both (phase `Cluster in healthy state`, `Ready=True`) while it deletes the pods. Neither is
/// terminal (someone may resume it), so they wait for the timeout.
pub(super) fn cnpg_cluster(object: &Value) -> Readiness {
    if text(object, "/metadata/annotations/cnpg.io~1reconciliationLoop") == "disabled" {
        return Readiness::InProgress(
            "reconciliation suspended (annotation cnpg.io/reconciliationLoop: disabled): the CNPG operator will not act on it".into(),
        );
    }
    let requested = text(object, "/metadata/annotations/cnpg.io~1hibernation") == "on";
    match condition(object, "cnpg.io/hibernation") {
        Some(hibernation) if hibernation.is_true() => {
            return Readiness::InProgress(format!("hibernated (cnpg.io/hibernation: on), no instance runs: {}", hibernation.describe()));
        }
        Some(hibernation) => {
            return Readiness::InProgress(format!("being hibernated (cnpg.io/hibernation: on): {}", hibernation.describe()));
        }
        None if requested => {
            return Readiness::InProgress("to be hibernated (cnpg.io/hibernation: on): the CNPG operator has not acted yet".into());
        }
        None => {}
    }
    let phase = text(object, "/status/phase");
    if is_true(object, "Ready") || phase == "Cluster in healthy state" {
        return Readiness::Ready;
    }
    if phase.is_empty() {
        return Readiness::InProgress("no status yet: the CNPG operator has not acted".into());
    }
    Readiness::InProgress(format!("phase: {phase}"))
}

pub(super) fn minio_tenant(object: &Value) -> Readiness {
    match text(object, "/status/currentState") {
        "Initialized" => Readiness::Ready,
        "" => Readiness::InProgress("no status yet: its controller has not acted".into()),
        state => Readiness::InProgress(format!("current state: {state}")),
    }
}

pub(super) fn rabbitmq_cluster(object: &Value) -> Readiness {
    let all = is_true(object, "AllReplicasReady");
    let available = is_true(object, "ClusterAvailable");
    if all && available {
        return Readiness::Ready;
    }
    if let Some(reconcile) = condition(object, "ReconcileSuccess")
        && reconcile.field("status") == "False"
    {
        return Readiness::InProgress(reconcile.describe());
    }
    if !has_status(object) {
        return Readiness::InProgress("no status yet: the RabbitMQ operator has not acted".into());
    }
    let missing: Vec<&str> =
        [("AllReplicasReady", all), ("ClusterAvailable", available)].iter().filter(|(_, ok)| !ok).map(|(name, _)| *name).collect();
    Readiness::InProgress(format!("waiting for {}", missing.join(" and ")))
}

pub(super) fn is_suspended(object: &Value) -> bool {
    object.pointer("/spec/suspend").and_then(Value::as_bool) == Some(true)
}

pub(super) fn suspended() -> Readiness {
    Readiness::InProgress("suspended (spec.suspend: true): Flux will not reconcile it".into())
}

pub(super) fn flux(object: &Value, generation: Option<i64>) -> Readiness {
    if is_suspended(object) {
        return suspended();
    }
    let Some(ready) = condition(object, "Ready") else {
        return Readiness::InProgress("no status yet: Flux has not acted".into());
    };
    if !ready.is_true() {
        return Readiness::InProgress(ready.describe());
    }
    let observed = integer(object, "/status/observedGeneration");
    let ready_observed = ready.0.get("observedGeneration").and_then(Value::as_i64);
    if generation.is_some() && observed.is_none() {
        return Readiness::InProgress("Ready without status.observedGeneration: the current generation is not reported yet".into());
    }
    if generation.is_some() && (observed != generation || ready_observed.is_some_and(|g| Some(g) != generation)) {
        return Readiness::InProgress("Ready is from an older generation".into());
    }
    Readiness::Ready
}

pub(super) fn argo_application(object: &Value) -> Readiness {
    let sync = text(object, "/status/sync/status");
    let health = text(object, "/status/health/status");
    if sync == "Synced" && health == "Healthy" {
        Readiness::Ready
    } else if sync.is_empty() && health.is_empty() {
        Readiness::InProgress("no status yet: Argo CD has not acted".into())
    } else {
        Readiness::InProgress(format!("sync {sync}, health {health}"))
    }
}
