//! `tfrs validate --render-env` agrees with `tfrs render` on every fixture (a green validate is a
//! green render), and one cause gives one error.

#![allow(clippy::unwrap_used)] // a test crate: a panic is the failure report

mod common;

use common::{fixture_command, report, root};
use std::process::Output;

fn run(args: &[&str], master_key: bool) -> Output {
    let mut command = fixture_command();
    if !master_key {
        command.env_remove("TFRS_MASTER_KEY");
    }
    command.args(args).output().unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn validate_with_the_render_environment_agrees_with_render_on_every_fixture() {
    let mut fixtures: Vec<_> = std::fs::read_dir(root().join("fixtures")).unwrap().map(|e| e.unwrap().path()).collect();
    fixtures.sort();
    let mut compared = 0;
    for fixture in fixtures.iter().filter(|p| p.is_dir()) {
        let input = fixture.to_str().unwrap();
        for master_key in [true, false] {
            let out = tempfile::tempdir().unwrap();
            // NB: no memo: fixtures' names must not land in the memos other tests inspect.
            let render = run(&["render", input, "--out", out.path().to_str().unwrap(), "--no-memo"], master_key);
            let validate = run(&["validate", "--render-env", input], master_key);
            assert_eq!(
                validate.status.code(),
                render.status.code(),
                "{input} (master key: {master_key}): validate --render-env and render disagree\nvalidate:\n{}\nrender:\n{}",
                report(&validate),
                report(&render)
            );
            compared += 1;
        }
    }
    assert!(compared >= 2 * 60, "only {compared} runs compared");
}

#[test]
fn a_broken_environment_is_reported_whole_and_each_cause_once() {
    let input = root().join("fixtures/env-broken-all");
    let plain = run(&["validate", input.to_str().unwrap()], true);
    assert_eq!(plain.status.code(), Some(0), "{}", stderr(&plain));
    let validate = run(&["validate", "--render-env", input.to_str().unwrap()], true);
    assert_eq!(validate.status.code(), Some(2));
    let report = stderr(&validate);
    for expected in ["secrets/never-written.txt", "keys/never-fetched.pem", "`TFRS_FIXTURE_NEVER_SET` is not set", "3 problems"] {
        assert!(report.contains(expected), "missing `{expected}`:\n{report}");
    }
    assert_eq!(report.matches("`TFRS_FIXTURE_NEVER_SET` is not set").count(), 1, "{report}");
    assert!(report.contains("= also at ") && report.contains("spec.rabbitmq.password"), "{report}");
    let out = tempfile::tempdir().unwrap();
    let render = run(&["render", input.to_str().unwrap(), "--out", out.path().join("o").to_str().unwrap()], true);
    // NB: render adds what it did not do; validate writes nothing either way.
    assert!(report.ends_with("problems with the render environment\n"), "{report}");
    let said = report.replace("render environment\n", "render environment; nothing was written\n");
    assert_eq!(stderr(&render), said, "render and validate --render-env say the same");
    assert!(!out.path().join("o").exists(), "nothing is written");
}

#[test]
fn no_master_key_is_one_error_pointing_at_files_the_user_wrote() {
    let demo = root().join("fixtures/demo");
    let render = run(&["validate", "--render-env", demo.to_str().unwrap()], false);
    let report = stderr(&render);
    assert_eq!(render.status.code(), Some(2), "{report}");
    assert_eq!(report.matches("need a master key").count(), 1, "{report}");
    assert!(report.contains("1 problem with the render environment"), "{report}");
    assert!(report.contains("spec.secretData.SESSION_SECRET") && report.contains("spec.grafana.adminPassword"), "{report}");
    // NB: what the built-in `dev` overlay sets is located at the `spec.overlays` entry naming it.
    assert!(!report.contains("<builtin>"), "{report}");
    assert!(report.contains("cluster.yaml:8:"), "{report}");
}

#[test]
fn a_yaml_syntax_error_hides_the_references_it_broke() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["cluster.yaml", "tenants.yaml", "servers.yaml"] {
        std::fs::copy(root().join("fixtures/demo").join(name), dir.path().join(name)).unwrap();
    }
    std::fs::create_dir(dir.path().join("overlays")).unwrap();
    std::fs::copy(root().join("fixtures/demo/overlays/team.yaml"), dir.path().join("overlays/team.yaml")).unwrap();
    let tenants = dir.path().join("tenants.yaml");
    let text = std::fs::read_to_string(&tenants).unwrap().replacen("    storage: 10Gi", "\tstorage: 10Gi", 1);
    std::fs::write(&tenants, text).unwrap();
    let validate = run(&["validate", dir.path().to_str().unwrap()], true);
    let report = stderr(&validate);
    assert_eq!(validate.status.code(), Some(1), "{report}");
    assert!(report.contains("tenants.yaml") && report.contains("invalid YAML"), "{report}");
    assert!(!report.contains("unknown TFRTenant"), "{report}");
    assert!(report.contains("error: 1 error in 1 file"), "{report}");
}
