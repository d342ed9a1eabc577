//! The fleet at a glance (`tfrs plan`): what each cluster holds, and what differs between the
//! placements of a tenant or server that is placed in several clusters (the environments'
//! doing, or the overlays'). Literal secret values never appear: a differing `value` of a secret
//! source reads `<redacted>`.

use super::load::{Object, Spec};
use serde::Serialize;
use serde_json::Value as Json;
use std::collections::BTreeMap;

/// One cluster's part of the fleet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Cluster {
    /// Its name.
    pub name: String,
    /// The environments it names, in order.
    pub environments: Vec<String>,
    /// The overlays it names, in order.
    pub overlays: Vec<String>,
    /// Its tenants, in input order.
    pub tenants: Vec<Tenant>,
}

/// A tenant placed in a cluster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Tenant {
    /// Its name.
    pub name: String,
    /// The namespace it lives in.
    pub namespace: String,
    /// Its servers in this cluster, in input order.
    pub servers: Vec<String>,
}

/// A field whose value differs between the placements of one object.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Difference {
    /// `TFRTenant` or `TFRServer`.
    pub kind: &'static str,
    /// The object's name.
    pub name: String,
    /// The field, e.g. `spec.postgresql.instances`.
    pub field: String,
    /// Its value in each cluster the object is placed in, in cluster order (`null`: not set).
    pub values: Vec<(String, Json)>,
}

/// What each cluster holds.
#[must_use]
pub fn clusters(spec: &Spec) -> Vec<Cluster> {
    spec.clusters
        .iter()
        .map(|cluster| {
            let tenants = spec
                .tenants
                .iter()
                .filter(|t| t.cluster == cluster.name())
                .map(|t| Tenant {
                    name: t.name().to_owned(),
                    namespace: super::check::tenant_namespace(t.name(), &t.spec),
                    servers: spec
                        .servers
                        .iter()
                        .filter(|s| s.cluster == cluster.name() && s.spec.tenant == t.name())
                        .map(|s| s.name().to_owned())
                        .collect(),
                })
                .collect();
            Cluster {
                name: cluster.name().to_owned(),
                environments: cluster.spec.environments.clone(),
                overlays: cluster.spec.overlays.clone(),
                tenants,
            }
        })
        .collect()
}

/// Every field that differs between the placements of a tenant or server placed in several
/// clusters, by kind, name and field.
#[must_use]
pub fn differences(spec: &Spec) -> Vec<Difference> {
    let order: Vec<&str> = spec.clusters.iter().map(|c| c.name()).collect();
    // NB: a tenant's `spec.cluster` is its placement, not a difference anyone wrote; its
    // namespace is the one in effect (an empty `namespace` is its name, or its function's).
    let mut out = differing("TFRTenant", &spec.tenants, &order, &|tenant, leaves| {
        leaves.remove("spec.cluster");
        leaves.insert("spec.namespace".to_owned(), Json::from(super::check::tenant_namespace(tenant.name(), &tenant.spec)));
    });
    out.extend(differing("TFRServer", &spec.servers, &order, &|_, _| {}));
    out
}

/// The leaves of a spec by dotted path.
type Leaves = BTreeMap<String, Json>;

/// The differing fields of the objects of one kind, their leaves made what is compared by
/// `adjust`.
fn differing<S: Serialize>(
    kind: &'static str,
    objects: &[Object<S>],
    order: &[&str],
    adjust: &dyn Fn(&Object<S>, &mut Leaves),
) -> Vec<Difference> {
    let mut by_name: BTreeMap<&str, Vec<&Object<S>>> = BTreeMap::new();
    for object in objects {
        by_name.entry(object.name()).or_default().push(object);
    }
    let mut out = Vec::new();
    for (name, mut placed) in by_name.into_iter().filter(|(_, placed)| placed.len() > 1) {
        placed.sort_by_key(|o| order.iter().position(|c| *c == o.cluster));
        let flat: Vec<BTreeMap<String, Json>> = placed
            .iter()
            .map(|o| {
                let mut leaves = BTreeMap::new();
                flatten(&serde_json::to_value(&o.spec).unwrap_or(Json::Null), "spec", &mut leaves);
                adjust(o, &mut leaves);
                leaves
            })
            .collect();
        let fields: std::collections::BTreeSet<&String> = flat.iter().flat_map(BTreeMap::keys).collect();
        for field in fields {
            let values: Vec<Json> = flat.iter().map(|leaves| leaves.get(field).cloned().unwrap_or(Json::Null)).collect();
            if values.windows(2).any(|pair| pair[0] != pair[1]) {
                let redacted = field.ends_with(".value");
                let values = placed
                    .iter()
                    .zip(values)
                    .map(|(o, v)| (o.cluster.clone(), if redacted && !v.is_null() { Json::from("<redacted>") } else { v }))
                    .collect();
                out.push(Difference { kind, name: name.to_owned(), field: field.clone(), values });
            }
        }
    }
    out
}

/// The leaves of a JSON value by dotted path (a list is one leaf; an empty map is none, as if
/// the field were not set: one placement's `secretData: {}` is not a difference from another's
/// `secretData.KEY`, which is one already).
fn flatten(json: &Json, path: &str, out: &mut BTreeMap<String, Json>) {
    match json {
        Json::Object(map) => {
            for (key, value) in map {
                flatten(value, &format!("{path}.{key}"), out);
            }
        }
        other => {
            out.insert(path.to_owned(), other.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_map_is_no_leaf_as_if_not_set() {
        let mut leaves = BTreeMap::new();
        flatten(&serde_json::json!({ "secretData": {}, "env": { "A": { "value": "x" } }, "list": [] }), "spec", &mut leaves);
        assert_eq!(leaves.keys().collect::<Vec<_>>(), ["spec.env.A.value", "spec.list"]);
    }
}
