//! The validator: checks a located YAML tree against a kind's schema, collecting every problem
//! instead of stopping at the first.

use super::format::{check_format, format_help};
use crate::spec::diagnostic::Rule;
use crate::spec::diagnostic::{Diagnostic, did_you_mean};
use crate::spec::yaml::{Key, Node, Origin, Value};
use serde_json::{Map, Value as Json};
use std::borrow::Cow;

/// Options of one validation pass.
#[derive(Debug, Clone, Copy, Default)]
pub struct ValidateOptions {
    /// Overlays are partial: they may leave out required fields.
    pub partial: bool,
}

/// How the message of a key the schema does not know starts (the fields it expects follow).
pub const UNKNOWN_FIELD: &str = "unknown field";

/// Validates `node` against `schema` (a document schema with its `$defs`), pushing every
/// problem to `out`. Plain scalars are rewritten to strings where a string is expected, so that
/// `tag: 1.10` means `"1.10"`.
pub fn validate(node: &mut Node, root: &Json, path: &str, options: ValidateOptions, out: &mut Vec<Diagnostic>) {
    Validator { root, options, out }.check(node, root, &At::Root(path));
}

/// Where a node is: its field path, made into text only for a diagnostic (a spec has tens of
/// thousands of nodes and most have none).
#[derive(Clone, Copy)]
enum At<'p> {
    /// The path validation started at.
    Root(&'p str),
    /// An entry of a map.
    Key(&'p At<'p>, &'p str),
    /// An item of a list.
    Index(&'p At<'p>, usize),
}

impl At<'_> {
    /// The path as diagnostics show it (see [`join`]).
    fn text(&self) -> String {
        match self {
            At::Root(path) => (*path).to_owned(),
            At::Key(parent, key) => join(&parent.text(), key),
            At::Index(parent, index) => format!("{}[{index}]", parent.text()),
        }
    }
}

struct Validator<'a> {
    root: &'a Json,
    options: ValidateOptions,
    out: &'a mut Vec<Diagnostic>,
}

/// Joins a field path and a key: `spec` + `postgresql` = `spec.postgresql`; keys that are not
/// identifiers are quoted: `spec.configData["a.b"]`.
#[must_use]
pub fn join(path: &str, key: &str) -> String {
    let simple = !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    match (path.is_empty(), simple) {
        (true, true) => key.to_owned(),
        (false, true) => format!("{path}.{key}"),
        (_, false) => format!("{path}[{key:?}]"),
    }
}

/// Schema keywords that only annotate: no check reads them.
const ANNOTATIONS: [&str; 8] = ["description", "default", "title", "examples", "deprecated", "readOnly", "writeOnly", "$comment"];

/// Keyword `name` of `schema`: found by going through its few keys, which is cheaper than
/// hashing the name (a schema object has a handful; the validator asks each node for several).
fn kw<'s>(schema: &'s Json, name: &str) -> Option<&'s Json> {
    schema.as_object()?.iter().find_map(|(key, value)| (key == name).then_some(value))
}

/// The schema of anything (`items` left out).
static ANY: Json = Json::Bool(true);

impl<'a> Validator<'a> {
    fn check(&mut self, node: &mut Node, schema: &Json, path: &At<'_>) {
        let schema = self.deref(schema);
        self.check_typed(node, &schema, path);
        // The format is checked after the type, so a coerced plain scalar is checked too.
        if let Some(format) = kw(&schema, "x-tfrs-check").and_then(Json::as_str)
            && let Value::Str(text) = &node.value
            && let Err(expected) = check_format(format, text)
        {
            let mut diagnostic =
                Diagnostic::error(Rule::Schema, node.origin, path.text(), format!("expected {expected}, found {}", node.describe()));
            if let Some(help) = format_help(format, text) {
                diagnostic = diagnostic.with_help(help);
            }
            self.out.push(diagnostic);
        }
    }

    /// `schema` with its `$ref`s followed (siblings of a `$ref` merged into its target): the
    /// schema itself or its target when there is nothing to merge, a copy only when there is.
    /// Annotations beside a `$ref` (a field's `description`, its `default`) are not merged: no
    /// check reads them, and most fields of a spec have them.
    fn deref<'s>(&self, schema: &'s Json) -> Cow<'s, Json>
    where
        'a: 's,
    {
        let mut current = Cow::Borrowed(schema);
        for _ in 0..16 {
            let Some(reference) = kw(&current, "$ref").and_then(Json::as_str) else { break };
            let name = reference.trim_start_matches("#/$defs/");
            let Some(target) = self.root.get("$defs").and_then(|d| d.get(name)) else { break };
            let siblings = current.as_object().is_some_and(|o| o.keys().any(|k| k != "$ref" && !ANNOTATIONS.contains(&k.as_str())));
            if !siblings || !target.is_object() {
                current = Cow::Borrowed(target);
                continue;
            }
            let mut merged = target.clone();
            if let (Some(merged), Some(siblings)) = (merged.as_object_mut(), current.as_object()) {
                for (key, value) in siblings {
                    if key != "$ref" && !ANNOTATIONS.contains(&key.as_str()) {
                        merged.entry(key.clone()).or_insert_with(|| value.clone());
                    }
                }
            }
            current = Cow::Owned(merged);
        }
        current
    }

    fn check_typed(&mut self, node: &mut Node, schema: &Json, path: &At<'_>) {
        let branches = kw(schema, "anyOf").or_else(|| kw(schema, "oneOf")).and_then(Json::as_array);
        if let Some(branches) = branches {
            let branches: Vec<Cow<'_, Json>> = branches.iter().map(|b| self.deref(b)).collect();
            let branches: Vec<&Json> = branches.iter().map(|b| &**b).collect();
            if let Some(allowed) = constants(&branches) {
                self.check_enum(node, &allowed, path);
                return;
            }
            let non_null: Vec<&Json> = branches.iter().copied().filter(|b| kw(b, "type") != Some(&Json::from("null"))).collect();
            if non_null.len() < branches.len() && node.value == Value::Null {
                return;
            }
            if let Some(first) = non_null.first() {
                self.check(node, first, path);
            }
            return;
        }
        if let Some(allowed) = kw(schema, "enum").and_then(Json::as_array) {
            let allowed: Vec<&str> = allowed.iter().filter_map(Json::as_str).collect();
            self.check_enum(node, &allowed, path);
            return;
        }
        let types: Vec<&str> = match kw(schema, "type") {
            Some(Json::String(t)) => vec![t.as_str()],
            Some(Json::Array(ts)) => ts.iter().filter_map(Json::as_str).collect(),
            _ => return,
        };
        if types.contains(&"null") && node.value == Value::Null {
            return;
        }
        let Some(expected) = types.iter().find(|t| **t != "null").copied() else { return };
        if !self.check_type(node, expected, schema, path) {
            return;
        }
        match expected {
            "integer" | "number" => self.check_range(node, schema, path),
            "object" => self.check_object(node, schema, path),
            "array" => {
                let items = kw(schema, "items").unwrap_or(&ANY);
                if let Value::Seq(elements) = &mut node.value {
                    for (index, element) in elements.iter_mut().enumerate() {
                        self.check(element, items, &At::Index(path, index));
                    }
                }
            }
            _ => {}
        }
    }

    /// Checks the node's type, coercing plain scalars to strings; false if it does not match.
    fn check_type(&mut self, node: &mut Node, expected: &str, schema: &Json, path: &At<'_>) -> bool {
        let matches = match (&node.value, expected) {
            (Value::Str(_), "string") | (Value::Bool(_), "boolean") | (Value::Int(_), "integer" | "number") => true,
            (Value::Float(_), "number") | (Value::Map(_), "object") | (Value::Seq(_), "array") => true,
            (Value::Int(_) | Value::Float(_) | Value::Bool(_), "string") => match node.plain.clone() {
                Some(text) => {
                    node.value = Value::Str(text);
                    true
                }
                None => false,
            },
            _ => false,
        };
        if !matches {
            let what = match expected {
                "string" => "a string",
                "integer" => "an integer",
                "number" => "a number",
                "boolean" => "true or false",
                "object" => "a map",
                "array" => "a list",
                other => other,
            };
            let is_secret_source =
                kw(schema, "maxProperties").is_some() && kw(schema, "properties").and_then(|p| p.get("fromEnv")).is_some();
            // NB: a scalar where a secret source belongs is probably the secret itself: never echo it.
            let found = match (&node.value, is_secret_source) {
                (Value::Str(_), true) => "a string".to_owned(),
                (Value::Int(_) | Value::Float(_) | Value::Bool(_), true) => "a scalar".to_owned(),
                _ => node.describe(),
            };
            let mut diagnostic = Diagnostic::error(Rule::Schema, node.origin, path.text(), format!("expected {what}, found {found}"));
            if is_secret_source {
                diagnostic = diagnostic.sensitive();
                diagnostic = diagnostic
                    .with_help("a secret source is `{}` (generated), `{ fromEnv: VAR }`, `{ fromFile: path }` or `{ value: \"...\" }`");
            }
            self.out.push(diagnostic);
        }
        matches
    }

    fn check_enum(&mut self, node: &mut Node, allowed: &[&str], path: &At<'_>) {
        let text = match &node.value {
            Value::Str(s) => Some(s.as_str()),
            _ => node.plain.as_deref(),
        };
        // NB: an allowed string is left as it is (nothing copied); a plain scalar becomes one.
        if let Some(text) = text.filter(|t| allowed.contains(t)) {
            if !matches!(node.value, Value::Str(_)) {
                node.value = Value::Str(text.to_owned());
            }
            return;
        }
        let listed = allowed.iter().map(|a| format!("`{a}`")).collect::<Vec<_>>().join(", ");
        match text {
            Some(text) => {
                let mut diagnostic = Diagnostic::error(
                    Rule::Schema,
                    node.origin,
                    path.text(),
                    format!("expected one of {listed}, found {}", node.describe()),
                );
                if let Some(close) = did_you_mean(text, allowed.iter().copied()) {
                    diagnostic = diagnostic.with_help(format!("did you mean `{close}`?"));
                }
                self.out.push(diagnostic);
            }
            None => self.out.push(Diagnostic::error(
                Rule::Schema,
                node.origin,
                path.text(),
                format!("expected one of {listed}, found {}", node.describe()),
            )),
        }
    }

    fn check_range(&mut self, node: &Node, schema: &Json, path: &At<'_>) {
        let value = match node.value {
            Value::Int(i) => i as f64,
            Value::Float(f) => f,
            _ => return,
        };
        let minimum = kw(schema, "minimum").and_then(Json::as_f64);
        let maximum = kw(schema, "maximum").and_then(Json::as_f64);
        let low = minimum.is_some_and(|m| value < m);
        let high = maximum.is_some_and(|m| value > m);
        if low || high {
            let expected = match (minimum, maximum) {
                (Some(min), Some(max)) => format!("between {min} and {max}"),
                (Some(min), None) => format!("at least {min}"),
                (None, Some(max)) => format!("at most {max}"),
                (None, None) => String::new(),
            };
            let what = if kw(schema, "type").and_then(Json::as_str) == Some("integer") { "an integer" } else { "a number" };
            self.out.push(Diagnostic::error(
                Rule::Schema,
                node.origin,
                path.text(),
                format!("expected {what} {expected}, found {}", node.describe()),
            ));
        }
    }

    fn check_object(&mut self, node: &mut Node, schema: &Json, path: &At<'_>) {
        let empty = Map::new();
        let properties = kw(schema, "properties").and_then(Json::as_object).unwrap_or(&empty);
        let additional = kw(schema, "additionalProperties");
        let names_format = kw(schema, "propertyNames").and_then(|p| kw(p, "x-tfrs-check")).and_then(Json::as_str).map(str::to_owned);
        let origin = node.origin;
        let Value::Map(entries) = &mut node.value else { return };
        if let Some(max) = kw(schema, "maxProperties").and_then(Json::as_u64) {
            self.check_max_properties(entries, max, properties, origin, path);
        }
        for (key, value) in entries.iter_mut() {
            let child = At::Key(path, &key.name);
            if let Some(property) = properties.get(&key.name) {
                self.check(value, property, &child);
            } else {
                match &additional {
                    Some(Json::Bool(false)) => self.unknown_field(key, properties, &child),
                    Some(schema @ Json::Object(_)) => {
                        if let Some(format) = &names_format
                            && let Err(expected) = check_format(format, &key.name)
                        {
                            self.out.push(Diagnostic::error(
                                Rule::Schema,
                                key.origin,
                                child.text(),
                                format!("expected the key to be {expected}, found {:?}", key.name),
                            ));
                        }
                        self.check(value, schema, &child);
                    }
                    _ => {}
                }
            }
        }
        if !self.options.partial
            && let Some(required) = kw(schema, "required").and_then(Json::as_array)
        {
            for name in required.iter().filter_map(Json::as_str) {
                if !entries.iter().any(|(k, _)| k.name == name) {
                    self.out.push(Diagnostic::error(Rule::Schema, origin, join(&path.text(), name), "missing required field"));
                }
            }
        }
    }

    /// A map with more than `max` keys: only a secret source has a maximum, of one form.
    fn check_max_properties(&mut self, entries: &[(Key, Node)], max: u64, properties: &Map<String, Json>, origin: Origin, path: &At<'_>) {
        let count = entries.len() as u64;
        if count > max {
            let keys: Vec<String> = entries.iter().map(|(k, _)| format!("`{}`", k.name)).collect();
            let forms: Vec<String> = properties.keys().map(|k| format!("`{k}`")).collect();
            let second = entries.get(max as usize).map_or(origin, |(k, _)| k.origin);
            self.out.push(
                Diagnostic::error(
                    Rule::Schema,
                    second,
                    path.text(),
                    format!("expected exactly one of {}, found {}", forms.join(", "), keys.join(" and ")),
                )
                .with_help("a secret source takes one form; `{}` means `generate` with its defaults"),
            );
        }
    }

    /// A key the schema does not know, at `child`, with the closest known one.
    fn unknown_field(&mut self, key: &Key, properties: &Map<String, Json>, child: &At<'_>) {
        let known: Vec<&str> = properties.keys().map(String::as_str).collect();
        let listed = known.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", ");
        let mut diagnostic =
            Diagnostic::error(Rule::Schema, key.origin, child.text(), format!("{UNKNOWN_FIELD}, expected one of {listed}"));
        if let Some(close) = did_you_mean(&key.name, known.iter().copied()) {
            diagnostic = diagnostic.with_help(format!("did you mean `{close}`?"));
        }
        self.out.push(diagnostic);
    }
}

/// If every branch is a constant (`const` or a one-value `enum`), the allowed values.
fn constants<'s>(branches: &[&'s Json]) -> Option<Vec<&'s str>> {
    let mut values = Vec::new();
    for branch in branches {
        if let Some(value) = kw(branch, "const").and_then(Json::as_str) {
            values.push(value);
        } else if let Some(list) = kw(branch, "enum").and_then(Json::as_array) {
            values.extend(list.iter().filter_map(Json::as_str));
        } else {
            return None;
        }
    }
    Some(values)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::schema::Kind;

    #[test]
    fn a_refused_duration_says_what_to_write() {
        let mut nodes = crate::spec::yaml::parse(0, "spec:\n  tfrsOperator:\n    timeout: 1d\n").expect("yaml");
        let mut out = Vec::new();
        validate(&mut nodes[0], &Kind::Cluster.raw_schema(), "", ValidateOptions { partial: true }, &mut out);
        assert_eq!(out.len(), 1, "{out:#?}");
        assert_eq!(out[0].path, "spec.tfrsOperator.timeout");
        assert!(out[0].message.starts_with("expected a Go duration such as `90s`"), "{}", out[0].message);
        assert!(out[0].help.as_deref().is_some_and(|h| h.ends_with("write `24h`")), "{:?}", out[0].help);
    }

    #[test]
    fn a_ref_takes_the_checks_beside_it_and_not_its_annotations() {
        let root = serde_json::json!({
            "type": "object",
            "properties": {
                "noted": { "$ref": "#/$defs/Small", "description": "annotated only", "default": {} },
                "bounded": { "$ref": "#/$defs/Small", "description": "and bounded", "maxProperties": 1 },
            },
            "$defs": { "Small": { "type": "object", "additionalProperties": { "type": "string" } } },
        });
        let mut nodes = crate::spec::yaml::parse(0, "noted: { a: x, b: y }\nbounded: { a: x, b: y }\n").expect("yaml");
        let validator = Validator { root: &root, options: ValidateOptions::default(), out: &mut Vec::new() };
        assert!(matches!(validator.deref(&root["properties"]["noted"]), Cow::Borrowed(_)), "an annotation is not merged");
        assert_eq!(validator.deref(&root["properties"]["bounded"])["maxProperties"], 1);
        let mut out = Vec::new();
        validate(&mut nodes[0], &root, "", ValidateOptions::default(), &mut out);
        let paths: Vec<&str> = out.iter().map(|d| d.path.as_str()).collect();
        assert_eq!(paths, ["bounded"], "{out:#?}");
    }

    #[test]
    fn joins_paths() {
        assert_eq!(join("", "spec"), "spec");
        assert_eq!(join("spec", "postgresql"), "spec.postgresql");
        assert_eq!(join("spec.configData", "a.b"), "spec.configData[\"a.b\"]");
    }
}
