//! A dev-only, in-process Kubernetes API simulator (the subset of the API `tfrs reconcile` uses):
//! discovery, GET/LIST/DELETE, server-side apply with field ownership, conflicts and `force`,
//! `dryRun`, the status subresource, generation and resourceVersion, CRD registration, fake
//! controllers that move status over time, and fault injection (429, 500, dropped connections,
//! delays).
//!
//! Lists in applied objects replace lists (no merge by key). Fake controllers act lazily: due
//! status changes are written when the next request arrives, with the time they were due.

#![allow(dead_code)]

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A served kind.
#[derive(Debug, Clone)]
pub struct Kind {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub plural: String,
    pub namespaced: bool,
}

impl Kind {
    fn api_version(&self) -> String {
        if self.group.is_empty() { self.version.clone() } else { format!("{}/{}", self.group, self.version) }
    }
}

/// How a fake controller treats an object.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Behaviour {
    /// Ready this long after each spec change.
    ReadyAfter(Duration),
    /// Reports progress, never readiness.
    Never,
    /// Fails for good this long after each spec change.
    FailAfter(Duration),
}

/// What a fault does.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FaultAction {
    /// Answer with this status code (429 gets `Retry-After: 1`).
    Status(u16),
    /// Close the connection without an answer.
    Drop,
    /// Answer normally after this delay.
    Delay(Duration),
}

/// A fault for the next `times` requests whose method matches and whose path contains `path`.
#[derive(Debug, Clone)]
pub struct Fault {
    pub method: Option<&'static str>,
    pub path: String,
    pub action: FaultAction,
    pub times: u32,
}

/// One request as the simulator saw it.
#[derive(Debug, Clone)]
pub struct Logged {
    pub method: String,
    pub path: String,
    pub query: String,
    pub at: Instant,
}

/// The life of one object: first persisted write, and when it became ready.
#[derive(Debug, Clone, Default)]
pub struct Life {
    pub applied: Option<Instant>,
    pub ready: Option<Instant>,
}

#[derive(Debug, Clone)]
struct Stored {
    object: Value,
    /// Field manager -> leaf paths it owns.
    owners: BTreeMap<String, BTreeSet<String>>,
    /// The next status transition: when, and whether it is readiness or failure.
    due: Option<(Instant, bool)>,
}

type Key = (String, String, String, String); // group, plural, namespace, name

struct State {
    kinds: Vec<Kind>,
    objects: BTreeMap<Key, Stored>,
    version: u64,
    behaviours: BTreeMap<String, Behaviour>,
    default_delay: Duration,
    crd_delay: Duration,
    pending_crds: Vec<(Instant, Kind)>,
    faults: Vec<Fault>,
    log: Vec<Logged>,
    lives: BTreeMap<String, Life>,
    faults_fired: u32,
}

/// The simulator: a running HTTP server on 127.0.0.1.
#[derive(Clone)]
pub struct Sim {
    state: Arc<Mutex<State>>,
    pub url: String,
}

fn builtin_kinds() -> Vec<Kind> {
    let k = |group: &str, version: &str, kind: &str, plural: &str, namespaced: bool| Kind {
        group: group.into(),
        version: version.into(),
        kind: kind.into(),
        plural: plural.into(),
        namespaced,
    };
    vec![
        k("", "v1", "Namespace", "namespaces", false),
        k("", "v1", "ConfigMap", "configmaps", true),
        k("", "v1", "Secret", "secrets", true),
        k("", "v1", "Service", "services", true),
        k("", "v1", "ServiceAccount", "serviceaccounts", true),
        k("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims", true),
        k("", "v1", "Pod", "pods", true),
        k("apps", "v1", "Deployment", "deployments", true),
        k("apps", "v1", "StatefulSet", "statefulsets", true),
        k("apps", "v1", "DaemonSet", "daemonsets", true),
        k("batch", "v1", "Job", "jobs", true),
        k("rbac.authorization.k8s.io", "v1", "Role", "roles", true),
        k("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings", true),
        k("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", false),
        k("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings", false),
        k("networking.k8s.io", "v1", "NetworkPolicy", "networkpolicies", true),
        k("apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions", false),
    ]
}

use tfrs_gitops::object::api_group as group_of;

fn text<'a>(object: &'a Value, pointer: &str) -> &'a str {
    object.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

/// `Kind/namespace/name` of an object.
pub fn id_of(object: &Value) -> String {
    let namespace = text(object, "/metadata/namespace");
    let (kind, name) = (text(object, "/kind"), text(object, "/metadata/name"));
    if namespace.is_empty() { format!("{kind}/{name}") } else { format!("{kind}/{namespace}/{name}") }
}

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

/// Leaf paths of an applied object (lists are atomic leaves); identity fields excluded.
fn leaves(value: &Value, prefix: &str, out: &mut BTreeSet<String>) {
    match value {
        Value::Object(map) if !map.is_empty() => {
            for (key, child) in map {
                let path = format!("{prefix}.{key}");
                if matches!(path.as_str(), ".apiVersion" | ".kind" | ".metadata.name" | ".metadata.namespace" | ".status") {
                    continue;
                }
                leaves(child, &path, out);
            }
        }
        _ => {
            out.insert(prefix.to_owned());
        }
    }
}

fn at<'a>(value: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').skip(1).try_fold(value, |v, key| v.get(key))
}

fn remove_at(value: &mut Value, path: &str) {
    let keys: Vec<&str> = path.split('.').skip(1).collect();
    let Some((last, parents)) = keys.split_last() else { return };
    let mut current = value;
    for key in parents {
        match current.get_mut(*key) {
            Some(next) => current = next,
            None => return,
        }
    }
    if let Some(map) = current.as_object_mut() {
        map.remove(*last);
    }
}

fn merge(into: &mut Value, from: &Value) {
    match (into, from) {
        (Value::Object(into), Value::Object(from)) => {
            for (key, value) in from {
                match into.get_mut(key) {
                    Some(existing) if existing.is_object() && value.is_object() => merge(existing, value),
                    _ => {
                        into.insert(key.clone(), value.clone());
                    }
                }
            }
        }
        (into, from) => *into = from.clone(),
    }
}

fn spec_part(object: &Value) -> Value {
    let mut copy = object.clone();
    if let Some(map) = copy.as_object_mut() {
        map.remove("metadata");
        map.remove("status");
    }
    copy
}

fn has_generation(kind: &Kind) -> bool {
    !(kind.group.is_empty() && matches!(kind.kind.as_str(), "ConfigMap" | "Secret" | "Namespace" | "ServiceAccount" | "Service"))
}

struct Reply {
    code: u16,
    body: Vec<u8>,
    plain: bool,
}

fn reply(code: u16, value: &Value) -> Reply {
    Reply { code, body: serde_json::to_vec(value).unwrap_or_default(), plain: false }
}

fn failure(code: u16, reason: &str, message: String, details: Value) -> Reply {
    reply(
        code,
        &json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message, "reason": reason, "details": details, "code": code}),
    )
}

fn page_not_found() -> Reply {
    Reply { code: 404, body: b"404 page not found\n".to_vec(), plain: true }
}

fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("");
                out.push(u8::from_str_radix(hex, 16).unwrap_or(b'?'));
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn query_map(query: &str) -> BTreeMap<String, String> {
    query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| p.split_once('=').map_or((decode(p), String::new()), |(k, v)| (decode(k), decode(v))))
        .collect()
}

fn labels_match(object: &Value, selector: &str) -> bool {
    selector.split(',').filter(|s| !s.is_empty()).all(|term| {
        let (key, value) = term.split_once('=').unwrap_or((term, ""));
        let value = value.trim_start_matches('=');
        object.pointer("/metadata/labels").and_then(|l| l.get(key)).and_then(Value::as_str) == Some(value)
    })
}

impl State {
    fn find_kind(&self, group: &str, version: &str, plural: &str) -> Option<Kind> {
        self.kinds.iter().find(|k| k.group == group && k.version == version && k.plural == plural).cloned()
    }

    fn behaviour(&self, object: &Value) -> Behaviour {
        let id = id_of(object);
        let name = text(object, "/metadata/name").to_owned();
        self.behaviours.get(&id).or_else(|| self.behaviours.get(&name)).copied().unwrap_or(Behaviour::ReadyAfter(self.default_delay))
    }

    fn bump(&mut self) -> String {
        self.version += 1;
        self.version.to_string()
    }

    /// Runs the fake controllers: due CRD registrations and status transitions.
    fn tick(&mut self, now: Instant) {
        let (due, later): (Vec<_>, Vec<_>) = self.pending_crds.drain(..).partition(|(when, _)| *when <= now);
        self.pending_crds = later;
        for (_, kind) in due {
            if !self.kinds.iter().any(|k| k.group == kind.group && k.version == kind.version && k.kind == kind.kind) {
                self.kinds.push(kind);
            }
        }
        let keys: Vec<Key> =
            self.objects.iter().filter(|(_, s)| s.due.is_some_and(|(when, _)| when <= now)).map(|(k, _)| k.clone()).collect();
        for key in keys {
            let version = self.bump();
            let Some(stored) = self.objects.get_mut(&key) else { continue };
            let Some((when, ready)) = stored.due.take() else { continue };
            let status = if ready { ready_status(&stored.object) } else { failed_status(&stored.object) };
            stored.object["status"] = status;
            stored.object["metadata"]["resourceVersion"] = json!(version);
            let created = if ready { created_namespace(&stored.object) } else { None };
            if ready {
                self.lives.entry(id_of(&stored.object)).or_default().ready = Some(when);
            }
            if let Some(namespace) = created {
                let object = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace, "resourceVersion": version}, "status": {"phase": "Active"}});
                self.objects.entry((String::new(), "namespaces".into(), String::new(), namespace)).or_insert(Stored {
                    object,
                    owners: BTreeMap::new(),
                    due: None,
                });
            }
        }
    }

    /// Schedules what the fake controller does after a spec change.
    fn schedule(&mut self, key: &Key, now: Instant) {
        let Some(stored) = self.objects.get(key) else { return };
        let object = stored.object.clone();
        let id = id_of(&object);
        if !has_controller(&object) {
            self.lives.entry(id).or_default().ready = Some(now);
            if text(&object, "/kind") == "Namespace"
                && let Some(stored) = self.objects.get_mut(key)
            {
                stored.object["status"] = json!({"phase": "Active"});
            }
            return;
        }
        let behaviour = self.behaviour(&object);
        let pending = pending_status(&object);
        let (due, crd_kind) = match behaviour {
            Behaviour::ReadyAfter(delay) => (Some((now + delay, true)), true),
            Behaviour::FailAfter(delay) => (Some((now + delay, false)), false),
            Behaviour::Never => (None, false),
        };
        let is_crd = group_of(text(&object, "/apiVersion")) == "apiextensions.k8s.io";
        let crd_due = now + self.crd_delay;
        let version = self.bump();
        if let Some(stored) = self.objects.get_mut(key) {
            stored.object["status"] = pending;
            stored.object["metadata"]["resourceVersion"] = json!(version);
            stored.due = if is_crd && crd_kind { Some((crd_due, true)) } else { due };
        }
        if is_crd && crd_kind {
            for version in object.pointer("/spec/versions").and_then(Value::as_array).into_iter().flatten() {
                self.pending_crds.push((
                    crd_due,
                    Kind {
                        group: text(&object, "/spec/group").into(),
                        version: text(version, "/name").into(),
                        kind: text(&object, "/spec/names/kind").into(),
                        plural: text(&object, "/spec/names/plural").into(),
                        namespaced: text(&object, "/spec/scope") == "Namespaced",
                    },
                ));
            }
        }
    }

    fn discovery(&self, path: &str) -> Option<Reply> {
        let served: BTreeMap<(String, String), Vec<&Kind>> = self.kinds.iter().fold(BTreeMap::new(), |mut m, k| {
            m.entry((k.group.clone(), k.version.clone())).or_insert_with(Vec::new).push(k);
            m
        });
        let resources = |group: &str, version: &str| -> Option<Reply> {
            let kinds = served.get(&(group.to_owned(), version.to_owned()))?;
            let mut list = Vec::new();
            for k in kinds {
                let verbs = json!(["create", "delete", "get", "list", "patch", "update", "watch"]);
                list.push(json!({"name": k.plural, "singularName": k.kind.to_lowercase(), "namespaced": k.namespaced, "kind": k.kind, "verbs": verbs}));
                list.push(json!({"name": format!("{}/status", k.plural), "singularName": "", "namespaced": k.namespaced, "kind": k.kind, "verbs": ["get", "patch", "update"]}));
            }
            Some(reply(
                200,
                &json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": kinds[0].api_version(), "resources": list}),
            ))
        };
        let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
        match segments.as_slice() {
            ["version"] => Some(reply(
                200,
                &json!({"major": "1", "minor": "20", "gitVersion": "v1.20.2-sim", "gitCommit": "sim", "gitTreeState": "clean", "buildDate": "2026-01-01T00:00:00Z", "goVersion": "go1.19", "compiler": "gc", "platform": "linux/amd64"}),
            )),
            ["api"] => Some(reply(
                200,
                &json!({"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}]}),
            )),
            ["apis"] => {
                let mut groups: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
                for (group, version) in served.keys() {
                    if !group.is_empty() {
                        groups.entry(group).or_default().push(version);
                    }
                }
                let groups: Vec<Value> = groups
                    .iter()
                    .map(|(g, vs)| {
                        let versions: Vec<Value> = vs.iter().map(|v| json!({"groupVersion": format!("{g}/{v}"), "version": v})).collect();
                        json!({"name": g, "versions": versions, "preferredVersion": versions[0]})
                    })
                    .collect();
                Some(reply(200, &json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})))
            }
            ["api", "v1"] => resources("", "v1"),
            ["apis", group, version] => Some(resources(group, version).unwrap_or_else(page_not_found)),
            ["apis", group] => {
                let versions: Vec<Value> = served
                    .keys()
                    .filter(|(g, _)| g == group)
                    .map(|(g, v)| json!({"groupVersion": format!("{g}/{v}"), "version": v}))
                    .collect();
                Some(if versions.is_empty() {
                    page_not_found()
                } else {
                    reply(
                        200,
                        &json!({"kind": "APIGroup", "apiVersion": "v1", "name": group, "versions": versions, "preferredVersion": versions[0]}),
                    )
                })
            }
            _ => None,
        }
    }

    fn handle(&mut self, method: &str, path: &str, query: &str, body: &[u8], now: Instant) -> Reply {
        self.tick(now);
        if method == "GET"
            && let Some(found) = self.discovery(path)
        {
            return found;
        }
        let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
        let (group, version, rest) = match segments.as_slice() {
            ["api", "v1", rest @ ..] => ("", "v1", rest),
            ["apis", group, version, rest @ ..] => (*group, *version, rest),
            _ => return page_not_found(),
        };
        let (namespace, plural, name, status) = match rest {
            ["namespaces", namespace, plural, tail @ ..] if tail.len() <= 2 => {
                (Some(*namespace), *plural, tail.first().copied(), tail.get(1) == Some(&"status"))
            }
            [plural, tail @ ..] if tail.len() <= 2 => (None, *plural, tail.first().copied(), tail.get(1) == Some(&"status")),
            _ => return page_not_found(),
        };
        let Some(kind) = self.find_kind(group, version, plural) else { return page_not_found() };
        if kind.namespaced != namespace.is_some() && name.is_some() {
            return page_not_found();
        }
        let query = query_map(query);
        let namespace = namespace.unwrap_or("").to_owned();
        match (method, name) {
            ("GET", None) => self.list(&kind, &namespace, &query),
            ("GET", Some(name)) => match self.objects.get(&(kind.group.clone(), kind.plural.clone(), namespace.clone(), name.to_owned())) {
                Some(stored) => reply(200, &stored.object),
                None => self.not_found(&kind, name),
            },
            ("PATCH", Some(name)) if status => self.patch_status(&kind, &namespace, name, body),
            ("PATCH", Some(name)) => self.apply(&kind, &namespace, name, body, &query, now),
            ("DELETE", Some(name)) => {
                let key = (kind.group.clone(), kind.plural.clone(), namespace.clone(), name.to_owned());
                match self.objects.remove(&key) {
                    Some(stored) => {
                        if kind.kind == "Namespace" && kind.group.is_empty() {
                            self.objects.retain(|k, _| k.2 != name);
                        }
                        self.bump();
                        reply(200, &stored.object)
                    }
                    None => self.not_found(&kind, name),
                }
            }
            _ => failure(
                405,
                "MethodNotAllowed",
                format!("the server does not allow this method on the requested resource ({method})"),
                json!({}),
            ),
        }
    }

    fn not_found(&self, kind: &Kind, name: &str) -> Reply {
        let resource = if kind.group.is_empty() { kind.plural.clone() } else { format!("{}.{}", kind.plural, kind.group) };
        failure(
            404,
            "NotFound",
            format!("{resource} \"{name}\" not found"),
            json!({"name": name, "group": kind.group, "kind": kind.plural}),
        )
    }

    fn list(&self, kind: &Kind, namespace: &str, query: &BTreeMap<String, String>) -> Reply {
        let labels = query.get("labelSelector").cloned().unwrap_or_default();
        let field = query.get("fieldSelector").cloned().unwrap_or_default();
        let items: Vec<Value> = self
            .objects
            .iter()
            .filter(|(k, _)| k.0 == kind.group && k.1 == kind.plural && (namespace.is_empty() || k.2 == namespace))
            .map(|(_, s)| &s.object)
            .filter(|o| labels_match(o, &labels))
            .filter(|o| field.strip_prefix("metadata.name=").is_none_or(|n| text(o, "/metadata/name") == n))
            .map(|o| {
                let mut item = o.clone();
                if let Some(map) = item.as_object_mut() {
                    map.remove("apiVersion");
                    map.remove("kind");
                }
                item
            })
            .collect();
        reply(
            200,
            &json!({"kind": format!("{}List", kind.kind), "apiVersion": kind.api_version(), "metadata": {"resourceVersion": self.version.to_string()}, "items": items}),
        )
    }

    fn patch_status(&mut self, kind: &Kind, namespace: &str, name: &str, body: &[u8]) -> Reply {
        let Ok(patch) = serde_json::from_slice::<Value>(body) else {
            return failure(400, "BadRequest", "the body is not JSON".into(), json!({}));
        };
        let key = (kind.group.clone(), kind.plural.clone(), namespace.to_owned(), name.to_owned());
        let version = self.bump();
        let Some(stored) = self.objects.get_mut(&key) else { return self.not_found(kind, name) };
        if let Some(status) = patch.get("status") {
            let mut current = stored.object.get("status").cloned().unwrap_or(json!({}));
            merge(&mut current, status);
            stored.object["status"] = current;
        }
        stored.object["metadata"]["resourceVersion"] = json!(version);
        reply(200, &stored.object)
    }

    fn apply(&mut self, kind: &Kind, namespace: &str, name: &str, body: &[u8], query: &BTreeMap<String, String>, now: Instant) -> Reply {
        let Some(manager) = query.get("fieldManager").filter(|m| !m.is_empty()).cloned() else {
            return failure(
                422,
                "Invalid",
                "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch".into(),
                json!({"group": "meta.k8s.io", "kind": "PatchOptions", "causes": [{"reason": "FieldValueRequired", "message": "Required value: is required for apply patch", "field": "fieldManager"}]}),
            );
        };
        let Ok(mut applied) = serde_json::from_slice::<Value>(body) else {
            return failure(400, "BadRequest", "the body is not JSON".into(), json!({}));
        };
        let body_name = text(&applied, "/metadata/name").to_owned();
        if body_name != name {
            return failure(
                400,
                "BadRequest",
                format!("the name of the object ({body_name}) does not match the name on the URL ({name})"),
                json!({}),
            );
        }
        if text(&applied, "/kind").is_empty() {
            return failure(500, "InternalError", "Object 'Kind' is missing".into(), json!({}));
        }
        if kind.namespaced {
            let key = (String::new(), "namespaces".to_owned(), String::new(), namespace.to_owned());
            if !self.objects.contains_key(&key) {
                return failure(
                    404,
                    "NotFound",
                    format!("namespaces \"{namespace}\" not found"),
                    json!({"name": namespace, "kind": "namespaces"}),
                );
            }
            applied["metadata"]["namespace"] = json!(namespace);
        }
        // NB: a status stanza in an apply takes field ownership on a 1.20 server; the simulator
        // drops it like the main resource endpoint does for everything with a status subresource.
        if let Some(map) = applied.as_object_mut() {
            map.remove("status");
        }
        let force = query.get("force").is_some_and(|f| f == "true");
        let dry_run = query.contains_key("dryRun");
        let key = (kind.group.clone(), kind.plural.clone(), namespace.to_owned(), name.to_owned());
        let mut fields = BTreeSet::new();
        leaves(&applied, "", &mut fields);
        let existing = self.objects.get(&key).cloned();
        let mut owners = existing.as_ref().map(|s| s.owners.clone()).unwrap_or_default();
        let mut object = existing.as_ref().map_or_else(|| json!({}), |s| s.object.clone());
        let mut conflicts = Vec::new();
        for (other, owned) in &owners {
            if other == &manager {
                continue;
            }
            for field in owned.intersection(&fields) {
                if at(&object, field) != at(&applied, field) {
                    conflicts.push((other.clone(), field.clone()));
                }
            }
        }
        if !conflicts.is_empty() && !force {
            let causes: Vec<Value> = conflicts
                .iter()
                .map(|(m, f)| json!({"reason": "FieldManagerConflict", "message": format!("conflict with \"{m}\""), "field": f}))
                .collect();
            let list: Vec<String> = conflicts.iter().map(|(m, f)| format!("conflict with \"{m}\": {f}")).collect();
            return failure(
                409,
                "Conflict",
                format!(
                    "Apply failed with {} conflict{}: {}",
                    conflicts.len(),
                    if conflicts.len() == 1 { "" } else { "s" },
                    list.join("; ")
                ),
                json!({"causes": causes}),
            );
        }
        for (other, owned) in owners.iter_mut() {
            if other != &manager {
                owned.retain(|f| !fields.contains(f));
            }
        }
        let previous = owners.get(&manager).cloned().unwrap_or_default();
        for dropped in previous.difference(&fields) {
            if !owners.iter().any(|(m, owned)| m != &manager && owned.contains(dropped)) {
                remove_at(&mut object, dropped);
            }
        }
        let before_spec = spec_part(&object);
        merge(&mut object, &applied);
        owners.insert(manager.clone(), fields);
        let created = existing.is_none();
        let spec_changed = created || spec_part(&object) != before_spec;
        let metadata_changed = existing.as_ref().is_none_or(|s| {
            s.object.get("metadata").map(|m| {
                let mut m = m.clone();
                if let Some(map) = m.as_object_mut() {
                    for f in ["resourceVersion", "generation", "uid", "creationTimestamp", "managedFields"] {
                        map.remove(f);
                    }
                }
                m
            }) != object.get("metadata").map(|m| {
                let mut m = m.clone();
                if let Some(map) = m.as_object_mut() {
                    for f in ["resourceVersion", "generation", "uid", "creationTimestamp", "managedFields"] {
                        map.remove(f);
                    }
                }
                m
            })
        });
        let changed = spec_changed || metadata_changed || owners != existing.as_ref().map(|s| s.owners.clone()).unwrap_or_default();
        object["apiVersion"] = json!(kind.api_version());
        object["kind"] = json!(kind.kind);
        let generation = object.pointer("/metadata/generation").and_then(Value::as_i64).unwrap_or(0);
        if has_generation(kind) && spec_changed {
            object["metadata"]["generation"] = json!(generation + 1);
        }
        if created {
            object["metadata"]["uid"] = json!(format!("uid-{}", self.version + 1));
            object["metadata"]["creationTimestamp"] = json!("2026-01-01T00:00:00Z");
        }
        object["metadata"]["managedFields"] =
            json!(owners.keys().map(|m| json!({"manager": m, "operation": "Apply", "fieldsType": "FieldsV1"})).collect::<Vec<_>>());
        if dry_run {
            if changed {
                object["metadata"]["resourceVersion"] = json!((self.version + 1).to_string());
            }
            return reply(if created { 201 } else { 200 }, &object);
        }
        if !changed {
            return reply(200, &existing.map(|s| s.object).unwrap_or(object));
        }
        let version = self.bump();
        object["metadata"]["resourceVersion"] = json!(version);
        let due = existing.as_ref().and_then(|s| s.due);
        self.objects.insert(key.clone(), Stored { object: object.clone(), owners, due });
        let id = id_of(&object);
        let life = self.lives.entry(id).or_default();
        life.applied.get_or_insert(now);
        if spec_changed {
            self.schedule(&key, now);
        }
        let stored = self.objects.get(&key).map(|s| s.object.clone()).unwrap_or(object);
        reply(if created { 201 } else { 200 }, &stored)
    }
}

/// Options of [`Sim::start`].
#[derive(Debug, Clone)]
pub struct Config {
    /// The delay of every fake controller without a [`Behaviour`].
    pub default_delay: Duration,
    /// The delay before an applied CRD is Established and served.
    pub crd_delay: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Config { default_delay: Duration::from_millis(30), crd_delay: Duration::from_millis(100) }
    }
}

impl Sim {
    /// Starts a simulator on 127.0.0.1 (a random port) on the current tokio runtime.
    pub async fn start(config: Config) -> Sim {
        let state = Arc::new(Mutex::new(State {
            kinds: builtin_kinds(),
            objects: BTreeMap::new(),
            version: 100,
            behaviours: BTreeMap::new(),
            default_delay: config.default_delay,
            crd_delay: config.crd_delay,
            pending_crds: Vec::new(),
            faults: Vec::new(),
            log: Vec::new(),
            lives: BTreeMap::new(),
            faults_fired: 0,
        }));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind the simulator");
        let url = format!("http://{}", listener.local_addr().expect("local address"));
        let shared = state.clone();
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else { continue };
                let state = shared.clone();
                tokio::spawn(async move {
                    let service = service_fn(move |request| serve(state.clone(), request));
                    let _ = http1::Builder::new().serve_connection(TokioIo::new(stream), service).await;
                });
            }
        });
        let sim = Sim { state, url };
        sim.seed_namespace("default");
        sim.seed_namespace("kube-system");
        sim
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Creates a namespace as if it always existed.
    pub fn seed_namespace(&self, name: &str) {
        let mut state = self.lock();
        let object = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "resourceVersion": "1"}, "status": {"phase": "Active"}});
        state.objects.insert(
            (String::new(), "namespaces".into(), String::new(), name.into()),
            Stored { object, owners: BTreeMap::new(), due: None },
        );
    }

    /// Serves a custom kind as if its CRD were installed already.
    pub fn serve(&self, api_version: &str, kind: &str, plural: &str, namespaced: bool) {
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        self.lock().kinds.push(Kind { group: group.into(), version: version.into(), kind: kind.into(), plural: plural.into(), namespaced });
    }

    /// Sets how the fake controller treats an object (`Kind/namespace/name`, or a bare name).
    pub fn behave(&self, object: &str, behaviour: Behaviour) {
        self.lock().behaviours.insert(object.into(), behaviour);
    }

    /// Adds a fault.
    pub fn fault(&self, fault: Fault) {
        self.lock().faults.push(fault);
    }

    /// How many injected faults fired.
    pub fn faults_fired(&self) -> u32 {
        self.lock().faults_fired
    }

    /// Every request so far.
    pub fn log(&self) -> Vec<Logged> {
        self.lock().log.clone()
    }

    /// Requests that were not reads.
    pub fn writes(&self) -> Vec<Logged> {
        self.log().into_iter().filter(|l| l.method != "GET").collect()
    }

    /// Each object's first write and readiness, by `Kind/namespace/name`.
    pub fn lives(&self) -> BTreeMap<String, Life> {
        let mut state = self.lock();
        state.tick(Instant::now());
        state.lives.clone()
    }

    /// A stored object by `Kind/namespace/name`.
    pub fn object(&self, id: &str) -> Option<Value> {
        self.lock().objects.values().map(|s| &s.object).find(|o| id_of(o) == id).cloned()
    }

    /// The number of stored objects.
    pub fn count(&self) -> usize {
        self.lock().objects.len()
    }

    /// A kubeconfig for this simulator.
    pub fn kubeconfig(&self) -> String {
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: sim\n  cluster:\n    server: {}\nusers:\n- name: sim\n  user:\n    token: sim\ncontexts:\n- name: sim\n  context:\n    cluster: sim\n    user: sim\ncurrent-context: sim\n",
            self.url
        )
    }

    /// A kube client for this simulator.
    pub fn client(&self) -> kube::Client {
        let mut config = kube::Config::new(self.url.parse().expect("simulator URL"));
        config.default_retry = false;
        kube::Client::try_from(config).expect("client")
    }
}

async fn serve(state: Arc<Mutex<State>>, request: Request<Incoming>) -> Result<Response<Full<Bytes>>, std::io::Error> {
    let (parts, body) = request.into_parts();
    let body = body.collect().await.map_err(std::io::Error::other)?.to_bytes();
    let method = parts.method.as_str().to_owned();
    let path = parts.uri.path().to_owned();
    let query = parts.uri.query().unwrap_or("").to_owned();
    let now = Instant::now();
    let fault = {
        let mut state = state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        state.log.push(Logged { method: method.clone(), path: path.clone(), query: query.clone(), at: now });
        let found = state.faults.iter_mut().find(|f| f.times > 0 && f.method.is_none_or(|m| m == method) && path.contains(&f.path));
        let action = found.map(|f| {
            f.times -= 1;
            f.action
        });
        if action.is_some() {
            state.faults_fired += 1;
        }
        action
    };
    match fault {
        Some(FaultAction::Drop) => return Err(std::io::Error::other("dropped by fault injection")),
        Some(FaultAction::Delay(delay)) => tokio::time::sleep(delay).await,
        Some(FaultAction::Status(code)) => {
            let reason = if code == 429 { "TooManyRequests" } else { "InternalError" };
            let answer = failure(code, reason, format!("injected fault {code}"), json!({}));
            let mut response = Response::builder().status(code).header("content-type", "application/json");
            if code == 429 {
                response = response.header("retry-after", "1");
            }
            return Ok(response.body(Full::new(Bytes::from(answer.body))).expect("response"));
        }
        None => {}
    }
    let answer = {
        let mut state = state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        state.handle(&method, &path, &query, &body, Instant::now())
    };
    let content_type = if answer.plain { "text/plain; charset=utf-8" } else { "application/json" };
    Ok(Response::builder()
        .status(answer.code)
        .header("content-type", content_type)
        .body(Full::new(Bytes::from(answer.body)))
        .expect("response"))
}
