//! `tfrs schema --crd`: CustomResourceDefinitions (apiextensions.k8s.io/v1) for the three kinds,
//! with structural schemas: `$ref`s inlined, `null` unions turned into `nullable`, constant
//! unions into `enum`, and keywords Kubernetes rejects removed.

use super::schema::{Kind, export};
use serde_json::{Map, Value as Json, json};

const GROUP: &str = "tfrs.turingfocus.cn";

/// The CRD of one kind.
#[must_use]
pub fn crd(kind: Kind) -> Json {
    let schema = export(kind);
    let defs = schema.get("$defs").cloned().unwrap_or(Json::Null);
    let mut structural = structural(&schema, &defs, 0);
    if let Some(properties) = structural.get_mut("properties").and_then(Json::as_object_mut) {
        // NB: Kubernetes only allows constraints on metadata.name / generateName.
        properties.insert("metadata".into(), json!({ "type": "object" }));
        properties.insert("apiVersion".into(), json!({ "type": "string" }));
        properties.insert("kind".into(), json!({ "type": "string" }));
    }
    if let Some(object) = structural.as_object_mut() {
        object.remove("required");
        object.insert("required".into(), json!(["spec"]));
    }
    let singular = kind.as_str().to_ascii_lowercase();
    let plural = format!("{singular}s");
    let scope = if kind == Kind::Cluster { "Cluster" } else { "Namespaced" };
    let short = match kind {
        Kind::Cluster => "tfrc",
        Kind::Tenant => "tfrt",
        Kind::Server => "tfrsv",
    };
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": { "name": format!("{plural}.{GROUP}") },
        "spec": {
            "group": GROUP,
            "names": { "kind": kind.as_str(), "listKind": format!("{}List", kind.as_str()), "plural": plural, "singular": singular, "shortNames": [short] },
            "scope": scope,
            "versions": [{
                "name": "v1alpha1",
                "served": true,
                "storage": true,
                "schema": { "openAPIV3Schema": structural },
            }],
        },
    })
}

/// The structural schema (what the apiserver accepts in a CRD) of a schemars `schema`, whose
/// `$ref`s point into `defs`: references inlined, `anyOf`s of constants made enums, nullable
/// types marked `nullable`, numbers-or-strings `x-kubernetes-int-or-string`.
fn structural(schema: &Json, defs: &Json, depth: usize) -> Json {
    let Some(object) = schema.as_object() else { return json!({}) };
    if depth > 32 {
        return json!({ "type": "object", "x-kubernetes-preserve-unknown-fields": true });
    }
    if let Some(reference) = object.get("$ref").and_then(Json::as_str) {
        return structural(&resolve(reference, object, defs), defs, depth + 1);
    }
    let mut out = Map::new();
    if let Some(branches) = object.get("anyOf").or_else(|| object.get("oneOf")).and_then(Json::as_array) {
        any_of(branches, defs, depth, &mut out);
    }
    for (key, value) in object {
        match key.as_str() {
            "type" => types(value, &mut out),
            "properties" => {
                let properties: Map<String, Json> = value
                    .as_object()
                    .map(|p| p.iter().map(|(k, v)| (k.clone(), structural(v, defs, depth + 1))).collect())
                    .unwrap_or_default();
                out.insert("properties".into(), Json::Object(properties));
            }
            "items" => {
                out.insert("items".into(), structural(value, defs, depth + 1));
            }
            "additionalProperties" if value.is_object() => {
                out.insert("additionalProperties".into(), structural(value, defs, depth + 1));
            }
            "const" => {
                out.insert("enum".into(), json!([value]));
            }
            "description" | "default" | "enum" | "minimum" | "maximum" | "pattern" | "maxLength" | "minLength" | "maxProperties"
            | "minProperties" | "required" | "maxItems" | "minItems" => {
                out.insert(key.clone(), value.clone());
            }
            _ => {}
        }
    }
    if out.get("nullable") == Some(&json!(true)) && out.get("default") == Some(&Json::Null) {
        out.remove("default");
    }
    if !out.contains_key("type") && out.contains_key("properties") {
        out.insert("type".into(), json!("object"));
    }
    Json::Object(out)
}

/// The definition `reference` names, with the description and default of the referring
/// `object`.
fn resolve(reference: &str, object: &Map<String, Json>, defs: &Json) -> Json {
    let name = reference.trim_start_matches("#/$defs/");
    let mut resolved = defs.get(name).cloned().unwrap_or(json!({}));
    if let (Some(target), Some(description)) = (resolved.as_object_mut(), object.get("description")) {
        target.insert("description".into(), description.clone());
    }
    if let (Some(target), Some(default)) = (resolved.as_object_mut(), object.get("default")) {
        target.insert("default".into(), default.clone());
    }
    resolved
}

/// An `anyOf` (or `oneOf`): constants become a string enum; otherwise the first branch that
/// is not `null`, nullable when one is.
fn any_of(branches: &[Json], defs: &Json, depth: usize, out: &mut Map<String, Json>) {
    let constants: Option<Vec<Json>> = branches
        .iter()
        .map(|b| {
            b.get("const").cloned().or_else(|| b.get("enum").and_then(Json::as_array).and_then(|e| (e.len() == 1).then(|| e[0].clone())))
        })
        .collect();
    if let Some(values) = constants {
        out.insert("type".into(), json!("string"));
        out.insert("enum".into(), Json::Array(values));
        return;
    }
    let non_null: Vec<&Json> = branches.iter().filter(|b| b.get("type") != Some(&json!("null"))).collect();
    if let Some(first) = non_null.first()
        && let Json::Object(inner) = structural(first, defs, depth + 1)
    {
        out.extend(inner);
    }
    if non_null.len() < branches.len() {
        out.insert("nullable".into(), json!(true));
    }
}

/// A `type`: one type, or a list of them, which a structural schema writes as one type and
/// `nullable`, or as `x-kubernetes-int-or-string`.
fn types(value: &Json, out: &mut Map<String, Json>) {
    match value {
        Json::Array(types) if types.iter().any(|t| t == "string") && types.iter().any(|t| t == "number" || t == "integer") => {
            out.insert("x-kubernetes-int-or-string".into(), json!(true));
            out.insert("anyOf".into(), json!([{ "type": "integer" }, { "type": "string" }]));
            if types.iter().any(|t| t == "null") {
                out.insert("nullable".into(), json!(true));
            }
        }
        Json::Array(types) => {
            if let Some(t) = types.iter().find(|t| *t != "null") {
                out.insert("type".into(), t.clone());
            }
            if types.iter().any(|t| t == "null") {
                out.insert("nullable".into(), json!(true));
            }
        }
        other => {
            out.insert("type".into(), other.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn walk(schema: &Json, path: &str, problems: &mut Vec<String>) {
        let Some(object) = schema.as_object() else { return };
        let int_or_string = object.get("x-kubernetes-int-or-string") == Some(&json!(true));
        for forbidden in ["$ref", "anyOf", "oneOf", "allOf", "const", "$defs", "format", "propertyNames", "x-tfrs-check"] {
            if object.contains_key(forbidden) && !(int_or_string && forbidden == "anyOf") {
                problems.push(format!("{path}: {forbidden}"));
            }
        }
        if !object.contains_key("type") && !object.contains_key("x-kubernetes-preserve-unknown-fields") && !int_or_string {
            problems.push(format!("{path}: no type"));
        }
        if object.get("type").is_some_and(Json::is_array) {
            problems.push(format!("{path}: type list"));
        }
        if object.contains_key("properties") && object.contains_key("additionalProperties") {
            problems.push(format!("{path}: properties and additionalProperties"));
        }
        if let Some(properties) = object.get("properties").and_then(Json::as_object) {
            for (k, v) in properties {
                walk(v, &format!("{path}.{k}"), problems);
            }
        }
        for key in ["items", "additionalProperties"] {
            if let Some(v) = object.get(key).filter(|v| v.is_object()) {
                walk(v, &format!("{path}.{key}"), problems);
            }
        }
    }

    #[test]
    fn crd_schemas_are_structural() {
        for kind in Kind::ALL {
            let crd = crd(kind);
            let schema = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
            let mut problems = Vec::new();
            walk(schema, kind.as_str(), &mut problems);
            assert!(problems.is_empty(), "{problems:#?}");
            assert_eq!(schema["properties"]["spec"]["type"], "object");
        }
    }

    #[test]
    fn enums_and_patterns_survive() {
        let crd = crd(Kind::Tenant);
        let spec = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"];
        assert_eq!(spec["properties"]["type"]["enum"], json!(["enterprise", "personal"]));
        assert!(spec["properties"]["postgresql"]["properties"]["storage"]["pattern"].is_string());
    }
}
