//! The server-level components: per TFRServer its configuration
//! (ConfigMap, `<server>-secret`, `<server>-confz`), init Jobs and both workers.

use super::Component;
pub use super::confz::{broker_url, confz, percent_encode};
use super::engine::{Context, Frame, Shared};
use super::graph::{Graph, Member};
use super::names::{self, Database, NamespaceNames, RobotNames, ServerNames};
use super::tenant::{self, Credentials, DATABASE_USER, Unit};
use crate::secrets::PlainSecret;
use crate::spec::Object;
use crate::spec::diagnostic::Rule;
use crate::spec::model::{ServerSpec, TenantSpec};
use serde::Serialize;
use serde_json::{Value as Json, json};
use sha2::{Digest as _, Sha256};
use std::collections::BTreeMap;
use zeroize::Zeroizing;

pub use super::config::{CONFZ_DIR, DB_SCHEMA_KEY, IMAGES_DIR_KEY, config_data};

/// A server component: name, server components it waits for, tenant components it waits for,
/// whether it is on, and its Secrets.
struct Definition {
    name: &'static str,
    /// Server components it waits for.
    after: &'static [&'static str],
    /// Tenant components it waits for, when the namespace renders them.
    after_tenant: &'static [&'static str],
    enabled: fn(&ServerSpec, &TenantSpec) -> bool,
    /// The Secrets it carries (sealed later, never templated).
    secrets: fn(&Owned<'_>) -> Vec<PlainSecret>,
}

const DEFINITIONS: &[Definition] = &[
    Definition { name: "config", after: &[], after_tenant: &["namespace"], enabled: |_, _| true, secrets: config_secrets },
    Definition {
        name: "db-init",
        after: &["config"],
        after_tenant: &["postgresql", "timescaledb"],
        enabled: |s, t| s.jobs.db_init && (t.postgresql.enabled || t.timescaledb.enabled),
        secrets: none,
    },
    Definition {
        name: "minio-init",
        after: &["config"],
        after_tenant: &["minio"],
        enabled: |s, t| s.jobs.minio_init && t.minio.enabled,
        secrets: minio_init_secrets,
    },
    Definition {
        name: "grafana-sa",
        after: &["config"],
        after_tenant: &["grafana"],
        enabled: |s, t| s.jobs.grafana_service_account && t.grafana.enabled,
        secrets: none,
    },
    Definition {
        name: "api-worker",
        after: &["config", "db-init", "minio-init", "grafana-sa"],
        after_tenant: &["shared-cache", "redis", "rabbitmq"],
        enabled: |_, _| true,
        secrets: none,
    },
    Definition {
        name: "robot-worker",
        after: &["config", "db-init", "minio-init", "grafana-sa"],
        after_tenant: &["shared-cache", "redis", "rabbitmq"],
        enabled: |_, _| true,
        secrets: none,
    },
];

/// The id of a server component.
#[must_use]
pub fn component_id(namespace: &str, server: &str, name: &str) -> String {
    format!("namespaces/{namespace}/servers/{server}/{name}")
}

/// Adds every server's components to `graph` (which holds the cluster's and tenants').
pub fn extend_graph(graph: &mut Graph, units: &[Unit<'_>]) {
    for unit in units {
        for server in &unit.servers {
            let members = DEFINITIONS.iter().map(|d| Member {
                name: d.name,
                after: d.after,
                external: d.after_tenant.iter().map(|name| tenant::component_id(&unit.namespace, name)).collect(),
                enabled: (d.enabled)(&server.spec, &unit.owner.spec),
            });
            graph.add_group(members, |name| component_id(&unit.namespace, server.name(), name));
        }
    }
}

/// The values of the server templates (`templates/server/*.yaml`), over the cluster's shared
/// values; `docs/templates.md` describes each key.
#[derive(Serialize)]
struct ServerValues<'a> {
    namespace: &'a str,
    database: &'a str,
    names: NamespaceNames,
    istio: bool,
    pull_secret: &'a str,
    server: ServerInfo<'a>,
    host: String,
    config_data: &'a BTreeMap<String, String>,
    has_secret_data: bool,
    cache_dir: &'a str,
    confz_dir: &'static str,
    confz_path: String,
    checksum: String,
    robot: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    db_grant_sql: Option<String>,
    db_schema_sql: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    db_revoke_sql: Option<String>,
    db_targets: Vec<String>,
    db_secrets: Vec<String>,
    postgres_image: &'a str,
    bucket: String,
    minio_user: String,
    minio_user_secret: String,
    minio_policy: String,
    minio_checksum: String,
    grafana_token: String,
}

/// The server a template renders.
#[derive(Serialize)]
struct ServerInfo<'a> {
    name: &'a str,
    tenant: &'a str,
    names: ServerNames,
    /// Its spec as written (camelCase), without `secretData` and `confzData`.
    spec: Json,
}

/// What a server's components are made from: its resolved configuration.
struct Owned<'a> {
    name: &'a str,
    namespace: &'a str,
    secret_data: BTreeMap<String, Zeroizing<Vec<u8>>>,
    config_data: BTreeMap<String, String>,
    confz: Zeroizing<String>,
    /// A personal robot's own credentials (tenant.rs resolved them for the whole namespace).
    robot: Option<&'a tenant::Robot>,
    robot_names: RobotNames,
}

/// How long Flux waits for a server component.
const TIMEOUT: &str = "10m";

/// Renders every component of one server. With a memo (`tenant`: the digest of its tenant, see
/// [`tenant_digest`]), a component the memo holds for the server's [`inputs_digest`] is taken
/// from it, and the template values are made only when one is not.
pub(crate) fn render(
    context: &mut Context<'_>,
    frame: &Frame<'_>,
    unit: &Unit<'_>,
    (server, tenant): (&Object<ServerSpec>, Option<&[u8; 32]>),
    credentials: &Credentials,
    components: &mut Vec<Component>,
) {
    let Some(owned) = resolve(context, frame, unit, server, credentials) else { return };
    let checksums = Checksums {
        workers: checksum(context, &owned.config_data, &owned.secret_data, &owned.confz),
        minio: minio_checksum(context, &owned),
    };
    let digest = tenant.map(|tenant| inputs_digest(tenant, frame, server, &owned, &checksums));
    let mut shared = None;
    for definition in DEFINITIONS {
        let id = component_id(&unit.namespace, owned.name, definition.name);
        if !frame.graph.contains(&id) {
            continue;
        }
        let mut secrets = (definition.secrets)(&owned);
        let template = format!("server/{}.yaml", definition.name);
        if let Some(digest) = &digest {
            match context.kept_component(frame, &unit.namespace, &id, &template, digest, secrets, TIMEOUT) {
                Ok(component) => {
                    components.push(component);
                    continue;
                }
                Err(back) => secrets = back,
            }
        }
        let values = shared.get_or_insert_with(|| {
            let json = serde_json::to_value(values(frame, unit, server, &owned, &checksums)).unwrap_or(Json::Null);
            std::sync::Arc::new(match digest {
                Some(digest) => Shared::with_digest(json, digest),
                None => Shared::new(json),
            })
        });
        let origin = server.locate("metadata.name");
        components.push(context.namespaced_component(frame, &unit.namespace, id, &template, values, origin, secrets, TIMEOUT));
    }
}

/// A server's keyed checksums: of everything its workers read ([`checksum`]) and of a personal
/// robot's MinIO keys ([`minio_checksum`]).
struct Checksums {
    workers: String,
    minio: String,
}

/// The memo digest of a tenant as its servers' templates see it: its namespace and its spec.
/// Made once per namespace, for [`render`].
pub(crate) fn tenant_digest(unit: &Unit<'_>) -> [u8; 32] {
    super::memo::inputs_digest(&[b"server tenant/v1", unit.namespace.as_bytes()], &unit.owner.spec)
}

/// The memo digest of everything [`values`] makes a server's template values from, standing for
/// them ([`Shared::with_digest`]): its tenant's digest, the cluster's settings it reads, the
/// server's name and spec as written, its robot's names, and its checksums, which cover every
/// resolved value it carries (its `secretData`, its `config.toml` with the tenant's and its
/// robot's credentials, its robot's MinIO keys). Nothing else is read: whatever changes a value
/// changes this digest. The cluster's shared values, the labels and the check scope are
/// digested beside it ([`super::engine::scoped_digest`]).
fn inputs_digest(tenant: &[u8; 32], frame: &Frame<'_>, server: &Object<ServerSpec>, owned: &Owned<'_>, checksums: &Checksums) -> [u8; 32] {
    let cluster = &frame.cluster.spec;
    let istio: &[u8] = if cluster.istio.enabled { b"istio" } else { b"" };
    let robot = owned.robot.map(|robot| (&robot.role, &robot.schema, robot.minio.as_ref().map(|(user, _)| user)));
    super::memo::inputs_digest(
        &[
            b"server/v1",
            tenant,
            owned.name.as_bytes(),
            owned.namespace.as_bytes(),
            cluster.ingress.domain.as_bytes(),
            istio,
            frame.pull.map_or("", |p| p.name.as_str()).as_bytes(),
            checksums.workers.as_bytes(),
            checksums.minio.as_bytes(),
        ],
        &(&server.spec, robot),
    )
}

/// Resolves a server's `secretData` (over `cluster/<cluster>/server/<server>/secretData/<KEY>`)
/// and builds its ConfigMap data and `config.toml`; records the literal credentials of
/// `confzData` (`…/server/<server>/confzData/<table>.<key>`) with the resolved secrets. `None`
/// (with the problem recorded) when `confzData` is not TOML.
fn resolve<'a>(
    context: &mut Context<'_>,
    frame: &Frame<'_>,
    unit: &'a Unit<'_>,
    server: &'a Object<ServerSpec>,
    credentials: &'a Credentials,
) -> Option<Owned<'a>> {
    let (name, namespace, spec) = (server.name(), unit.namespace.as_str(), &server.spec);
    let cluster_name = frame.cluster.name();
    let mut secret_data: BTreeMap<String, Zeroizing<Vec<u8>>> = BTreeMap::new();
    for (key, source) in &spec.secret_data {
        let path = format!("cluster/{cluster_name}/server/{name}/secretData/{key}");
        if let Some(value) = context.secret(server, &format!("spec.secretData.{key}"), source, &path) {
            secret_data.insert(key.clone(), value);
        }
    }
    let confz = match confz(name, namespace, spec, credentials) {
        Ok(confz) => confz,
        Err(message) => {
            context.errors.push(crate::spec::Diagnostic::error(Rule::Confz, server.locate("spec.confzData"), "spec.confzData", message));
            return None;
        }
    };
    // NB: literal credentials of confzData are credentials too: `tfrs audit` searches them.
    for (key, value) in super::confz::literal_credentials(spec) {
        let path = format!("cluster/{cluster_name}/server/{name}/confzData/{key}");
        let field = format!("spec.confzData.{key}");
        context.resolved.push(super::ResolvedSecret { path, field, value: Zeroizing::new(value.as_bytes().to_vec()) });
    }
    let config_data = config_data(name, spec, &unit.owner.spec);
    let robot = credentials.robots.get(name);
    Some(Owned { name, namespace, secret_data, config_data, confz, robot, robot_names: RobotNames::new(name) })
}

/// The server templates' values of one server. Whatever it reads, [`inputs_digest`] covers.
fn values<'a>(
    frame: &Frame<'a>,
    unit: &'a Unit<'_>,
    server: &'a Object<ServerSpec>,
    owned: &'a Owned<'_>,
    checksums: &Checksums,
) -> ServerValues<'a> {
    let (name, namespace, spec, tenant) = (owned.name, owned.namespace, &server.spec, &unit.owner.spec);
    let (robot, robot_names) = (owned.robot, &owned.robot_names);
    let (db_targets, db_secrets) = db_targets(namespace, tenant, robot.map(|_| robot_names));
    let mut server_json = serde_json::to_value(spec).unwrap_or(Json::Null);
    if let Json::Object(map) = &mut server_json {
        map.remove("secretData");
        map.remove("confzData");
    }
    let db_schema = owned.config_data.get(DB_SCHEMA_KEY).map_or("public", String::as_str);
    let sql = robot.map(|robot| robot_sql(namespace, robot));
    let db_schema_sql = match &sql {
        Some(sql) => sql.schema.clone(),
        None => format!("CREATE SCHEMA IF NOT EXISTS {} AUTHORIZATION {DATABASE_USER};", quote_ident(db_schema)),
    };
    let robot_minio = robot.and_then(|r| r.minio.as_ref());
    let grafana = spec.jobs.grafana_service_account && tenant.grafana.enabled;
    ServerValues {
        namespace,
        database: namespace,
        names: NamespaceNames::new(namespace),
        istio: frame.cluster.spec.istio.enabled,
        pull_secret: frame.pull.map_or("", |p| p.name.as_str()),
        server: ServerInfo { name, tenant: &spec.tenant, names: ServerNames::new(name, namespace), spec: server_json },
        host: names::host(server, &frame.cluster.spec.ingress.domain),
        config_data: &owned.config_data,
        has_secret_data: !owned.secret_data.is_empty(),
        cache_dir: if tenant.shared_cache.enabled { tenant.shared_cache.cache_dir.as_str() } else { "" },
        confz_dir: CONFZ_DIR,
        confz_path: format!("{CONFZ_DIR}/config.toml"),
        checksum: checksums.workers.clone(),
        robot: robot.is_some(),
        db_grant_sql: sql.as_ref().map(|sql| sql.grant.clone()),
        db_schema_sql,
        db_revoke_sql: sql.map(|sql| sql.revoke),
        db_targets,
        db_secrets,
        postgres_image: &tenant.postgresql.image,
        bucket: names::bucket(name),
        minio_user: robot_minio.map_or(String::new(), |(user, _)| user.clone()),
        minio_user_secret: robot_names.minio_secret.clone(),
        minio_policy: bucket_policy(&names::bucket(name)),
        minio_checksum: checksums.minio.clone(),
        grafana_token: if grafana { names::grafana_token_secret(name) } else { String::new() },
    }
}

/// A keyed checksum of a personal robot's MinIO keys, so that new keys (a new master key) make a
/// new minio-init Job, which sets them in MinIO. Empty without keys or without a master key.
fn minio_checksum(context: &Context<'_>, owned: &Owned<'_>) -> String {
    match (context.master, owned.robot.and_then(|r| r.minio.as_ref())) {
        (Some(master), Some((user, key))) => {
            let name = owned.robot_names.minio_secret.as_str();
            let binding =
                crate::secrets::fingerprint::Binding { backend: "checksum", sealer: "", scope: "", namespace: owned.namespace, name };
            master.fingerprint_key().fingerprint(&binding, user, key.as_bytes())
        }
        _ => String::new(),
    }
}

/// A server Secret in its namespace.
fn secret(owned: &Owned<'_>, name: String, kind: &str, data: BTreeMap<String, Zeroizing<Vec<u8>>>) -> PlainSecret {
    PlainSecret { name, namespace: owned.namespace.to_owned(), kind: kind.to_owned(), data, ..PlainSecret::default() }
}

/// No Secret.
fn none(_: &Owned<'_>) -> Vec<PlainSecret> {
    Vec::new()
}

/// The `config` component's: `<server>-secret` (secretData, when there is any) and
/// `<server>-confz` (config.toml).
fn config_secrets(owned: &Owned<'_>) -> Vec<PlainSecret> {
    let mut secrets = Vec::new();
    if !owned.secret_data.is_empty() {
        secrets.push(secret(owned, names::server_secret(owned.name), "Opaque", owned.secret_data.clone()));
    }
    let confz = [("config.toml".to_owned(), Zeroizing::new(owned.confz.as_bytes().to_vec()))].into_iter().collect();
    secrets.push(secret(owned, names::server_confz(owned.name), "Opaque", confz));
    secrets
}

/// The `minio-init` component's: a personal robot's MinIO keys, for the Job that creates its
/// user.
fn minio_init_secrets(owned: &Owned<'_>) -> Vec<PlainSecret> {
    let Some((user, key)) = owned.robot.and_then(|r| r.minio.as_ref()) else { return Vec::new() };
    // `mc`'s words for an access key and a secret key: user name and password.
    let data = [
        ("username".to_owned(), Zeroizing::new(user.as_bytes().to_vec())),
        ("password".to_owned(), Zeroizing::new(key.as_bytes().to_vec())),
    ];
    vec![secret(owned, owned.robot_names.minio_secret.clone(), "kubernetes.io/basic-auth", data.into_iter().collect())]
}

/// What a server's db-init Job prepares, per database the tenant runs: its targets
/// (`<read-write Service>:<owner Secret>`, and for a personal robot `:<its role's Secret>`) and
/// the Secrets it mounts.
fn db_targets(namespace: &str, tenant: &TenantSpec, robot: Option<&RobotNames>) -> (Vec<String>, Vec<String>) {
    let mut targets = Vec::new();
    let mut secrets = Vec::new();
    for (enabled, database) in [(tenant.postgresql.enabled, Database::Postgresql), (tenant.timescaledb.enabled, Database::Timescaledb)] {
        if !enabled {
            continue;
        }
        let (service, owner) = (names::database_service(namespace, database), names::database_owner_secret(namespace, database));
        match robot {
            Some(robot) => {
                let role_secret = robot.role_secret(database);
                targets.push(format!("{service}:{owner}:{role_secret}"));
                secrets.extend([owner, role_secret.to_owned()]);
            }
            None => {
                targets.push(format!("{service}:{owner}"));
                secrets.push(owner);
            }
        }
    }
    (targets, secrets)
}

/// The statements of a personal robot's db-init Job, per database: `grant` and `revoke` run as
/// the database owner (`app_user`), `schema` as the robot's own role, in between.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RobotSql {
    /// Closes the `public` schema to object creation by anyone but its owner (PostgreSQL 15+
    /// does so already; a database created earlier or restored from an older dump may not), and
    /// lets the robot connect and, for the moment, create its schema. A schema left from before
    /// robots had roles (owned by the database owner) is opened to the robot instead, with what
    /// is in it.
    pub grant: String,
    /// Creates the robot's schema, owned by the robot; fails when it exists and belongs to
    /// another robot; makes it the first entry of the role's `search_path` in this database.
    pub schema: String,
    /// Takes the right to create schemas back.
    pub revoke: String,
}

/// The db-init statements of a personal robot in database `database` (idempotent: a re-run
/// on an initialised database succeeds and changes nothing).
#[must_use]
pub fn robot_sql(database: &str, robot: &tenant::Robot) -> RobotSql {
    let (db, role, schema) = (quote_ident(database), quote_ident(&robot.role), quote_ident(&robot.schema));
    let literal = quote_literal(&robot.schema);
    let owned_by_owner = format!(
        "SELECT FROM pg_namespace WHERE nspname = {literal} AND nspowner = (SELECT datdba FROM pg_database WHERE datname = current_database())"
    );
    let grant = format!(
        "REVOKE CREATE ON SCHEMA public FROM PUBLIC;\n\
         GRANT CONNECT, CREATE ON DATABASE {db} TO {role};\n\
         DO $tfrs$BEGIN IF EXISTS ({owned_by_owner}) THEN \
         GRANT USAGE, CREATE ON SCHEMA {schema} TO {role}; \
         GRANT ALL ON ALL TABLES IN SCHEMA {schema} TO {role}; \
         GRANT ALL ON ALL SEQUENCES IN SCHEMA {schema} TO {role}; \
         GRANT EXECUTE ON ALL ROUTINES IN SCHEMA {schema} TO {role}; \
         END IF; END$tfrs$;"
    );
    let schema_sql = format!(
        "CREATE SCHEMA IF NOT EXISTS {schema};\n\
         DO $tfrs$BEGIN IF NOT EXISTS (SELECT FROM pg_namespace WHERE nspname = {literal} AND nspowner IN \
         (SELECT oid FROM pg_roles WHERE rolname = current_user UNION ALL SELECT datdba FROM pg_database WHERE datname = current_database())) \
         THEN RAISE EXCEPTION {message}; END IF; END$tfrs$;\n\
         ALTER ROLE CURRENT_USER IN DATABASE {db} SET search_path TO {schema}, public;",
        message = quote_literal(&format!("schema {} belongs to another role", robot.schema)),
    );
    let revoke = format!("REVOKE CREATE ON DATABASE {db} FROM {role};");
    RobotSql { grant, schema: schema_sql, revoke }
}

/// A PostgreSQL identifier, quoted.
fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// A PostgreSQL string literal (standard-conforming strings: only `'` is special).
fn quote_literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// The MinIO policy of a personal robot: list its bucket, read, write and delete the objects in
/// it, nothing else (no other bucket, no bucket settings, no listing of the buckets).
#[must_use]
pub fn bucket_policy(bucket: &str) -> String {
    json!({
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Action": ["s3:GetBucketLocation", "s3:ListBucket", "s3:ListBucketMultipartUploads"],
                "Resource": [format!("arn:aws:s3:::{bucket}")],
            },
            {
                "Effect": "Allow",
                "Action": [
                    "s3:GetObject",
                    "s3:PutObject",
                    "s3:DeleteObject",
                    "s3:AbortMultipartUpload",
                    "s3:ListMultipartUploadParts",
                    "s3:GetObjectTagging",
                    "s3:PutObjectTagging",
                    "s3:DeleteObjectTagging",
                ],
                "Resource": [format!("arn:aws:s3:::{bucket}/*")],
            },
        ],
    })
    .to_string()
}

/// A checksum of everything the workers read, so a changed config rolls them. Keyed with the
/// master key's fingerprint key when there is one (it covers secret values); without a master
/// key only the ConfigMap counts.
fn checksum(
    context: &Context<'_>,
    config: &BTreeMap<String, String>,
    secrets: &BTreeMap<String, Zeroizing<Vec<u8>>>,
    confz: &str,
) -> String {
    let config_json = serde_json::to_string(config).unwrap_or_default();
    match context.master {
        Some(master) => {
            let key = master.fingerprint_key();
            let binding = crate::secrets::fingerprint::Binding { backend: "checksum", sealer: "", scope: "", namespace: "", name: "" };
            let mut input = Zeroizing::new(config_json.into_bytes());
            for (name, value) in secrets {
                input.extend_from_slice(&(name.len() as u64).to_be_bytes());
                input.extend_from_slice(name.as_bytes());
                input.extend_from_slice(&(value.len() as u64).to_be_bytes());
                input.extend_from_slice(value);
            }
            input.extend_from_slice(confz.as_bytes());
            key.fingerprint(&binding, "workers", &input)
        }
        None => Sha256::digest(config_json.as_bytes()).iter().take(16).map(|b| format!("{b:02x}")).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::model::TenantType;

    #[test]
    fn robot_statements_quote_names_and_take_back_what_they_lend() {
        let sql = robot_sql("personal-x", &super::super::confz::tests::robot());
        assert!(sql.grant.starts_with("REVOKE CREATE ON SCHEMA public FROM PUBLIC;\n"), "{}", sql.grant);
        assert!(sql.grant.contains("GRANT CONNECT, CREATE ON DATABASE \"personal-x\" TO \"robot_my_bot\";"), "{}", sql.grant);
        assert!(sql.grant.contains("nspname = 'my_bot'") && sql.grant.contains("GRANT USAGE, CREATE ON SCHEMA \"my_bot\""));
        assert!(sql.schema.starts_with("CREATE SCHEMA IF NOT EXISTS \"my_bot\";\n"), "{}", sql.schema);
        assert!(sql.schema.contains("RAISE EXCEPTION 'schema my_bot belongs to another role'"), "{}", sql.schema);
        assert!(sql.schema.ends_with("ALTER ROLE CURRENT_USER IN DATABASE \"personal-x\" SET search_path TO \"my_bot\", public;"));
        assert_eq!(sql.revoke, "REVOKE CREATE ON DATABASE \"personal-x\" FROM \"robot_my_bot\";");
        assert_eq!(quote_ident("a\"b"), "\"a\"\"b\"");
        assert_eq!(quote_literal("it's"), "'it''s'");
    }

    #[test]
    fn a_bucket_policy_names_its_bucket_and_nothing_else() {
        let policy: Json = serde_json::from_str(&bucket_policy("my-bot")).unwrap();
        let resources: Vec<&str> = policy["Statement"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|s| s["Resource"].as_array().unwrap())
            .filter_map(Json::as_str)
            .collect();
        assert_eq!(resources, ["arn:aws:s3:::my-bot", "arn:aws:s3:::my-bot/*"]);
        assert!(!bucket_policy("my-bot").contains("s3:*"), "named actions only");
    }

    #[test]
    fn injected_keys_win_and_personal_schemas_default() {
        let mut spec = ServerSpec::default();
        spec.config_data.insert(IMAGES_DIR_KEY.into(), "/elsewhere".into());
        let mut tenant = TenantSpec::default();
        tenant.shared_cache.cache_dir = "/data/cache".into();
        assert_eq!(config_data("my-bot", &spec, &tenant)[IMAGES_DIR_KEY], "/data/cache");
        assert!(!config_data("my-bot", &spec, &tenant).contains_key(DB_SCHEMA_KEY));
        tenant.kind = TenantType::Personal;
        assert_eq!(config_data("my-bot", &spec, &tenant)[DB_SCHEMA_KEY], "my_bot");
        spec.config_data.insert(DB_SCHEMA_KEY.into(), "custom".into());
        assert_eq!(config_data("my-bot", &spec, &tenant)[DB_SCHEMA_KEY], "custom");
    }
}
