//! The input model: `TFRCluster`, `TFRTenant`, `TFRServer` and `SecretSource`.
//!
//! A field left out takes its default from the `Default` impl of the struct that holds it: a
//! struct whose every field may be left out carries `#[serde(default)]`, so serde, the JSON
//! Schema (`tfrs schema` shows each default) and `--explain`'s built-in layer all read that one
//! impl. Unknown fields are rejected. Fields marked with `x-tfrs-check` in their schema get a
//! format check in [`super::schema`] (DNS labels, quantities, durations, environment variable
//! names).
//!
//! One file per kind (`cluster.rs`, `tenant.rs`, `server.rs`) and one for [`SecretSource`]
//! (`secrets.rs`); every type is re-exported here, so `model::ClusterSpec` and the like are the
//! paths to use.

mod cluster;
mod secrets;
mod server;
mod tenant;

pub use cluster::*;
pub use secrets::*;
pub use server::*;
pub use tenant::*;

use crate::catalog;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The only accepted `apiVersion`.
pub const API_VERSION: &str = "tfrs.turingfocus.cn/v1alpha1";

/// `metadata` of a spec document.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Metadata {
    /// The object name, a DNS-1123 label.
    #[schemars(extend("x-tfrs-check" = "dns-label"))]
    pub name: String,
    /// Accepted for compatibility with the operator's CRs and ignored: the namespace of a tenant
    /// or server is derived from the tenant (`tfrs validate` warns).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Labels, kept for tooling; not copied to rendered objects.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// Annotations, kept for tooling; not copied to rendered objects.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

/// A whole spec document: `apiVersion`, `kind`, `metadata`, `spec`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Document<S> {
    /// Always [`API_VERSION`].
    pub api_version: String,
    /// `TFRCluster`, `TFRTenant` or `TFRServer`.
    pub kind: String,
    /// Name and labels.
    pub metadata: Metadata,
    /// The kind's spec.
    pub spec: S,
}

/// A `TFRCluster` document.
pub type ClusterDocument = Document<ClusterSpec>;
/// A `TFRTenant` document.
pub type TenantDocument = Document<TenantSpec>;
/// A `TFRServer` document.
pub type ServerDocument = Document<ServerSpec>;

// ---------------------------------------------------------------------------------------------
// Shared pieces

/// A component that can be switched on or off and has a version (a chart version).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct VersionedComponent {
    /// Whether it is rendered.
    pub enabled: bool,
    /// Chart version; left out, the version the catalog pins
    /// (`tfrs version --components`).
    #[schemars(extend("x-tfrs-check" = "version"))]
    pub version: String,
}

impl Default for VersionedComponent {
    /// On, with no version: the field that holds it pins one (`VersionedComponent::pinned`).
    fn default() -> Self {
        VersionedComponent { enabled: true, version: String::new() }
    }
}

impl VersionedComponent {
    /// On, at the version catalog row `name` pins.
    fn pinned(name: &str) -> Self {
        VersionedComponent { version: catalog::version(name), ..VersionedComponent::default() }
    }

    /// Deserializes a component whose version, left out, is catalog row `name`'s: defaults
    /// hold field by field, so `{ enabled: true }` still pins the chart.
    fn deserialize_pinned<'de, D: serde::Deserializer<'de>>(deserializer: D, name: &str) -> Result<Self, D::Error> {
        let mut component = VersionedComponent::deserialize(deserializer)?;
        if component.version.is_empty() {
            component.version = catalog::version(name);
        }
        Ok(component)
    }
}

/// A component with only an on/off switch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Toggle {
    /// Whether it is rendered.
    pub enabled: bool,
}

impl Default for Toggle {
    fn default() -> Self {
        Toggle { enabled: true }
    }
}

/// Container resource requests and limits.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Resources {
    /// Requests.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requests: Option<ResourceList>,
    /// Limits.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limits: Option<ResourceList>,
}

/// Quantities per resource name.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct ResourceList {
    /// CPU, e.g. `500m` or `2`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-tfrs-check" = "quantity"))]
    pub cpu: Option<String>,
    /// Memory, e.g. `512Mi`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-tfrs-check" = "quantity"))]
    pub memory: Option<String>,
    /// Ephemeral storage, e.g. `1Gi`.
    #[serde(rename = "ephemeral-storage", skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-tfrs-check" = "quantity"))]
    pub ephemeral_storage: Option<String>,
}
