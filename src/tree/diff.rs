//! Per-object comparison of two rendered trees (pure): added, removed and changed objects, with
//! sealed values compared by fingerprint and never shown.
//!
//! Objects are matched by cluster, component, kind, namespace and name (the file path gives the
//! cluster and the component: `clusters/<cluster>/components/<component>/<kind>-<name>.yaml`).
//! A file that holds no object (`plan.json`, a `kustomization.yaml`) is matched by path.
//!
//! Sealed values (a SealedSecret's `spec.encryptedData`, a SOPS Secret's `ENC[…]` values under
//! `data`/`stringData`) are masked as `<sealed>` in the unified diff, the fingerprints annotation
//! as `<fingerprints>` and the `sops` block as `<sops metadata>`; each sealed key is reported as
//! added, removed, changed, unchanged or resealed by comparing the keyed fingerprints of the
//! `tfrs.turingfocus.cn/fingerprints` annotation (or, without fingerprints, the ciphertext).

use super::fields::{self, FieldChange};
use super::mask::{Sealed, fold_checksums, mask};
use crate::layout::locate;
use rayon::prelude::*;
use serde::Serialize;
use serde_json::Value as Json;
use std::collections::BTreeMap;
use std::fmt;

pub use super::Files;

/// What happened to an object or a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Change {
    /// Only in the new tree.
    Added,
    /// In both, different.
    Changed,
    /// Only in the old tree.
    Removed,
}

impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Change::Added => "added",
            Change::Changed => "changed",
            Change::Removed => "removed",
        })
    }
}

/// What happened to one sealed value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SealedChange {
    /// A new key.
    Added,
    /// The key is gone.
    Removed,
    /// The plaintext changed (the fingerprints differ).
    Changed,
    /// Same plaintext, same ciphertext.
    Unchanged,
    /// Same plaintext (same fingerprint), new ciphertext.
    Resealed,
}

impl SealedChange {
    /// The word used in commit messages ("rotated" for a changed value).
    #[must_use]
    pub fn verb(self) -> &'static str {
        match self {
            SealedChange::Added => "added",
            SealedChange::Removed => "removed",
            SealedChange::Changed => "rotated",
            SealedChange::Unchanged => "unchanged",
            SealedChange::Resealed => "resealed",
        }
    }
}

impl fmt::Display for SealedChange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SealedChange::Added => "added",
            SealedChange::Removed => "removed",
            SealedChange::Changed => "changed",
            SealedChange::Unchanged => "unchanged",
            SealedChange::Resealed => "resealed",
        })
    }
}

/// One sealed key of a changed, added or removed object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SealedValue {
    /// The key (`.dockerconfigjson`, `password`).
    pub key: String,
    /// What happened to its value.
    pub change: SealedChange,
}

/// One added, removed or changed object (or a file that holds no object).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    /// What happened.
    pub change: Change,
    /// The cluster (`clusters/<cluster>/`); empty for a path outside `clusters/`.
    pub cluster: String,
    /// The component id (`cluster/cert-manager`), `gitops`, or `(root)` for the cluster's own
    /// files.
    pub component: String,
    /// The object's kind; `None` for a file that holds no object.
    pub kind: Option<String>,
    /// The object's namespace, if namespaced.
    pub namespace: Option<String>,
    /// The object's name; `None` for a file that holds no object.
    pub name: Option<String>,
    /// The file (the new one, or the old one for a removed object).
    pub path: String,
    /// Sealed keys and what happened to each (empty when the object seals nothing).
    pub sealed: Vec<SealedValue>,
    /// A unified diff of the masked YAML (empty when only sealed values changed), with pod
    /// templates' `checksum/*` annotations folded (the review says what rolls and why).
    pub diff: String,
    /// For a changed object: each changed field of the masked object, checksums included (at
    /// most [`fields::LIMIT`]); empty otherwise, and for a file that holds no object.
    pub fields: Vec<FieldChange>,
    /// Whether more fields changed than `fields` lists.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub fields_truncated: bool,
}

impl Entry {
    /// `Kind namespace/name`, `Kind name`, or the path of a file that holds no object.
    #[must_use]
    pub fn title(&self) -> String {
        match (&self.kind, &self.namespace, &self.name) {
            (Some(kind), Some(namespace), Some(name)) => format!("{kind} {namespace}/{name}"),
            (Some(kind), None, Some(name)) => format!("{kind} {name}"),
            _ => self.path.clone(),
        }
    }
}

/// Counts of one component.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    /// Objects (or files) added.
    pub added: usize,
    /// Objects (or files) changed.
    pub changed: usize,
    /// Objects (or files) removed.
    pub removed: usize,
    /// Sealed values added, changed (rotated) or removed.
    pub secrets: usize,
}

impl Counts {
    fn add(&mut self, entry: &Entry) {
        match entry.change {
            Change::Added => self.added += 1,
            Change::Changed => self.changed += 1,
            Change::Removed => self.removed += 1,
        }
        self.secrets +=
            entry.sealed.iter().filter(|s| matches!(s.change, SealedChange::Added | SealedChange::Changed | SealedChange::Removed)).count();
    }
}

/// The difference between two trees, sorted by cluster, component, then object.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Diff {
    /// Every added, removed or changed object or file.
    pub entries: Vec<Entry>,
}

impl Diff {
    /// Marks `resealed` (`(path, key)` pairs whose plaintext is known unchanged) as resealed
    /// where they were taken for changed: a fingerprint is bound to its sealer.
    pub fn mark_resealed(&mut self, resealed: &std::collections::BTreeSet<(String, String)>) {
        for entry in &mut self.entries {
            for value in &mut entry.sealed {
                if value.change == SealedChange::Changed && resealed.contains(&(entry.path.clone(), value.key.clone())) {
                    value.change = SealedChange::Resealed;
                }
            }
        }
    }

    /// True when the trees hold the same objects and files.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Totals over every component.
    #[must_use]
    pub fn totals(&self) -> Counts {
        let mut counts = Counts::default();
        for entry in &self.entries {
            counts.add(entry);
        }
        counts
    }

    /// Counts per `(cluster, component)`, in order.
    #[must_use]
    pub fn components(&self) -> Vec<((String, String), Counts)> {
        let mut out: Vec<((String, String), Counts)> = Vec::new();
        for entry in &self.entries {
            let key = (entry.cluster.clone(), entry.component.clone());
            match out.last_mut() {
                Some((last, counts)) if *last == key => counts.add(entry),
                _ => {
                    let mut counts = Counts::default();
                    counts.add(entry);
                    out.push((key, counts));
                }
            }
        }
        out
    }

    /// The body of a commit message: per component, its counts and one line per object;
    /// sealed values as "rotated", "added" or "removed", never a value.
    #[must_use]
    pub fn summary(&self) -> String {
        const MAX_LINES: usize = 20;
        let mut text = String::new();
        // NB: entries are sorted by cluster then component, so each component's entries are the
        // next run of `counts` entries (one pass, not one scan of every entry per component).
        let mut rest = self.entries.as_slice();
        for ((cluster, component), counts) in self.components() {
            text.push_str(&format!("{cluster} {component}: {}\n", counts_text(&counts)));
            let run = rest.iter().take_while(|e| e.cluster == cluster && e.component == component).count();
            let (entries, tail) = rest.split_at(run);
            rest = tail;
            for entry in entries.iter().take(MAX_LINES) {
                let mut line = format!("  {} {}", entry.change, entry.title());
                let secrets: Vec<String> = entry
                    .sealed
                    .iter()
                    .filter(|s| s.change != SealedChange::Unchanged)
                    .map(|s| format!("{} {}", s.key, s.change.verb()))
                    .collect();
                if !secrets.is_empty() {
                    line.push_str(&format!(" (secret {})", secrets.join(", ")));
                }
                text.push_str(&line);
                text.push('\n');
            }
            if entries.len() > MAX_LINES {
                text.push_str(&format!("  … and {} more\n", entries.len() - MAX_LINES));
            }
        }
        text
    }
}

/// `1 added, 2 changed, 0 removed` (plus the secrets, when any).
#[must_use]
pub fn counts_text(counts: &Counts) -> String {
    let mut text = format!("{} added, {} changed, {} removed", counts.added, counts.changed, counts.removed);
    if counts.secrets > 0 {
        text.push_str(&format!(", {} secret value{}", counts.secrets, if counts.secrets == 1 { "" } else { "s" }));
    }
    text
}

/// A parsed object or a plain file, with its masked text and sealed values.
struct Item<'a> {
    path: String,
    kind: Option<String>,
    namespace: Option<String>,
    name: Option<String>,
    /// The whole file's bytes, for equality: equal bytes hold equal objects, and a change of
    /// layout alone is a change too.
    file: &'a [u8],
    /// Masked YAML with checksums folded (objects) or text (files).
    text: String,
    /// The masked object (`Null` for a file, or without text).
    json: Json,
    sealed: BTreeMap<String, Sealed>,
}

/// How items are matched across the two trees: by cluster and component, then an object by
/// kind, namespace and name (its API version may change), a file without objects by path.
/// Objects sort before files.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Key {
    cluster: String,
    component: String,
    item: ItemKey,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum ItemKey {
    Object { kind: String, namespace: Option<String>, name: String },
    File(String),
}

/// The items of `files`; `with_text` for the masked text of each (only unified diffs need it).
fn items<'a>(files: &[(&str, &'a [u8])], with_text: bool) -> BTreeMap<Key, Item<'a>> {
    // Files are parsed in parallel, then inserted in path order (as one pass would).
    let parsed: Vec<Vec<(Key, Item<'a>)>> = files.par_iter().map(|&(path, bytes)| file_items(path, bytes, with_text)).collect();
    parsed.into_iter().flatten().collect()
}

/// The items of one file: its objects, or the file itself when it holds none.
fn file_items<'a>(path: &str, bytes: &'a [u8], with_text: bool) -> Vec<(Key, Item<'a>)> {
    let mut out = Vec::new();
    {
        let (cluster, component) = locate(path);
        let key = |item| Key { cluster: cluster.clone(), component: component.clone(), item };
        let is_yaml = path.ends_with(".yaml") || path.ends_with(".yml");
        let text = String::from_utf8_lossy(bytes);
        let documents = if is_yaml { crate::spec::yaml::parse(0, &text).ok() } else { None };
        let objects: Vec<Json> = documents
            .unwrap_or_default()
            .iter()
            .map(crate::spec::yaml::Node::to_json)
            .filter(|json| {
                json.get("kind").and_then(Json::as_str).is_some() && json.pointer("/metadata/name").and_then(Json::as_str).is_some()
            })
            .collect();
        if objects.is_empty() {
            let item = Item {
                path: path.to_owned(),
                kind: None,
                namespace: None,
                name: None,
                file: bytes,
                text: match (with_text, std::str::from_utf8(bytes).is_ok()) {
                    (false, _) => String::new(),
                    (true, true) => text.into_owned(),
                    (true, false) => "<binary>\n".to_owned(),
                },
                json: Json::Null,
                sealed: BTreeMap::new(),
            };
            out.push((key(ItemKey::File(path.to_owned())), item));
            return out;
        }
        for object in objects {
            let kind = object.get("kind").and_then(Json::as_str).unwrap_or_default().to_owned();
            let name = object.pointer("/metadata/name").and_then(Json::as_str).unwrap_or_default().to_owned();
            let namespace = object.pointer("/metadata/namespace").and_then(Json::as_str).map(str::to_owned);
            let (masked, sealed) = mask(&object);
            let (text, json) = if with_text {
                let text = crate::manifest::to_yaml(&fold_checksums(masked.clone())).unwrap_or_else(|_| "<unprintable>\n".to_owned());
                (text, masked)
            } else {
                (String::new(), Json::Null)
            };
            let item_key = ItemKey::Object { kind: kind.clone(), namespace: namespace.clone(), name: name.clone() };
            let item = Item { path: path.to_owned(), kind: Some(kind), namespace, name: Some(name), file: bytes, text, json, sealed };
            out.push((key(item_key), item));
        }
    }
    out
}

fn compare_sealed(old: Option<&BTreeMap<String, Sealed>>, new: Option<&BTreeMap<String, Sealed>>) -> Vec<SealedValue> {
    let empty = BTreeMap::new();
    let old = old.unwrap_or(&empty);
    let new = new.unwrap_or(&empty);
    let mut keys: Vec<&String> = old.keys().chain(new.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .map(|key| {
            let change = match (old.get(key), new.get(key)) {
                (None, _) => SealedChange::Added,
                (_, None) => SealedChange::Removed,
                (Some(a), Some(b)) => match (&a.fingerprint, &b.fingerprint) {
                    (Some(x), Some(y)) if x != y => SealedChange::Changed,
                    (Some(_), Some(_)) if a.ciphertext == b.ciphertext => SealedChange::Unchanged,
                    (Some(_), Some(_)) => SealedChange::Resealed,
                    _ if a.ciphertext == b.ciphertext => SealedChange::Unchanged,
                    _ => SealedChange::Changed,
                },
            };
            SealedValue { key: key.clone(), change }
        })
        .collect()
}

fn unified(old: &str, new: &str, old_path: &str, new_path: &str) -> String {
    if old == new {
        return String::new();
    }
    similar::TextDiff::from_lines(old, new).unified_diff().context_radius(3).header(old_path, new_path).to_string()
}

/// Compares two trees object by object (see the module docs). Files whose path and bytes are
/// the same on both sides are not parsed: they hold the same objects, so they compare equal.
///
/// ```
/// use tfrs_gitops::tree::diff::{diff, Change, Files};
/// let old: Files = [("clusters/c/components/cluster/x/namespace-a.yaml".to_owned(),
///     b"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n".to_vec())].into();
/// let mut new = old.clone();
/// new.insert("clusters/c/components/cluster/x/namespace-b.yaml".to_owned(),
///     b"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: b\n".to_vec());
/// let found = diff(&old, &new);
/// assert_eq!(found.entries.len(), 1);
/// assert_eq!(found.entries[0].change, Change::Added);
/// assert_eq!(found.entries[0].component, "cluster/x");
/// ```
#[must_use]
pub fn diff(old: &Files, new: &Files) -> Diff {
    compare(&items(&differing(old, Some(new)), true), &items(&differing(new, Some(old)), true), true)
}

/// As [`diff`], for a commit message: no unified diffs nor field changes (`Entry::diff` and
/// `Entry::fields` are empty, and the masked text they are made of is not computed).
#[must_use]
pub fn changes(old: &Files, new: &Files) -> Diff {
    compare(&items(&differing(old, Some(new)), false), &items(&differing(new, Some(old)), false), false)
}

/// The files of `files` whose path and bytes are not in `other` (all without `other`), borrowed.
fn differing<'a>(files: &'a Files, other: Option<&Files>) -> Vec<(&'a str, &'a [u8])> {
    files
        .iter()
        .filter(|&(path, bytes)| other.is_none_or(|other| other.get(path) != Some(bytes)))
        .map(|(path, bytes)| (path.as_str(), bytes.as_slice()))
        .collect()
}

fn compare(old: &BTreeMap<Key, Item<'_>>, new: &BTreeMap<Key, Item<'_>>, with_unified: bool) -> Diff {
    let mut keys: Vec<&Key> = old.keys().chain(new.keys()).collect();
    keys.sort();
    keys.dedup();
    let mut entries = Vec::new();
    for key in keys {
        let (a, b) = (old.get(key), new.get(key));
        let change = match (a, b) {
            (None, Some(_)) => Change::Added,
            (Some(_), None) => Change::Removed,
            (Some(a), Some(b)) if a.file == b.file => continue,
            _ => Change::Changed,
        };
        let Some(item) = b.or(a) else { continue };
        // NB: git's headers: `a/<path>`, `b/<path>`, and `/dev/null` for a side that is absent.
        let old_path = a.map_or_else(|| "/dev/null".to_owned(), |i| format!("a/{}", i.path));
        let new_path = b.map_or_else(|| "/dev/null".to_owned(), |i| format!("b/{}", i.path));
        let diff = if with_unified {
            unified(a.map_or("", |i| i.text.as_str()), b.map_or("", |i| i.text.as_str()), &old_path, &new_path)
        } else {
            String::new()
        };
        let (fields, fields_truncated) = match (a, b) {
            (Some(a), Some(b)) if with_unified && item.kind.is_some() => fields::changes(&a.json, &b.json),
            _ => (Vec::new(), false),
        };
        entries.push(Entry {
            change,
            cluster: key.cluster.clone(),
            component: key.component.clone(),
            kind: item.kind.clone(),
            namespace: item.namespace.clone(),
            name: item.name.clone(),
            path: item.path.clone(),
            sealed: compare_sealed(a.map(|i| &i.sealed), b.map(|i| &i.sealed)),
            diff,
            fields,
            fields_truncated,
        });
    }
    Diff { entries }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEALED: &str = r#"apiVersion: bitnami.com/v1alpha1
kind: SealedSecret
metadata:
  name: creds
  namespace: apps
  annotations:
    tfrs.turingfocus.cn/fingerprints: "{\"password\":\"FP\",\"user\":\"aaaa\"}"
spec:
  encryptedData:
    password: CIPHER
    user: XUSERX
  template:
    metadata:
      name: creds
      namespace: apps
    type: Opaque
"#;

    fn files(pairs: &[(&str, &str)]) -> Files {
        pairs.iter().map(|(p, t)| ((*p).to_owned(), t.as_bytes().to_vec())).collect()
    }

    const PATH: &str = "clusters/c/components/cluster/app/sealedsecret-creds.yaml";

    #[test]
    fn identical_trees_have_no_diff() {
        let tree = files(&[(PATH, SEALED), ("clusters/c/plan.json", "{}")]);
        assert!(diff(&tree, &tree).is_empty());
    }

    #[test]
    fn a_rotated_secret_shows_no_ciphertext() {
        let old = files(&[(PATH, SEALED)]);
        let new = files(&[(PATH, &SEALED.replace("CIPHER", "NEWCIPHER").replace("\\\"FP\\\"", "\\\"FP2\\\""))]);
        let found = diff(&old, &new);
        assert_eq!(found.entries.len(), 1);
        let entry = &found.entries[0];
        assert_eq!(entry.change, Change::Changed);
        assert_eq!(entry.title(), "SealedSecret apps/creds");
        assert_eq!(
            entry.sealed,
            vec![
                SealedValue { key: "password".to_owned(), change: SealedChange::Changed },
                SealedValue { key: "user".to_owned(), change: SealedChange::Unchanged }
            ]
        );
        assert_eq!(entry.diff, "", "only sealed values changed, so the masked YAML is the same");
        assert!(!found.summary().contains("CIPHER"));
        assert!(found.summary().contains("password rotated"), "{}", found.summary());
    }

    #[test]
    fn other_fields_get_a_unified_diff_with_sealed_values_masked() {
        let old = files(&[(PATH, SEALED)]);
        let new = files(&[(PATH, &SEALED.replace("type: Opaque", "type: kubernetes.io/basic-auth").replace("CIPHER", "OTHER"))]);
        let entry = &diff(&old, &new).entries[0];
        assert!(entry.diff.contains("-    type: Opaque\n+    type: kubernetes.io/basic-auth\n"), "{}", entry.diff);
        assert!(!entry.diff.contains("CIPHER") && !entry.diff.contains("OTHER"), "{}", entry.diff);
        assert_eq!(entry.sealed[0].change, SealedChange::Resealed);
    }

    #[test]
    fn sops_values_and_metadata_are_masked() {
        let sops = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\n  namespace: n\nstringData:\n  token: ENC[AES256_GCM,data:abc]\nsops:\n  mac: ENC[AES256_GCM,data:mac]\n  lastmodified: \"2026-01-01T00:00:00Z\"\n";
        let path = "clusters/c/components/cluster/app/secret-s.yaml";
        let found = diff(&Files::new(), &files(&[(path, sops)]));
        let entry = &found.entries[0];
        assert_eq!(entry.change, Change::Added);
        assert_eq!(entry.sealed, vec![SealedValue { key: "token".to_owned(), change: SealedChange::Added }]);
        assert!(!entry.diff.contains("abc") && !entry.diff.contains("mac]") && !entry.diff.contains("2026"), "{}", entry.diff);
        assert!(entry.diff.contains("+  token: <sealed>"), "{}", entry.diff);
    }

    #[test]
    fn checksums_are_folded_in_the_unified_diff_and_listed_as_fields() {
        const DEPLOYMENT: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: api\n  namespace: n\nspec:\n  template:\n    metadata:\n      annotations:\n        checksum/config: aaa\n    spec:\n      containers:\n      - name: api\n        image: x:1\n";
        let path = "clusters/c/components/namespaces/n/servers/s/api/deployment-api.yaml";
        let old = files(&[(path, DEPLOYMENT)]);
        let found = diff(&old, &files(&[(path, &DEPLOYMENT.replace("aaa", "bbb"))]));
        let entry = &found.entries[0];
        assert_eq!(entry.change, Change::Changed);
        assert_eq!(entry.diff, "", "the checksum line is folded");
        assert_eq!(entry.fields.len(), 1);
        assert_eq!(entry.fields[0].path, "spec.template.metadata.annotations[\"checksum/config\"]");
        assert_eq!((&entry.fields[0].before, &entry.fields[0].after), (&Json::from("aaa"), &Json::from("bbb")));
        let bumped = diff(&old, &files(&[(path, &DEPLOYMENT.replace("aaa", "bbb").replace("x:1", "x:2"))]));
        assert!(bumped.entries[0].diff.contains("-        image: x:1\n+        image: x:2\n"), "{}", bumped.entries[0].diff);
        assert!(!bumped.entries[0].diff.contains("aaa") && !bumped.entries[0].diff.contains("bbb"), "{}", bumped.entries[0].diff);
        assert_eq!(bumped.entries[0].fields.len(), 2);
    }

    #[test]
    fn field_changes_never_carry_a_sealed_value() {
        let old = files(&[(PATH, SEALED)]);
        let new = files(&[(PATH, &SEALED.replace("CIPHER", "NEWCIPHER").replace("type: Opaque", "type: other"))]);
        let entry = &diff(&old, &new).entries[0];
        let text = serde_json::to_string(&entry.fields).unwrap();
        assert!(text.contains("spec.template.type") && !text.contains("CIPHER"), "{text}");
    }

    #[test]
    fn a_change_of_layout_alone_is_a_change() {
        let old = files(&[(PATH, SEALED)]);
        let new = files(&[(PATH, &SEALED.replace("metadata:\n  name: creds\n", "metadata:\n  name: \"creds\"\n"))]);
        assert_eq!(diff(&old, &new).entries.len(), 1);
    }

    #[test]
    fn objects_are_grouped_by_component_and_files_by_path() {
        let old = files(&[
            ("clusters/c/plan.json", "{\"a\":1}\n"),
            ("clusters/c/gitops/kustomization-c-app.yaml", "kind: Kustomization\nmetadata:\n  name: c-app\n  namespace: flux-system\n"),
        ]);
        let new = files(&[("clusters/c/plan.json", "{\"a\":2}\n")]);
        let found = diff(&old, &new);
        let components: Vec<(String, String)> = found.components().into_iter().map(|(k, _)| k).collect();
        assert_eq!(components, vec![("c".to_owned(), "(root)".to_owned()), ("c".to_owned(), "gitops".to_owned())]);
        assert_eq!(found.entries[1].change, Change::Removed);
        assert_eq!(found.entries[1].title(), "Kustomization flux-system/c-app");
        assert_eq!(found.totals(), Counts { added: 0, changed: 1, removed: 1, secrets: 0 });
    }
}
