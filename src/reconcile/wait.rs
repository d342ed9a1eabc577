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

mod operators;

use operators::{
    argo_application, certificate, cluster_external_secret, cnpg_cluster, flux, is_suspended, rabbitmq_cluster, sealed_secret, suspended,
};
use serde_json::Value;

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

/// The group of an `apiVersion` (`""` for the core group).
#[must_use]
pub fn group_of(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or("", |(group, _)| group)
}

/// One condition of `status.conditions`.
struct Condition<'a>(&'a Value);

impl Condition<'_> {
    fn field(&self, name: &str) -> &str {
        self.0.get(name).and_then(Value::as_str).unwrap_or("")
    }
    fn is_true(&self) -> bool {
        self.field("status") == "True"
    }
    fn describe(&self) -> String {
        let mut text = format!("{}={}", self.field("type"), self.field("status"));
        let reason = self.field("reason");
        if !reason.is_empty() {
            text.push_str(&format!(" ({reason})"));
        }
        let message = self.field("message");
        if !message.is_empty() {
            text.push_str(&format!(": {message}"));
        }
        text
    }
}

fn condition<'a>(object: &'a Value, kind: &str) -> Option<Condition<'a>> {
    object
        .pointer("/status/conditions")
        .and_then(Value::as_array)?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(kind))
        .map(Condition)
}

fn is_true(object: &Value, kind: &str) -> bool {
    condition(object, kind).is_some_and(|c| c.is_true())
}

fn integer(object: &Value, pointer: &str) -> Option<i64> {
    object.pointer(pointer).and_then(Value::as_i64)
}

fn text<'a>(object: &'a Value, pointer: &str) -> &'a str {
    object.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

fn has_status(object: &Value) -> bool {
    object.get("status").and_then(Value::as_object).is_some_and(|status| !status.is_empty())
}

/// Every condition of the object, one `Type=Status (Reason): message` each, for failure reports.
#[must_use]
pub fn conditions(object: &Value) -> Vec<String> {
    object
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .map(|all| all.iter().map(|c| Condition(c).describe()).collect())
        .unwrap_or_default()
}

/// Decides whether an object (as the API server returned it) is ready.
#[must_use]
pub fn readiness(object: &Value) -> Readiness {
    if object.pointer("/metadata/deletionTimestamp").is_some_and(|v| !v.is_null()) {
        return Readiness::InProgress("terminating".into());
    }
    let group = group_of(text(object, "/apiVersion"));
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

fn by_kind(group: &str, kind: &str, object: &Value) -> Option<Readiness> {
    match (group, kind) {
        ("apps", "Deployment") => Some(deployment(object)),
        ("apps", "StatefulSet") => Some(stateful_set(object)),
        ("apps", "DaemonSet") => Some(daemon_set(object)),
        ("batch", "Job") => Some(job(object)),
        ("", "Pod") => Some(pod(object)),
        ("", "PersistentVolumeClaim") => Some(match text(object, "/status/phase") {
            "Bound" => Readiness::Ready,
            // A `WaitForFirstConsumer` claim binds only once a consumer is scheduled, and its
            // consumers may wait for it: waiting here would deadlock. Until the scheduler picks
            // a node it counts as ready; a claim that never binds shows in its consumer's pod.
            "Pending" if object.pointer("/metadata/annotations/volume.kubernetes.io~1selected-node").is_none() => Readiness::Ready,
            "Lost" => Readiness::Failed("claim lost its volume".into()),
            "" => Readiness::InProgress("not bound yet".into()),
            phase => Readiness::InProgress(format!("phase {phase}")),
        }),
        ("", "Service") => {
            let load_balancer = text(object, "/spec/type") == "LoadBalancer";
            Some(if load_balancer && text(object, "/spec/clusterIP").is_empty() {
                Readiness::InProgress("no cluster IP yet".into())
            } else {
                Readiness::Ready
            })
        }
        ("", "ConfigMap" | "Secret" | "ServiceAccount") | ("batch", "CronJob") | ("policy", "PodDisruptionBudget") => {
            Some(Readiness::Ready)
        }
        ("apiextensions.k8s.io", "CustomResourceDefinition") => Some(crd(object)),
        ("bitnami.com", "SealedSecret") => sealed_secret(object),
        ("cert-manager.io", "Certificate") => Some(certificate(object)),
        ("external-secrets.io", "ClusterExternalSecret") => Some(cluster_external_secret(object)),
        ("postgresql.cnpg.io", "Cluster") => Some(cnpg_cluster(object)),
        ("minio.min.io", "Tenant") => Some(match text(object, "/status/currentState") {
            "Initialized" => Readiness::Ready,
            "" => Readiness::InProgress("no status yet: its controller has not acted".into()),
            state => Readiness::InProgress(format!("current state: {state}")),
        }),
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

fn generation_of(object: &Value) -> Option<i64> {
    integer(object, "/metadata/generation")
}

fn deployment(object: &Value) -> Readiness {
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

fn stateful_set(object: &Value) -> Readiness {
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

fn daemon_set(object: &Value) -> Readiness {
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

fn job(object: &Value) -> Readiness {
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

fn pod(object: &Value) -> Readiness {
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

fn crd(object: &Value) -> Readiness {
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn yaml(text: &str) -> Value {
        serde_saphyr::from_str(text).expect("fixture YAML")
    }

    fn progress(object: &Value) -> String {
        match readiness(object) {
            Readiness::InProgress(reason) => reason,
            other => panic!("expected in progress, got {other:?}"),
        }
    }

    fn failed(object: &Value) -> String {
        match readiness(object) {
            Readiness::Failed(reason) => reason,
            other => panic!("expected failed, got {other:?}"),
        }
    }

    const DEPLOYMENT: &str = "
apiVersion: apps/v1
kind: Deployment
metadata: {name: api, namespace: t, generation: 2}
spec: {replicas: 2, progressDeadlineSeconds: 600}
status:
  observedGeneration: 2
  replicas: 2
  updatedReplicas: 2
  readyReplicas: 2
  availableReplicas: 2
  conditions:
  - {type: Available, status: 'True'}
  - {type: Progressing, status: 'True', reason: NewReplicaSetAvailable}
";

    #[test]
    fn deployment_rules() {
        let ready = yaml(DEPLOYMENT);
        assert_eq!(readiness(&ready), Readiness::Ready);
        let mut old = ready.clone();
        old["metadata"]["generation"] = json!(3);
        assert!(progress(&old).contains("generation 3 not observed"));
        let mut scaling = ready.clone();
        scaling["status"]["availableReplicas"] = json!(1);
        assert!(progress(&scaling).contains("1 of 2 replicas available"));
        let mut rolling = ready.clone();
        rolling["status"]["conditions"][1]["reason"] = json!("ReplicaSetUpdated");
        assert!(progress(&rolling).contains("rollout not finished"));
        let mut unavailable = ready.clone();
        unavailable["status"]["conditions"][0]["status"] = json!("False");
        assert_eq!(progress(&unavailable), "not Available");
        let mut deadline = ready.clone();
        deadline["status"]["conditions"][1] =
            json!({"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded", "message": "rs api-1 timed out"});
        assert!(failed(&deadline).contains("rs api-1 timed out"));
        let fresh = yaml("{apiVersion: apps/v1, kind: Deployment, metadata: {name: a, generation: 1}, spec: {replicas: 1}}");
        assert_eq!(progress(&fresh), "no status yet");
        let terminating =
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "a", "deletionTimestamp": "2026-01-01T00:00:00Z"}});
        assert_eq!(progress(&terminating), "terminating");
    }

    #[test]
    fn stalled_fails_and_reconciling_waits() {
        let mut object = yaml(DEPLOYMENT);
        object["status"]["conditions"] = json!([{"type": "Stalled", "status": "True", "reason": "Broken", "message": "bad"}]);
        assert_eq!(failed(&object), "stalled: Stalled=True (Broken): bad");
        object["status"]["conditions"] = json!([{"type": "Reconciling", "status": "True"}]);
        assert!(progress(&object).starts_with("reconciling"));
    }

    #[test]
    fn stateful_set_and_daemon_set_rules() {
        let set = yaml(
            "
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, generation: 1}
spec: {replicas: 3}
status: {observedGeneration: 1, replicas: 3, readyReplicas: 3, currentReplicas: 3, currentRevision: r1, updateRevision: r1}
",
        );
        assert_eq!(readiness(&set), Readiness::Ready);
        let mut partial = set.clone();
        partial["status"]["readyReplicas"] = json!(2);
        assert_eq!(progress(&partial), "2 of 3 replicas ready");
        let mut revision = set.clone();
        revision["status"]["updateRevision"] = json!("r2");
        assert_eq!(progress(&revision), "update revision not rolled out");
        let mut on_delete = partial.clone();
        on_delete["spec"]["updateStrategy"] = json!({"type": "OnDelete"});
        assert_eq!(readiness(&on_delete), Readiness::Ready);

        let daemons = yaml(
            "
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, generation: 1}
status: {observedGeneration: 1, desiredNumberScheduled: 2, currentNumberScheduled: 2, updatedNumberScheduled: 2, numberAvailable: 2, numberReady: 1}
",
        );
        assert_eq!(progress(&daemons), "1 of 2 pods ready");
    }

    #[test]
    fn job_must_complete_and_failure_is_terminal() {
        let running = yaml("{apiVersion: batch/v1, kind: Job, metadata: {name: init}, status: {startTime: x, active: 1}}");
        assert_eq!(progress(&running), "not complete (1 active)");
        let mut done = running.clone();
        done["status"]["conditions"] = json!([{"type": "Complete", "status": "True"}]);
        assert_eq!(readiness(&done), Readiness::Ready);
        let mut broken = running;
        broken["status"]["conditions"] = json!([{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded", "message": "Job has reached the specified backoff limit"}]);
        assert_eq!(failed(&broken), "job failed: Failed=True (BackoffLimitExceeded): Job has reached the specified backoff limit");
    }

    #[test]
    fn core_kinds() {
        assert_eq!(readiness(&yaml("{apiVersion: v1, kind: ConfigMap, metadata: {name: c}}")), Readiness::Ready);
        assert_eq!(readiness(&yaml("{apiVersion: v1, kind: Namespace, metadata: {name: n}, status: {phase: Active}}")), Readiness::Ready);
        assert_eq!(readiness(&yaml("{apiVersion: rbac.authorization.k8s.io/v1, kind: Role, metadata: {name: r}}")), Readiness::Ready);
        let unscheduled = yaml("{apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: data}, status: {phase: Pending}}");
        assert_eq!(readiness(&unscheduled), Readiness::Ready, "a WaitForFirstConsumer claim is not waited for");
        let claim = yaml(
            "{apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: data, annotations: {volume.kubernetes.io/selected-node: n1}}, status: {phase: Pending}}",
        );
        assert_eq!(progress(&claim), "phase Pending");
        let bound = yaml("{apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: data}, status: {phase: Bound}}");
        assert_eq!(readiness(&bound), Readiness::Ready);
        let balancer = yaml("{apiVersion: v1, kind: Service, metadata: {name: s}, spec: {type: LoadBalancer}}");
        assert_eq!(progress(&balancer), "no cluster IP yet");
        let pod = yaml(
            "{apiVersion: v1, kind: Pod, metadata: {name: p}, status: {phase: Pending, containerStatuses: [{state: {waiting: {reason: CrashLoopBackOff}}}]}}",
        );
        assert_eq!(progress(&pod), "container waiting: CrashLoopBackOff");
    }

    #[test]
    fn crd_established_or_names_rejected() {
        let installing = yaml(
            "
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
status:
  conditions:
  - {type: NamesAccepted, status: 'True'}
  - {type: Established, status: 'False', reason: Installing}
",
        );
        assert_eq!(progress(&installing), "not Established yet");
        let mut established = installing.clone();
        established["status"]["conditions"][1] = json!({"type": "Established", "status": "True"});
        assert_eq!(readiness(&established), Readiness::Ready);
        let mut clash = installing;
        clash["status"]["conditions"][0] = json!({"type": "NamesAccepted", "status": "False", "reason": "ListKindConflict", "message": "\"WidgetList\" is already in use"});
        assert!(failed(&clash).contains("ListKindConflict"));
    }

    #[test]
    fn fresh_custom_resource_is_not_ready_but_istio_config_is() {
        let issuer = yaml("{apiVersion: cert-manager.io/v1, kind: ClusterIssuer, metadata: {name: letsencrypt}, spec: {}}");
        assert!(progress(&issuer).starts_with("no status yet"));
        let mut issued = issuer;
        issued["status"] = json!({"conditions": [{"type": "Ready", "status": "True"}]});
        assert_eq!(readiness(&issued), Readiness::Ready);
        let sealed = yaml("{apiVersion: bitnami.com/v1alpha1, kind: SealedSecret, metadata: {name: s}, spec: {}}");
        assert!(progress(&sealed).starts_with("no status yet"));
        let service = yaml("{apiVersion: networking.istio.io/v1, kind: VirtualService, metadata: {name: v}, spec: {}}");
        assert_eq!(readiness(&service), Readiness::Ready);
    }

    #[test]
    fn certificate_ready_and_not_issuing() {
        let issuing = yaml(
            "
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: gateway, generation: 1}
status:
  conditions:
  - {type: Ready, status: 'True', observedGeneration: 1}
  - {type: Issuing, status: 'True', reason: Renewing}
",
        );
        assert!(progress(&issuing).starts_with("issuing"));
        let mut ready = issuing.clone();
        ready["status"]["conditions"][1]["status"] = json!("False");
        assert_eq!(readiness(&ready), Readiness::Ready);
        let mut not_ready = ready;
        not_ready["status"]["conditions"][0] = json!({"type": "Ready", "status": "False", "reason": "DoesNotExist"});
        assert_eq!(progress(&not_ready), "Ready=False (DoesNotExist)");
    }

    #[test]
    fn operator_custom_resources() {
        let cnpg = yaml("{apiVersion: postgresql.cnpg.io/v1, kind: Cluster, metadata: {name: pg}, status: {phase: Setting up primary}}");
        assert_eq!(progress(&cnpg), "phase: Setting up primary");
        let mut healthy = cnpg.clone();
        healthy["status"]["conditions"] = json!([{"type": "Ready", "status": "True"}]);
        assert_eq!(readiness(&healthy), Readiness::Ready);

        let tenant =
            yaml("{apiVersion: minio.min.io/v2, kind: Tenant, metadata: {name: m}, status: {currentState: Provisioning initial users}}");
        assert_eq!(progress(&tenant), "current state: Provisioning initial users");
        let initialized = yaml("{apiVersion: minio.min.io/v2, kind: Tenant, metadata: {name: m}, status: {currentState: Initialized}}");
        assert_eq!(readiness(&initialized), Readiness::Ready);

        let rabbit = yaml(
            "
apiVersion: rabbitmq.com/v1beta1
kind: RabbitmqCluster
metadata: {name: mq}
status:
  conditions:
  - {type: AllReplicasReady, status: 'True'}
  - {type: ClusterAvailable, status: 'False'}
  - {type: Ready, status: 'True'}
",
        );
        assert_eq!(progress(&rabbit), "waiting for ClusterAvailable");
        let mut available = rabbit;
        available["status"]["conditions"][1]["status"] = json!("True");
        assert_eq!(readiness(&available), Readiness::Ready);
    }

    #[test]
    fn flux_release_ready_at_current_generation_and_not_suspended() {
        let release = yaml(
            "
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: tfrs-operator, generation: 2}
spec: {}
status:
  observedGeneration: 2
  conditions:
  - {type: Ready, status: 'True', observedGeneration: 2, reason: InstallSucceeded}
",
        );
        assert_eq!(readiness(&release), Readiness::Ready);
        let mut stale = release.clone();
        stale["status"]["conditions"][0]["observedGeneration"] = json!(1);
        assert_eq!(progress(&stale), "Ready is from an older generation");
        let mut unreported = release.clone();
        unreported["status"].as_object_mut().expect("status").remove("observedGeneration");
        assert!(progress(&unreported).starts_with("Ready without status.observedGeneration"));
        let mut suspended = release.clone();
        suspended["spec"]["suspend"] = json!(true);
        assert!(progress(&suspended).starts_with("suspended"));
        let fresh = yaml("{apiVersion: helm.toolkit.fluxcd.io/v2, kind: HelmRelease, metadata: {name: r, generation: 1}, spec: {}}");
        assert_eq!(progress(&fresh), "no status yet: Flux has not acted");
        let mut stalled = release;
        stalled["status"]["conditions"] = json!([{"type": "Stalled", "status": "True", "reason": "InstallFailed"}]);
        assert!(failed(&stalled).contains("InstallFailed"));
    }

    #[test]
    fn argo_application_synced_and_healthy() {
        let app = yaml(
            "{apiVersion: argoproj.io/v1alpha1, kind: Application, metadata: {name: a}, status: {sync: {status: Synced}, health: {status: Progressing}}}",
        );
        assert_eq!(progress(&app), "sync Synced, health Progressing");
        let mut healthy = app;
        healthy["status"]["health"]["status"] = json!("Healthy");
        assert_eq!(readiness(&healthy), Readiness::Ready);
    }

    #[test]
    fn sealed_secret_that_could_not_be_unsealed_fails() {
        let unsealed = yaml(
            "
apiVersion: bitnami.com/v1alpha1
kind: SealedSecret
metadata: {name: registry, namespace: t, generation: 1}
spec: {encryptedData: {.dockerconfigjson: AgB}}
status:
  observedGeneration: 1
  conditions:
  - {type: Synced, status: 'True', message: ''}
",
        );
        assert_eq!(readiness(&unsealed), Readiness::Ready);
        let mut wrong_key = unsealed.clone();
        wrong_key["status"]["conditions"][0] =
            json!({"type": "Synced", "status": "False", "message": "no key could decrypt secret (.dockerconfigjson)"});
        let reason = failed(&wrong_key);
        assert_eq!(
            reason,
            "not unsealed: no key could decrypt secret (.dockerconfigjson) (the sealed-secrets controller gave up; was it sealed with this cluster's certificate?)"
        );
        let mut unmanaged = wrong_key.clone();
        unmanaged["status"]["conditions"][0]["message"] =
            json!("failed update: Resource \"registry\" already exists and is not managed by SealedSecret");
        assert!(failed(&unmanaged).ends_with("not managed by SealedSecret (the sealed-secrets controller gave up)"));
        // A failure about an older spec: the controller has not seen the one just applied.
        let mut resealed = wrong_key.clone();
        resealed["metadata"]["generation"] = json!(2);
        assert!(progress(&resealed).starts_with("generation 2 not observed"));
        // Without status.observedGeneration nothing says which spec failed: wait.
        let mut unversioned = wrong_key;
        unversioned["status"].as_object_mut().expect("status").remove("observedGeneration");
        assert!(progress(&unversioned).starts_with("not unsealed: no key could decrypt"));
    }

    const CNPG: &str = "
apiVersion: postgresql.cnpg.io/v1
kind: Cluster
metadata: {name: pg, namespace: t, generation: 1}
spec: {instances: 1}
status:
  phase: Cluster in healthy state
  conditions:
  - {type: Ready, status: 'True', reason: ClusterIsReady}
";

    #[test]
    fn cnpg_cluster_hibernated_or_unreconciled_is_not_ready() {
        let healthy = yaml(CNPG);
        assert_eq!(readiness(&healthy), Readiness::Ready);
        let mut off = healthy.clone();
        off["metadata"]["annotations"] = json!({"cnpg.io/hibernation": "off"});
        assert_eq!(readiness(&off), Readiness::Ready);

        let mut requested = healthy.clone();
        requested["metadata"]["annotations"] = json!({"cnpg.io/hibernation": "on"});
        assert!(progress(&requested).starts_with("to be hibernated (cnpg.io/hibernation: on)"));
        let mut hibernating = requested.clone();
        hibernating["status"]["conditions"].as_array_mut().expect("conditions").push(
            json!({"type": "cnpg.io/hibernation", "status": "False", "reason": "DeletingPods", "message": "Hibernation is in progress"}),
        );
        assert_eq!(
            progress(&hibernating),
            "being hibernated (cnpg.io/hibernation: on): cnpg.io/hibernation=False (DeletingPods): Hibernation is in progress"
        );
        let mut hibernated = requested;
        hibernated["status"]["conditions"].as_array_mut().expect("conditions").push(
            json!({"type": "cnpg.io/hibernation", "status": "True", "reason": "Hibernated", "message": "Cluster has been hibernated"}),
        );
        assert!(progress(&hibernated).starts_with("hibernated (cnpg.io/hibernation: on), no instance runs"));

        let mut unreconciled = healthy;
        unreconciled["metadata"]["annotations"] = json!({"cnpg.io/reconciliationLoop": "disabled"});
        assert!(progress(&unreconciled).starts_with("reconciliation suspended (annotation cnpg.io/reconciliationLoop: disabled)"));
    }

    #[test]
    fn oci_helm_repository_is_ready_once_it_exists() {
        let oci = yaml(
            "{apiVersion: source.toolkit.fluxcd.io/v1, kind: HelmRepository, metadata: {name: charts, generation: 1}, spec: {type: oci, url: 'oci://ghcr.io/acme/charts'}}",
        );
        assert_eq!(readiness(&oci), Readiness::Ready);
        // Status left from before source-controller stopped reconciling it is ignored.
        let mut leftover = oci.clone();
        leftover["metadata"]["generation"] = json!(3);
        leftover["status"] = json!({"observedGeneration": 1, "conditions": [{"type": "Stalled", "status": "True", "reason": "Old"}]});
        assert_eq!(readiness(&leftover), Readiness::Ready);
        let mut suspended = oci;
        suspended["spec"]["suspend"] = json!(true);
        assert!(progress(&suspended).starts_with("suspended"));
        let https = yaml(
            "{apiVersion: source.toolkit.fluxcd.io/v1, kind: HelmRepository, metadata: {name: charts, generation: 1}, spec: {url: 'https://charts.example.com'}}",
        );
        assert_eq!(progress(&https), "no status yet: Flux has not acted");
    }

    #[test]
    fn flux_sources_follow_the_flux_rules() {
        let repository = yaml(
            "
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: platform, namespace: flux-system, generation: 2}
spec: {url: 'https://git.example.com/platform.git'}
status:
  observedGeneration: 2
  conditions:
  - {type: Ready, status: 'True', observedGeneration: 2, reason: Succeeded}
  - {type: ArtifactInStorage, status: 'True', observedGeneration: 2, reason: Succeeded}
",
        );
        assert_eq!(readiness(&repository), Readiness::Ready);
        let mut suspended = repository.clone();
        suspended["spec"]["suspend"] = json!(true);
        assert!(progress(&suspended).starts_with("suspended"));
        let mut stale = repository;
        stale["status"]["conditions"][0]["observedGeneration"] = json!(1);
        assert_eq!(progress(&stale), "Ready is from an older generation");
    }

    #[test]
    fn cluster_external_secret_last_condition_decides() {
        let ready = yaml(
            "
apiVersion: external-secrets.io/v1
kind: ClusterExternalSecret
metadata: {name: registry}
spec: {}
status:
  conditions:
  - {type: PartiallyReady, status: 'True', message: one or more namespaces failed}
  - {type: Ready, status: 'True'}
",
        );
        assert_eq!(readiness(&ready), Readiness::Ready);
        let mut failing = ready.clone();
        failing["status"]["conditions"][1] = json!({"type": "Ready", "status": "False", "message": "one or more namespaces failed"});
        failing["status"]["failedNamespaces"] = json!([{"namespace": "t", "reason": "external secret already exists in namespace"}]);
        assert_eq!(
            progress(&failing),
            "Ready=False: one or more namespaces failed; failed in t (external secret already exists in namespace)"
        );
        let mut legacy = ready;
        legacy["status"]["conditions"] = json!([{"type": "NotReady", "status": "True", "message": "one or more namespaces failed"}]);
        assert_eq!(progress(&legacy), "NotReady=True: one or more namespaces failed");
        let fresh = yaml("{apiVersion: external-secrets.io/v1, kind: ClusterExternalSecret, metadata: {name: r}, spec: {}}");
        assert!(progress(&fresh).starts_with("no status yet"));
    }

    #[test]
    fn conditions_are_listed_for_reports() {
        let object = json!({"status": {"conditions": [{"type": "Ready", "status": "False", "reason": "Waiting", "message": "pods"}]}});
        assert_eq!(conditions(&object), vec!["Ready=False (Waiting): pods".to_owned()]);
    }
}
