//! `TFRTenant.spec`: a tenant's namespace and the middleware it runs there.

use super::{Resources, SecretSource, Toggle};
use crate::catalog;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `TFRTenant.spec`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[derive(Default)]
pub struct TenantSpec {
    /// The `TFRCluster` this tenant lives on. Exactly one of `cluster` and `clusters`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(extend("x-tfrs-check" = "dns-label"))]
    pub cluster: String,
    /// The `TFRCluster`s this tenant is placed in, one tenant per cluster under the same name,
    /// each with its cluster's overlays and environments. Exactly one of `cluster` and
    /// `clusters`; once loaded, each placement has its cluster in `cluster`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(min = 1))]
    pub clusters: Vec<String>,
    /// `enterprise` or `personal`.
    #[serde(default, rename = "type")]
    pub kind: TenantType,
    /// Personal only, required there: the namespace is `personal-<function>`.
    #[serde(default)]
    pub function: String,
    /// Enterprise only: the namespace, default the tenant name.
    #[serde(default)]
    pub namespace: String,
    /// PostgreSQL (CNPG).
    #[serde(default)]
    pub postgresql: Postgresql,
    /// TimescaleDB (CNPG with the extension).
    #[serde(default)]
    pub timescaledb: Timescaledb,
    /// Redis.
    #[serde(default)]
    pub redis: Redis,
    /// MinIO tenant.
    #[serde(default)]
    pub minio: Minio,
    /// RabbitMQ.
    #[serde(default)]
    pub rabbitmq: Rabbitmq,
    /// Jaeger.
    #[serde(default)]
    pub jaeger: Toggle,
    /// OpenTelemetry Collector.
    #[serde(default)]
    pub otel_collector: Toggle,
    /// Prometheus.
    #[serde(default)]
    pub prometheus: Prometheus,
    /// Grafana.
    #[serde(default)]
    pub grafana: Grafana,
    /// Vector.
    #[serde(default)]
    pub vector: Toggle,
    /// The ReadWriteMany shared cache volume.
    #[serde(default)]
    pub shared_cache: SharedCache,
    /// TFRobotFront.
    #[serde(default)]
    pub front: Front,
    /// TFRSUtils.
    #[serde(default)]
    pub utils: Utils,
    /// Per-component requests/limits overrides.
    #[serde(default)]
    pub resources: TenantResources,
}

/// Tenant type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum TenantType {
    /// Own namespace, own middleware.
    #[default]
    Enterprise,
    /// Shares `personal-<function>` with the other personal tenants of that function.
    Personal,
}

/// The volume size of PostgreSQL, TimescaleDB and MinIO when left out.
const VOLUME: &str = "10Gi";

/// PostgreSQL settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Postgresql {
    /// Whether it is rendered.
    pub enabled: bool,
    /// CNPG instances.
    #[schemars(range(min = 1, max = 9))]
    pub instances: u32,
    /// Volume size.
    #[schemars(extend("x-tfrs-check" = "quantity"))]
    pub storage: String,
    /// StorageClass, `""` = the cluster default.
    pub storage_class: String,
    /// Operand image.
    #[schemars(extend("x-tfrs-check" = "image"))]
    pub image: String,
    /// Password of `app_user`.
    pub password: SecretSource,
}

impl Default for Postgresql {
    fn default() -> Self {
        Postgresql {
            enabled: true,
            instances: 1,
            storage: VOLUME.to_owned(),
            storage_class: String::new(),
            image: catalog::pin("postgresql").image(),
            password: SecretSource::default(),
        }
    }
}

/// TimescaleDB settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Timescaledb {
    /// Off by default.
    pub enabled: bool,
    /// Volume size.
    #[schemars(extend("x-tfrs-check" = "quantity"))]
    pub storage: String,
    /// Password of its owner.
    pub password: SecretSource,
}

impl Default for Timescaledb {
    fn default() -> Self {
        Timescaledb { enabled: false, storage: VOLUME.to_owned(), password: SecretSource::default() }
    }
}

/// Redis settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Redis {
    /// Whether it is rendered.
    pub enabled: bool,
    /// Image.
    #[schemars(extend("x-tfrs-check" = "image"))]
    pub image: String,
    /// Volume size.
    #[schemars(extend("x-tfrs-check" = "quantity"))]
    pub storage: String,
    /// `requirepass`.
    pub password: SecretSource,
}

impl Default for Redis {
    fn default() -> Self {
        Redis { enabled: true, image: catalog::pin("redis").image(), storage: "1Gi".to_owned(), password: SecretSource::default() }
    }
}

/// MinIO settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Minio {
    /// Whether it is rendered.
    pub enabled: bool,
    /// Servers in the pool.
    #[schemars(range(min = 1))]
    pub servers: u32,
    /// Volumes per server.
    #[schemars(range(min = 1))]
    pub volumes_per_server: u32,
    /// Size of each volume.
    #[schemars(extend("x-tfrs-check" = "quantity"))]
    pub storage: String,
    /// Root user.
    pub root_user: SecretSource,
    /// Root password.
    pub root_password: SecretSource,
}

impl Default for Minio {
    fn default() -> Self {
        Minio {
            enabled: true,
            servers: 1,
            volumes_per_server: 1,
            storage: VOLUME.to_owned(),
            root_user: SecretSource::literal("minio-root"),
            root_password: SecretSource::default(),
        }
    }
}

/// RabbitMQ settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Rabbitmq {
    /// Whether it is rendered.
    pub enabled: bool,
    /// Broker replicas.
    #[schemars(range(min = 1, max = 9))]
    pub replicas: u32,
    /// Application user (a topology-operator `User`).
    pub username: SecretSource,
    /// Application password.
    pub password: SecretSource,
}

impl Default for Rabbitmq {
    fn default() -> Self {
        Rabbitmq { enabled: true, replicas: 1, username: SecretSource::literal("app"), password: SecretSource::default() }
    }
}

/// Prometheus settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Prometheus {
    /// Whether it is rendered.
    pub enabled: bool,
    /// TSDB retention (`--storage.tsdb.retention.time`), in Prometheus's grammar: `15d`,
    /// `1w3d`, `12h`; units `y`, `w`, `d`, `h`, `m`, `s`, `ms`, largest first.
    #[schemars(extend("x-tfrs-check" = "prometheus-duration"))]
    pub retention: String,
}

impl Default for Prometheus {
    fn default() -> Self {
        Prometheus { enabled: true, retention: "15d".to_owned() }
    }
}

/// Grafana settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Grafana {
    /// Whether it is rendered.
    pub enabled: bool,
    /// Admin password.
    pub admin_password: SecretSource,
}

impl Default for Grafana {
    fn default() -> Self {
        Grafana { enabled: true, admin_password: SecretSource::default() }
    }
}

/// The shared cache volume.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct SharedCache {
    /// Whether it is rendered.
    pub enabled: bool,
    /// Volume size.
    #[schemars(extend("x-tfrs-check" = "quantity"))]
    pub storage: String,
    /// StorageClass (must support ReadWriteMany), `""` = the cluster default.
    pub storage_class: String,
    /// Mount path in both workers; also `TFS_ROBOT__DOC_EXTRACTED_IMAGES_DIR`.
    #[schemars(extend("x-tfrs-check" = "absolute-path"))]
    pub cache_dir: String,
}

impl Default for SharedCache {
    fn default() -> Self {
        SharedCache { enabled: true, storage: "20Gi".to_owned(), storage_class: String::new(), cache_dir: "/data/shared-cache".to_owned() }
    }
}

/// TFRobotFront.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Front {
    /// Off by default.
    pub enabled: bool,
    /// Image (required when enabled).
    pub image: String,
    /// Replicas.
    #[schemars(range(min = 0))]
    pub replicas: u32,
}

impl Default for Front {
    fn default() -> Self {
        Front { enabled: false, image: String::new(), replicas: 1 }
    }
}

/// TFRSUtils.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Utils {
    /// Off by default.
    pub enabled: bool,
    /// Image (required when enabled).
    pub image: String,
}

/// Per-component resource overrides of a tenant.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct TenantResources {
    /// PostgreSQL.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub postgresql: Option<Resources>,
    /// TimescaleDB.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timescaledb: Option<Resources>,
    /// Redis.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub redis: Option<Resources>,
    /// MinIO.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub minio: Option<Resources>,
    /// RabbitMQ.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rabbitmq: Option<Resources>,
    /// Jaeger.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jaeger: Option<Resources>,
    /// OpenTelemetry Collector.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub otel_collector: Option<Resources>,
    /// Prometheus.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prometheus: Option<Resources>,
    /// Grafana.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grafana: Option<Resources>,
    /// Vector.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vector: Option<Resources>,
    /// TFRobotFront.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub front: Option<Resources>,
    /// TFRSUtils.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub utils: Option<Resources>,
}
