//! Rendering: specs in, components of Kubernetes objects out. Pure: no filesystem, environment,
//! clock or randomness; secret values arrive through [`SecretInputs`] and the master key.
//!
//! `render` returns, per cluster, its components (each a directory of the output tree) with
//! their objects and their plaintext Secrets. Plaintext Secrets never leave memory: the
//! [`tree`] stage seals them before anything is written.

pub mod check;
pub mod cluster;
pub mod graph;
pub mod resource;
pub mod server;
pub mod templates;
pub mod tenant;
pub mod tree;

pub use graph::Graph;
pub use resource::Resource;
pub use templates::Templates;

use crate::secrets::resolve::{SecretInputs, resolve};
use crate::secrets::{MasterKey, PlainSecret};
use crate::spec::diagnostic::FileTable;
use crate::spec::model::{GitopsEngine, SealingBackend, SecretSource};
use crate::spec::yaml::Origin;
use crate::spec::{Diagnostic, Object, Spec};
use serde_json::{Value as Json, json};
use std::collections::BTreeMap;
use zeroize::Zeroizing;

/// Label every object carries: who manages it.
pub const MANAGED_BY: (&str, &str) = ("app.kubernetes.io/managed-by", "tfrs");
/// Label every object carries: what it belongs to.
pub const PART_OF: &str = "app.kubernetes.io/part-of";
/// Label naming the component an object belongs to.
pub const COMPONENT: &str = "app.kubernetes.io/component";
/// Label naming the cluster an object belongs to.
pub const CLUSTER_LABEL: &str = "tfrs.turingfocus.cn/cluster";

/// Render options.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// The templates (built-ins, possibly overridden).
    pub templates: Templates,
    /// The seed-002 overrides read at render time (`OPERATOR_HELM_REPO_URL`,
    /// `OPERATOR_CHART_VERSION`, `OPERATOR_IMAGE_TAG`, `OPERATOR_RELEASE_NAME`), by name.
    pub operator_overrides: BTreeMap<String, String>,
}

/// One component: a directory of objects applied together, after its dependencies.
#[derive(Debug, Clone)]
pub struct Component {
    /// Its id, the path below `components/` (e.g. `cluster/cert-manager`).
    pub id: String,
    /// Name of its GitOps object (Flux Kustomization or Argo CD Application).
    pub name: String,
    /// Ids of the components it waits for.
    pub depends_on: Vec<String>,
    /// Depth in the graph (Argo CD sync wave).
    pub depth: usize,
    /// Rendered objects (never a Secret).
    pub objects: Vec<Resource>,
    /// Secrets to seal, in memory only.
    pub secrets: Vec<PlainSecret>,
    /// How long Flux waits for it to become ready.
    pub timeout: String,
}

/// Everything rendered for one cluster.
#[derive(Debug, Clone)]
pub struct RenderedCluster {
    /// The cluster name.
    pub name: String,
    /// Its GitOps engine.
    pub engine: GitopsEngine,
    /// Its sealing backend.
    pub backend: SealingBackend,
    /// Components in dependency order.
    pub components: Vec<Component>,
    /// The dependency graph.
    pub graph: Graph,
    /// The GitOps entry points (one per component).
    pub gitops: Vec<Resource>,
}

/// What `render` returns.
#[derive(Debug, Clone, Default)]
pub struct Rendered {
    /// Every cluster.
    pub clusters: Vec<RenderedCluster>,
    /// Problems that do not stop the render.
    pub warnings: Vec<Diagnostic>,
    /// Every credential resolved while rendering (for `tfrs audit`), by logical path.
    pub resolved: Vec<ResolvedSecret>,
}

/// A credential's plaintext and where it belongs. Never printed: `Debug` shows the path only.
#[derive(Clone)]
pub struct ResolvedSecret {
    /// Its logical path, e.g. `cluster/demo/namespace/acme-corp/postgresql/password`.
    pub path: String,
    /// Its spec field, e.g. `spec.postgresql.password`.
    pub field: String,
    /// The plaintext.
    pub value: Zeroizing<Vec<u8>>,
}

impl std::fmt::Debug for ResolvedSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResolvedSecret").field("path", &self.path).finish_non_exhaustive()
    }
}

/// Why a render failed: every problem found, and whether any comes from the environment.
#[derive(Debug, Clone, Default)]
pub struct Problems {
    /// Every problem, each with the spec location it comes from.
    pub diagnostics: Vec<Diagnostic>,
    /// Some problem is the environment's (a missing master key, an unset variable, an
    /// unreadable file, an invalid render-time override) rather than the spec's or a template's.
    pub environment: bool,
}

/// Renders every cluster of `spec`.
///
/// # Errors
///
/// Every problem found (unresolvable secrets, template errors, rendered objects that fail the
/// checks), each as a diagnostic with the spec location it comes from.
pub fn render(
    spec: &Spec,
    files: &dyn FileTable,
    options: &Options,
    inputs: &dyn SecretInputs,
    master: Option<&MasterKey>,
) -> Result<Rendered, Problems> {
    let env =
        options.templates.environment().map_err(|error| Problems { diagnostics: vec![template_diagnostic(&error)], environment: false })?;
    let mut context = Context {
        env: &env,
        files,
        inputs,
        master,
        errors: Vec::new(),
        warnings: Vec::new(),
        options,
        environment: false,
        resolved: Vec::new(),
    };
    let mut clusters = Vec::new();
    for cluster in &spec.clusters {
        if let Some(rendered) = cluster::render(&mut context, spec, cluster) {
            clusters.push(rendered);
        }
    }
    if context.errors.is_empty() {
        Ok(Rendered { clusters, warnings: context.warnings, resolved: context.resolved })
    } else {
        Err(Problems { diagnostics: context.errors, environment: context.environment })
    }
}

/// What every component of one cluster is rendered against.
pub(crate) struct Frame<'a> {
    /// The cluster.
    pub(crate) cluster: &'a Object<crate::spec::model::ClusterSpec>,
    /// The whole component graph.
    pub(crate) graph: &'a Graph,
    /// Depth of every component.
    pub(crate) depths: &'a BTreeMap<String, usize>,
    /// Values every template sees, converted for the templates once.
    pub(crate) base: &'a minijinja::Value,
    /// The pull Secret, when the registry has credentials.
    pub(crate) pull: Option<&'a PlainSecret>,
    /// `flux-system` or `argocd`.
    pub(crate) engine_namespace: &'a str,
}

/// State shared while rendering: the template environment, secret inputs, collected problems.
pub(crate) struct Context<'a> {
    pub(crate) env: &'a minijinja::Environment<'static>,
    pub(crate) files: &'a dyn FileTable,
    pub(crate) inputs: &'a dyn SecretInputs,
    pub(crate) master: Option<&'a MasterKey>,
    pub(crate) errors: Vec<Diagnostic>,
    pub(crate) warnings: Vec<Diagnostic>,
    pub(crate) options: &'a Options,
    /// Whether a recorded error is the environment's.
    pub(crate) environment: bool,
    /// Every credential resolved so far.
    pub(crate) resolved: Vec<ResolvedSecret>,
}

impl Context<'_> {
    /// Resolves a secret source of `object` at `field` (e.g. `spec.imageRegistry.password`),
    /// deriving generated values over `logical_path`. Records an error and returns `None` when
    /// it cannot be resolved.
    pub(crate) fn secret<S>(
        &mut self,
        object: &Object<S>,
        field: &str,
        source: &SecretSource,
        logical_path: &str,
    ) -> Option<Zeroizing<Vec<u8>>> {
        let origin = object.locate(field);
        let spec_file = self.files.name(origin.file).to_owned();
        match resolve(source, logical_path, &spec_file, self.inputs, self.master) {
            Ok(value) => {
                self.resolved.push(ResolvedSecret { path: logical_path.to_owned(), field: field.to_owned(), value: value.clone() });
                Some(value)
            }
            Err(error) => {
                self.errors.push(Diagnostic::error(origin, field, error.to_string()));
                self.environment = true;
                None
            }
        }
    }

    /// As [`Context::secret`], for a value that goes into a text format (TOML, JSON, an env
    /// file): it must be UTF-8, or it is an error (never silently altered).
    pub(crate) fn secret_text<S>(
        &mut self,
        object: &Object<S>,
        field: &str,
        source: &SecretSource,
        logical_path: &str,
    ) -> Option<Zeroizing<String>> {
        let bytes = self.secret(object, field, source, logical_path)?;
        match std::str::from_utf8(&bytes) {
            Ok(text) => Some(Zeroizing::new(text.to_owned())),
            Err(_) => {
                self.errors.push(Diagnostic::error(
                    object.locate(field),
                    field,
                    "the value is not UTF-8 text, which this credential must be",
                ));
                self.environment = true;
                None
            }
        }
    }

    /// Renders template `name` with `values` and checks every object it yields.
    pub(crate) fn objects(&mut self, name: &str, values: &Json, scope: &check::Scope, origin: Origin) -> Vec<Resource> {
        self.objects_value(name, minijinja::Value::from(minijinja::value::Serde(values)), scope, origin)
    }

    /// As [`Context::objects`], with `values` layered over `base` (already converted once per
    /// cluster): a component's own keys win. Converting the shared values once instead of for
    /// every component is a quarter of a large render.
    pub(crate) fn objects_over(
        &mut self,
        name: &str,
        values: &Json,
        base: &minijinja::Value,
        scope: &check::Scope,
        origin: Origin,
    ) -> Vec<Resource> {
        let own = minijinja::Value::from(minijinja::value::Serde(values));
        self.objects_value(name, minijinja::context! { ..own, ..base.clone() }, scope, origin)
    }

    /// Renders one tenant or server component in `namespace`: its template over the frame's
    /// shared values, its Secrets labelled, its place in the graph.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn namespaced_component(
        &mut self,
        frame: &Frame<'_>,
        namespace: &str,
        id: String,
        template: &str,
        values: &Json,
        origin: Origin,
        mut secrets: Vec<PlainSecret>,
        timeout: &str,
    ) -> Component {
        let cluster = frame.cluster.name();
        let scope = check::Scope {
            component: id.clone(),
            cluster: cluster.to_owned(),
            namespaces: [namespace.to_owned(), frame.engine_namespace.to_owned()].into_iter().collect(),
            cluster_kinds: std::collections::BTreeSet::new(),
        };
        let mut values = values.clone();
        values["labels"] = labels(cluster, &id);
        let objects = self.objects_over(template, &values, frame.base, &scope, origin);
        for secret in &mut secrets {
            cluster::add_secret_labels(secret, cluster, &id);
        }
        let tail = id.strip_prefix("namespaces/").unwrap_or(&id).replace("/servers/", "-").replace('/', "-");
        Component {
            name: tail,
            depends_on: frame.graph.dependencies(&id).to_vec(),
            depth: frame.depths.get(&id).copied().unwrap_or(0),
            timeout: timeout.to_owned(),
            id,
            objects,
            secrets,
        }
    }

    fn objects_value(&mut self, name: &str, values: minijinja::Value, scope: &check::Scope, origin: Origin) -> Vec<Resource> {
        let rendered = self.env.get_template(name).and_then(|template| template.render(values));
        match rendered {
            Ok(text) => match check::objects(name, &text, scope) {
                Ok(objects) => objects,
                Err(problems) => {
                    self.errors.extend(problems.into_iter().map(|message| Diagnostic::error(origin, scope.component.clone(), message)));
                    Vec::new()
                }
            },
            Err(error) => {
                let mut diagnostic = template_diagnostic(&error);
                diagnostic.origin = origin;
                self.errors.push(diagnostic);
                Vec::new()
            }
        }
    }
}

fn template_diagnostic(error: &minijinja::Error) -> Diagnostic {
    let mut message = format!("template error: {}", error.kind());
    if let Some(detail) = error.detail() {
        message.push_str(&format!(": {detail}"));
    }
    if let (Some(name), Some(line)) = (error.name(), error.line()) {
        message.push_str(&format!(" (in `{name}` line {line})"));
    }
    Diagnostic::error(Origin::default(), "templates", message)
}

/// The labels every object of a component carries.
#[must_use]
pub fn labels(cluster: &str, component: &str) -> Json {
    let short = component.rsplit('/').next().unwrap_or(component);
    json!({
        MANAGED_BY.0: MANAGED_BY.1,
        PART_OF: "tfrs",
        COMPONENT: short,
        CLUSTER_LABEL: cluster,
    })
}
