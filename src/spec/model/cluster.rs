//! `TFRCluster.spec`: what the cluster runs once for all its tenants.

use super::{SecretSource, VersionedComponent};
use crate::catalog;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `TFRCluster.spec`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct ClusterSpec {
    /// Overlays applied in order under this spec.
    pub overlays: Vec<String>,
    /// Environments (`environments/<name>.yaml`) whose per-object changes apply over the specs
    /// of the tenants and servers placed in this cluster. They have no order: two that set one
    /// field differently are an error.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub environments: Vec<String>,
    /// How Argo CD or Flux consumes the rendered tree.
    pub gitops: Gitops,
    /// Ingress and TLS.
    pub ingress: Ingress,
    /// cert-manager.
    #[serde(deserialize_with = "pinned_cert_manager")]
    pub cert_manager: VersionedComponent,
    /// Istio.
    pub istio: Istio,
    /// The CNPG, MinIO and RabbitMQ operators.
    pub operators: Operators,
    /// The image-pull Secret.
    pub image_registry: ImageRegistry,
    /// The optional tfrs-operator Helm release.
    pub tfrs_operator: TfrsOperator,
    /// How Secrets are sealed.
    pub sealing: Sealing,
    /// Billing: the cluster's OTLP token read from Infisical by External Secrets.
    pub billing: Billing,
    /// What the cluster runs, where a component depends on it (TimescaleDB's image volumes).
    pub kubernetes: Kubernetes,
}

/// The cluster's Kubernetes, as far as the render depends on it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Kubernetes {
    /// The control plane's minor version, e.g. `1.34`; `""` = not stated (what needs a
    /// version is then a warning, not a check).
    #[schemars(regex(pattern = r"^$|^1\.[0-9]{1,2}$"))]
    pub version: String,
    /// Feature gates switched on beyond the version's defaults, e.g. `ImageVolume`.
    pub feature_gates: Vec<String>,
}

impl Kubernetes {
    /// The minor version, when stated.
    #[must_use]
    pub fn minor(&self) -> Option<u32> {
        self.version.strip_prefix("1.")?.parse().ok()
    }
}

impl Default for ClusterSpec {
    fn default() -> Self {
        ClusterSpec {
            overlays: Vec::new(),
            environments: Vec::new(),
            gitops: Gitops::default(),
            ingress: Ingress::default(),
            cert_manager: VersionedComponent::pinned(CERT_MANAGER),
            istio: Istio::default(),
            operators: Operators::default(),
            image_registry: ImageRegistry::default(),
            tfrs_operator: TfrsOperator::default(),
            sealing: Sealing::default(),
            billing: Billing::default(),
            kubernetes: Kubernetes::default(),
        }
    }
}

// The catalog rows of the charts the cluster's `VersionedComponent`s pin.
const CERT_MANAGER: &str = "cert-manager";
const CNPG: &str = "cloudnative-pg";
const MINIO: &str = "minio-operator";
const RABBITMQ: &str = "rabbitmq-cluster-operator";

// `deserialize_with` takes a path, not a closure: one function per pinned chart.
fn pinned_cert_manager<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<VersionedComponent, D::Error> {
    VersionedComponent::deserialize_pinned(deserializer, CERT_MANAGER)
}
fn pinned_cnpg<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<VersionedComponent, D::Error> {
    VersionedComponent::deserialize_pinned(deserializer, CNPG)
}
fn pinned_minio<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<VersionedComponent, D::Error> {
    VersionedComponent::deserialize_pinned(deserializer, MINIO)
}
fn pinned_rabbitmq<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<VersionedComponent, D::Error> {
    VersionedComponent::deserialize_pinned(deserializer, RABBITMQ)
}

/// GitOps engine settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Gitops {
    /// `flux` or `argocd`.
    pub engine: GitopsEngine,
    /// Flux: the `GitRepository` name.
    #[schemars(extend("x-tfrs-check" = "dns-label"))]
    pub source_ref: String,
    /// Argo CD: the repository URL (required with `argocd`).
    #[serde(rename = "repoURL")]
    pub repo_url: String,
    /// Branch or tag Argo CD tracks.
    pub revision: String,
}

impl Default for Gitops {
    fn default() -> Self {
        Gitops {
            engine: GitopsEngine::default(),
            source_ref: "flux-system".to_owned(),
            repo_url: String::new(),
            revision: "main".to_owned(),
        }
    }
}

/// The GitOps engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum GitopsEngine {
    /// Flux Kustomizations and HelmReleases.
    #[default]
    Flux,
    /// Argo CD Applications.
    Argocd,
}

/// Ingress settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
#[derive(Default)]
pub struct Ingress {
    /// How traffic reaches the ingress gateway.
    #[serde(rename = "type")]
    pub kind: IngressType,
    /// Base domain: servers default to `<server>.<tenant>.<domain>` (required).
    #[schemars(extend("x-tfrs-check" = "hostname"))]
    pub domain: String,
    /// Certificates.
    pub tls: Tls,
    /// `tke-clb` only: an existing CLB to attach to.
    pub tke_clb_id: String,
    /// `nodeport` only: the node ports.
    pub node_ports: NodePorts,
}

/// How the ingress gateway is exposed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum IngressType {
    /// A Tencent Cloud CLB load balancer.
    TkeClb,
    /// Node ports on every node.
    #[default]
    Nodeport,
    /// Docker Desktop's localhost load balancer.
    DockerDesktop,
}

/// TLS settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
#[derive(Default)]
pub struct Tls {
    /// The cert-manager issuer.
    pub issuer: Issuer,
    /// ACME account e-mail (required with `letsencrypt`).
    pub email: String,
}

/// The cert-manager issuer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Issuer {
    /// Let's Encrypt (ACME, HTTP-01).
    Letsencrypt,
    /// A self-signed CA.
    #[default]
    Selfsigned,
}

/// Node ports.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct NodePorts {
    /// HTTP node port.
    #[schemars(range(min = 30000, max = 32767))]
    pub http: u16,
    /// HTTPS node port.
    #[schemars(range(min = 30000, max = 32767))]
    pub https: u16,
}

impl Default for NodePorts {
    fn default() -> Self {
        NodePorts { http: 30080, https: 30443 }
    }
}

/// Istio settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Istio {
    /// Whether Istio is rendered.
    pub enabled: bool,
    /// Chart version.
    #[schemars(extend("x-tfrs-check" = "version"))]
    pub version: String,
    /// Render the Istio `Telemetry` object.
    pub telemetry: bool,
}

impl Default for Istio {
    fn default() -> Self {
        Istio { enabled: true, version: catalog::version("istio"), telemetry: true }
    }
}

/// The cluster-wide operators.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Operators {
    /// CloudNativePG.
    #[serde(deserialize_with = "pinned_cnpg")]
    pub cnpg: VersionedComponent,
    /// MinIO operator.
    #[serde(deserialize_with = "pinned_minio")]
    pub minio: VersionedComponent,
    /// RabbitMQ cluster and messaging-topology operators.
    #[serde(deserialize_with = "pinned_rabbitmq")]
    pub rabbitmq: VersionedComponent,
}

impl Default for Operators {
    fn default() -> Self {
        Operators {
            cnpg: VersionedComponent::pinned(CNPG),
            minio: VersionedComponent::pinned(MINIO),
            rabbitmq: VersionedComponent::pinned(RABBITMQ),
        }
    }
}

/// The image-pull Secret, copied into every tenant namespace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct ImageRegistry {
    /// Name of the pull Secret.
    #[schemars(extend("x-tfrs-check" = "dns-subdomain"))]
    pub secret_name: String,
    /// Registry host.
    pub server: String,
    /// Registry user. Without `username` and `password` no pull Secret is rendered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub username: Option<SecretSource>,
    /// Registry password.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub password: Option<SecretSource>,
    /// Namespace holding the shared copy of the pull Secret.
    #[schemars(extend("x-tfrs-check" = "dns-label"))]
    pub tenant_credentials_namespace: String,
}

impl Default for ImageRegistry {
    fn default() -> Self {
        ImageRegistry {
            secret_name: "cnb-registry-secret".to_owned(),
            server: "docker.cnb.cool".to_owned(),
            username: None,
            password: None,
            tenant_credentials_namespace: "tfr-image-credentials".to_owned(),
        }
    }
}

/// The tfrs-operator Helm release.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct TfrsOperator {
    /// Off by default.
    pub enabled: bool,
    /// OCI chart reference (env `OPERATOR_HELM_REPO_URL` overrides).
    pub chart: String,
    /// Chart version (env `OPERATOR_CHART_VERSION` overrides).
    #[schemars(extend("x-tfrs-check" = "version"))]
    pub version: String,
    /// Image tag, `""` = the chart's appVersion (env `OPERATOR_IMAGE_TAG` overrides).
    pub image_tag: String,
    /// Helm release name (env `OPERATOR_RELEASE_NAME` overrides).
    #[schemars(extend("x-tfrs-check" = "dns-label"))]
    pub release_name: String,
    /// Namespace of the release.
    #[schemars(extend("x-tfrs-check" = "dns-label"))]
    pub namespace: String,
    /// Flux: the HelmRelease's and the component Kustomization's `timeout` (Argo CD has no
    /// such field), and `tfrs reconcile`'s wait for the release. A Go duration as Flux accepts
    /// it: `5m`, `1h30m`, `1.5h`, units `ms`, `s`, `m`, `h` (no `d`: a day is `24h`).
    #[schemars(extend("x-tfrs-check" = "duration"))]
    pub timeout: String,
}

impl Default for TfrsOperator {
    fn default() -> Self {
        TfrsOperator {
            enabled: false,
            chart: "oci://helm.cnb.cool/turingfocus/tfrs-operator/tfrs-operator".to_owned(),
            version: catalog::version("tfrs-operator"),
            image_tag: String::new(),
            release_name: "tfrs-operator".to_owned(),
            namespace: "tfrs-operator-system".to_owned(),
            timeout: "5m".to_owned(),
        }
    }
}

/// How Secrets are sealed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Sealing {
    /// `sealed-secrets` or `sops-age`.
    pub backend: SealingBackend,
    /// sealed-secrets: the controller certificate (`kubeseal --fetch-cert`), relative to the
    /// spec file.
    pub cert_file: String,
    /// sealed-secrets: controller name.
    #[schemars(extend("x-tfrs-check" = "dns-label"))]
    pub controller_name: String,
    /// sealed-secrets: controller namespace.
    #[schemars(extend("x-tfrs-check" = "dns-label"))]
    pub controller_namespace: String,
    /// sealed-secrets: whether the tree installs the controller (its chart, under
    /// `controllerName` in `controllerNamespace`); `false` where it is installed another way.
    pub install_controller: bool,
    /// sops-age: `age1…` recipients.
    pub age_recipients: Vec<String>,
}

impl Default for Sealing {
    fn default() -> Self {
        Sealing {
            backend: SealingBackend::default(),
            cert_file: String::new(),
            controller_name: "sealed-secrets-controller".to_owned(),
            controller_namespace: "kube-system".to_owned(),
            install_controller: true,
            age_recipients: Vec::new(),
        }
    }
}

/// The sealing backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum SealingBackend {
    /// Bitnami SealedSecrets.
    #[default]
    SealedSecrets,
    /// SOPS with age recipients.
    SopsAge,
}

/// Billing: the cluster's OTLP token read from Infisical by External Secrets.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Billing {
    /// Off by default.
    pub enabled: bool,
    /// Where the collector exports usage (required when enabled).
    pub otlp_endpoint: String,
    /// The Infisical project that holds the OTLP token.
    pub infisical: Infisical,
}

/// Infisical access for External Secrets.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Infisical {
    /// Infisical URL.
    pub url: String,
    /// The project slug, never the project id (External Secrets looks the project up by slug).
    pub project_slug: String,
    /// Environment slug.
    pub environment: String,
    /// The read-only machine identity's client id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_id: Option<SecretSource>,
    /// The read-only machine identity's client secret.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<SecretSource>,
    /// Client secret expiry (`YYYY-MM-DD`), for warnings.
    #[schemars(extend("x-tfrs-check" = "date"))]
    pub expires_at: String,
}
