//! The checks of one `TFRTenant`: its cluster, its type's fields, the shared cache, the
//! components that need an image.

use super::{CONFZ_DIR, dangling, secret_warnings, tenant_secrets};
use crate::spec::diagnostic::Diagnostic;
use crate::spec::diagnostic::Rule;
use crate::spec::duration;
use crate::spec::load::Object;
use crate::spec::model::{TenantSpec, TenantType};
use crate::spec::schema::is_dns_label;
use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

/// Where the tenant names its cluster: `spec.cluster`, or its entry of `spec.clusters`.
fn placement_path(tenant: &Object<TenantSpec>) -> String {
    let listed = tenant.tree.get("spec").and_then(|spec| spec.get("clusters")).and_then(|list| match &list.value {
        crate::spec::yaml::Value::Seq(items) => items.iter().position(|item| item.as_str() == Some(tenant.spec.cluster.as_str())),
        _ => None,
    });
    listed.map_or_else(|| "spec.cluster".to_owned(), |index| format!("spec.clusters[{index}]"))
}

pub(super) fn check_tenant(tenant: &Object<TenantSpec>, clusters: &BTreeSet<String>, out: &mut Vec<Diagnostic>) {
    let spec = &tenant.spec;
    shared_cache(tenant, out);
    // NB: no cluster at all is a placement problem, reported where the tenant is placed.
    if !spec.cluster.is_empty() && !clusters.contains(&spec.cluster) {
        let path = placement_path(tenant);
        out.push(dangling(tenant.locate(&path), &path, "TFRCluster", &spec.cluster, clusters.iter().map(String::as_str)));
    }
    tenant_type(tenant, out);
    for (field, value) in [("spec.function", &spec.function), ("spec.namespace", &spec.namespace)] {
        if !value.is_empty() && !is_dns_label(value) {
            out.push(tenant.error_at(field, format!("expected a DNS-1123 label (lowercase letters, digits and `-`), found {value:?}")));
        }
    }
    if duration::parse_prometheus(&spec.prometheus.retention) == Ok(Duration::ZERO) {
        out.push(
            tenant
                .warning_at("spec.prometheus.retention", "Prometheus reads a zero retention as not set and keeps its default, 15d")
                .with_help("write the retention you want, e.g. `15d`"),
        );
    }
    if spec.front.enabled && spec.front.image.is_empty() {
        out.push(tenant.error_in_parent("spec.front.image", "required when `front.enabled` is true"));
    }
    if spec.utils.enabled && spec.utils.image.is_empty() {
        out.push(tenant.error_in_parent("spec.utils.image", "required when `utils.enabled` is true"));
    }
    secret_warnings(tenant, &tenant_secrets(spec), out);
}

/// The cache must not hide `/` or the workers' configuration.
fn shared_cache(tenant: &Object<TenantSpec>, out: &mut Vec<Diagnostic>) {
    let cache = &tenant.spec.shared_cache;
    let dir = cache.cache_dir.trim_end_matches('/');
    if cache.enabled && (dir.is_empty() || Path::new(dir).starts_with(CONFZ_DIR) || Path::new(CONFZ_DIR).starts_with(dir)) {
        out.push(
            tenant
                .error_at(
                    "spec.sharedCache.cacheDir",
                    format!("the cache would be mounted over `/` or over the workers' configuration at `{CONFZ_DIR}`"),
                )
                .with_help("use a directory of its own, e.g. `/data/shared-cache`"),
        );
    }
}

/// A personal tenant has a function and no namespace; an enterprise tenant no function.
fn tenant_type(tenant: &Object<TenantSpec>, out: &mut Vec<Diagnostic>) {
    let spec = &tenant.spec;
    match spec.kind {
        TenantType::Personal => {
            if spec.function.is_empty() {
                // NB: a missing function points at `type: personal`, which asks for it.
                out.push(
                    Diagnostic::error(Rule::Consistency, tenant.locate("spec.type"), "spec.function", "required for personal tenants")
                        .with_help("personal tenants share the namespace `personal-<function>`, e.g. `function: support`"),
                );
            }
            if !spec.namespace.is_empty() {
                out.push(
                    tenant
                        .error_at("spec.namespace", "only enterprise tenants choose a namespace")
                        .with_help("a personal tenant lives in `personal-<function>`"),
                );
            }
        }
        TenantType::Enterprise => {
            if !spec.function.is_empty() {
                out.push(
                    tenant
                        .error_at("spec.function", "only personal tenants have a function")
                        .with_help("remove it, or set `type: personal`"),
                );
            }
        }
    }
}
