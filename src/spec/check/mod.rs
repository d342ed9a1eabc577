//! Checks across fields and objects that a schema cannot express: references, namespaces,
//! personal tenants, shared middleware, secret sources, ConfzData TOML and its credential keys.
//!
//! One file per kind (`cluster.rs`, with its billing in `billing.rs`, `tenant.rs`, `server.rs`,
//! with its ConfzData in `confz.rs`) and one for the checks across tenants (`namespaces.rs`).

mod billing;
mod cluster;
mod confz;
mod namespaces;
mod server;
mod tenant;

pub use billing::clock_checks;

use super::diagnostic::{Diagnostic, FileTable, did_you_mean};
use super::load::{Object, Spec};
use super::model::{ClusterSpec, SecretSource, TenantSpec, TenantType};
use super::schema::Kind;
use super::yaml::Origin;
use crate::spec::diagnostic::Rule;
use rayon::prelude::*;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Longest tenant namespace: `<ns>-pg-rw` and `<ns>-ts-rw` must stay Service names (63).
const MAX_NAMESPACE: usize = 57;
/// Longest server name: `<server>-robot-worker` must stay a label value (63).
const MAX_SERVER: usize = 50;

/// Where both workers find `config.toml` (the render engine mounts it there).
pub const CONFZ_DIR: &str = "/etc/tfrobot";

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
    // NB: names are unique within a cluster, so each cluster's objects are checked together.
    let parts = spec.parts();
    // NB: one defined cluster (and perhaps a misspelt one) is not a fleet: no cluster is named.
    if parts.len() <= 1 || spec.clusters.len() <= 1 {
        for part in &parts {
            check_part(part, known_clusters, known_tenants, files, out);
        }
        return;
    }
    // In a fleet, one declaration placed in several clusters is checked once per placement:
    // a problem is said once, naming the clusters it holds in.
    let mut found: Vec<(Diagnostic, Vec<&str>)> = Vec::new();
    let mut seen: HashMap<Diagnostic, usize> = HashMap::new();
    for part in &parts {
        let mut one = Vec::new();
        check_part(part, known_clusters, known_tenants, files, &mut one);
        let cluster = cluster_of(part);
        for diagnostic in one {
            match seen.get(&diagnostic) {
                // NB: one cluster can give the same diagnostic twice (two objects under one
                // overlay line): it is named once.
                Some(&index) if found[index].1.last() == Some(&cluster) => {}
                Some(&index) => found[index].1.push(cluster),
                None => {
                    seen.insert(diagnostic.clone(), found.len());
                    found.push((diagnostic, vec![cluster]));
                }
            }
        }
    }
    out.extend(found.into_iter().map(|(diagnostic, clusters)| in_clusters(diagnostic, &clusters)));
}

/// The cluster of the objects of `part` (one cluster's part of a fleet).
fn cluster_of(part: &Spec) -> &str {
    let clusters = part.clusters.iter().map(|o| o.cluster.as_str());
    let placed = part.tenants.iter().map(|o| o.cluster.as_str()).chain(part.servers.iter().map(|o| o.cluster.as_str()));
    clusters.chain(placed).next().unwrap_or_default()
}

/// `diagnostic`, its message ending with the clusters it holds in, unless it already names a
/// cluster.
fn in_clusters(mut diagnostic: Diagnostic, clusters: &[&str]) -> Diagnostic {
    // NB: `TFRCluster `x`` and `in cluster `x`` name one; a tenant named like a cluster does not.
    if clusters.iter().all(|c| c.is_empty()) || diagnostic.message.to_ascii_lowercase().contains("cluster `") {
        return diagnostic;
    }
    diagnostic.message = format!("{} (in {})", diagnostic.message, cluster_list(clusters));
    diagnostic
}

/// ``cluster `dev` `` or ``clusters `dev`, `prod` and `staging` ``.
fn cluster_list(clusters: &[&str]) -> String {
    let quoted: Vec<String> = clusters.iter().map(|c| format!("`{c}`")).collect();
    match quoted.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("clusters {} and {last}", rest.join(", ")),
        _ => format!("cluster {}", quoted.join("")),
    }
}

/// The checks of the objects of one cluster, in which names are unique.
fn check_part(
    spec: &Spec,
    known_clusters: &BTreeSet<String>,
    known_tenants: &BTreeSet<String>,
    files: &dyn FileTable,
    out: &mut Vec<Diagnostic>,
) {
    let clusters: BTreeMap<&str, &Object<ClusterSpec>> = spec.clusters.iter().map(|c| (c.name(), c)).collect();
    let tenants: BTreeMap<&str, &Object<TenantSpec>> = spec.tenants.iter().map(|t| (t.name(), t)).collect();
    for cluster in &spec.clusters {
        cluster::check_cluster(cluster, out);
    }
    for tenant in &spec.tenants {
        tenant::check_tenant(tenant, known_clusters, out);
    }
    namespaces::check_namespaces(spec, &clusters, files, out);
    super::prerequisites::check(spec, &clusters, &tenants, out);
    let servers = server::Servers { tenants: &tenants, known_tenants, clusters: &clusters, files };
    // NB: each server is checked on its own in parallel (a platform has thousands); then, in
    // order, whether its host is another's.
    let checked: Vec<_> = spec.servers.par_iter().map(|s| servers.check_alone(s)).collect();
    let mut hosts = BTreeMap::new();
    for (server, (before, host, after)) in spec.servers.iter().zip(checked) {
        out.extend(before);
        if let Some(host) = host {
            server::claim_host(server, host, &mut hosts, out);
        }
        out.extend(after);
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

// The diagnostics of a check name a field path once: it is both where the diagnostic points
// and what it is about. (`error_at` and `warning_at` serve the prerequisite checks too.)
impl<S> Object<S> {
    /// An error about the field at `path`, at the field (or its closest existing ancestor).
    pub(super) fn error_at(&self, path: &str, message: impl Into<String>) -> Diagnostic {
        Diagnostic::error(Rule::Consistency, self.locate(path), path, message)
    }

    /// A warning about the field at `path`, at the field (or its closest existing ancestor).
    pub(super) fn warning_at(&self, path: &str, message: impl Into<String>) -> Diagnostic {
        Diagnostic::warning(Rule::Consistency, self.locate(path), path, message)
    }

    /// An error about the field at `path`, which is missing or empty, at the map that holds
    /// it: the place to add it.
    fn error_in_parent(&self, path: &str, message: impl Into<String>) -> Diagnostic {
        Diagnostic::error(Rule::Consistency, self.locate(parent(path)), path, message)
    }

    /// A warning about the field at `path`, which is missing or empty, at the map that holds it.
    fn warning_in_parent(&self, path: &str, message: impl Into<String>) -> Diagnostic {
        Diagnostic::warning(Rule::Consistency, self.locate(parent(path)), path, message)
    }
}

/// `spec.ingress` of `spec.ingress.domain`.
fn parent(path: &str) -> &str {
    path.rsplit_once('.').map_or(path, |(parent, _)| parent)
}

fn metadata_namespace<S>(object: &Object<S>, out: &mut Vec<Diagnostic>) {
    if object.metadata.namespace.is_some() {
        out.push(object.warning_at(
            "metadata.namespace",
            "ignored: the namespace is derived from the tenant (`spec.namespace`, or `personal-<function>`)",
        ));
    }
}

/// Names are unique within a cluster: the same name may be placed in several clusters. A
/// declaration that repeats another in several of its clusters is said once, naming them.
fn duplicates<S>(objects: &[Object<S>], kind: &str, files: &dyn FileTable, out: &mut Vec<Diagnostic>) {
    let mut seen: BTreeMap<(&str, &str), &Object<S>> = BTreeMap::new();
    // (where the repeat is, where the first is) -> the repeat and the clusters it repeats in.
    type Repeats<'a, S> = BTreeMap<(Origin, Origin), (&'a Object<S>, Vec<&'a str>)>;
    let mut repeats: Repeats<'_, S> = BTreeMap::new();
    for object in objects {
        if let Some(first) = seen.get(&(object.cluster.as_str(), object.name())) {
            let key = (object.locate("metadata.name"), first.locate("metadata.name"));
            repeats.entry(key).or_insert_with(|| (object, Vec::new())).1.push(object.cluster.as_str());
        } else {
            seen.insert((object.cluster.as_str(), object.name()), object);
        }
    }
    for ((_, at), (object, clusters)) in repeats {
        let within = match clusters.iter().all(|c| c.is_empty()) || kind == "TFRCluster" {
            true => String::new(),
            false => format!(" in {}", cluster_list(&clusters)),
        };
        let message = format!("duplicate {kind} `{}`{within}, first defined at {}", object.name(), files.place(at));
        out.push(object.error_at("metadata.name", message));
    }
}

fn secret_warnings<S>(object: &Object<S>, sources: &[(String, &SecretSource)], out: &mut Vec<Diagnostic>) {
    for (path, source) in sources {
        if source.value.is_some() && !is_identity(path) {
            out.push(
                object
                    .warning_at(&format!("{path}.value"), "plaintext secret in Git")
                    .with_help("use `{}` (generated), `fromEnv` or `fromFile` instead of `value`"),
            );
        }
    }
}

/// User names are credentials by form but not secret; a literal one is fine.
fn is_identity(path: &str) -> bool {
    path.ends_with(".username") || path.ends_with(".rootUser")
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
    let mut diagnostic = Diagnostic::error(Rule::Reference, origin, path, format!("unknown {kind} `{name}` ({defined})")).as_reference();
    if let Some(close) = did_you_mean(name, known) {
        diagnostic = diagnostic.with_help(format!("did you mean `{close}`?"));
    }
    diagnostic
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::yaml::Origin;

    fn said(message: &str, clusters: &[&str]) -> String {
        in_clusters(Diagnostic::error(Rule::Consistency, Origin::default(), "spec", message), clusters).message
    }

    #[test]
    fn a_fleet_diagnostic_names_its_clusters_unless_it_names_one() {
        assert_eq!(said("x is off", &["dev"]), "x is off (in cluster `dev`)");
        assert_eq!(said("x is off", &["dev", "prod", "staging"]), "x is off (in clusters `dev`, `prod` and `staging`)");
        // A tenant named like a cluster is not a cluster.
        assert_eq!(said("tenant `prod` has `minio` disabled", &["prod"]), "tenant `prod` has `minio` disabled (in cluster `prod`)");
        assert_eq!(said("unknown TFRCluster `prd`", &["prd"]), "unknown TFRCluster `prd`");
        assert_eq!(
            said("host `h` is already used by TFRServer `a` in cluster `prod`", &["prod"]),
            "host `h` is already used by TFRServer `a` in cluster `prod`"
        );
    }
}
