//! Loading: parse every spec file, merge overlays, validate, deserialize, cross-check.
//!
//! Pure: works on a [`Bundle`] already in memory. Every problem is collected; nothing stops at
//! the first error.

mod overlays;
mod parts;

pub use overlays::merge;

use super::bundle::Bundle;
use super::check;
use super::diagnostic::{Diagnostic, did_you_mean};
use super::model::{API_VERSION, ClusterSpec, Document, Metadata, ServerSpec, TenantSpec};
use super::schema::{self, Kind, ValidateOptions};
use super::yaml::{self, Node, Origin, Value};
use crate::spec::diagnostic::Rule;
use rayon::prelude::*;
use serde::de::DeserializeOwned;
use serde_json::Value as Json;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// One spec object after merging and validation.
#[derive(Debug, Clone)]
pub struct Object<S> {
    /// Its metadata.
    pub metadata: Metadata,
    /// The cluster it is placed in: a cluster's own name; a tenant's placement (one object per
    /// cluster of `spec.clusters`); its tenant's for a server. Empty when unknown (an invalid
    /// reference, reported as such).
    pub cluster: String,
    /// Its spec, with overlays and defaults applied.
    pub spec: S,
    /// The merged document tree, for locating fields in messages (shared between the placements
    /// of one document where they are equal: a fleet places one document in many clusters).
    pub tree: Arc<Node>,
    /// The layers that contributed to `spec`, lowest first (overlays, then the spec itself).
    pub layers: Vec<Layer>,
    /// Its digest once made (`crate::render::unit::object_digest`): both the cluster's stamp and
    /// its namespace's take it. A copy starts without one.
    pub digest: DigestOnce,
}

/// A digest made at most once, with the kind it was made for; never copied (a copy may be
/// changed before it is digested) and never printed.
#[derive(Default)]
pub struct DigestOnce(std::sync::OnceLock<(&'static str, [u8; 32])>);

impl DigestOnce {
    /// The digest made for `kind`, made by `make` the first time; made again (not kept) for
    /// another kind.
    pub fn get_or_make(&self, kind: &'static str, make: impl FnOnce() -> [u8; 32]) -> [u8; 32] {
        match self.0.get() {
            Some((made_for, digest)) if *made_for == kind => *digest,
            Some(_) => make(),
            None => {
                let digest = make();
                // NB: another thread may have made it first, for another kind.
                let (made_for, kept) = *self.0.get_or_init(|| (kind, digest));
                if made_for == kind { kept } else { digest }
            }
        }
    }
}

impl Clone for DigestOnce {
    fn clone(&self) -> DigestOnce {
        DigestOnce::default()
    }
}

impl std::fmt::Debug for DigestOnce {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DigestOnce")
    }
}

impl<S> Object<S> {
    /// The object's name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.metadata.name
    }

    /// Where a field (dotted path, e.g. `spec.postgresql.instances`) is, or its closest
    /// ancestor that exists.
    #[must_use]
    pub fn locate(&self, path: &str) -> Origin {
        let origin = locate(&self.tree, path);
        self.layers.iter().find(|layer| layer.spec.origin.file == origin.file).and_then(|layer| layer.selected_at).unwrap_or(origin)
    }
}

/// One contribution to an object's spec.
#[derive(Debug, Clone)]
pub struct Layer {
    /// `overlay `prod`` or `spec`.
    pub label: String,
    /// The spec fragment (the value of `spec:`), shared like [`Object::tree`].
    pub spec: Arc<Node>,
    /// For a built-in overlay that a cluster's `spec.overlays` names: that entry. What the
    /// overlay sets is located there, in the user's file, not in a file the user never wrote.
    pub selected_at: Option<Origin>,
}

/// The validated input: every cluster, tenant and server.
#[derive(Debug, Clone, Default)]
pub struct Spec {
    /// `TFRCluster`s.
    pub clusters: Vec<Object<ClusterSpec>>,
    /// `TFRTenant`s, one per placement: names are unique within a cluster.
    pub tenants: Vec<Object<TenantSpec>>,
    /// `TFRServer`s, one per placement: names are unique within a cluster.
    pub servers: Vec<Object<ServerSpec>>,
}

/// The result of a load: the spec if there were no errors, and every diagnostic (errors and
/// warnings), sorted by file, line and column.
#[derive(Debug, Clone, Default)]
pub struct Loaded {
    /// The spec, when there were no errors.
    pub spec: Option<Spec>,
    /// Errors and warnings.
    pub diagnostics: Vec<Diagnostic>,
}

impl Loaded {
    /// Number of errors.
    #[must_use]
    pub fn error_count(&self) -> usize {
        self.diagnostics.iter().filter(|d| d.is_error()).count()
    }
}

/// Where the field at `path` is in `tree`, or its deepest existing ancestor.
#[must_use]
pub fn locate(tree: &Node, path: &str) -> Origin {
    let mut node = tree;
    let mut origin = tree.origin;
    for segment in path.split('.') {
        let (name, index) = match segment.split_once('[') {
            Some((name, rest)) => (name, rest.trim_end_matches(']').parse::<usize>().ok()),
            None => (segment, None),
        };
        match (node.get_key(name), node.get(name)) {
            (Some(key), Some(child)) => {
                origin = key.origin;
                node = child;
            }
            _ => return origin,
        }
        if let Some(index) = index {
            match &node.value {
                Value::Seq(items) if index < items.len() => {
                    node = &items[index];
                    origin = node.origin;
                }
                _ => return origin,
            }
        }
    }
    // NB: point at the value when there is one, the way the type errors do.
    if path.is_empty() { origin } else { node.origin }
}

mod environments;

use overlays::{OverlayDocument, cluster_overlays, parse_environments, parse_overlays};

/// Loads and validates everything in `bundle`.
#[must_use]
pub fn load(bundle: &Bundle) -> Loaded {
    load_kept(bundle, None)
}

/// [`load`], with the spec files' pieces parsed before taken from `kept` (and those parsed now
/// given to it): the same result, for less work.
#[must_use]
pub fn load_kept(bundle: &Bundle, kept: Option<&dyn yaml::Pieces>) -> Loaded {
    let mut out = Vec::new();
    let schemas: BTreeMap<Kind, Json> = Kind::ALL.into_iter().map(|k| (k, k.raw_schema())).collect();
    let overlays = parse_overlays(bundle, &schemas, &mut out);
    let environments = parse_environments(bundle, &schemas, &mut out);
    // NB: an overlay or environment that does not parse changes nothing: the warnings about
    // what it would have set follow from its syntax error, so they wait until it parses.
    let layers_unparsed = out.iter().any(|d| d.rule == Rule::Syntax);
    let (documents, unparsed) = parse_documents(bundle, kept, &mut out);
    let cluster_overlays = cluster_overlays(&documents, &overlays, bundle, &mut out);
    let cluster_environments = environments::cluster_environments(&documents, &environments, bundle, &mut out);
    let known = known_names(&documents);
    let tenant_clusters = environments::tenant_placements(&documents);
    let placed = environments::declared(&documents, &tenant_clusters);
    let inputs = BuildInputs {
        bundle,
        schemas: &schemas,
        overlays: &overlays,
        cluster_overlays: &cluster_overlays,
        environments: &environments,
        cluster_environments: &cluster_environments,
        tenant_clusters: &tenant_clusters,
        known: &known,
    };
    let spec = build_all(documents, &inputs, &mut out);
    environments::unmatched(&environments, &cluster_environments, &placed, &known, &mut out);
    check::check(&spec, &known, bundle, &mut out);
    let mut out = super::diagnostic::without_follow_ons(out, unparsed);
    if layers_unparsed {
        out.retain(|d| d.severity != super::diagnostic::Severity::Warning);
    }
    finish(spec, out)
}

/// Every document of every spec file that has a known `kind`, in file order, and whether some
/// file could not be parsed (its objects are then unknown).
fn parse_documents(bundle: &Bundle, kept: Option<&dyn yaml::Pieces>, out: &mut Vec<Diagnostic>) -> (Vec<(Kind, Node)>, bool) {
    let mut documents = Vec::new();
    let mut unparsed = false;
    // NB: the files side by side (each also in pieces): a small file is not parsed alone.
    let all: Vec<_> = bundle.specs.par_iter().map(|&file| yaml::parse_kept(file, &bundle.files[file].text, kept)).collect();
    for parsed in all {
        let parsed = match parsed {
            Ok(parsed) => parsed,
            Err(errors) => {
                unparsed = true;
                out.extend(errors.into_iter().map(|e| {
                    Diagnostic::error(Rule::Syntax, e.origin, "(document)", e.message)
                        .with_help("no object of this file is read until it parses, so references to them are not checked either")
                }));
                continue;
            }
        };
        for document in parsed {
            if let Some(kind) = document_kind(&document, out) {
                documents.push((kind, document));
            }
        }
    }
    (documents, unparsed)
}

/// Names of every document, valid or not, so that one broken object does not make every
/// reference to it dangle as well.
fn known_names(documents: &[(Kind, Node)]) -> BTreeMap<Kind, BTreeSet<String>> {
    let mut known: BTreeMap<Kind, BTreeSet<String>> = BTreeMap::new();
    for (kind, document) in documents {
        if let Some(name) = document_name(document) {
            known.entry(*kind).or_default().insert(name.to_owned());
        }
    }
    known
}

/// `metadata.name` of a document, when it is a string.
fn document_name(document: &Node) -> Option<&str> {
    document.get("metadata").and_then(|m| m.get("name")).and_then(Node::as_str)
}

/// What building one document reads, besides the document.
struct BuildInputs<'a> {
    bundle: &'a Bundle,
    schemas: &'a BTreeMap<Kind, Json>,
    overlays: &'a BTreeMap<String, Vec<OverlayDocument>>,
    cluster_overlays: &'a BTreeMap<String, Vec<(String, Origin)>>,
    environments: &'a BTreeMap<String, Vec<OverlayDocument>>,
    cluster_environments: &'a BTreeMap<String, Vec<(String, Origin)>>,
    /// The clusters of each tenant name, over every tenant document.
    tenant_clusters: &'a BTreeMap<String, Vec<String>>,
    known: &'a BTreeMap<Kind, BTreeSet<String>>,
}

/// Builds every document into the spec.
fn build_all(documents: Vec<(Kind, Node)>, inputs: &BuildInputs<'_>, out: &mut Vec<Diagnostic>) -> Spec {
    // NB: documents are built in parallel (a large platform has thousands of servers); the
    // results and their problems are gathered in document order.
    let built: Vec<(Option<Built>, Vec<Diagnostic>)> = documents
        .into_par_iter()
        .flat_map_iter(|(kind, document)| {
            // One object per cluster the document is placed in; placement problems once.
            let mut problems = Vec::new();
            let none = BTreeSet::new();
            let known_clusters = inputs.known.get(&Kind::Cluster).unwrap_or(&none);
            let clusters = environments::placements(kind, &document, inputs.tenant_clusters, known_clusters, &mut problems);
            // NB: the last placement takes the document itself (most documents have one).
            let mut document = Some(document);
            let last = clusters.len() - 1;
            let mut built: Vec<(Option<Built>, Vec<Diagnostic>)> = Vec::with_capacity(clusters.len() + 1);
            for (index, cluster) in clusters.into_iter().enumerate() {
                let Some(document) = (if index == last { document.take() } else { document.clone() }) else { continue };
                let (mut object, problems) = build_document(kind, document, cluster, inputs);
                if let (Some(first), Some(next)) = (built.first().and_then(|(b, _)| b.as_ref()), object.as_mut()) {
                    next.share(first);
                }
                built.push((object, problems));
            }
            built.push((None, problems));
            built
        })
        .collect();
    let mut spec = Spec::default();
    for (built, problems) in built {
        out.extend(problems);
        match built {
            Some(Built::Cluster(object)) => spec.clusters.push(*object),
            Some(Built::Tenant(object)) => spec.tenants.push(*object),
            Some(Built::Server(object)) => spec.servers.push(*object),
            None => {}
        }
    }
    spec
}

/// Builds one document for `cluster`: under the overlays of its cluster and those of the
/// command line, over the environments of its cluster.
fn build_document(kind: Kind, document: Node, cluster: String, inputs: &BuildInputs<'_>) -> (Option<Built>, Vec<Diagnostic>) {
    let mut out = Vec::new();
    let below = overlay_layers(kind, &cluster, inputs);
    let name = document_name(&document).unwrap_or_default().to_owned();
    let selected = inputs.cluster_environments.get(&cluster).map_or(&[][..], Vec::as_slice);
    let label = format!("{} `{name}` in cluster `{cluster}`", kind.as_str());
    let above = environments::layers(kind, &name, selected, inputs.environments, &label, inputs.bundle, &mut out);
    // NB: only the reference is kept for an invalid document, not a copy of the document.
    let reference = reference(kind).and_then(|(field, _)| document.get("spec")?.get(field)).cloned();
    let schema = &inputs.schemas[&kind];
    let layers = Layers { below, above, cluster };
    let built = match kind {
        Kind::Cluster => build::<ClusterSpec>(document, layers, schema, &mut out).map(|o| Built::Cluster(Box::new(o))),
        Kind::Tenant => build::<TenantSpec>(document, layers, schema, &mut out).map(|mut o| {
            // NB: each placement is a tenant of one cluster.
            o.spec.cluster.clone_from(&o.cluster);
            o.spec.clusters.clear();
            Built::Tenant(Box::new(o))
        }),
        Kind::Server => build::<ServerSpec>(document, layers, schema, &mut out).map(|mut o| {
            o.spec.clusters.clear();
            Built::Server(Box::new(o))
        }),
    };
    if built.is_none() {
        // NB: the typed checks skip an invalid document; its references are still checked.
        check_raw_reference(kind, reference.as_ref(), inputs.known, &mut out);
    }
    (built, out)
}

/// The overlay layers of a document of `kind` placed in `cluster`, lowest first: its
/// cluster's, then the command line's.
fn overlay_layers(kind: Kind, cluster: &str, inputs: &BuildInputs<'_>) -> Vec<Layer> {
    let selected = inputs.cluster_overlays.get(cluster).into_iter().flatten();
    let mut names: Vec<(&str, Option<Origin>)> = selected.map(|(name, at)| (name.as_str(), Some(*at))).collect();
    names.extend(inputs.bundle.extra_overlays.iter().map(|name| (name.as_str(), None)));
    names
        .into_iter()
        .flat_map(|(name, at)| {
            let built_in = inputs.bundle.overlays.get(name).is_some_and(|&file| inputs.bundle.is_builtin(file));
            inputs.overlays.get(name).into_iter().flatten().filter(|o| o.kind == kind).map(move |o| Layer {
                label: format!("overlay `{name}`"),
                spec: Arc::new(o.spec.clone()),
                selected_at: at.filter(|_| built_in),
            })
        })
        .collect()
}

/// The result: the diagnostics sorted, the spec only when none is an error.
fn finish(spec: Spec, out: Vec<Diagnostic>) -> Loaded {
    // The same problem can be found twice (an overlay used by several objects, a document check
    // and the schema): keep one, the first found, which carries the most help. An unknown field
    // of an overlay or environment is found first in the layer, whose message lists only what
    // a layer may set, then in each object it merges into: one problem, whatever each lists.
    let mut unique: BTreeMap<(Origin, super::diagnostic::Severity, String, String), Diagnostic> = BTreeMap::new();
    for diagnostic in out {
        let message = match diagnostic.message.starts_with(schema::UNKNOWN_FIELD) {
            true => schema::UNKNOWN_FIELD.to_owned(),
            false => diagnostic.message.clone(),
        };
        let key = (diagnostic.origin, diagnostic.severity, diagnostic.path.clone(), message);
        unique.entry(key).or_insert(diagnostic);
    }
    let diagnostics: Vec<Diagnostic> = unique.into_values().collect();
    let has_errors = diagnostics.iter().any(Diagnostic::is_error);
    Loaded { spec: (!has_errors).then_some(spec), diagnostics }
}

/// One document, typed.
enum Built {
    Cluster(Box<Object<ClusterSpec>>),
    Tenant(Box<Object<TenantSpec>>),
    Server(Box<Object<ServerSpec>>),
}

impl Built {
    /// Shares with `first` (another placement of the same document) every tree and layer that is
    /// equal: a document placed in ten clusters is then held about once.
    fn share(&mut self, first: &Built) {
        match (self, first) {
            (Built::Cluster(next), Built::Cluster(first)) => share(next, first),
            (Built::Tenant(next), Built::Tenant(first)) => share(next, first),
            (Built::Server(next), Built::Server(first)) => share(next, first),
            _ => {}
        }
    }
}

fn share<S>(next: &mut Object<S>, first: &Object<S>) {
    if next.tree == first.tree {
        next.tree = Arc::clone(&first.tree);
    }
    for layer in &mut next.layers {
        if let Some(same) = first.layers.iter().find(|f| f.spec == layer.spec) {
            layer.spec = Arc::clone(&same.spec);
        }
    }
}

/// Reads `kind` and `apiVersion` of a spec document, reporting what is wrong with them.
fn document_kind(document: &Node, out: &mut Vec<Diagnostic>) -> Option<Kind> {
    if !matches!(document.value, Value::Map(_)) {
        // NB: a stray scalar document may be a secret file: never echo it.
        let found = if matches!(document.value, Value::Seq(_)) { "a list" } else { "a scalar" };
        out.push(
            Diagnostic::error(
                Rule::Schema,
                document.origin,
                "(document)",
                format!("expected a map with `apiVersion`, `kind`, `metadata` and `spec`, found {found}"),
            )
            .sensitive(),
        );
        return None;
    }
    let kind = read_kind(document, out);
    match document.get("apiVersion") {
        None => out.push(
            Diagnostic::error(Rule::Schema, document.origin, "apiVersion", "missing required field")
                .with_help(format!("add `apiVersion: {API_VERSION}`")),
        ),
        Some(node) if node.as_str() != Some(API_VERSION) => {
            out.push(Diagnostic::error(
                Rule::Schema,
                node.origin,
                "apiVersion",
                format!("expected `{API_VERSION}`, found {}", node.describe()),
            ));
        }
        Some(_) => {}
    }
    kind
}

/// The field below `spec` that names another object, and that object's kind: a tenant's
/// `cluster`, a server's `tenant`.
fn reference(kind: Kind) -> Option<(&'static str, Kind)> {
    [(Kind::Tenant, "cluster", Kind::Cluster), (Kind::Server, "tenant", Kind::Tenant)]
        .into_iter()
        .find(|(k, ..)| *k == kind)
        .map(|(_, field, target)| (field, target))
}

/// Checks `spec.cluster` / `spec.tenant` of a document that failed validation.
fn check_raw_reference(kind: Kind, node: Option<&Node>, known: &BTreeMap<Kind, BTreeSet<String>>, out: &mut Vec<Diagnostic>) {
    let (Some((field, target)), Some(node)) = (reference(kind), node) else { return };
    let Some(name) = node.as_str() else { return };
    let empty = BTreeSet::new();
    let names = known.get(&target).unwrap_or(&empty);
    if !names.contains(name) {
        out.push(check::dangling(node.origin, &format!("spec.{field}"), target.as_str(), name, names.iter().map(String::as_str)));
    }
}

/// Reads `kind`, reporting a missing or unknown one.
fn read_kind(document: &Node, out: &mut Vec<Diagnostic>) -> Option<Kind> {
    match document.get("kind") {
        None => {
            out.push(
                Diagnostic::error(Rule::Schema, document.origin, "kind", "missing required field")
                    .with_help("one of `TFRCluster`, `TFRTenant`, `TFRServer`"),
            );
            None
        }
        Some(node) => match node.as_str().and_then(Kind::parse) {
            Some(kind) => Some(kind),
            None => {
                let names = Kind::ALL.map(Kind::as_str);
                let mut diagnostic = Diagnostic::error(
                    Rule::Schema,
                    node.origin,
                    "kind",
                    format!("unknown kind {}, expected one of `TFRCluster`, `TFRTenant`, `TFRServer`", node.describe()),
                );
                if node.as_str() == Some("TFRInfra") {
                    diagnostic = diagnostic.with_help("a `TFRInfra` spec is read alone by `tfrs infra render` and `tfrs infra plan`");
                } else if let Some(close) = node.as_str().and_then(|k| did_you_mean(k, names)) {
                    diagnostic = diagnostic.with_help(format!("did you mean `{close}`?"));
                }
                out.push(diagnostic);
                None
            }
        },
    }
}

/// The layers of one object besides its own spec, and the cluster it is placed in.
struct Layers {
    /// Overlays, lowest first.
    below: Vec<Layer>,
    /// Environments.
    above: Vec<Layer>,
    cluster: String,
}

/// Merges the overlays under the document's spec and the environments over it, validates the
/// result and deserializes it.
fn build<S: DeserializeOwned>(mut document: Node, layers: Layers, schema: &Json, out: &mut Vec<Diagnostic>) -> Option<Object<S>> {
    let Layers { below, above, cluster } = layers;
    let layers = overlays::layered(&mut document, below, above);
    let before = out.iter().filter(|d| d.is_error()).count();
    schema::validate(&mut document, schema, "", ValidateOptions::default(), out);
    if out.iter().filter(|d| d.is_error()).count() > before {
        return None;
    }
    match crate::spec::yaml::from_node::<Document<S>>(&document) {
        Ok(typed) => Some(Object {
            metadata: typed.metadata,
            cluster,
            spec: typed.spec,
            tree: Arc::new(document),
            layers,
            digest: DigestOnce::default(),
        }),
        Err(error) => {
            // NB: the schema comes from the same types, so this means the two disagree: a bug.
            out.push(Diagnostic::error(
                Rule::Schema,
                document.origin,
                "(document)",
                format!("internal error: schema and model disagree: {error}"),
            ));
            None
        }
    }
}

#[cfg(test)]
mod tests;
