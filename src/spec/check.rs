//! Checks across fields and objects that a schema cannot express: references, namespaces,
//! personal tenants, shared middleware, secret sources, ConfzData TOML.

use super::diagnostic::{Diagnostic, FileTable, did_you_mean};
use super::duration;
use super::load::{Object, Spec};
use super::model::{ClusterSpec, GitopsEngine, IngressType, Issuer, SealingBackend, SecretSource, ServerSpec, TenantSpec, TenantType};
use super::schema::Kind;
use super::schema::is_dns_label;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

/// Namespaces that the platform itself uses or that Kubernetes reserves.
const RESERVED_NAMESPACES: &[&str] = &[
    "default",
    "kube-system",
    "kube-public",
    "kube-node-lease",
    "istio-system",
    "istio-ingress",
    "cert-manager",
    "cnpg-system",
    "minio-operator",
    "rabbitmq-system",
    "flux-system",
    "argocd",
    "monitoring",
];

/// Longest tenant namespace: `<ns>-pg-rw` and `<ns>-ts-rw` must stay Service names (63).
const MAX_NAMESPACE: usize = 57;
/// Longest server name: `<server>-robot-worker` must stay a label value (63).
const MAX_SERVER: usize = 50;

/// The namespace a tenant's objects live in.
#[must_use]
pub fn tenant_namespace(name: &str, spec: &TenantSpec) -> String {
    match spec.kind {
        TenantType::Personal => format!("personal-{}", spec.function),
        TenantType::Enterprise if spec.namespace.is_empty() => name.to_owned(),
        TenantType::Enterprise => spec.namespace.clone(),
    }
}

/// Runs every cross-field check.
pub fn check(spec: &Spec, known: &BTreeMap<Kind, BTreeSet<String>>, files: &dyn FileTable, out: &mut Vec<Diagnostic>) {
    let empty = BTreeSet::new();
    let known_clusters = known.get(&Kind::Cluster).unwrap_or(&empty);
    let known_tenants = known.get(&Kind::Tenant).unwrap_or(&empty);
    duplicates(&spec.clusters, "TFRCluster", files, out);
    duplicates(&spec.tenants, "TFRTenant", files, out);
    duplicates(&spec.servers, "TFRServer", files, out);
    let clusters: BTreeMap<&str, &Object<ClusterSpec>> = spec.clusters.iter().map(|c| (c.name(), c)).collect();
    let tenants: BTreeMap<&str, &Object<TenantSpec>> = spec.tenants.iter().map(|t| (t.name(), t)).collect();
    for cluster in &spec.clusters {
        check_cluster(cluster, out);
    }
    for tenant in &spec.tenants {
        check_tenant(tenant, known_clusters, out);
    }
    check_namespaces(spec, &clusters, files, out);
    super::prerequisites::check(spec, &clusters, &tenants, out);
    let mut hosts: BTreeMap<String, String> = BTreeMap::new();
    for server in &spec.servers {
        check_server(server, &tenants, known_tenants, &clusters, &mut hosts, files, out);
    }
    for object in &spec.clusters {
        metadata_namespace(object, out);
    }
    for object in &spec.tenants {
        metadata_namespace(object, out);
    }
    for object in &spec.servers {
        metadata_namespace(object, out);
    }
}

fn metadata_namespace<S>(object: &Object<S>, out: &mut Vec<Diagnostic>) {
    if object.metadata.namespace.is_some() {
        out.push(Diagnostic::warning(
            object.locate("metadata.namespace"),
            "metadata.namespace",
            "ignored: the namespace is derived from the tenant (`spec.namespace`, or `personal-<function>`)",
        ));
    }
}

fn duplicates<S>(objects: &[Object<S>], kind: &str, files: &dyn FileTable, out: &mut Vec<Diagnostic>) {
    let mut seen: BTreeMap<&str, &Object<S>> = BTreeMap::new();
    for object in objects {
        if let Some(first) = seen.get(object.name()) {
            let at = first.locate("metadata.name");
            out.push(Diagnostic::error(
                object.locate("metadata.name"),
                "metadata.name",
                format!("duplicate {kind} `{}`, first defined at {}:{}:{}", object.name(), files.name(at.file), at.line, at.column),
            ));
        } else {
            seen.insert(object.name(), object);
        }
    }
}

fn secret_warnings<S>(object: &Object<S>, sources: &[(String, &SecretSource)], out: &mut Vec<Diagnostic>) {
    for (path, source) in sources {
        if source.value.is_some() && !is_identity(path) {
            out.push(
                Diagnostic::warning(object.locate(&format!("{path}.value")), format!("{path}.value"), "plaintext secret in Git")
                    .with_help("use `{}` (generated), `fromEnv` or `fromFile` instead of `value`"),
            );
        }
    }
}

/// User names are credentials by form but not secret; a literal one is fine.
fn is_identity(path: &str) -> bool {
    path.ends_with(".username") || path.ends_with(".rootUser")
}

fn check_cluster(cluster: &Object<ClusterSpec>, out: &mut Vec<Diagnostic>) {
    // The RabbitMQ operators come from upstream's release manifests: a cluster-operator tag.
    let rabbitmq = &cluster.spec.operators.rabbitmq;
    if rabbitmq.enabled && !rabbitmq.version.starts_with("v2.") {
        let path = "spec.operators.rabbitmq.version";
        out.push(
            Diagnostic::error(
                cluster.locate(path),
                path,
                format!(
                    "expected a rabbitmq/cluster-operator release tag such as `{}`, found `{}`",
                    crate::catalog::version("rabbitmq-cluster-operator"),
                    rabbitmq.version
                ),
            )
            .with_help("the operators are installed from upstream's release manifests; a Bitnami chart version (4.x) no longer applies: Bitnami's operator images are gone. Leave `version` out for the pinned release"),
        );
    }
    let spec = &cluster.spec;
    if spec.ingress.domain.is_empty() {
        out.push(
            Diagnostic::error(cluster.locate("spec.ingress"), "spec.ingress.domain", "missing required field")
                .with_help("every server's default host is `<server>.<tenant>.<domain>`"),
        );
    }
    if spec.ingress.tls.issuer == Issuer::Letsencrypt && spec.ingress.tls.email.is_empty() {
        out.push(Diagnostic::error(
            cluster.locate("spec.ingress.tls"),
            "spec.ingress.tls.email",
            "required when `issuer` is `letsencrypt` (the ACME account e-mail)",
        ));
    }
    let ports = &spec.ingress.node_ports;
    if spec.ingress.kind == IngressType::Nodeport && ports.http == ports.https {
        out.push(Diagnostic::error(
            cluster.locate("spec.ingress.nodePorts.https"),
            "spec.ingress.nodePorts.https",
            format!("the same node port as `http` ({}): a Service cannot expose one node port twice", ports.http),
        ));
    }
    if duration::parse(&spec.tfrs_operator.timeout) == Ok(Duration::ZERO) {
        out.push(
            Diagnostic::error(
                cluster.locate("spec.tfrsOperator.timeout"),
                "spec.tfrsOperator.timeout",
                "a zero timeout leaves Helm no time to wait for the release: every install and upgrade would time out",
            )
            .with_help("leave it out for `5m`, or give the time the release needs, e.g. `10m`"),
        );
    }
    if !spec.ingress.tke_clb_id.is_empty() && spec.ingress.kind != IngressType::TkeClb {
        out.push(Diagnostic::error(
            cluster.locate("spec.ingress.tkeClbId"),
            "spec.ingress.tkeClbId",
            "only valid with `ingress.type: tke-clb`",
        ));
    }
    if spec.gitops.engine == GitopsEngine::Argocd && spec.gitops.repo_url.is_empty() {
        out.push(
            Diagnostic::error(cluster.locate("spec.gitops"), "spec.gitops.repoURL", "required with `engine: argocd`")
                .with_help("the Git URL Argo CD reads the rendered tree from"),
        );
    }
    if spec.gitops.engine == GitopsEngine::Argocd && spec.sealing.backend == SealingBackend::SopsAge {
        out.push(
            Diagnostic::error(cluster.locate("spec.sealing.backend"), "spec.sealing.backend", "Argo CD cannot decrypt `sops-age` Secrets")
                .with_help(
                    "use `backend: sealed-secrets` with Argo CD, or `gitops.engine: flux`, whose kustomize-controller decrypts SOPS",
                ),
        );
    }
    let registry = &spec.image_registry;
    match (&registry.username, &registry.password) {
        (Some(_), None) => out.push(Diagnostic::error(
            cluster.locate("spec.imageRegistry.username"),
            "spec.imageRegistry.password",
            "required when `username` is set",
        )),
        (None, Some(_)) => out.push(Diagnostic::error(
            cluster.locate("spec.imageRegistry.password"),
            "spec.imageRegistry.username",
            "required when `password` is set",
        )),
        _ => {}
    }
    match spec.sealing.backend {
        SealingBackend::SealedSecrets if spec.sealing.cert_file.is_empty() => out.push(
            Diagnostic::warning(
                cluster.locate("spec.sealing"),
                "spec.sealing.certFile",
                "not set: `tfrs render` cannot seal Secrets without the controller certificate",
            )
            .with_help("save it with `kubeseal --fetch-cert > keys/<cluster>.pem` and set `certFile: keys/<cluster>.pem`"),
        ),
        SealingBackend::SopsAge if spec.sealing.age_recipients.is_empty() => out.push(Diagnostic::error(
            cluster.locate("spec.sealing"),
            "spec.sealing.ageRecipients",
            "at least one `age1…` recipient is required with `backend: sops-age`",
        )),
        _ => {}
    }
    for (index, recipient) in spec.sealing.age_recipients.iter().enumerate() {
        if !(recipient.starts_with("age1") && recipient.len() > 10) {
            let path = format!("spec.sealing.ageRecipients[{index}]");
            out.push(Diagnostic::error(cluster.locate(&path), path, format!("expected an age recipient (`age1…`), found {recipient:?}")));
        }
    }
    let billing = &spec.billing;
    if billing.enabled {
        let required = [
            ("spec.billing.otlpEndpoint", billing.otlp_endpoint.is_empty()),
            ("spec.billing.infisical.url", billing.infisical.url.is_empty()),
            ("spec.billing.infisical.projectSlug", billing.infisical.project_slug.is_empty()),
            ("spec.billing.infisical.environment", billing.infisical.environment.is_empty()),
            ("spec.billing.infisical.clientId", billing.infisical.client_id.is_none()),
            ("spec.billing.infisical.clientSecret", billing.infisical.client_secret.is_none()),
            ("spec.billing.infisical.expiresAt", billing.infisical.expires_at.is_empty()),
        ];
        for (path, missing) in required {
            if missing {
                out.push(Diagnostic::error(cluster.locate(path), path, "required when `billing.enabled` is true"));
            }
        }
        for (path, url) in [("spec.billing.otlpEndpoint", &billing.otlp_endpoint), ("spec.billing.infisical.url", &billing.infisical.url)] {
            if !url.is_empty() && !is_https_url(url) {
                out.push(
                    Diagnostic::error(cluster.locate(path), path, format!("expected an `https://` URL, found {url:?}"))
                        .with_help("billing tokens and machine-identity credentials travel on this connection: it must be TLS"),
                );
            }
        }
        let environment = &billing.infisical.environment;
        if !environment.is_empty() && !is_slug(environment) {
            out.push(
                Diagnostic::error(
                    cluster.locate("spec.billing.infisical.environment"),
                    "spec.billing.infisical.environment",
                    format!("expected an environment slug such as `staging`, `prod` or `beta`, found {environment:?}"),
                )
                .with_help("Infisical matches the environment by its slug, not its display name (`Production` is `prod`)"),
            );
        }
        let project = &billing.infisical.project_slug;
        if !project.is_empty() && !looks_like_uuid(project) && !is_slug(project) {
            out.push(
                Diagnostic::error(
                    cluster.locate("spec.billing.infisical.projectSlug"),
                    "spec.billing.infisical.projectSlug",
                    format!("expected a project slug such as `tfrs-prod`, found {project:?}"),
                )
                .with_help("the slug is on the project's Settings page in Infisical"),
            );
        }
    }
    if looks_like_uuid(&billing.infisical.project_slug) {
        out.push(
            Diagnostic::error(
                cluster.locate("spec.billing.infisical.projectSlug"),
                "spec.billing.infisical.projectSlug",
                "this is a project id, not a slug",
            )
            .with_help("External Secrets looks the project up by its slug, e.g. `tfrs-prod`, not by its id"),
        );
    }
    let mut sources = vec![];
    if let Some(s) = &registry.username {
        sources.push(("spec.imageRegistry.username".to_owned(), s));
    }
    if let Some(s) = &registry.password {
        sources.push(("spec.imageRegistry.password".to_owned(), s));
    }
    if let Some(s) = &billing.infisical.client_id {
        sources.push(("spec.billing.infisical.clientId".to_owned(), s));
    }
    if let Some(s) = &billing.infisical.client_secret {
        sources.push(("spec.billing.infisical.clientSecret".to_owned(), s));
    }
    secret_warnings(cluster, &sources, out);
}

/// `https://` followed by a host and nothing that could break out of a URL.
fn is_https_url(url: &str) -> bool {
    url.strip_prefix("https://")
        .is_some_and(|rest| !rest.is_empty() && !rest.starts_with('/') && rest.bytes().all(|b| b.is_ascii_graphic()))
}

/// A lowercase slug: `a-z`, `0-9` and inner `-`.
fn is_slug(text: &str) -> bool {
    !text.is_empty()
        && text.len() <= 64
        && text.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !text.starts_with('-')
        && !text.ends_with('-')
}

/// Days since 1970-01-01 of a `YYYY-MM-DD` date (validated by the schema).
fn days_from_date(date: &str) -> Option<i64> {
    let mut parts = date.split('-').map(|p| p.parse::<i64>().ok());
    let (year, month, day) = (parts.next()??, parts.next()??, parts.next()??);
    // Howard Hinnant's days_from_civil.
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let yoe = year - era * 400;
    let doy = (153 * (if month > 2 { month - 3 } else { month + 9 }) + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    Some(era * 146_097 + doe - 719_468)
}

/// Checks that depend on the date (`now` is injected by the caller, never read here): a billing
/// client secret past `expiresAt` is an error, one expiring within 30 days a warning.
#[must_use]
pub fn clock_checks(spec: &Spec, now_unix_seconds: i64) -> Vec<Diagnostic> {
    let today = now_unix_seconds.div_euclid(86_400);
    let mut out = Vec::new();
    for cluster in &spec.clusters {
        let billing = &cluster.spec.billing;
        let Some(expires) = days_from_date(&billing.infisical.expires_at) else { continue };
        if !billing.enabled {
            continue;
        }
        let field = "spec.billing.infisical.expiresAt";
        let left = expires - today;
        if left < 0 {
            out.push(
                Diagnostic::error(
                    cluster.locate(field),
                    field,
                    format!("the ESO machine identity's client secret expired on {}", billing.infisical.expires_at),
                )
                .with_help("issue a new client secret for the read-only identity, then update `clientSecret` and `expiresAt`"),
            );
        } else if left <= 30 {
            out.push(
                Diagnostic::warning(
                    cluster.locate(field),
                    field,
                    format!(
                        "the ESO machine identity's client secret expires in {left} day{} ({})",
                        if left == 1 { "" } else { "s" },
                        billing.infisical.expires_at
                    ),
                )
                .with_help("rotate it before then, or billing stops reaching the central endpoint"),
            );
        }
    }
    out
}

/// A project id rather than a slug: a UUID (with or without dashes) or a 24-digit hex object id.
fn looks_like_uuid(s: &str) -> bool {
    let parts: Vec<&str> = s.split('-').collect();
    let dashed = parts.len() == 5
        && [8, 4, 4, 4, 12].iter().zip(&parts).all(|(len, part)| part.len() == *len && part.bytes().all(|b| b.is_ascii_hexdigit()));
    let bare = matches!(s.len(), 24 | 32) && s.bytes().all(|b| b.is_ascii_hexdigit());
    dashed || bare
}

/// Every secret-valued field of a tenant, by path.
#[must_use]
pub fn tenant_secrets(spec: &TenantSpec) -> Vec<(String, &SecretSource)> {
    vec![
        ("spec.postgresql.password".to_owned(), &spec.postgresql.password),
        ("spec.timescaledb.password".to_owned(), &spec.timescaledb.password),
        ("spec.redis.password".to_owned(), &spec.redis.password),
        ("spec.minio.rootUser".to_owned(), &spec.minio.root_user),
        ("spec.minio.rootPassword".to_owned(), &spec.minio.root_password),
        ("spec.rabbitmq.username".to_owned(), &spec.rabbitmq.username),
        ("spec.rabbitmq.password".to_owned(), &spec.rabbitmq.password),
        ("spec.grafana.adminPassword".to_owned(), &spec.grafana.admin_password),
    ]
}

/// Where both workers find `config.toml` (the render engine mounts it there).
pub const CONFZ_DIR: &str = "/etc/tfrobot";

fn check_tenant(tenant: &Object<TenantSpec>, clusters: &BTreeSet<String>, out: &mut Vec<Diagnostic>) {
    let spec = &tenant.spec;
    let cache = spec.shared_cache.cache_dir.trim_end_matches('/');
    if spec.shared_cache.enabled && (cache.is_empty() || Path::new(cache).starts_with(CONFZ_DIR) || Path::new(CONFZ_DIR).starts_with(cache))
    {
        out.push(
            Diagnostic::error(
                tenant.locate("spec.sharedCache.cacheDir"),
                "spec.sharedCache.cacheDir",
                format!("the cache would be mounted over `/` or over the workers' configuration at `{CONFZ_DIR}`"),
            )
            .with_help("use a directory of its own, e.g. `/data/shared-cache`"),
        );
    }
    if !clusters.contains(&spec.cluster) {
        out.push(dangling(tenant.locate("spec.cluster"), "spec.cluster", "TFRCluster", &spec.cluster, clusters.iter().map(String::as_str)));
    }
    match spec.kind {
        TenantType::Personal => {
            if spec.function.is_empty() {
                out.push(
                    Diagnostic::error(tenant.locate("spec.type"), "spec.function", "required for personal tenants")
                        .with_help("personal tenants share the namespace `personal-<function>`, e.g. `function: support`"),
                );
            }
            if !spec.namespace.is_empty() {
                out.push(
                    Diagnostic::error(tenant.locate("spec.namespace"), "spec.namespace", "only enterprise tenants choose a namespace")
                        .with_help("a personal tenant lives in `personal-<function>`"),
                );
            }
        }
        TenantType::Enterprise => {
            if !spec.function.is_empty() {
                out.push(
                    Diagnostic::error(tenant.locate("spec.function"), "spec.function", "only personal tenants have a function")
                        .with_help("remove it, or set `type: personal`"),
                );
            }
        }
    }
    for (field, value) in [("spec.function", &spec.function), ("spec.namespace", &spec.namespace)] {
        if !value.is_empty() && !is_dns_label(value) {
            out.push(Diagnostic::error(
                tenant.locate(field),
                field,
                format!("expected a DNS-1123 label (lowercase letters, digits and `-`), found {value:?}"),
            ));
        }
    }
    if duration::parse_prometheus(&spec.prometheus.retention) == Ok(Duration::ZERO) {
        out.push(
            Diagnostic::warning(
                tenant.locate("spec.prometheus.retention"),
                "spec.prometheus.retention",
                "Prometheus reads a zero retention as not set and keeps its default, 15d",
            )
            .with_help("write the retention you want, e.g. `15d`"),
        );
    }
    if spec.front.enabled && spec.front.image.is_empty() {
        out.push(Diagnostic::error(tenant.locate("spec.front"), "spec.front.image", "required when `front.enabled` is true"));
    }
    if spec.utils.enabled && spec.utils.image.is_empty() {
        out.push(Diagnostic::error(tenant.locate("spec.utils"), "spec.utils.image", "required when `utils.enabled` is true"));
    }
    secret_warnings(tenant, &tenant_secrets(spec), out);
}

/// An error for a reference to an object that does not exist, with the known names.
pub(crate) fn dangling<'a>(
    origin: super::yaml::Origin,
    path: &str,
    kind: &str,
    name: &str,
    known: impl Iterator<Item = &'a str> + Clone,
) -> Diagnostic {
    let listed: Vec<String> = known.clone().map(|k| format!("`{k}`")).collect();
    let defined = if listed.is_empty() { "none is defined".to_owned() } else { format!("defined: {}", listed.join(", ")) };
    let mut diagnostic = Diagnostic::error(origin, path, format!("unknown {kind} `{name}` ({defined})"));
    if let Some(close) = did_you_mean(name, known) {
        diagnostic = diagnostic.with_help(format!("did you mean `{close}`?"));
    }
    diagnostic
}

/// The middleware a personal namespace renders once: every tenant sharing it must agree.
fn shared_settings(spec: &TenantSpec) -> Vec<(&'static str, serde_json::Value)> {
    let json = |v: &dyn erased::Json| v.json();
    vec![
        ("postgresql", json(&spec.postgresql)),
        ("timescaledb", json(&spec.timescaledb)),
        ("redis", json(&spec.redis)),
        ("minio", json(&spec.minio)),
        ("rabbitmq", json(&spec.rabbitmq)),
        ("jaeger", json(&spec.jaeger)),
        ("otelCollector", json(&spec.otel_collector)),
        ("prometheus", json(&spec.prometheus)),
        ("grafana", json(&spec.grafana)),
        ("vector", json(&spec.vector)),
        ("sharedCache", json(&spec.shared_cache)),
        ("front", json(&spec.front)),
        ("utils", json(&spec.utils)),
        ("resources", json(&spec.resources)),
    ]
}

mod erased {
    /// Serializes any model value to JSON for comparison.
    pub trait Json {
        fn json(&self) -> serde_json::Value;
    }
    impl<T: serde::Serialize> Json for T {
        fn json(&self) -> serde_json::Value {
            serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
        }
    }
}

/// The first differing leaf between two JSON values, as a dotted suffix.
fn first_difference(a: &serde_json::Value, b: &serde_json::Value, path: &str) -> Option<String> {
    match (a, b) {
        (serde_json::Value::Object(x), serde_json::Value::Object(y)) => {
            let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
            keys.sort();
            keys.dedup();
            keys.into_iter().find_map(|k| {
                let null = serde_json::Value::Null;
                first_difference(x.get(k).unwrap_or(&null), y.get(k).unwrap_or(&null), &format!("{path}.{k}"))
            })
        }
        _ if a == b => None,
        _ => Some(path.to_owned()),
    }
}

fn check_namespaces(spec: &Spec, clusters: &BTreeMap<&str, &Object<ClusterSpec>>, files: &dyn FileTable, out: &mut Vec<Diagnostic>) {
    // (cluster, namespace) -> first tenant there.
    let mut owners: BTreeMap<(String, String), &Object<TenantSpec>> = BTreeMap::new();
    for tenant in &spec.tenants {
        if tenant.spec.kind == TenantType::Personal && tenant.spec.function.is_empty() {
            continue;
        }
        let namespace = tenant_namespace(tenant.name(), &tenant.spec);
        let field = match tenant.spec.kind {
            TenantType::Personal => "spec.function",
            TenantType::Enterprise if tenant.spec.namespace.is_empty() => "metadata.name",
            TenantType::Enterprise => "spec.namespace",
        };
        let origin = tenant.locate(field);
        let mut reserved: Vec<&str> = RESERVED_NAMESPACES.to_vec();
        if let Some(cluster) = clusters.get(tenant.spec.cluster.as_str()) {
            reserved.push(&cluster.spec.image_registry.tenant_credentials_namespace);
            reserved.push(&cluster.spec.tfrs_operator.namespace);
            reserved.push(&cluster.spec.sealing.controller_namespace);
        }
        if reserved.contains(&namespace.as_str()) {
            out.push(Diagnostic::error(origin, field, format!("namespace `{namespace}` is reserved for the platform")));
        }
        if namespace.len() > MAX_NAMESPACE || !namespace.starts_with(|c: char| c.is_ascii_lowercase()) {
            out.push(Diagnostic::error(
                origin,
                field,
                format!("namespace `{namespace}` must start with a letter and have at most {MAX_NAMESPACE} characters, because `{namespace}-pg-rw` is a Service name"),
            ));
        }
        if tenant.spec.kind == TenantType::Enterprise && namespace.starts_with("personal-") {
            out.push(Diagnostic::error(origin, field, format!("namespace `{namespace}` is reserved for personal tenants")));
        }
        let key = (tenant.spec.cluster.clone(), namespace.clone());
        match owners.get(&key) {
            None => {
                owners.insert(key, tenant);
            }
            Some(first) if first.spec.kind == TenantType::Personal && tenant.spec.kind == TenantType::Personal => {
                for ((component, mine), (_, theirs)) in shared_settings(&tenant.spec).iter().zip(shared_settings(&first.spec).iter()) {
                    if let Some(suffix) = first_difference(theirs, mine, "") {
                        let path = format!("spec.{component}{suffix}");
                        let at = first.locate(&path);
                        out.push(
                            Diagnostic::error(
                                tenant.locate(&path),
                                &path,
                                format!(
                                    "personal tenants `{}` and `{}` share namespace `{namespace}` but ask for different `{component}` settings (`{}` sets it at {}:{}:{})",
                                    first.name(),
                                    tenant.name(),
                                    first.name(),
                                    files.name(at.file),
                                    at.line,
                                    at.column
                                ),
                            )
                            .with_help("the middleware of a personal namespace is rendered once: give both tenants the same settings"),
                        );
                    }
                }
            }
            // A duplicate name is reported once, as a duplicate.
            Some(first) if first.name() == tenant.name() => {}
            Some(first) => {
                out.push(Diagnostic::error(
                    origin,
                    field,
                    format!("namespace `{namespace}` is already used by TFRTenant `{}`", first.name()),
                ));
            }
        }
    }
}

fn check_server(
    server: &Object<ServerSpec>,
    tenants: &BTreeMap<&str, &Object<TenantSpec>>,
    known_tenants: &BTreeSet<String>,
    clusters: &BTreeMap<&str, &Object<ClusterSpec>>,
    hosts: &mut BTreeMap<String, String>,
    files: &dyn FileTable,
    out: &mut Vec<Diagnostic>,
) {
    let spec = &server.spec;
    let name = server.name();
    if name.len() > MAX_SERVER || !name.starts_with(|c: char| c.is_ascii_lowercase()) {
        out.push(Diagnostic::error(
            server.locate("metadata.name"),
            "metadata.name",
            format!("a server name must start with a letter and have at most {MAX_SERVER} characters, because `{name}-robot-worker` names a Deployment and its Service"),
        ));
    }
    let Some(tenant) = tenants.get(spec.tenant.as_str()) else {
        if !known_tenants.contains(&spec.tenant) {
            out.push(dangling(
                server.locate("spec.tenant"),
                "spec.tenant",
                "TFRTenant",
                &spec.tenant,
                known_tenants.iter().map(String::as_str),
            ));
        }
        return;
    };
    let domain = clusters.get(tenant.spec.cluster.as_str()).map(|c| c.spec.ingress.domain.as_str()).unwrap_or_default();
    let host = if spec.host.is_empty() { format!("{name}.{}.{domain}", tenant.name()) } else { spec.host.clone() };
    if let Some(first) = hosts.get(&host) {
        out.push(Diagnostic::error(
            server.locate("spec.host"),
            "spec.host",
            format!("host `{host}` is already used by TFRServer `{first}`"),
        ));
    } else {
        hosts.insert(host, name.to_owned());
    }
    let tenant_spec = &tenant.spec;
    let jobs = [
        ("spec.jobs.dbInit", spec.jobs.db_init, tenant_spec.postgresql.enabled, "postgresql"),
        ("spec.jobs.minioInit", spec.jobs.minio_init, tenant_spec.minio.enabled, "minio"),
        ("spec.jobs.grafanaServiceAccount", spec.jobs.grafana_service_account, tenant_spec.grafana.enabled, "grafana"),
    ];
    for (path, wanted, available, component) in jobs {
        if wanted && !available {
            out.push(Diagnostic::warning(
                server.locate(path),
                path,
                format!("tenant `{}` has `{component}` disabled, so this job is not rendered", tenant.name()),
            ));
        }
    }
    const CACHE_KEY: &str = "TFS_ROBOT__DOC_EXTRACTED_IMAGES_DIR";
    if tenant_spec.shared_cache.enabled && spec.config_data.contains_key(CACHE_KEY) {
        let path = format!("spec.configData.{CACHE_KEY}");
        out.push(Diagnostic::warning(
            server.locate(&path),
            &path,
            format!(
                "overridden by the tenant's `sharedCache.cacheDir` (`{}`), which has the highest priority",
                tenant_spec.shared_cache.cache_dir
            ),
        ));
    }
    for key in spec.secret_data.keys() {
        if spec.config_data.contains_key(key) {
            let path = format!("spec.configData.{key}");
            out.push(Diagnostic::error(server.locate(&path), &path, format!("`{key}` is also in `secretData`: set it in one place")));
        }
    }
    if !spec.confz_data.is_empty()
        && let Err(error) = spec.confz_data.parse::<toml::Table>()
    {
        out.push(confz_error(server, &error, files));
    }
    let sources: Vec<(String, &SecretSource)> = spec.secret_data.iter().map(|(k, v)| (format!("spec.secretData.{k}"), v)).collect();
    secret_warnings(server, &sources, out);
}

/// Maps a TOML error inside `confzData` to the YAML file's line and column.
fn confz_error(server: &Object<ServerSpec>, error: &toml::de::Error, files: &dyn FileTable) -> Diagnostic {
    let node = server.tree.get("spec").and_then(|s| s.get("confzData"));
    let mut origin = server.locate("spec.confzData");
    let text = &server.spec.confz_data;
    let (line, column) = error.span().map_or((0, 0), |span| {
        let before = &text[..span.start.min(text.len())];
        let line = before.matches('\n').count();
        let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count());
        (line, column)
    });
    let message = error.message().to_owned();
    if node.is_some_and(|n| n.block) {
        // NB: a block scalar's origin is its first content line, not the `|` line.
        origin.line += line;
        let source_line = files.text(origin.file).lines().nth(origin.line - 1).unwrap_or_default();
        origin.column = source_line.chars().take_while(|c| *c == ' ').count() + column + 1;
        return Diagnostic::error(
            origin,
            "spec.confzData",
            format!("invalid TOML (TOML line {}, column {}): {message}", line + 1, column + 1),
        )
        .with_help("ConfzData is deep-merged over the generated config.toml and must be valid TOML")
        .sensitive();
    }
    // NB: ConfzData may hold credentials: its lines are never echoed.
    Diagnostic::error(origin, "spec.confzData", format!("invalid TOML (TOML line {}, column {}): {message}", line + 1, column + 1))
        .sensitive()
}

#[cfg(test)]
mod tests {
    use super::{days_from_date, is_https_url, is_slug};

    #[test]
    fn dates_count_days_from_the_epoch() {
        assert_eq!(days_from_date("1970-01-01"), Some(0));
        assert_eq!(days_from_date("2000-03-01"), Some(11_017));
        assert_eq!(days_from_date("2027-05-19"), Some(20_957));
    }

    #[test]
    fn slugs_and_urls() {
        assert!(is_slug("prod") && is_slug("tfrs-prod") && !is_slug("Production") && !is_slug("pro d") && !is_slug("-x"));
        assert!(
            is_https_url("https://secret.example.com")
                && !is_https_url("http://x")
                && !is_https_url("https://x y")
                && !is_https_url("https://")
        );
    }
}
