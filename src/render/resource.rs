//! A rendered Kubernetes object: its identity, its file name, and its body as the YAML it is
//! written as.
//!
//! The body is kept as text, not as a JSON value: a JSON value costs about eight times its YAML
//! in memory, and a large platform holds tens of thousands of objects until the tree is built.

use crate::manifest::to_yaml;
use crate::object::{ContentId, ObjectId};
use serde_json::Value as Json;

/// A rendered object.
#[derive(Debug, Clone, PartialEq)]
pub struct Resource {
    /// Which object it is.
    pub id: ObjectId,
    /// The whole object, as the YAML document written to its file (ends with a newline);
    /// empty when `kept`.
    pub text: String,
    /// Set when the render memo gave this object back unread: its file in the previous tree
    /// holds exactly these bytes (this content id), so the text is not carried at all.
    pub kept: Option<ContentId>,
}

impl Resource {
    /// Reads identity fields from a rendered object and writes it as YAML. `None` when an
    /// identity field is missing or not a string (the check stage reports that with context).
    ///
    /// # Errors
    ///
    /// As [`to_yaml`] (never, for JSON values).
    pub fn from_json(body: &Json) -> Result<Option<Resource>, serde_saphyr::ser::Error> {
        let Some(id) = ObjectId::read(body) else { return Ok(None) };
        Ok(Some(Resource { id, text: to_yaml(body)?, kept: None }))
    }

    /// The object as JSON, parsed back from its text (for tests and tools; the render itself
    /// never needs it).
    #[must_use]
    pub fn body(&self) -> Json {
        crate::manifest::read_object(self.text.as_bytes()).unwrap_or(Json::Null)
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
