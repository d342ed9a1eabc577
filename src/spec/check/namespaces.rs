//! The checks across tenants: the namespace each one lives in is free, well-formed and its own,
//! and personal tenants that share one agree on its middleware.

use super::{MAX_NAMESPACE, tenant_namespace};
use crate::spec::diagnostic::{Diagnostic, FileTable};
use crate::spec::load::{Object, Spec};
use crate::spec::model::{ClusterSpec, TenantSpec, TenantType};
use std::collections::BTreeMap;

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

pub(super) fn check_namespaces(
    spec: &Spec,
    clusters: &BTreeMap<&str, &Object<ClusterSpec>>,
    files: &dyn FileTable,
    out: &mut Vec<Diagnostic>,
) {
    // (cluster, namespace) -> first tenant there.
    let mut owners: BTreeMap<(String, String), &Object<TenantSpec>> = BTreeMap::new();
    for tenant in &spec.tenants {
        if tenant.spec.kind == TenantType::Personal && tenant.spec.function.is_empty() {
            continue;
        }
        let namespace = tenant_namespace(tenant.name(), &tenant.spec);
        let field = namespace_field(tenant);
        namespace_name(tenant, &namespace, field, clusters.get(tenant.spec.cluster.as_str()).copied(), out);
        let key = (tenant.spec.cluster.clone(), namespace.clone());
        match owners.get(&key) {
            None => {
                owners.insert(key, tenant);
            }
            Some(first) if first.spec.kind == TenantType::Personal && tenant.spec.kind == TenantType::Personal => {
                shared_middleware(first, tenant, &namespace, files, out);
            }
            // A duplicate name is reported once, as a duplicate.
            Some(first) if first.name() == tenant.name() => {}
            Some(first) => {
                // NB: where the first tenant's namespace comes from (its name, its spec, an
                // environment of one cluster) is said too: it may be the one to change.
                let at = files.place(first.locate(namespace_field(first)));
                out.push(
                    tenant.error_at(field, format!("namespace `{namespace}` is already used by TFRTenant `{}`, set at {at}", first.name())),
                );
            }
        }
    }
}

/// The field that decides a tenant's namespace.
fn namespace_field(tenant: &Object<TenantSpec>) -> &'static str {
    match tenant.spec.kind {
        TenantType::Personal => "spec.function",
        TenantType::Enterprise if tenant.spec.namespace.is_empty() => "metadata.name",
        TenantType::Enterprise => "spec.namespace",
    }
}

/// The namespace is not the platform's, fits in a Service name, and is personal only for a
/// personal tenant. `field` is where the tenant sets it.
fn namespace_name(
    tenant: &Object<TenantSpec>,
    namespace: &str,
    field: &str,
    cluster: Option<&Object<ClusterSpec>>,
    out: &mut Vec<Diagnostic>,
) {
    let mut reserved: Vec<&str> = RESERVED_NAMESPACES.to_vec();
    if let Some(cluster) = cluster {
        reserved.push(&cluster.spec.image_registry.tenant_credentials_namespace);
        reserved.push(&cluster.spec.tfrs_operator.namespace);
        reserved.push(&cluster.spec.sealing.controller_namespace);
    }
    if reserved.contains(&namespace) {
        out.push(tenant.error_at(field, format!("namespace `{namespace}` is reserved for the platform")));
    }
    if namespace.len() > MAX_NAMESPACE || !namespace.starts_with(|c: char| c.is_ascii_lowercase()) {
        out.push(tenant.error_at(
            field,
            format!("namespace `{namespace}` must start with a letter and have at most {MAX_NAMESPACE} characters, because `{namespace}-pg-rw` is a Service name"),
        ));
    }
    if tenant.spec.kind == TenantType::Enterprise && namespace.starts_with("personal-") {
        out.push(tenant.error_at(field, format!("namespace `{namespace}` is reserved for personal tenants")));
    }
}

/// Personal tenants `first` and `tenant` share `namespace`, whose middleware is rendered once:
/// an error at the first setting of each component where they differ.
fn shared_middleware(
    first: &Object<TenantSpec>,
    tenant: &Object<TenantSpec>,
    namespace: &str,
    files: &dyn FileTable,
    out: &mut Vec<Diagnostic>,
) {
    for ((component, mine), (_, theirs)) in shared_settings(&tenant.spec).iter().zip(shared_settings(&first.spec).iter()) {
        if let Some(suffix) = first_difference(theirs, mine, "") {
            let path = format!("spec.{component}{suffix}");
            let at = files.place(first.locate(&path));
            out.push(
                tenant
                    .error_at(
                        &path,
                        format!(
                            "personal tenants `{}` and `{}` share namespace `{namespace}`{} but ask for different `{component}` settings (`{}` sets it at {at})",
                            first.name(),
                            tenant.name(),
                            if tenant.cluster.is_empty() { String::new() } else { format!(" in cluster `{}`", tenant.cluster) },
                            first.name(),
                        ),
                    )
                    .with_help("the middleware of a personal namespace is rendered once: give both tenants the same settings"),
            );
        }
    }
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
