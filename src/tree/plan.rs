//! `plan.json`: a cluster's components in dependency order, each with its directory, the
//! components it waits for and its objects. The tree writes it beside the components and
//! reconcile reads it back: one type for both.

use crate::object::ObjectId;
use serde::{Deserialize, Serialize};

/// A cluster's plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    /// The cluster's name.
    pub cluster: String,
    /// The components, in dependency order.
    pub components: Vec<Component>,
}

/// One component of the plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Component {
    /// Its id, the path below `components/` (`cluster/cert-manager`, `namespaces/acme/redis`).
    pub id: String,
    /// Its directory, relative to the cluster directory.
    #[serde(default)]
    pub path: String,
    /// Ids of the components that must be ready first.
    #[serde(default)]
    pub depends_on: Vec<String>,
    /// Its objects, in the order they are written.
    #[serde(default)]
    pub objects: Vec<Object>,
}

/// One object of a component and its file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Object {
    /// The object.
    #[serde(flatten)]
    pub id: ObjectId,
    /// The file, relative to the cluster directory.
    #[serde(default)]
    pub file: String,
}

impl Plan {
    /// Parses `plan.json`.
    ///
    /// # Errors
    ///
    /// The bytes are not the documented shape.
    pub fn parse(bytes: &[u8]) -> Result<Self, serde_json::Error> {
        serde_json::from_slice(bytes)
    }

    /// The text of `plan.json` (pretty JSON, ending with a newline).
    #[must_use]
    pub fn to_text(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).unwrap_or_default();
        text.push('\n');
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plan_reads_back_what_it_writes() {
        let plan = Plan {
            cluster: "lab".into(),
            components: vec![Component {
                id: "cluster/x".into(),
                path: "components/cluster/x".into(),
                depends_on: vec!["cluster/y".into()],
                objects: vec![
                    Object { id: ObjectId::new("v1", "Namespace", None, "x"), file: "components/cluster/x/namespace-x.yaml".into() },
                    Object { id: ObjectId::new("v1", "ConfigMap", Some("x"), "c"), file: "components/cluster/x/configmap-c.yaml".into() },
                ],
            }],
        };
        let text = plan.to_text();
        assert!(text.contains("\"apiVersion\": \"v1\",\n          \"kind\": \"Namespace\",\n          \"namespace\": null,\n          \"name\": \"x\",\n          \"file\""), "{text}");
        assert_eq!(Plan::parse(text.as_bytes()).unwrap(), plan);
    }
}
