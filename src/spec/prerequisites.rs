//! Checks that a spec contradicts what the cluster must provide: a ReadWriteMany class for the
//! shared cache, names Let's Encrypt can reach, and what TimescaleDB's image volumes need (a
//! CloudNativePG operator with extensions, a Kubernetes that mounts image volumes). See
//! docs/prerequisites.md.

use super::diagnostic::Diagnostic;
use super::load::{Object, Spec};
use super::model::{ClusterSpec, IngressType, Issuer, TenantSpec};
use std::collections::{BTreeMap, BTreeSet};

/// Runs every prerequisite check.
pub(super) fn check(
    spec: &Spec,
    clusters: &BTreeMap<&str, &Object<ClusterSpec>>,
    tenants: &BTreeMap<&str, &Object<TenantSpec>>,
    out: &mut Vec<Diagnostic>,
) {
    // Warnings where a spec contradicts what the rendered tree needs from the cluster: a
    // ReadWriteMany class for the shared cache, and hosts Let's Encrypt can reach and issue for.
    shared_cache_class(spec, clusters, out);
    let names = certificate_names(spec, clusters, tenants, out);
    letsencrypt(spec, names, out);
    timescaledb(spec, clusters, out);
}

/// StorageClasses that, as their platforms install them, provision ReadWriteOnce volumes only,
/// with what they are.
const READ_WRITE_ONCE_CLASSES: &[(&str, &str)] = &[
    ("standard", "persistent disk on GKE, local-path on kind"),
    ("gp2", "Amazon EBS"),
    ("gp3", "Amazon EBS"),
    ("ebs-sc", "Amazon EBS"),
    ("managed", "Azure Disk"),
    ("managed-csi", "Azure Disk"),
    ("managed-premium", "Azure Disk"),
    ("managed-csi-premium", "Azure Disk"),
    ("cbs", "Tencent Cloud block storage"),
    ("do-block-storage", "DigitalOcean block storage"),
    ("local-path", "node-local volumes of local-path-provisioner, k3s's default"),
    ("openebs-hostpath", "node-local volumes of OpenEBS"),
    ("rook-ceph-block", "Ceph RBD block volumes"),
];

/// Where the shared cache's StorageClass can come from.
const READ_WRITE_MANY_HELP: &str = "use a ReadWriteMany class (NFS, CephFS, Amazon EFS, Azure Files, Filestore, Tencent CFS): with a ReadWriteOnce one the claim is never provisioned and the robots' pods stay Pending (docs/prerequisites.md)";

/// Suffixes under which Let's Encrypt issues no certificate, with why.
const NON_PUBLIC_SUFFIXES: &[(&str, &str)] = &[
    ("localhost", "is not a public domain"),
    ("local", "is multicast DNS, not a public domain"),
    ("test", "is reserved for testing"),
    ("example", "is reserved for examples"),
    ("invalid", "is reserved as invalid"),
    ("internal", "is reserved for private networks"),
    ("home.arpa", "is reserved for home networks"),
    ("lan", "is not a public domain"),
    ("localdomain", "is not a public domain"),
    ("intranet", "is not a public domain"),
    ("corp", "is not a public domain"),
    ("home", "is not a public domain"),
    ("example.com", "is reserved for examples"),
    ("example.net", "is reserved for examples"),
    ("example.org", "is reserved for examples"),
];

/// The most names Let's Encrypt puts in one certificate.
const LETSENCRYPT_MAX_NAMES: usize = 100;

/// Why Let's Encrypt cannot issue for `host`: `` `.local` is multicast DNS, not a public domain``.
fn non_public(host: &str) -> Option<String> {
    NON_PUBLIC_SUFFIXES
        .iter()
        .find(|(suffix, _)| host == *suffix || host.strip_suffix(suffix).is_some_and(|rest| rest.ends_with('.')))
        .map(|(suffix, why)| format!("`.{suffix}` {why}"))
}

/// The CloudNativePG chart whose operator (1.27) first has image-volume extensions
/// (`Cluster.spec.postgresql.extensions`), which TimescaleDB needs.
const CNPG_CHART_WITH_EXTENSIONS: (u64, u64, u64) = (0, 26, 0);

/// `MAJOR.MINOR.PATCH` (a leading `v` and a pre-release are ignored).
fn semver(version: &str) -> Option<(u64, u64, u64)> {
    let core = version.trim_start_matches('v').split(['-', '+']).next()?;
    let mut parts = core.split('.').map(|p| p.parse::<u64>().ok());
    Some((parts.next()??, parts.next()??, parts.next().flatten().unwrap_or(0)))
}

/// TimescaleDB mounts its extension as an image volume: it needs a CloudNativePG operator that
/// has `postgresql.extensions` (1.27+) and a Kubernetes that mounts image volumes (1.35, or
/// 1.33/1.34 with the `ImageVolume` feature gate). Without them the field is pruned or the pod
/// never starts, and `shared_preload_libraries = timescaledb` crash-loops.
fn timescaledb(spec: &Spec, clusters: &BTreeMap<&str, &Object<ClusterSpec>>, out: &mut Vec<Diagnostic>) {
    for tenant in spec.tenants.iter().filter(|t| t.spec.timescaledb.enabled) {
        let Some(cluster) = clusters.get(tenant.spec.cluster.as_str()) else { continue };
        let field = "spec.timescaledb.enabled";
        let cnpg = &cluster.spec.operators.cnpg;
        if cnpg.enabled && semver(&cnpg.version).is_some_and(|v| v < CNPG_CHART_WITH_EXTENSIONS) {
            let path = "spec.operators.cnpg.version";
            out.push(
                cluster.error_at(
                    path,
                    format!(
                        "chart {} runs a CloudNativePG operator without image-volume extensions (`Cluster.spec.postgresql.extensions`, operator 1.27, chart 0.26), which TimescaleDB of tenant `{}` needs",
                        cnpg.version,
                        tenant.name()
                    ),
                )
                .with_help("leave `version` out for the pinned chart (`tfrs version --components`), or pin 0.26.0 or later"),
            );
        }
        let kubernetes = &cluster.spec.kubernetes;
        let gate = kubernetes.feature_gates.iter().any(|g| g == "ImageVolume");
        match kubernetes.minor() {
            None => out.push(
                tenant.warning_at(
                    field,
                    format!(
                        "TimescaleDB mounts its extension as an image volume: it needs Kubernetes 1.35, or 1.33/1.34 with the `ImageVolume` feature gate, and cluster `{}` does not say what it runs",
                        cluster.name()
                    ),
                )
                .with_help("set `spec.kubernetes.version` (and `featureGates: [ImageVolume]` on 1.33/1.34) of the TFRCluster to have this checked"),
            ),
            Some(minor) if minor < 33 || (minor < 35 && !gate) => out.push(
                tenant.error_at(
                    field,
                    format!(
                        "TimescaleDB mounts its extension as an image volume, which Kubernetes {} cannot{}: it needs 1.35, or 1.33/1.34 with the `ImageVolume` feature gate",
                        kubernetes.version,
                        if minor < 33 { "" } else { " without the `ImageVolume` feature gate" }
                    ),
                )
                .with_help(format!("cluster `{}`: `spec.kubernetes`", cluster.name())),
            ),
            Some(_) => {}
        }
    }
}

/// The shared cache is mounted by the workers of every server: its class must serve
/// ReadWriteMany.
fn shared_cache_class(spec: &Spec, clusters: &BTreeMap<&str, &Object<ClusterSpec>>, out: &mut Vec<Diagnostic>) {
    for tenant in &spec.tenants {
        let cache = &tenant.spec.shared_cache;
        if !cache.enabled {
            continue;
        }
        let field = "spec.sharedCache.storageClass";
        let ingress = clusters.get(tenant.spec.cluster.as_str()).map(|c| c.spec.ingress.kind);
        if cache.storage_class.is_empty() {
            // NB: Docker Desktop's default class, `hostpath`, serves ReadWriteMany on its one node.
            if ingress.is_some_and(|kind| kind != IngressType::DockerDesktop) {
                out.push(
                    tenant.warning_at(
                        field,
                        "not set: the shared cache, mounted by the workers of every server, gets the cluster's default StorageClass, which is usually ReadWriteOnce only (cloud block storage, local-path)",
                    )
                    .with_help(READ_WRITE_MANY_HELP),
                );
            }
            continue;
        }
        let class = cache.storage_class.as_str();
        let known = READ_WRITE_ONCE_CLASSES.iter().find(|(name, _)| *name == class).map(|(_, what)| *what);
        let what = known.or_else(|| class.ends_with("-rwo").then_some("as its name says"));
        if let Some(what) = what {
            out.push(
                tenant.warning_at(
                    field,
                    format!(
                        "StorageClass `{class}` provisions ReadWriteOnce volumes only ({what}), but the shared cache is mounted ReadWriteMany by the workers of every server"
                    ),
                )
                .with_help(READ_WRITE_MANY_HELP),
            );
        }
    }
}

/// The names the ingress certificate of each cluster holds besides its base domain: every
/// server's host. A Let's Encrypt cluster whose servers include one with a host it cannot
/// issue for gets a warning there.
fn certificate_names<'a>(
    spec: &Spec,
    clusters: &BTreeMap<&str, &'a Object<ClusterSpec>>,
    tenants: &BTreeMap<&str, &Object<TenantSpec>>,
    out: &mut Vec<Diagnostic>,
) -> BTreeMap<&'a str, BTreeSet<String>> {
    let mut names: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    for server in &spec.servers {
        let Some(tenant) = tenants.get(server.spec.tenant.as_str()) else { continue };
        let Some(cluster) = clusters.get(tenant.spec.cluster.as_str()) else { continue };
        let ingress = &cluster.spec.ingress;
        let host = if server.spec.host.is_empty() {
            format!("{}.{}.{}", server.name(), tenant.name(), ingress.domain)
        } else {
            server.spec.host.clone()
        };
        if ingress.tls.issuer == Issuer::Letsencrypt
            && ingress.kind != IngressType::DockerDesktop
            && !server.spec.host.is_empty()
            && non_public(&ingress.domain).is_none()
            && let Some(why) = non_public(&server.spec.host)
        {
            out.push(
                server
                    .warning_at(
                        "spec.host",
                        format!(
                            "Let's Encrypt issues no certificate for `{host}` ({why}), and cluster `{}` has one ingress certificate for every host: none of them would get it",
                            cluster.name()
                        ),
                    )
                    .with_help("use a host under a public domain, or `tls.issuer: selfsigned` on the cluster"),
            );
        }
        names.entry(cluster.name()).or_default().insert(host);
    }
    names
}

/// A Let's Encrypt cluster must be reachable from the internet, have a public base domain and
/// at most [`LETSENCRYPT_MAX_NAMES`] names (`names`, by cluster) in its ingress certificate.
fn letsencrypt(spec: &Spec, mut names: BTreeMap<&str, BTreeSet<String>>, out: &mut Vec<Diagnostic>) {
    for cluster in &spec.clusters {
        let ingress = &cluster.spec.ingress;
        if ingress.tls.issuer != Issuer::Letsencrypt {
            continue;
        }
        let field = "spec.ingress.tls.issuer";
        if ingress.kind == IngressType::DockerDesktop {
            out.push(
                cluster.warning_at(
                    field,
                    "Let's Encrypt cannot reach a Docker Desktop cluster: its HTTP-01 challenge fetches every host from the internet on port 80",
                )
                .with_help("use `issuer: selfsigned`, as the `docker-desktop` overlay does"),
            );
        } else if let Some(why) = non_public(&ingress.domain) {
            out.push(
                cluster
                    .warning_at(
                        field,
                        format!(
                            "Let's Encrypt issues no certificate for `{}` ({why}), so the ingress certificate would never be issued",
                            ingress.domain
                        ),
                    )
                    .with_help(
                        "use `issuer: selfsigned` for a private domain, or a public domain that reaches the ingress gateway on port 80",
                    ),
            );
        }
        let mut hosts = names.remove(cluster.name()).unwrap_or_default();
        hosts.insert(ingress.domain.clone());
        if hosts.len() > LETSENCRYPT_MAX_NAMES {
            out.push(
                cluster.warning_at(
                    field,
                    format!(
                        "the ingress certificate names {} hosts (the base domain and every server's), but Let's Encrypt puts at most {LETSENCRYPT_MAX_NAMES} in one certificate: it would never be issued",
                        hosts.len()
                    ),
                )
                .with_help("split the servers over more clusters, or use `issuer: selfsigned`"),
            );
        }
    }
}
