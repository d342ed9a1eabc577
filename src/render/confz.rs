//! A server's `config.toml` (sealed into `<server>-confz`): the connection details of the
//! middleware its tenant runs, with the server's `confzData` merged over them. Its credential
//! keys are [`ConfzCredential`]s, the list validation guards `confzData` by.

use super::names::{self, Database};
use super::tenant::{self, Credentials, DATABASE_USER};
use crate::spec::model::{ConfzCredential, ServerSpec};
use zeroize::Zeroizing;

/// `config.toml`: the connection details of the middleware the tenant enables,
/// with `confzData` deep-merged over it (tables merge, other values replace).
///
/// # Errors
///
/// `confzData` that is not TOML (validation reports it first, with its line).
pub fn confz(server: &str, namespace: &str, spec: &ServerSpec, credentials: &Credentials) -> Result<Zeroizing<String>, String> {
    use toml::{Table, Value};
    let mut table = Table::new();
    let robot = credentials.robots.get(server);
    for (database, credential) in
        [(Database::Postgresql, ConfzCredential::PostgresqlPassword), (Database::Timescaledb, ConfzCredential::TimescaledbPassword)]
    {
        if let Some(section) = database_section(namespace, database, credential, credentials, robot) {
            table.insert(credential.table().into(), section);
        }
    }
    if let Some(password) = &credentials.redis {
        let (host, credential) = (names::service_host("redis", namespace), ConfzCredential::RedisPassword);
        let entries = vec![("host", text(&host)), ("port", Value::Integer(6379)), (credential.key(), text(password))];
        table.insert(credential.table().into(), section(entries));
    }
    if let Some((user, password)) = &credentials.rabbitmq {
        let url = broker_url(user, password, &names::service_host("rabbitmq", namespace), "/");
        let credential = ConfzCredential::CeleryBrokerUrl;
        table.insert(credential.table().into(), section(vec![(credential.key(), text(&url))]));
    }
    if let Some(cos) = minio_section(server, namespace, credentials, robot) {
        table.insert(ConfzCredential::CosSecretKey.table().into(), cos);
    }
    if !spec.confz_data.trim().is_empty() {
        let overrides: Table = spec.confz_data.parse().map_err(|e: toml::de::Error| format!("invalid TOML: {}", e.message()))?;
        merge(&mut table, overrides);
    }
    toml::to_string(&table).map(Zeroizing::new).map_err(|e| format!("cannot write config.toml: {e}"))
}

/// The literal credentials `confzData` gives the keys `confzCredentialOverrides` names, for
/// `tfrs audit`: each string value by its `<table>.<key>`, and the password inside a broker
/// URL as `celery.broker_url/password`. Identities (`cos.access_key`) are left out, as
/// `minio.rootUser` is; so are values that are not strings.
#[must_use]
pub fn literal_credentials(spec: &ServerSpec) -> Vec<(String, Zeroizing<String>)> {
    if spec.confz_credential_overrides.is_empty() {
        return Vec::new();
    }
    let Ok(data) = spec.confz_data.parse::<toml::Table>() else { return Vec::new() };
    let mut out = Vec::new();
    for credential in spec.confz_credential_overrides.iter().filter(|c| !c.is_identity()) {
        let value = data.get(credential.table()).and_then(|t| t.get(credential.key())).and_then(toml::Value::as_str);
        let Some(value) = value else { continue };
        if *credential == ConfzCredential::CeleryBrokerUrl
            && let Some(password) = url_password(value)
        {
            out.push((format!("{}/password", credential.name()), password));
        }
        out.push((credential.name().to_owned(), Zeroizing::new(value.to_owned())));
    }
    out
}

/// A `config.toml` table of `entries`, in order.
fn section(entries: Vec<(&str, toml::Value)>) -> toml::Value {
    toml::Value::Table(entries.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
}

/// A `config.toml` string.
fn text(s: &str) -> toml::Value {
    toml::Value::String(s.to_owned())
}

/// The `config.toml` table of a database, only when the tenant runs it. A personal robot
/// connects as its own role (and its `schema`), never as the owner, and gets no table where it
/// has no role; an enterprise robot connects as `app_user`.
fn database_section(
    namespace: &str,
    database: Database,
    credential: ConfzCredential,
    credentials: &Credentials,
    robot: Option<&tenant::Robot>,
) -> Option<toml::Value> {
    let (shared, own) = match database {
        Database::Postgresql => (&credentials.postgresql, robot.map(|r| &r.postgresql)),
        Database::Timescaledb => (&credentials.timescaledb, robot.map(|r| &r.timescaledb)),
    };
    shared.as_ref()?;
    let (user, password, schema) = match (robot, own) {
        (Some(robot), Some(own)) => (robot.role.as_str(), own.as_ref()?, Some(robot.schema.as_str())),
        _ => (DATABASE_USER, shared.as_ref()?, None),
    };
    let mut entries = vec![
        ("host", text(&names::database_service(namespace, database))),
        ("port", toml::Value::Integer(5432)),
        ("user", text(user)),
        (credential.key(), text(password)),
        ("dbname", text(namespace)),
    ];
    entries.extend(schema.map(|schema| ("schema", text(schema))));
    Some(section(entries))
}

/// The `config.toml` table of MinIO (`cos`): a personal robot gets its own MinIO user (limited
/// to its bucket), never the root key.
fn minio_section(server: &str, namespace: &str, credentials: &Credentials, robot: Option<&tenant::Robot>) -> Option<toml::Value> {
    let (user, password) = match robot {
        Some(robot) => credentials.minio.as_ref().and(robot.minio.as_ref()).map(|(user, key)| (user.as_str(), key))?,
        None => credentials.minio.as_ref().map(|(user, password)| (user.as_str(), password))?,
    };
    Some(section(vec![
        ("host", text(&names::service_host("minio", namespace))),
        // The operator's `minio` Service: port 80 -> 9000 (no TLS), docs/components.md.
        ("port", toml::Value::Integer(80)),
        (ConfzCredential::CosAccessKey.key(), text(user)),
        (ConfzCredential::CosSecretKey.key(), text(password)),
        ("bucket", text(&names::bucket(server))),
    ]))
}

/// Deep merge: tables merge key by key, anything else replaces.
fn merge(base: &mut toml::Table, overrides: toml::Table) {
    for (key, value) in overrides {
        match (base.get_mut(&key), value) {
            (Some(toml::Value::Table(lower)), toml::Value::Table(upper)) => merge(lower, upper),
            (_, value) => {
                base.insert(key, value);
            }
        }
    }
}

/// `amqp://user:password@host:5672/vhost`, user, password and vhost percent-encoded; the default
/// vhost `/` is written as the empty path (`…:5672/`), the form the robot's config expects.
#[must_use]
pub fn broker_url(user: &str, password: &str, host: &str, vhost: &str) -> String {
    let vhost = if vhost == "/" { String::new() } else { percent_encode(vhost) };
    format!("amqp://{}:{}@{host}:5672/{vhost}", percent_encode(user), percent_encode(password))
}

/// The password of a URL's `user:password@`, percent-decoded; `None` without one.
fn url_password(url: &str) -> Option<Zeroizing<String>> {
    let rest = url.split_once("://")?.1;
    let authority = rest.split(['/', '?', '#']).next()?;
    let (userinfo, _host) = authority.rsplit_once('@')?;
    let (_user, password) = userinfo.split_once(':')?;
    let mut bytes = Zeroizing::new(Vec::with_capacity(password.len()));
    let mut rest = password.as_bytes();
    while let Some((&byte, tail)) = rest.split_first() {
        let hex = tail
            .get(..2)
            .filter(|h| h.iter().all(u8::is_ascii_hexdigit))
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (byte, hex) {
            (b'%', Some(decoded)) => {
                bytes.push(decoded);
                rest = &tail[2..];
            }
            _ => {
                bytes.push(byte);
                rest = tail;
            }
        }
    }
    std::str::from_utf8(&bytes).ok().filter(|p| !p.is_empty()).map(|p| Zeroizing::new(p.to_owned()))
}

/// Percent-encodes everything but RFC 3986 unreserved characters.
#[must_use]
pub fn percent_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn broker_urls_percent_encode_user_password_and_vhost() {
        assert_eq!(
            broker_url("app", "p@ss/w:rd#%", "rabbitmq.ns.svc.cluster.local", "/"),
            "amqp://app:p%40ss%2Fw%3Ard%23%25@rabbitmq.ns.svc.cluster.local:5672/"
        );
        assert_eq!(broker_url("a b", "x", "h", "tenant/a"), "amqp://a%20b:x@h:5672/tenant%2Fa");
    }

    #[test]
    fn confz_merges_tables_and_replaces_values() {
        let credentials = Credentials {
            postgresql: Some(Zeroizing::new("pg".into())),
            redis: Some(Zeroizing::new("rd".into())),
            ..Credentials::default()
        };
        let spec = ServerSpec { confz_data: "[postgresql]\nport = 6432\n[robot]\nname = \"x\"\n".into(), ..Default::default() };
        let text = confz("bot", "ns", &spec, &credentials).unwrap();
        let table: toml::Table = text.parse().unwrap();
        assert_eq!(table["postgresql"]["port"].as_integer(), Some(6432));
        assert_eq!(table["postgresql"]["host"].as_str(), Some("ns-pg-rw"), "other keys of a merged table stay");
        assert_eq!(table["postgresql"]["password"].as_str(), Some("pg"));
        assert_eq!(table["redis"]["host"].as_str(), Some("redis.ns.svc.cluster.local"));
        assert_eq!(table["robot"]["name"].as_str(), Some("x"));
        assert!(
            !table.contains_key("celery") && !table.contains_key("cos") && !table.contains_key("timescaledb"),
            "only enabled middleware"
        );
        assert_eq!(text, confz("bot", "ns", &spec, &credentials).unwrap(), "deterministic");
    }

    /// The credential keys come from one list: every value of config.toml that holds a
    /// credential is at a [`ConfzCredential`], and every one of them is written.
    #[test]
    fn every_credential_written_is_a_confz_credential() {
        let credentials = Credentials {
            postgresql: Some(Zeroizing::new("secret-pg".into())),
            timescaledb: Some(Zeroizing::new("secret-ts".into())),
            redis: Some(Zeroizing::new("secret-redis".into())),
            minio: Some((Zeroizing::new("secret-minio-user".into()), Zeroizing::new("secret-minio".into()))),
            rabbitmq: Some((Zeroizing::new("mq-user".into()), Zeroizing::new("secret-mq".into()))),
            ..Credentials::default()
        };
        let table: toml::Table = confz("bot", "ns", &ServerSpec::default(), &credentials).unwrap().parse().unwrap();
        let mut written = std::collections::BTreeSet::new();
        for (name, section) in &table {
            for (key, value) in section.as_table().unwrap() {
                if value.as_str().is_some_and(|v| v.contains("secret-")) {
                    written.insert(ConfzCredential::find(name, key).unwrap_or_else(|| panic!("`[{name}] {key}` is no ConfzCredential")));
                }
            }
        }
        assert_eq!(written, ConfzCredential::ALL.into_iter().collect(), "every ConfzCredential is written");
    }

    #[test]
    fn literal_credentials_are_the_opted_in_string_values() {
        let spec = ServerSpec {
            confz_data: "[postgresql]\npassword = \"lit-pg\"\nport = 1\n[redis]\npassword = \"not-opted-in\"\n\
                         [celery]\nbroker_url = \"amqp://u:p%40ss%2Bx@h:5672/\"\n[cos]\naccess_key = \"user\"\n"
                .into(),
            confz_credential_overrides: vec![
                ConfzCredential::PostgresqlPassword,
                ConfzCredential::CeleryBrokerUrl,
                ConfzCredential::CosAccessKey,
                ConfzCredential::TimescaledbPassword,
            ],
            ..ServerSpec::default()
        };
        let literals: Vec<(String, String)> = literal_credentials(&spec).into_iter().map(|(k, v)| (k, v.to_string())).collect();
        assert_eq!(
            literals,
            [
                ("postgresql.password".to_owned(), "lit-pg".to_owned()),
                ("celery.broker_url/password".to_owned(), "p@ss+x".to_owned()),
                ("celery.broker_url".to_owned(), "amqp://u:p%40ss%2Bx@h:5672/".to_owned()),
            ]
        );
        assert_eq!(url_password("amqp://u@h/"), None);
        assert_eq!(url_password("amqp://u:%zz%4@h/x@y").map(|p| p.to_string()), Some("%zz%4".to_owned()));
    }

    pub(crate) fn robot() -> tenant::Robot {
        tenant::Robot {
            role: "robot_my_bot".into(),
            schema: "my_bot".into(),
            postgresql: Some(Zeroizing::new("own-pg".into())),
            timescaledb: None,
            minio: Some(("robot-my-bot".into(), Zeroizing::new("own-key".into()))),
        }
    }

    #[test]
    fn a_personal_robot_connects_with_its_own_credentials_only() {
        let mut credentials = Credentials {
            postgresql: Some(Zeroizing::new("owner-pg".into())),
            timescaledb: Some(Zeroizing::new("owner-ts".into())),
            minio: Some((Zeroizing::new("root".into()), Zeroizing::new("root-password".into()))),
            ..Credentials::default()
        };
        credentials.robots.insert("my-bot".into(), robot());
        let text = confz("my-bot", "personal-x", &ServerSpec::default(), &credentials).unwrap();
        let table: toml::Table = text.parse().unwrap();
        assert_eq!(table["postgresql"]["user"].as_str(), Some("robot_my_bot"));
        assert_eq!(table["postgresql"]["password"].as_str(), Some("own-pg"));
        assert_eq!(table["postgresql"]["schema"].as_str(), Some("my_bot"));
        assert_eq!(table["postgresql"]["dbname"].as_str(), Some("personal-x"));
        assert_eq!(table["cos"]["access_key"].as_str(), Some("robot-my-bot"));
        assert_eq!(table["cos"]["secret_key"].as_str(), Some("own-key"));
        assert!(!table.contains_key("timescaledb"), "no role of its own there: never the owner's instead");
        for shared in ["owner-pg", "owner-ts", "root-password", DATABASE_USER] {
            assert!(!text.contains(shared), "{shared} in {}", text.as_str());
        }
        // A server without an entry (an enterprise one) connects as the owner, as before.
        let table: toml::Table = confz("other", "personal-x", &ServerSpec::default(), &credentials).unwrap().parse().unwrap();
        assert_eq!(table["postgresql"]["user"].as_str(), Some(DATABASE_USER));
        assert_eq!(table["timescaledb"]["password"].as_str(), Some("owner-ts"));
        assert_eq!(table["cos"]["access_key"].as_str(), Some("root"));
        assert!(table["postgresql"].get("schema").is_none());
    }
}
