//! The API side: discovery, server-side apply, reads, prune, with retries on transient errors.

use crate::object::ObjectId;
use crate::object::api_group as group_of;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams};
use kube::core::GroupVersionKind;
use kube::discovery::{self, ApiResource, Scope, verbs};
use kube::{Client, Discovery};
use serde_json::Value;
use std::collections::HashMap;
use std::future::Future;
use std::sync::Mutex;
use std::time::Duration;
use tokio::time::Instant;

/// The field manager of every apply.
pub const FIELD_MANAGER: &str = "tfrs";

/// The longest a single request may take before it counts as a dropped connection.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(20);

/// Attempts per request before a transient error is final.
const ATTEMPTS: u32 = 8;

/// Why an API request failed, as text fit for a report.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum Cause {
    /// The server answered with an error status.
    #[error("{code} {reason}: {message}")]
    Status {
        /// The HTTP code.
        code: u16,
        /// The machine-readable reason (`Conflict`, `NotFound`).
        reason: String,
        /// The server's message.
        message: String,
    },
    /// The kind is not served (no such group, version or kind in discovery).
    #[error("`{kind}` in `{api_version}` is not served by the API server")]
    NotServed {
        /// `apiVersion`.
        api_version: String,
        /// `kind`.
        kind: String,
    },
    /// The server could not be reached, the connection dropped or the request timed out.
    #[error("connection failed: {0}")]
    Connection(String),
    /// Anything else (a response that did not parse, a request that could not be built).
    #[error("{0}")]
    Other(String),
}

impl Cause {
    fn from_kube(error: &kube::Error) -> Self {
        match error {
            kube::Error::Api(status) => {
                Cause::Status { code: status.code, reason: status.reason.clone(), message: status.message.trim().to_owned() }
            }
            kube::Error::HyperError(e) => Cause::Connection(e.to_string()),
            kube::Error::Service(e) => Cause::Connection(e.to_string()),
            other => Cause::Other(other.to_string()),
        }
    }

    /// Whether retrying may help: 429, 5xx, connection problems, a kind not served yet.
    #[must_use]
    pub fn is_transient(&self) -> bool {
        match self {
            Cause::Status { code, .. } => *code == 429 || *code >= 500,
            Cause::Connection(_) | Cause::NotServed { .. } => true,
            Cause::Other(_) => false,
        }
    }

    /// Whether the API server itself could not be reached.
    #[must_use]
    pub fn is_connection(&self) -> bool {
        matches!(self, Cause::Connection(_))
    }

    /// Whether this is a 404.
    #[must_use]
    pub fn is_not_found(&self) -> bool {
        matches!(self, Cause::Status { code: 404, .. })
    }
}

/// How an apply went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// The object did not exist.
    Created,
    /// The object changed.
    Configured,
    /// Applying changed nothing.
    Unchanged,
}

/// What is known of an object just before it is applied (from a watch), so that how the apply
/// changed it can be told without reading it first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Before {
    /// Nothing: read it first.
    Unknown,
    /// It does not exist.
    Absent,
    /// It exists, with this [`digest`].
    Digest(u64),
}

/// A cluster reached through one kube client, with a discovery cache.
pub struct Target {
    client: Client,
    kinds: Mutex<HashMap<(String, String), (ApiResource, bool)>>,
}

impl Target {
    /// Wraps a client.
    #[must_use]
    pub fn new(client: Client) -> Self {
        Target { client, kinds: Mutex::new(HashMap::new()) }
    }

    /// Checks that the API server answers (`GET /version`), retrying transient errors.
    ///
    /// # Errors
    ///
    /// The last error once retries are spent.
    pub async fn check(&self) -> Result<String, Cause> {
        let deadline = Instant::now() + Duration::from_secs(30);
        let info = retry(deadline, 4, || self.client.apiserver_version()).await?;
        Ok(info.git_version)
    }

    /// The client.
    pub(crate) fn client(&self) -> &Client {
        &self.client
    }

    /// A kind found by an earlier request (and whether it is namespaced), without asking the
    /// server.
    pub(crate) fn known_resource(&self, api_version: &str, kind: &str) -> Option<(ApiResource, bool)> {
        let key = (api_version.to_owned(), kind.to_owned());
        self.kinds.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get(&key).cloned()
    }

    /// Whether the server serves a kind now (found in the cache, or by one discovery request,
    /// without retries).
    pub(crate) async fn discover_once(&self, api_version: &str, kind: &str) -> bool {
        let deadline = Instant::now() + REQUEST_TIMEOUT;
        self.resource_with(api_version, kind, deadline, 1).await.is_ok()
    }

    async fn resource(&self, api_version: &str, kind: &str, deadline: Instant) -> Result<(ApiResource, bool), Cause> {
        self.resource_with(api_version, kind, deadline, ATTEMPTS).await
    }

    async fn resource_with(&self, api_version: &str, kind: &str, deadline: Instant, attempts: u32) -> Result<(ApiResource, bool), Cause> {
        if let Some(found) = self.known_resource(api_version, kind) {
            return Ok(found);
        }
        let group = group_of(api_version);
        let version = api_version.rsplit('/').next().unwrap_or(api_version);
        let gvk = GroupVersionKind::gvk(group, version, kind);
        let not_served = || Cause::NotServed { api_version: api_version.to_owned(), kind: kind.to_owned() };
        let found = retry(deadline, attempts, || async {
            match discovery::pinned_kind(&self.client, &gvk).await {
                // NB: an unknown group or version answers a plain-text 404, and an unknown kind a
                // discovery error: both mean "not served (yet)", which a CRD being established
                // or an operator installing it can change, so they are retried like a 503.
                Err(kube::Error::Api(status)) if status.code == 404 => Err(Retried::Cause(not_served())),
                Err(kube::Error::Discovery(_)) => Err(Retried::Cause(not_served())),
                other => other.map_err(Retried::Kube),
            }
        })
        .await?;
        let entry = (found.0, found.1.scope == Scope::Namespaced);
        let key = (api_version.to_owned(), kind.to_owned());
        self.kinds.lock().unwrap_or_else(std::sync::PoisonError::into_inner).insert(key, entry.clone());
        Ok(entry)
    }

    async fn api(&self, reference: &ObjectId, deadline: Instant) -> Result<Api<DynamicObject>, Cause> {
        let (resource, namespaced) = self.resource(&reference.api_version, &reference.kind, deadline).await?;
        Ok(match (namespaced, reference.namespace()) {
            (true, Some(namespace)) => Api::namespaced_with(self.client.clone(), namespace, &resource),
            (true, None) => Api::default_namespaced_with(self.client.clone(), &resource),
            (false, _) => Api::all_with(self.client.clone(), &resource),
        })
    }

    /// Server-side-applies one object (field manager [`FIELD_MANAGER`]), returning what the
    /// server answered and how it changed.
    ///
    /// # Errors
    ///
    /// The server's refusal, or the last transient error at the deadline or after retries.
    pub async fn apply(&self, object: &Value, force: bool, dry_run: bool, deadline: Instant) -> Result<(Value, Change), Cause> {
        self.apply_after(object, force, dry_run, Before::Unknown, deadline).await
    }

    /// [`Target::apply`], told what the object was before (read first only when
    /// [`Before::Unknown`]).
    ///
    /// # Errors
    ///
    /// As [`Target::apply`].
    pub async fn apply_after(
        &self,
        object: &Value,
        force: bool,
        dry_run: bool,
        before: Before,
        deadline: Instant,
    ) -> Result<(Value, Change), Cause> {
        let reference = ObjectId::of(object);
        let api = self.api(&reference, deadline).await?;
        let before = match before {
            Before::Unknown => match retry(deadline, ATTEMPTS, || api.get_opt(&reference.name)).await? {
                Some(found) => Some(digest(&serde_json::to_value(found).map_err(|e| Cause::Other(e.to_string()))?)),
                None => None,
            },
            Before::Absent => None,
            Before::Digest(digest) => Some(digest),
        };
        let mut params = PatchParams::apply(FIELD_MANAGER);
        if force {
            params = params.force();
        }
        if dry_run {
            params = params.dry_run();
        }
        let patch = Patch::Apply(object);
        let after = retry(deadline, ATTEMPTS, || api.patch(&reference.name, &params, &patch)).await?;
        let after = serde_json::to_value(after).map_err(|e| Cause::Other(e.to_string()))?;
        let change = match before {
            None => Change::Created,
            Some(before) if before == digest(&after) => Change::Unchanged,
            Some(_) => Change::Configured,
        };
        Ok((after, change))
    }

    /// Server-side-applies one object with `dryRun=All` (field manager [`FIELD_MANAGER`], no
    /// force unless `force`) and returns what the server says the object would become; nothing
    /// is persisted.
    ///
    /// # Errors
    ///
    /// The server's refusal (a conflict, an invalid field, a missing namespace or kind).
    pub async fn dry_run(&self, object: &Value, force: bool, deadline: Instant) -> Result<Value, Cause> {
        let reference = ObjectId::of(object);
        let api = self.api(&reference, deadline).await?;
        let mut params = PatchParams::apply(FIELD_MANAGER).dry_run();
        if force {
            params = params.force();
        }
        let patch = Patch::Apply(object);
        let after = retry(deadline, ATTEMPTS, || api.patch(&reference.name, &params, &patch)).await?;
        serde_json::to_value(after).map_err(|e| Cause::Other(e.to_string()))
    }

    /// Reads one object; `None` when it does not exist.
    ///
    /// # Errors
    ///
    /// The last error after retries (a kind not served counts as "not found").
    pub async fn get(&self, reference: &ObjectId, deadline: Instant) -> Result<Option<Value>, Cause> {
        let api = match self.api(reference, deadline).await {
            Ok(api) => api,
            Err(Cause::NotServed { .. }) => return Ok(None),
            Err(other) => return Err(other),
        };
        let found = retry(deadline, ATTEMPTS, || api.get_opt(&reference.name)).await?;
        found.map(|object| serde_json::to_value(object).map_err(|e| Cause::Other(e.to_string()))).transpose()
    }

    /// Lists every object of one kind, in every namespace.
    ///
    /// # Errors
    ///
    /// [`Cause::NotServed`] for a kind the server does not serve; list failures after retries.
    pub async fn list(&self, api_version: &str, kind: &str, deadline: Instant) -> Result<Vec<Value>, Cause> {
        let (resource, _) = self.resource(api_version, kind, deadline).await?;
        let api: Api<DynamicObject> = Api::all_with(self.client.clone(), &resource);
        let params = ListParams::default();
        let list = retry(deadline, ATTEMPTS, || api.list(&params)).await?;
        list.items.into_iter().map(|item| serde_json::to_value(item).map_err(|e| Cause::Other(e.to_string()))).collect()
    }

    /// Lists every object, in every listable and deletable kind, that matches `selector`, in the
    /// kind's preferred version. What a controller makes for an owner copies the owner's labels
    /// but is not ours: callers that act on the list skip them ([`has_owner`]).
    ///
    /// # Errors
    ///
    /// Discovery or list failures after retries.
    pub async fn list_labelled(&self, selector: &str, deadline: Instant) -> Result<Vec<Value>, Cause> {
        use futures::StreamExt as _;
        let discovery = retry(deadline, ATTEMPTS, || Discovery::new(self.client.clone()).run()).await?;
        let resources: Vec<ApiResource> = discovery
            .groups()
            .flat_map(|group| group.recommended_resources())
            .filter(|(_, capabilities)| capabilities.supports_operation(verbs::LIST) && capabilities.supports_operation(verbs::DELETE))
            .map(|(resource, _)| resource)
            .collect();
        // NB: one list per kind, 16 at a time (a cluster serves a hundred kinds or more), in
        // discovery order.
        let lists: Vec<Result<Vec<Value>, Cause>> = futures::stream::iter(resources)
            .map(|resource| async move {
                let api: Api<DynamicObject> = Api::all_with(self.client.clone(), &resource);
                let params = ListParams::default().labels(selector);
                let list = retry(deadline, ATTEMPTS, || api.list(&params)).await?;
                let types = kube::core::TypeMeta { api_version: resource.api_version.clone(), kind: resource.kind.clone() };
                list.items
                    .into_iter()
                    .map(|mut item| {
                        item.types = Some(types.clone());
                        serde_json::to_value(item).map_err(|e| Cause::Other(e.to_string()))
                    })
                    .collect()
            })
            .buffered(16)
            .collect()
            .await;
        let mut found = Vec::new();
        for list in lists {
            found.extend(list?);
        }
        Ok(found)
    }

    /// Deletes one object (background propagation); a missing object is not an error.
    ///
    /// # Errors
    ///
    /// The last error after retries.
    pub async fn delete(&self, reference: &ObjectId, deadline: Instant) -> Result<(), Cause> {
        let api = self.api(reference, deadline).await?;
        let params = DeleteParams::background();
        match retry(deadline, ATTEMPTS, || api.delete(&reference.name, &params)).await {
            Ok(_) => Ok(()),
            Err(cause) if cause.is_not_found() => Ok(()),
            Err(cause) => Err(cause),
        }
    }
}

/// Whether a controller made `object` for an owner (the Secret a SealedSecret unseals, a
/// Service's EndpointSlices): it copies its owner's labels, but it is not ours.
#[must_use]
pub fn has_owner(object: &Value) -> bool {
    object.pointer("/metadata/ownerReferences").and_then(Value::as_array).is_some_and(|o| !o.is_empty())
}

/// A digest of an object without what every write changes (`status` and the server's metadata,
/// as [`strip`](super::rollout::strip) drops them): equal digests, an apply that changed
/// nothing. Keys are hashed in sorted order, so the order the server wrote them in does not
/// matter.
#[must_use]
pub fn digest(object: &Value) -> u64 {
    use std::collections::hash_map::DefaultHasher;
    use std::hash::{Hash, Hasher};
    fn feed(value: &Value, skip: &[&str], hasher: &mut DefaultHasher) {
        match value {
            Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().filter(|k| !skip.contains(&k.as_str())).collect();
                keys.sort();
                hasher.write_u8(b'{');
                for key in keys {
                    key.hash(hasher);
                    // NB: only the top level's `metadata` loses the server's fields.
                    let inner: &[&str] = if skip.contains(&"status") && key == "metadata" { &super::rollout::SERVER_METADATA } else { &[] };
                    feed(&map[key], inner, hasher);
                }
                hasher.write_u8(b'}');
            }
            Value::Array(items) => {
                hasher.write_u8(b'[');
                items.iter().for_each(|item| feed(item, &[], hasher));
                hasher.write_u8(b']');
            }
            Value::String(text) => {
                hasher.write_u8(b's');
                text.hash(hasher);
            }
            other => other.to_string().hash(hasher),
        }
    }
    let mut hasher = DefaultHasher::new();
    feed(object, &["status"], &mut hasher);
    hasher.finish()
}

/// An error from a retried operation: kube's own, or one already classified.
enum Retried {
    Kube(kube::Error),
    Cause(Cause),
}

impl From<kube::Error> for Retried {
    fn from(error: kube::Error) -> Self {
        Retried::Kube(error)
    }
}

/// Runs `operation` until it succeeds, fails for good, `attempts` are spent or `deadline`
/// passes. Transient errors (429, 5xx, connection) are retried with exponential backoff from
/// 100 ms up to 5 s (kube does not hand over a 429's `Retry-After`, so the backoff stands in); each
/// attempt is cut off after [`REQUEST_TIMEOUT`] (or at the deadline). Inside a rollout each
/// attempt holds a request slot while it runs, never while it backs off.
async fn retry<T, E, F, Fut>(deadline: Instant, attempts: u32, mut operation: F) -> Result<T, Cause>
where
    E: Into<Retried>,
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    let mut delay = Duration::from_millis(100);
    let mut attempt = 1;
    loop {
        // NB: inside a rollout, each attempt waits for a request slot (`limit`); the time it
        // waits is not the request's, so the cut-off starts once it has one.
        let slot = super::limit::slot().await;
        let left = deadline.saturating_duration_since(Instant::now()).max(Duration::from_secs(1));
        let answer = tokio::time::timeout(REQUEST_TIMEOUT.min(left), operation()).await;
        drop(slot);
        let cause = match answer {
            Ok(Ok(value)) => return Ok(value),
            Ok(Err(error)) => match error.into() {
                Retried::Kube(error) => Cause::from_kube(&error),
                Retried::Cause(cause) => cause,
            },
            Err(_) => Cause::Connection("no answer in time".into()),
        };
        if !cause.is_transient() || attempt >= attempts || Instant::now() + delay >= deadline {
            return Err(cause);
        }
        tokio::time::sleep(delay).await;
        delay = (delay * 2).min(Duration::from_secs(5));
        attempt += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_ignore_status_server_metadata_and_key_order() {
        let object = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "labels": {"a": "1", "b": "2"}}, "data": {"k": "v"}});
        let written = serde_json::json!({"kind": "ConfigMap", "apiVersion": "v1", "status": {"x": 1},
            "metadata": {"labels": {"b": "2", "a": "1"}, "resourceVersion": "9", "uid": "u", "managedFields": [], "name": "c"}, "data": {"k": "v"}});
        assert_eq!(digest(&object), digest(&written));
        let changed = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "labels": {"a": "1", "b": "2"}}, "data": {"k": "w"}});
        assert_ne!(digest(&object), digest(&changed));
        let nested = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "labels": {"a": "1", "b": "2"}}, "data": {"status": "v"}});
        assert_ne!(
            digest(&nested),
            digest(
                &serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "labels": {"a": "1", "b": "2"}}, "data": {}})
            ),
            "only the top-level status is dropped"
        );
    }

    #[test]
    fn transient_causes() {
        let status = |code| Cause::Status { code, reason: String::new(), message: String::new() };
        assert!(status(429).is_transient());
        assert!(status(503).is_transient());
        assert!(!status(409).is_transient());
        assert!(!status(422).is_transient());
        assert!(Cause::Connection("reset".into()).is_transient());
        assert!(!Cause::Other("bad".into()).is_transient());
    }

    #[tokio::test(start_paused = true)]
    async fn retries_transient_errors_until_success_and_stops_on_final_ones() {
        let calls = std::cell::Cell::new(0);
        let deadline = Instant::now() + Duration::from_secs(60);
        let result: Result<u8, Cause> = retry(deadline, ATTEMPTS, || {
            calls.set(calls.get() + 1);
            let n = calls.get();
            async move { if n < 3 { Err(Retried::Cause(Cause::Connection("dropped".into()))) } else { Ok(7) } }
        })
        .await;
        assert_eq!(result, Ok(7));
        assert_eq!(calls.get(), 3);

        calls.set(0);
        let result: Result<u8, Cause> = retry(deadline, ATTEMPTS, || {
            calls.set(calls.get() + 1);
            async { Err(Retried::Cause(Cause::Status { code: 409, reason: "Conflict".into(), message: "no".into() })) }
        })
        .await;
        assert!(matches!(result, Err(Cause::Status { code: 409, .. })));
        assert_eq!(calls.get(), 1);

        calls.set(0);
        let result: Result<u8, Cause> = retry(deadline, 3, || {
            calls.set(calls.get() + 1);
            async { Err(Retried::Cause(Cause::Status { code: 500, reason: String::new(), message: String::new() })) }
        })
        .await;
        assert!(result.is_err());
        assert_eq!(calls.get(), 3);
    }
}
