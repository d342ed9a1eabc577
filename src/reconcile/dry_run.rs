//! What a dry run must not count as a failure: a refusal only because the plan has not created
//! a CustomResourceDefinition or a Namespace yet.

use super::apply::Cause;
use super::rollout::Rollout;
use crate::object::ObjectId;
use serde_json::Value;
use std::collections::BTreeSet;

/// What the whole plan creates, for dry runs (a CR whose CRD or a namespace the plan creates,
/// directly or through a HelmRelease's `install.createNamespace`, cannot be dry-run before they
/// exist).
pub(super) struct Context {
    planned_kinds: BTreeSet<(String, String)>,
    planned_namespaces: BTreeSet<String>,
}

impl Context {
    pub(super) fn new(rollout: &Rollout) -> Self {
        let mut planned_kinds = BTreeSet::new();
        let mut planned_namespaces = BTreeSet::new();
        for object in rollout.objects.iter().flatten() {
            let reference = ObjectId::of(object);
            match (reference.group(), reference.kind.as_str()) {
                ("apiextensions.k8s.io", "CustomResourceDefinition") => {
                    let group = object.pointer("/spec/group").and_then(Value::as_str).unwrap_or("");
                    let kind = object.pointer("/spec/names/kind").and_then(Value::as_str).unwrap_or("");
                    planned_kinds.insert((group.to_owned(), kind.to_owned()));
                }
                ("", "Namespace") => {
                    planned_namespaces.insert(reference.name);
                }
                // NB: a Flux HelmRelease with `install.createNamespace` creates its target
                // namespace when it installs (cert-manager, istio-system in the demo).
                ("helm.toolkit.fluxcd.io", "HelmRelease")
                    if object.pointer("/spec/install/createNamespace").and_then(Value::as_bool) == Some(true) =>
                {
                    if let Some(namespace) = object.pointer("/spec/targetNamespace").and_then(Value::as_str) {
                        planned_namespaces.insert(namespace.to_owned());
                    }
                }
                _ => {}
            }
        }
        Context { planned_kinds, planned_namespaces }
    }

    /// Whether a dry-run refusal is only because the plan has not created something yet.
    pub(super) fn awaits_plan(&self, reference: &ObjectId, cause: &Cause) -> bool {
        match cause {
            Cause::NotServed { .. } => self.planned_kinds.contains(&(reference.group().to_owned(), reference.kind.clone())),
            Cause::Status { code: 404, .. } => reference.namespace().is_some_and(|n| self.planned_namespaces.contains(n)),
            _ => false,
        }
    }
}
