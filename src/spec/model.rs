//! The input model: `TFRCluster`, `TFRTenant`, `TFRServer` and `SecretSource`.
//!
//! A field left out takes the default given here (`#[serde(default)]`, the `default_*`
//! functions and `Default` impls); `tfrs schema` shows each. Unknown fields are rejected. Fields marked with
//! `x-tfrs-check` in their schema get a format check in [`super::schema`] (DNS labels,
//! quantities, durations, environment variable names).

use crate::catalog;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The only accepted `apiVersion`.
pub const API_VERSION: &str = "tfrs.turingfocus.cn/v1alpha1";

fn yes() -> bool {
    true
}
fn s(value: &str) -> String {
    value.to_owned()
}

/// `metadata` of a spec document.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Metadata {
    /// The object name, a DNS-1123 label.
    #[schemars(extend("x-tfrs-check" = "dns-label"))]
    pub name: String,
    /// Accepted for compatibility with the operator's CRs and ignored: the namespace of a tenant
    /// or server is derived from the tenant (`tfrs validate` warns).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Labels, kept for tooling; not copied to rendered objects.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// Annotations, kept for tooling; not copied to rendered objects.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

/// A whole spec document: `apiVersion`, `kind`, `metadata`, `spec`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Document<S> {
    /// Always [`API_VERSION`].
    pub api_version: String,
    /// `TFRCluster`, `TFRTenant` or `TFRServer`.
    pub kind: String,
    /// Name and labels.
    pub metadata: Metadata,
    /// The kind's spec.
    pub spec: S,
}

// ---------------------------------------------------------------------------------------------
// SecretSource

/// Any credential-valued field: exactly one of `generate`, `fromEnv`, `fromFile`, `value`;
/// `{}` means `generate` with its defaults.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(extend("maxProperties" = 1))]
pub struct SecretSource {
    /// Derive the value from the master key (HMAC-SHA256 over the secret's logical path).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generate: Option<Generate>,
    /// Read the value from this environment variable at render time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-tfrs-check" = "env-name"))]
    pub from_env: Option<String>,
    /// Read the value from this file, relative to the spec file's directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-tfrs-check" = "relative-path"))]
    pub from_file: Option<String>,
    /// A literal value (plaintext in Git: `tfrs validate` warns).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
}

/// The keys of a [`SecretSource`], one of which it takes.
pub const SECRET_FORMS: [&str; 4] = ["generate", "fromEnv", "fromFile", "value"];

/// The resolved form of a [`SecretSource`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SecretForm<'a> {
    /// Derived from the master key.
    Generate(Generate),
    /// From an environment variable.
    FromEnv(&'a str),
    /// From a file relative to the spec file.
    FromFile(&'a str),
    /// A literal.
    Value(&'a str),
}

impl SecretSource {
    /// A literal source.
    #[must_use]
    pub fn literal(value: &str) -> Self {
        SecretSource { value: Some(value.to_owned()), ..SecretSource::default() }
    }

    /// The form this source takes. Validation guarantees at most one key is set; if several
    /// were, the first in the order `generate`, `fromEnv`, `fromFile`, `value` wins.
    #[must_use]
    pub fn form(&self) -> SecretForm<'_> {
        if let Some(generate) = &self.generate {
            SecretForm::Generate(generate.clone())
        } else if let Some(name) = &self.from_env {
            SecretForm::FromEnv(name)
        } else if let Some(path) = &self.from_file {
            SecretForm::FromFile(path)
        } else if let Some(value) = &self.value {
            SecretForm::Value(value)
        } else {
            SecretForm::Generate(Generate::default())
        }
    }
}

/// Options of a generated secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Generate {
    /// Number of characters.
    #[serde(default = "default_length")]
    #[schemars(range(min = 8, max = 4096))]
    pub length: u32,
    /// Alphabet of the value.
    #[serde(default)]
    pub charset: Charset,
    /// Bump to rotate the value.
    #[serde(default)]
    pub rotation: u32,
}

fn default_length() -> u32 {
    32
}

impl Default for Generate {
    fn default() -> Self {
        Generate { length: default_length(), charset: Charset::default(), rotation: 0 }
    }
}

/// Alphabet of a generated secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Charset {
    /// `A-Z a-z 0-9`: URL-safe, like `openssl rand -base64 24 | tr -d '/+='`.
    #[default]
    Alphanumeric,
    /// `0-9 a-f`.
    Hex,
    /// `A-Z a-z 0-9 + /`.
    Base64,
}

// ---------------------------------------------------------------------------------------------
// Shared pieces

/// A component that can be switched on or off and has a version (a chart version).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VersionedComponent {
    /// Whether it is rendered.
    #[serde(default = "yes")]
    pub enabled: bool,
    /// Chart version; left out, the version the catalog pins
    /// (`tfrs version --components`).
    #[serde(default)]
    #[schemars(extend("x-tfrs-check" = "version"))]
    pub version: String,
}

/// A component with only an on/off switch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Toggle {
    /// Whether it is rendered.
    #[serde(default = "yes")]
    pub enabled: bool,
}

impl Default for Toggle {
    fn default() -> Self {
        Toggle { enabled: true }
    }
}

/// Container resource requests and limits.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Resources {
    /// Requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests: Option<ResourceList>,
    /// Limits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<ResourceList>,
}

/// Quantities per resource name.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResourceList {
    /// CPU, e.g. `500m` or `2`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-tfrs-check" = "quantity"))]
    pub cpu: Option<String>,
    /// Memory, e.g. `512Mi`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-tfrs-check" = "quantity"))]
    pub memory: Option<String>,
    /// Ephemeral storage, e.g. `1Gi`.
    #[serde(default, rename = "ephemeral-storage", skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-tfrs-check" = "quantity"))]
    pub ephemeral_storage: Option<String>,
}

// ---------------------------------------------------------------------------------------------
// TFRCluster

/// `TFRCluster.spec`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClusterSpec {
    /// Overlays applied in order under this spec.
    #[serde(default)]
    pub overlays: Vec<String>,
    /// How Argo CD or Flux consumes the rendered tree.
    #[serde(default)]
    pub gitops: Gitops,
    /// Ingress and TLS.
    #[serde(default)]
    pub ingress: Ingress,
    /// cert-manager.
    #[serde(default = "default_cert_manager", deserialize_with = "pinned_cert_manager")]
    pub cert_manager: VersionedComponent,
    /// Istio.
    #[serde(default)]
    pub istio: Istio,
    /// The CNPG, MinIO and RabbitMQ operators.
    #[serde(default)]
    pub operators: Operators,
    /// The image-pull Secret.
    #[serde(default)]
    pub image_registry: ImageRegistry,
    /// The optional tfrs-operator Helm release.
    #[serde(default)]
    pub tfrs_operator: TfrsOperator,
    /// How Secrets are sealed.
    #[serde(default)]
    pub sealing: Sealing,
    /// Billing: the cluster's OTLP token read from Infisical by External Secrets.
    #[serde(default)]
    pub billing: Billing,
    /// What the cluster runs, where a component depends on it (TimescaleDB's image volumes).
    #[serde(default)]
    pub kubernetes: Kubernetes,
}

/// The cluster's Kubernetes, as far as the render depends on it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Kubernetes {
    /// The control plane's minor version, e.g. `1.34`; `""` = not stated (what needs a
    /// version is then a warning, not a check).
    #[serde(default)]
    #[schemars(regex(pattern = r"^$|^1\.[0-9]{1,2}$"))]
    pub version: String,
    /// Feature gates switched on beyond the version's defaults, e.g. `ImageVolume`.
    #[serde(default)]
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
            gitops: Gitops::default(),
            ingress: Ingress::default(),
            cert_manager: default_cert_manager(),
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

/// A [`VersionedComponent`] whose version, left out, is catalog row `name`'s: defaults
/// hold field by field, so `{ enabled: true }` still pins the chart.
fn pinned<'de, D: serde::Deserializer<'de>>(deserializer: D, name: &str) -> Result<VersionedComponent, D::Error> {
    let mut component = VersionedComponent::deserialize(deserializer)?;
    if component.version.is_empty() {
        component.version = catalog::version(name);
    }
    Ok(component)
}
fn pinned_cert_manager<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<VersionedComponent, D::Error> {
    pinned(deserializer, "cert-manager")
}
fn pinned_cnpg<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<VersionedComponent, D::Error> {
    pinned(deserializer, "cloudnative-pg")
}
fn pinned_minio<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<VersionedComponent, D::Error> {
    pinned(deserializer, "minio-operator")
}
fn pinned_rabbitmq<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<VersionedComponent, D::Error> {
    pinned(deserializer, "rabbitmq-cluster-operator")
}

fn default_cert_manager() -> VersionedComponent {
    VersionedComponent { enabled: true, version: catalog::version("cert-manager") }
}
fn default_cnpg() -> VersionedComponent {
    VersionedComponent { enabled: true, version: catalog::version("cloudnative-pg") }
}
fn default_minio() -> VersionedComponent {
    VersionedComponent { enabled: true, version: catalog::version("minio-operator") }
}
fn default_rabbitmq() -> VersionedComponent {
    VersionedComponent { enabled: true, version: catalog::version("rabbitmq-cluster-operator") }
}

/// GitOps engine settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Gitops {
    /// `flux` or `argocd`.
    #[serde(default)]
    pub engine: GitopsEngine,
    /// Flux: the `GitRepository` name.
    #[serde(default = "default_source_ref")]
    #[schemars(extend("x-tfrs-check" = "dns-label"))]
    pub source_ref: String,
    /// Argo CD: the repository URL (required with `argocd`).
    #[serde(default, rename = "repoURL")]
    pub repo_url: String,
    /// Branch or tag Argo CD tracks.
    #[serde(default = "default_revision")]
    pub revision: String,
}

fn default_source_ref() -> String {
    s("flux-system")
}
fn default_revision() -> String {
    s("main")
}

impl Default for Gitops {
    fn default() -> Self {
        Gitops { engine: GitopsEngine::default(), source_ref: default_source_ref(), repo_url: String::new(), revision: default_revision() }
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
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[derive(Default)]
pub struct Ingress {
    /// How traffic reaches the ingress gateway.
    #[serde(default, rename = "type")]
    pub kind: IngressType,
    /// Base domain: servers default to `<server>.<tenant>.<domain>` (required).
    #[serde(default)]
    #[schemars(extend("x-tfrs-check" = "hostname"))]
    pub domain: String,
    /// Certificates.
    #[serde(default)]
    pub tls: Tls,
    /// `tke-clb` only: an existing CLB to attach to.
    #[serde(default)]
    pub tke_clb_id: String,
    /// `nodeport` only: the node ports.
    #[serde(default)]
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
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[derive(Default)]
pub struct Tls {
    /// The cert-manager issuer.
    #[serde(default)]
    pub issuer: Issuer,
    /// ACME account e-mail (required with `letsencrypt`).
    #[serde(default)]
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
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NodePorts {
    /// HTTP node port.
    #[serde(default = "default_http_port")]
    #[schemars(range(min = 30000, max = 32767))]
    pub http: u16,
    /// HTTPS node port.
    #[serde(default = "default_https_port")]
    #[schemars(range(min = 30000, max = 32767))]
    pub https: u16,
}

fn default_http_port() -> u16 {
    30080
}
fn default_https_port() -> u16 {
    30443
}

impl Default for NodePorts {
    fn default() -> Self {
        NodePorts { http: default_http_port(), https: default_https_port() }
    }
}

/// Istio settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Istio {
    /// Whether Istio is rendered.
    #[serde(default = "yes")]
    pub enabled: bool,
    /// Chart version.
    #[serde(default = "default_istio_version")]
    #[schemars(extend("x-tfrs-check" = "version"))]
    pub version: String,
    /// Render the Istio `Telemetry` object.
    #[serde(default = "yes")]
    pub telemetry: bool,
}

fn default_istio_version() -> String {
    catalog::version("istio")
}

impl Default for Istio {
    fn default() -> Self {
        Istio { enabled: true, version: default_istio_version(), telemetry: true }
    }
}

/// The cluster-wide operators.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Operators {
    /// CloudNativePG.
    #[serde(default = "default_cnpg", deserialize_with = "pinned_cnpg")]
    pub cnpg: VersionedComponent,
    /// MinIO operator.
    #[serde(default = "default_minio", deserialize_with = "pinned_minio")]
    pub minio: VersionedComponent,
    /// RabbitMQ cluster and messaging-topology operators.
    #[serde(default = "default_rabbitmq", deserialize_with = "pinned_rabbitmq")]
    pub rabbitmq: VersionedComponent,
}

impl Default for Operators {
    fn default() -> Self {
        Operators { cnpg: default_cnpg(), minio: default_minio(), rabbitmq: default_rabbitmq() }
    }
}

/// The image-pull Secret, copied into every tenant namespace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ImageRegistry {
    /// Name of the pull Secret.
    #[serde(default = "default_registry_secret")]
    #[schemars(extend("x-tfrs-check" = "dns-subdomain"))]
    pub secret_name: String,
    /// Registry host.
    #[serde(default = "default_registry_server")]
    pub server: String,
    /// Registry user. Without `username` and `password` no pull Secret is rendered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub username: Option<SecretSource>,
    /// Registry password.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password: Option<SecretSource>,
    /// Namespace holding the shared copy of the pull Secret.
    #[serde(default = "default_credentials_namespace")]
    #[schemars(extend("x-tfrs-check" = "dns-label"))]
    pub tenant_credentials_namespace: String,
}

fn default_registry_secret() -> String {
    s("cnb-registry-secret")
}
fn default_registry_server() -> String {
    s("docker.cnb.cool")
}
fn default_credentials_namespace() -> String {
    s("tfr-image-credentials")
}

impl Default for ImageRegistry {
    fn default() -> Self {
        ImageRegistry {
            secret_name: default_registry_secret(),
            server: default_registry_server(),
            username: None,
            password: None,
            tenant_credentials_namespace: default_credentials_namespace(),
        }
    }
}

/// The tfrs-operator Helm release.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TfrsOperator {
    /// Off by default.
    #[serde(default)]
    pub enabled: bool,
    /// OCI chart reference (env `OPERATOR_HELM_REPO_URL` overrides).
    #[serde(default = "default_operator_chart")]
    pub chart: String,
    /// Chart version (env `OPERATOR_CHART_VERSION` overrides).
    #[serde(default = "default_operator_version")]
    #[schemars(extend("x-tfrs-check" = "version"))]
    pub version: String,
    /// Image tag, `""` = the chart's appVersion (env `OPERATOR_IMAGE_TAG` overrides).
    #[serde(default)]
    pub image_tag: String,
    /// Helm release name (env `OPERATOR_RELEASE_NAME` overrides).
    #[serde(default = "default_operator_release")]
    #[schemars(extend("x-tfrs-check" = "dns-label"))]
    pub release_name: String,
    /// Namespace of the release.
    #[serde(default = "default_operator_namespace")]
    #[schemars(extend("x-tfrs-check" = "dns-label"))]
    pub namespace: String,
    /// Flux: the HelmRelease's and the component Kustomization's `timeout` (Argo CD has no
    /// such field), and `tfrs reconcile`'s wait for the release. A Go duration as Flux accepts
    /// it: `5m`, `1h30m`, `1.5h`, units `ms`, `s`, `m`, `h` (no `d`: a day is `24h`).
    #[serde(default = "default_operator_timeout")]
    #[schemars(extend("x-tfrs-check" = "duration"))]
    pub timeout: String,
}

fn default_operator_chart() -> String {
    s("oci://helm.cnb.cool/turingfocus/tfrs-operator/tfrs-operator")
}
fn default_operator_version() -> String {
    catalog::version("tfrs-operator")
}
fn default_operator_release() -> String {
    s("tfrs-operator")
}
fn default_operator_namespace() -> String {
    s("tfrs-operator-system")
}
fn default_operator_timeout() -> String {
    s("5m")
}

impl Default for TfrsOperator {
    fn default() -> Self {
        TfrsOperator {
            enabled: false,
            chart: default_operator_chart(),
            version: default_operator_version(),
            image_tag: String::new(),
            release_name: default_operator_release(),
            namespace: default_operator_namespace(),
            timeout: default_operator_timeout(),
        }
    }
}

/// How Secrets are sealed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Sealing {
    /// `sealed-secrets` or `sops-age`.
    #[serde(default)]
    pub backend: SealingBackend,
    /// sealed-secrets: the controller certificate (`kubeseal --fetch-cert`), relative to the
    /// spec file.
    #[serde(default)]
    pub cert_file: String,
    /// sealed-secrets: controller name.
    #[serde(default = "default_controller_name")]
    #[schemars(extend("x-tfrs-check" = "dns-label"))]
    pub controller_name: String,
    /// sealed-secrets: controller namespace.
    #[serde(default = "default_controller_namespace")]
    #[schemars(extend("x-tfrs-check" = "dns-label"))]
    pub controller_namespace: String,
    /// sops-age: `age1…` recipients.
    #[serde(default)]
    pub age_recipients: Vec<String>,
}

fn default_controller_name() -> String {
    s("sealed-secrets-controller")
}
fn default_controller_namespace() -> String {
    s("kube-system")
}

impl Default for Sealing {
    fn default() -> Self {
        Sealing {
            backend: SealingBackend::default(),
            cert_file: String::new(),
            controller_name: default_controller_name(),
            controller_namespace: default_controller_namespace(),
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
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Billing {
    /// Off by default.
    #[serde(default)]
    pub enabled: bool,
    /// Where the collector exports usage (required when enabled).
    #[serde(default)]
    pub otlp_endpoint: String,
    /// The Infisical project that holds the OTLP token.
    #[serde(default)]
    pub infisical: Infisical,
}

/// Infisical access for External Secrets.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Infisical {
    /// Infisical URL.
    #[serde(default)]
    pub url: String,
    /// The project slug, never the project id (External Secrets looks the project up by slug).
    #[serde(default)]
    pub project_slug: String,
    /// Environment slug.
    #[serde(default)]
    pub environment: String,
    /// The read-only machine identity's client id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<SecretSource>,
    /// The read-only machine identity's client secret.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<SecretSource>,
    /// Client secret expiry (`YYYY-MM-DD`), for warnings.
    #[serde(default)]
    #[schemars(extend("x-tfrs-check" = "date"))]
    pub expires_at: String,
}

// ---------------------------------------------------------------------------------------------
// TFRTenant

/// `TFRTenant.spec`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[derive(Default)]
pub struct TenantSpec {
    /// The `TFRCluster` this tenant lives on.
    #[schemars(extend("x-tfrs-check" = "dns-label"))]
    pub cluster: String,
    /// `enterprise` or `personal`.
    #[serde(default, rename = "type")]
    pub kind: TenantType,
    /// Personal only, required there: the namespace is `personal-<function>`.
    #[serde(default)]
    pub function: String,
    /// Enterprise only: the namespace, default the tenant name.
    #[serde(default)]
    pub namespace: String,
    /// PostgreSQL (CNPG).
    #[serde(default)]
    pub postgresql: Postgresql,
    /// TimescaleDB (CNPG with the extension).
    #[serde(default)]
    pub timescaledb: Timescaledb,
    /// Redis.
    #[serde(default)]
    pub redis: Redis,
    /// MinIO tenant.
    #[serde(default)]
    pub minio: Minio,
    /// RabbitMQ.
    #[serde(default)]
    pub rabbitmq: Rabbitmq,
    /// Jaeger.
    #[serde(default)]
    pub jaeger: Toggle,
    /// OpenTelemetry Collector.
    #[serde(default)]
    pub otel_collector: Toggle,
    /// Prometheus.
    #[serde(default)]
    pub prometheus: Prometheus,
    /// Grafana.
    #[serde(default)]
    pub grafana: Grafana,
    /// Vector.
    #[serde(default)]
    pub vector: Toggle,
    /// The ReadWriteMany shared cache volume.
    #[serde(default)]
    pub shared_cache: SharedCache,
    /// TFRobotFront.
    #[serde(default)]
    pub front: Front,
    /// TFRSUtils.
    #[serde(default)]
    pub utils: Utils,
    /// Per-component requests/limits overrides.
    #[serde(default)]
    pub resources: TenantResources,
}

/// Tenant type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum TenantType {
    /// Own namespace, own middleware.
    #[default]
    Enterprise,
    /// Shares `personal-<function>` with the other personal tenants of that function.
    Personal,
}

/// PostgreSQL settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Postgresql {
    /// Whether it is rendered.
    #[serde(default = "yes")]
    pub enabled: bool,
    /// CNPG instances.
    #[serde(default = "one")]
    #[schemars(range(min = 1, max = 9))]
    pub instances: u32,
    /// Volume size.
    #[serde(default = "ten_gi")]
    #[schemars(extend("x-tfrs-check" = "quantity"))]
    pub storage: String,
    /// StorageClass, `""` = the cluster default.
    #[serde(default)]
    pub storage_class: String,
    /// Operand image.
    #[serde(default = "default_postgres_image")]
    #[schemars(extend("x-tfrs-check" = "image"))]
    pub image: String,
    /// Password of `app_user`.
    #[serde(default)]
    pub password: SecretSource,
}

fn one() -> u32 {
    1
}
fn ten_gi() -> String {
    s("10Gi")
}
fn default_postgres_image() -> String {
    catalog::pin("postgresql").image()
}

impl Default for Postgresql {
    fn default() -> Self {
        Postgresql {
            enabled: true,
            instances: 1,
            storage: ten_gi(),
            storage_class: String::new(),
            image: default_postgres_image(),
            password: SecretSource::default(),
        }
    }
}

/// TimescaleDB settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Timescaledb {
    /// Off by default.
    #[serde(default)]
    pub enabled: bool,
    /// Volume size.
    #[serde(default = "ten_gi")]
    #[schemars(extend("x-tfrs-check" = "quantity"))]
    pub storage: String,
    /// Password of its owner.
    #[serde(default)]
    pub password: SecretSource,
}

impl Default for Timescaledb {
    fn default() -> Self {
        Timescaledb { enabled: false, storage: ten_gi(), password: SecretSource::default() }
    }
}

/// Redis settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Redis {
    /// Whether it is rendered.
    #[serde(default = "yes")]
    pub enabled: bool,
    /// Image.
    #[serde(default = "default_redis_image")]
    #[schemars(extend("x-tfrs-check" = "image"))]
    pub image: String,
    /// Volume size.
    #[serde(default = "default_redis_storage")]
    #[schemars(extend("x-tfrs-check" = "quantity"))]
    pub storage: String,
    /// `requirepass`.
    #[serde(default)]
    pub password: SecretSource,
}

fn default_redis_image() -> String {
    catalog::pin("redis").image()
}
fn default_redis_storage() -> String {
    s("1Gi")
}

impl Default for Redis {
    fn default() -> Self {
        Redis { enabled: true, image: default_redis_image(), storage: default_redis_storage(), password: SecretSource::default() }
    }
}

/// MinIO settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Minio {
    /// Whether it is rendered.
    #[serde(default = "yes")]
    pub enabled: bool,
    /// Servers in the pool.
    #[serde(default = "one")]
    #[schemars(range(min = 1))]
    pub servers: u32,
    /// Volumes per server.
    #[serde(default = "one")]
    #[schemars(range(min = 1))]
    pub volumes_per_server: u32,
    /// Size of each volume.
    #[serde(default = "ten_gi")]
    #[schemars(extend("x-tfrs-check" = "quantity"))]
    pub storage: String,
    /// Root user.
    #[serde(default = "default_minio_root_user")]
    pub root_user: SecretSource,
    /// Root password.
    #[serde(default)]
    pub root_password: SecretSource,
}

fn default_minio_root_user() -> SecretSource {
    SecretSource::literal("minio-root")
}

impl Default for Minio {
    fn default() -> Self {
        Minio {
            enabled: true,
            servers: 1,
            volumes_per_server: 1,
            storage: ten_gi(),
            root_user: default_minio_root_user(),
            root_password: SecretSource::default(),
        }
    }
}

/// RabbitMQ settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Rabbitmq {
    /// Whether it is rendered.
    #[serde(default = "yes")]
    pub enabled: bool,
    /// Broker replicas.
    #[serde(default = "one")]
    #[schemars(range(min = 1, max = 9))]
    pub replicas: u32,
    /// Application user (a topology-operator `User`).
    #[serde(default = "default_rabbitmq_user")]
    pub username: SecretSource,
    /// Application password.
    #[serde(default)]
    pub password: SecretSource,
}

fn default_rabbitmq_user() -> SecretSource {
    SecretSource::literal("app")
}

impl Default for Rabbitmq {
    fn default() -> Self {
        Rabbitmq { enabled: true, replicas: 1, username: default_rabbitmq_user(), password: SecretSource::default() }
    }
}

/// Prometheus settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Prometheus {
    /// Whether it is rendered.
    #[serde(default = "yes")]
    pub enabled: bool,
    /// TSDB retention (`--storage.tsdb.retention.time`), in Prometheus's grammar: `15d`,
    /// `1w3d`, `12h`; units `y`, `w`, `d`, `h`, `m`, `s`, `ms`, largest first.
    #[serde(default = "default_retention")]
    #[schemars(extend("x-tfrs-check" = "prometheus-duration"))]
    pub retention: String,
}

fn default_retention() -> String {
    s("15d")
}

impl Default for Prometheus {
    fn default() -> Self {
        Prometheus { enabled: true, retention: default_retention() }
    }
}

/// Grafana settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Grafana {
    /// Whether it is rendered.
    #[serde(default = "yes")]
    pub enabled: bool,
    /// Admin password.
    #[serde(default)]
    pub admin_password: SecretSource,
}

impl Default for Grafana {
    fn default() -> Self {
        Grafana { enabled: true, admin_password: SecretSource::default() }
    }
}

/// The shared cache volume.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SharedCache {
    /// Whether it is rendered.
    #[serde(default = "yes")]
    pub enabled: bool,
    /// Volume size.
    #[serde(default = "default_cache_storage")]
    #[schemars(extend("x-tfrs-check" = "quantity"))]
    pub storage: String,
    /// StorageClass (must support ReadWriteMany), `""` = the cluster default.
    #[serde(default)]
    pub storage_class: String,
    /// Mount path in both workers; also `TFS_ROBOT__DOC_EXTRACTED_IMAGES_DIR`.
    #[serde(default = "default_cache_dir")]
    #[schemars(extend("x-tfrs-check" = "absolute-path"))]
    pub cache_dir: String,
}

fn default_cache_storage() -> String {
    s("20Gi")
}
fn default_cache_dir() -> String {
    s("/data/shared-cache")
}

impl Default for SharedCache {
    fn default() -> Self {
        SharedCache { enabled: true, storage: default_cache_storage(), storage_class: String::new(), cache_dir: default_cache_dir() }
    }
}

/// TFRobotFront.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Front {
    /// Off by default.
    #[serde(default)]
    pub enabled: bool,
    /// Image (required when enabled).
    #[serde(default)]
    pub image: String,
    /// Replicas.
    #[serde(default = "one")]
    #[schemars(range(min = 0))]
    pub replicas: u32,
}

impl Default for Front {
    fn default() -> Self {
        Front { enabled: false, image: String::new(), replicas: 1 }
    }
}

/// TFRSUtils.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Utils {
    /// Off by default.
    #[serde(default)]
    pub enabled: bool,
    /// Image (required when enabled).
    #[serde(default)]
    pub image: String,
}

/// Per-component resource overrides of a tenant.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TenantResources {
    /// PostgreSQL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub postgresql: Option<Resources>,
    /// TimescaleDB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timescaledb: Option<Resources>,
    /// Redis.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redis: Option<Resources>,
    /// MinIO.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub minio: Option<Resources>,
    /// RabbitMQ.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rabbitmq: Option<Resources>,
    /// Jaeger.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jaeger: Option<Resources>,
    /// OpenTelemetry Collector.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub otel_collector: Option<Resources>,
    /// Prometheus.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prometheus: Option<Resources>,
    /// Grafana.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grafana: Option<Resources>,
    /// Vector.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vector: Option<Resources>,
    /// TFRobotFront.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub front: Option<Resources>,
    /// TFRSUtils.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub utils: Option<Resources>,
}

// ---------------------------------------------------------------------------------------------
// TFRServer

/// `TFRServer.spec`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[derive(Default)]
pub struct ServerSpec {
    /// The `TFRTenant` this server belongs to.
    #[schemars(extend("x-tfrs-check" = "dns-label"))]
    pub tenant: String,
    /// The TFRobot image.
    pub image: Image,
    /// The API worker.
    #[serde(default)]
    pub api_worker: ApiWorker,
    /// The robot worker.
    #[serde(default)]
    pub robot_worker: RobotWorker,
    /// Public host, default `<server>.<tenant>.<ingress.domain>`.
    #[serde(default)]
    #[schemars(extend("x-tfrs-check" = "hostname"))]
    pub host: String,
    /// Secret environment: `<server>-secret`, mounted with envFrom.
    #[serde(default)]
    #[schemars(extend("propertyNames" = { "x-tfrs-check": "env-name" }))]
    pub secret_data: BTreeMap<String, SecretSource>,
    /// Plain environment: `<server>-config`, mounted with envFrom.
    #[serde(default)]
    #[schemars(extend("propertyNames" = { "x-tfrs-check": "env-name" }))]
    pub config_data: BTreeMap<String, String>,
    /// TOML deep-merged over the generated `config.toml`.
    #[serde(default)]
    pub confz_data: String,
    /// Which helper Jobs are rendered.
    #[serde(default)]
    pub jobs: Jobs,
}

/// An image reference split as Helm charts do.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Image {
    /// Repository, e.g. `docker.cnb.cool/turingfocus/tfrobot`.
    #[schemars(extend("x-tfrs-check" = "image"))]
    pub repository: String,
    /// Tag, e.g. `v1.8.0`.
    #[schemars(extend("x-tfrs-check" = "image-tag"))]
    pub tag: String,
}

/// The API worker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ApiWorker {
    /// Replicas.
    #[serde(default = "two")]
    #[schemars(range(max = 100))]
    pub replicas: u32,
    /// Container port.
    #[serde(default = "default_api_port")]
    #[schemars(range(min = 1, max = 65535))]
    pub port: u16,
    /// Requests and limits.
    #[serde(default)]
    pub resources: Resources,
}

fn two() -> u32 {
    2
}
fn default_api_port() -> u16 {
    8000
}

impl Default for ApiWorker {
    fn default() -> Self {
        ApiWorker { replicas: 2, port: default_api_port(), resources: Resources::default() }
    }
}

/// The robot worker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RobotWorker {
    /// Replicas.
    #[serde(default = "one")]
    #[schemars(range(max = 100))]
    pub replicas: u32,
    /// Requests and limits.
    #[serde(default)]
    pub resources: Resources,
}

impl Default for RobotWorker {
    fn default() -> Self {
        RobotWorker { replicas: 1, resources: Resources::default() }
    }
}

/// Helper Jobs of a server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Jobs {
    /// Create the robot's schema in the tenant database.
    #[serde(default = "yes")]
    pub db_init: bool,
    /// Create the robot's MinIO bucket.
    #[serde(default = "yes")]
    pub minio_init: bool,
    /// Create a Grafana service account.
    #[serde(default = "yes")]
    pub grafana_service_account: bool,
}

impl Default for Jobs {
    fn default() -> Self {
        Jobs { db_init: true, minio_init: true, grafana_service_account: true }
    }
}

/// A `TFRCluster` document.
pub type ClusterDocument = Document<ClusterSpec>;
/// A `TFRTenant` document.
pub type TenantDocument = Document<TenantSpec>;
/// A `TFRServer` document.
pub type ServerDocument = Document<ServerSpec>;
