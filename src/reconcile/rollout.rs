//! A cluster's plan (`plan.json`, see [`crate::tree::plan`]) with the objects it names read,
//! checked and made ready to apply: what reconcile rolls out.

use crate::object::ObjectId;
pub use crate::tree::plan::{Component, Plan};
use serde_json::Value;

/// A problem with the plan or its object files.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An object file named by the plan is missing.
    #[error("`{file}` (component `{component}`) is missing")]
    MissingFile {
        /// The component.
        component: String,
        /// The file, relative to the cluster directory.
        file: String,
    },
    /// An object file is not a YAML object.
    #[error("`{file}` is not a YAML object: {message}")]
    ParseObject {
        /// The file, relative to the cluster directory.
        file: String,
        /// The parser's complaint.
        message: String,
    },
    /// An object file does not hold the object the plan says.
    #[error("`{file}` holds `{found}`, but the plan says `{expected}`")]
    Mismatch {
        /// The file.
        file: String,
        /// What the plan says.
        expected: String,
        /// What the file holds.
        found: String,
    },
    /// A SOPS-encrypted Secret cannot be applied as it is, and no age identity was given.
    #[error(
        "`{object}` is SOPS-encrypted and cannot be applied as-is: pass `--age-identity KEY` to decrypt it, use the `sealed-secrets` backend, or let Flux decrypt it"
    )]
    SopsSecret {
        /// The Secret.
        object: String,
    },
    /// A SOPS-encrypted Secret did not decrypt with the given age identity.
    #[error("`{object}`: cannot decrypt the SOPS file")]
    Decrypt {
        /// The Secret.
        object: String,
        /// Why (never a value).
        #[source]
        source: crate::secrets::sops::Error,
    },
}

/// A plan with every object read and checked: what reconcile rolls out.
#[derive(Debug, Clone)]
pub struct Rollout {
    /// The plan.
    pub plan: Plan,
    /// The objects of each component, in plan order, `status` stripped.
    pub objects: Vec<Vec<Value>>,
}

impl Rollout {
    /// Reads every object of the plan through `file` (a path relative to the cluster directory
    /// to its bytes). SOPS-encrypted Secrets are decrypted with `age_identity` (the text of an
    /// `age-keygen` file); without one they are refused.
    ///
    /// # Errors
    ///
    /// Missing or unparsable files, files holding another object than the plan says, and
    /// SOPS-encrypted Secrets without an identity or that do not decrypt.
    pub fn load(plan: Plan, file: &dyn Fn(&str) -> Option<Vec<u8>>, age_identity: Option<&str>) -> Result<Self, Error> {
        let mut objects = Vec::with_capacity(plan.components.len());
        for component in &plan.components {
            let mut list = Vec::with_capacity(component.objects.len());
            for reference in &component.objects {
                let expected = &reference.id;
                let bytes = file(&reference.file)
                    .ok_or_else(|| Error::MissingFile { component: component.id.clone(), file: reference.file.clone() })?;
                let text = String::from_utf8_lossy(&bytes);
                // NB: the project's own YAML reader (YAML 1.2 scalars), as for every rendered file.
                let documents = crate::spec::yaml::parse(0, &text).map_err(|errors| Error::ParseObject {
                    file: reference.file.clone(),
                    message: errors.first().map_or_else(String::new, |e| e.message.clone()),
                })?;
                let mut object = match documents.as_slice() {
                    [document] => document.to_json(),
                    _ => {
                        return Err(Error::ParseObject {
                            file: reference.file.clone(),
                            message: format!("expected one document, found {}", documents.len()),
                        });
                    }
                };
                let found = ObjectId::of(&object);
                if &found != expected {
                    return Err(Error::Mismatch { file: reference.file.clone(), expected: expected.to_string(), found: found.to_string() });
                }
                if object.get("sops").is_some() {
                    let Some(identity) = age_identity else {
                        return Err(Error::SopsSecret { object: expected.to_string() });
                    };
                    object = crate::secrets::sops::decrypt(&object, identity)
                        .map_err(|source| Error::Decrypt { object: expected.to_string(), source })?;
                }
                strip(&mut object);
                default_protocols(&mut object);
                list.push(object);
            }
            objects.push(list);
        }
        Ok(Rollout { plan, objects })
    }
}

/// Adds `protocol: TCP` (the API default) to Service and container ports that omit it.
///
/// NB: `protocol` is part of the list key of those ports, and API servers before 1.22 refuse a
/// server-side apply that omits it ("associative list with keys has an element that omits key
/// field \"protocol\""); the default makes the object identical to what the server stores.
pub fn default_protocols(object: &mut Value) {
    fn ports(list: Option<&mut Value>) {
        for port in list.and_then(Value::as_array_mut).into_iter().flatten() {
            if let Some(port) = port.as_object_mut() {
                port.entry("protocol").or_insert_with(|| Value::from("TCP"));
            }
        }
    }
    fn pod(spec: Option<&mut Value>) {
        let Some(spec) = spec else { return };
        for field in ["containers", "initContainers"] {
            for container in spec.get_mut(field).and_then(Value::as_array_mut).into_iter().flatten() {
                ports(container.get_mut("ports"));
            }
        }
    }
    let kind = object.get("kind").and_then(Value::as_str).unwrap_or("").to_owned();
    match kind.as_str() {
        "Service" => ports(object.pointer_mut("/spec/ports")),
        "Pod" => pod(object.get_mut("spec")),
        "CronJob" => pod(object.pointer_mut("/spec/jobTemplate/spec/template/spec")),
        "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet" | "Job" => pod(object.pointer_mut("/spec/template/spec")),
        _ => {}
    }
}

/// The metadata fields the server sets.
pub(crate) const SERVER_METADATA: [&str; 6] = ["resourceVersion", "uid", "creationTimestamp", "managedFields", "generation", "selfLink"];

/// Removes what the server owns or a status writer owns: `status`, and server-set metadata.
pub fn strip(object: &mut Value) {
    if let Some(map) = object.as_object_mut() {
        map.remove("status");
        if let Some(metadata) = map.get_mut("metadata").and_then(Value::as_object_mut) {
            for field in SERVER_METADATA {
                metadata.remove(field);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLAN: &str = r#"{"cluster": "demo", "components": [
        {"id": "cluster/a", "path": "components/cluster/a", "dependsOn": [],
         "objects": [{"apiVersion": "v1", "kind": "ConfigMap", "namespace": "ns1", "name": "c", "file": "a/c.yaml"}]}]}"#;

    fn files(text: &'static str) -> impl Fn(&str) -> Option<Vec<u8>> {
        move |path| (path == "a/c.yaml").then(|| text.as_bytes().to_vec())
    }

    #[test]
    fn loads_and_strips_status() {
        let plan = Plan::parse(PLAN.as_bytes()).expect("plan");
        let rollout =
            Rollout::load(plan, &files("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: ns1}\nstatus: {x: 1}\n"), None)
                .expect("load");
        assert!(rollout.objects[0][0].get("status").is_none());
        assert_eq!(ObjectId::of(&rollout.objects[0][0]).to_string(), "ConfigMap/ns1/c");
    }

    #[test]
    fn refuses_mismatch_missing_and_sops() {
        let plan = Plan::parse(PLAN.as_bytes()).expect("plan");
        let error = Rollout::load(plan.clone(), &files("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: other, namespace: ns1}\n"), None)
            .expect_err("mismatch");
        assert_eq!(error.to_string(), "`a/c.yaml` holds `ConfigMap/ns1/other`, but the plan says `ConfigMap/ns1/c`");
        let error = Rollout::load(plan.clone(), &|_| None, None).expect_err("missing");
        assert_eq!(error.to_string(), "`a/c.yaml` (component `cluster/a`) is missing");
        let sops = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: ns1}\nsops: {mac: x}\n";
        assert!(matches!(Rollout::load(plan, &files(sops), None), Err(Error::SopsSecret { .. })));
    }

    #[test]
    fn ports_get_the_default_protocol() {
        let mut service = serde_json::json!({"kind": "Service", "spec": {"ports": [{"port": 80}, {"port": 53, "protocol": "UDP"}]}});
        default_protocols(&mut service);
        assert_eq!(service["spec"]["ports"], serde_json::json!([{"port": 80, "protocol": "TCP"}, {"port": 53, "protocol": "UDP"}]));
        let mut deployment = serde_json::json!({"kind": "Deployment", "spec": {"template": {"spec": {"containers": [{"name": "a", "ports": [{"containerPort": 8080}]}]}}}});
        default_protocols(&mut deployment);
        assert_eq!(deployment.pointer("/spec/template/spec/containers/0/ports/0/protocol"), Some(&serde_json::json!("TCP")));
    }
}
