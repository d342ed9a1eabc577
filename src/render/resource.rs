//! A rendered Kubernetes object: its identity, its file name, and its body as the YAML it is
//! written as.
//!
//! The body is kept as text, not as a JSON value: a JSON value costs about eight times its YAML
//! in memory, and a large platform holds tens of thousands of objects until the tree is built.

use crate::manifest::to_yaml;
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
    /// The whole object, as the YAML document written to its file (ends with a newline).
    pub text: String,
}

impl Resource {
    /// Reads identity fields from a rendered object and writes it as YAML. `None` when an
    /// identity field is missing or not a string (the check stage reports that with context).
    ///
    /// # Errors
    ///
    /// As [`to_yaml`] (never, for JSON values).
    pub fn from_json(body: &Json) -> Result<Option<Resource>, serde_saphyr::ser::Error> {
        let field = |pointer: &str| body.pointer(pointer).and_then(Json::as_str).map(str::to_owned);
        let (Some(api_version), Some(kind), Some(name)) = (field("/apiVersion"), field("/kind"), field("/metadata/name")) else {
            return Ok(None);
        };
        Ok(Some(Resource { api_version, kind, namespace: field("/metadata/namespace"), name, text: to_yaml(body)? }))
    }

    /// The object as JSON, parsed back from its text (for tests and tools; the render itself
    /// never needs it).
    #[must_use]
    pub fn body(&self) -> Json {
        crate::manifest::read_object(self.text.as_bytes()).unwrap_or(Json::Null)
    }

    /// The file this object is written to inside its component directory: `<kind>-<name>.yaml`
    /// in lowercase, the name the output layout gives every object file.
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
    "IngressClass",
];

/// Whether objects of this kind are cluster-scoped.
#[must_use]
pub fn is_cluster_scoped(kind: &str) -> bool {
    CLUSTER_SCOPED.contains(&kind)
}
