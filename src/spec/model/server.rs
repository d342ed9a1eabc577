//! `TFRServer.spec`: one TFRobot deployment (API and robot workers) of a tenant.

use super::{Resources, SecretSource};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// `TFRServer.spec`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[derive(Default)]
pub struct ServerSpec {
    /// The `TFRTenant` this server belongs to.
    #[schemars(extend("x-tfrs-check" = "dns-label"))]
    pub tenant: String,
    /// The TFRobot image.
    pub image: Image,
    /// The API worker.
    #[serde(default)]
    pub api_worker: ApiWorker,
    /// The robot worker.
    #[serde(default)]
    pub robot_worker: RobotWorker,
    /// Public host, default `<server>.<tenant>.<ingress.domain>`.
    #[serde(default)]
    #[schemars(extend("x-tfrs-check" = "hostname"))]
    pub host: String,
    /// Secret environment: `<server>-secret`, mounted with envFrom.
    #[serde(default)]
    #[schemars(extend("propertyNames" = { "x-tfrs-check": "env-name" }))]
    pub secret_data: BTreeMap<String, SecretSource>,
    /// Plain environment: `<server>-config`, mounted with envFrom.
    #[serde(default)]
    #[schemars(extend("propertyNames" = { "x-tfrs-check": "env-name" }))]
    pub config_data: BTreeMap<String, String>,
    /// TOML deep-merged over the generated `config.toml`.
    #[serde(default)]
    pub confz_data: String,
    /// Which helper Jobs are rendered.
    #[serde(default)]
    pub jobs: Jobs,
}

/// An image reference split as Helm charts do.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Image {
    /// Repository, e.g. `docker.cnb.cool/turingfocus/tfrobot`.
    #[schemars(extend("x-tfrs-check" = "image"))]
    pub repository: String,
    /// Tag, e.g. `v1.8.0`.
    #[schemars(extend("x-tfrs-check" = "image-tag"))]
    pub tag: String,
}

/// The API worker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct ApiWorker {
    /// Replicas.
    #[schemars(range(max = 100))]
    pub replicas: u32,
    /// Container port.
    #[schemars(range(min = 1, max = 65535))]
    pub port: u16,
    /// Requests and limits.
    pub resources: Resources,
}

impl Default for ApiWorker {
    fn default() -> Self {
        ApiWorker { replicas: 2, port: 8000, resources: Resources::default() }
    }
}

/// The robot worker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct RobotWorker {
    /// Replicas.
    #[schemars(range(max = 100))]
    pub replicas: u32,
    /// Requests and limits.
    pub resources: Resources,
}

impl Default for RobotWorker {
    fn default() -> Self {
        RobotWorker { replicas: 1, resources: Resources::default() }
    }
}

/// Helper Jobs of a server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Jobs {
    /// Create the robot's schema in the tenant database.
    pub db_init: bool,
    /// Create the robot's MinIO bucket.
    pub minio_init: bool,
    /// Create a Grafana service account.
    pub grafana_service_account: bool,
}

impl Default for Jobs {
    fn default() -> Self {
        Jobs { db_init: true, minio_init: true, grafana_service_account: true }
    }
}
