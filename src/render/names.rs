//! The naming contract: every name tfrs derives from a namespace, a server or a release that
//! something else relies on (an operator that reads a Secret, an object that points at another,
//! a robot or a person connecting to a Service). Each is built here and nowhere else: Rust calls
//! these functions, and templates get the results (the `names` and `server.names` values, see
//! `docs/templates.md`) instead of rebuilding them.
//!
//! Changing one of these renames a live object: the old one is pruned and whatever relied on the
//! old name breaks until it follows.

use crate::spec::Object;
use crate::spec::model::ServerSpec;
use serde::Serialize;

/// A tenant database: PostgreSQL or TimescaleDB (both CNPG clusters).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Database {
    /// The `postgresql` component's cluster.
    Postgresql,
    /// The `timescaledb` component's cluster.
    Timescaledb,
}

impl Database {
    /// The short form in the database's names: `pg` or `ts`.
    #[must_use]
    pub fn short(self) -> &'static str {
        match self {
            Database::Postgresql => "pg",
            Database::Timescaledb => "ts",
        }
    }
}

/// A database's CNPG Cluster: `<namespace>-pg` or `<namespace>-ts`. CNPG names its Services and
/// pods after it.
#[must_use]
pub fn database_cluster(namespace: &str, database: Database) -> String {
    format!("{namespace}-{}", database.short())
}

/// The read-write Service CNPG creates for a database cluster (`<cluster>-rw`): what robots'
/// `config.toml` and the db-init Jobs connect to.
#[must_use]
pub fn database_service(namespace: &str, database: Database) -> String {
    format!("{}-rw", database_cluster(namespace, database))
}

/// The `kubernetes.io/basic-auth` Secret of a database's owner (`app_user`):
/// `<namespace>-pg-credentials` or `<namespace>-ts-credentials`. CNPG bootstraps the owner from
/// it; the db-init Jobs read it to connect.
#[must_use]
pub fn database_owner_secret(namespace: &str, database: Database) -> String {
    format!("{}-credentials", database_cluster(namespace, database))
}

/// The Secret holding the Redis password (`<namespace>-redis-credentials`), read by the Redis
/// pod.
#[must_use]
pub fn redis_secret(namespace: &str) -> String {
    format!("{namespace}-redis-credentials")
}

/// The Secret holding MinIO's `config.env` (`<namespace>-minio-env`): the MinIO Tenant's
/// configuration, also sourced by the minio-init Jobs.
#[must_use]
pub fn minio_env_secret(namespace: &str) -> String {
    format!("{namespace}-minio-env")
}

/// The Secret of RabbitMQ's default user (`<namespace>-rabbitmq-credentials`), imported by the
/// RabbitMQ cluster operator.
#[must_use]
pub fn rabbitmq_secret(namespace: &str) -> String {
    format!("{namespace}-rabbitmq-credentials")
}

/// The Secret of Grafana's admin (`<namespace>-grafana-admin`), read by the Grafana chart and
/// the grafana-sa Jobs.
#[must_use]
pub fn grafana_admin_secret(namespace: &str) -> String {
    format!("{namespace}-grafana-admin")
}

/// The in-cluster DNS name of Service `service` in `namespace`
/// (`<service>.<namespace>.svc.cluster.local`).
#[must_use]
pub fn service_host(service: &str, namespace: &str) -> String {
    format!("{service}.{namespace}.svc.cluster.local")
}

/// The mesh's tracing provider of a namespace's collector (`otel-<namespace>`): istiod's
/// `extensionProviders` define it, the namespace's Telemetry object names it.
#[must_use]
pub fn tracing_provider(namespace: &str) -> String {
    format!("otel-{namespace}")
}

/// The Flux values Secret of the tfrs-operator release (`<release>-image-credentials`), which
/// its HelmRelease's `valuesFrom` names.
#[must_use]
pub fn operator_values_secret(release: &str) -> String {
    format!("{release}-image-credentials")
}

/// The host a server answers on when `spec.host` is empty: `<server>.<tenant>.<domain>` (on the
/// cluster Gateway's wildcard certificate). Users reach their robot there.
#[must_use]
pub fn default_host(server: &str, tenant: &str, domain: &str) -> String {
    format!("{server}.{tenant}.{domain}")
}

/// A server's Secret of `secretData` (`<server>-secret`), which both workers read through
/// `envFrom`.
#[must_use]
pub fn server_secret(server: &str) -> String {
    format!("{server}-secret")
}

/// A server's Secret holding `config.toml` (`<server>-confz`), mounted by both workers.
#[must_use]
pub fn server_confz(server: &str) -> String {
    format!("{server}-confz")
}

/// A server's ConfigMap of `configData` (`<server>-config`), which both workers read through
/// `envFrom`.
#[must_use]
pub fn server_config(server: &str) -> String {
    format!("{server}-config")
}

/// A server's API worker: Deployment and Service `<server>-api`, the route target of its
/// VirtualService and of the cluster VirtualService.
#[must_use]
pub fn api_worker(server: &str) -> String {
    format!("{server}-api")
}

/// A server's robot worker Deployment (`<server>-robot-worker`).
#[must_use]
pub fn robot_worker(server: &str) -> String {
    format!("{server}-robot-worker")
}

/// A server's database init Job (`<server>-db-init`).
#[must_use]
pub fn db_init_job(server: &str) -> String {
    format!("{server}-db-init")
}

/// A server's MinIO init Job (`<server>-minio-init`).
#[must_use]
pub fn minio_init_job(server: &str) -> String {
    format!("{server}-minio-init")
}

/// The ServiceAccount, Role, RoleBinding and Job of a server's Grafana service-account setup
/// (`<server>-grafana-sa`).
#[must_use]
pub fn grafana_sa(server: &str) -> String {
    format!("{server}-grafana-sa")
}

/// The Secret the grafana-sa Job writes the Grafana token to (`<server>-grafana-token`); both
/// workers read it as `GRAFANA_TOKEN`.
#[must_use]
pub fn grafana_token_secret(server: &str) -> String {
    format!("{server}-grafana-token")
}

/// A personal robot's PostgreSQL role: `robot_` and the server name with `-` -> `_`. The prefix
/// keeps it clear of `app_user`, of CNPG's `postgres` and `streaming_replica` and of the reserved
/// `pg_` and `cnpg_` prefixes; a server name (at most 50 characters) keeps it under PostgreSQL's
/// 63. The same role in the PostgreSQL and the TimescaleDB cluster; the robot connects as it.
#[must_use]
pub fn robot_role(server: &str) -> String {
    format!("robot_{}", server.replace('-', "_"))
}

/// The `kubernetes.io/basic-auth` Secret of a personal robot's role in a database cluster
/// (`<server>-pg-role`, `<server>-ts-role`): CNPG sets the role's password from the Secret named
/// in the Cluster's managed roles; the db-init Job reads it.
#[must_use]
pub fn robot_role_secret(server: &str, database: Database) -> String {
    format!("{server}-{}-role", database.short())
}

/// A personal robot's MinIO user (its access key, `robot-<server>`), and the name of its bucket
/// policy.
#[must_use]
pub fn robot_minio_user(server: &str) -> String {
    format!("robot-{server}")
}

/// The Secret the minio-init Job reads a personal robot's MinIO keys from (`<server>-minio-user`).
#[must_use]
pub fn robot_minio_secret(server: &str) -> String {
    format!("{server}-minio-user")
}

/// The server's bucket: its own, named after it. Bucket names need 3 characters; a shorter
/// server name gets `.robot`, which no server name (a DNS label, no dots) can collide with.
#[must_use]
pub fn bucket(server: &str) -> String {
    if server.len() < 3 { format!("{server}.robot") } else { server.to_owned() }
}

/// The names of a tenant namespace, as tenant and server templates get them (`names`).
#[derive(Debug, Clone, Serialize)]
pub struct NamespaceNames {
    /// [`database_cluster`] of PostgreSQL.
    pub pg_cluster: String,
    /// [`database_owner_secret`] of PostgreSQL.
    pub pg_secret: String,
    /// [`database_cluster`] of TimescaleDB.
    pub ts_cluster: String,
    /// [`database_owner_secret`] of TimescaleDB.
    pub ts_secret: String,
    /// [`redis_secret`].
    pub redis_secret: String,
    /// [`minio_env_secret`].
    pub minio_env: String,
    /// [`rabbitmq_secret`].
    pub rabbitmq_secret: String,
    /// [`grafana_admin_secret`].
    pub grafana_admin: String,
    /// [`service_host`] of the `minio` Service.
    pub minio_host: String,
    /// [`service_host`] of the `grafana` Service.
    pub grafana_host: String,
    /// [`service_host`] of the `jaeger` Service.
    pub jaeger_host: String,
    /// [`service_host`] of the `prometheus` Service.
    pub prometheus_host: String,
    /// [`tracing_provider`].
    pub tracing_provider: String,
    /// [`namespaced_release`] of the Jaeger chart.
    pub jaeger_release: String,
    /// [`namespaced_release`] of the Grafana chart.
    pub grafana_release: String,
}

impl NamespaceNames {
    /// The names of namespace `namespace`.
    #[must_use]
    pub fn new(namespace: &str) -> NamespaceNames {
        NamespaceNames {
            pg_cluster: database_cluster(namespace, Database::Postgresql),
            pg_secret: database_owner_secret(namespace, Database::Postgresql),
            ts_cluster: database_cluster(namespace, Database::Timescaledb),
            ts_secret: database_owner_secret(namespace, Database::Timescaledb),
            redis_secret: redis_secret(namespace),
            minio_env: minio_env_secret(namespace),
            rabbitmq_secret: rabbitmq_secret(namespace),
            grafana_admin: grafana_admin_secret(namespace),
            minio_host: service_host("minio", namespace),
            grafana_host: service_host("grafana", namespace),
            jaeger_host: service_host("jaeger", namespace),
            prometheus_host: service_host("prometheus", namespace),
            tracing_provider: tracing_provider(namespace),
            jaeger_release: namespaced_release(namespace, "jaeger"),
            grafana_release: namespaced_release(namespace, "grafana"),
        }
    }
}

/// The GitOps engine's object that installs an upstream release (a chart or a kustomize base):
/// with Flux (`engine` = `flux`), the source and the HelmRelease or Kustomization, named
/// `object`, in `flux-system`; with Argo CD, one Application named
/// `<cluster>-<object>-<kind>` (`kind` is `chart` or `manifests`): one Argo CD may hold the trees
/// of several clusters, and the components' own Applications are `<cluster>-<component>`.
/// Templates call it as `release_object(engine, cluster, object, kind)`.
#[must_use]
pub fn release_object(engine: &str, cluster: &str, object: &str, kind: &str) -> String {
    if engine == "flux" { object.to_owned() } else { format!("{cluster}-{object}-{kind}") }
}

/// The release object of a chart every tenant namespace installs for itself
/// (`<namespace>-<chart>`): one release name in many namespaces, while the engine's objects all
/// live in one namespace.
#[must_use]
pub fn namespaced_release(namespace: &str, chart: &str) -> String {
    format!("{namespace}-{chart}")
}

/// The names of one server, as server templates get them (`server.names`).
#[derive(Debug, Clone, Serialize)]
pub struct ServerNames {
    /// [`server_secret`].
    pub secret: String,
    /// [`server_confz`].
    pub confz: String,
    /// [`server_config`].
    pub config: String,
    /// [`api_worker`].
    pub api: String,
    /// [`service_host`] of the API worker's Service.
    pub api_host: String,
    /// [`robot_worker`].
    pub robot_worker: String,
    /// [`db_init_job`].
    pub db_init: String,
    /// [`minio_init_job`].
    pub minio_init: String,
    /// [`grafana_sa`].
    pub grafana_sa: String,
}

impl ServerNames {
    /// The names of server `server` in namespace `namespace`.
    #[must_use]
    pub fn new(server: &str, namespace: &str) -> ServerNames {
        ServerNames {
            secret: server_secret(server),
            confz: server_confz(server),
            config: server_config(server),
            api: api_worker(server),
            api_host: service_host(&api_worker(server), namespace),
            robot_worker: robot_worker(server),
            db_init: db_init_job(server),
            minio_init: minio_init_job(server),
            grafana_sa: grafana_sa(server),
        }
    }
}

/// The names of a personal robot's own credentials, as templates get them.
#[derive(Debug, Clone, Serialize)]
pub struct RobotNames {
    /// [`robot_role`].
    pub role: String,
    /// [`robot_role_secret`] in PostgreSQL.
    pub pg_secret: String,
    /// [`robot_role_secret`] in TimescaleDB.
    pub ts_secret: String,
    /// [`robot_minio_user`].
    pub minio_user: String,
    /// [`robot_minio_secret`].
    pub minio_secret: String,
}

impl RobotNames {
    /// The names of server `server`'s own credentials.
    #[must_use]
    pub fn new(server: &str) -> RobotNames {
        RobotNames {
            role: robot_role(server),
            pg_secret: robot_role_secret(server, Database::Postgresql),
            ts_secret: robot_role_secret(server, Database::Timescaledb),
            minio_user: robot_minio_user(server),
            minio_secret: robot_minio_secret(server),
        }
    }

    /// [`robot_role_secret`] in `database`.
    #[must_use]
    pub fn role_secret(&self, database: Database) -> &str {
        match database {
            Database::Postgresql => &self.pg_secret,
            Database::Timescaledb => &self.ts_secret,
        }
    }
}

/// The host a server answers on: `spec.host`, or `<server>.<tenant>.<domain>`.
#[must_use]
pub fn host(server: &Object<ServerSpec>, domain: &str) -> String {
    if server.spec.host.is_empty() { default_host(server.name(), &server.spec.tenant, domain) } else { server.spec.host.clone() }
}

// The cluster-wide names every component shares.

/// Namespace of Flux's own objects (Kustomizations, HelmReleases, sources).
pub const FLUX_NAMESPACE: &str = "flux-system";
/// Namespace of Argo CD's Applications.
pub const ARGOCD_NAMESPACE: &str = "argocd";
/// Argo CD project of every Application.
pub const ARGOCD_PROJECT: &str = "default";
/// Namespace of the External Secrets Operator and the billing identity's Secret.
pub const BILLING_NAMESPACE: &str = "external-secrets";
/// The ClusterSecretStore billing tokens are read through.
pub const BILLING_STORE: &str = "tfrs-otlp-infisical";
/// The Secret holding the read-only machine identity External Secrets signs in to Infisical with.
pub const BILLING_AUTH_SECRET: &str = "tfrs-otlp-infisical-auth-source";
/// The Secret each tenant namespace's collector reads the token from.
pub const BILLING_TOKEN_SECRET: &str = "tfrs-otlp-token";

/// The cluster Gateway (in `istio-ingress`) that every route binds to.
pub const GATEWAY: &str = "tfrs-gateway";

// The labels every object carries (their keys).

/// Label every object carries: who manages it.
pub const MANAGED_BY: (&str, &str) = ("app.kubernetes.io/managed-by", "tfrs");
/// Label every object carries: what it belongs to.
pub const PART_OF: &str = "app.kubernetes.io/part-of";
/// Label naming the component an object belongs to.
pub const COMPONENT: &str = "app.kubernetes.io/component";
/// Label naming the cluster an object belongs to.
pub const CLUSTER_LABEL: &str = "tfrs.turingfocus.cn/cluster";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn release_objects_are_unique_per_cluster_with_argo_cd_only() {
        assert_eq!(release_object("flux", "lab", "cert-manager", "chart"), "cert-manager");
        assert_eq!(release_object("argocd", "lab", "cert-manager", "chart"), "lab-cert-manager-chart");
        assert_eq!(release_object("argocd", "lab", "rabbitmq", "manifests"), "lab-rabbitmq-manifests");
        assert_eq!(NamespaceNames::new("acme").jaeger_release, "acme-jaeger");
    }

    #[test]
    fn robot_names_keep_clear_of_the_reserved_ones() {
        assert_eq!(robot_role("my-bot"), "robot_my_bot");
        assert_eq!(robot_role("postgres"), "robot_postgres");
        assert_eq!(robot_role("pg-x"), "robot_pg_x");
        assert!(robot_role(&"a".repeat(50)).len() <= 63);
        let names = RobotNames::new("my-bot");
        assert_eq!(names.pg_secret, "my-bot-pg-role");
        assert_eq!(names.ts_secret, "my-bot-ts-role");
        assert_eq!(names.minio_user, "robot-my-bot");
        assert_eq!(names.minio_secret, "my-bot-minio-user");
    }

    #[test]
    fn namespace_and_server_names() {
        let names = NamespaceNames::new("acme");
        assert_eq!(names.pg_secret, "acme-pg-credentials");
        assert_eq!(database_service("acme", Database::Timescaledb), "acme-ts-rw");
        assert_eq!(names.grafana_host, "grafana.acme.svc.cluster.local");
        let server = ServerNames::new("bot", "acme");
        assert_eq!((server.secret.as_str(), server.confz.as_str()), ("bot-secret", "bot-confz"));
        assert_eq!(server.api_host, "bot-api.acme.svc.cluster.local");
        assert_eq!(bucket("ab"), "ab.robot");
    }
}
