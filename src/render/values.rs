//! The values every template sees, computed once per cluster (`docs/templates.md` describes
//! each key), and the per-server lists only cluster templates get.

use super::names;
use super::names::{ARGOCD_NAMESPACE, ARGOCD_PROJECT, BILLING_AUTH_SECRET, BILLING_STORE, BILLING_TOKEN_SECRET, FLUX_NAMESPACE, GATEWAY};
use crate::spec::check::tenant_namespace;
use crate::spec::model::{ClusterSpec, GitopsEngine, Issuer, SealingBackend};
use crate::spec::{Object, Spec};
use serde::Serialize;
use serde_json::{Value as Json, json};
use std::collections::{BTreeMap, BTreeSet};

/// The values every template sees (cluster, tenant, server and GitOps), converted once per
/// cluster. `docs/templates.md` describes each key.
#[derive(Serialize)]
pub(crate) struct SharedValues<'a> {
    engine: &'static str,
    flux_namespace: &'static str,
    argocd_namespace: &'static str,
    argocd_project: &'static str,
    argocd_sync: Json,
    argocd_ignore_injected: Json,
    cluster: ClusterInfo<'a>,
    issuer_name: &'static str,
    gateway_name: &'static str,
    sops: bool,
    /// The billing settings, or `false` when billing is off.
    #[serde(serialize_with = "false_when_none")]
    billing: Option<Billing<'a>>,
    /// Empty here; each component's own labels replace it.
    labels: BTreeMap<String, String>,
}

/// The cluster a template renders for.
#[derive(Serialize)]
struct ClusterInfo<'a> {
    name: &'a str,
    /// Its spec as written (camelCase), credential fields removed.
    spec: Json,
}

/// Where billing tokens come from and go to.
#[derive(Serialize)]
struct Billing<'a> {
    store: &'static str,
    auth_secret: &'static str,
    token_secret: &'static str,
    token_key: &'static str,
    endpoint: &'a str,
}

/// `false` for `None`, else the value.
fn false_when_none<S: serde::Serializer, T: Serialize>(value: &Option<T>, serializer: S) -> Result<S::Ok, S::Error> {
    match value {
        Some(value) => value.serialize(serializer),
        None => serializer.serialize_bool(false),
    }
}

/// The per-server lists only cluster templates need: the Gateway's hosts, the routes of the
/// cluster VirtualService, istiod's tracing providers.
#[derive(Serialize)]
pub(crate) struct IngressValues {
    gateway_hosts: Vec<String>,
    certificate_hosts: Vec<String>,
    tracing_providers: Vec<TracingProvider>,
    robot_routes: Vec<RobotRoute>,
}

/// An istiod `extensionProviders` entry: a namespace's collector.
#[derive(Serialize)]
struct TracingProvider {
    name: String,
    opentelemetry: OtelService,
}

#[derive(Serialize)]
struct OtelService {
    service: String,
    port: u16,
}

/// A route of the cluster VirtualService: a robot's API Service.
#[derive(Serialize)]
struct RobotRoute {
    robot: String,
    host: String,
    port: u16,
}

/// The values every template sees.
pub(crate) fn shared_values(cluster: &Object<ClusterSpec>) -> SharedValues<'_> {
    let cluster_spec = &cluster.spec;
    let mut cluster_json = serde_json::to_value(cluster_spec).unwrap_or(Json::Null);
    redact(&mut cluster_json);
    SharedValues {
        engine: match cluster_spec.gitops.engine {
            GitopsEngine::Flux => "flux",
            GitopsEngine::Argocd => "argocd",
        },
        flux_namespace: FLUX_NAMESPACE,
        argocd_namespace: ARGOCD_NAMESPACE,
        argocd_project: ARGOCD_PROJECT,
        argocd_sync: argocd_sync(),
        argocd_ignore_injected: argocd_ignore_injected(),
        cluster: ClusterInfo { name: cluster.name(), spec: cluster_json },
        issuer_name: match cluster_spec.ingress.tls.issuer {
            Issuer::Letsencrypt => "letsencrypt",
            Issuer::Selfsigned => "tfrs-ca",
        },
        gateway_name: GATEWAY,
        sops: cluster_spec.sealing.backend == SealingBackend::SopsAge,
        billing: cluster_spec.billing.enabled.then(|| Billing {
            store: BILLING_STORE,
            auth_secret: BILLING_AUTH_SECRET,
            token_secret: BILLING_TOKEN_SECRET,
            token_key: "PRIMARY_TOKEN",
            endpoint: &cluster_spec.billing.otlp_endpoint,
        }),
        labels: BTreeMap::new(),
    }
}

/// Argo CD: automated sync that never gives up on a transient race (a CRD or webhook not there
/// yet): unlimited retries (a negative limit), backing off to 5 minutes. An Argo CD
/// `syncPolicy`, written as is.
fn argocd_sync() -> Json {
    json!({
        "automated": {"prune": true, "selfHeal": true},
        "retry": {"limit": -1, "backoff": {"duration": "10s", "factor": 2, "maxDuration": "5m"}},
    })
}

/// Argo CD: fields controllers legitimately rewrite after a chart or an upstream base is
/// applied: CA bundles injected into webhooks and CRD conversion webhooks (cert-manager's
/// cainjector, istiod, ESO), and the failure policy istiod switches on its validating webhook
/// once it is ready. Without these, self-heal and the controllers would undo each other for
/// ever. Argo CD `ignoreDifferences` entries, written as is.
fn argocd_ignore_injected() -> Json {
    json!([
        {"group": "admissionregistration.k8s.io", "kind": "ValidatingWebhookConfiguration",
         "jqPathExpressions": [".webhooks[]?.clientConfig.caBundle", ".webhooks[]?.failurePolicy"]},
        {"group": "admissionregistration.k8s.io", "kind": "MutatingWebhookConfiguration",
         "jqPathExpressions": [".webhooks[]?.clientConfig.caBundle"]},
        {"group": "apiextensions.k8s.io", "kind": "CustomResourceDefinition",
         "jqPathExpressions": [".spec.conversion.webhook.clientConfig.caBundle"]},
    ])
}

/// The Gateway's hosts, the routes of the cluster VirtualService and istiod's tracing
/// providers: one entry per server or collector of the cluster.
pub(crate) fn ingress_values(cluster: &Object<ClusterSpec>, spec: &Spec) -> IngressValues {
    let domain = &cluster.spec.ingress.domain;
    let tenants: BTreeMap<&str, _> = spec.tenants.iter().filter(|t| t.spec.cluster == cluster.name()).map(|t| (t.name(), t)).collect();
    let mut tracing_providers = Vec::new();
    let mut namespaces_seen = BTreeSet::new();
    for tenant in tenants.values() {
        let namespace = tenant_namespace(tenant.name(), &tenant.spec);
        if tenant.spec.otel_collector.enabled && namespaces_seen.insert(namespace.clone()) {
            let service = OtelService { service: names::service_host("otel-collector", &namespace), port: 4317 };
            tracing_providers.push(TracingProvider { name: names::tracing_provider(&namespace), opentelemetry: service });
        }
    }
    let mut hosts = BTreeSet::from([domain.clone()]);
    let mut robot_routes = Vec::new();
    let mut extra_gateway_hosts = BTreeSet::new();
    let mut servers: Vec<_> = spec.servers.iter().filter(|s| tenants.contains_key(s.spec.tenant.as_str())).collect();
    servers.sort_by(|a, b| a.name().cmp(b.name()));
    for server in servers {
        let Some(tenant) = tenants.get(server.spec.tenant.as_str()) else { continue };
        let namespace = tenant_namespace(tenant.name(), &tenant.spec);
        let host = names::host(server, domain);
        if !host.ends_with(&format!(".{domain}")) && &host != domain {
            extra_gateway_hosts.insert(host.clone());
        }
        hosts.insert(host);
        let api = names::service_host(&names::api_worker(server.name()), &namespace);
        robot_routes.push(RobotRoute { robot: server.name().to_owned(), host: api, port: server.spec.api_worker.port });
    }
    IngressValues {
        gateway_hosts: [domain.clone(), format!("*.{domain}")].into_iter().chain(extra_gateway_hosts).collect(),
        certificate_hosts: hosts.into_iter().collect(),
        tracing_providers,
        robot_routes,
    }
}

/// Removes every credential field from the values templates see: templates never get a
/// secret, not even a `value` literal.
fn redact(cluster: &mut Json) {
    for pointer in ["/imageRegistry", "/billing/infisical"] {
        if let Some(Json::Object(map)) = cluster.pointer_mut(pointer) {
            for field in ["username", "password", "clientId", "clientSecret"] {
                map.remove(field);
            }
        }
    }
}
