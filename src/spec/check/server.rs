//! The checks of one `TFRServer`: its name, tenant and host, its jobs, its environment and
//! (in `confz.rs`) its ConfzData.

use super::{MAX_SERVER, dangling, secret_warnings};
use crate::spec::diagnostic::{Diagnostic, FileTable};
use crate::spec::load::Object;
use crate::spec::model::{ClusterSpec, SecretSource, ServerSpec, TenantSpec};
use std::collections::{BTreeMap, BTreeSet};

/// What a server's checks look up: the valid tenants and clusters by name, the names of every
/// tenant document (valid or not), and the files for locating TOML errors.
pub(super) struct Servers<'a> {
    pub(super) tenants: &'a BTreeMap<&'a str, &'a Object<TenantSpec>>,
    pub(super) known_tenants: &'a BTreeSet<String>,
    pub(super) clusters: &'a BTreeMap<&'a str, &'a Object<ClusterSpec>>,
    pub(super) files: &'a dyn FileTable,
}

impl Servers<'_> {
    /// Checks `server` on its own: the problems found before its host is checked, its host
    /// (given, or `<server>.<tenant>.<domain>`; `None` without a known tenant) for
    /// [`claim_host`], and the problems found after.
    pub(super) fn check_alone(&self, server: &Object<ServerSpec>) -> (Vec<Diagnostic>, Option<String>, Vec<Diagnostic>) {
        let (mut before, mut after) = (Vec::new(), Vec::new());
        let spec = &server.spec;
        let name = server.name();
        if name.len() > MAX_SERVER || !name.starts_with(|c: char| c.is_ascii_lowercase()) {
            before.push(server.error_at(
                "metadata.name",
                format!("a server name must start with a letter and have at most {MAX_SERVER} characters, because `{name}-robot-worker` names a Deployment and its Service"),
            ));
        }
        let Some(tenant) = self.tenants.get(spec.tenant.as_str()) else {
            if !self.known_tenants.contains(&spec.tenant) {
                let path = "spec.tenant";
                before.push(dangling(server.locate(path), path, "TFRTenant", &spec.tenant, self.known_tenants.iter().map(String::as_str)));
            }
            return (before, None, after);
        };
        let domain = self.clusters.get(tenant.spec.cluster.as_str()).map(|c| c.spec.ingress.domain.as_str()).unwrap_or_default();
        let host = if server.spec.host.is_empty() { format!("{name}.{}.{domain}", tenant.name()) } else { server.spec.host.clone() };
        jobs(server, tenant, self.files, &mut after);
        environment(server, &tenant.spec, &mut after);
        super::confz::check_confz(server, self.files, &mut after);
        let sources: Vec<(String, &SecretSource)> = spec.secret_data.iter().map(|(k, v)| (format!("spec.secretData.{k}"), v)).collect();
        secret_warnings(server, &sources, &mut after);
        (before, Some(host), after)
    }
}

/// `host`, the host of `server`, is no other server's: `hosts` holds the server of each host
/// claimed before, and takes this one's. A clash is reported where a host was written: at the
/// server that sets `spec.host` (in its spec or an environment), not at one whose host is its
/// default (`<server>.<tenant>.<domain>`).
pub(super) fn claim_host<'a>(
    server: &'a Object<ServerSpec>,
    host: String,
    hosts: &mut BTreeMap<String, &'a Object<ServerSpec>>,
    out: &mut Vec<Diagnostic>,
) {
    let Some(first) = hosts.get(&host).copied() else {
        hosts.insert(host, server);
        return;
    };
    if first.name() == server.name() {
        // NB: a second server of the same name, reported as a duplicate: its host follows.
        return;
    }
    let within = if server.cluster.is_empty() { String::new() } else { format!(" in cluster `{}`", server.cluster) };
    let message = if server.spec.host.is_empty() && !first.spec.host.is_empty() {
        (first, format!("host `{host}` is the default host of TFRServer `{}`{within}", server.name()))
    } else {
        (server, format!("host `{host}` is already used by TFRServer `{}`{within}", first.name()))
    };
    out.push(message.0.error_at("spec.host", message.1));
}

/// A job asked for whose component the tenant has off is not rendered: a warning.
fn jobs(server: &Object<ServerSpec>, tenant: &Object<TenantSpec>, files: &dyn FileTable, out: &mut Vec<Diagnostic>) {
    let (jobs, components) = (&server.spec.jobs, &tenant.spec);
    let jobs = [
        ("spec.jobs.dbInit", jobs.db_init, components.postgresql.enabled, "postgresql"),
        ("spec.jobs.minioInit", jobs.minio_init, components.minio.enabled, "minio"),
        ("spec.jobs.grafanaServiceAccount", jobs.grafana_service_account, components.grafana.enabled, "grafana"),
    ];
    for (path, wanted, available, component) in jobs {
        if wanted && !available {
            // NB: where the tenant turns it off, when it says so (its spec, an overlay, one
            // cluster's environment); a component off by default is set nowhere.
            let field = format!("spec.{component}.enabled");
            let set = tenant.tree.get("spec").and_then(|s| s.get(component)).and_then(|c| c.get("enabled")).is_some();
            let at = set.then(|| format!(" at {}", files.place(tenant.locate(&field))));
            let message =
                format!("tenant `{}` has `{component}` disabled{}, so this job is not rendered", tenant.name(), at.unwrap_or_default());
            out.push(server.warning_at(path, message));
        }
    }
}

/// `configData` against the shared cache and against `secretData`.
fn environment(server: &Object<ServerSpec>, tenant: &TenantSpec, out: &mut Vec<Diagnostic>) {
    const CACHE_KEY: &str = "TFS_ROBOT__DOC_EXTRACTED_IMAGES_DIR";
    let spec = &server.spec;
    if tenant.shared_cache.enabled && spec.config_data.contains_key(CACHE_KEY) {
        out.push(server.warning_at(
            &format!("spec.configData.{CACHE_KEY}"),
            format!(
                "overridden by the tenant's `sharedCache.cacheDir` (`{}`), which has the highest priority",
                tenant.shared_cache.cache_dir
            ),
        ));
    }
    for key in spec.secret_data.keys() {
        if spec.config_data.contains_key(key) {
            out.push(server.error_at(&format!("spec.configData.{key}"), format!("`{key}` is also in `secretData`: set it in one place")));
        }
    }
}
