//! Overlays: their documents, which of them each cluster asks for, and how a layer merges
//! over the one below it.

use super::{Layer, document_name, read_kind};
use crate::spec::bundle::Bundle;
use crate::spec::diagnostic::Rule;
use crate::spec::diagnostic::{Diagnostic, did_you_mean};
use crate::spec::model::{API_VERSION, SECRET_FORMS};
use crate::spec::schema::{self, Kind, ValidateOptions};
use crate::spec::yaml::{self, Key, Node, Origin, Value};
use serde_json::Value as Json;
use std::collections::BTreeMap;
use std::sync::Arc;

/// A parsed overlay or environment document.
pub(super) struct OverlayDocument {
    pub(super) kind: Kind,
    pub(super) spec: Node,
    /// An environment document's object (`metadata.name`) and where it is named; overlays
    /// have none: they apply to every object of their kind.
    pub(super) target: Option<(String, Origin)>,
}

/// Which kind of layer file a document is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Partial {
    /// `overlays/<name>.yaml`: unnamed, under the spec.
    Overlay,
    /// `environments/<name>.yaml`: named, over the spec.
    Environment,
}

impl Partial {
    /// What a problem of a whole document or file is said to be in.
    fn label(self) -> &'static str {
        match self {
            Partial::Overlay => "(overlay)",
            Partial::Environment => "(environment)",
        }
    }
}

/// Every overlay of the bundle, by name: its documents, each validated as a partial spec of
/// its kind.
pub(super) fn parse_overlays(
    bundle: &Bundle,
    schemas: &BTreeMap<Kind, Json>,
    out: &mut Vec<Diagnostic>,
) -> BTreeMap<String, Vec<OverlayDocument>> {
    parse_files(&bundle.overlays, bundle, schemas, Partial::Overlay, out)
}

/// Every environment of the bundle, by name: its documents, each naming the tenant or server
/// it changes, its spec validated as a partial spec of its kind.
pub(super) fn parse_environments(
    bundle: &Bundle,
    schemas: &BTreeMap<Kind, Json>,
    out: &mut Vec<Diagnostic>,
) -> BTreeMap<String, Vec<OverlayDocument>> {
    parse_files(&bundle.environments, bundle, schemas, Partial::Environment, out)
}

fn parse_files(
    files: &BTreeMap<String, usize>,
    bundle: &Bundle,
    schemas: &BTreeMap<Kind, Json>,
    partial: Partial,
    out: &mut Vec<Diagnostic>,
) -> BTreeMap<String, Vec<OverlayDocument>> {
    let mut parsed_files = BTreeMap::new();
    for (name, &file) in files {
        let documents = match yaml::parse(file, &bundle.files[file].text) {
            Ok(documents) => documents,
            Err(errors) => {
                out.extend(errors.into_iter().map(|e| Diagnostic::error(Rule::Syntax, e.origin, partial.label(), e.message)));
                parsed_files.insert(name.clone(), Vec::new());
                continue;
            }
        };
        let parsed = documents.iter().filter_map(|document| parse_overlay(document, schemas, partial, out)).collect();
        parsed_files.insert(name.clone(), parsed);
    }
    parsed_files
}

/// One overlay or environment document: `kind` and `spec` (and `apiVersion`; an environment's
/// also `metadata.name`), its spec validated as partial.
fn parse_overlay(document: &Node, schemas: &BTreeMap<Kind, Json>, partial: Partial, out: &mut Vec<Diagnostic>) -> Option<OverlayDocument> {
    let Value::Map(entries) = &document.value else {
        let expected = if partial == Partial::Overlay { "`kind` and `spec`" } else { "`kind`, `metadata` and `spec`" };
        out.push(Diagnostic::error(
            Rule::Overlay,
            document.origin,
            partial.label(),
            format!("expected a map with {expected}, found {}", document.describe()),
        ));
        return None;
    };
    unknown_keys(entries, partial, out);
    if let Some(version) = document.get("apiVersion")
        && version.as_str() != Some(API_VERSION)
    {
        out.push(Diagnostic::error(
            Rule::Overlay,
            version.origin,
            "apiVersion",
            format!("expected `{API_VERSION}`, found {}", version.describe()),
        ));
    }
    let kind = read_kind(document, out)?;
    let target = match partial {
        Partial::Overlay => None,
        Partial::Environment => Some(environment_target(document, kind, out)?),
    };
    let Some(spec) = document.get("spec") else {
        out.push(Diagnostic::error(Rule::Overlay, document.origin, "spec", "missing required field"));
        return None;
    };
    let mut spec = spec.clone();
    // NB: only fields of this kind: another kind's field is already an unknown field.
    let forbidden: &[&str] = match kind {
        Kind::Cluster => &["overlays", "environments"],
        Kind::Tenant => &["cluster", "clusters"],
        Kind::Server => &["tenant", "clusters"],
    };
    for &forbidden in forbidden {
        if let Some(key) = spec.get_key(forbidden) {
            let what = if partial == Partial::Overlay { "an overlay" } else { "an environment" };
            out.push(
                Diagnostic::error(Rule::Overlay, key.origin, format!("spec.{forbidden}"), format!("not allowed in {what}"))
                    .with_help("references, placements, overlay and environment lists belong in the spec itself"),
            );
        }
    }
    // NB: checked against the fields a layer may set: an unknown field's message lists only
    // those, and suggests none of the others (each reported above once).
    let mut schema = spec_schema(&schemas[&kind]);
    if let Some(properties) = schema.get_mut("properties").and_then(Json::as_object_mut) {
        forbidden.iter().for_each(|name| drop(properties.shift_remove(*name)));
    }
    if let Value::Map(entries) = &mut spec.value {
        entries.retain(|(key, _)| !forbidden.contains(&key.name.as_str()));
    }
    schema::validate(&mut spec, &schema, "spec", ValidateOptions { partial: true }, out);
    Some(OverlayDocument { kind, spec, target })
}

/// Reports the top-level keys a layer document may not have.
fn unknown_keys(entries: &[(Key, Node)], partial: Partial, out: &mut Vec<Diagnostic>) {
    let allowed: &[&str] = match partial {
        Partial::Overlay => &["apiVersion", "kind", "spec"],
        Partial::Environment => &["apiVersion", "kind", "metadata", "spec"],
    };
    for (key, _) in entries {
        if !allowed.contains(&key.name.as_str()) {
            let listed: Vec<String> = allowed.iter().map(|k| format!("`{k}`")).collect();
            let what = if partial == Partial::Overlay { "an overlay" } else { "an environment" };
            let mut diagnostic = Diagnostic::error(
                Rule::Overlay,
                key.origin,
                &key.name,
                format!("unknown field in {what}, expected one of {}", listed.join(", ")),
            );
            if key.name == "metadata" {
                diagnostic = diagnostic.with_help(
                    "overlays apply to every object of their kind and have no names; an environment (`environments/`) changes named objects",
                );
            }
            out.push(diagnostic);
        }
    }
}

/// The object an environment document changes: `metadata.name` of a TFRTenant or TFRServer.
fn environment_target(document: &Node, kind: Kind, out: &mut Vec<Diagnostic>) -> Option<(String, Origin)> {
    if kind == Kind::Cluster {
        let at = document.get("kind").map_or(document.origin, |k| k.origin);
        out.push(
            Diagnostic::error(Rule::Overlay, at, "kind", "an environment changes TFRTenants and TFRServers")
                .with_help("what differs between clusters belongs in each TFRCluster"),
        );
        return None;
    }
    let Some(metadata) = document.get("metadata") else {
        out.push(
            Diagnostic::error(Rule::Overlay, document.origin, "metadata.name", "missing required field")
                .with_help("an environment document names the tenant or server it changes"),
        );
        return None;
    };
    if let Value::Map(entries) = &metadata.value {
        for (key, _) in entries.iter().filter(|(k, _)| k.name != "name") {
            out.push(Diagnostic::error(
                Rule::Overlay,
                key.origin,
                format!("metadata.{}", key.name),
                "unknown field in an environment's metadata, expected `name`",
            ));
        }
    }
    match metadata.get("name") {
        Some(node) if node.as_str().is_some_and(|n| !n.is_empty()) => Some((node.as_str().unwrap_or_default().to_owned(), node.origin)),
        Some(node) => {
            out.push(Diagnostic::error(Rule::Overlay, node.origin, "metadata.name", format!("expected a name, found {}", node.describe())));
            None
        }
        None => {
            out.push(Diagnostic::error(Rule::Overlay, metadata.origin, "metadata.name", "missing required field"));
            None
        }
    }
}

/// The schema of `spec` inside a document schema, with the document's `$defs`: the definition
/// its `$ref` names, when it names one, so that its `properties` can be edited.
fn spec_schema(document: &Json) -> Json {
    let defs = document.get("$defs");
    let spec = document.get("properties").and_then(|p| p.get("spec"));
    let named = spec.and_then(|s| s.get("$ref")).and_then(Json::as_str).and_then(|r| defs?.get(r.strip_prefix("#/$defs/")?));
    let mut spec = named.or(spec).cloned().unwrap_or(Json::Bool(true));
    if let (Some(object), Some(defs)) = (spec.as_object_mut(), defs) {
        object.insert("$defs".to_owned(), defs.clone());
    }
    spec
}

/// Which overlays each cluster asks for, with the `spec.overlays` entry that names each (from its
/// own spec: overlays cannot name overlays).
pub(super) fn cluster_overlays(
    documents: &[(Kind, Node)],
    overlays: &BTreeMap<String, Vec<OverlayDocument>>,
    bundle: &Bundle,
    out: &mut Vec<Diagnostic>,
) -> BTreeMap<String, Vec<(String, Origin)>> {
    cluster_selections(documents, "overlays", overlays, &|origin, path, name| unknown_overlay(origin, path, name, bundle), out)
}

/// Which layers of `known` (overlays or environments) each cluster names in `spec.<field>`, with
/// the entry that names each; a name not in `known` is reported by `unknown(origin, path, name)`.
pub(super) fn cluster_selections(
    documents: &[(Kind, Node)],
    field: &str,
    known: &BTreeMap<String, Vec<OverlayDocument>>,
    unknown: &dyn Fn(Origin, &str, &str) -> Diagnostic,
    out: &mut Vec<Diagnostic>,
) -> BTreeMap<String, Vec<(String, Origin)>> {
    let mut selections: BTreeMap<String, Vec<(String, Origin)>> = BTreeMap::new();
    for (_, document) in documents.iter().filter(|(kind, _)| *kind == Kind::Cluster) {
        let Some(name) = document_name(document) else { continue };
        let mut names = Vec::new();
        for (index, item) in strings(document, field) {
            let Some(layer) = item.as_str() else { continue };
            if known.contains_key(layer) {
                names.push((layer.to_owned(), item.origin));
            } else {
                out.push(unknown(item.origin, &format!("spec.{field}[{index}]"), layer));
            }
        }
        selections.entry(name.to_owned()).or_insert(names);
    }
    selections
}

/// The items of the list `spec.<field>` of a document.
pub(super) fn strings<'a>(document: &'a Node, field: &str) -> Vec<(usize, &'a Node)> {
    match document.get("spec").and_then(|s| s.get(field)).map(|n| &n.value) {
        Some(Value::Seq(items)) => items.iter().enumerate().collect(),
        _ => Vec::new(),
    }
}

fn unknown_overlay(origin: Origin, path: &str, name: &str, bundle: &Bundle) -> Diagnostic {
    let known: Vec<String> = bundle.overlays.keys().map(|k| format!("`{k}`")).collect();
    let mut diagnostic =
        Diagnostic::error(Rule::Reference, origin, path, format!("unknown overlay `{name}`, expected one of {}", known.join(", ")));
    if let Some(close) = did_you_mean(name, bundle.overlays.keys().map(String::as_str)) {
        diagnostic =
            diagnostic.with_help(format!("did you mean `{close}`? user overlays live in an `overlays/` directory next to the specs"));
    } else {
        diagnostic = diagnostic.with_help("user overlays live in an `overlays/` directory next to the specs, one `<name>.yaml` each");
    }
    diagnostic
}

/// The layers of `document`: `below` (overlays), its own spec, `above` (environments), lowest
/// first; its spec becomes their merge. A document under no layer but its own spec (most of
/// them) is already merged, and keeps a copy as its layer; one under layers gives its spec to
/// its layer (the merge replaces it).
pub(super) fn layered(document: &mut Node, mut below: Vec<Layer>, above: Vec<Layer>) -> Vec<Layer> {
    if let Value::Map(entries) = &mut document.value
        && let Some((_, spec)) = entries.iter_mut().find(|(k, _)| k.name == "spec")
    {
        let merging = !below.is_empty() || !above.is_empty();
        let own = if merging { std::mem::replace(spec, Node::new(Value::Null, spec.origin)) } else { spec.clone() };
        below.push(Layer { label: "spec".to_owned(), spec: Arc::new(own), selected_at: None });
        below.extend(above);
        if merging {
            *spec = below.iter().skip(1).fold(Node::clone(&below[0].spec), |acc, layer| merge(acc, &layer.spec));
        }
    }
    below
}

/// Merges `upper` over `lower`: maps merge recursively, everything else replaces. `lower` is
/// taken (a merged spec is built in it, not copied at every level).
#[must_use]
pub fn merge(lower: Node, upper: &Node) -> Node {
    match (lower.value, &upper.value) {
        // NB: a secret source is one choice, not a map of settings: the upper one replaces it.
        (Value::Map(_), Value::Map(over)) if is_secret_source(over) => upper.clone(),
        (Value::Map(mut entries), Value::Map(over)) => {
            for (key, value) in over {
                match entries.iter_mut().find(|(k, _)| k.name == key.name) {
                    Some((existing_key, existing)) => {
                        let taken = std::mem::replace(existing, Node::new(Value::Null, existing.origin));
                        *existing = merge(taken, value);
                        *existing_key = key.clone();
                    }
                    None => entries.push((key.clone(), value.clone())),
                }
            }
            Node { value: Value::Map(entries), origin: upper.origin, plain: upper.plain.clone(), block: upper.block }
        }
        _ => upper.clone(),
    }
}

pub(super) fn is_secret_source(entries: &[(Key, Node)]) -> bool {
    !entries.is_empty() && entries.iter().all(|(k, _)| SECRET_FORMS.contains(&k.name.as_str()))
}
