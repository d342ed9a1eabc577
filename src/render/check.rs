//! Template output is data: every rendered document is parsed back and checked before it is
//! accepted (the whole tree is checked once more when it is laid out, `crate::tree::build`).

use super::names::{CLUSTER_LABEL, COMPONENT, MANAGED_BY, PART_OF};
use super::resource::{Resource, is_cluster_scoped};
use crate::spec::yaml;
use serde_json::{Map, Value as Json};
use std::collections::BTreeSet;

/// What a component may touch.
#[derive(Debug, Clone, Default)]
pub struct Scope {
    /// The component id, for messages.
    pub component: String,
    /// The cluster name (label).
    pub cluster: String,
    /// Namespaces its objects may live in (and Namespace objects it may create).
    pub namespaces: BTreeSet<String>,
    /// Cluster-scoped kinds it may create besides `Namespace`.
    pub cluster_kinds: BTreeSet<String>,
}

/// Parses a rendered YAML stream into objects and checks each: a map with string
/// `apiVersion`, `kind` and `metadata.name`; a valid name; never a `Secret` (Secrets come only
/// from the sealing stage); namespaced objects in a namespace the component may touch;
/// cluster-scoped objects only of the kinds it may create. Empty documents are skipped.
/// Every object gets the tfrs labels.
///
/// # Errors
///
/// Every problem found, one message each.
pub fn objects(template: &str, text: &str, scope: &Scope) -> Result<Vec<Resource>, Vec<String>> {
    let documents = match yaml::parse(0, text) {
        Ok(documents) => documents,
        Err(errors) => {
            return Err(errors
                .into_iter()
                .map(|e| format!("template `{template}` produced invalid YAML at line {}: {}", e.origin.line, e.message))
                .collect());
        }
    };
    let mut problems = Vec::new();
    let mut out = Vec::new();
    for (index, document) in documents.iter().enumerate() {
        let body = document.to_json();
        if body.is_null() {
            continue;
        }
        let at = format!("template `{template}` document {}", index + 1);
        match check(body, scope) {
            Ok(resource) => out.push(resource),
            Err(message) => problems.push(format!("{at}: {message}")),
        }
    }
    if problems.is_empty() { Ok(out) } else { Err(problems) }
}

fn check(mut body: Json, scope: &Scope) -> Result<Resource, String> {
    if !body.is_object() {
        return Err(format!("expected a Kubernetes object (a map), found {}", kind_of(&body)));
    }
    for field in ["/apiVersion", "/kind", "/metadata/name"] {
        match body.pointer(field) {
            Some(Json::String(text)) if !text.is_empty() => {}
            Some(other) => return Err(format!("`{}` must be a non-empty string, found {}", &field[1..].replace('/', "."), kind_of(other))),
            None => return Err(format!("missing `{}`", &field[1..].replace('/', "."))),
        }
    }
    if body.pointer("/metadata/labels").is_some_and(|labels| !labels.is_object()) {
        return Err(format!("`metadata.labels` must be a map, found {}", kind_of(&body["metadata"]["labels"])));
    }
    add_labels(&mut body, scope);
    name_job_by_spec(&mut body);
    let Some(resource) = Resource::from_json(&body).map_err(|e| format!("cannot write as YAML: {e}"))? else {
        return Err("missing identity fields".to_owned());
    };
    if !is_dns_subdomain(&resource.id.name) {
        return Err(format!("`{}`: name is not a DNS-1123 subdomain", resource.id));
    }
    if resource.id.kind == "Secret" && resource.id.api_version == "v1" {
        return Err(format!("`{}`: templates must not produce Secrets; tfrs renders and seals them itself", resource.id));
    }
    if is_cluster_scoped(&resource.id.kind) {
        if let Some(namespace) = &resource.id.namespace {
            return Err(format!("`{}`: a cluster-scoped {} has no namespace, found `{namespace}`", resource.id, resource.id.kind));
        }
        let allowed = if resource.id.kind == "Namespace" {
            scope.namespaces.contains(&resource.id.name)
        } else {
            scope.cluster_kinds.contains(&resource.id.kind)
        };
        if !allowed {
            return Err(format!("`{}`: component `{}` may not create this cluster-scoped object", resource.id, scope.component));
        }
    } else {
        match &resource.id.namespace {
            None => return Err(format!("`{}`: a namespaced object needs `metadata.namespace`", resource.id)),
            Some(namespace) if !scope.namespaces.contains(namespace) => {
                let allowed = scope.namespaces.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ");
                return Err(format!("`{}`: component `{}` may only touch namespaces {allowed}", resource.id, scope.component));
            }
            Some(_) => {}
        }
    }
    Ok(resource)
}

/// A one-shot Job's name ends in a hash of its `spec`: a Job's pod template is immutable, so a
/// changed Job is a new Job (the GitOps engine prunes the old one) rather than an update the API
/// server refuses, and an unchanged Job keeps its name and is never re-run. The name stays a
/// valid label value (63 characters), which the Job controller puts on its pods: a long base is
/// shortened, the hash kept.
fn name_job_by_spec(body: &mut Json) {
    use sha2::{Digest, Sha256};
    if body["apiVersion"] != "batch/v1" || body["kind"] != "Job" {
        return;
    }
    let Some(base) = body["metadata"]["name"].as_str() else { return };
    // NB: serde_json writes maps in insertion order, which is the template's: stable per render.
    let digest = Sha256::digest(body["spec"].to_string().as_bytes());
    let hash = crate::secrets::bytes::to_hex(&digest[..4]);
    let base = &base[..base.len().min(63 - 1 - hash.len())];
    body["metadata"]["name"] = Json::from(format!("{}-{hash}", base.trim_end_matches(['-', '.'])));
}

fn add_labels(body: &mut Json, scope: &Scope) {
    let short = scope.component.rsplit('/').next().unwrap_or(&scope.component);
    let Some(metadata) = body.get_mut("metadata").and_then(Json::as_object_mut) else { return };
    let labels = metadata.entry("labels").or_insert_with(|| Json::Object(Map::new()));
    if let Some(labels) = labels.as_object_mut() {
        labels.insert(MANAGED_BY.0.to_owned(), Json::from(MANAGED_BY.1));
        labels.entry(PART_OF).or_insert_with(|| Json::from("tfrs"));
        labels.entry(COMPONENT).or_insert_with(|| Json::from(short));
        labels.entry(CLUSTER_LABEL).or_insert_with(|| Json::from(scope.cluster.as_str()));
    }
}

fn kind_of(value: &Json) -> &'static str {
    match value {
        Json::Null => "null",
        Json::Bool(_) => "a boolean",
        Json::Number(_) => "a number",
        Json::String(_) => "a string",
        Json::Array(_) => "a list",
        Json::Object(_) => "a map",
    }
}

/// Whether `name` is a DNS-1123 subdomain (lowercase alphanumerics, `-` and `.`, at most 253).
#[must_use]
pub fn is_dns_subdomain(name: &str) -> bool {
    name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope() -> Scope {
        Scope {
            component: "cluster/x".into(),
            cluster: "c".into(),
            namespaces: ["ns".to_owned()].into_iter().collect(),
            cluster_kinds: BTreeSet::new(),
        }
    }

    #[test]
    fn jobs_are_named_by_their_spec() {
        let job = |image: &str, name: &str| {
            let text = format!(
                "apiVersion: batch/v1\nkind: Job\nmetadata: {{name: {name}, namespace: ns}}\nspec: {{template: {{spec: {{containers: [{{name: c, image: {image}}}]}}}}}}\n"
            );
            objects("t", &text, &scope()).expect("a Job").remove(0).id.name
        };
        let first = job("busybox:1", "robot-db-init");
        assert!(first.starts_with("robot-db-init-") && first.len() == "robot-db-init-".len() + 8, "{first}");
        assert_eq!(first, job("busybox:1", "robot-db-init"), "the same spec keeps its name");
        assert_ne!(first, job("busybox:2", "robot-db-init"), "a changed spec is a new Job");
        let long = job("busybox:1", &"x".repeat(62));
        assert_eq!(long.len(), 63, "{long}");
    }

    #[test]
    fn accepts_objects_and_adds_labels() {
        let objects = objects("t", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: ns}\n---\n", &scope()).unwrap();
        assert_eq!(objects.len(), 1);
        assert_eq!(objects[0].body()["metadata"]["labels"]["app.kubernetes.io/managed-by"], "tfrs");
        assert_eq!(objects[0].body()["metadata"]["labels"]["app.kubernetes.io/part-of"], "tfrs");
    }

    #[test]
    fn refuses_what_a_component_may_not_do() {
        let cases = [
            ("apiVersion: v1\nkind: Secret\nmetadata: {name: a, namespace: ns}\n", "must not produce Secrets"),
            ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: other}\n", "may only touch namespaces"),
            ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n", "needs `metadata.namespace`"),
            ("apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: a}\n", "may not create"),
            ("apiVersion: v1\nkind: Namespace\nmetadata: {name: kube-system}\n", "may not create"),
            ("kind: ConfigMap\nmetadata: {name: a, namespace: ns}\n", "missing `apiVersion`"),
            ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: 12, namespace: ns}\n", "must be a non-empty string"),
            ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: A_b, namespace: ns}\n", "DNS-1123"),
            ("- a\n", "expected a Kubernetes object"),
            ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: ns, labels: [a]}\n", "`metadata.labels` must be a map"),
            ("a: [\n", "invalid YAML"),
        ];
        for (text, expected) in cases {
            let problems = objects("t", text, &scope()).unwrap_err();
            assert!(problems.iter().any(|p| p.contains(expected)), "{text:?}: {problems:?}");
        }
    }
}
