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
    /// Only these of its tenant's clusters (default: every cluster the tenant is placed in).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(min = 1))]
    pub clusters: Vec<String>,
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
    /// The credential keys of `config.toml` that `confzData` replaces on purpose, each named
    /// (`postgresql.password`, ...). A credential key in `confzData` that is not named here is
    /// an error, and so is a name here that `confzData` does not set.
    #[serde(default)]
    pub confz_credential_overrides: Vec<ConfzCredential>,
    /// Which helper Jobs are rendered.
    #[serde(default)]
    pub jobs: Jobs,
}

/// A credential key of the generated `config.toml` (`<table>.<key>`): a value tfrs generates or
/// resolves for the server (a password, a key, a broker URL carrying a password). The one list
/// of them: the render writes these keys by it, validation guards them in `confzData`, and
/// `tfrs audit` searches the literals `confzData` gives them. Hosts, ports, users, database
/// names and buckets are not credentials: `confzData` overrides them freely.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema)]
pub enum ConfzCredential {
    /// `[postgresql] password`.
    #[serde(rename = "postgresql.password")]
    PostgresqlPassword,
    /// `[timescaledb] password`.
    #[serde(rename = "timescaledb.password")]
    TimescaledbPassword,
    /// `[redis] password`.
    #[serde(rename = "redis.password")]
    RedisPassword,
    /// `[celery] broker_url`, which carries the RabbitMQ password.
    #[serde(rename = "celery.broker_url")]
    CeleryBrokerUrl,
    /// `[cos] access_key`, the MinIO user.
    #[serde(rename = "cos.access_key")]
    CosAccessKey,
    /// `[cos] secret_key`, the MinIO password.
    #[serde(rename = "cos.secret_key")]
    CosSecretKey,
}

impl ConfzCredential {
    /// Every credential key, in `config.toml` order.
    pub const ALL: [ConfzCredential; 6] = [
        ConfzCredential::PostgresqlPassword,
        ConfzCredential::TimescaledbPassword,
        ConfzCredential::RedisPassword,
        ConfzCredential::CeleryBrokerUrl,
        ConfzCredential::CosAccessKey,
        ConfzCredential::CosSecretKey,
    ];

    /// Its table and key, as written in `confzCredentialOverrides`: `postgresql.password`.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            ConfzCredential::PostgresqlPassword => "postgresql.password",
            ConfzCredential::TimescaledbPassword => "timescaledb.password",
            ConfzCredential::RedisPassword => "redis.password",
            ConfzCredential::CeleryBrokerUrl => "celery.broker_url",
            ConfzCredential::CosAccessKey => "cos.access_key",
            ConfzCredential::CosSecretKey => "cos.secret_key",
        }
    }

    /// Its `config.toml` table: `postgresql`.
    #[must_use]
    pub fn table(self) -> &'static str {
        self.name().split_once('.').map_or("", |(table, _)| table)
    }

    /// Its key in the table: `password`.
    #[must_use]
    pub fn key(self) -> &'static str {
        self.name().split_once('.').map_or("", |(_, key)| key)
    }

    /// The credential at `key` of `table`, if it is one.
    #[must_use]
    pub fn find(table: &str, key: &str) -> Option<ConfzCredential> {
        ConfzCredential::ALL.into_iter().find(|c| c.table() == table && c.key() == key)
    }

    /// Whether the value names an identity rather than holding a secret (MinIO's access key is
    /// its user name, as `minio.rootUser` is): guarded like the others, never searched by
    /// `tfrs audit`.
    #[must_use]
    pub fn is_identity(self) -> bool {
        self == ConfzCredential::CosAccessKey
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_confz_credential_is_written_as_its_name() {
        for credential in ConfzCredential::ALL {
            let name = credential.name();
            assert_eq!(serde_json::to_value(credential).unwrap(), serde_json::Value::from(name));
            assert_eq!(serde_json::from_value::<ConfzCredential>(name.into()).unwrap(), credential);
            assert_eq!(format!("{}.{}", credential.table(), credential.key()), name);
            assert_eq!(ConfzCredential::find(credential.table(), credential.key()), Some(credential));
        }
        assert_eq!(ConfzCredential::find("postgresql", "port"), None);
    }
}
