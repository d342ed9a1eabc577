//! Tests of loading: merge order, overlays, explain, hostile strings.

use super::*;
use crate::spec::explain::explain;

const CLUSTER: &str = "apiVersion: tfrs.turingfocus.cn/v1alpha1\nkind: TFRCluster\nmetadata: {name: lab}\nspec:\n  overlays: [prod, mine]\n  ingress: {domain: lab.example.com, tls: {email: ops@example.com}}\n  sealing: {certFile: keys/lab.pem}\n";
const TENANT: &str =
    "apiVersion: tfrs.turingfocus.cn/v1alpha1\nkind: TFRTenant\nmetadata: {name: acme}\nspec:\n  cluster: lab\n  rabbitmq: {replicas: 2}\n";

fn bundle(extra: &str) -> Bundle {
    let mut bundle = Bundle::with_builtins();
    bundle.add_spec("cluster.yaml", CLUSTER);
    bundle.add_spec("tenant.yaml", format!("{TENANT}{extra}"));
    bundle.add_overlay("mine", "overlays/mine.yaml", "kind: TFRTenant\nspec:\n  minio: {servers: 2}\n  postgresql: {storage: 5Gi}\n");
    bundle
}

fn loaded(extra: &str) -> Spec {
    let loaded = load(&bundle(extra));
    assert_eq!(loaded.error_count(), 0, "{:#?}", loaded.diagnostics);
    loaded.spec.expect("valid")
}

#[test]
fn merge_order_is_defaults_then_overlays_then_spec() {
    let spec = loaded("");
    let tenant = &spec.tenants[0].spec;
    assert_eq!(tenant.postgresql.instances, 3, "from overlay prod");
    assert_eq!(tenant.postgresql.storage, "5Gi", "overlay mine after prod");
    assert_eq!(tenant.minio.servers, 2, "overlay mine after prod");
    assert_eq!(tenant.minio.volumes_per_server, 2, "prod's sibling key survives the recursive merge");
    assert_eq!(tenant.rabbitmq.replicas, 2, "the spec wins");
    assert_eq!(tenant.redis.storage, "1Gi", "built-in default");
}

#[test]
fn command_line_overlays_come_after_spec_overlays() {
    let mut bundle = bundle("");
    bundle.extra_overlays.push("dev".into());
    let spec = load(&bundle).spec.expect("valid");
    assert_eq!(spec.tenants[0].spec.postgresql.instances, 1, "dev after prod");
    assert_eq!(spec.tenants[0].spec.rabbitmq.replicas, 2, "the spec still wins");
}

#[test]
fn user_overlay_replaces_builtin_of_same_name() {
    let mut bundle = bundle("");
    bundle.add_overlay("prod", "overlays/prod.yaml", "kind: TFRTenant\nspec:\n  postgresql: {instances: 5}\n");
    let spec = load(&bundle).spec.expect("valid");
    assert_eq!(spec.tenants[0].spec.postgresql.instances, 5);
    assert_eq!(spec.tenants[0].spec.minio.volumes_per_server, 1, "built-in prod no longer applies");
}

#[test]
fn an_invalid_document_still_has_its_reference_checked() {
    let text = "---\napiVersion: tfrs.turingfocus.cn/v1alpha1\nkind: TFRServer\nmetadata: {name: r1}\nspec:\n  tenant: acmee\n  image: {repository: x/y, tag: 1}\n  replicas: many\n";
    let found: Vec<String> = load(&bundle(text)).diagnostics.iter().map(|d| format!("{}: {}", d.path, d.message)).collect();
    assert!(found.iter().any(|m| m.starts_with("spec.replicas")), "the schema error: {found:?}");
    assert!(found.iter().any(|m| m.starts_with("spec.tenant") && m.contains("acmee")), "the reference: {found:?}");
}

#[test]
fn hostile_strings_stay_strings() {
    let hostile = "'a: \"b\" {{ x }}\\n--- kind: ClusterRole'";
    let text = format!(
        "---\napiVersion: tfrs.turingfocus.cn/v1alpha1\nkind: TFRServer\nmetadata: {{name: r1}}\nspec:\n  tenant: acme\n  image: {{repository: x/y, tag: 1.10}}\n  configData:\n    GREETING: {hostile}\n    PORT: 8080\n"
    );
    let spec = loaded(&text);
    let server = &spec.servers[0].spec;
    assert_eq!(server.image.tag, "1.10", "plain scalar kept as written");
    assert_eq!(server.config_data["PORT"], "8080");
    assert_eq!(server.config_data["GREETING"], "a: \"b\" {{ x }}\\n--- kind: ClusterRole");
}

#[test]
fn explain_lists_every_layer_and_redacts_literals() {
    let spec = loaded("  redis: {password: {value: hunter2}}\n");
    let storage = explain(&spec, "spec.postgresql.storage");
    let labels: Vec<&str> = storage[0].steps.iter().map(|s| s.label.as_str()).collect();
    assert_eq!(labels, ["built-in default", "overlay `prod`", "overlay `mine`"]);
    assert_eq!(storage[0].value, serde_json::json!("5Gi"));
    let password = explain(&spec, "spec.redis.password");
    assert_eq!(password[0].value, serde_json::json!({"value": "<redacted>"}));
    let literal = explain(&spec, "spec.redis.password.value");
    assert_eq!(literal[0].value, serde_json::json!("<redacted>"));
}

#[test]
fn every_problem_is_reported_not_only_the_first() {
    let loaded = load(&bundle("  postgresql: {instances: two}\n  redis: {storage: lots}\n  colour: blue\n"));
    assert_eq!(loaded.error_count(), 3, "{:#?}", loaded.diagnostics);
    let paths: Vec<&str> = loaded.diagnostics.iter().filter(|d| d.is_error()).map(|d| d.path.as_str()).collect();
    assert_eq!(paths, ["spec.postgresql.instances", "spec.redis.storage", "spec.colour"]);
    assert!(loaded.spec.is_none());
}

#[test]
fn a_secret_source_replaces_the_overlay_one_whole() {
    let mut bundle = bundle("  redis: {password: {generate: {length: 40}}}\n");
    bundle.add_overlay("mine", "overlays/mine.yaml", "kind: TFRTenant\nspec:\n  redis: {password: {fromEnv: REDIS_PW}}\n");
    let loaded = load(&bundle);
    assert_eq!(loaded.error_count(), 0, "{:#?}", loaded.diagnostics);
    let spec = loaded.spec.expect("valid");
    assert_eq!(spec.tenants[0].spec.redis.password.from_env, None);
    assert_eq!(spec.tenants[0].spec.redis.password.generate.as_ref().map(|g| g.length), Some(40));
}

#[test]
fn builtin_overlays_are_valid() {
    let loaded = load(&Bundle::with_builtins());
    assert!(loaded.diagnostics.is_empty(), "{:#?}", loaded.diagnostics);
}

#[test]
fn an_object_digest_is_made_once_and_a_copy_starts_without_it() {
    let spec = loaded("");
    let tenant = &spec.tenants[0];
    let made = std::cell::Cell::new(0);
    let make = |value: u8| {
        made.set(made.get() + 1);
        [value; 32]
    };
    assert_eq!(tenant.digest.get_or_make("tenant", || make(1)), [1; 32]);
    assert_eq!(tenant.digest.get_or_make("tenant", || make(2)), [1; 32], "kept, not made again");
    assert_eq!(tenant.digest.get_or_make("server", || make(3)), [3; 32], "another kind is made, not given the tenant's");
    assert_eq!(tenant.digest.get_or_make("tenant", || make(4)), [1; 32], "nor kept over it");
    // NB: a copy may be placed in another cluster before it is digested.
    let mut copy = tenant.clone();
    copy.cluster = "other".into();
    assert_eq!(copy.digest.get_or_make("tenant", || make(5)), [5; 32], "a copy makes its own");
    assert_eq!(made.get(), 3);
}
