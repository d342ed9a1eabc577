//! A dev-only, in-process Kubernetes API simulator (the subset of the API `tfrs reconcile` uses):
//! discovery, GET/LIST/DELETE (no watches: a watch is refused with 405), server-side apply with field ownership, conflicts and `force`,
//! `dryRun`, the status subresource, generation and resourceVersion, CRD registration, fake
//! controllers that move status over time, and fault injection (429, 500, dropped connections,
//! delays).
//!
//! Lists in applied objects replace lists (no merge by key). Fake controllers act lazily: due
//! status changes are written when the next request arrives, with the time they were due.
//!
//! This file holds the model and the request routing; `sim/` holds server-side apply
//! (`apply.rs`), what the fake controllers write (`status.rs`) and the HTTP server with the
//! handle tests use (`server.rs`).

#![allow(dead_code)]

#[path = "sim/apply.rs"]
mod apply;
#[path = "sim/server.rs"]
mod server;
#[path = "sim/status.rs"]
mod status;

pub use status::{created_namespace, failed_status, has_controller, pending_status, ready_status};

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
        let label = |key: &str| object.pointer("/metadata/labels").and_then(|l| l.get(key)).and_then(Value::as_str);
        // `key!=value` matches objects without the label too, as the API server's selectors do.
        if let Some((key, value)) = term.split_once("!=") {
            return label(key) != Some(value);
        }
        let (key, value) = term.split_once('=').unwrap_or((term, ""));
        label(key) == Some(value.trim_start_matches('='))
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
            // NB: the simulator answers requests one at a time and serves no watches; reconcile
            // then reads objects itself (what it does where a watch is not allowed).
            ("GET", None) if query.get("watch").is_some_and(|w| w == "true" || w == "1") => {
                failure(405, "MethodNotAllowed", "the simulator serves no watches".into(), json!({}))
            }
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
