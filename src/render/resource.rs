//! A rendered Kubernetes object: its identity, its file name, and its body as JSON.

use serde_json::Value as Json;

/// A rendered object.
#[derive(Debug, Clone, PartialEq)]
pub struct Resource {
    /// `apiVersion`.
    pub api_version: String,
    /// `kind`.
    pub kind: String,
    /// `metadata.namespace`, `None` for cluster-scoped kinds.
    pub namespace: Option<String>,
    /// `metadata.name`.
    pub name: String,
    /// The whole object.
    pub body: Json,
}

impl Resource {
    /// Reads identity fields from a rendered object. `None` when one is missing or not a string
    /// (the check stage reports that with context).
    #[must_use]
    pub fn from_json(body: Json) -> Option<Resource> {
        let text = |pointer: &str| body.pointer(pointer).and_then(Json::as_str).map(str::to_owned);
        Some(Resource {
            api_version: text("/apiVersion")?,
            kind: text("/kind")?,
            namespace: text("/metadata/namespace"),
            name: text("/metadata/name")?,
            body,
        })
    }

    /// The file this object is written to inside its component directory: `<kind>-<name>.yaml`
    /// in lowercase (DESIGN §5).
    #[must_use]
    pub fn file_name(&self) -> String {
        format!("{}-{}.yaml", self.kind.to_lowercase(), self.name.to_lowercase())
    }

    /// `Kind/namespace/name` (or `Kind/name`), as in messages.
    #[must_use]
    pub fn id(&self) -> String {
        match &self.namespace {
            Some(namespace) => format!("{}/{namespace}/{}", self.kind, self.name),
            None => format!("{}/{}", self.kind, self.name),
        }
    }
}

/// Kinds that have no namespace.
pub const CLUSTER_SCOPED: &[&str] = &[
    "Namespace",
    "ClusterRole",
    "ClusterRoleBinding",
    "CustomResourceDefinition",
    "ClusterIssuer",
    "ClusterSecretStore",
    "PersistentVolume",
    "StorageClass",
    "PriorityClass",
    "MutatingWebhookConfiguration",
    "ValidatingWebhookConfiguration",
];

/// Whether objects of this kind are cluster-scoped.
#[must_use]
pub fn is_cluster_scoped(kind: &str) -> bool {
    CLUSTER_SCOPED.contains(&kind)
}
