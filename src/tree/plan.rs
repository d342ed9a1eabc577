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
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Object {
    /// The object.
    #[serde(flatten)]
    pub id: ObjectId,
    /// The file, relative to the cluster directory.
    #[serde(default)]
    pub file: String,
}

/// The id's fields, then the file: written out rather than flattened, which costs a map per
/// object (a large cluster's plan has tens of thousands).
impl Serialize for Object {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct as _;
        let mut object = serializer.serialize_struct("Object", 5)?;
        object.serialize_field("apiVersion", &self.id.api_version)?;
        object.serialize_field("kind", &self.id.kind)?;
        object.serialize_field("namespace", &self.id.namespace)?;
        object.serialize_field("name", &self.id.name)?;
        object.serialize_field("file", &self.file)?;
        object.end()
    }
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

    /// The text of `plan.json` (pretty JSON, ending with a newline). The components are
    /// written apart, in parallel, each indented to its place in the list: the same text as
    /// the whole plan written at once.
    #[must_use]
    pub fn to_text(&self) -> String {
        use rayon::prelude::*;
        const PLACE: &str = "    ";
        let components: Vec<String> =
            self.components.par_iter().map(|c| indented(&serde_json::to_string_pretty(c).unwrap_or_default(), PLACE)).collect();
        let mut text = String::with_capacity(components.iter().map(|c| c.len() + 2).sum::<usize>() + self.cluster.len() + 48);
        text.push_str("{\n  \"cluster\": ");
        text.push_str(&serde_json::to_string(&self.cluster).unwrap_or_default());
        text.push_str(",\n  \"components\": ");
        if components.is_empty() {
            text.push_str("[]");
        } else {
            text.push_str("[\n");
            text.push_str(&components.join(",\n"));
            text.push_str("\n  ]");
        }
        text.push_str("\n}\n");
        text
    }
}

/// `text` with `place` before each line (pretty JSON has no line break inside a string).
fn indented(text: &str, place: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    for line in text.split_inclusive('\n') {
        out.push_str(place);
        out.push_str(line);
    }
    out
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
        assert_eq!(text, format!("{}\n", serde_json::to_string_pretty(&plan).unwrap()));
        assert!(text.contains("\"apiVersion\": \"v1\",\n          \"kind\": \"Namespace\",\n          \"namespace\": null,\n          \"name\": \"x\",\n          \"file\""), "{text}");
        assert_eq!(Plan::parse(text.as_bytes()).unwrap(), plan);
    }

    #[test]
    fn a_plan_written_in_pieces_is_the_plan_written_at_once() {
        let object = |n: &str| Object { id: ObjectId::new("v1", "ConfigMap", Some("a\"b"), n), file: format!("components/x/{n}.yaml") };
        let component = |id: &str, after: &[&str], objects: Vec<Object>| Component {
            id: id.into(),
            path: format!("components/{id}"),
            depends_on: after.iter().map(|a| (*a).to_owned()).collect(),
            objects,
        };
        let plans = [
            Plan { cluster: "empty".into(), components: Vec::new() },
            Plan {
                cluster: "lab\u{e9}".into(),
                components: vec![
                    component("cluster/a", &[], Vec::new()),
                    component("cluster/b", &["cluster/a"], vec![object("one"), object("two\nlines")]),
                    component("namespaces/n/c", &["cluster/a", "cluster/b"], vec![object("three")]),
                ],
            },
        ];
        for plan in plans {
            assert_eq!(plan.to_text(), format!("{}\n", serde_json::to_string_pretty(&plan).unwrap()));
        }
    }
}
