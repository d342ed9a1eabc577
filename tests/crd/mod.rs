//! Custom resources checked against the CustomResourceDefinitions their operators ship, at the
//! pinned upstream versions, the way the apiserver reads a structural schema:
//!
//! - the object's kind must have a CRD, and its `apiVersion` must be a version that CRD serves;
//!   `metadata.namespace` must match the CRD's scope;
//! - the `openAPIV3Schema` of that version is applied with unknown fields rejected: an object
//!   schema accepts only its `properties`, unless it has `additionalProperties` (`true` or a
//!   schema) or `x-kubernetes-preserve-unknown-fields: true` (strict field validation, what
//!   `kubectl apply` asks for);
//! - `x-kubernetes-int-or-string` accepts an integer or a string, `x-kubernetes-embedded-resource`
//!   allows `apiVersion`, `kind` and `metadata`, `nullable: true` accepts `null` (elsewhere `null`
//!   is reported: the apiserver would drop the field);
//! - value checks: `type`, `enum`, `required` (a missing field with a `default` is filled in, so
//!   it counts as present), `minLength`/`maxLength`, `pattern`, `minimum`/`maximum` (and their
//!   exclusive forms), `multipleOf`, `minItems`/`maxItems`, `minProperties`/`maxProperties`,
//!   `x-kubernetes-list-type: set|map` (no duplicates), `allOf`/`anyOf`/`oneOf`/`not` (their
//!   branches check values only, as in a structural schema);
//! - the root `metadata` is checked as ObjectMeta (known fields, string maps for labels and
//!   annotations), plus whatever the schema says of it.
//!
//! Not checked: `x-kubernetes-validations` (CEL rules) and `format`.

#![allow(dead_code)] // each test crate that includes this module uses part of it

use serde_json::{Map, Value as Json};
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

/// API groups built into Kubernetes: their kinds have no CRD (the built-in schemas check them).
pub const BUILTIN_GROUPS: &[&str] = &[
    "",
    "apps",
    "batch",
    "policy",
    "autoscaling",
    "networking.k8s.io",
    "rbac.authorization.k8s.io",
    "storage.k8s.io",
    "apiextensions.k8s.io",
    "admissionregistration.k8s.io",
    "scheduling.k8s.io",
    "coordination.k8s.io",
    "discovery.k8s.io",
    "node.k8s.io",
];

pub use tfrs_gitops::object::api_group as group_of;

/// The pinned upstream data (`<component>/<version>/crds/…`) kept beside the checkout. Without
/// it: under `CI=true` a failure; otherwise one line saying what is skipped, and `None`.
#[must_use]
pub fn upstream(what: &str) -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/upstream");
    if dir.is_dir() {
        return Some(dir);
    }
    assert!(std::env::var("CI").as_deref() != Ok("true"), "{what}: needs ../shared/upstream beside the checkout (CI=true)");
    eprintln!("skipping: {what} (needs ../shared/upstream beside the checkout)");
    None
}

/// One served or unserved version of a CRD.
#[derive(Debug, Clone)]
pub struct Version {
    /// `v1`, `v1beta1`, …
    pub name: String,
    /// Whether the apiserver serves it.
    pub served: bool,
    /// Its `openAPIV3Schema`.
    pub schema: Option<Json>,
}

/// A CRD: where it was read, its scope and versions.
#[derive(Debug, Clone)]
pub struct Crd {
    /// The file it was read from.
    pub file: String,
    /// `scope: Namespaced`.
    pub namespaced: bool,
    /// Every version it lists.
    pub versions: Vec<Version>,
}

/// The CRDs by (group, kind).
#[derive(Debug, Default)]
pub struct Crds {
    kinds: BTreeMap<(String, String), Crd>,
    patterns: RefCell<HashMap<String, Result<regex::Regex, String>>>,
}

impl Crds {
    /// Reads every CRD under `<upstream>/<component>/<version>/crds/` (any other document, and
    /// `kustomization.yaml`, is not a CRD and is passed over).
    ///
    /// # Errors
    ///
    /// A file that cannot be read or parsed, a CRD without group or kind, two CRDs of one kind.
    pub fn load(upstream: &Path) -> Result<Crds, String> {
        let mut crds = Crds::default();
        let mut dirs = Vec::new();
        for component in read_dir(upstream)?.into_iter().filter(|path| path.is_dir()) {
            for version in read_dir(&component)?.into_iter().filter(|path| path.is_dir()) {
                let dir = version.join("crds");
                if dir.is_dir() {
                    dirs.push(dir);
                }
            }
        }
        for dir in dirs {
            for file in read_dir(&dir)? {
                let name = file.file_name().unwrap_or_default().to_string_lossy().into_owned();
                if !(name.ends_with(".yaml") || name.ends_with(".yml")) || name == "kustomization.yaml" {
                    continue;
                }
                let text = std::fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
                let shown = file.strip_prefix(upstream).unwrap_or(&file).display().to_string();
                crds.add(&shown, &text)?;
            }
        }
        Ok(crds)
    }

    /// Adds the CRDs of one YAML stream (`file` names it in messages).
    ///
    /// # Errors
    ///
    /// As [`Crds::load`].
    pub fn add(&mut self, file: &str, text: &str) -> Result<(), String> {
        let documents = tfrs_gitops::spec::yaml::parse(0, text).map_err(|e| format!("{file}: not YAML: {e:?}"))?;
        for document in documents {
            let crd = document.to_json();
            if crd["kind"] != "CustomResourceDefinition" {
                continue;
            }
            let spec = &crd["spec"];
            let (Some(group), Some(kind)) = (spec["group"].as_str(), spec["names"]["kind"].as_str()) else {
                return Err(format!("{file}: a CRD without spec.group or spec.names.kind"));
            };
            let versions = spec["versions"]
                .as_array()
                .map(|versions| {
                    versions
                        .iter()
                        .map(|v| Version {
                            name: v["name"].as_str().unwrap_or_default().to_owned(),
                            served: v["served"].as_bool().unwrap_or(false),
                            schema: v.pointer("/schema/openAPIV3Schema").cloned(),
                        })
                        .collect()
                })
                .unwrap_or_default();
            let entry = Crd { file: file.to_owned(), namespaced: spec["scope"] == "Namespaced", versions };
            if let Some(other) = self.kinds.insert((group.to_owned(), kind.to_owned()), entry) {
                return Err(format!("{group} {kind} is defined twice: `{}` and `{file}`", other.file));
            }
        }
        Ok(())
    }

    /// How many kinds are known.
    #[must_use]
    pub fn len(&self) -> usize {
        self.kinds.len()
    }

    /// Whether no kind is known.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.kinds.is_empty()
    }

    /// Every problem of one custom object, each `field.path: message` (or a whole-object
    /// message).
    #[must_use]
    pub fn validate(&self, object: &Json) -> Vec<String> {
        let api_version = object["apiVersion"].as_str().unwrap_or_default();
        let kind = object["kind"].as_str().unwrap_or_default();
        let group = group_of(api_version);
        let version = api_version.rsplit_once('/').map_or(api_version, |(_, version)| version);
        let Some(crd) = self.kinds.get(&(group.to_owned(), kind.to_owned())) else {
            return vec![format!("no pinned CRD defines kind `{kind}` in group `{group}`")];
        };
        let Some(served) = crd.versions.iter().find(|v| v.name == version && v.served) else {
            let names: Vec<&str> = crd.versions.iter().filter(|v| v.served).map(|v| v.name.as_str()).collect();
            return vec![format!("`{api_version}` is not served by `{}` (it serves {})", crd.file, names.join(", "))];
        };
        let Some(schema) = &served.schema else {
            return vec![format!("`{}` has no openAPIV3Schema for `{version}`", crd.file)];
        };
        let mut out = Vec::new();
        let namespace = object.pointer("/metadata/namespace");
        if crd.namespaced && namespace.is_none() {
            out.push(format!("metadata.namespace: missing, but `{kind}` is namespaced"));
        }
        if !crd.namespaced && namespace.is_some() {
            out.push(format!("metadata.namespace: `{kind}` is cluster-scoped"));
        }
        let Some(fields) = object.as_object() else {
            return vec!["not an object".to_owned()];
        };
        let properties = schema.get("properties").and_then(Json::as_object);
        for (key, value) in fields {
            match key.as_str() {
                "apiVersion" | "kind" => {}
                "metadata" => {
                    object_meta(value, "metadata", &mut out);
                    if let Some(meta) = properties.and_then(|p| p.get("metadata")) {
                        self.check(meta, value, "metadata", false, &mut out);
                    }
                }
                _ => match properties.and_then(|p| p.get(key)) {
                    Some(child) => self.check(child, value, key, true, &mut out),
                    None if allows_unknown(schema) => {}
                    None => out.push(format!("{key}: unknown field")),
                },
            }
        }
        self.required(schema, fields, "", &mut out);
        self.combinators(schema, object, "", &mut out);
        out
    }

    /// Checks `value` at `at` against `schema`. `skeleton`: the schema is the structural one
    /// (unknown fields are rejected); in `allOf`/`anyOf`/`oneOf`/`not` branches it is not.
    fn check(&self, schema: &Json, value: &Json, at: &str, skeleton: bool, out: &mut Vec<String>) {
        let Some(s) = schema.as_object() else { return };
        let flag = |key: &str| s.get(key).and_then(Json::as_bool).unwrap_or(false);
        if value.is_null() {
            if skeleton && !flag("nullable") {
                out.push(format!("{at}: null, but the field is not nullable (the apiserver drops it)"));
            }
            return;
        }
        if flag("x-kubernetes-int-or-string") {
            if !(is_integer(value) || value.is_string()) {
                out.push(format!("{at}: expected an integer or a string, found {}", describe(value)));
                return;
            }
        } else if let Some(expected) = s.get("type").and_then(Json::as_str) {
            let ok = match expected {
                "object" => value.is_object(),
                "array" => value.is_array(),
                "string" => value.is_string(),
                "integer" => is_integer(value),
                "number" => value.is_number(),
                "boolean" => value.is_boolean(),
                _ => false,
            };
            if !ok {
                out.push(format!("{at}: expected {expected}, found {}", describe(value)));
                return;
            }
        }
        if let Some(allowed) = s.get("enum").and_then(Json::as_array)
            && !allowed.iter().any(|a| a == value)
        {
            let shown: Vec<String> = allowed.iter().map(Json::to_string).collect();
            out.push(format!("{at}: {value} is not one of {}", shown.join(", ")));
        }
        match value {
            Json::String(text) => self.string(s, text, at, out),
            Json::Number(number) => number_bounds(s, number.as_f64().unwrap_or_default(), at, out),
            Json::Array(items) => {
                let count = |key: &str| s.get(key).and_then(Json::as_u64);
                if let Some(min) = count("minItems").filter(|&m| (items.len() as u64) < m) {
                    out.push(format!("{at}: {} items, fewer than {min}", items.len()));
                }
                if let Some(max) = count("maxItems").filter(|&m| (items.len() as u64) > m) {
                    out.push(format!("{at}: {} items, more than {max}", items.len()));
                }
                if let Some(item) = s.get("items") {
                    for (index, element) in items.iter().enumerate() {
                        self.check(item, element, &format!("{at}[{index}]"), skeleton, out);
                    }
                }
                list_type(s, items, at, out);
            }
            Json::Object(fields) => {
                let count = |key: &str| s.get(key).and_then(Json::as_u64);
                if let Some(min) = count("minProperties").filter(|&m| (fields.len() as u64) < m) {
                    out.push(format!("{at}: {} fields, fewer than {min}", fields.len()));
                }
                if let Some(max) = count("maxProperties").filter(|&m| (fields.len() as u64) > m) {
                    out.push(format!("{at}: {} fields, more than {max}", fields.len()));
                }
                let properties = s.get("properties").and_then(Json::as_object);
                for (key, child) in fields {
                    let child_at = format!("{at}.{key}");
                    if let Some(property) = properties.and_then(|p| p.get(key)) {
                        self.check(property, child, &child_at, skeleton, out);
                        continue;
                    }
                    if flag("x-kubernetes-embedded-resource") && matches!(key.as_str(), "apiVersion" | "kind" | "metadata") {
                        if key == "metadata" {
                            object_meta(child, &child_at, out);
                        } else if !child.is_string() {
                            out.push(format!("{child_at}: expected string, found {}", describe(child)));
                        }
                        continue;
                    }
                    match s.get("additionalProperties") {
                        Some(additional @ Json::Object(_)) => self.check(additional, child, &child_at, skeleton, out),
                        _ if !skeleton || allows_unknown(schema) => {}
                        _ => out.push(format!("{child_at}: unknown field")),
                    }
                }
                self.required(schema, fields, at, out);
            }
            Json::Bool(_) | Json::Null => {}
        }
        self.combinators(schema, value, at, out);
    }

    /// `required`: a missing field with a `default` is filled in by the apiserver.
    fn required(&self, schema: &Json, fields: &Map<String, Json>, at: &str, out: &mut Vec<String>) {
        let Some(required) = schema.get("required").and_then(Json::as_array) else { return };
        for name in required.iter().filter_map(Json::as_str) {
            let defaulted = schema.pointer(&format!("/properties/{}/default", name.replace('~', "~0").replace('/', "~1"))).is_some();
            if !fields.contains_key(name) && !defaulted {
                out.push(format!("{}: required", join(at, name)));
            }
        }
    }

    /// `allOf`, `anyOf`, `oneOf`, `not`: value checks only.
    fn combinators(&self, schema: &Json, value: &Json, at: &str, out: &mut Vec<String>) {
        let passes = |branch: &Json| {
            let mut found = Vec::new();
            self.check(branch, value, at, false, &mut found);
            found
        };
        let shown = if at.is_empty() { "the object" } else { at };
        if let Some(all) = schema.get("allOf").and_then(Json::as_array) {
            for branch in all {
                out.extend(passes(branch));
            }
        }
        if let Some(any) = schema.get("anyOf").and_then(Json::as_array) {
            let failures: Vec<Vec<String>> = any.iter().map(passes).collect();
            if failures.iter().all(|f| !f.is_empty()) {
                let reasons: Vec<String> = failures.iter().map(|f| f.join("; ")).collect();
                out.push(format!("{shown}: matches no branch of anyOf ({})", reasons.join(" | ")));
            }
        }
        if let Some(one) = schema.get("oneOf").and_then(Json::as_array) {
            let matched = one.iter().filter(|branch| passes(branch).is_empty()).count();
            if matched != 1 {
                out.push(format!("{shown}: matches {matched} branches of oneOf, not exactly one"));
            }
        }
        if let Some(not) = schema.get("not")
            && passes(not).is_empty()
        {
            out.push(format!("{shown}: matches the schema under `not`"));
        }
    }

    fn string(&self, s: &Map<String, Json>, text: &str, at: &str, out: &mut Vec<String>) {
        let length = text.chars().count() as u64;
        if let Some(min) = s.get("minLength").and_then(Json::as_u64).filter(|&m| length < m) {
            out.push(format!("{at}: {length} characters, fewer than {min}"));
        }
        if let Some(max) = s.get("maxLength").and_then(Json::as_u64).filter(|&m| length > m) {
            out.push(format!("{at}: {length} characters, more than {max}"));
        }
        if let Some(pattern) = s.get("pattern").and_then(Json::as_str) {
            let mut patterns = self.patterns.borrow_mut();
            let compiled = patterns.entry(pattern.to_owned()).or_insert_with(|| regex::Regex::new(pattern).map_err(|e| e.to_string()));
            match compiled {
                Ok(regex) if regex.is_match(text) => {}
                Ok(_) => out.push(format!("{at}: {text:?} does not match `{pattern}`")),
                Err(error) => out.push(format!("{at}: the pattern `{pattern}` cannot be checked: {error}")),
            }
        }
    }
}

/// Whether an object schema keeps fields it does not list.
fn allows_unknown(schema: &Json) -> bool {
    schema.get("x-kubernetes-preserve-unknown-fields") == Some(&Json::Bool(true))
        || schema.get("additionalProperties").is_some_and(|a| a.is_object() || a == &Json::Bool(true))
}

fn number_bounds(s: &Map<String, Json>, number: f64, at: &str, out: &mut Vec<String>) {
    let exclusive = |key: &str| s.get(key).and_then(Json::as_bool).unwrap_or(false);
    if let Some(min) = s.get("minimum").and_then(Json::as_f64) {
        let ok = if exclusive("exclusiveMinimum") { number > min } else { number >= min };
        if !ok {
            out.push(format!("{at}: {number} is below the minimum {min}"));
        }
    }
    if let Some(max) = s.get("maximum").and_then(Json::as_f64) {
        let ok = if exclusive("exclusiveMaximum") { number < max } else { number <= max };
        if !ok {
            out.push(format!("{at}: {number} is above the maximum {max}"));
        }
    }
    if let Some(step) = s.get("multipleOf").and_then(Json::as_f64).filter(|&step| step > 0.0)
        && (number / step).fract() != 0.0
    {
        out.push(format!("{at}: {number} is not a multiple of {step}"));
    }
}

/// `x-kubernetes-list-type: set` (unique items) and `map` (unique `x-kubernetes-list-map-keys`).
fn list_type(s: &Map<String, Json>, items: &[Json], at: &str, out: &mut Vec<String>) {
    match s.get("x-kubernetes-list-type").and_then(Json::as_str) {
        Some("set") => {
            for (index, item) in items.iter().enumerate() {
                if items[..index].contains(item) {
                    out.push(format!("{at}[{index}]: a duplicate in a set"));
                }
            }
        }
        Some("map") => {
            let keys: Vec<&str> =
                s.get("x-kubernetes-list-map-keys").and_then(Json::as_array).into_iter().flatten().filter_map(Json::as_str).collect();
            let key_of = |item: &Json| keys.iter().map(|k| item.get(*k).cloned().unwrap_or(Json::Null)).collect::<Vec<_>>();
            for (index, item) in items.iter().enumerate() {
                if items[..index].iter().any(|earlier| key_of(earlier) == key_of(item)) {
                    out.push(format!("{at}[{index}]: a duplicate key ({}) in a map list", keys.join(", ")));
                }
            }
        }
        _ => {}
    }
}

/// `metadata` as ObjectMeta: known fields, labels and annotations maps of strings.
fn object_meta(value: &Json, at: &str, out: &mut Vec<String>) {
    const FIELDS: &[&str] = &[
        "name",
        "generateName",
        "namespace",
        "labels",
        "annotations",
        "finalizers",
        "ownerReferences",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "managedFields",
        "selfLink",
    ];
    let Some(fields) = value.as_object() else {
        out.push(format!("{at}: expected object, found {}", describe(value)));
        return;
    };
    for (key, child) in fields {
        let child_at = format!("{at}.{key}");
        match key.as_str() {
            "name" | "generateName" | "namespace" if !child.is_string() => out.push(format!("{child_at}: expected string")),
            "labels" | "annotations" => match child.as_object() {
                Some(map) => {
                    for (name, text) in map.iter().filter(|(_, text)| !text.is_string()) {
                        out.push(format!("{child_at}.{name}: expected string, found {}", describe(text)));
                    }
                }
                None => out.push(format!("{child_at}: expected a map of strings")),
            },
            "finalizers" if !child.as_array().is_some_and(|a| a.iter().all(Json::is_string)) => {
                out.push(format!("{child_at}: expected a list of strings"));
            }
            _ if !FIELDS.contains(&key.as_str()) => out.push(format!("{child_at}: unknown field")),
            _ => {}
        }
    }
}

fn is_integer(value: &Json) -> bool {
    value.as_i64().is_some() || value.as_u64().is_some() || value.as_f64().is_some_and(|f| f.fract() == 0.0)
}

fn describe(value: &Json) -> &'static str {
    match value {
        Json::Null => "null",
        Json::Bool(_) => "a boolean",
        Json::Number(_) => "a number",
        Json::String(_) => "a string",
        Json::Array(_) => "a list",
        Json::Object(_) => "a map",
    }
}

fn join(at: &str, key: &str) -> String {
    if at.is_empty() { key.to_owned() } else { format!("{at}.{key}") }
}

fn read_dir(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .map(|entry| entry.map(|e| e.path()).map_err(|e| format!("{}: {e}", dir.display())))
        .collect::<Result<_, _>>()?;
    entries.sort();
    Ok(entries)
}
