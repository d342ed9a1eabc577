//! End-to-end tests of the `tfrs` binary: every `fixtures/err-*` scenario's whole report is a
//! snapshot, and so is every `fixtures/warn-*` scenario's (valid, with warnings); the demo
//! validates; outside tools accept `tfrs schema --crd`.

mod common;

use common::report;
use std::path::PathBuf;
use std::process::{Command, Output};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn tfrs(args: &[&str]) -> Output {
    common::tfrs_command().args(args).env_remove("TFRS_MASTER_KEY").output().expect("the tfrs binary runs")
}

#[test]
fn error_scenarios_match_their_snapshots() {
    let mut scenarios: Vec<String> = std::fs::read_dir(root().join("fixtures"))
        .expect("fixtures/ exists")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("err-"))
        .collect();
    scenarios.sort();
    assert!(scenarios.len() >= 25, "only {} error scenarios", scenarios.len());
    for scenario in scenarios {
        let output = tfrs(&["validate", &format!("fixtures/{scenario}")]);
        assert_eq!(output.status.code(), Some(1), "{scenario} must be invalid:\n{}", report(&output));
        let stderr = String::from_utf8_lossy(&output.stderr);
        let first = stderr.lines().next().unwrap_or_default();
        // The contract: `file:line:col: field.path: message`.
        let parts: Vec<&str> = first.splitn(5, ':').collect();
        assert!(parts.len() == 5 && parts[1].parse::<usize>().is_ok() && parts[2].parse::<usize>().is_ok(), "{scenario}: {first}");
        assert!(parts[0].starts_with(&format!("fixtures/{scenario}/")), "{scenario}: {first}");
        insta::assert_snapshot!(scenario.clone(), report(&output));
    }
}

#[test]
fn warning_scenarios_match_their_snapshots() {
    let mut scenarios: Vec<String> = std::fs::read_dir(root().join("fixtures"))
        .expect("fixtures/ exists")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("warn-"))
        .collect();
    scenarios.sort();
    assert!(scenarios.len() >= 2, "only {} warning scenarios", scenarios.len());
    for scenario in scenarios {
        let output = tfrs(&["validate", &format!("fixtures/{scenario}")]);
        assert_eq!(output.status.code(), Some(0), "{scenario} must be valid:\n{}", report(&output));
        let stderr = String::from_utf8_lossy(&output.stderr);
        // The contract: `file:line:col: warning: field.path: message`, one or more.
        let located: Vec<&str> = stderr.lines().filter(|l| l.starts_with(&format!("fixtures/{scenario}/"))).collect();
        assert!(!located.is_empty(), "{scenario} warns about nothing:\n{stderr}");
        for line in located {
            let parts: Vec<&str> = line.splitn(6, ':').collect();
            assert!(
                parts.len() == 6 && parts[1].parse::<usize>().is_ok() && parts[2].parse::<usize>().is_ok() && parts[3] == " warning",
                "{scenario}: {line}"
            );
            assert!(parts[4].trim_start().starts_with("spec."), "{scenario}: {line}");
        }
        insta::assert_snapshot!(scenario.clone(), report(&output));
    }
}

/// One ingress certificate names the base domain and every server's host: past Let's
/// Encrypt's 100 names it is never issued, and `tfrs validate` says so; at 100 it does not.
#[test]
fn letsencrypt_certificate_over_100_names_warns() {
    let run = |servers: usize| {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut spec = String::from(
            "apiVersion: tfrs.turingfocus.cn/v1alpha1\nkind: TFRCluster\nmetadata: {name: prod}\nspec:\n  ingress:\n    type: tke-clb\n    domain: tfrs.turingfocus.cn\n    tls: {issuer: letsencrypt, email: ops@turingfocus.cn}\n  sealing: {certFile: cert.pem}\n---\napiVersion: tfrs.turingfocus.cn/v1alpha1\nkind: TFRTenant\nmetadata: {name: acme}\nspec:\n  cluster: prod\n  sharedCache: {storageClass: cfs}\n",
        );
        for index in 0..servers {
            spec.push_str(&format!(
                "---\napiVersion: tfrs.turingfocus.cn/v1alpha1\nkind: TFRServer\nmetadata: {{name: bot{index}}}\nspec:\n  tenant: acme\n  image: {{repository: docker.cnb.cool/turingfocus/tfrobot, tag: v1.8.0}}\n"
            ));
        }
        std::fs::write(dir.path().join("spec.yaml"), spec).expect("write");
        let output = tfrs(&["validate", dir.path().to_str().expect("UTF-8 path")]);
        assert_eq!(output.status.code(), Some(0), "{}", report(&output));
        String::from_utf8_lossy(&output.stderr).into_owned()
    };
    // 99 servers and the base domain: 100 names.
    let stderr = run(99);
    assert!(!stderr.contains("spec.ingress.tls.issuer"), "{stderr}");
    let stderr = run(100);
    assert!(
        stderr.contains("spec.yaml:8:19: warning: spec.ingress.tls.issuer: the ingress certificate names 101 hosts (the base domain and every server's), but Let's Encrypt puts at most 100 in one certificate: it would never be issued"),
        "{stderr}"
    );
}

#[test]
fn demo_is_valid() {
    let output = tfrs(&["validate", "fixtures/demo"]);
    assert_eq!(output.status.code(), Some(0), "{}", report(&output));
    insta::assert_snapshot!(report(&output));
}

#[test]
fn explain_names_every_layer() {
    let output = tfrs(&["validate", "fixtures/demo", "--explain", "spec.prometheus.retention", "--explain", "spec.imageRegistry.username"]);
    assert_eq!(output.status.code(), Some(0), "{}", report(&output));
    insta::assert_snapshot!(report(&output));
}

#[test]
fn command_line_overlays_apply_after_spec_overlays() {
    let output = tfrs(&["validate", "fixtures/demo", "--overlay", "prod", "--explain", "spec.rabbitmq.replicas"]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("TFRTenant/alice spec.rabbitmq.replicas = 3"), "{stdout}");
    // acme sets it in its own spec, which wins over every overlay.
    assert!(stdout.contains("TFRTenant/acme spec.rabbitmq.replicas = 1"), "{stdout}");
}

#[test]
fn usage_and_io_errors_exit_2() {
    assert_eq!(tfrs(&["validate", "fixtures/does-not-exist"]).status.code(), Some(2));
    assert_eq!(tfrs(&["validate", "fixtures/demo", "--overlay", "nope"]).status.code(), Some(2));
    assert_eq!(tfrs(&["frobnicate"]).status.code(), Some(2));
    assert_eq!(tfrs(&["validate"]).status.code(), Some(2));
}

#[test]
fn json_schema_covers_the_three_kinds() {
    let output = tfrs(&["schema"]);
    assert_eq!(output.status.code(), Some(0));
    let schema: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    for kind in ["TFRCluster", "TFRTenant", "TFRServer"] {
        assert!(schema["$defs"][kind]["properties"]["spec"].is_object(), "{kind}");
    }
}

#[test]
fn crds_pass_kubernetes_validate() {
    let Some(tool) = common::outside_tool("kubernetes-validate") else {
        eprintln!("skipped: kubernetes-validate not installed (run .ci/run)");
        return;
    };
    let output = tfrs(&["schema", "--crd"]);
    assert_eq!(output.status.code(), Some(0));
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("crds.yaml");
    std::fs::write(&file, &output.stdout).expect("write");
    let check = Command::new(tool).args(["--strict", "--kubernetes-version", "1.33.0"]).arg(&file).output().expect("runs");
    let text = String::from_utf8_lossy(&check.stdout).into_owned() + &String::from_utf8_lossy(&check.stderr);
    assert!(check.status.success(), "{text}");
    assert_eq!(text.matches("passed").count(), 3, "{text}");
}

#[test]
fn demo_examples_match_the_exported_json_schema() {
    // The demo is the richest valid input: every document must satisfy the editor schema too.
    let Some(python) = common::outside_tool("python3") else { return };
    let has_jsonschema = Command::new(&python).args(["-c", "import jsonschema, yaml"]).status().is_ok_and(|s| s.success());
    if !has_jsonschema {
        assert!(std::env::var("CI").as_deref() != Ok("true"), "python jsonschema + pyyaml are required under CI=true");
        return;
    }
    let schema = tfrs(&["schema"]).stdout;
    let dir = tempfile::tempdir().expect("tempdir");
    let schema_file = dir.path().join("schema.json");
    std::fs::write(&schema_file, schema).expect("write");
    let script = r#"
import json, sys, glob, yaml, jsonschema
schema = json.load(open(sys.argv[1]))
validator = jsonschema.Draft202012Validator(schema)
count = 0
for path in sorted(glob.glob('fixtures/demo/*.yaml')):
    for doc in yaml.safe_load_all(open(path)):
        errors = list(validator.iter_errors(doc))
        assert not errors, (path, [e.message for e in errors])
        count += 1
print(count)
"#;
    let output = Command::new(&python).arg("-c").arg(script).arg(&schema_file).current_dir(root()).output().expect("runs");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), "8");
}

#[test]
fn reports_never_echo_secret_literals() {
    // Each of these scenarios holds the literal `hunter2` where a secret belongs.
    for scenario in ["err-secret-not-a-map", "err-secret-two-forms"] {
        let output = tfrs(&["validate", &format!("fixtures/{scenario}")]);
        assert_eq!(output.status.code(), Some(1));
        let text = report(&output);
        assert!(text.contains("spec.redis.password"), "{text}");
        assert!(!text.contains("hunter2"), "{scenario} leaks the secret:\n{text}");
    }
    // A literal credential in confzData: named by its key, never echoed.
    let output = tfrs(&["validate", "fixtures/err-confz-overrides-credential"]);
    let text = report(&output);
    assert!(text.contains("`[postgresql] password`") && !text.contains("dev-only-literal-pg-password"), "{text}");
    let output = tfrs(&["validate", "fixtures/demo", "--explain", "spec.imageRegistry.username.value"]);
    assert!(!report(&output).contains("cnb\""), "{}", report(&output));
}

#[test]
fn a_file_named_twice_is_read_once() {
    let output = tfrs(&["validate", "fixtures/demo", "fixtures/demo/tenants.yaml", "./fixtures/demo/servers.yaml"]);
    assert_eq!(output.status.code(), Some(0), "{}", report(&output));
}
