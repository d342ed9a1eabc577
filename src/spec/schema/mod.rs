//! JSON Schemas of the three kinds, derived from the Rust types, and a validator that checks a
//! located YAML tree against them, collecting every problem instead of stopping at the first.
//!
//! The schemas carry `x-tfrs-check` on fields that need a format check; [`check_format`]
//! implements those checks (in `format.rs`) and [`export`] turns them into plain `pattern`s for
//! editors and CRDs. The validator is in `validate.rs`.

mod format;
mod validate;

pub use format::{check_format, format_help, is_dns_label};
pub use validate::{UNKNOWN_FIELD, ValidateOptions, join, validate};

use super::model::{ClusterDocument, ServerDocument, TenantDocument};
use serde_json::Value as Json;

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

/// What `tfrs schema` prints for a kind: `$ref`s kept, `x-tfrs-check` replaced by `pattern`,
/// and `apiVersion` / `kind` pinned to their constants.
#[must_use]
pub fn export(kind: Kind) -> Json {
    export_document(kind.raw_schema(), kind.as_str())
}

/// [`export`] for any document schema of kind `kind` (a kind read outside the platform's
/// specs, such as `TFRInfra`).
#[must_use]
pub fn export_document(mut schema: Json, kind: &str) -> Json {
    replace_checks(&mut schema);
    if let Some(properties) = schema.get_mut("properties").and_then(Json::as_object_mut) {
        properties.insert("apiVersion".into(), serde_json::json!({ "const": super::model::API_VERSION, "type": "string" }));
        properties.insert("kind".into(), serde_json::json!({ "const": kind, "type": "string" }));
    }
    if let Some(object) = schema.as_object_mut() {
        object.insert("title".into(), Json::from(kind));
    }
    schema
}

fn replace_checks(schema: &mut Json) {
    match schema {
        Json::Object(object) => {
            if let Some(Json::String(name)) = object.remove("x-tfrs-check") {
                if let Some(pattern) = format::pattern(&name) {
                    object.insert("pattern".into(), Json::from(pattern));
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
    use crate::spec::duration;

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
}
