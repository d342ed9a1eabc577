//! The render engine every template family shares: the `Context` that collects problems,
//! resolved secrets and queued templates while a cluster renders; the `Frame` of one cluster;
//! templated units rendered (or given back by the memo) and their objects checked; the labels
//! every object and Secret carries. It knows nothing of any component: `cluster`, `tenant`
//! and `server` use it, it uses none of them.

use super::check;
use super::graph::Graph;
use super::memo::{self, Memo};
use super::names::{CLUSTER_LABEL, COMPONENT, MANAGED_BY, PART_OF};
use super::{Component, Options, ResolvedSecret, Resource};
use crate::secrets::resolve::{ResolveError, SecretInputs, resolve};
use crate::secrets::{MasterKey, PlainSecret, Scope as SealScope};
use crate::spec::diagnostic::FileTable;
use crate::spec::diagnostic::Rule;
use crate::spec::model::SecretSource;
use crate::spec::yaml::Origin;
use crate::spec::{Diagnostic, Object};
use rayon::prelude::*;
use serde_json::{Value as Json, json};
use std::sync::Arc;
use zeroize::Zeroizing;

/// What every component of one cluster is rendered against.
pub(crate) struct Frame<'a> {
    /// The cluster.
    pub(crate) cluster: &'a Object<crate::spec::model::ClusterSpec>,
    /// The whole component graph.
    pub(crate) graph: &'a Graph,
    /// The pull Secret, when the registry has credentials.
    pub(crate) pull: Option<&'a PlainSecret>,
    /// `flux-system` or `argocd`.
    pub(crate) engine_namespace: &'a str,
    /// The memo digest of the cluster's shared values (zeros without a memo).
    pub(crate) base_digest: [u8; 32],
}

/// State shared while rendering: the template environment, secret inputs, collected problems.
pub(crate) struct Context<'a> {
    pub(crate) env: &'a minijinja::Environment<'static>,
    pub(crate) files: &'a dyn FileTable,
    pub(crate) inputs: &'a dyn SecretInputs,
    pub(crate) master: Option<&'a MasterKey>,
    pub(crate) errors: Vec<Diagnostic>,
    pub(crate) options: &'a Options,
    /// Whether a recorded error is the environment's.
    pub(crate) environment: bool,
    /// Every credential resolved so far.
    pub(crate) resolved: Vec<ResolvedSecret>,
    /// Templates queued for [`Context::render_jobs`].
    pub(crate) jobs: Vec<Job>,
    /// The last render's memo, when there is one.
    pub(crate) memo: Option<&'a Memo<'a>>,
    /// The memo entries of this render, in the order they were made (a later entry for a key
    /// wins; gathered into a table once, at the end).
    pub(crate) recorded: Vec<(String, memo::Entry)>,
    /// How many of them the memo gave back.
    pub(crate) reused: usize,
    /// What each tenant namespace rendered with the memo says of itself (`render::unit`).
    pub(crate) units: Vec<memo::UnitOutcome>,
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
                // NB: one cause, said once: the missing master key, one unset variable, one
                // unreadable file (a `fromFile` path is relative to the spec file's directory).
                let cause = match &error {
                    ResolveError::File { .. } => {
                        format!("{}: {error}", std::path::Path::new(&spec_file).parent().unwrap_or(std::path::Path::new("")).display())
                    }
                    _ => error.to_string(),
                };
                self.errors.push(Diagnostic::error(Rule::Environment, origin, field, error.to_string()).with_cause(cause));
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
                    Rule::Environment,
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
    pub(crate) fn defer(&mut self, component: &str, name: &str, values: Values, layered: bool, scope: check::Scope, origin: Origin) {
        self.jobs.push(Job { component: component.to_owned(), template: name.to_owned(), values, layered, scope, origin });
    }

    /// Renders every queued template of the frame's cluster in parallel and puts the objects in
    /// their components (matched by id). Layered jobs see their own values over `base` (the
    /// shared values, converted once per cluster, whose memo digest is the frame's): a
    /// component's own keys win. A job the memo holds is not rendered. Problems are recorded in
    /// queue order, so the report does not depend on scheduling.
    pub(crate) fn render_jobs(&mut self, frame: &Frame<'_>, base: &minijinja::Value, components: &mut [Component]) {
        let (cluster, base_digest) = (frame.cluster.name(), &frame.base_digest);
        let jobs = std::mem::take(&mut self.jobs);
        let (env, memo) = (self.env, self.memo);
        let done: Vec<(String, Done)> = jobs
            .into_par_iter()
            .map(|job| {
                let key = memo::component_job(cluster, &job.component);
                let dir = crate::layout::component_dir(cluster, &job.component);
                let base = job.layered.then_some((base, base_digest));
                let done = render_unit(env, memo, key, &dir, &job.template, &job.values, base, &job.scope, job.origin);
                (job.component, done)
            })
            .collect();
        let index: rustc_hash::FxHashMap<String, usize> = components.iter().enumerate().map(|(i, c)| (c.id.clone(), i)).collect();
        for (component, done) in done {
            if let (Some(objects), Some(&i)) = (self.finish(done), index.get(&component)) {
                components[i].objects.extend(objects);
            }
        }
    }

    /// A context with nothing collected yet.
    pub(crate) fn new(
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
            options,
            environment: false,
            resolved: Vec::new(),
            jobs: Vec::new(),
            memo,
            recorded: Vec::new(),
            reused: 0,
            units: Vec::new(),
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
        self.environment |= child.environment;
        self.resolved.extend(child.resolved);
        self.recorded.extend(child.recorded);
        self.reused += child.reused;
        self.units.extend(child.units);
    }

    /// Records what rendering a unit gave: its problems, its memo entry; returns its objects.
    pub(crate) fn finish(&mut self, done: Done) -> Option<Vec<Resource>> {
        if let Some((key, entry, reused)) = done.memo {
            self.recorded.push((key, entry));
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
        values: &Arc<Shared>,
        origin: Origin,
        secrets: Vec<PlainSecret>,
        timeout: &str,
    ) -> Component {
        let scope = namespaced_scope(frame, namespace, &id);
        let values = Values { shared: Arc::clone(values), labels: Some(labels(frame.cluster.name(), &id)) };
        self.defer(&id, template, values, true, scope, origin);
        namespaced_shell(frame, id, secrets, timeout)
    }

    /// The component [`Context::namespaced_component`] would render, taken from the memo
    /// without its values: `digest` stands for them (see [`Shared::with_digest`]). An error when
    /// the memo does not hold it (or there is no memo): then nothing is recorded and `secrets`
    /// come back.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn kept_component(
        &mut self,
        frame: &Frame<'_>,
        namespace: &str,
        id: &str,
        template: &str,
        digest: &[u8; 32],
        secrets: Vec<PlainSecret>,
        timeout: &str,
    ) -> Result<Component, Vec<PlainSecret>> {
        let Some(memo) = self.memo else { return Err(secrets) };
        let cluster = frame.cluster.name();
        let scope = namespaced_scope(frame, namespace, id);
        let values = Values { shared: Arc::new(Shared::with_digest(Json::Null, *digest)), labels: Some(labels(cluster, id)) };
        let key = memo::component_job(cluster, id);
        let Some((objects, entry)) = memo.lookup(&key, &scoped_digest(template, &scope, Some(&frame.base_digest), &values)) else {
            return Err(secrets);
        };
        let mut component = namespaced_shell(frame, id.to_owned(), secrets, timeout);
        component.objects = self.finish(Done { result: Ok(objects), memo: Some((key, entry, true)) }).unwrap_or_default();
        Ok(component)
    }
}

/// The check scope of a tenant or server component: its namespace and the GitOps engine's.
fn namespaced_scope(frame: &Frame<'_>, namespace: &str, id: &str) -> check::Scope {
    check::Scope {
        component: id.to_owned(),
        cluster: frame.cluster.name().to_owned(),
        namespaces: [namespace.to_owned(), frame.engine_namespace.to_owned()].into_iter().collect(),
        cluster_kinds: std::collections::BTreeSet::new(),
    }
}

/// A tenant or server component before its objects: its place in the graph, its Secrets
/// labelled.
fn namespaced_shell(frame: &Frame<'_>, id: String, mut secrets: Vec<PlainSecret>, timeout: &str) -> Component {
    for secret in &mut secrets {
        add_secret_labels(secret, frame.cluster.name(), &id);
    }
    Component {
        depends_on: frame.graph.dependencies(&id).to_vec(),
        depth: frame.graph.depth(&id),
        timeout: timeout.to_owned(),
        id,
        objects: Vec::new(),
        secrets,
        sealed: Vec::new(),
        gitops: None,
    }
}

/// A component's template, queued while the cluster's components are assembled (which needs
/// `&mut Context`: secrets are resolved in order) and rendered afterwards, in parallel.
pub(crate) struct Job {
    component: String,
    template: String,
    values: Values,
    /// Whether `values` are layered over the cluster's shared values.
    layered: bool,
    scope: check::Scope,
    origin: Origin,
}

/// The memo's inputs digest of template `template` checked against `scope`, with `values`
/// layered over shared values of digest `base` (when some).
pub(crate) fn scoped_digest(template: &str, scope: &check::Scope, base: Option<&[u8; 32]>, values: &Values) -> [u8; 32] {
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
            values.shared.digest(),
        ],
        values.labels.as_ref().unwrap_or(&Json::Null),
    )
}

/// Values shared by the components of one server or namespace (one copy, digested once).
pub(crate) struct Shared {
    json: Json,
    digest: std::sync::OnceLock<[u8; 32]>,
}

impl Shared {
    pub(crate) fn new(json: Json) -> Shared {
        Shared { json, digest: std::sync::OnceLock::new() }
    }

    /// Values whose memo digest is `digest`, not the digest of their JSON: a digest of
    /// everything the values are made from, which a caller can compute, and look the
    /// components up by ([`Context::kept_component`]), without making the values.
    pub(crate) fn with_digest(json: Json, digest: [u8; 32]) -> Shared {
        Shared { json, digest: std::sync::OnceLock::from(digest) }
    }

    /// The shared values of `values` as JSON (null if they cannot be).
    pub(crate) fn of(values: impl serde::Serialize) -> Arc<Shared> {
        Arc::new(Shared::new(serde_json::to_value(values).unwrap_or(Json::Null)))
    }

    /// SHA-256 of the values as JSON (see [`memo::inputs_digest`]), computed once.
    fn digest(&self) -> &[u8; 32] {
        self.digest.get_or_init(|| memo::inputs_digest(&[b"values"], &self.json))
    }
}

/// A unit's values: shared ones, with the component's own `labels` over them when given.
pub(crate) struct Values {
    pub(crate) shared: Arc<Shared>,
    pub(crate) labels: Option<Json>,
}

impl Values {
    /// Values of one unit alone.
    pub(crate) fn alone(json: Json) -> Values {
        Values { shared: Arc::new(Shared::new(json)), labels: None }
    }

    /// The values as the template sees them: the shared ones, `labels` set over them.
    fn json(&self) -> Json {
        let mut json = self.shared.json.clone();
        if let Some(labels) = &self.labels {
            json["labels"] = labels.clone();
        }
        json
    }
}

/// What rendering one templated unit gave: its objects or its problems, and its memo entry
/// (with whether the memo gave it back).
pub(crate) struct Done {
    result: Result<Vec<Resource>, Vec<Diagnostic>>,
    memo: Option<(String, memo::Entry, bool)>,
}

impl Done {
    /// A unit the memo gave back: its objects, kept, and its entry `(job, entry)`.
    pub(crate) fn given_back(objects: Vec<Resource>, (job, entry): (String, memo::Entry)) -> Done {
        Done { result: Ok(objects), memo: Some((job, entry, true)) }
    }
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
    own: &Values,
    base: Option<(&minijinja::Value, &[u8; 32])>,
    scope: &check::Scope,
    origin: Origin,
) -> Done {
    let Some(memo) = memo else {
        return Done { result: render_checked(env, template, layered(&own.json(), base), scope, origin), memo: None };
    };
    let inputs = scoped_digest(template, scope, base.map(|(_, digest)| digest), own);
    if let Some((objects, entry)) = memo.lookup(&key, &inputs) {
        return Done { result: Ok(objects), memo: Some((key, entry, true)) };
    }
    let result = render_checked(env, template, layered(&own.json(), base), scope, origin);
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
        Ok(text) => check::objects(name, &text, scope).map_err(|problems| {
            problems.into_iter().map(|message| Diagnostic::error(Rule::Template, origin, scope.component.clone(), message)).collect()
        }),
        Err(error) => {
            let mut diagnostic = template_diagnostic(&error);
            diagnostic.origin = origin;
            Err(vec![diagnostic])
        }
    }
}

pub(crate) fn template_diagnostic(error: &minijinja::Error) -> Diagnostic {
    let mut message = format!("template error: {}", error.kind());
    if let Some(detail) = error.detail() {
        message.push_str(&format!(": {detail}"));
    }
    if let (Some(name), Some(line)) = (error.name(), error.line()) {
        message.push_str(&format!(" (in `{name}` line {line})"));
    }
    Diagnostic::error(Rule::Template, Origin::default(), "templates", message)
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

pub(crate) fn add_secret_labels(secret: &mut PlainSecret, cluster: &str, component: &str) {
    if let Json::Object(map) = labels(cluster, component) {
        for (key, value) in map {
            if let Json::String(value) = value {
                secret.labels.entry(key).or_insert(value);
            }
        }
    }
    secret.scope = SealScope::Strict;
}
