//! The CRD schema check of `tests/crd/` (used by `tests/render.rs` on every rendered custom
//! resource): its reading of structural schemas on small inline CRDs, and on the pinned upstream
//! CRDs a misspelt field in a tiny fixture object is reported.

#![allow(clippy::unwrap_used)] // a test crate: a panic is the failure report

mod crd;

use crd::Crds;
use serde_json::{Value as Json, json};

/// A CRD of group `example.com`, kind `Widget`, serving `v1` (not `v1beta1`), with `spec`'s
/// schema as given.
fn widget(spec: &Json) -> Crds {
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "names": {"kind": "Widget", "plural": "widgets"},
            "scope": "Namespaced",
            "versions": [
                {"name": "v1beta1", "served": false, "storage": false, "schema": {"openAPIV3Schema": {"type": "object"}}},
                {"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "apiVersion": {"type": "string"},
                        "kind": {"type": "string"},
                        "metadata": {"type": "object"},
                        "spec": spec,
                    },
                    "required": ["spec"],
                }}},
            ],
        },
    });
    let mut crds = Crds::default();
    crds.add("widget.yaml", &serde_json::to_string(&crd).unwrap()).unwrap();
    crds
}

fn problems(crds: &Crds, spec: &Json) -> Vec<String> {
    crds.validate(&json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "n"}, "spec": spec}))
}

#[test]
fn unknown_fields_are_rejected_unless_the_schema_keeps_them() {
    let crds = widget(&json!({
        "type": "object",
        "properties": {
            "size": {"type": "integer"},
            "values": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "opaque": {"type": "object"},
        },
    }));
    assert_eq!(problems(&crds, &json!({"size": 1, "values": {"any": {"thing": [1]}}, "labels": {"a": "b"}})), Vec::<String>::new());
    assert_eq!(problems(&crds, &json!({"size": 1, "colour": "red"})), ["spec.colour: unknown field"]);
    assert_eq!(problems(&crds, &json!({"labels": {"a": 1}})), ["spec.labels.a: expected string, found a number"]);
    // An object schema with neither properties nor additionalProperties keeps nothing.
    assert_eq!(problems(&crds, &json!({"opaque": {"x": 1}})), ["spec.opaque.x: unknown field"]);
    // The root and ObjectMeta too.
    let object = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "n", "lables": {}}, "spec": {}, "extra": 1});
    assert_eq!(crds.validate(&object), ["metadata.lables: unknown field", "extra: unknown field"]);
}

#[test]
fn int_or_string_nullable_and_embedded_resources_read_as_the_apiserver_does() {
    let crds = widget(&json!({
        "type": "object",
        "properties": {
            "port": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]},
            "maybe": {"type": "string", "nullable": true},
            "never": {"type": "string"},
            "template": {
                "type": "object",
                "x-kubernetes-embedded-resource": true,
                "properties": {"spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
            },
        },
    }));
    for port in [json!(8080), json!("http")] {
        assert_eq!(problems(&crds, &json!({"port": port})), Vec::<String>::new(), "{port}");
    }
    assert_eq!(problems(&crds, &json!({"port": true})), ["spec.port: expected an integer or a string, found a boolean"]);
    assert_eq!(problems(&crds, &json!({"maybe": null})), Vec::<String>::new());
    assert_eq!(problems(&crds, &json!({"never": null})), ["spec.never: null, but the field is not nullable (the apiserver drops it)"]);
    let template = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"a": "b"}}, "spec": {"x": 1}});
    assert_eq!(problems(&crds, &json!({"template": template})), Vec::<String>::new());
    let template = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"nme": "p"}, "status": {}});
    assert_eq!(
        problems(&crds, &json!({"template": template})),
        ["spec.template.metadata.nme: unknown field", "spec.template.status: unknown field"]
    );
}

#[test]
fn values_are_checked_and_defaults_fill_required_fields() {
    let crds = widget(&json!({
        "type": "object",
        "required": ["mode", "replicas"],
        "properties": {
            "mode": {"type": "string", "enum": ["a", "b"]},
            "replicas": {"type": "integer", "minimum": 1, "default": 1},
            "name": {"type": "string", "pattern": "^[a-z]+$", "maxLength": 5},
            "ports": {
                "type": "array",
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["port"],
                "items": {"type": "object", "properties": {"port": {"type": "integer"}}},
            },
            "source": {
                "type": "object",
                "properties": {"git": {"type": "string"}, "oci": {"type": "string"}},
                "oneOf": [{"required": ["git"]}, {"required": ["oci"]}],
            },
        },
    }));
    assert_eq!(problems(&crds, &json!({"mode": "a", "source": {"git": "x"}})), Vec::<String>::new());
    assert_eq!(
        problems(&crds, &json!({"mode": "c", "replicas": 0, "name": "Abcdef", "ports": [{"port": 1}, {"port": 1}], "source": {}})),
        [
            "spec.mode: \"c\" is not one of \"a\", \"b\"",
            "spec.replicas: 0 is below the minimum 1",
            "spec.name: 6 characters, more than 5",
            "spec.name: \"Abcdef\" does not match `^[a-z]+$`",
            "spec.ports[1]: a duplicate key (port) in a map list",
            "spec.source: matches 0 branches of oneOf, not exactly one",
        ]
    );
    assert_eq!(problems(&crds, &json!({"replicas": 2})), ["spec.mode: required"]);
    assert_eq!(problems(&crds, &json!({"mode": "a", "replicas": "2"})), ["spec.replicas: expected integer, found a string"]);
}

#[test]
fn a_kind_without_a_crd_or_an_unserved_version_is_reported() {
    let crds = widget(&json!({"type": "object"}));
    let object = |api_version: &str, kind: &str| json!({"apiVersion": api_version, "kind": kind, "metadata": {"name": "w", "namespace": "n"}, "spec": {}});
    assert_eq!(crds.validate(&object("example.com/v1", "Gadget")), ["no pinned CRD defines kind `Gadget` in group `example.com`"]);
    assert_eq!(
        crds.validate(&object("example.com/v1beta1", "Widget")),
        ["`example.com/v1beta1` is not served by `widget.yaml` (it serves v1)"]
    );
    assert_eq!(crds.validate(&object("example.com/v2", "Widget")), ["`example.com/v2` is not served by `widget.yaml` (it serves v1)"]);
    let cluster_wide = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {}});
    assert_eq!(crds.validate(&cluster_wide), ["metadata.namespace: missing, but `Widget` is namespaced"]);
}

#[test]
fn a_misspelt_field_of_a_custom_object_is_reported_against_the_pinned_crds() {
    let Some(upstream) = crd::upstream("the pinned-CRD check of tests/crd/unknown-field.yaml") else { return };
    let crds = Crds::load(&upstream).unwrap();
    assert!(crds.len() > 50, "only {} CRDs read", crds.len());
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/crd/unknown-field.yaml")).unwrap();
    let objects: Vec<Json> = tfrs_gitops::spec::yaml::parse(0, &text).unwrap().iter().map(|d| d.to_json()).collect();
    assert_eq!(objects.len(), 2);
    assert_eq!(crds.validate(&objects[0]), Vec::<String>::new(), "the valid Certificate passes");
    assert_eq!(crds.validate(&objects[1]), ["spec.secretNmae: unknown field", "spec.secretName: required"]);
}
