//! The cluster guard: which cluster a kubeconfig context reaches, recorded on the cluster.
//!
//! `tfrs bootstrap` (or `tfrs reconcile --adopt`) writes the ConfigMap `kube-system/tfrs` with the name of the cluster the tree
//! was rendered for and the UID of the `kube-system` Namespace. The UID is made by the API server
//! when the cluster is created and never changes, so a ConfigMap copied onto another cluster
//! (a backup restored elsewhere, a manifest applied by hand) is told apart from the original.
//! Commands that act on a cluster ([`check`]) refuse a context whose record is missing or names
//! another cluster, before they send a single write.

use crate::object::ObjectId;
use crate::reconcile::apply::{Cause, Change, Target};
use serde_json::{Value, json};
use tokio::time::Instant;

/// The namespace of the identity ConfigMap.
pub const NAMESPACE: &str = "kube-system";
/// The name of the identity ConfigMap.
pub const NAME: &str = "tfrs";
/// The key holding the cluster name.
const CLUSTER_KEY: &str = "cluster";
/// The key holding the `kube-system` Namespace UID.
const UID_KEY: &str = "kubeSystemUID";

/// A cluster's identity: its name in the specs and its `kube-system` UID.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// The TFRCluster name.
    pub cluster: String,
    /// The UID of the `kube-system` Namespace.
    pub uid: String,
}

/// Why a context is refused.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    /// No identity recorded.
    #[error(
        "the cluster of this context has no tfrs identity (no ConfigMap `{NAMESPACE}/{NAME}`), so tfrs cannot tell it is `{expected}`; \
         if this context is the right one, pass `--adopt` to record it as `{expected}`"
    )]
    Missing {
        /// The cluster the tree was rendered for.
        expected: String,
    },
    /// The record names another cluster.
    #[error(
        "this context reaches cluster `{recorded}` (ConfigMap `{NAMESPACE}/{NAME}`), but the tree is for cluster `{expected}`: \
         pick the right context with `--context`"
    )]
    Other {
        /// The cluster the record names.
        recorded: String,
        /// The cluster the tree was rendered for.
        expected: String,
    },
    /// The record names this cluster but was made on another one (its UID differs).
    #[error(
        "ConfigMap `{NAMESPACE}/{NAME}` names cluster `{expected}` with kube-system UID {recorded}, but this cluster's kube-system UID is {live}: \
         the record was copied from another cluster; if this really is `{expected}`, record it again with `--adopt`"
    )]
    Copied {
        /// The cluster both name.
        expected: String,
        /// The UID in the record.
        recorded: String,
        /// The UID of this cluster.
        live: String,
    },
    /// The record is not a map of the two keys.
    #[error(
        "ConfigMap `{NAMESPACE}/{NAME}` has no `data.{0}`: it was not written by tfrs; delete it, then record the cluster with `--adopt`"
    )]
    Malformed(&'static str),
    /// The API server did not answer as expected.
    #[error("cannot read the cluster identity: {0}")]
    Api(#[from] Cause),
}

impl Refusal {
    /// Whether the API server could not be reached.
    #[must_use]
    pub fn is_connection(&self) -> bool {
        matches!(self, Refusal::Api(cause) if cause.is_connection())
    }
}

/// What [`check`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The record names this cluster.
    Matches(Identity),
    /// No record, or one copied from another cluster, and `adopt` was given: the caller writes
    /// it ([`record`]).
    Unrecorded(Identity),
}

fn reference() -> ObjectId {
    ObjectId::new("v1", "ConfigMap", Some(NAMESPACE), NAME)
}

/// The UID of `kube-system` on the target.
///
/// # Errors
///
/// The API's answer when the Namespace cannot be read.
pub async fn live_uid(target: &Target, deadline: Instant) -> Result<String, Cause> {
    let namespace = ObjectId::new("v1", "Namespace", None, NAMESPACE);
    let object =
        target.get(&namespace, deadline).await?.ok_or_else(|| Cause::Other(format!("the cluster has no `{NAMESPACE}` Namespace")))?;
    object
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| Cause::Other(format!("Namespace `{NAMESPACE}` has no UID")))
}

/// Reads the recorded identity; `None` when there is none.
///
/// # Errors
///
/// [`Refusal::Malformed`] for a ConfigMap without both keys; [`Refusal::Api`].
pub async fn recorded(target: &Target, deadline: Instant) -> Result<Option<Identity>, Refusal> {
    let Some(object) = target.get(&reference(), deadline).await? else {
        return Ok(None);
    };
    let field = |key: &'static str| {
        object.pointer(&format!("/data/{key}")).and_then(Value::as_str).map(str::to_owned).ok_or(Refusal::Malformed(key))
    };
    Ok(Some(Identity { cluster: field(CLUSTER_KEY)?, uid: field(UID_KEY)? }))
}

/// Checks that the target is cluster `expected`. With `adopt`, a missing record, or one copied
/// from another cluster under the same name, is [`Verdict::Unrecorded`] (to be [`record`]ed) instead
/// of a refusal; a record naming another cluster is always refused.
///
/// # Errors
///
/// A [`Refusal`] saying why the context may not be acted on.
pub async fn check(target: &Target, expected: &str, adopt: bool, deadline: Instant) -> Result<Verdict, Refusal> {
    let live = Identity { cluster: expected.to_owned(), uid: live_uid(target, deadline).await? };
    match recorded(target, deadline).await? {
        Some(found) if found.cluster != expected => Err(Refusal::Other { recorded: found.cluster, expected: expected.to_owned() }),
        Some(found) if found.uid == live.uid => Ok(Verdict::Matches(live)),
        Some(found) if !adopt => Err(Refusal::Copied { expected: expected.to_owned(), recorded: found.uid, live: live.uid }),
        None if !adopt => Err(Refusal::Missing { expected: expected.to_owned() }),
        _ => Ok(Verdict::Unrecorded(live)),
    }
}

/// The identity ConfigMap for `identity`.
#[must_use]
pub fn object(identity: &Identity) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": NAME,
            "namespace": NAMESPACE,
            "labels": {"app.kubernetes.io/managed-by": "tfrs", "app.kubernetes.io/part-of": "tfrs"},
        },
        "data": {CLUSTER_KEY: identity.cluster, UID_KEY: identity.uid},
    })
}

/// Writes the identity ConfigMap (server-side apply, taking over the two keys).
///
/// # Errors
///
/// The API's refusal.
pub async fn record(target: &Target, identity: &Identity, deadline: Instant) -> Result<Change, Cause> {
    target.apply(&object(identity), true, false, deadline).await.map(|(_, change)| change)
}
