//! What a reviewer of a rendered change needs first: which workloads will roll and why, what
//! happens to sealed values, and which changes are risky (data, storage, removals). Computed
//! from the two trees' objects; never from, nor showing, a secret value.

use super::Files;
use super::diff::{Change, Diff, Entry, SealedChange};
use serde::Serialize;
use serde_json::Value as Json;
use std::collections::BTreeMap;

/// Kinds whose pods are replaced when their pod template changes.
const WORKLOADS: &[&str] = &["Deployment", "StatefulSet", "DaemonSet"];

/// A workload whose pods will be replaced.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Roll {
    /// The index of its entry in the diff.
    #[serde(skip)]
    pub entry: usize,
    /// `Kind namespace/name` in its cluster.
    pub object: String,
    /// The cluster.
    pub cluster: String,
    /// Why: `image <container> a -> b`, `config`, `credentials`, `pod template`.
    pub reasons: Vec<String>,
}

/// A change a reviewer must look at twice.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Risk {
    /// The index of its entry in the diff (`usize::MAX` for a spec object, such as a removed
    /// tenant, listed after every entry).
    #[serde(skip)]
    pub entry: usize,
    /// `Kind namespace/name` in its cluster.
    pub object: String,
    /// The cluster.
    pub cluster: String,
    /// What makes it risky.
    pub reason: String,
}

/// One sealed value of the summary: never its value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SealedKey {
    /// The index of its entry in the diff.
    #[serde(skip)]
    pub entry: usize,
    /// `Kind namespace/name` of the object that seals it.
    pub object: String,
    /// Its cluster.
    pub cluster: String,
    /// Its key.
    pub key: String,
}

impl std::fmt::Display for SealedKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {} {}", self.cluster, self.object, self.key)
    }
}

/// The summary of one diff.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Review {
    /// Workloads that roll.
    pub rolls: Vec<Roll>,
    /// Sealed values by what happened to them (`rotated` for any change, until
    /// [`Review::classify_changes`] tells them apart; `added`, `resealed`, `removed`).
    pub secrets: BTreeMap<String, Vec<SealedKey>>,
    /// Risky changes.
    pub risks: Vec<Risk>,
}

impl Review {
    /// Splits the changed sealed values by what changed them, from their objects' causes (see
    /// [`crate::tree::cause`]): a `generate` setting of a spec object (`rotated`); a provided
    /// value (`provided-changed`): a `value`, `fromFile` or `fromEnv` setting, or nothing in
    /// the specs (so the content of a file or variable) while the same tfrs rendered both sides;
    /// anything else (`changed`: a value built from other settings, or causes unknown).
    ///
    /// `provided` says what is known of a value's own source: `Some(true)` provided,
    /// `Some(false)` generated (a server's `secretData` key); that decides first.
    pub fn classify_changes(
        &mut self,
        causes: &[Vec<crate::tree::cause::Cause>],
        same_tfrs: bool,
        provided: &dyn Fn(&SealedKey) -> Option<bool>,
    ) {
        let Some(changed) = self.secrets.remove("rotated") else { return };
        for key in changed {
            let causes = causes.get(key.entry).map_or(&[][..], Vec::as_slice);
            let segments = || causes.iter().flat_map(|c| &c.fields).flat_map(|f| f.field.split(['.', '[']));
            let verb = if let Some(provided) = provided(&key) {
                if provided { "provided-changed" } else { "rotated" }
            } else if segments().any(|s| s == "generate") {
                "rotated"
            } else if segments().any(|s| matches!(s, "value" | "fromFile" | "fromEnv"))
                || (same_tfrs && !causes.is_empty() && causes.iter().all(|c| c.change == "unchanged"))
            {
                "provided-changed"
            } else {
                "changed"
            };
            self.secrets.entry(verb.to_owned()).or_default().push(key);
        }
    }
}

/// Reviews `diff`, the difference of `old` and `new` (the same trees it was computed from).
#[must_use]
pub fn review(old: &Files, new: &Files, diff: &Diff) -> Review {
    let mut out = Review::default();
    for (index, entry) in diff.entries.iter().enumerate() {
        let before = (entry.change != Change::Added).then(|| old.get(&entry.path).and_then(|b| crate::manifest::read_object(b))).flatten();
        let after = (entry.change != Change::Removed).then(|| new.get(&entry.path).and_then(|b| crate::manifest::read_object(b))).flatten();
        for sealed in entry.sealed.iter().filter(|s| s.change != SealedChange::Unchanged) {
            let verb = if sealed.change == SealedChange::Changed { "rotated".to_owned() } else { sealed.change.to_string() };
            let key = SealedKey { entry: index, object: entry.title(), cluster: entry.cluster.clone(), key: sealed.key.clone() };
            out.secrets.entry(verb).or_default().push(key);
        }
        if let Some(reasons) = rolls(entry, before.as_ref(), after.as_ref()) {
            out.rolls.push(Roll { entry: index, object: entry.title(), cluster: entry.cluster.clone(), reasons });
        }
        for reason in risks(entry, before.as_ref(), after.as_ref()) {
            out.risks.push(Risk { entry: index, object: entry.title(), cluster: entry.cluster.clone(), reason });
        }
    }
    out
}

/// Why a changed workload's pods roll, or `None` when they do not.
fn rolls(entry: &Entry, before: Option<&Json>, after: Option<&Json>) -> Option<Vec<String>> {
    let kind = entry.kind.as_deref()?;
    if entry.change != Change::Changed || !WORKLOADS.contains(&kind) {
        return None;
    }
    let (before, after) = (before?.pointer("/spec/template")?, after?.pointer("/spec/template")?);
    if before == after {
        return None;
    }
    let mut reasons = Vec::new();
    let images = |template: &Json| -> BTreeMap<String, String> {
        ["/spec/containers", "/spec/initContainers"]
            .iter()
            .filter_map(|p| template.pointer(p).and_then(Json::as_array))
            .flatten()
            .filter_map(|c| Some((c.get("name")?.as_str()?.to_owned(), c.get("image")?.as_str()?.to_owned())))
            .collect()
    };
    let (old_images, new_images) = (images(before), images(after));
    for (container, image) in &new_images {
        match old_images.get(container) {
            Some(old) if old != image => reasons.push(format!("image {container} {old} -> {image}")),
            _ => {}
        }
    }
    let annotations = |template: &Json| template.pointer("/metadata/annotations").cloned().unwrap_or(Json::Null);
    let (old_notes, new_notes) = (annotations(before), annotations(after));
    for key in ["checksum/config", "checksum/credentials"] {
        if old_notes.get(key) != new_notes.get(key) {
            reasons.push(key.trim_start_matches("checksum/").to_owned());
        }
    }
    let mut stripped = (before.clone(), after.clone());
    for template in [&mut stripped.0, &mut stripped.1] {
        if let Some(notes) = template.pointer_mut("/metadata/annotations").and_then(Json::as_object_mut) {
            notes.retain(|key, _| !key.starts_with("checksum/"));
        }
        for path in ["/spec/containers", "/spec/initContainers"] {
            for container in template.pointer_mut(path).and_then(Json::as_array_mut).into_iter().flatten() {
                if let Some(container) = container.as_object_mut() {
                    container.remove("image");
                }
            }
        }
    }
    if stripped.0 != stripped.1 || reasons.is_empty() {
        reasons.push("pod template".to_owned());
    }
    Some(reasons)
}

/// What is risky about one entry: data and storage, and removals that take things with them.
fn risks(entry: &Entry, before: Option<&Json>, after: Option<&Json>) -> Vec<String> {
    let Some(kind) = entry.kind.as_deref() else { return Vec::new() };
    let mut out = Vec::new();
    if entry.change == Change::Removed {
        match kind {
            "Namespace" => out.push("namespace removed: everything in it is deleted, volumes included".to_owned()),
            "CustomResourceDefinition" => out.push("CRD removed: every object of it is deleted".to_owned()),
            "PersistentVolumeClaim" => out.push("volume claim removed: its data may be deleted".to_owned()),
            "HelmRelease" | "Application" => {
                out.push("release removed: what it installed (an operator, its CRDs) is uninstalled".to_owned())
            }
            // NB: a cluster component's Flux Kustomization installs an operator from its
            // upstream source (`prune: true`): removing it uninstalls the operator and its CRDs.
            "Kustomization" if entry.component.starts_with("cluster/") => {
                out.push("operator installation removed: the operator and its CRDs are pruned".to_owned())
            }
            "Cluster" | "Tenant" | "RabbitmqCluster" => out.push("data service removed".to_owned()),
            _ => {}
        }
        return out;
    }
    let (Some(before), Some(after)) = (before, after) else { return out };
    if kind == "StatefulSet" && before.pointer("/spec/volumeClaimTemplates") != after.pointer("/spec/volumeClaimTemplates") {
        out.push("volumeClaimTemplates changed: immutable, the StatefulSet must be recreated".to_owned());
    }
    if kind == "PersistentVolumeClaim" {
        // NB: a storage class change and a smaller request are said below, by themselves; a
        // larger request is a volume expansion.
        let spec = |o: &Json| {
            let mut spec = o.pointer("/spec").cloned().unwrap_or(Json::Null);
            if let Some(map) = spec.as_object_mut() {
                map.remove("storageClassName");
            }
            if let Some(requests) = spec.pointer_mut("/resources/requests").and_then(Json::as_object_mut) {
                requests.remove("storage");
            }
            spec
        };
        if spec(before) != spec(after) {
            out.push("volume claim spec changed".to_owned());
        }
    }
    let instances = |o: &Json| o.pointer("/spec/instances").and_then(Json::as_u64);
    if let (Some(old), Some(new)) = (instances(before), instances(after))
        && new < old
    {
        out.push(format!("database instances decreased {old} -> {new}"));
    }
    let mut classes = Vec::new();
    storage_classes(before, after, "", &mut classes);
    out.extend(classes);
    // NB: a volume cannot shrink (CNPG refuses, and a PVC's request cannot go down).
    storage_sizes(before, after, "", &mut out);
    out
}

/// Every volume size that decreased between two objects: a `storage` quantity (a claim's
/// `resources.requests.storage`, also inside a StatefulSet's or a MinIO pool's claim template,
/// a RabbitmqCluster's `persistence.storage`) or the `size` of a `storage`-named section (a
/// CNPG Cluster's `storage.size`, `walStorage.size`).
fn storage_sizes(before: &Json, after: &Json, path: &str, out: &mut Vec<String>) {
    match (before, after) {
        (Json::Object(a), Json::Object(b)) => {
            let section = path.rsplit(['.', ']']).next().unwrap_or_default().to_ascii_lowercase();
            for (key, new) in b {
                let Some(old) = a.get(key) else { continue };
                let here = format!("{path}.{key}");
                let sized = key == "storage" || (key == "size" && section.contains("storage"));
                if sized
                    && let (Some(x), Some(y)) = (old.as_str().and_then(quantity), new.as_str().and_then(quantity))
                    && y < x
                {
                    let (old, new) = (old.as_str().unwrap_or_default(), new.as_str().unwrap_or_default());
                    out.push(format!("storage size decreased at {}: {old} -> {new}", here.trim_start_matches('.')));
                } else {
                    storage_sizes(old, new, &here, out);
                }
            }
        }
        (Json::Array(a), Json::Array(b)) => {
            for (index, (old, new)) in a.iter().zip(b).enumerate() {
                storage_sizes(old, new, &format!("{path}[{index}]"), out);
            }
        }
        _ => {}
    }
}

/// A Kubernetes quantity (`50Gi`, `500M`, `1.5Ti`) in bytes; `None` for anything else.
fn quantity(text: &str) -> Option<f64> {
    const SUFFIXES: &[(&str, f64)] = &[
        ("Ki", 1024.0),
        ("Mi", 1_048_576.0),
        ("Gi", 1_073_741_824.0),
        ("Ti", 1_099_511_627_776.0),
        ("Pi", 1_125_899_906_842_624.0),
        ("k", 1e3),
        ("M", 1e6),
        ("G", 1e9),
        ("T", 1e12),
        ("P", 1e15),
    ];
    let (number, factor) =
        SUFFIXES.iter().find_map(|(suffix, factor)| text.strip_suffix(suffix).map(|n| (n, *factor))).unwrap_or((text, 1.0));
    number.parse::<f64>().ok().map(|n| n * factor)
}

/// Every storage class (`storageClass`, `storageClassName`) that differs between two objects,
/// set, changed or unset (unset: the cluster's default class).
fn storage_classes(before: &Json, after: &Json, path: &str, out: &mut Vec<String>) {
    const DEFAULT: &str = "(the default class)";
    let is_class = |key: &str| matches!(key, "storageClass" | "storageClassName");
    match (before, after) {
        (Json::Object(a), Json::Object(b)) => {
            for (key, value) in b {
                let here = format!("{path}.{key}");
                match a.get(key) {
                    Some(old) if is_class(key) && old != value => {
                        out.push(format!("storage class changed at {}: {old} -> {value}", here.trim_start_matches('.')));
                    }
                    None if is_class(key) => {
                        out.push(format!("storage class changed at {}: {DEFAULT} -> {value}", here.trim_start_matches('.')));
                    }
                    Some(old) => storage_classes(old, value, &here, out),
                    None => {}
                }
            }
            for (key, old) in a.iter().filter(|(key, _)| is_class(key) && !b.contains_key(*key)) {
                out.push(format!("storage class changed at {}: {old} -> {DEFAULT}", format!("{path}.{key}").trim_start_matches('.')));
            }
        }
        (Json::Array(a), Json::Array(b)) => {
            for (index, (old, new)) in a.iter().zip(b).enumerate() {
                storage_classes(old, new, &format!("{path}[{index}]"), out);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn found(walk: fn(&Json, &Json, &str, &mut Vec<String>), before: &Json, after: &Json) -> Vec<String> {
        let mut out = Vec::new();
        walk(before, after, "", &mut out);
        out
    }

    #[test]
    fn a_storage_class_set_changed_or_unset_is_a_class_change() {
        let claim = |class: Option<&str>| {
            let mut spec = json!({"resources": {"requests": {"storage": "1Gi"}}});
            if let Some(class) = class {
                spec["storageClassName"] = json!(class);
            }
            json!({"spec": spec})
        };
        assert_eq!(
            found(storage_classes, &claim(Some("nfs")), &claim(None)),
            ["storage class changed at spec.storageClassName: \"nfs\" -> (the default class)"]
        );
        assert_eq!(
            found(storage_classes, &claim(None), &claim(Some("fast"))),
            ["storage class changed at spec.storageClassName: (the default class) -> \"fast\""]
        );
        assert!(found(storage_classes, &claim(Some("nfs")), &claim(Some("nfs"))).is_empty());
    }

    #[test]
    fn a_volume_that_shrinks_anywhere_is_named_by_its_path() {
        let pool = |size: &str| json!({"spec": {"pools": [{"name": "p0", "volumeClaimTemplate": {"spec": {"resources": {"requests": {"storage": size}}}}}]}});
        assert_eq!(
            found(storage_sizes, &pool("10Gi"), &pool("5Gi")),
            ["storage size decreased at spec.pools[0].volumeClaimTemplate.spec.resources.requests.storage: 10Gi -> 5Gi"]
        );
        assert!(found(storage_sizes, &pool("5Gi"), &pool("10Gi")).is_empty(), "growing is fine");
        let database = |size: &str, wal: &str| json!({"spec": {"storage": {"size": size}, "walStorage": {"size": wal}, "instances": 2}});
        assert_eq!(
            found(storage_sizes, &database("20Gi", "2Gi"), &database("20Gi", "1Gi")),
            ["storage size decreased at spec.walStorage.size: 2Gi -> 1Gi"]
        );
        let broker = |size: &str| json!({"spec": {"persistence": {"storage": size}}});
        assert_eq!(
            found(storage_sizes, &broker("10Gi"), &broker("8Gi")),
            ["storage size decreased at spec.persistence.storage: 10Gi -> 8Gi"]
        );
        let other = |size: &str| json!({"spec": {"cache": {"size": size}}});
        assert!(found(storage_sizes, &other("2Gi"), &other("1Gi")).is_empty(), "a size outside a storage section is not a volume");
    }
}
