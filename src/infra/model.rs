//! `TFRInfra`: the central infrastructure of one environment (the compose stack on the
//! platform's own server), as a spec document.

use crate::catalog;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The `kind:` of an infrastructure spec.
pub const KIND: &str = "TFRInfra";

/// The environments a central infrastructure serves; each has its own Infisical instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Environment {
    /// `staging`.
    Staging,
    /// `beta`.
    Beta,
    /// `prod`.
    Prod,
}

impl Environment {
    /// Every environment.
    pub const ALL: [Environment; 3] = [Environment::Staging, Environment::Beta, Environment::Prod];

    /// The environment's slug (`staging`, `beta`, `prod`).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Environment::Staging => "staging",
            Environment::Beta => "beta",
            Environment::Prod => "prod",
        }
    }
}

/// A whole `TFRInfra` document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct InfraDocument {
    /// Always `tfrs.turingfocus.cn/v1alpha1`.
    pub api_version: String,
    /// Always `TFRInfra`.
    pub kind: String,
    /// The name (a DNS label), e.g. the environment.
    pub metadata: crate::spec::model::Metadata,
    /// What the server runs.
    pub spec: InfraSpec,
}

/// `TFRInfra.spec`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct InfraSpec {
    /// The environment this server serves: `staging`, `beta` or `prod`.
    pub environment: Environment,
    /// The business PostgreSQL (the manager's database).
    #[serde(default = "Postgres::business")]
    pub postgres: Postgres,
    /// The business Redis (cache, sessions).
    #[serde(default = "Redis::business")]
    pub redis: Redis,
    /// The central TimescaleDB: the billing record.
    #[serde(default)]
    pub timescaledb: Timescaledb,
    /// Infisical, with its own PostgreSQL and Redis.
    pub infisical: Infisical,
    /// The age recipients the secret-bearing files are encrypted for (SOPS).
    pub sops: Sops,
    /// Rotation counters of generated variables (`DB_PASSWORD: 1`): bumping one derives a new
    /// value for that variable, in every file that holds it.
    #[serde(default)]
    pub rotation: BTreeMap<String, u32>,
}

/// A PostgreSQL server of the stack.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Postgres {
    /// The image, pinned by tag.
    #[serde(default = "Postgres::business_image")]
    pub image: String,
    /// The host port on 127.0.0.1.
    #[serde(default = "Postgres::business_port")]
    pub port: u16,
    /// The database user (`DB_USER`).
    #[serde(default = "Postgres::business_user")]
    pub user: String,
    /// The database (`DB_NAME`).
    #[serde(default = "Postgres::business_database")]
    pub database: String,
    /// The data volume.
    #[serde(default = "Postgres::business_volume")]
    pub volume: String,
    /// The container's memory limit (`512m`, `2g`).
    #[serde(default = "memory_1g")]
    pub memory_limit: String,
}

impl Postgres {
    fn business() -> Self {
        Postgres {
            image: Postgres::business_image(),
            port: Postgres::business_port(),
            user: Postgres::business_user(),
            database: Postgres::business_database(),
            volume: Postgres::business_volume(),
            memory_limit: memory_1g(),
        }
    }
    fn business_image() -> String {
        catalog::pin("infra-postgres").image()
    }
    fn business_port() -> u16 {
        5432
    }
    fn business_user() -> String {
        "tfrs".to_owned()
    }
    fn business_database() -> String {
        "tfrs_manager".to_owned()
    }
    fn business_volume() -> String {
        "tfrs_pgdata".to_owned()
    }
}

/// A Redis server of the stack.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Redis {
    /// The image, pinned by tag.
    #[serde(default = "Redis::business_image")]
    pub image: String,
    /// The host port on 127.0.0.1.
    #[serde(default = "Redis::business_port")]
    pub port: u16,
    /// The data volume.
    #[serde(default = "Redis::business_volume")]
    pub volume: String,
    /// The container's memory limit.
    #[serde(default = "memory_512m")]
    pub memory_limit: String,
}

impl Redis {
    fn business() -> Self {
        Redis {
            image: Redis::business_image(),
            port: Redis::business_port(),
            volume: Redis::business_volume(),
            memory_limit: memory_512m(),
        }
    }
    fn business_image() -> String {
        catalog::pin("infra-redis").image()
    }
    fn business_port() -> u16 {
        6379
    }
    fn business_volume() -> String {
        "tfrs_redisdata".to_owned()
    }
}

/// The central TimescaleDB.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Timescaledb {
    /// The image, pinned by tag.
    pub image: String,
    /// The host port on 127.0.0.1.
    pub port: u16,
    /// The database user (`OTLP_TS_USER`).
    pub user: String,
    /// The database (`OTLP_TS_DBNAME`).
    pub database: String,
    /// The data volume.
    pub volume: String,
    /// The WAL archive volume.
    pub wal_archive_volume: String,
    /// The container's memory limit.
    pub memory_limit: String,
}

impl Default for Timescaledb {
    fn default() -> Self {
        Timescaledb {
            image: catalog::pin("infra-timescaledb").image(),
            port: 5433,
            user: "tfrs".to_owned(),
            database: "tfrs_billing".to_owned(),
            volume: "tfrs_tsdata".to_owned(),
            wal_archive_volume: "tfrs_ts_wal_archive".to_owned(),
            memory_limit: memory_1g(),
        }
    }
}

/// Infisical: one instance per environment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Infisical {
    /// The instance's URL (`INFISICAL_SITE_URL`, the manager's `INFISICAL_INTERNAL_URL`),
    /// `https://…`. A non-prod instance's host names its environment
    /// (`secret-staging.example.com`).
    pub url: String,
    /// The project id (project settings page).
    pub project_id: String,
    /// The project slug (project settings page): what billing uses, never the id.
    pub project_slug: String,
    /// The environment slug in the project (`staging`, `beta`, `prod`): the spec's
    /// `environment`.
    pub environment: String,
    /// The image, pinned by tag.
    #[serde(default = "Infisical::default_image")]
    pub image: String,
    /// The host port on 127.0.0.1 (the container listens on 8080).
    #[serde(default = "Infisical::default_port")]
    pub port: u16,
    /// The container's memory limit: at least `1536m`, or the first migration is killed.
    #[serde(default = "Infisical::default_memory")]
    pub memory_limit: String,
    /// Infisical's own PostgreSQL (internal, no host port).
    #[serde(default)]
    pub postgres: InternalPostgres,
    /// Infisical's own Redis (internal, no host port).
    #[serde(default)]
    pub redis: InternalRedis,
}

impl Infisical {
    fn default_image() -> String {
        catalog::pin("infisical").image()
    }
    fn default_port() -> u16 {
        8443
    }
    fn default_memory() -> String {
        "2g".to_owned()
    }
}

/// Infisical's own PostgreSQL (reached on the stack's network only).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct InternalPostgres {
    /// The image, pinned by tag.
    pub image: String,
    /// The data volume.
    pub volume: String,
    /// The container's memory limit.
    pub memory_limit: String,
}

impl Default for InternalPostgres {
    fn default() -> Self {
        InternalPostgres {
            image: catalog::pin("infisical-postgres").image(),
            volume: "tfrs_infisical_pgdata".to_owned(),
            memory_limit: memory_512m(),
        }
    }
}

/// Infisical's own Redis (reached on the stack's network only).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct InternalRedis {
    /// The image, pinned by tag.
    pub image: String,
    /// The data volume.
    pub volume: String,
    /// The container's memory limit.
    pub memory_limit: String,
}

impl Default for InternalRedis {
    fn default() -> Self {
        InternalRedis {
            image: catalog::pin("infisical-redis").image(),
            volume: "tfrs_infisical_redisdata".to_owned(),
            memory_limit: "256m".to_owned(),
        }
    }
}

/// SOPS encryption of the secret-bearing files.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Sops {
    /// `age1…` recipients (at least one).
    pub age_recipients: Vec<String>,
}

fn memory_1g() -> String {
    "1g".to_owned()
}

fn memory_512m() -> String {
    "512m".to_owned()
}
