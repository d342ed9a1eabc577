//! The tenant-level components (what a TFRTenant installs and what each waits for: docs/components.md),
//! rendered once per tenant namespace: personal tenants of one function share
//! `personal-<function>` and its middleware (validation guarantees they agree).

use super::Component;
use super::engine::{Context, Frame};
use super::graph::{Graph, Member};
use super::names::ARGOCD_NAMESPACE;
use super::names::{self, Database, NamespaceNames, RobotNames};
use crate::secrets::PlainSecret;
use crate::spec::check::tenant_namespace;
use crate::spec::diagnostic::Rule;
use crate::spec::model::{ClusterSpec, SecretSource, ServerSpec, TenantSpec, TenantType};
use crate::spec::{Object, Spec};
use serde::Serialize;
use serde_json::Value as Json;
use std::collections::{BTreeMap, BTreeSet};
use zeroize::Zeroizing;

/// The database owner: the PostgreSQL user enterprise robots connect as.
pub const DATABASE_USER: &str = "app_user";
/// Namespaces whose workloads a tenant's mesh policy admits besides its own (monitoring).
pub const MONITORING_NAMESPACES: &[&str] = &["istio-system", "monitoring"];
/// The ingress gateway's identity (the `istio-ingressgateway` release in `istio-ingress`).
pub const INGRESS_PRINCIPAL: &str = "cluster.local/ns/istio-ingress/sa/istio-ingressgateway";

/// One tenant namespace: the tenants in it, and the one whose spec renders the middleware.
#[derive(Debug, Clone)]
pub struct Unit<'a> {
    /// The namespace.
    pub namespace: String,
    /// The tenant whose spec renders the shared components (the first by name).
    pub owner: &'a Object<TenantSpec>,
    /// Every tenant in the namespace, by name.
    pub tenants: Vec<&'a Object<TenantSpec>>,
    /// Every server of those tenants, by name.
    pub servers: Vec<&'a Object<ServerSpec>>,
}

/// The tenant namespaces of a cluster, by namespace.
#[must_use]
pub fn units<'a>(spec: &'a Spec, cluster: &str) -> Vec<Unit<'a>> {
    let mut by_namespace: BTreeMap<String, Vec<&Object<TenantSpec>>> = BTreeMap::new();
    let tenants = spec.tenants.iter().filter(|t| t.spec.cluster == cluster);
    tenants.for_each(|tenant| by_namespace.entry(tenant_namespace(tenant.name(), &tenant.spec)).or_default().push(tenant));
    // NB: servers grouped by tenant once (a search of every server per namespace was quadratic).
    let mut by_tenant: BTreeMap<&str, Vec<&Object<ServerSpec>>> = BTreeMap::new();
    spec.servers.iter().for_each(|server| by_tenant.entry(server.spec.tenant.as_str()).or_default().push(server));
    by_namespace
        .into_iter()
        .filter_map(|(namespace, mut tenants)| {
            tenants.sort_by(|a, b| a.name().cmp(b.name()));
            let mut servers: Vec<_> = tenants.iter().filter_map(|t| by_tenant.get(t.name())).flatten().copied().collect();
            servers.sort_by(|a, b| a.name().cmp(b.name()));
            Some(Unit { namespace, owner: *tenants.first()?, tenants, servers })
        })
        .collect()
}

/// A tenant component: name, tenant components it waits for, cluster components it waits for
/// (when the cluster renders them), whether the tenant turns it on, and its Secrets.
struct Definition {
    name: &'static str,
    after: &'static [&'static str],
    after_cluster: &'static [&'static str],
    enabled: fn(&ClusterSpec, &TenantSpec) -> bool,
    /// The Secrets it carries (sealed later, never templated).
    secrets: fn(&Owned<'_>) -> Vec<PlainSecret>,
}

/// What a tenant component's Secrets are made from.
struct Owned<'a> {
    namespace: &'a str,
    credentials: &'a Credentials,
    pull: Option<&'a PlainSecret>,
}

const DEFINITIONS: &[Definition] = &[
    // NB: after istiod, so that no pod of the namespace (which has `istio-injection: enabled`)
    // starts before the injection webhook exists and runs without its sidecar.
    Definition { name: "namespace", after: &[], after_cluster: &["istiod", "sealed-secrets"], enabled: |_, _| true, secrets: pull_copy },
    Definition { name: "mesh-policy", after: &["namespace"], after_cluster: &["istiod"], enabled: |c, _| c.istio.enabled, secrets: none },
    Definition {
        name: "postgresql",
        after: &["namespace"],
        after_cluster: &["cnpg-operator"],
        enabled: |_, t| t.postgresql.enabled,
        secrets: postgresql_secrets,
    },
    Definition {
        name: "timescaledb",
        after: &["postgresql"],
        after_cluster: &["cnpg-operator"],
        enabled: |_, t| t.timescaledb.enabled,
        secrets: timescaledb_secrets,
    },
    Definition { name: "redis", after: &["namespace"], after_cluster: &[], enabled: |_, t| t.redis.enabled, secrets: redis_secrets },
    Definition {
        name: "minio",
        after: &["namespace"],
        after_cluster: &["minio-operator"],
        enabled: |_, t| t.minio.enabled,
        secrets: minio_secrets,
    },
    Definition {
        name: "rabbitmq",
        after: &["namespace"],
        after_cluster: &["rabbitmq-operator"],
        enabled: |_, t| t.rabbitmq.enabled,
        secrets: rabbitmq_secrets,
    },
    Definition { name: "jaeger", after: &["namespace"], after_cluster: &[], enabled: |_, t| t.jaeger.enabled, secrets: none },
    Definition { name: "prometheus", after: &["namespace"], after_cluster: &[], enabled: |_, t| t.prometheus.enabled, secrets: none },
    Definition {
        name: "billing-token",
        after: &["namespace"],
        after_cluster: &["billing-store"],
        enabled: |c, t| c.billing.enabled && t.otel_collector.enabled,
        secrets: none,
    },
    Definition {
        name: "otel-collector",
        after: &["namespace", "jaeger", "billing-token"],
        after_cluster: &[],
        enabled: |_, t| t.otel_collector.enabled,
        secrets: none,
    },
    Definition { name: "grafana", after: &["namespace"], after_cluster: &[], enabled: |_, t| t.grafana.enabled, secrets: grafana_secrets },
    Definition { name: "vector", after: &["namespace"], after_cluster: &[], enabled: |_, t| t.vector.enabled, secrets: none },
    Definition { name: "shared-cache", after: &["namespace"], after_cluster: &[], enabled: |_, t| t.shared_cache.enabled, secrets: none },
    Definition { name: "front", after: &["namespace"], after_cluster: &[], enabled: |_, t| t.front.enabled, secrets: none },
    Definition { name: "utils", after: &["namespace"], after_cluster: &[], enabled: |_, t| t.utils.enabled, secrets: none },
];

/// The id of a tenant component.
#[must_use]
pub fn component_id(namespace: &str, name: &str) -> String {
    format!("namespaces/{namespace}/{name}")
}

/// Adds every tenant namespace's components to `graph` (which holds the cluster's).
pub fn extend_graph(graph: &mut Graph, cluster: &ClusterSpec, units: &[Unit<'_>]) {
    for unit in units {
        let members = DEFINITIONS.iter().map(|d| Member {
            name: d.name,
            after: d.after,
            external: d.after_cluster.iter().map(|name| format!("cluster/{name}")).collect(),
            enabled: (d.enabled)(cluster, &unit.owner.spec),
        });
        graph.add_group(members, |name| component_id(&unit.namespace, name));
    }
}

/// A personal robot's own credentials (docs/render.md, "Isolation model"). Enterprise robots
/// have none: they share `app_user` and the MinIO root key of their organisation.
#[derive(Clone, Default)]
pub struct Robot {
    /// Its PostgreSQL role, in the PostgreSQL and the TimescaleDB cluster alike.
    pub role: String,
    /// Its schema (`TFS_ROBOT__DB_SCHEMA`), which the role owns.
    pub schema: String,
    /// The role's PostgreSQL password, when the tenant runs PostgreSQL.
    pub postgresql: Option<Zeroizing<String>>,
    /// The role's TimescaleDB password, when the tenant runs TimescaleDB.
    pub timescaledb: Option<Zeroizing<String>>,
    /// Its MinIO access key and secret key, when the tenant runs MinIO.
    pub minio: Option<(String, Zeroizing<String>)>,
}

impl std::fmt::Debug for Robot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Robot").field("role", &self.role).field("schema", &self.schema).finish_non_exhaustive()
    }
}

/// The credentials of one namespace's middleware, for the servers that connect to it.
#[derive(Clone, Default)]
pub struct Credentials {
    /// PostgreSQL password of `app_user`.
    pub postgresql: Option<Zeroizing<String>>,
    /// TimescaleDB password of `app_user`.
    pub timescaledb: Option<Zeroizing<String>>,
    /// Redis password.
    pub redis: Option<Zeroizing<String>>,
    /// MinIO root user and password.
    pub minio: Option<(Zeroizing<String>, Zeroizing<String>)>,
    /// RabbitMQ user and password.
    pub rabbitmq: Option<(Zeroizing<String>, Zeroizing<String>)>,
    /// Grafana admin password.
    pub grafana: Option<Zeroizing<String>>,
    /// In a personal namespace, every robot's own credentials, by server name.
    pub robots: BTreeMap<String, Robot>,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Credentials(..)")
    }
}

/// The values of the tenant templates (`templates/tenant/*.yaml`), over the cluster's shared
/// values; `docs/templates.md` describes each key.
#[derive(Serialize)]
struct TenantValues<'a> {
    namespace: &'a str,
    database: &'a str,
    names: NamespaceNames,
    istio: bool,
    ingress_principal: &'static str,
    monitoring_namespaces: &'static [&'static str],
    platform_namespaces: Vec<String>,
    pull_secret: &'a str,
    redis_checksum: String,
    robots: Vec<RobotValues>,
    tenant: TenantInfo<'a>,
}

/// A personal robot, for the managed roles of its namespace's database clusters.
#[derive(Serialize)]
struct RobotValues {
    #[serde(flatten)]
    names: RobotNames,
    server: String,
    postgresql: bool,
    timescaledb: bool,
}

/// The tenant whose spec renders the namespace.
#[derive(Serialize)]
struct TenantInfo<'a> {
    name: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    tenants: Vec<&'a str>,
    /// Its spec as written (camelCase), credential fields removed.
    spec: Json,
}

/// Renders the components of one namespace. Returns its middleware credentials.
pub(crate) fn render(context: &mut Context<'_>, frame: &Frame<'_>, unit: &Unit<'_>, components: &mut Vec<Component>) -> Credentials {
    let namespace = unit.namespace.as_str();
    let credentials = credentials(context, frame.cluster.name(), unit);
    let values = super::engine::Shared::of(values(context, frame, unit, &credentials));
    let owned = Owned { namespace, credentials: &credentials, pull: frame.pull };
    for definition in DEFINITIONS {
        let id = component_id(namespace, definition.name);
        if !frame.graph.contains(&id) {
            continue;
        }
        let secrets = (definition.secrets)(&owned);
        let template = format!("tenant/{}.yaml", definition.name);
        let origin = unit.owner.locate("metadata.name");
        components.push(context.namespaced_component(frame, namespace, id, &template, &values, origin, secrets, "15m"));
    }
    credentials
}

/// The tenant templates' values of one namespace.
fn values<'a>(context: &Context<'_>, frame: &Frame<'a>, unit: &'a Unit<'_>, credentials: &Credentials) -> TenantValues<'a> {
    let namespace = unit.namespace.as_str();
    let owner = unit.owner;
    let mut spec = serde_json::to_value(&owner.spec).unwrap_or(Json::Null);
    redact(&mut spec);
    // A keyed checksum of the Redis password, so rotating it rolls the Redis pod (which reads it
    // only at start) together with the servers. Without a master key there is no key to hide
    // it with, and no checksum.
    let redis_checksum = match (context.master, &credentials.redis) {
        (Some(master), Some(password)) => {
            let binding = crate::secrets::fingerprint::Binding { backend: "checksum", sealer: "", scope: "", namespace, name: "redis" };
            master.fingerprint_key().fingerprint(&binding, "password", password.as_bytes())
        }
        _ => String::new(),
    };
    let robots = credentials
        .robots
        .iter()
        .map(|(server, robot)| RobotValues {
            names: RobotNames::new(server),
            server: server.clone(),
            postgresql: robot.postgresql.is_some(),
            timescaledb: robot.timescaledb.is_some(),
        })
        .collect();
    TenantValues {
        namespace,
        database: namespace,
        names: NamespaceNames::new(namespace),
        istio: frame.cluster.spec.istio.enabled,
        ingress_principal: INGRESS_PRINCIPAL,
        monitoring_namespaces: MONITORING_NAMESPACES,
        platform_namespaces: platform_namespaces(&frame.cluster.spec, frame.engine_namespace),
        pull_secret: frame.pull.map_or("", |p| p.name.as_str()),
        redis_checksum,
        robots,
        tenant: TenantInfo {
            name: owner.name(),
            kind: match owner.spec.kind {
                TenantType::Enterprise => "enterprise",
                TenantType::Personal => "personal",
            },
            tenants: unit.tenants.iter().map(|t| t.name()).collect(),
            spec,
        },
    }
}

/// Namespaces an enterprise tenant's NetworkPolicy admits besides its own: monitoring, and those
/// of the platform parts the cluster renders (mesh, ingress gateway, the middleware operators,
/// Argo CD's hooks).
fn platform_namespaces(cluster: &ClusterSpec, engine_namespace: &str) -> Vec<String> {
    let mut namespaces: BTreeSet<&str> = ["monitoring"].into_iter().collect();
    if cluster.istio.enabled {
        namespaces.extend(["istio-system", "istio-ingress"]);
    }
    for (enabled, namespace) in [
        (cluster.operators.cnpg.enabled, "cnpg-system"),
        (cluster.operators.minio.enabled, "minio-operator"),
        (cluster.operators.rabbitmq.enabled, "rabbitmq-system"),
    ] {
        if enabled {
            namespaces.insert(namespace);
        }
    }
    if engine_namespace == ARGOCD_NAMESPACE {
        namespaces.insert(ARGOCD_NAMESPACE);
    }
    namespaces.into_iter().map(str::to_owned).collect()
}

/// Resolves every credential of a namespace's middleware, over logical paths
/// `cluster/<cluster>/namespace/<namespace>/<component>/<field>`: one path per credential, so
/// every consumer gets the same value.
fn credentials(context: &mut Context<'_>, cluster: &str, unit: &Unit<'_>) -> Credentials {
    let owner = unit.owner;
    let spec = &owner.spec;
    let base = format!("cluster/{cluster}/namespace/{}", unit.namespace);
    let mut resolve = |field: &str, source: &SecretSource| -> Option<Zeroizing<String>> {
        let path = format!("{base}/{}", field.trim_start_matches("spec.").replace('.', "/"));
        context.secret_text(owner, field, source, &path)
    };
    let mut credentials = Credentials::default();
    let mut problems = Vec::new();
    if spec.postgresql.enabled {
        credentials.postgresql = resolve("spec.postgresql.password", &spec.postgresql.password);
    }
    if spec.timescaledb.enabled {
        credentials.timescaledb = resolve("spec.timescaledb.password", &spec.timescaledb.password);
    }
    if spec.redis.enabled {
        credentials.redis = resolve("spec.redis.password", &spec.redis.password);
        if credentials.redis.as_ref().is_some_and(|v| !fit_for_redis_args(v)) {
            problems.push(crate::spec::Diagnostic::error(
                Rule::Consistency,
                owner.locate("spec.redis.password"),
                "spec.redis.password",
                "may not contain whitespace or `*`, `?`, `[`: the Redis image passes `REDIS_ARGS` through the shell unquoted",
            ));
        }
    }
    if spec.minio.enabled {
        let user = resolve("spec.minio.rootUser", &spec.minio.root_user);
        let password = resolve("spec.minio.rootPassword", &spec.minio.root_password);
        for (field, value) in [("spec.minio.rootUser", &user), ("spec.minio.rootPassword", &password)] {
            if value.as_ref().is_some_and(|v| !fit_for_config_env(v)) {
                problems.push(crate::spec::Diagnostic::error(
                    Rule::Consistency,
                    owner.locate(field),
                    field,
                    "may not contain `\"`, `\\`, `$`, backticks or line breaks: MinIO reads `config.env` without shell unquoting",
                ));
            }
        }
        credentials.minio = user.zip(password);
    }
    if spec.rabbitmq.enabled {
        let user = resolve("spec.rabbitmq.username", &spec.rabbitmq.username);
        let password = resolve("spec.rabbitmq.password", &spec.rabbitmq.password);
        credentials.rabbitmq = user.zip(password);
    }
    if spec.grafana.enabled {
        credentials.grafana = resolve("spec.grafana.adminPassword", &spec.grafana.admin_password);
    }
    context.errors.extend(problems);
    if spec.kind == TenantType::Personal {
        credentials.robots = robots(context, &base, unit, &credentials);
    }
    credentials
}

/// Resolves the own credentials of every robot of a personal namespace, over logical paths
/// `cluster/<cluster>/namespace/<namespace>/servers/<server>/<component>/<field>` (always
/// generated: a server has no field to set them), and checks that each has a schema of its own.
fn robots(context: &mut Context<'_>, base: &str, unit: &Unit<'_>, credentials: &Credentials) -> BTreeMap<String, Robot> {
    use super::config::{DB_SCHEMA_KEY, config_data};
    let spec = &unit.owner.spec;
    let generated = SecretSource::default();
    let mut robots = BTreeMap::new();
    let mut schemas: BTreeMap<String, &str> = BTreeMap::new();
    for &server in &unit.servers {
        let name = server.name();
        let schema = config_data(name, &server.spec, spec).remove(DB_SCHEMA_KEY).unwrap_or_default();
        let field = if server.spec.config_data.contains_key(DB_SCHEMA_KEY) {
            format!("spec.configData.{DB_SCHEMA_KEY}")
        } else {
            "metadata.name".to_owned()
        };
        let databases = spec.postgresql.enabled || spec.timescaledb.enabled;
        if let Some(problem) = schema_problem(&schema).filter(|_| databases) {
            context.errors.push(crate::spec::Diagnostic::error(Rule::Consistency, server.locate(&field), &field, problem));
        } else if let Some(first) = schemas.insert(schema.clone(), name).filter(|_| databases) {
            context.errors.push(crate::spec::Diagnostic::error(
                Rule::Consistency,
                server.locate(&field),
                &field,
                format!("schema `{schema}` is also server `{first}`'s: each robot of a personal namespace needs a schema of its own"),
            ));
        }
        let path = |part: &str| format!("{base}/servers/{name}/{part}");
        let mut robot = Robot { role: names::robot_role(name), schema, ..Robot::default() };
        if spec.postgresql.enabled {
            robot.postgresql = context.secret_text(server, "metadata.name", &generated, &path("postgresql/password"));
        }
        if spec.timescaledb.enabled {
            robot.timescaledb = context.secret_text(server, "metadata.name", &generated, &path("timescaledb/password"));
        }
        if spec.minio.enabled {
            let user = names::robot_minio_user(name);
            if credentials.minio.as_ref().is_some_and(|(root, _)| root.as_str() == user) {
                context.errors.push(crate::spec::Diagnostic::error(
                    Rule::Consistency,
                    unit.owner.locate("spec.minio.rootUser"),
                    "spec.minio.rootUser",
                    format!("`{user}` is the MinIO user of server `{name}`: choose another root user"),
                ));
            }
            robot.minio = context.secret_text(server, "metadata.name", &generated, &path("minio/secretKey")).map(|key| (user, key));
        }
        robots.insert(name.to_owned(), robot);
    }
    robots
}

/// Why `schema` cannot be a personal robot's own schema, if it cannot: it must be a plain
/// lowercase identifier (the same whether a client quotes it or not) that PostgreSQL and
/// TimescaleDB do not keep for themselves.
fn schema_problem(schema: &str) -> Option<String> {
    let plain = schema.len() <= 63
        && schema.starts_with(|c: char| c.is_ascii_lowercase())
        && schema.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
    if !plain {
        return Some(format!(
            "a personal robot's schema must be lowercase letters, digits and `_`, start with a letter and have at most 63 characters; found {schema:?}"
        ));
    }
    let reserved = matches!(schema, "public" | "information_schema") || schema.starts_with("pg_") || schema.starts_with("timescaledb_");
    reserved.then(|| format!("`{schema}` is a schema the database keeps for itself or shares: a personal robot needs one of its own"))
}

/// A Secret of a tenant component.
fn secret(owned: &Owned<'_>, name: String, kind: &str, data: Vec<(&str, &[u8])>) -> PlainSecret {
    PlainSecret {
        name,
        namespace: owned.namespace.to_owned(),
        kind: kind.to_owned(),
        data: data.into_iter().map(|(k, v)| (k.to_owned(), Zeroizing::new(v.to_vec()))).collect(),
        ..PlainSecret::default()
    }
}

/// No Secret.
fn none(_: &Owned<'_>) -> Vec<PlainSecret> {
    Vec::new()
}

/// The `namespace` component's: the image-pull Secret, copied into the namespace.
fn pull_copy(owned: &Owned<'_>) -> Vec<PlainSecret> {
    let copy = |pull: &PlainSecret| PlainSecret { namespace: owned.namespace.to_owned(), ..pull.clone() };
    owned.pull.map(copy).into_iter().collect()
}

/// A database's Secrets: the owner's credentials, then each personal robot's role (CNPG sets
/// its password from the Secret named in the Cluster's managed roles: `username` must be the
/// role).
fn database_secrets(
    owned: &Owned<'_>,
    database: Database,
    owner: Option<&Zeroizing<String>>,
    password: fn(&Robot) -> Option<&Zeroizing<String>>,
) -> Vec<PlainSecret> {
    let basic_auth = "kubernetes.io/basic-auth";
    let owner = owner.map(|p| {
        let data = vec![("username", DATABASE_USER.as_bytes()), ("password", p.as_bytes())];
        secret(owned, names::database_owner_secret(owned.namespace, database), basic_auth, data)
    });
    let robots = owned.credentials.robots.iter().filter_map(|(server, robot)| {
        let data = vec![("username", robot.role.as_bytes()), ("password", password(robot)?.as_bytes())];
        Some(secret(owned, names::robot_role_secret(server, database), basic_auth, data))
    });
    owner.into_iter().chain(robots).collect()
}

fn postgresql_secrets(owned: &Owned<'_>) -> Vec<PlainSecret> {
    database_secrets(owned, Database::Postgresql, owned.credentials.postgresql.as_ref(), |robot| robot.postgresql.as_ref())
}

fn timescaledb_secrets(owned: &Owned<'_>) -> Vec<PlainSecret> {
    database_secrets(owned, Database::Timescaledb, owned.credentials.timescaledb.as_ref(), |robot| robot.timescaledb.as_ref())
}

fn redis_secrets(owned: &Owned<'_>) -> Vec<PlainSecret> {
    let name = || names::redis_secret(owned.namespace);
    owned.credentials.redis.iter().map(|p| secret(owned, name(), "Opaque", vec![("password", p.as_bytes())])).collect()
}

fn minio_secrets(owned: &Owned<'_>) -> Vec<PlainSecret> {
    let env = |(user, password): &(Zeroizing<String>, Zeroizing<String>)| {
        // NB: MinIO reads `config.env` stripping one pair of outer quotes, with no shell
        // unquoting; the init Job sources it with `sh`. Both agree on a double-quoted
        // value free of `"`, `\`, `$`, backticks and line breaks, which
        // `credentials` guarantees.
        let env =
            Zeroizing::new(format!("export MINIO_ROOT_USER=\"{}\"\nexport MINIO_ROOT_PASSWORD=\"{}\"\n", user.as_str(), password.as_str()));
        secret(owned, names::minio_env_secret(owned.namespace), "Opaque", vec![("config.env", env.as_bytes())])
    };
    owned.credentials.minio.iter().map(env).collect()
}

fn rabbitmq_secrets(owned: &Owned<'_>) -> Vec<PlainSecret> {
    let user = |(user, password): &(Zeroizing<String>, Zeroizing<String>)| {
        let data = vec![("username", user.as_bytes()), ("password", password.as_bytes())];
        secret(owned, names::rabbitmq_secret(owned.namespace), "Opaque", data)
    };
    owned.credentials.rabbitmq.iter().map(user).collect()
}

fn grafana_secrets(owned: &Owned<'_>) -> Vec<PlainSecret> {
    let admin = |p: &Zeroizing<String>| {
        let data = vec![("admin-user", &b"admin"[..]), ("admin-password", p.as_bytes())];
        secret(owned, names::grafana_admin_secret(owned.namespace), "Opaque", data)
    };
    owned.credentials.grafana.iter().map(admin).collect()
}

/// Whether a value reads the same in MinIO's `config.env` parser and in `sh` when written as
/// `"value"`.
fn fit_for_config_env(value: &str) -> bool {
    !value.chars().any(|c| matches!(c, '"' | '\\' | '$' | '`' | '\n' | '\r' | '\0'))
}

/// Whether a Redis password survives the image's unquoted `${REDIS_ARGS}` (no word splitting,
/// no globbing).
fn fit_for_redis_args(value: &str) -> bool {
    !value.chars().any(|c| c.is_whitespace() || matches!(c, '*' | '?' | '['))
}

/// Removes every credential field from the tenant spec templates see.
fn redact(tenant: &mut Json) {
    for (component, fields) in [
        ("postgresql", &["password"][..]),
        ("timescaledb", &["password"][..]),
        ("redis", &["password"][..]),
        ("minio", &["rootUser", "rootPassword"][..]),
        ("rabbitmq", &["username", "password"][..]),
        ("grafana", &["adminPassword"][..]),
    ] {
        if let Some(Json::Object(map)) = tenant.get_mut(component) {
            for field in fields {
                map.remove(*field);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_env_and_redis_characters() {
        assert!(
            fit_for_config_env("minio-root")
                && fit_for_config_env("a'b c+/=")
                && !fit_for_config_env("a\"b")
                && !fit_for_config_env("$HOME")
        );
        assert!(fit_for_redis_args("p@ss/w:rd#%") && !fit_for_redis_args("two words") && !fit_for_redis_args("glob*"));
    }

    #[test]
    fn personal_schemas_are_plain_names_the_database_does_not_keep() {
        assert!(schema_problem("alice_bot").is_none() && schema_problem("a1_b2").is_none());
        let long = "a".repeat(64);
        for bad in
            ["", "Alice", "1bot", "_bot", "a-b", "a b", "a\"b", "public", "information_schema", "pg_temp", "timescaledb_information", &long]
        {
            assert!(schema_problem(bad).is_some(), "{bad:?}");
        }
        assert!(schema_problem(&long[..63]).is_none());
    }
}
