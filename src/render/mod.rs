//! Rendering: specs in, components of Kubernetes objects out. Pure: no filesystem, environment,
//! clock or randomness; secret values arrive through [`SecretInputs`] and the master key.
//!
//! `render` returns, per cluster, its components (each a directory of the output tree) with
//! their objects and their plaintext Secrets. Plaintext Secrets never leave memory: the
//! tree stage ([`crate::tree`]) seals them before anything is written.

pub mod check;
pub mod cluster;
pub mod config;
pub mod confz;
pub mod engine;
pub mod gitops;
pub mod graph;
pub mod memo;
pub mod names;
pub mod operator;
pub mod parts;
pub mod resource;
pub mod server;
pub mod stamp;
pub mod templates;
pub mod tenant;
pub mod unit;
pub mod values;

pub use engine::labels;
use engine::{Context, template_diagnostic};
pub use graph::Graph;
pub use memo::Memo;
pub use names::{CLUSTER_LABEL, COMPONENT, MANAGED_BY, PART_OF};
pub use resource::Resource;
pub use templates::Templates;

use crate::secrets::resolve::SecretInputs;
use crate::secrets::{MasterKey, PlainSecret};
use crate::spec::diagnostic::FileTable;
use crate::spec::{Diagnostic, Spec};
use std::collections::BTreeMap;
use zeroize::Zeroizing;

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
    /// Sealed Secrets' files given back by the memo with their namespace ([`unit`]): kept as
    /// they are, never sealed again.
    pub sealed: Vec<memo::KeptSealed>,
    /// Its GitOps entry, given back by the memo with its namespace: the objects (kept) and the
    /// memo entry; `None` to render it.
    pub gitops: Option<(Vec<Resource>, (String, memo::Entry))>,
    /// How long Flux waits for it to become ready.
    pub timeout: String,
}

/// Everything rendered for one cluster.
#[derive(Debug, Clone)]
pub struct RenderedCluster {
    /// The cluster name.
    pub name: String,
    /// Components in dependency order.
    pub components: Vec<Component>,
    /// The GitOps entry points (one per component).
    pub gitops: Vec<Resource>,
}

/// What `render` returns.
#[derive(Debug, Clone, Default)]
pub struct Rendered {
    /// Every cluster.
    pub clusters: Vec<RenderedCluster>,
    /// Every credential resolved while rendering (for `tfrs audit`), by logical path; a
    /// namespace the memo gave back whole resolves none.
    pub resolved: Vec<ResolvedSecret>,
    /// What the next render into the same output directory may reuse (empty without a memo).
    pub memo: memo::Table,
    /// How many templated units the memo gave back instead of rendering them.
    pub reused: usize,
    /// What each tenant namespace's entry is made from, once its Secrets are sealed
    /// ([`unit::record`]); empty without a memo.
    pub units: Vec<memo::UnitOutcome>,
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
        // NB: names are unique within a cluster; each is rendered from its own objects.
        let part = spec.part_of(cluster.name());
        if let Some(rendered) = cluster::render(&mut context, &part, cluster) {
            clusters.push(rendered);
        }
    }
    if context.errors.is_empty() {
        let memo = crate::sorted::into_map(context.recorded);
        Ok(Rendered { clusters, resolved: context.resolved, memo, reused: context.reused, units: context.units })
    } else {
        Err(Problems { diagnostics: context.errors, environment: context.environment })
    }
}
