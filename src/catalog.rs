//! The version catalog: every upstream chart, image and API release the render deploys or
//! targets, pinned in one table. Templates read it as `catalog["<name>"]`; the spec defaults of
//! versions and images come from it; `tfrs version --components` prints it; docs/components.md
//! shows it with the upstream files each pin was checked against.
//!
//! A spec field that names a version (`certManager.version`, `operators.cnpg.version`, ...)
//! overrides its row; left out, the row holds. Bumping a row is the whole of an
//! upgrade of that component: the render picks it up everywhere.

use serde::Serialize;

/// What a catalog row pins.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// A Helm chart the render installs (a Flux HelmRelease or an Argo CD Application).
    Chart,
    /// A container image the render writes into a workload or a custom resource.
    Image,
    /// An upstream kustomize base from a Git repository at a release tag (for projects that
    /// release manifests, not a chart), with the release's operator image set by name.
    Manifests,
    /// An API the rendered objects are written against, served by software the cluster must
    /// already run (the GitOps engine, the sealing controller); nothing of it is rendered.
    Api,
}

/// One pinned upstream release.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Pin {
    /// The catalog key, as templates and `tfrs version --components` name it.
    pub name: &'static str,
    /// What is pinned.
    pub kind: Kind,
    /// The chart version, the image tag, or the release of an API.
    pub version: &'static str,
    /// The application version a chart ships, when it differs from `version` (else empty).
    pub app_version: &'static str,
    /// Where it comes from: the chart repository (`oci://…` is the chart itself, `https://…` a
    /// Helm repository holding `chart`), the image repository, or the upstream project.
    pub source: &'static str,
    /// The chart's name in its repository (charts only).
    pub chart: &'static str,
    /// The spec field that overrides `version`, if any.
    pub spec_field: &'static str,
    /// Manifests only: the operator image the release runs (tagged with `version` without
    /// its `v`, as upstream's release build sets it).
    pub image_name: &'static str,
}

impl Pin {
    /// The full image reference (`source:version`) of an image row.
    #[must_use]
    pub fn image(&self) -> String {
        format!("{}:{}", self.source, self.version)
    }
}

const fn chart(name: &'static str, version: &'static str, app_version: &'static str, source: &'static str, chart: &'static str) -> Pin {
    Pin { name, kind: Kind::Chart, version, app_version, source, chart, spec_field: "", image_name: "" }
}

const fn image(name: &'static str, source: &'static str, version: &'static str) -> Pin {
    Pin { name, kind: Kind::Image, version, app_version: "", source, chart: "", spec_field: "", image_name: "" }
}

const fn api(name: &'static str, version: &'static str, source: &'static str) -> Pin {
    Pin { name, kind: Kind::Api, version, app_version: "", source, chart: "", spec_field: "", image_name: "" }
}

const fn manifests(name: &'static str, version: &'static str, source: &'static str, image_name: &'static str) -> Pin {
    Pin { name, kind: Kind::Manifests, version, app_version: "", source, chart: "", spec_field: "", image_name }
}

const fn overridden_by(pin: Pin, spec_field: &'static str) -> Pin {
    Pin { spec_field, ..pin }
}

/// The catalog, in the order `tfrs version --components` prints it.
pub const CATALOG: &[Pin] = &[
    // Cluster components.
    overridden_by(
        chart("cert-manager", "v1.21.1", "", "oci://quay.io/jetstack/charts/cert-manager", "cert-manager"),
        "TFRCluster spec.certManager.version",
    ),
    overridden_by(chart("istio", "1.30.3", "", "https://istio-release.storage.googleapis.com/charts", ""), "TFRCluster spec.istio.version"),
    image("istio-proxy", "docker.io/istio", "1.30.3"),
    overridden_by(
        chart("cloudnative-pg", "0.29.0", "1.30.0", "oci://ghcr.io/cloudnative-pg/charts/cloudnative-pg", "cloudnative-pg"),
        "TFRCluster spec.operators.cnpg.version",
    ),
    overridden_by(
        chart("minio-operator", "7.1.1", "v7.1.1", "https://operator.min.io", "operator"),
        "TFRCluster spec.operators.minio.version",
    ),
    overridden_by(
        manifests(
            "rabbitmq-cluster-operator",
            "v2.22.3",
            "https://github.com/rabbitmq/cluster-operator",
            "ghcr.io/rabbitmq/cluster-operator",
        ),
        "TFRCluster spec.operators.rabbitmq.version",
    ),
    manifests(
        "rabbitmq-topology-operator",
        "v1.20.1",
        "https://github.com/rabbitmq/messaging-topology-operator",
        "ghcr.io/rabbitmq/messaging-topology-operator",
    ),
    chart("sealed-secrets", "2.19.1", "0.38.4", "https://bitnami.github.io/sealed-secrets", "sealed-secrets"),
    chart("external-secrets", "2.9.0", "v2.9.0", "https://charts.external-secrets.io", "external-secrets"),
    overridden_by(
        chart("tfrs-operator", "0.5.0-dev7", "", "oci://helm.cnb.cool/turingfocus/tfrs-operator/tfrs-operator", "tfrs-operator"),
        "TFRCluster spec.tfrsOperator.version",
    ),
    // Tenant middleware.
    overridden_by(image("postgresql", "ghcr.io/cloudnative-pg/postgresql", "16-minimal-bookworm"), "TFRTenant spec.postgresql.image"),
    image("timescaledb-postgresql", "ghcr.io/cloudnative-pg/postgresql", "18-minimal-trixie"),
    image("timescaledb-extension", "ghcr.io/cloudnative-pg/timescaledb-oss", "2.29.2-18-trixie"),
    overridden_by(image("redis", "redis/redis-stack-server", "7.2.0-v13"), "TFRTenant spec.redis.image"),
    image("rabbitmq", "rabbitmq", "4.2.6-management"),
    image("minio", "quay.io/minio/minio", "RELEASE.2025-04-08T15-41-24Z"),
    image("minio-client", "quay.io/minio/mc", "RELEASE.2025-04-16T18-13-26Z"),
    image("curl", "curlimages/curl", "8.17.0"),
    chart("jaeger", "4.11.1", "2.19.0", "https://jaegertracing.github.io/helm-charts", "jaeger"),
    chart("grafana", "12.11.1", "13.2.0", "https://grafana-community.github.io/helm-charts", "grafana"),
    image("prometheus", "quay.io/prometheus/prometheus", "v3.14.0"),
    image("otel-collector", "otel/opentelemetry-collector-contrib", "0.158.0"),
    image("vector", "timberio/vector", "0.57.0-debian"),
    // Central infrastructure (`tfrs infra render`): the compose stack on the platform's own
    // server, each overridable in the TFRInfra spec.
    overridden_by(image("infra-postgres", "postgres", "16.1"), "TFRInfra spec.postgres.image"),
    overridden_by(image("infra-redis", "redis", "7.4.2-alpine"), "TFRInfra spec.redis.image"),
    overridden_by(image("infra-timescaledb", "timescale/timescaledb", "2.17.2-pg16"), "TFRInfra spec.timescaledb.image"),
    overridden_by(image("infisical", "infisical/infisical", "v0.161.11"), "TFRInfra spec.infisical.image"),
    overridden_by(image("infisical-postgres", "postgres", "16.6-alpine"), "TFRInfra spec.infisical.postgres.image"),
    overridden_by(image("infisical-redis", "redis", "7.4.2-alpine"), "TFRInfra spec.infisical.redis.image"),
    // APIs the tree is written against; the cluster runs these already.
    api("flux", "v2.9.4", "https://github.com/fluxcd/flux2"),
    api("argo-cd", "v3.5.1", "https://github.com/argoproj/argo-cd"),
];

/// The row `name`.
///
/// # Panics
///
/// When there is no such row: names are compile-time constants of this crate.
#[must_use]
pub fn pin(name: &str) -> &'static Pin {
    CATALOG.iter().find(|p| p.name == name).unwrap_or_else(|| panic!("no catalog row `{name}`"))
}

/// The pinned version of row `name` (a spec default).
#[must_use]
pub fn version(name: &str) -> String {
    pin(name).version.to_owned()
}

/// The catalog as template values: `catalog["<name>"]` holds the row's fields and, for images,
/// `image` (the full reference).
#[must_use]
pub fn template_values() -> serde_json::Value {
    let mut map = serde_json::Map::new();
    for pin in CATALOG {
        let mut value = serde_json::to_value(pin).expect("a catalog row serializes");
        if pin.kind == Kind::Image {
            value["image"] = serde_json::Value::String(pin.image());
        }
        map.insert(pin.name.to_owned(), value);
    }
    serde_json::Value::Object(map)
}

/// The catalog as a table (`tfrs version --components`).
#[must_use]
pub fn table() -> String {
    let rows: Vec<[String; 5]> = CATALOG
        .iter()
        .map(|p| {
            let kind = match p.kind {
                Kind::Chart => "chart",
                Kind::Image => "image",
                Kind::Manifests => "manifests",
                Kind::Api => "api",
            };
            let source = if p.chart.is_empty() || p.source.starts_with("oci://") {
                p.source.to_owned()
            } else {
                format!("{} ({})", p.source, p.chart)
            };
            [p.name.to_owned(), kind.to_owned(), p.version.to_owned(), p.app_version.to_owned(), source]
        })
        .collect();
    let header = ["COMPONENT", "KIND", "VERSION", "APP", "SOURCE"].map(str::to_owned);
    let mut widths = [0usize; 5];
    for row in std::iter::once(&header).chain(&rows) {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.len());
        }
    }
    let mut out = String::new();
    for row in std::iter::once(&header).chain(&rows) {
        let line: Vec<String> = row.iter().zip(widths).map(|(cell, width)| format!("{cell:width$}")).collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_every_row_is_pinned() {
        let mut names: Vec<&str> = CATALOG.iter().map(|p| p.name).collect();
        names.sort_unstable();
        let before = names.len();
        names.dedup();
        assert_eq!(before, names.len(), "duplicate catalog names");
        for pin in CATALOG {
            assert!(!pin.version.is_empty() && !pin.version.contains("latest"), "{}: `{}` is not a pin", pin.name, pin.version);
            assert!(!pin.source.is_empty(), "{}", pin.name);
            if pin.kind == Kind::Chart && !pin.source.starts_with("oci://") && pin.name != "istio" {
                assert!(!pin.chart.is_empty(), "{}: a Helm repository needs the chart name", pin.name);
            }
        }
    }

    #[test]
    fn docs_show_the_catalog() {
        let docs = include_str!("../docs/components.md");
        for pin in CATALOG {
            let row = docs.lines().find(|l| l.starts_with(&format!("| {} ", pin.name)));
            let row = row.unwrap_or_else(|| panic!("docs/components.md has no row for `{}`", pin.name));
            assert!(row.contains(&format!("| {} |", pin.version)), "docs/components.md shows another version of `{}`: {row}", pin.name);
        }
    }

    #[test]
    fn the_table_lists_every_row() {
        let table = table();
        assert!(table.starts_with("COMPONENT"));
        for pin in CATALOG {
            assert!(table.lines().any(|l| l.starts_with(&format!("{} ", pin.name)) && l.contains(pin.version)), "{}", pin.name);
        }
    }
}
