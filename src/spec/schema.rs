//! JSON Schemas of the three kinds, derived from the Rust types, and a validator that checks a
//! located YAML tree against them, collecting every problem instead of stopping at the first.
//!
//! The schemas carry `x-tfrs-check` on fields that need a format check; [`check_format`]
//! implements those checks and [`export`] turns them into plain `pattern`s for editors and CRDs.

use super::diagnostic::{Diagnostic, did_you_mean};
use super::duration;
use super::model::{ClusterDocument, ServerDocument, TenantDocument};
use super::yaml::{Node, Value};
use serde_json::{Map, Value as Json};

/// The three kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// `TFRCluster`.
    Cluster,
    /// `TFRTenant`.
    Tenant,
    /// `TFRServer`.
    Server,
}

impl Kind {
    /// All kinds, in dependency order.
    pub const ALL: [Kind; 3] = [Kind::Cluster, Kind::Tenant, Kind::Server];

    /// The `kind:` string.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Cluster => "TFRCluster",
            Kind::Tenant => "TFRTenant",
            Kind::Server => "TFRServer",
        }
    }

    /// Parses a `kind:` string.
    #[must_use]
    pub fn parse(text: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.as_str() == text)
    }

    /// The raw schemars schema of the whole document of this kind.
    #[must_use]
    pub fn raw_schema(self) -> Json {
        let generator = schemars::generate::SchemaSettings::draft2020_12().into_generator();
        let schema = match self {
            Kind::Cluster => generator.into_root_schema_for::<ClusterDocument>(),
            Kind::Tenant => generator.into_root_schema_for::<TenantDocument>(),
            Kind::Server => generator.into_root_schema_for::<ServerDocument>(),
        };
        schema.to_value()
    }
}

/// What a format check accepts, as a regular expression (for exported schemas) and in words,
/// and, for some, what to write instead of a value it refuses.
struct Format {
    name: &'static str,
    pattern: &'static str,
    expected: &'static str,
    test: fn(&str) -> bool,
    help: fn(&str) -> Option<String>,
}

fn no_help(_: &str) -> Option<String> {
    None
}

const FORMATS: &[Format] = &[
    Format {
        name: "dns-label",
        pattern: "^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$",
        expected: "a DNS-1123 label (lowercase letters, digits and `-`, starting and ending with a letter or digit, at most 63 characters)",
        test: is_dns_label,
        help: no_help,
    },
    Format {
        name: "dns-subdomain",
        pattern: "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$",
        expected: "a DNS-1123 subdomain (DNS labels joined by `.`, at most 253 characters)",
        test: is_dns_subdomain,
        help: no_help,
    },
    Format {
        name: "hostname",
        pattern: "^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)?$",
        expected: "a DNS name such as `tfrs.example.com`",
        test: |s| s.is_empty() || is_dns_subdomain(s),
        help: no_help,
    },
    Format {
        name: "quantity",
        pattern: "^[0-9]+(\\.[0-9]+)?(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$",
        expected: "a Kubernetes quantity such as `10Gi`, `512Mi` or `500m`",
        test: is_quantity,
        help: no_help,
    },
    Format {
        name: "duration",
        pattern: duration::GO_PATTERN,
        expected: "a Go duration such as `90s`, `5m`, `1h30m` or `1.5h` (numbers with the units `ms`, `s`, `m` or `h`)",
        test: |s| duration::parse(s).is_ok(),
        help: duration::help,
    },
    Format {
        name: "prometheus-duration",
        pattern: duration::PROMETHEUS_PATTERN,
        expected: "a Prometheus duration such as `15d`, `1w3d` or `12h` (whole numbers with the units `y`, `w`, `d`, `h`, `m`, `s`, `ms`, largest first, each at most once)",
        test: |s| duration::parse_prometheus(s).is_ok(),
        help: duration::help_prometheus,
    },
    Format {
        name: "env-name",
        pattern: "^[A-Za-z_][A-Za-z0-9_]*$",
        expected: "an environment variable name (letters, digits and `_`, not starting with a digit)",
        test: is_env_name,
        help: no_help,
    },
    Format {
        name: "relative-path",
        pattern: "^[^/].*$",
        expected: "a path relative to the spec file's directory",
        test: |s| !s.is_empty() && !s.starts_with('/'),
        help: no_help,
    },
    Format {
        name: "absolute-path",
        pattern: "^/.*$",
        expected: "an absolute path such as `/data/shared-cache`",
        test: |s| s.starts_with('/') && !s.contains(char::is_whitespace),
        help: no_help,
    },
    Format {
        name: "image",
        pattern: "^[a-z0-9][^\\s]*$",
        expected: "an image reference such as `ghcr.io/org/name:tag` (lowercase, no spaces)",
        test: is_image,
        help: no_help,
    },
    Format {
        name: "image-tag",
        pattern: "^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$",
        expected: "an image tag (letters, digits, `_`, `.` and `-`, at most 128 characters)",
        test: is_image_tag,
        help: no_help,
    },
    Format {
        name: "version",
        pattern: "^v?[0-9]+(\\.[0-9]+)*([-+][0-9A-Za-z.-]+)?$",
        expected: "a version such as `1.24.2` or `v1.16.2`",
        test: is_version,
        help: no_help,
    },
    Format {
        name: "date",
        pattern: "^[0-9]{4}-[0-9]{2}-[0-9]{2}$",
        expected: "a date written `YYYY-MM-DD`",
        test: |s| s.is_empty() || is_date(s),
        help: no_help,
    },
];

/// DNS-1123 label: lowercase alphanumerics and `-`, alphanumeric at both ends, 1 to 63 chars.
#[must_use]
pub fn is_dns_label(s: &str) -> bool {
    let bytes = s.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 63
        && bytes.iter().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
        && bytes[0] != b'-'
        && bytes[bytes.len() - 1] != b'-'
}

fn is_dns_subdomain(s: &str) -> bool {
    s.len() <= 253 && s.split('.').all(is_dns_label)
}

fn is_quantity(s: &str) -> bool {
    const SUFFIXES: [&str; 13] = ["Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "m", "k", "M", "G", "T", "P", "E"];
    let number = SUFFIXES.iter().find_map(|suffix| s.strip_suffix(suffix)).unwrap_or(s);
    let (int, frac) = number.split_once('.').unwrap_or((number, "0"));
    !int.is_empty() && !frac.is_empty() && int.bytes().all(|b| b.is_ascii_digit()) && frac.bytes().all(|b| b.is_ascii_digit())
}

fn is_env_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_') && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn is_image(s: &str) -> bool {
    !s.is_empty()
        && s.chars().next().is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        && !s.contains(char::is_whitespace)
        && !s.contains("://")
}

fn is_image_tag(s: &str) -> bool {
    let mut chars = s.chars();
    s.len() <= 128
        && chars.next().is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
}

fn is_version(s: &str) -> bool {
    let core = s.strip_prefix('v').unwrap_or(s);
    let (core, suffix) = match core.find(['-', '+']) {
        Some(at) => (&core[..at], Some(&core[at + 1..])),
        None => (core, None),
    };
    !core.is_empty()
        && core.split('.').all(|part| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()))
        && suffix.is_none_or(|x| !x.is_empty() && x.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-')))
}

fn is_date(s: &str) -> bool {
    let parts: Vec<&str> = s.split('-').collect();
    let digits = |p: &str, n: usize| p.len() == n && p.bytes().all(|b| b.is_ascii_digit());
    if parts.len() != 3 || !digits(parts[0], 4) || !digits(parts[1], 2) || !digits(parts[2], 2) {
        return false;
    }
    let year: u32 = parts[0].parse().unwrap_or(0);
    let month: u32 = parts[1].parse().unwrap_or(0);
    let day: u32 = parts[2].parse().unwrap_or(0);
    let leap = year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400));
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => 0,
    };
    (1..=days).contains(&day)
}

/// Checks `value` against the named format; `Err` holds what was expected.
///
/// # Errors
///
/// When the value does not match, the description of what was expected.
pub fn check_format(format: &str, value: &str) -> Result<(), &'static str> {
    match FORMATS.iter().find(|f| f.name == format) {
        Some(f) if (f.test)(value) => Ok(()),
        Some(f) => Err(f.expected),
        None => Ok(()),
    }
}

/// What to write instead of `value`, which the named format refuses, when it can be told.
#[must_use]
pub fn format_help(format: &str, value: &str) -> Option<String> {
    FORMATS.iter().find(|f| f.name == format).and_then(|f| (f.help)(value))
}

/// Options of one validation pass.
#[derive(Debug, Clone, Copy, Default)]
pub struct ValidateOptions {
    /// Overlays are partial: they may leave out required fields.
    pub partial: bool,
}

/// Validates `node` against `schema` (a document schema with its `$defs`), pushing every
/// problem to `out`. Plain scalars are rewritten to strings where a string is expected, so that
/// `tag: 1.10` means `"1.10"`.
pub fn validate(node: &mut Node, root: &Json, path: &str, options: ValidateOptions, out: &mut Vec<Diagnostic>) {
    Validator { root, options, out }.check(node, root, path);
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

impl Validator<'_> {
    fn check(&mut self, node: &mut Node, schema: &Json, path: &str) {
        let schema = self.deref(schema);
        self.check_typed(node, &schema, path);
        // The format is checked after the type, so a coerced plain scalar is checked too.
        if let Some(format) = schema.get("x-tfrs-check").and_then(Json::as_str)
            && let Value::Str(text) = &node.value
            && let Err(expected) = check_format(format, text)
        {
            let mut diagnostic = Diagnostic::error(node.origin, path, format!("expected {expected}, found {}", node.describe()));
            if let Some(help) = format_help(format, text) {
                diagnostic = diagnostic.with_help(help);
            }
            self.out.push(diagnostic);
        }
    }

    fn deref(&self, schema: &Json) -> Json {
        let mut current = schema.clone();
        for _ in 0..16 {
            let Some(reference) = current.get("$ref").and_then(Json::as_str) else { break };
            let name = reference.trim_start_matches("#/$defs/");
            let Some(target) = self.root.get("$defs").and_then(|d| d.get(name)) else { break };
            let mut merged = target.clone();
            if let (Some(merged), Some(siblings)) = (merged.as_object_mut(), current.as_object()) {
                for (key, value) in siblings {
                    if key != "$ref" {
                        merged.entry(key.clone()).or_insert_with(|| value.clone());
                    }
                }
            }
            current = merged;
        }
        current
    }

    fn check_typed(&mut self, node: &mut Node, schema: &Json, path: &str) {
        let branches = schema.get("anyOf").or_else(|| schema.get("oneOf")).and_then(Json::as_array);
        if let Some(branches) = branches {
            let branches: Vec<Json> = branches.iter().map(|b| self.deref(b)).collect();
            if let Some(allowed) = constants(&branches) {
                self.check_enum(node, &allowed, path);
                return;
            }
            let non_null: Vec<&Json> = branches.iter().filter(|b| b.get("type") != Some(&Json::from("null"))).collect();
            if non_null.len() < branches.len() && node.value == Value::Null {
                return;
            }
            if let Some(first) = non_null.first() {
                let first = (*first).clone();
                self.check(node, &first, path);
            }
            return;
        }
        if let Some(allowed) = schema.get("enum").and_then(Json::as_array) {
            let allowed: Vec<String> = allowed.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect();
            self.check_enum(node, &allowed, path);
            return;
        }
        let types: Vec<&str> = match schema.get("type") {
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
                let items = schema.get("items").cloned().unwrap_or(Json::Bool(true));
                if let Value::Seq(elements) = &mut node.value {
                    for (index, element) in elements.iter_mut().enumerate() {
                        self.check(element, &items, &format!("{path}[{index}]"));
                    }
                }
            }
            _ => {}
        }
    }

    /// Checks the node's type, coercing plain scalars to strings; false if it does not match.
    fn check_type(&mut self, node: &mut Node, expected: &str, schema: &Json, path: &str) -> bool {
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
                schema.get("maxProperties").is_some() && schema.get("properties").and_then(|p| p.get("fromEnv")).is_some();
            // NB: a scalar where a secret source belongs is probably the secret itself: never echo it.
            let found = match (&node.value, is_secret_source) {
                (Value::Str(_), true) => "a string".to_owned(),
                (Value::Int(_) | Value::Float(_) | Value::Bool(_), true) => "a scalar".to_owned(),
                _ => node.describe(),
            };
            let mut diagnostic = Diagnostic::error(node.origin, path, format!("expected {what}, found {found}"));
            if is_secret_source {
                diagnostic = diagnostic.sensitive();
                diagnostic = diagnostic
                    .with_help("a secret source is `{}` (generated), `{ fromEnv: VAR }`, `{ fromFile: path }` or `{ value: \"...\" }`");
            }
            self.out.push(diagnostic);
        }
        matches
    }

    fn check_enum(&mut self, node: &mut Node, allowed: &[String], path: &str) {
        let listed = allowed.iter().map(|a| format!("`{a}`")).collect::<Vec<_>>().join(", ");
        let text = match &node.value {
            Value::Str(s) => Some(s.clone()),
            _ => node.plain.clone(),
        };
        match text {
            Some(text) if allowed.contains(&text) => node.value = Value::Str(text),
            Some(text) => {
                let mut diagnostic = Diagnostic::error(node.origin, path, format!("expected one of {listed}, found {}", node.describe()));
                if let Some(close) = did_you_mean(&text, allowed.iter().map(String::as_str)) {
                    diagnostic = diagnostic.with_help(format!("did you mean `{close}`?"));
                }
                self.out.push(diagnostic);
            }
            None => self.out.push(Diagnostic::error(node.origin, path, format!("expected one of {listed}, found {}", node.describe()))),
        }
    }

    fn check_range(&mut self, node: &Node, schema: &Json, path: &str) {
        let value = match node.value {
            Value::Int(i) => i as f64,
            Value::Float(f) => f,
            _ => return,
        };
        let minimum = schema.get("minimum").and_then(Json::as_f64);
        let maximum = schema.get("maximum").and_then(Json::as_f64);
        let low = minimum.is_some_and(|m| value < m);
        let high = maximum.is_some_and(|m| value > m);
        if low || high {
            let expected = match (minimum, maximum) {
                (Some(min), Some(max)) => format!("between {min} and {max}"),
                (Some(min), None) => format!("at least {min}"),
                (None, Some(max)) => format!("at most {max}"),
                (None, None) => String::new(),
            };
            let what = if schema.get("type").and_then(Json::as_str) == Some("integer") { "an integer" } else { "a number" };
            self.out.push(Diagnostic::error(node.origin, path, format!("expected {what} {expected}, found {}", node.describe())));
        }
    }

    fn check_object(&mut self, node: &mut Node, schema: &Json, path: &str) {
        let empty = Map::new();
        let properties = schema.get("properties").and_then(Json::as_object).unwrap_or(&empty);
        let additional = schema.get("additionalProperties").cloned();
        let names_schema = schema.get("propertyNames").and_then(|p| p.get("x-tfrs-check")).and_then(Json::as_str).map(str::to_owned);
        let origin = node.origin;
        let Value::Map(entries) = &mut node.value else { return };
        if let Some(max) = schema.get("maxProperties").and_then(Json::as_u64) {
            let count = entries.len() as u64;
            if count > max {
                let keys: Vec<String> = entries.iter().map(|(k, _)| format!("`{}`", k.name)).collect();
                let forms: Vec<String> = properties.keys().map(|k| format!("`{k}`")).collect();
                let second = entries.get(max as usize).map_or(origin, |(k, _)| k.origin);
                self.out.push(
                    Diagnostic::error(second, path, format!("expected exactly one of {}, found {}", forms.join(", "), keys.join(" and ")))
                        .with_help("a secret source takes one form; `{}` means `generate` with its defaults"),
                );
            }
        }
        for (key, value) in entries.iter_mut() {
            let child = join(path, &key.name);
            if let Some(property) = properties.get(&key.name) {
                let property = property.clone();
                self.check(value, &property, &child);
            } else {
                match &additional {
                    Some(Json::Bool(false)) => {
                        let known: Vec<&str> = properties.keys().map(String::as_str).collect();
                        let listed = known.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", ");
                        let mut diagnostic = Diagnostic::error(key.origin, &child, format!("unknown field, expected one of {listed}"));
                        if let Some(close) = did_you_mean(&key.name, known.iter().copied()) {
                            diagnostic = diagnostic.with_help(format!("did you mean `{close}`?"));
                        }
                        self.out.push(diagnostic);
                    }
                    Some(schema @ Json::Object(_)) => {
                        if let Some(format) = &names_schema
                            && let Err(expected) = check_format(format, &key.name)
                        {
                            self.out.push(Diagnostic::error(
                                key.origin,
                                &child,
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
            && let Some(required) = schema.get("required").and_then(Json::as_array)
        {
            for name in required.iter().filter_map(Json::as_str) {
                if !entries.iter().any(|(k, _)| k.name == name) {
                    self.out.push(Diagnostic::error(origin, join(path, name), "missing required field"));
                }
            }
        }
    }
}

/// If every branch is a constant (`const` or a one-value `enum`), the allowed values.
fn constants(branches: &[Json]) -> Option<Vec<String>> {
    let mut values = Vec::new();
    for branch in branches {
        if let Some(value) = branch.get("const").and_then(Json::as_str) {
            values.push(value.to_owned());
        } else if let Some(list) = branch.get("enum").and_then(Json::as_array) {
            values.extend(list.iter().filter_map(Json::as_str).map(str::to_owned));
        } else {
            return None;
        }
    }
    Some(values)
}

/// What `tfrs schema` prints for a kind: `$ref`s kept, `x-tfrs-check` replaced by `pattern`,
/// and `apiVersion` / `kind` pinned to their constants.
#[must_use]
pub fn export(kind: Kind) -> Json {
    let mut schema = kind.raw_schema();
    replace_checks(&mut schema);
    if let Some(properties) = schema.get_mut("properties").and_then(Json::as_object_mut) {
        properties.insert("apiVersion".into(), serde_json::json!({ "const": super::model::API_VERSION, "type": "string" }));
        properties.insert("kind".into(), serde_json::json!({ "const": kind.as_str(), "type": "string" }));
    }
    if let Some(object) = schema.as_object_mut() {
        object.insert("title".into(), Json::from(kind.as_str()));
    }
    schema
}

fn replace_checks(schema: &mut Json) {
    match schema {
        Json::Object(object) => {
            if let Some(Json::String(name)) = object.remove("x-tfrs-check") {
                if let Some(format) = FORMATS.iter().find(|f| f.name == name) {
                    object.insert("pattern".into(), Json::from(format.pattern));
                }
                // NB: the empty string matches the Prometheus pattern (every unit is optional).
                if name == "prometheus-duration" {
                    object.insert("minLength".into(), Json::from(1));
                }
                // NB: Kubernetes quantities may be written as numbers (`cpu: 1`).
                if name == "quantity" {
                    let nullable = object.get("type").and_then(Json::as_array).is_some_and(|t| t.iter().any(|t| t == "null"));
                    let types =
                        if nullable { serde_json::json!(["string", "number", "null"]) } else { serde_json::json!(["string", "number"]) };
                    object.insert("type".into(), types);
                }
            }
            for value in object.values_mut() {
                replace_checks(value);
            }
        }
        Json::Array(items) => items.iter_mut().for_each(replace_checks),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_accept_and_reject() {
        assert!(check_format("dns-label", "acme-1").is_ok());
        assert!(check_format("dns-label", "Acme").is_err());
        assert!(check_format("dns-label", &"a".repeat(64)).is_err());
        assert!(check_format("quantity", "10Gi").is_ok());
        assert!(check_format("quantity", "500m").is_ok());
        assert!(check_format("quantity", "10GB").is_err());
        assert!(check_format("duration", "1h30m").is_ok());
        assert!(check_format("duration", "1.5h").is_ok());
        assert!(check_format("duration", "15 days").is_err());
        assert!(check_format("duration", "1d").is_err(), "Go durations have no days");
        assert!(check_format("duration", "0").is_err(), "Flux's pattern refuses a bare 0");
        assert!(check_format("prometheus-duration", "15d").is_ok());
        assert!(check_format("prometheus-duration", "1w3d").is_ok());
        assert!(check_format("prometheus-duration", "1.5d").is_err(), "Prometheus reads whole numbers");
        assert!(check_format("prometheus-duration", "30m1h").is_err(), "Prometheus wants the largest unit first");
        assert_eq!(
            format_help("duration", "1d").as_deref(),
            Some("Flux and Helm read Go durations, which have no days, weeks or years: write `24h`")
        );
        assert_eq!(format_help("prometheus-duration", "15 days").as_deref(), Some("write `15d`"));
        assert!(check_format("env-name", "OPENAI_API_KEY").is_ok());
        assert!(check_format("env-name", "1BAD").is_err());
        assert!(check_format("version", "v1.16.2").is_ok());
        assert!(check_format("version", "0.5.0-dev7").is_ok());
        assert!(check_format("version", "latest").is_err());
        assert!(check_format("date", "2027-05-19").is_ok());
        assert!(check_format("date", "2027-13-19").is_err());
        assert!(check_format("date", "2099-02-30").is_err());
        assert!(check_format("date", "2028-02-29").is_ok() && check_format("date", "2027-02-29").is_err());
    }

    #[test]
    fn a_refused_duration_says_what_to_write() {
        let mut nodes = super::super::yaml::parse(0, "spec:\n  tfrsOperator:\n    timeout: 1d\n").expect("yaml");
        let mut out = Vec::new();
        validate(&mut nodes[0], &Kind::Cluster.raw_schema(), "", ValidateOptions { partial: true }, &mut out);
        assert_eq!(out.len(), 1, "{out:#?}");
        assert_eq!(out[0].path, "spec.tfrsOperator.timeout");
        assert!(out[0].message.starts_with("expected a Go duration such as `90s`"), "{}", out[0].message);
        assert!(out[0].help.as_deref().is_some_and(|h| h.ends_with("write `24h`")), "{:?}", out[0].help);
    }

    /// The schema's durations: the timeout takes Flux's pattern, the retention Prometheus's
    /// (which needs `minLength`, as its every unit is optional).
    #[test]
    fn exported_durations_carry_their_consumers_patterns() {
        let cluster = export(Kind::Cluster);
        let operator = &cluster["$defs"]["TfrsOperator"]["properties"]["timeout"];
        assert_eq!(operator["pattern"], Json::from(duration::GO_PATTERN), "{operator}");
        let tenant = export(Kind::Tenant);
        let retention = &tenant["$defs"]["Prometheus"]["properties"]["retention"];
        assert_eq!(retention["pattern"], Json::from(duration::PROMETHEUS_PATTERN), "{retention}");
        assert_eq!(retention["minLength"], Json::from(1), "{retention}");
    }

    #[test]
    fn joins_paths() {
        assert_eq!(join("", "spec"), "spec");
        assert_eq!(join("spec", "postgresql"), "spec.postgresql");
        assert_eq!(join("spec.configData", "a.b"), "spec.configData[\"a.b\"]");
    }
}
