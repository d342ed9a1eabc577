//! The cluster-level components: what a TFRCluster installs, and what each waits for.

use super::check::Scope;
use super::engine::{Context, Frame, add_secret_labels, labels};
use super::graph::{Graph, Member};
use super::operator;
use super::stamp::Recording;
use super::values::{IngressValues, ingress_values, shared_values};
use super::{Component, RenderedCluster, server, tenant, unit};
use crate::secrets::PlainSecret;
use crate::spec::model::{ClusterSpec, GitopsEngine, SealingBackend};
use crate::spec::{Object, Spec};
use base64::Engine as _;
use rayon::prelude::*;
use serde::Serialize;
use serde_json::{Value as Json, json};
use std::collections::{BTreeMap, BTreeSet};
use zeroize::Zeroizing;

pub use super::names::{
    ARGOCD_NAMESPACE, ARGOCD_PROJECT, BILLING_AUTH_SECRET, BILLING_NAMESPACE, BILLING_STORE, BILLING_TOKEN_SECRET, FLUX_NAMESPACE, GATEWAY,
};

/// A cluster component: its name, what it waits for (the edges `docs/components.md` explains), and
/// whether the spec turns it on. Listed dependencies-first; the graph refuses anything else.
struct Definition {
    name: &'static str,
    after: &'static [&'static str],
    enabled: fn(&ClusterSpec) -> bool,
    /// Namespaces it may touch besides the engine's own (`flux-system` or `argocd`).
    namespaces: fn(&ClusterSpec) -> Vec<String>,
    cluster_kinds: &'static [&'static str],
    /// What it adds beyond the shared values: Secrets, the operator's chart settings.
    extras: fn(&mut Context<'_>, &Object<ClusterSpec>, Option<&PlainSecret>) -> Extras,
    /// How long Flux waits for it to become ready.
    timeout: fn(&ClusterSpec) -> String,
}

/// What a cluster component adds beyond the shared values.
#[derive(Default)]
struct Extras {
    /// Secrets it carries (sealed later, never templated).
    secrets: Vec<PlainSecret>,
    /// The `operator` value (`tfrs-operator` only).
    operator: Option<operator::OperatorValues>,
}

/// Nothing beyond the shared values.
fn no_extras(_: &mut Context<'_>, _: &Object<ClusterSpec>, _: Option<&PlainSecret>) -> Extras {
    Extras::default()
}

/// `image-registry`: the pull Secret, in the namespace tenants copy credentials from.
fn registry_extras(_: &mut Context<'_>, cluster: &Object<ClusterSpec>, pull: Option<&PlainSecret>) -> Extras {
    let namespace = &cluster.spec.image_registry.tenant_credentials_namespace;
    let secrets = pull.map(|pull| PlainSecret { namespace: namespace.clone(), ..pull.clone() }).into_iter().collect();
    Extras { secrets, operator: None }
}

/// `billing-store`: the billing identity's Secret.
fn billing_extras(context: &mut Context<'_>, cluster: &Object<ClusterSpec>, _: Option<&PlainSecret>) -> Extras {
    Extras { secrets: billing_secret(context, cluster).into_iter().collect(), operator: None }
}

/// `tfrs-operator`: its chart settings and the Secret giving the chart the registry credentials.
fn operator_extras(context: &mut Context<'_>, cluster: &Object<ClusterSpec>, pull: Option<&PlainSecret>) -> Extras {
    let (values, secret) = operator::values(context, cluster, pull);
    Extras { secrets: secret.into_iter().collect(), operator: Some(values) }
}

/// The default wait.
fn ten_minutes(_: &ClusterSpec) -> String {
    "10m".to_owned()
}

fn none(_: &ClusterSpec) -> Vec<String> {
    Vec::new()
}
fn always(_: &ClusterSpec) -> bool {
    true
}
fn istio(spec: &ClusterSpec) -> bool {
    spec.istio.enabled
}

const DEFINITIONS: &[Definition] = &[
    // NB: first, so that no SealedSecret is applied before its CRD and controller exist.
    Definition {
        name: "sealed-secrets",
        after: &[],
        enabled: |s| s.sealing.backend == SealingBackend::SealedSecrets && s.sealing.install_controller,
        namespaces: |s| vec![s.sealing.controller_namespace.clone()],
        cluster_kinds: &[],
        extras: no_extras,
        timeout: ten_minutes,
    },
    Definition {
        name: "cert-manager",
        after: &[],
        enabled: |s| s.cert_manager.enabled,
        namespaces: |_| vec!["cert-manager".into()],
        cluster_kinds: &[],
        extras: no_extras,
        timeout: ten_minutes,
    },
    // NB: rendered even when tfrs does not install cert-manager (`certManager.enabled: false`
    // means it is installed another way): the Gateway's Certificate needs the issuer.
    Definition {
        name: "cluster-issuer",
        after: &["cert-manager"],
        enabled: always,
        namespaces: |_| vec!["cert-manager".into()],
        cluster_kinds: &["ClusterIssuer"],
        extras: no_extras,
        timeout: ten_minutes,
    },
    Definition {
        name: "istio-base",
        after: &["cert-manager"],
        enabled: istio,
        namespaces: |_| vec!["istio-system".into()],
        cluster_kinds: &[],
        extras: no_extras,
        timeout: ten_minutes,
    },
    Definition {
        name: "istiod",
        after: &["istio-base"],
        enabled: istio,
        namespaces: |_| vec!["istio-system".into()],
        cluster_kinds: &[],
        extras: no_extras,
        timeout: ten_minutes,
    },
    Definition {
        name: "istio-ingress",
        after: &["istiod"],
        enabled: istio,
        namespaces: |_| vec!["istio-ingress".into()],
        cluster_kinds: &["IngressClass"],
        extras: no_extras,
        timeout: ten_minutes,
    },
    Definition {
        name: "gateway",
        after: &["istio-ingress", "cluster-issuer"],
        enabled: istio,
        namespaces: |_| vec!["istio-ingress".into()],
        cluster_kinds: &[],
        extras: no_extras,
        timeout: ten_minutes,
    },
    Definition {
        name: "envoyfilter-cookie",
        after: &["istiod"],
        enabled: istio,
        namespaces: |_| vec!["istio-system".into()],
        cluster_kinds: &[],
        extras: no_extras,
        timeout: ten_minutes,
    },
    Definition {
        name: "envoyfilter-lua",
        after: &["istiod"],
        enabled: istio,
        namespaces: |_| vec!["istio-system".into()],
        cluster_kinds: &[],
        extras: no_extras,
        timeout: ten_minutes,
    },
    Definition {
        name: "virtualservice",
        after: &["gateway", "envoyfilter-cookie", "envoyfilter-lua"],
        enabled: istio,
        namespaces: |_| vec!["istio-ingress".into()],
        cluster_kinds: &[],
        extras: no_extras,
        timeout: ten_minutes,
    },
    Definition {
        name: "istio-telemetry",
        after: &["istiod"],
        enabled: |s| s.istio.enabled && s.istio.telemetry,
        namespaces: |_| vec!["istio-system".into()],
        cluster_kinds: &[],
        extras: no_extras,
        timeout: ten_minutes,
    },
    Definition {
        name: "cnpg-operator",
        after: &[],
        enabled: |s| s.operators.cnpg.enabled,
        namespaces: none,
        cluster_kinds: &[],
        extras: no_extras,
        timeout: ten_minutes,
    },
    Definition {
        name: "minio-operator",
        after: &[],
        enabled: |s| s.operators.minio.enabled,
        namespaces: none,
        cluster_kinds: &[],
        extras: no_extras,
        timeout: ten_minutes,
    },
    // NB: the messaging-topology operator's webhooks need cert-manager (components.md).
    Definition {
        name: "rabbitmq-operator",
        after: &["cert-manager"],
        enabled: |s| s.operators.rabbitmq.enabled,
        namespaces: none,
        cluster_kinds: &[],
        extras: no_extras,
        timeout: ten_minutes,
    },
    Definition {
        name: "image-registry",
        after: &["sealed-secrets"],
        enabled: always,
        namespaces: |s| vec![s.image_registry.tenant_credentials_namespace.clone()],
        cluster_kinds: &[],
        extras: registry_extras,
        timeout: ten_minutes,
    },
    // Billing: the External Secrets Operator, then the store it reads from.
    Definition {
        name: "external-secrets",
        after: &[],
        enabled: |s| s.billing.enabled,
        namespaces: |_| vec![BILLING_NAMESPACE.into()],
        cluster_kinds: &[],
        extras: no_extras,
        timeout: ten_minutes,
    },
    Definition {
        name: "billing-store",
        after: &["external-secrets", "sealed-secrets"],
        enabled: |s| s.billing.enabled,
        namespaces: |_| vec![BILLING_NAMESPACE.into()],
        cluster_kinds: &["ClusterSecretStore"],
        extras: billing_extras,
        timeout: ten_minutes,
    },
    Definition {
        name: "tfrs-operator",
        after: &["image-registry"],
        enabled: |s| s.tfrs_operator.enabled,
        namespaces: |s| vec![s.tfrs_operator.namespace.clone()],
        cluster_kinds: &[],
        extras: operator_extras,
        timeout: |s| s.tfrs_operator.timeout.clone(),
    },
];

/// The cluster components' graph for a spec: enabled components only; an edge to a disabled
/// component is replaced by that component's own dependencies.
#[must_use]
pub fn graph(spec: &ClusterSpec) -> Graph {
    let mut graph = Graph::default();
    let members = DEFINITIONS.iter().map(|d| Member { name: d.name, after: d.after, external: Vec::new(), enabled: (d.enabled)(spec) });
    graph.add_group(members, |name| format!("cluster/{name}"));
    graph
}

/// The whole component graph of a cluster: its own components and every tenant namespace's.
#[must_use]
pub fn full_graph(spec: &Spec, cluster: &Object<ClusterSpec>) -> Graph {
    let mut graph = graph(&cluster.spec);
    let units = tenant::units(spec, cluster.name());
    tenant::extend_graph(&mut graph, &cluster.spec, &units);
    server::extend_graph(&mut graph, &units);
    graph
}

/// Renders one cluster: its components, then (with the tenant components) its GitOps entries.
pub(crate) fn render(context: &mut Context<'_>, spec: &Spec, cluster: &Object<crate::spec::model::ClusterSpec>) -> Option<RenderedCluster> {
    let errors_before = context.errors.len();
    let name = cluster.name().to_owned();
    let units = tenant::units(spec, &name);
    let mut graph = graph(&cluster.spec);
    tenant::extend_graph(&mut graph, &cluster.spec, &units);
    server::extend_graph(&mut graph, &units);
    let values = serde_json::to_value(shared_values(cluster)).unwrap_or(Json::Null);
    let engine_namespace = match cluster.spec.gitops.engine {
        GitopsEngine::Flux => FLUX_NAMESPACE,
        GitopsEngine::Argocd => ARGOCD_NAMESPACE,
    };
    let pull = pull_secret(context, cluster);
    // NB: the shared values are digested only for the memo (one serialization per cluster).
    let base_digest = if context.memo.is_some() { super::memo::values_digest(&values) } else { [0; 32] };
    let frame = Frame { cluster, graph: &graph, pull: pull.as_ref(), engine_namespace, base_digest };
    let base = minijinja::Value::from(minijinja::value::Serde(&values));
    // NB: the cluster's own components (whose values list every server) beside the units'.
    let (own, units) = rayon::join(
        || {
            let mut child = context.child();
            let mut components = cluster_components(&mut child, &frame, spec, &values);
            child.render_jobs(&frame, &base, &mut components);
            (components, child)
        },
        || {
            // NB: namespaces are given back whole only beside what the caller adds to the frame.
            let frame_digest = context.memo.and_then(|memo| memo.frames.get(&name)).map(|extra| unit::frame_digest(&frame, extra));
            // NB: only some namespaces when the rest of the cluster is left as it is (`parts`).
            match context.memo.and_then(|memo| memo.only.as_ref()) {
                Some(only) => {
                    let units: Vec<_> = units.iter().filter(|unit| only.contains(&unit.namespace)).cloned().collect();
                    render_units(context, &frame, &units, &base, frame_digest.as_ref())
                }
                None => render_units(context, &frame, &units, &base, frame_digest.as_ref()),
            }
        },
    );
    let parts: Vec<(Vec<Component>, Context<'_>)> = std::iter::once(own).chain(units).collect();
    // NB: sized once: a large cluster has tens of thousands of components.
    let mut components = Vec::with_capacity(parts.iter().map(|(own, _)| own.len()).sum());
    for (own, child) in parts {
        components.extend(own);
        context.absorb(child);
    }
    if context.errors.len() > errors_before {
        return None;
    }
    let gitops = super::gitops::gitops_objects(context, cluster, &mut components, &values, &base_digest)?;
    Some(RenderedCluster { name, components, gitops })
}

/// Every unit (a tenant namespace and its servers), in parallel, each in a context of its own
/// (for the caller to absorb, in unit order: its problems, credentials and memo entries) with
/// its components. A unit renders its own templates, so the values of only the units in
/// flight are held at once.
fn render_units<'a>(
    context: &Context<'a>,
    frame: &Frame<'_>,
    units: &[tenant::Unit<'_>],
    base: &minijinja::Value,
    frame_digest: Option<&[u8; 32]>,
) -> Vec<(Vec<Component>, Context<'a>)> {
    units
        .par_iter()
        .map(|unit| {
            let mut child = context.child();
            let (Some(memo), Some(frame_digest)) = (context.memo, frame_digest) else {
                let own = render_unit(&mut child, frame, unit, base);
                return (own, child);
            };
            // NB: given back whole when its stamp holds (`unit`); its reads are read again
            // through the render's inputs, so that the cluster's stamp covers them too.
            let job = unit::job(frame.cluster.name(), &unit.namespace);
            let inputs = unit::inputs(frame_digest, unit);
            if let Some((own, entries, entry)) = unit::keep(memo, frame, unit, &job, &inputs, (context.inputs, context.files)) {
                child.reused += entries.len();
                child.recorded.extend(entries);
                child.units.push(unit::Outcome::Kept { job, entry });
                return (own, child);
            }
            let recording = Recording::new(context.inputs);
            let mut local = Context::new(context.env, context.files, &recording, context.master, context.options, context.memo);
            let own = render_unit(&mut local, frame, unit, base);
            child.absorb(local);
            let components = own.iter().map(unit::Shape::of).collect();
            let outcomes = recording.into_outcomes();
            let files = unit::reads_files(outcomes.keys()).then(|| unit::files_digest(unit, context.files));
            child.units.push(unit::Outcome::Rendered { job, inputs, outcomes, files, components });
            (own, child)
        })
        .collect()
}

/// Renders one tenant namespace's components, their templates included.
fn render_unit(context: &mut Context<'_>, frame: &Frame<'_>, unit: &tenant::Unit<'_>, base: &minijinja::Value) -> Vec<Component> {
    let mut own = Vec::new();
    let credentials = tenant::render(context, frame, unit, &mut own);
    let tenant = context.memo.map(|_| server::tenant_digest(unit));
    for &server in &unit.servers {
        server::render(context, frame, unit, (server, tenant.as_ref()), &credentials, &mut own);
    }
    context.render_jobs(frame, base, &mut own);
    own
}

/// The cluster's own components, their templates queued on `context`.
fn cluster_components(context: &mut Context<'_>, frame: &Frame<'_>, spec: &Spec, shared: &Json) -> Vec<Component> {
    let (cluster, name) = (frame.cluster, frame.cluster.name());
    // NB: only cluster components see the per-server lists (hosts, routes, providers):
    // copying them into every tenant and server component made rendering quadratic.
    let ingress = ingress_values(cluster, spec);
    let mut components = Vec::new();
    for definition in DEFINITIONS {
        let id = format!("cluster/{}", definition.name);
        if !frame.graph.contains(&id) {
            continue;
        }
        let mut namespaces: BTreeSet<String> = (definition.namespaces)(&cluster.spec).into_iter().collect();
        namespaces.insert(frame.engine_namespace.to_owned());
        let scope = Scope {
            component: id.clone(),
            cluster: name.to_owned(),
            namespaces,
            cluster_kinds: definition.cluster_kinds.iter().map(|k| (*k).to_owned()).collect(),
        };
        let Extras { mut secrets, operator } = (definition.extras)(context, cluster, frame.pull);
        let values = ComponentValues { shared, ingress: &ingress, operator };
        let mut values = serde_json::to_value(values).unwrap_or(Json::Null);
        values["labels"] = labels(name, &id);
        let template = format!("cluster/{}.yaml", definition.name);
        context.defer(&id, &template, super::engine::Values::alone(values), false, scope, cluster.locate("metadata.name"));
        for secret in &mut secrets {
            add_secret_labels(secret, name, &id);
        }
        components.push(Component {
            depends_on: frame.graph.dependencies(&id).to_vec(),
            depth: frame.graph.depth(&id),
            timeout: (definition.timeout)(&cluster.spec),
            id,
            objects: Vec::new(),
            secrets,
            sealed: Vec::new(),
            gitops: None,
        });
    }
    components
}

/// The values of a cluster template: the shared values, the per-server lists and, for
/// `tfrs-operator`, its chart settings. `docs/templates.md` describes each key.
#[derive(Serialize)]
struct ComponentValues<'a> {
    #[serde(flatten)]
    shared: &'a Json,
    #[serde(flatten)]
    ingress: &'a IngressValues,
    #[serde(skip_serializing_if = "Option::is_none")]
    operator: Option<operator::OperatorValues>,
}

/// The image-pull Secret (`kubernetes.io/dockerconfigjson`), when the registry has
/// credentials. Its namespace is set by each user.
fn pull_secret(context: &mut Context<'_>, cluster: &Object<ClusterSpec>) -> Option<PlainSecret> {
    let registry = &cluster.spec.image_registry;
    let (Some(username), Some(password)) = (&registry.username, &registry.password) else { return None };
    let base = format!("cluster/{}/imageRegistry", cluster.name());
    let username = context.secret_text(cluster, "spec.imageRegistry.username", username, &format!("{base}/username"));
    let password = context.secret_text(cluster, "spec.imageRegistry.password", password, &format!("{base}/password"));
    let (user, pass) = (username?, password?);
    let mut auth = Zeroizing::new(Vec::new());
    auth.extend_from_slice(user.as_bytes());
    auth.push(b':');
    auth.extend_from_slice(pass.as_bytes());
    let config = Zeroizing::new(
        json!({"auths": {registry.server.as_str(): {
            "username": user.as_str(),
            "password": pass.as_str(),
            "auth": base64::engine::general_purpose::STANDARD.encode(auth.as_slice()),
        }}})
        .to_string(),
    );
    let mut data = BTreeMap::new();
    data.insert(".dockerconfigjson".to_owned(), Zeroizing::new(config.as_bytes().to_vec()));
    Some(PlainSecret {
        name: registry.secret_name.clone(),
        namespace: String::new(),
        kind: "kubernetes.io/dockerconfigjson".to_owned(),
        data,
        ..PlainSecret::default()
    })
}

/// The sealed Secret of the billing identity (a read-only Infisical machine identity):
/// `clientId`, `clientSecret`, `expiresAt`, read by the ClusterSecretStore.
fn billing_secret(context: &mut Context<'_>, cluster: &Object<ClusterSpec>) -> Option<PlainSecret> {
    let infisical = &cluster.spec.billing.infisical;
    let base = format!("cluster/{}/billing/infisical", cluster.name());
    let id = infisical
        .client_id
        .as_ref()
        .and_then(|s| context.secret_text(cluster, "spec.billing.infisical.clientId", s, &format!("{base}/clientId")));
    let secret = infisical
        .client_secret
        .as_ref()
        .and_then(|s| context.secret_text(cluster, "spec.billing.infisical.clientSecret", s, &format!("{base}/clientSecret")));
    let (id, secret) = (id?, secret?);
    let mut data = BTreeMap::new();
    data.insert("clientId".to_owned(), Zeroizing::new(id.as_bytes().to_vec()));
    data.insert("clientSecret".to_owned(), Zeroizing::new(secret.as_bytes().to_vec()));
    data.insert("expiresAt".to_owned(), Zeroizing::new(infisical.expires_at.as_bytes().to_vec()));
    Some(PlainSecret {
        name: BILLING_AUTH_SECRET.to_owned(),
        namespace: BILLING_NAMESPACE.to_owned(),
        kind: "Opaque".to_owned(),
        data,
        ..PlainSecret::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn definitions_are_listed_dependencies_first() {
        let mut seen = BTreeSet::new();
        for definition in DEFINITIONS {
            for after in definition.after {
                assert!(seen.contains(after), "`{}` lists `{after}` before defining it", definition.name);
            }
            seen.insert(definition.name);
        }
        let mut spec =
            ClusterSpec { tfrs_operator: crate::spec::model::TfrsOperator { enabled: true, ..Default::default() }, ..Default::default() };
        spec.billing.enabled = true;
        let graph = graph(&spec);
        assert_eq!(graph.order().len(), DEFINITIONS.len());
        assert!(!graph.has_cycle());
    }

    #[test]
    fn base_platform_edges_are_present() {
        let graph = graph(&ClusterSpec::default());
        let has = |from: &str, to: &str| graph.dependencies(&format!("cluster/{to}")).contains(&format!("cluster/{from}"));
        // The mesh chain: cert-manager -> Istio -> Istio Ingress -> Gateway -> VirtualService, ...
        assert!(has("cert-manager", "istio-base"));
        assert!(has("istio-base", "istiod"));
        assert!(has("istiod", "istio-ingress"));
        assert!(has("istio-ingress", "gateway"));
        assert!(has("istiod", "envoyfilter-cookie"));
        assert!(has("istiod", "envoyfilter-lua"));
        assert!(has("gateway", "virtualservice"));
        assert!(has("envoyfilter-cookie", "virtualservice"));
        assert!(has("istiod", "istio-telemetry"));
        assert!(graph.dependencies("cluster/cnpg-operator").is_empty());
        assert!(graph.dependencies("cluster/minio-operator").is_empty());
        // Sealed values wait for the controller that unseals them (and its CRD).
        assert!(has("sealed-secrets", "image-registry"));
        assert!(graph.dependencies("cluster/sealed-secrets").is_empty());
        let mut elsewhere = ClusterSpec::default();
        elsewhere.sealing.install_controller = false;
        assert!(super::graph(&elsewhere).dependencies("cluster/image-registry").is_empty());
    }

    #[test]
    fn disabled_components_pass_their_dependencies_on() {
        let mut spec = ClusterSpec::default();
        spec.cert_manager.enabled = false;
        let graph = graph(&spec);
        assert!(!graph.order().iter().any(|id| id == "cluster/cert-manager"));
        assert!(graph.dependencies("cluster/istio-base").is_empty());
        // The issuer stays (cert-manager installed another way) and the Gateway still waits for it.
        assert!(graph.dependencies("cluster/cluster-issuer").is_empty());
        assert_eq!(graph.dependencies("cluster/gateway"), ["cluster/cluster-issuer", "cluster/istio-ingress"]);
        spec.istio.enabled = false;
        let graph = super::graph(&spec);
        assert!(!graph.order().iter().any(|id| id.starts_with("cluster/istio") || id == "cluster/gateway"));
    }
}
