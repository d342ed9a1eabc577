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
            // NB: each moved in and freed, not joined first (the text of a large cluster's plan
            // is 15 MB; a join held it a third time at the render's peak).
            text.push_str("[\n");
            for (index, component) in components.into_iter().enumerate() {
                if index > 0 {
                    text.push_str(",\n");
                }
                text.push_str(&component);
            }
            text.push_str("\n  ]");
        }
        text.push_str("\n}\n");
        text
    }
}

impl Plan {
    /// The digest of everything its text is made of (the cluster, and each component's id,
    /// path, dependencies and objects with their files, in order): equal digests, equal texts.
    /// The render memo keeps `plan.json` unwritten by it when the components did not move.
    #[must_use]
    pub fn digest(&self) -> [u8; 32] {
        Plan::digest_of(&self.cluster, &self.component_digests())
    }

    /// The digest [`Plan::digest`] gives a plan of cluster `cluster` whose components have the
    /// digests `components` ([`Plan::component_digests`]), in order.
    #[must_use]
    pub fn digest_of(cluster: &str, components: &[[u8; 32]]) -> [u8; 32] {
        use sha2::{Digest as _, Sha256};
        let mut hasher = Sha256::new();
        hasher.update(b"tfrs/plan/v1");
        let mut head = Vec::new();
        crate::secrets::bytes::push_lp(&mut head, cluster.as_bytes());
        hasher.update(&head);
        hasher.update((components.len() as u64).to_be_bytes());
        components.iter().for_each(|part| hasher.update(part));
        hasher.finalize().into()
    }

    /// The digest of each component, in order: its id, path, dependencies and objects with
    /// their files (made side by side).
    #[must_use]
    pub fn component_digests(&self) -> Vec<[u8; 32]> {
        use rayon::prelude::*;
        use sha2::{Digest as _, Sha256};
        let lp = |out: &mut Vec<u8>, bytes: &[u8]| crate::secrets::bytes::push_lp(out, bytes);
        self.components
            .par_iter()
            .map(|component| {
                // NB: destructured, so that a field added to the plan must be added here too.
                let Component { id, path, depends_on, objects } = component;
                let mut out = Vec::with_capacity(256 + 160 * objects.len());
                lp(&mut out, id.as_bytes());
                lp(&mut out, path.as_bytes());
                out.extend_from_slice(&(depends_on.len() as u64).to_be_bytes());
                depends_on.iter().for_each(|dependency| lp(&mut out, dependency.as_bytes()));
                out.extend_from_slice(&(objects.len() as u64).to_be_bytes());
                for Object { id: ObjectId { api_version, kind, namespace, name }, file } in objects {
                    for field in [api_version, kind, name, file] {
                        lp(&mut out, field.as_bytes());
                    }
                    match namespace {
                        Some(namespace) => lp(&mut out, &[&[1], namespace.as_bytes()].concat()),
                        None => lp(&mut out, &[0]),
                    }
                }
                Sha256::digest(&out).into()
            })
            .collect()
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
    fn a_plan_of_many_components_is_the_whole_plan_written_at_once() {
        let component = |i: usize| Component {
            id: format!("namespaces/n{i}/redis"),
            path: format!("components/namespaces/n{i}/redis"),
            depends_on: (0..i % 3).map(|d| format!("namespaces/n{i}/dep{d}")).collect(),
            objects: (0..(i % 4) * 10)
                .map(|o| Object { id: ObjectId::new("v1", "ConfigMap", Some("n"), &format!("c{o}")), file: format!("f{o}") })
                .collect(),
        };
        let plan = Plan { cluster: "lab".into(), components: (0..1_300).map(component).collect() };
        assert_eq!(plan.to_text(), format!("{}\n", serde_json::to_string_pretty(&plan).unwrap()));
    }

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
    fn the_digest_changes_with_every_part_of_the_text() {
        let object =
            |n: &str, namespace: Option<&str>| Object { id: ObjectId::new("v1", "ConfigMap", namespace, n), file: format!("c/{n}.yaml") };
        let plan = Plan {
            cluster: "lab".into(),
            components: vec![
                Component {
                    id: "cluster/a".into(),
                    path: "components/cluster/a".into(),
                    depends_on: Vec::new(),
                    objects: vec![object("one", Some("x"))],
                },
                Component {
                    id: "cluster/b".into(),
                    path: "components/cluster/b".into(),
                    depends_on: vec!["cluster/a".into()],
                    objects: Vec::new(),
                },
            ],
        };
        let edits: [fn(&mut Plan); 8] = [
            |p| p.cluster = "lab2".into(),
            |p| p.components[0].id = "cluster/z".into(),
            |p| p.components[0].path = "components/cluster/z".into(),
            |p| p.components[1].depends_on.clear(),
            |p| p.components[0].objects[0].file = "c/other.yaml".into(),
            |p| p.components[0].objects[0].id.namespace = None,
            |p| p.components[0].objects[0].id.kind = "Secret".into(),
            |p| p.components.swap(0, 1),
        ];
        for (index, edit) in edits.iter().enumerate() {
            let mut edited = plan.clone();
            edit(&mut edited);
            assert_ne!(edited.to_text(), plan.to_text(), "edit {index} changes the text");
            assert_ne!(edited.digest(), plan.digest(), "edit {index} changes the digest");
        }
        assert_eq!(plan.clone().digest(), plan.digest());
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
