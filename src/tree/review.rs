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
    /// The index of its entry in the diff.
    #[serde(skip)]
    pub entry: usize,
    /// `Kind namespace/name` in its cluster.
    pub object: String,
    /// The cluster.
    pub cluster: String,
    /// What makes it risky.
    pub reason: String,
}

/// The summary of one diff.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Review {
    /// Workloads that roll.
    pub rolls: Vec<Roll>,
    /// Sealed values by what happened to them (`rotated`, `added`, `resealed`, `removed`), each
    /// as `Kind namespace/name key`.
    pub secrets: BTreeMap<String, Vec<String>>,
    /// Risky changes.
    pub risks: Vec<Risk>,
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
            out.secrets.entry(verb).or_default().push(format!("{} {}", entry.title(), sealed.key));
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
        // NB: a storage class change is said below, by itself.
        let spec = |o: &Json| {
            let mut spec = o.pointer("/spec").cloned().unwrap_or(Json::Null);
            if let Some(map) = spec.as_object_mut() {
                map.remove("storageClassName");
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
    if let (Some(old), Some(new)) = (before.pointer("/spec/storage/size"), after.pointer("/spec/storage/size"))
        && let (Some(a), Some(b)) = (old.as_str().and_then(quantity), new.as_str().and_then(quantity))
        && b < a
    {
        // NB: a volume cannot shrink (CNPG refuses, and a PVC's request cannot go down).
        out.push(format!("storage size decreased {} -> {}", old.as_str().unwrap_or_default(), new.as_str().unwrap_or_default()));
    }
    out
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

/// Every storage class (`storageClass`, `storageClassName`) that differs between two objects.
fn storage_classes(before: &Json, after: &Json, path: &str, out: &mut Vec<String>) {
    match (before, after) {
        (Json::Object(a), Json::Object(b)) => {
            for (key, value) in b {
                let here = format!("{path}.{key}");
                match a.get(key) {
                    Some(old) if matches!(key.as_str(), "storageClass" | "storageClassName") && old != value => {
                        out.push(format!("storage class changed at {}: {old} -> {value}", here.trim_start_matches('.')));
                    }
                    Some(old) => storage_classes(old, value, &here, out),
                    None => {}
                }
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
