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
    clash["status"]["conditions"][0] =
        json!({"type": "NamesAccepted", "status": "False", "reason": "ListKindConflict", "message": "\"WidgetList\" is already in use"});
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
    hibernating["status"]["conditions"]
        .as_array_mut()
        .expect("conditions")
        .push(json!({"type": "cnpg.io/hibernation", "status": "False", "reason": "DeletingPods", "message": "Hibernation is in progress"}));
    assert_eq!(
        progress(&hibernating),
        "being hibernated (cnpg.io/hibernation: on): cnpg.io/hibernation=False (DeletingPods): Hibernation is in progress"
    );
    let mut hibernated = requested;
    hibernated["status"]["conditions"]
        .as_array_mut()
        .expect("conditions")
        .push(json!({"type": "cnpg.io/hibernation", "status": "True", "reason": "Hibernated", "message": "Cluster has been hibernated"}));
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
    assert_eq!(progress(&failing), "Ready=False: one or more namespaces failed; failed in t (external secret already exists in namespace)");
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
