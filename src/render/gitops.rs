//! The GitOps entry points of a cluster: one Flux Kustomization or Argo CD Application per
//! component (from `templates/gitops/`), and for Argo CD the health check of its Applications.

use super::check::Scope;
use super::engine::{Context, Done, labels, render_unit};
use super::names::{ARGOCD_NAMESPACE, FLUX_NAMESPACE};
use super::{Component, Resource};
use crate::layout;
use crate::spec::Object;
use crate::spec::model::{ClusterSpec, GitopsEngine};
use rayon::prelude::*;
use serde::Serialize;
use serde_json::{Value as Json, json};
use std::collections::BTreeSet;

/// The values of a GitOps template (`gitops/flux.yaml`, `gitops/argocd.yaml`), over the
/// cluster's shared values (docs/templates.md, "GitOps templates").
#[derive(Serialize)]
struct GitopsValues<'a> {
    /// The labels of the `gitops` component.
    labels: &'a Json,
    /// The component this entry point applies.
    component: GitopsComponent<'a>,
}

/// One component, as its GitOps entry point sees it.
#[derive(Serialize)]
struct GitopsComponent<'a> {
    /// Its id (`cluster/cert-manager`).
    id: &'a str,
    /// The GitOps object's name ([`gitops_name`]).
    name: &'a str,
    /// Its directory in the repository (`./clusters/<cluster>/components/<id>`).
    path: String,
    /// The GitOps names of the components it waits for.
    depends_on: Vec<&'a str>,
    /// Its depth in the graph (Argo CD's sync wave).
    depth: usize,
    /// How long the engine waits for it.
    timeout: &'a str,
    /// Whether the engine waits for it to be ready.
    wait: bool,
}

/// The name of a component's GitOps object: `<cluster>-<component path with dashes>`, unique
/// across clusters that share one Argo CD.
#[must_use]
pub fn gitops_name(cluster: &str, component: &Component) -> String {
    let tail = component
        .id
        .strip_prefix("cluster/")
        .unwrap_or(&component.id)
        .replace("namespaces/", "")
        .replace("/servers/", "/")
        .replace('/', "-");
    format!("{cluster}-{tail}")
}

/// Renders the GitOps entry points of a cluster: one Flux Kustomization or Argo CD Application
/// per component.
///
/// The shared values are converted to a template value once and merged lazily under each
/// component's own values; components render in parallel. A component given back with its
/// namespace (`render::unit`) brings its entry back with it.
pub(crate) fn gitops_objects(
    context: &mut Context<'_>,
    cluster: &Object<ClusterSpec>,
    components: &mut [Component],
    values: &Json,
    values_digest: &[u8; 32],
) -> Option<Vec<Resource>> {
    let name = cluster.name();
    let (template, scope) = engine_template(cluster);
    let origin = cluster.locate("spec.gitops");
    let given: Vec<_> = components.iter_mut().map(|component| component.gitops.take()).collect();
    let components = &*components;
    let names: rustc_hash::FxHashMap<&str, String> = components.par_iter().map(|c| (c.id.as_str(), gitops_name(name, c))).collect();
    let base = minijinja::Value::from(minijinja::value::Serde(values));
    let labels = labels(name, "gitops");
    let (env, memo) = (context.env, context.memo);
    let dir = layout::gitops_dir(name);
    let done: Vec<Done> = components
        .par_iter()
        .zip(given)
        .map(|(component, given)| {
            // NB: given back with its namespace (`render::unit`).
            if let Some((objects, entry)) = given {
                return Done::given_back(objects, entry);
            }
            let values = GitopsValues {
                labels: &labels,
                component: GitopsComponent {
                    id: &component.id,
                    name: &names[component.id.as_str()],
                    path: format!("./{}", layout::component_dir(name, &component.id)),
                    depends_on: component.depends_on.iter().map(|d| names.get(d.as_str()).map_or("", String::as_str)).collect(),
                    depth: component.depth,
                    timeout: &component.timeout,
                    // A component of PersistentVolumeClaims only is not waited for: with a
                    // `WaitForFirstConsumer` class its claims stay Pending until a consumer
                    // is scheduled, and the consumers wait for this component.
                    wait: !component.objects.iter().all(|o| o.id.kind == "PersistentVolumeClaim"),
                },
            };
            let own = super::engine::Values::alone(serde_json::to_value(&values).unwrap_or(Json::Null));
            let key = super::memo::gitops_job(name, &component.id);
            render_unit(env, memo, key, &dir, template, &own, Some((&base, values_digest)), &scope, origin)
        })
        .collect();
    let mut out = Vec::new();
    let mut failed = false;
    for done in done {
        match context.finish(done) {
            Some(objects) => out.extend(objects),
            None => failed = true,
        }
    }
    if cluster.spec.gitops.engine == GitopsEngine::Argocd {
        out.push(argocd_health_check(name));
    }
    (!failed).then_some(out)
}

/// The template of a cluster's GitOps entries, and the scope they are checked against.
fn engine_template(cluster: &Object<ClusterSpec>) -> (&'static str, Scope) {
    let (template, namespace) = match cluster.spec.gitops.engine {
        GitopsEngine::Flux => ("gitops/flux.yaml", FLUX_NAMESPACE),
        GitopsEngine::Argocd => ("gitops/argocd.yaml", ARGOCD_NAMESPACE),
    };
    let scope = Scope {
        component: "gitops".to_owned(),
        cluster: cluster.name().to_owned(),
        namespaces: std::iter::once(namespace.to_owned()).collect(),
        cluster_kinds: BTreeSet::new(),
    };
    (template, scope)
}

/// Argo CD's health check for `argoproj.io/Application`, which Argo CD does not ship: without
/// it an app of apps is Healthy as soon as its children exist, and sync waves do not wait for
/// a child to be healthy. It is one key of `argocd-cm`, applied server-side so that only that
/// key (and our labels) is ours; Argo CD never prunes or deletes the ConfigMap for us.
fn argocd_health_check(cluster: &str) -> Resource {
    Resource::from_json(&argocd_health_check_body(cluster)).ok().flatten().expect("a fixed ConfigMap is an object")
}

/// The `argocd-cm` ConfigMap with only the Application health check (see
/// `argocd_health_check`), as JSON: `tfrs bootstrap` applies it before the root Application.
#[must_use]
pub fn argocd_health_check_body(cluster: &str) -> Json {
    const LUA: &str = "health = {status = \"Progressing\", message = \"\"}\n\
        if obj.status ~= nil and obj.status.health ~= nil then\n\
        \x20 health.status = obj.status.health.status\n\
        \x20 if obj.status.health.message ~= nil then health.message = obj.status.health.message end\n\
        end\n\
        return health\n";
    let mut labels = labels(cluster, "gitops");
    labels["app.kubernetes.io/part-of"] = json!("argocd");
    labels["app.kubernetes.io/name"] = json!("argocd-cm");
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "argocd-cm",
            "namespace": ARGOCD_NAMESPACE,
            "labels": labels,
            "annotations": {
                "argocd.argoproj.io/sync-wave": "-1",
                "argocd.argoproj.io/sync-options": "ServerSideApply=true,Prune=false,Delete=false",
            },
        },
        "data": {"resource.customizations.health.argoproj.io_Application": LUA},
    })
}
