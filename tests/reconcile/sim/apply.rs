//! Server-side apply with field ownership: each field manager owns the leaf paths it applied, a
//! different value for another manager's field is a conflict unless forced, fields a manager no
//! longer applies are removed, and `dryRun` persists nothing.

use super::{Kind, Reply, State, Stored, failure, id_of, merge, reply, text};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

/// Leaf paths of an applied object (lists are atomic leaves); identity fields excluded.
fn leaves(value: &Value, prefix: &str, out: &mut BTreeSet<String>) {
    match value {
        Value::Object(map) if !map.is_empty() => {
            for (key, child) in map {
                let path = format!("{prefix}.{key}");
                if matches!(path.as_str(), ".apiVersion" | ".kind" | ".metadata.name" | ".metadata.namespace" | ".status") {
                    continue;
                }
                leaves(child, &path, out);
            }
        }
        _ => {
            out.insert(prefix.to_owned());
        }
    }
}

fn at<'a>(value: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').skip(1).try_fold(value, |v, key| v.get(key))
}

fn remove_at(value: &mut Value, path: &str) {
    let keys: Vec<&str> = path.split('.').skip(1).collect();
    let Some((last, parents)) = keys.split_last() else { return };
    let mut current = value;
    for key in parents {
        match current.get_mut(*key) {
            Some(next) => current = next,
            None => return,
        }
    }
    if let Some(map) = current.as_object_mut() {
        map.remove(*last);
    }
}

fn spec_part(object: &Value) -> Value {
    let mut copy = object.clone();
    if let Some(map) = copy.as_object_mut() {
        map.remove("metadata");
        map.remove("status");
    }
    copy
}

fn has_generation(kind: &Kind) -> bool {
    !(kind.group.is_empty() && matches!(kind.kind.as_str(), "ConfigMap" | "Secret" | "Namespace" | "ServiceAccount" | "Service"))
}

impl State {
    pub(super) fn apply(
        &mut self,
        kind: &Kind,
        namespace: &str,
        name: &str,
        body: &[u8],
        query: &BTreeMap<String, String>,
        now: Instant,
    ) -> Reply {
        let Some(manager) = query.get("fieldManager").filter(|m| !m.is_empty()).cloned() else {
            return failure(
                422,
                "Invalid",
                "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch".into(),
                json!({"group": "meta.k8s.io", "kind": "PatchOptions", "causes": [{"reason": "FieldValueRequired", "message": "Required value: is required for apply patch", "field": "fieldManager"}]}),
            );
        };
        let Ok(mut applied) = serde_json::from_slice::<Value>(body) else {
            return failure(400, "BadRequest", "the body is not JSON".into(), json!({}));
        };
        let body_name = text(&applied, "/metadata/name").to_owned();
        if body_name != name {
            return failure(
                400,
                "BadRequest",
                format!("the name of the object ({body_name}) does not match the name on the URL ({name})"),
                json!({}),
            );
        }
        if text(&applied, "/kind").is_empty() {
            return failure(500, "InternalError", "Object 'Kind' is missing".into(), json!({}));
        }
        if kind.namespaced {
            let key = (String::new(), "namespaces".to_owned(), String::new(), namespace.to_owned());
            if !self.objects.contains_key(&key) {
                return failure(
                    404,
                    "NotFound",
                    format!("namespaces \"{namespace}\" not found"),
                    json!({"name": namespace, "kind": "namespaces"}),
                );
            }
            applied["metadata"]["namespace"] = json!(namespace);
        }
        // NB: a status stanza in an apply takes field ownership on a 1.20 server; the simulator
        // drops it like the main resource endpoint does for everything with a status subresource.
        if let Some(map) = applied.as_object_mut() {
            map.remove("status");
        }
        let force = query.get("force").is_some_and(|f| f == "true");
        let dry_run = query.contains_key("dryRun");
        let key = (kind.group.clone(), kind.plural.clone(), namespace.to_owned(), name.to_owned());
        let mut fields = BTreeSet::new();
        leaves(&applied, "", &mut fields);
        let existing = self.objects.get(&key).cloned();
        let mut owners = existing.as_ref().map(|s| s.owners.clone()).unwrap_or_default();
        let mut object = existing.as_ref().map_or_else(|| json!({}), |s| s.object.clone());
        let mut conflicts = Vec::new();
        for (other, owned) in &owners {
            if other == &manager {
                continue;
            }
            for field in owned.intersection(&fields) {
                if at(&object, field) != at(&applied, field) {
                    conflicts.push((other.clone(), field.clone()));
                }
            }
        }
        if !conflicts.is_empty() && !force {
            let causes: Vec<Value> = conflicts
                .iter()
                .map(|(m, f)| json!({"reason": "FieldManagerConflict", "message": format!("conflict with \"{m}\""), "field": f}))
                .collect();
            let list: Vec<String> = conflicts.iter().map(|(m, f)| format!("conflict with \"{m}\": {f}")).collect();
            return failure(
                409,
                "Conflict",
                format!(
                    "Apply failed with {} conflict{}: {}",
                    conflicts.len(),
                    if conflicts.len() == 1 { "" } else { "s" },
                    list.join("; ")
                ),
                json!({"causes": causes}),
            );
        }
        for (other, owned) in owners.iter_mut() {
            if other != &manager {
                owned.retain(|f| !fields.contains(f));
            }
        }
        let previous = owners.get(&manager).cloned().unwrap_or_default();
        for dropped in previous.difference(&fields) {
            if !owners.iter().any(|(m, owned)| m != &manager && owned.contains(dropped)) {
                remove_at(&mut object, dropped);
            }
        }
        let before_spec = spec_part(&object);
        merge(&mut object, &applied);
        owners.insert(manager.clone(), fields);
        let created = existing.is_none();
        let spec_changed = created || spec_part(&object) != before_spec;
        let metadata_changed = existing.as_ref().is_none_or(|s| {
            s.object.get("metadata").map(|m| {
                let mut m = m.clone();
                if let Some(map) = m.as_object_mut() {
                    for f in ["resourceVersion", "generation", "uid", "creationTimestamp", "managedFields"] {
                        map.remove(f);
                    }
                }
                m
            }) != object.get("metadata").map(|m| {
                let mut m = m.clone();
                if let Some(map) = m.as_object_mut() {
                    for f in ["resourceVersion", "generation", "uid", "creationTimestamp", "managedFields"] {
                        map.remove(f);
                    }
                }
                m
            })
        });
        let changed = spec_changed || metadata_changed || owners != existing.as_ref().map(|s| s.owners.clone()).unwrap_or_default();
        object["apiVersion"] = json!(kind.api_version());
        object["kind"] = json!(kind.kind);
        let generation = object.pointer("/metadata/generation").and_then(Value::as_i64).unwrap_or(0);
        if has_generation(kind) && spec_changed {
            object["metadata"]["generation"] = json!(generation + 1);
        }
        if created {
            object["metadata"]["uid"] = json!(format!("uid-{}", self.version + 1));
            object["metadata"]["creationTimestamp"] = json!("2026-01-01T00:00:00Z");
        }
        object["metadata"]["managedFields"] =
            json!(owners.keys().map(|m| json!({"manager": m, "operation": "Apply", "fieldsType": "FieldsV1"})).collect::<Vec<_>>());
        if dry_run {
            if changed {
                object["metadata"]["resourceVersion"] = json!((self.version + 1).to_string());
            }
            return reply(if created { 201 } else { 200 }, &object);
        }
        if !changed {
            return reply(200, &existing.map(|s| s.object).unwrap_or(object));
        }
        let version = self.bump();
        object["metadata"]["resourceVersion"] = json!(version);
        let due = existing.as_ref().and_then(|s| s.due);
        self.objects.insert(key.clone(), Stored { object: object.clone(), owners, due });
        let id = id_of(&object);
        let life = self.lives.entry(id).or_default();
        life.applied.get_or_insert(now);
        if spec_changed {
            self.schedule(&key, now);
        }
        let stored = self.objects.get(&key).map(|s| s.object.clone()).unwrap_or(object);
        reply(if created { 201 } else { 200 }, &stored)
    }
}
