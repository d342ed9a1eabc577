//! The template set: built-in templates embedded in the binary, optionally overridden by a
//! directory of the user's (`--templates DIR`), and the minijinja environment that renders them.
//!
//! Every `{{ value }}` is written as JSON (auto-escape), which YAML reads as the same scalar,
//! list or map: a spec string full of quotes, colons, newlines, `{{`, `---` or YAML keywords
//! stays one string. Undefined variables are errors.

use minijinja::{AutoEscape, Environment, UndefinedBehavior, Value};
use std::collections::BTreeMap;

/// The built-in templates, by name (path below `templates/`).
pub const BUILTIN: &[(&str, &str)] = &[
    ("macros/helm.yaml", include_str!("../../templates/macros/helm.yaml")),
    ("macros/kustomize.yaml", include_str!("../../templates/macros/kustomize.yaml")),
    ("gitops/flux.yaml", include_str!("../../templates/gitops/flux.yaml")),
    ("gitops/argocd.yaml", include_str!("../../templates/gitops/argocd.yaml")),
    ("cluster/cert-manager.yaml", include_str!("../../templates/cluster/cert-manager.yaml")),
    ("cluster/cluster-issuer.yaml", include_str!("../../templates/cluster/cluster-issuer.yaml")),
    ("cluster/istio-base.yaml", include_str!("../../templates/cluster/istio-base.yaml")),
    ("cluster/istiod.yaml", include_str!("../../templates/cluster/istiod.yaml")),
    ("cluster/istio-ingress.yaml", include_str!("../../templates/cluster/istio-ingress.yaml")),
    ("cluster/gateway.yaml", include_str!("../../templates/cluster/gateway.yaml")),
    ("cluster/envoyfilter-cookie.yaml", include_str!("../../templates/cluster/envoyfilter-cookie.yaml")),
    ("cluster/envoyfilter-lua.yaml", include_str!("../../templates/cluster/envoyfilter-lua.yaml")),
    ("cluster/virtualservice.yaml", include_str!("../../templates/cluster/virtualservice.yaml")),
    ("cluster/istio-telemetry.yaml", include_str!("../../templates/cluster/istio-telemetry.yaml")),
    ("cluster/cnpg-operator.yaml", include_str!("../../templates/cluster/cnpg-operator.yaml")),
    ("cluster/minio-operator.yaml", include_str!("../../templates/cluster/minio-operator.yaml")),
    ("cluster/rabbitmq-operator.yaml", include_str!("../../templates/cluster/rabbitmq-operator.yaml")),
    ("cluster/image-registry.yaml", include_str!("../../templates/cluster/image-registry.yaml")),
    ("cluster/sealed-secrets.yaml", include_str!("../../templates/cluster/sealed-secrets.yaml")),
    ("cluster/tfrs-operator.yaml", include_str!("../../templates/cluster/tfrs-operator.yaml")),
    ("cluster/external-secrets.yaml", include_str!("../../templates/cluster/external-secrets.yaml")),
    ("cluster/billing-store.yaml", include_str!("../../templates/cluster/billing-store.yaml")),
    ("tenant/namespace.yaml", include_str!("../../templates/tenant/namespace.yaml")),
    ("tenant/mesh-policy.yaml", include_str!("../../templates/tenant/mesh-policy.yaml")),
    ("tenant/postgresql.yaml", include_str!("../../templates/tenant/postgresql.yaml")),
    ("tenant/timescaledb.yaml", include_str!("../../templates/tenant/timescaledb.yaml")),
    ("tenant/redis.yaml", include_str!("../../templates/tenant/redis.yaml")),
    ("tenant/minio.yaml", include_str!("../../templates/tenant/minio.yaml")),
    ("tenant/rabbitmq.yaml", include_str!("../../templates/tenant/rabbitmq.yaml")),
    ("tenant/jaeger.yaml", include_str!("../../templates/tenant/jaeger.yaml")),
    ("tenant/prometheus.yaml", include_str!("../../templates/tenant/prometheus.yaml")),
    ("tenant/billing-token.yaml", include_str!("../../templates/tenant/billing-token.yaml")),
    ("tenant/otel-collector.yaml", include_str!("../../templates/tenant/otel-collector.yaml")),
    ("tenant/grafana.yaml", include_str!("../../templates/tenant/grafana.yaml")),
    ("tenant/vector.yaml", include_str!("../../templates/tenant/vector.yaml")),
    ("tenant/shared-cache.yaml", include_str!("../../templates/tenant/shared-cache.yaml")),
    ("tenant/front.yaml", include_str!("../../templates/tenant/front.yaml")),
    ("tenant/utils.yaml", include_str!("../../templates/tenant/utils.yaml")),
    ("server/_pod.yaml", include_str!("../../templates/server/_pod.yaml")),
    ("server/config.yaml", include_str!("../../templates/server/config.yaml")),
    ("server/db-init.yaml", include_str!("../../templates/server/db-init.yaml")),
    ("server/minio-init.yaml", include_str!("../../templates/server/minio-init.yaml")),
    ("server/grafana-sa.yaml", include_str!("../../templates/server/grafana-sa.yaml")),
    ("server/api-worker.yaml", include_str!("../../templates/server/api-worker.yaml")),
    ("server/robot-worker.yaml", include_str!("../../templates/server/robot-worker.yaml")),
];

/// A set of templates by name; overrides replace built-ins of the same name.
#[derive(Debug, Clone)]
pub struct Templates {
    sources: BTreeMap<String, String>,
}

impl Default for Templates {
    fn default() -> Self {
        Templates::builtin()
    }
}

impl Templates {
    /// The built-in templates.
    #[must_use]
    pub fn builtin() -> Self {
        Templates { sources: BUILTIN.iter().map(|(name, text)| ((*name).to_owned(), (*text).to_owned())).collect() }
    }

    /// Replaces (or adds) a template.
    pub fn set(&mut self, name: impl Into<String>, text: impl Into<String>) {
        self.sources.insert(name.into(), text.into());
    }

    /// SHA-256 (hex) over every template's name and source: what the render memo keys on.
    #[must_use]
    pub fn digest(&self) -> String {
        use sha2::{Digest, Sha256};
        let mut hasher = Sha256::new();
        for (name, source) in &self.sources {
            for part in [name, source] {
                hasher.update((part.len() as u64).to_be_bytes());
                hasher.update(part.as_bytes());
            }
        }
        crate::secrets::bytes::to_hex(&hasher.finalize())
    }

    /// Names of the templates.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.sources.keys().map(String::as_str)
    }

    /// Builds the minijinja environment (templates compiled once).
    ///
    /// # Errors
    ///
    /// A template that does not parse.
    pub fn environment(&self) -> Result<Environment<'static>, minijinja::Error> {
        let mut env = Environment::new();
        env.set_undefined_behavior(UndefinedBehavior::Strict);
        env.set_debug(true);
        // NB: every template is YAML; every interpolated value is written as JSON, which is a
        // valid YAML flow scalar or collection, so it can never become structure.
        env.set_auto_escape_callback(|_| AutoEscape::Json);
        env.set_formatter(yaml_safe_json);
        env.add_filter("merge", merge);
        env.add_filter("sha256", sha256);
        env.add_filter("text", text);
        env.add_filter("toyaml", toyaml);
        // The names of the engine's release objects (`super::names::release_object`).
        env.add_function("release_object", |engine: &str, cluster: &str, object: &str, kind: &str| {
            super::names::release_object(engine, cluster, object, kind)
        });
        // The version catalog: `catalog["<name>"].version`, `.source`, `.image`, ...
        env.add_global("catalog", Value::from(minijinja::value::Serde(crate::catalog::template_values())));
        for (name, text) in &self.sources {
            env.add_template_owned(name.clone(), text.clone())?;
        }
        Ok(env)
    }
}

/// Writes a value as JSON, like the JSON auto-escape, but also escapes every character YAML may not
/// hold raw (DEL, C1 controls, U+FFFE/U+FFFF), which JSON leaves alone: a spec string with such a
/// character still reads back as exactly that string. Safe strings (macro and block output) are
/// written as they are.
fn yaml_safe_json(out: &mut minijinja::Output, state: &mut minijinja::State, value: &Value) -> Result<(), minijinja::Error> {
    if value.is_safe() || value.is_undefined() {
        return minijinja::escape_formatter(out, state, value);
    }
    let json = serde_json::to_string(value).map_err(|e| minijinja::Error::new(minijinja::ErrorKind::BadSerialization, e.to_string()))?;
    let mut text = String::with_capacity(json.len());
    for c in json.chars() {
        if c == '\u{7f}' || (('\u{80}'..='\u{9f}').contains(&c) && c != '\u{85}') || c == '\u{fffe}' || c == '\u{ffff}' {
            text.push_str(&format!("\\u{:04x}", u32::from(c)));
        } else {
            text.push(c);
        }
    }
    out.write_str(&text).map_err(|_| minijinja::Error::new(minijinja::ErrorKind::WriteFailure, "cannot write template output"))
}

/// `a | merge(b)`: a map with the entries of both, `b` winning.
fn merge(left: Value, right: Value) -> Result<Value, minijinja::Error> {
    let mut out: BTreeMap<String, Value> = BTreeMap::new();
    for map in [&left, &right] {
        for key in map.try_iter()? {
            let value = map.get_item(&key)?;
            out.insert(key.to_string(), value);
        }
    }
    Ok(Value::from(out))
}

/// `value | sha256`: the lowercase hex SHA-256 of the value's text (config checksums).
fn sha256(value: &Value) -> String {
    use sha2::Digest as _;
    let digest = sha2::Sha256::digest(value.to_string().as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// `value | text`: the value's text as a plain string, so it is written as one quoted string
/// (e.g. a JSON document embedded in a ConfigMap).
fn text(value: &Value) -> String {
    value.to_string()
}

/// `value | toyaml`: the value as a YAML document, as one string (a config file embedded in a
/// ConfigMap reads as YAML in diffs, not as one long JSON line).
fn toyaml(value: &Value) -> Result<String, minijinja::Error> {
    let json = serde_json::to_value(value).map_err(|e| minijinja::Error::new(minijinja::ErrorKind::InvalidOperation, e.to_string()))?;
    crate::manifest::to_yaml(&json).map_err(|e| minijinja::Error::new(minijinja::ErrorKind::InvalidOperation, e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_templates_compile() {
        Templates::builtin().environment().unwrap();
    }

    #[test]
    fn values_are_written_as_json_scalars() {
        let mut templates = Templates::builtin();
        templates.set("t.yaml", "a: {{ x }}\nb: {{ m | merge({'k': 'v'}) }}\n");
        let env = templates.environment().unwrap();
        let text = env
            .get_template("t.yaml")
            .unwrap()
            .render(minijinja::context! { x => "x: y\n---\nkind: ClusterRole {{ z }}", m => minijinja::context!{ a => "b" } })
            .unwrap();
        assert_eq!(text, "a: \"x: y\\n---\\nkind: ClusterRole {{ z }}\"\nb: {\"a\":\"b\",\"k\":\"v\"}");
    }

    #[test]
    fn characters_yaml_cannot_hold_raw_are_escaped() {
        let mut templates = Templates::builtin();
        templates.set("t.yaml", "a: {{ x }}\n");
        let env = templates.environment().unwrap();
        let value = "del\u{7f} c1\u{9b} nel\u{85} \u{fffe}";
        let text = env.get_template("t.yaml").unwrap().render(minijinja::context! { x => value }).unwrap();
        let parsed = crate::spec::yaml::parse(0, &text).unwrap();
        assert_eq!(parsed[0].to_json()["a"], value, "{text}");
    }

    #[test]
    fn undefined_is_an_error() {
        let mut templates = Templates::builtin();
        templates.set("t.yaml", "a: {{ missing.field }}\n");
        let env = templates.environment().unwrap();
        assert!(env.get_template("t.yaml").unwrap().render(minijinja::context! {}).is_err());
    }
}
