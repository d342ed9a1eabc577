//! Rendering: specs in, components of Kubernetes objects out. Pure: no filesystem, environment,
//! clock or randomness; secret values arrive through [`SecretInputs`] and the master key.
//!
//! `render` returns, per cluster, its components (each a directory of the output tree) with
//! their objects and their plaintext Secrets. Plaintext Secrets never leave memory: the
//! tree stage ([`crate::tree`]) seals them before anything is written.

pub mod check;
pub mod cluster;
pub mod confz;
pub mod gitops;
pub mod graph;
pub mod memo;
pub mod names;
pub mod operator;
pub mod resource;
pub mod server;
pub mod templates;
pub mod tenant;
pub mod values;

pub use graph::Graph;
pub use memo::Memo;
pub use resource::Resource;
pub use templates::Templates;

use crate::secrets::resolve::{SecretInputs, resolve};
use crate::secrets::{MasterKey, PlainSecret};
use crate::spec::diagnostic::FileTable;
use crate::spec::model::{GitopsEngine, SealingBackend, SecretSource};
use crate::spec::yaml::Origin;
use crate::spec::{Diagnostic, Object, Spec};
use rayon::prelude::*;
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
    /// The tfrs-operator overrides read from the environment at render time (`OPERATOR_HELM_REPO_URL`,
    /// `OPERATOR_CHART_VERSION`, `OPERATOR_IMAGE_TAG`, `OPERATOR_RELEASE_NAME`), by name.
    pub operator_overrides: BTreeMap<String, String>,
}

/// One component: a directory of objects applied together, after its dependencies.
#[derive(Debug, Clone)]
pub struct Component {
    /// Its id, the path below `components/` (e.g. `cluster/cert-manager`).
    pub id: String,
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
    /// What the next render into the same output directory may reuse (empty without a memo).
    pub memo: memo::Table,
    /// How many templated units the memo gave back instead of rendering them.
    pub reused: usize,
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
    render_with_memo(spec, files, options, inputs, master, None)
}

/// [`render`], reusing what `memo` holds of the last render into the same output directory
/// (see [`memo`]); [`Rendered::memo`] is what to keep for the next one.
///
/// # Errors
///
/// As [`render`].
pub fn render_with_memo(
    spec: &Spec,
    files: &dyn FileTable,
    options: &Options,
    inputs: &dyn SecretInputs,
    master: Option<&MasterKey>,
    memo: Option<&Memo<'_>>,
) -> Result<Rendered, Problems> {
    let env =
        options.templates.environment().map_err(|error| Problems { diagnostics: vec![template_diagnostic(&error)], environment: false })?;
    let mut context = Context::new(&env, files, inputs, master, options, memo);
    let mut clusters = Vec::new();
    for cluster in &spec.clusters {
        if let Some(rendered) = cluster::render(&mut context, spec, cluster) {
            clusters.push(rendered);
        }
    }
    if context.errors.is_empty() {
        Ok(Rendered { clusters, warnings: context.warnings, resolved: context.resolved, memo: context.recorded, reused: context.reused })
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
    /// Templates queued for [`Context::render_jobs`].
    pub(crate) jobs: Vec<Job>,
    /// The last render's memo, when there is one.
    pub(crate) memo: Option<&'a Memo<'a>>,
    /// The memo entries of this render.
    pub(crate) recorded: memo::Table,
    /// How many of them the memo gave back.
    pub(crate) reused: usize,
}

impl<'a> Context<'a> {
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

    /// Queues template `name` with `values` for component `component`: its objects are rendered
    /// and checked by [`Context::render_jobs`], in parallel with the other components'.
    pub(crate) fn defer(&mut self, component: &str, name: &str, values: Json, layered: bool, scope: check::Scope, origin: Origin) {
        self.jobs.push(Job { component: component.to_owned(), template: name.to_owned(), values, layered, scope, origin });
    }

    /// Renders every queued template of cluster `cluster` in parallel and puts the objects in
    /// their components (matched by id). Layered jobs see their own values over `base` (the
    /// shared values, converted once per cluster, whose memo digest is `base_digest`): a
    /// component's own keys win. A job the memo holds is not rendered. Problems are recorded in
    /// queue order, so the report does not depend on scheduling.
    pub(crate) fn render_jobs(&mut self, cluster: &str, base: &minijinja::Value, base_digest: &[u8; 32], components: &mut [Component]) {
        let jobs = std::mem::take(&mut self.jobs);
        let (env, memo) = (self.env, self.memo);
        let root = crate::layout::cluster_dir(cluster);
        let done: Vec<(String, Done)> = jobs
            .into_par_iter()
            .map(|job| {
                let key = format!("{cluster}/{}", job.component);
                let dir = format!("{root}/components/{}", job.component);
                let base = job.layered.then_some((base, base_digest));
                let done = render_unit(env, memo, key, &dir, &job.template, &job.values, base, &job.scope, job.origin);
                (job.component, done)
            })
            .collect();
        let index: std::collections::HashMap<String, usize> = components.iter().enumerate().map(|(i, c)| (c.id.clone(), i)).collect();
        for (component, done) in done {
            if let (Some(objects), Some(&i)) = (self.finish(done), index.get(&component)) {
                components[i].objects.extend(objects);
            }
        }
    }

    /// A context with nothing collected yet.
    fn new(
        env: &'a minijinja::Environment<'static>,
        files: &'a dyn FileTable,
        inputs: &'a dyn SecretInputs,
        master: Option<&'a MasterKey>,
        options: &'a Options,
        memo: Option<&'a Memo<'a>>,
    ) -> Context<'a> {
        Context {
            env,
            files,
            inputs,
            master,
            errors: Vec::new(),
            warnings: Vec::new(),
            options,
            environment: false,
            resolved: Vec::new(),
            jobs: Vec::new(),
            memo,
            recorded: memo::Table::new(),
            reused: 0,
        }
    }

    /// A context sharing this one's environment, inputs and memo, with nothing collected yet
    /// (for a unit rendered on another thread; see [`Context::absorb`]).
    pub(crate) fn child(&self) -> Context<'a> {
        Context::new(self.env, self.files, self.inputs, self.master, self.options, self.memo)
    }

    /// Takes in what a [`Context::child`] collected.
    pub(crate) fn absorb(&mut self, child: Context<'_>) {
        debug_assert!(child.jobs.is_empty(), "a child renders its own templates");
        self.errors.extend(child.errors);
        self.warnings.extend(child.warnings);
        self.environment |= child.environment;
        self.resolved.extend(child.resolved);
        self.recorded.extend(child.recorded);
        self.reused += child.reused;
    }

    /// Records what rendering a unit gave: its problems, its memo entry; returns its objects.
    pub(crate) fn finish(&mut self, done: Done) -> Option<Vec<Resource>> {
        if let Some((key, entry, reused)) = done.memo {
            self.recorded.insert(key, entry);
            self.reused += usize::from(reused);
        }
        match done.result {
            Ok(objects) => Some(objects),
            Err(diagnostics) => {
                self.errors.extend(diagnostics);
                None
            }
        }
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
        self.defer(&id, template, values, true, scope, origin);
        for secret in &mut secrets {
            cluster::add_secret_labels(secret, cluster, &id);
        }
        Component {
            depends_on: frame.graph.dependencies(&id).to_vec(),
            depth: frame.depths.get(&id).copied().unwrap_or(0),
            timeout: timeout.to_owned(),
            id,
            objects: Vec::new(),
            secrets,
        }
    }
}

/// A component's template, queued while the cluster's components are assembled (which needs
/// `&mut Context`: secrets are resolved in order) and rendered afterwards, in parallel.
pub(crate) struct Job {
    component: String,
    template: String,
    values: Json,
    /// Whether `values` are layered over the cluster's shared values.
    layered: bool,
    scope: check::Scope,
    origin: Origin,
}

/// The memo's inputs digest of template `template` checked against `scope`, with `values`
/// layered over shared values of digest `base` (when some).
pub(crate) fn scoped_digest(template: &str, scope: &check::Scope, base: Option<&[u8; 32]>, values: &Json) -> [u8; 32] {
    let namespaces: Vec<&str> = scope.namespaces.iter().map(String::as_str).collect();
    let kinds: Vec<&str> = scope.cluster_kinds.iter().map(String::as_str).collect();
    let (namespaces, kinds) = (namespaces.join("\n"), kinds.join("\n"));
    memo::inputs_digest(
        &[
            template.as_bytes(),
            scope.component.as_bytes(),
            scope.cluster.as_bytes(),
            namespaces.as_bytes(),
            kinds.as_bytes(),
            base.map_or(&[][..], |d| &d[..]),
        ],
        values,
    )
}

/// What rendering one templated unit gave: its objects or its problems, and its memo entry
/// (with whether the memo gave it back).
pub(crate) struct Done {
    result: Result<Vec<Resource>, Vec<Diagnostic>>,
    memo: Option<(String, memo::Entry, bool)>,
}

/// Renders one templated unit: template `template` with values `own`, layered over `base`
/// (the shared values, with their digest) when given, checked against `scope`; its objects go
/// below `dir`. With a memo, the unit is memo job `key`: the memo's objects are taken when its
/// stamp still holds, and a new entry is recorded otherwise.
#[allow(clippy::too_many_arguments)]
pub(crate) fn render_unit(
    env: &minijinja::Environment<'static>,
    memo: Option<&Memo<'_>>,
    key: String,
    dir: &str,
    template: &str,
    own: &Json,
    base: Option<(&minijinja::Value, &[u8; 32])>,
    scope: &check::Scope,
    origin: Origin,
) -> Done {
    let Some(memo) = memo else {
        return Done { result: render_checked(env, template, layered(own, base), scope, origin), memo: None };
    };
    let inputs = scoped_digest(template, scope, base.map(|(_, digest)| digest), own);
    if let Some((objects, entry)) = memo.lookup(&key, &inputs) {
        return Done { result: Ok(objects), memo: Some((key, entry, true)) };
    }
    let result = render_checked(env, template, layered(own, base), scope, origin);
    let entry = result.as_ref().ok().map(|objects| memo.record(&key, &inputs, dir, objects));
    Done { result, memo: entry.map(|entry| (key, entry, false)) }
}

/// `own` as a template value, over `base` when given (a component's own keys win).
fn layered(own: &Json, base: Option<(&minijinja::Value, &[u8; 32])>) -> minijinja::Value {
    let own = minijinja::Value::from(minijinja::value::Serde(own));
    match base {
        Some((base, _)) => minijinja::context! { ..own, ..base.clone() },
        None => own,
    }
}

/// Renders template `name` with `values` and checks every object it yields; problems carry
/// `origin`.
pub(crate) fn render_checked(
    env: &minijinja::Environment<'static>,
    name: &str,
    values: minijinja::Value,
    scope: &check::Scope,
    origin: Origin,
) -> Result<Vec<Resource>, Vec<Diagnostic>> {
    match env.get_template(name).and_then(|template| template.render(values)) {
        Ok(text) => check::objects(name, &text, scope)
            .map_err(|problems| problems.into_iter().map(|message| Diagnostic::error(origin, scope.component.clone(), message)).collect()),
        Err(error) => {
            let mut diagnostic = template_diagnostic(&error);
            diagnostic.origin = origin;
            Err(vec![diagnostic])
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
