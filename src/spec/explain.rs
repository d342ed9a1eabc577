//! `--explain FIELD`: where a merged value came from (built-in default, overlays, the spec).

use super::load::{Object, Spec, locate};
use super::model::SECRET_FORMS;
use super::yaml::{Node, Origin};
use serde::Serialize;
use serde_json::Value as Json;

/// One layer that set the field.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// `built-in default`, `overlay `prod``, `spec`.
    pub label: String,
    /// Where the layer set it (none for the built-in default).
    pub origin: Option<Origin>,
    /// The value it set, secrets redacted.
    pub value: Json,
}

/// Where the value of one field of one object came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Explanation {
    /// `TFRTenant/acme`.
    pub object: String,
    /// The final value, secrets redacted.
    pub value: Json,
    /// Every layer that set it, lowest first; the last one wins.
    pub steps: Vec<Step>,
}

/// Explains `field` (e.g. `spec.postgresql.instances`) for every object that has it.
#[must_use]
pub fn explain(spec: &Spec, field: &str) -> Vec<Explanation> {
    let mut out = Vec::new();
    // NB: in a fleet every tenant and server says its cluster (a name may be placed in
    // several); a cluster is its own name.
    let fleet = spec.clusters.len() > 1;
    explain_kind(&spec.clusters, "TFRCluster", field, false, &mut out);
    explain_kind(&spec.tenants, "TFRTenant", field, fleet, &mut out);
    explain_kind(&spec.servers, "TFRServer", field, fleet, &mut out);
    out
}

fn explain_kind<S: Serialize + Default>(objects: &[Object<S>], kind: &str, field: &str, in_cluster: bool, out: &mut Vec<Explanation>) {
    for object in objects {
        out.extend(explain_object(object, kind, field, in_cluster));
    }
}

/// Explains `field` of one object (`None` when it does not have the field); `in_cluster` adds
/// its cluster to the object's name.
#[must_use]
pub fn explain_object<S: Serialize + Default>(object: &Object<S>, kind: &str, field: &str, in_cluster: bool) -> Option<Explanation> {
    let inner = field.strip_prefix("spec.")?;
    let merged = serde_json::to_value(&object.spec).unwrap_or(Json::Null);
    let value = lookup(&merged, inner)?;
    let mut steps = Vec::new();
    if let Some(default) = lookup(&serde_json::to_value(S::default()).unwrap_or(Json::Null), inner) {
        steps.push(Step { label: "built-in default".to_owned(), origin: None, value: redact(inner, default) });
    }
    for layer in &object.layers {
        if let Some(node) = find(&layer.spec, inner) {
            // NB: the merged tree locates the spec's own value, unless a layer above replaced it.
            let replaced = object.layers.iter().skip_while(|l| l.label != "spec").skip(1).any(|l| find(&l.spec, inner).is_some());
            let origin = if layer.label == "spec" && !replaced { Some(locate(&object.tree, field)) } else { Some(node.origin) };
            steps.push(Step { label: layer.label.clone(), origin, value: redact(inner, node.to_json()) });
        }
    }
    let at = if in_cluster { format!(" in cluster `{}`", object.cluster) } else { String::new() };
    Some(Explanation { object: format!("{kind}/{}{at}", object.name()), value: redact(inner, value), steps })
}

fn lookup(json: &Json, path: &str) -> Option<Json> {
    path.split('.').try_fold(json, |current, segment| current.get(segment)).cloned()
}

fn find<'a>(node: &'a Node, path: &str) -> Option<&'a Node> {
    path.split('.').try_fold(node, |current, segment| current.get(segment))
}

/// Hides literal secret values: a field `value` of a secret source, at any depth.
fn redact(path: &str, json: Json) -> Json {
    if path.ends_with(".value") {
        return Json::from("<redacted>");
    }
    redact_tree(json)
}

fn redact_tree(json: Json) -> Json {
    match json {
        Json::Object(map) => {
            let is_source = !map.is_empty() && map.keys().all(|k| SECRET_FORMS.contains(&k.as_str()));
            Json::Object(
                map.into_iter()
                    .map(|(k, v)| if is_source && k == "value" { (k, Json::from("<redacted>")) } else { (k, redact_tree(v)) })
                    .collect(),
            )
        }
        Json::Array(items) => Json::Array(items.into_iter().map(redact_tree).collect()),
        other => other,
    }
}
