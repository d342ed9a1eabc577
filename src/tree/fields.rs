//! Field-level changes between two versions of one object (pure), for the JSON diff: each
//! changed leaf with its path, its value before and after. Both objects are already masked
//! (sealed values read `<sealed>`), so no secret can appear here.
//!
//! Paths are dotted (`spec.replicas`); a key that is not a plain identifier is quoted
//! (`metadata.annotations["checksum/config"]`). A list whose items all carry a `name` is matched
//! by name (`spec.template.spec.containers[name=api].image`), so inserting a container does not
//! report every one after it as changed; any other list is compared by index (`args[2]`).

use serde::Serialize;
use serde_json::Value as Json;

/// At most this many field changes are listed per object; `truncated` says when more changed.
pub const LIMIT: usize = 200;

/// One changed leaf (or a whole subtree added or removed).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FieldChange {
    /// Where, from the object's root.
    pub path: String,
    /// The value before; `null` when the field was added.
    pub before: Json,
    /// The value after; `null` when the field was removed.
    pub after: Json,
}

/// The changed fields of `before` -> `after` (in `before`'s order, then the added ones), at
/// most [`LIMIT`]; the flag says whether more were left out.
#[must_use]
pub fn changes(before: &Json, after: &Json) -> (Vec<FieldChange>, bool) {
    let mut out = Vec::new();
    let mut truncated = false;
    walk(before, after, "", &mut out, &mut truncated);
    (out, truncated)
}

fn push(out: &mut Vec<FieldChange>, truncated: &mut bool, path: &str, before: &Json, after: &Json) {
    if out.len() == LIMIT {
        *truncated = true;
        return;
    }
    out.push(FieldChange { path: path.to_owned(), before: before.clone(), after: after.clone() });
}

fn walk(before: &Json, after: &Json, path: &str, out: &mut Vec<FieldChange>, truncated: &mut bool) {
    if before == after {
        return;
    }
    match (before, after) {
        (Json::Object(a), Json::Object(b)) => {
            for (key, old) in a {
                walk(old, b.get(key).unwrap_or(&Json::Null), &key_path(path, key), out, truncated);
            }
            for (key, new) in b.iter().filter(|(key, _)| !a.contains_key(*key)) {
                walk(&Json::Null, new, &key_path(path, key), out, truncated);
            }
        }
        (Json::Array(a), Json::Array(b)) if named(a) && named(b) => {
            let name = |item: &Json| item.get("name").and_then(Json::as_str).unwrap_or_default().to_owned();
            for old in a {
                let here = format!("{path}[name={}]", name(old));
                let new = b.iter().find(|item| name(item) == name(old));
                walk(old, new.unwrap_or(&Json::Null), &here, out, truncated);
            }
            for new in b.iter().filter(|new| !a.iter().any(|old| name(old) == name(new))) {
                walk(&Json::Null, new, &format!("{path}[name={}]", name(new)), out, truncated);
            }
        }
        (Json::Array(a), Json::Array(b)) => {
            for index in 0..a.len().max(b.len()) {
                walk(a.get(index).unwrap_or(&Json::Null), b.get(index).unwrap_or(&Json::Null), &format!("{path}[{index}]"), out, truncated);
            }
        }
        _ => push(out, truncated, path, before, after),
    }
}

/// Whether every item of a non-empty list is an object with a string `name`, all distinct.
fn named(items: &[Json]) -> bool {
    let names: Vec<&str> = items.iter().filter_map(|item| item.get("name").and_then(Json::as_str)).collect();
    let mut unique = names.clone();
    unique.sort_unstable();
    unique.dedup();
    !items.is_empty() && names.len() == items.len() && unique.len() == names.len()
}

fn key_path(path: &str, key: &str) -> String {
    let plain = !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    match (path.is_empty(), plain) {
        (true, true) => key.to_owned(),
        (false, true) => format!("{path}.{key}"),
        (_, false) => format!("{path}[{}]", Json::from(key)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn leaves_are_listed_with_paths_and_named_lists_match_by_name() {
        let before = json!({"spec": {"replicas": 1, "template": {"metadata": {"annotations": {"checksum/config": "a"}},
            "spec": {"containers": [{"name": "api", "image": "x:1"}, {"name": "worker", "image": "w:1"}]}}}});
        let after = json!({"spec": {"replicas": 2, "template": {"metadata": {"annotations": {"checksum/config": "b"}},
            "spec": {"containers": [{"name": "sidecar", "image": "s:1"}, {"name": "api", "image": "x:2"}, {"name": "worker", "image": "w:1"}]}}}});
        let (found, truncated) = changes(&before, &after);
        assert!(!truncated);
        let paths: Vec<&str> = found.iter().map(|c| c.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "spec.replicas",
                "spec.template.metadata.annotations[\"checksum/config\"]",
                "spec.template.spec.containers[name=api].image",
                "spec.template.spec.containers[name=sidecar]",
            ]
        );
        assert_eq!(found[2].before, json!("x:1"));
        assert_eq!(found[2].after, json!("x:2"));
        assert_eq!(found[3].before, Json::Null);
        assert_eq!(found[3].after, json!({"name": "sidecar", "image": "s:1"}));
    }

    #[test]
    fn other_lists_compare_by_index_and_removed_fields_are_null_after() {
        let (found, _) = changes(&json!({"args": ["a", "b"], "gone": 1}), &json!({"args": ["a", "c", "d"]}));
        let summary: Vec<(String, Json, Json)> = found.into_iter().map(|c| (c.path, c.before, c.after)).collect();
        assert_eq!(
            summary,
            [
                ("args[1]".to_owned(), json!("b"), json!("c")),
                ("args[2]".to_owned(), Json::Null, json!("d")),
                ("gone".to_owned(), json!(1), Json::Null),
            ]
        );
    }

    #[test]
    fn the_list_is_capped() {
        let before = Json::Array((0..LIMIT + 5).map(Json::from).collect());
        let after = Json::Array((0..LIMIT + 5).map(|i| Json::from(i + 1)).collect());
        let (found, truncated) = changes(&before, &after);
        assert_eq!(found.len(), LIMIT);
        assert!(truncated);
        assert!(changes(&before, &before).0.is_empty());
    }
}
