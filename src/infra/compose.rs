//! The compose file of the central infrastructure. It holds no secret: credentials are
//! `${VARIABLE}` references that compose fills from `.env.infra` (`--env-file`).
//!
//! Every service binds to 127.0.0.1 only, joins the network `tfrs-net`, has a health check
//! (`pg_isready`, `redis-cli ping`, Infisical's `/api/status`), a memory limit and a named
//! volume whose Docker name is fixed (not prefixed by the compose project).

use super::model::InfraSpec;
use super::rules;
use serde_json::{Value as Json, json};

/// The network every service joins.
pub const NETWORK: &str = "tfrs-net";
/// The file name the stack is written to.
pub const FILE_NAME: &str = "docker-compose.cloud.yml";
/// Where the TimescaleDB container keeps archived WAL segments (the WAL archive volume).
const WAL_ARCHIVE_DIR: &str = "/var/lib/postgresql/wal_archive";

fn memory(limit: &str) -> String {
    // NB: validated by `spec::load`; an unparsable value cannot reach here.
    rules::memory_bytes(limit).map_or_else(|| limit.to_owned(), rules::compose_memory)
}

fn healthcheck(test: &str, start_period: &str) -> Json {
    json!({ "test": ["CMD-SHELL", test], "interval": "10s", "timeout": "5s", "retries": 10, "start_period": start_period })
}

fn postgres_health() -> Json {
    // NB: `$$` is a literal `$` for compose: the container's own variables, read in its shell.
    healthcheck("pg_isready -h 127.0.0.1 -U \"$${POSTGRES_USER}\" -d \"$${POSTGRES_DB}\"", "30s")
}

fn redis_service(image: &str, password: &str, memory_limit: &str, volume: &str, name: &str) -> serde_json::Map<String, Json> {
    let mut service = serde_json::Map::new();
    service.insert("image".into(), json!(image));
    service.insert("container_name".into(), json!(name));
    service.insert("restart".into(), json!("unless-stopped"));
    service.insert("environment".into(), json!({ "REDIS_PASSWORD": format!("${{{password}}}") }));
    // The password reaches redis-server through the container's environment, not the compose
    // file; the health check authenticates through `REDISCLI_AUTH` the same way. NB: the shell
    // hands over to the image's entrypoint with `redis-server` first, so the entrypoint still
    // drops root for the `redis` user (it does so only for that first argument).
    service.insert(
        "command".into(),
        json!(["sh", "-c", "exec docker-entrypoint.sh redis-server --appendonly yes --requirepass \"$${REDIS_PASSWORD}\""]),
    );
    service.insert("healthcheck".into(), healthcheck("REDISCLI_AUTH=\"$${REDIS_PASSWORD}\" redis-cli ping | grep -q PONG", "10s"));
    service.insert("volumes".into(), json!([format!("{volume}:/data")]));
    service.insert("mem_limit".into(), json!(memory(memory_limit)));
    service.insert("networks".into(), json!([NETWORK]));
    service
}

fn postgres_service(image: &str, environment: Json, memory_limit: &str, volume: &str, name: &str) -> serde_json::Map<String, Json> {
    let mut service = serde_json::Map::new();
    service.insert("image".into(), json!(image));
    service.insert("container_name".into(), json!(name));
    service.insert("restart".into(), json!("unless-stopped"));
    service.insert("environment".into(), environment);
    service.insert("healthcheck".into(), postgres_health());
    service.insert("volumes".into(), json!([format!("{volume}:/var/lib/postgresql/data")]));
    service.insert("mem_limit".into(), json!(memory(memory_limit)));
    service.insert("networks".into(), json!([NETWORK]));
    service
}

fn published(port: u16, container: u16) -> Json {
    json!([format!("127.0.0.1:{port}:{container}")])
}

/// The compose document of `spec`.
#[must_use]
pub fn compose(spec: &InfraSpec) -> Json {
    // Long: one service after another, in the order the stack starts.
    let mut postgres = postgres_service(
        &spec.postgres.image,
        json!({ "POSTGRES_USER": "${DB_USER}", "POSTGRES_PASSWORD": "${DB_PASSWORD}", "POSTGRES_DB": "${DB_NAME}" }),
        &spec.postgres.memory_limit,
        &spec.postgres.volume,
        "tfrs_postgres",
    );
    postgres.insert("ports".into(), published(spec.postgres.port, 5432));
    let mut redis = redis_service(&spec.redis.image, "REDIS_PASSWORD", &spec.redis.memory_limit, &spec.redis.volume, "tfrs_redis");
    redis.insert("ports".into(), published(spec.redis.port, 6379));
    let ts = &spec.timescaledb;
    let mut timescaledb = postgres_service(
        &ts.image,
        json!({ "POSTGRES_USER": "${OTLP_TS_USER}", "POSTGRES_PASSWORD": "${OTLP_TS_PASSWORD}", "POSTGRES_DB": "${OTLP_TS_DBNAME}" }),
        &ts.memory_limit,
        &ts.volume,
        "tfrs_timescaledb",
    );
    timescaledb.insert("ports".into(), published(ts.port, 5432));
    timescaledb.insert(
        "volumes".into(),
        json!([format!("{}:/var/lib/postgresql/data", ts.volume), format!("{}:{WAL_ARCHIVE_DIR}", ts.wal_archive_volume)]),
    );
    // NB: a fresh named volume is owned by root; the server runs as `postgres`. The entrypoint
    // starts as root, so the archive directory is handed over before the server starts.
    let archive = format!("test ! -f {WAL_ARCHIVE_DIR}/%f && cp %p {WAL_ARCHIVE_DIR}/%f");
    timescaledb.insert(
        "command".into(),
        json!([
            "sh",
            "-c",
            format!(
                "chown postgres:postgres {WAL_ARCHIVE_DIR} && exec docker-entrypoint.sh postgres -c archive_mode=on -c archive_command='{archive}'"
            )
        ]),
    );
    let infisical_postgres = postgres_service(
        &spec.infisical.postgres.image,
        json!({ "POSTGRES_USER": "infisical", "POSTGRES_PASSWORD": "${INFISICAL_PG_PASSWORD}", "POSTGRES_DB": "infisical" }),
        &spec.infisical.postgres.memory_limit,
        &spec.infisical.postgres.volume,
        "tfrs_infisical_pg",
    );
    let infisical_redis = redis_service(
        &spec.infisical.redis.image,
        "INFISICAL_REDIS_PASSWORD",
        &spec.infisical.redis.memory_limit,
        &spec.infisical.redis.volume,
        "tfrs_infisical_redis",
    );
    let infisical = infisical_service(spec);
    let volumes: serde_json::Map<String, Json> = [
        &spec.postgres.volume,
        &spec.redis.volume,
        &ts.volume,
        &ts.wal_archive_volume,
        &spec.infisical.postgres.volume,
        &spec.infisical.redis.volume,
    ]
    .into_iter()
    .map(|name| (name.clone(), json!({ "name": name })))
    .collect();
    let mut document = json!({
        "services": {
            "postgres": postgres,
            "redis": redis,
            "timescaledb": timescaledb,
            "infisical-postgres": infisical_postgres,
            "infisical-redis": infisical_redis,
            "infisical": infisical,
        },
        "networks": { NETWORK: { "name": NETWORK } },
        "volumes": volumes,
    });
    required(&mut document);
    document
}

/// Makes every `${VARIABLE}` reference required (`${VARIABLE:?…}`): without `--env-file
/// .env.infra` compose reads `.env`, and an unset password would start Redis with
/// `--requirepass ""` (no authentication) and Infisical with an empty key. `$${…}` (the
/// container's own variables) is left alone.
fn required(value: &mut Json) {
    match value {
        Json::String(text) => {
            let mut out = String::with_capacity(text.len());
            let mut rest = text.as_str();
            while let Some(at) = rest.find('$') {
                out.push_str(&rest[..at]);
                let tail = &rest[at..];
                if let Some(escaped) = tail.strip_prefix("$$") {
                    out.push_str("$$");
                    rest = escaped;
                } else if let Some((name, after)) = tail.strip_prefix("${").and_then(|t| t.split_once('}'))
                    && name.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
                {
                    out.push_str(&format!("${{{name}:?{name} is not set: run compose with --env-file .env.infra}}"));
                    rest = after;
                } else {
                    out.push('$');
                    rest = &tail[1..];
                }
            }
            out.push_str(rest);
            *text = out;
        }
        Json::Array(items) => items.iter_mut().for_each(required),
        Json::Object(map) => map.values_mut().for_each(required),
        _ => {}
    }
}

fn infisical_service(spec: &InfraSpec) -> Json {
    // Infisical's image runs Node, so the health check asks Node to fetch `/api/status` (no
    // curl or wget is assumed in the image). The first start runs the database migration:
    // the start period gives it time before failed checks count.
    let probe = "node -e \"fetch('http://127.0.0.1:8080/api/status').then(r => process.exit(r.ok ? 0 : 1)).catch(() => process.exit(1))\"";
    json!({
        "image": spec.infisical.image,
        "container_name": "tfrs_infisical",
        "restart": "unless-stopped",
        "depends_on": {
            "infisical-postgres": { "condition": "service_healthy" },
            "infisical-redis": { "condition": "service_healthy" },
        },
        "environment": {
            "NODE_ENV": "production",
            // NB: the image sets a 2048 MB heap; the heap follows the memory limit instead (three
            // quarters of it), so Node is not killed for a heap the limit cannot hold.
            "NODE_OPTIONS": format!("--max-old-space-size={}", rules::memory_bytes(&spec.infisical.memory_limit).unwrap_or(2 << 30) * 3 / 4 / (1 << 20)),
            "ENCRYPTION_KEY": "${INFISICAL_ENCRYPTION_KEY}",
            "AUTH_SECRET": "${INFISICAL_AUTH_SECRET}",
            "SITE_URL": "${INFISICAL_SITE_URL}",
            "PORT": "8080",
            // Passwords are alphanumeric, so they need no escaping inside these URLs.
            "DB_CONNECTION_URI": "postgres://infisical:${INFISICAL_PG_PASSWORD}@infisical-postgres:5432/infisical",
            "REDIS_URL": "redis://:${INFISICAL_REDIS_PASSWORD}@infisical-redis:6379",
        },
        "ports": published(spec.infisical.port, 8080),
        "healthcheck": { "test": ["CMD-SHELL", probe], "interval": "15s", "timeout": "5s", "retries": 10, "start_period": "300s" },
        "mem_limit": memory(&spec.infisical.memory_limit),
        "networks": [NETWORK],
    })
}

/// The compose file as text: a header comment, then the document.
///
/// # Errors
///
/// The document cannot be written as YAML (not expected for this document).
pub fn to_text(spec: &InfraSpec) -> Result<String, serde_saphyr::ser::Error> {
    let body = crate::manifest::to_yaml(&compose(spec))?;
    Ok(format!(
        "# Central infrastructure of `{}`, generated by tfrs: do not edit, re-render.\n# Start: docker compose -f {FILE_NAME} --env-file .env.infra up -d\n{body}",
        spec.environment.as_str()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::infra::spec::tests::spec;

    #[test]
    fn every_service_is_checked_limited_and_on_loopback() {
        let document = compose(&spec());
        let services = document["services"].as_object().unwrap();
        assert_eq!(services.len(), 6);
        for (name, service) in services {
            assert!(service["healthcheck"]["test"].is_array(), "{name}");
            assert!(service["mem_limit"].is_string(), "{name}");
            assert_eq!(service["networks"], json!([NETWORK]), "{name}");
            for port in service.get("ports").and_then(Json::as_array).into_iter().flatten() {
                assert!(port.as_str().unwrap().starts_with("127.0.0.1:"), "{name}: {port}");
            }
        }
        assert_eq!(services["infisical"]["mem_limit"], "2g");
        assert_eq!(services["timescaledb"]["ports"], json!(["127.0.0.1:5433:5432"]));
        assert_eq!(document["volumes"]["tfrs_tsdata"]["name"], "tfrs_tsdata");
        assert_eq!(document["volumes"]["tfrs_ts_wal_archive"]["name"], "tfrs_ts_wal_archive");
        assert!(services.get("infisical-postgres").unwrap().get("ports").is_none());
        // Commands hand over to the image's entrypoint with the server first (it drops root).
        for (name, server) in [("redis", "redis-server"), ("infisical-redis", "redis-server"), ("timescaledb", "postgres")] {
            let command = services[name]["command"][2].as_str().unwrap();
            assert!(command.contains(&format!("exec docker-entrypoint.sh {server} ")), "{name}: {command}");
        }
        // No credential is written into the file: only references compose fills in.
        let text = serde_json::to_string(&document).unwrap();
        for variable in ["DB_PASSWORD", "REDIS_PASSWORD", "OTLP_TS_PASSWORD", "INFISICAL_ENCRYPTION_KEY", "INFISICAL_AUTH_SECRET"] {
            assert!(text.contains(&format!("${{{variable}:?{variable} is not set")), "{variable}");
        }
        // Every reference is required; the container's own `$${…}` is untouched.
        assert!(!text.contains("${DB_PASSWORD}") && text.contains("$${REDIS_PASSWORD}"), "{text}");
        assert_eq!(services["infisical"]["environment"]["NODE_OPTIONS"], "--max-old-space-size=1536");
    }
}
