//! Overlays: their documents, which of them each cluster asks for, and how a layer merges
//! over the one below it.

use super::{document_name, read_kind};
use crate::spec::bundle::Bundle;
use crate::spec::diagnostic::Rule;
use crate::spec::diagnostic::{Diagnostic, did_you_mean};
use crate::spec::model::{API_VERSION, SECRET_FORMS};
use crate::spec::schema::{self, Kind, ValidateOptions};
use crate::spec::yaml::{self, Key, Node, Origin, Value};
use serde_json::Value as Json;
use std::collections::BTreeMap;

/// A parsed overlay document.
pub(super) struct OverlayDocument {
    pub(super) kind: Kind,
    pub(super) spec: Node,
}

/// Every overlay of the bundle, by name: its documents, each validated as a partial spec of
/// its kind.
pub(super) fn parse_overlays(
    bundle: &Bundle,
    schemas: &BTreeMap<Kind, Json>,
    out: &mut Vec<Diagnostic>,
) -> BTreeMap<String, Vec<OverlayDocument>> {
    let mut overlays = BTreeMap::new();
    for (name, &file) in &bundle.overlays {
        let documents = match yaml::parse(file, &bundle.files[file].text) {
            Ok(documents) => documents,
            Err(errors) => {
                out.extend(errors.into_iter().map(|e| Diagnostic::error(Rule::Syntax, e.origin, "(overlay)", e.message)));
                overlays.insert(name.clone(), Vec::new());
                continue;
            }
        };
        let parsed = documents.iter().filter_map(|document| parse_overlay(document, schemas, out)).collect();
        overlays.insert(name.clone(), parsed);
    }
    overlays
}

/// One overlay document: `kind` and `spec` (and `apiVersion`), its spec validated as partial.
fn parse_overlay(document: &Node, schemas: &BTreeMap<Kind, Json>, out: &mut Vec<Diagnostic>) -> Option<OverlayDocument> {
    let Value::Map(entries) = &document.value else {
        out.push(Diagnostic::error(
            Rule::Overlay,
            document.origin,
            "(overlay)",
            format!("expected a map with `kind` and `spec`, found {}", document.describe()),
        ));
        return None;
    };
    for (key, _) in entries {
        if !matches!(key.name.as_str(), "apiVersion" | "kind" | "spec") {
            let mut diagnostic = Diagnostic::error(
                Rule::Overlay,
                key.origin,
                &key.name,
                "unknown field in an overlay, expected one of `apiVersion`, `kind`, `spec`",
            );
            if key.name == "metadata" {
                diagnostic = diagnostic.with_help("overlays apply to every object of their kind and have no names");
            }
            out.push(diagnostic);
        }
    }
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
    let Some(spec) = document.get("spec") else {
        out.push(Diagnostic::error(Rule::Overlay, document.origin, "spec", "missing required field"));
        return None;
    };
    let mut spec = spec.clone();
    for forbidden in ["cluster", "tenant", "overlays"] {
        if let Some(key) = spec.get_key(forbidden) {
            out.push(
                Diagnostic::error(Rule::Overlay, key.origin, format!("spec.{forbidden}"), "not allowed in an overlay")
                    .with_help("references and overlay lists belong in the spec itself"),
            );
        }
    }
    let spec_schema = spec_schema(&schemas[&kind]);
    schema::validate(&mut spec, &spec_schema, "spec", ValidateOptions { partial: true }, out);
    Some(OverlayDocument { kind, spec })
}

/// The schema of `spec` inside a document schema, with the document's `$defs`.
fn spec_schema(document: &Json) -> Json {
    let mut spec = document.get("properties").and_then(|p| p.get("spec")).cloned().unwrap_or(Json::Bool(true));
    if let (Some(object), Some(defs)) = (spec.as_object_mut(), document.get("$defs")) {
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
    let mut cluster_overlays: BTreeMap<String, Vec<(String, Origin)>> = BTreeMap::new();
    for (kind, document) in documents {
        if *kind != Kind::Cluster {
            continue;
        }
        let Some(name) = document_name(document) else { continue };
        let mut names = Vec::new();
        if let Some(Value::Seq(items)) = document.get("spec").and_then(|s| s.get("overlays")).map(|n| &n.value) {
            for (index, item) in items.iter().enumerate() {
                let Some(overlay) = item.as_str() else { continue };
                if overlays.contains_key(overlay) {
                    names.push((overlay.to_owned(), item.origin));
                } else {
                    out.push(unknown_overlay(item.origin, &format!("spec.overlays[{index}]"), overlay, bundle));
                }
            }
        }
        cluster_overlays.entry(name.to_owned()).or_insert(names);
    }
    cluster_overlays
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

/// Merges `upper` over `lower`: maps merge recursively, everything else replaces.
#[must_use]
pub fn merge(lower: &Node, upper: &Node) -> Node {
    match (&lower.value, &upper.value) {
        // NB: a secret source is one choice, not a map of settings: the upper one replaces it.
        (Value::Map(_), Value::Map(over)) if is_secret_source(over) => upper.clone(),
        (Value::Map(base), Value::Map(over)) => {
            let mut entries: Vec<(Key, Node)> = base.clone();
            for (key, value) in over {
                match entries.iter_mut().find(|(k, _)| k.name == key.name) {
                    Some((existing_key, existing)) => {
                        *existing = merge(existing, value);
                        *existing_key = key.clone();
                    }
                    None => entries.push((key.clone(), value.clone())),
                }
            }
            Node { value: Value::Map(entries), ..upper.clone() }
        }
        _ => upper.clone(),
    }
}

fn is_secret_source(entries: &[(Key, Node)]) -> bool {
    !entries.is_empty() && entries.iter().all(|(k, _)| SECRET_FORMS.contains(&k.name.as_str()))
}
