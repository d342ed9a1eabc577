//! The scripts of the rendered Jobs, run for real: the grafana-sa Job's shell script against a
//! stand-in `curl` (`tests/tools/fake_curl.py`) that answers as Grafana, the Kubernetes API and
//! Istio's pilot-agent do. It must be idempotent (a re-run changes nothing), find a service
//! account that exists already (Grafana answers a duplicate with 400), store the token where
//! the workers read it, replace a token Grafana no longer accepts, and always stop the sidecar.

#![allow(clippy::unwrap_used)] // a test crate: a panic is the failure report

mod common;

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The grafana-sa Job of server `server` in the rendered demo: its script and environment.
fn grafana_job(out: &Path, namespace: &str, server: &str) -> (String, Vec<(String, String)>) {
    let dir = out.join(format!("clusters/demo/components/namespaces/{namespace}/servers/{server}/grafana-sa"));
    let file = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.file_name().unwrap().to_string_lossy().starts_with("job-"))
        .unwrap();
    let job: Value = serde_saphyr::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
    let container = &job["spec"]["template"]["spec"]["containers"][0];
    let script = container["command"][2].as_str().unwrap().to_owned();
    let env = container["env"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["name"].as_str().unwrap().to_owned(), e["value"].as_str().unwrap().to_owned()))
        .collect();
    (script, env)
}

struct Sandbox {
    dir: tempfile::TempDir,
    script: String,
    env: Vec<(String, String)>,
}

impl Sandbox {
    fn new(script: &str, env: Vec<(String, String)>, namespace: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let fake = common::root().join("tests/tools/fake_curl.py");
        std::fs::write(bin.join("curl"), format!("#!/bin/sh\nexec python3 {} \"$@\"\n", fake.display())).unwrap();
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(bin.join("curl"), std::fs::Permissions::from_mode(0o755)).unwrap();
        let sa = dir.path().join("sa");
        std::fs::create_dir_all(&sa).unwrap();
        std::fs::write(sa.join("token"), "kube-token").unwrap();
        std::fs::write(sa.join("ca.crt"), "fake CA").unwrap();
        std::fs::write(sa.join("namespace"), namespace).unwrap();
        let credentials = dir.path().join("credentials");
        std::fs::create_dir_all(&credentials).unwrap();
        std::fs::write(credentials.join("admin-user"), "admin").unwrap();
        std::fs::write(credentials.join("admin-password"), "s3cret").unwrap();
        // The script's fixed paths (the pod's mounts) point into the sandbox instead.
        let script = script
            .replace("/var/run/secrets/kubernetes.io/serviceaccount", &sa.display().to_string())
            .replace("/credentials/", &format!("{}/", credentials.display()));
        let sandbox = Sandbox { dir, script, env };
        sandbox.set_state(&json!({"admin": "admin:s3cret", "namespace": namespace, "accounts": [], "secrets": {}}));
        sandbox
    }

    fn state_path(&self) -> PathBuf {
        self.dir.path().join("state.json")
    }

    fn state(&self) -> Value {
        serde_json::from_str(&std::fs::read_to_string(self.state_path()).unwrap()).unwrap()
    }

    fn set_state(&self, state: &Value) {
        std::fs::write(self.state_path(), state.to_string()).unwrap();
    }

    /// Runs the script; returns its exit code and output.
    fn run(&self) -> (i32, String) {
        let path = format!("{}:{}", self.dir.path().join("bin").display(), std::env::var("PATH").unwrap_or_default());
        let output = Command::new("sh")
            .arg("-c")
            .arg(&self.script)
            .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .env("PATH", path)
            .env("FAKE_STATE", self.state_path())
            .output()
            .unwrap();
        (
            output.status.code().unwrap_or(-1),
            format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr)),
        )
    }
}

#[test]
fn the_grafana_service_account_job_is_idempotent_and_stores_its_token() {
    if !Command::new("python3").arg("--version").output().is_ok_and(|o| o.status.success()) {
        assert!(std::env::var("CI").as_deref() != Ok("true"), "CI=true but python3 is missing");
        eprintln!("skipping: the grafana-sa Job script test (needs python3)");
        return;
    }
    let out = tempfile::tempdir().unwrap();
    let output = common::fixture_command().args(["render", "fixtures/demo", "--no-memo", "--out"]).arg(out.path()).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", common::report(&output));
    let (script, env) = grafana_job(out.path(), "acme-corp", "robot1");
    let secret = env.iter().find(|(k, _)| k == "SECRET").unwrap().1.clone();
    assert_eq!(secret, "robot1-grafana-token");
    let sandbox = Sandbox::new(&script, env, "acme-corp");

    // A service account whose name starts with ours exists already: it is not ours.
    let mut state = sandbox.state();
    state["accounts"] = json!([{"id": 7, "name": "robot10", "role": "Viewer", "tokens": []}]);
    sandbox.set_state(&state);

    // First run: the service account and a token are made, the token is stored.
    let (code, log) = sandbox.run();
    assert_eq!(code, 0, "{log}");
    let state = sandbox.state();
    let accounts = state["accounts"].as_array().unwrap();
    assert_eq!(accounts.len(), 2, "{state}");
    let ours = accounts.iter().find(|a| a["name"] == "robot1").unwrap();
    assert_eq!(ours["role"], "Viewer");
    assert_eq!(ours["tokens"].as_array().unwrap().len(), 1);
    let token = ours["tokens"][0]["key"].as_str().unwrap().to_owned();
    assert_eq!(state["secrets"][&secret]["token"], token.as_str(), "{state}");
    assert_eq!(state["quit"], 1, "the sidecar is told to quit");
    assert!(accounts.iter().find(|a| a["name"] == "robot10").unwrap()["tokens"].as_array().unwrap().is_empty());

    // A re-run changes nothing.
    let (code, log) = sandbox.run();
    assert_eq!(code, 0, "{log}");
    let again = sandbox.state();
    assert_eq!(again["accounts"], state["accounts"]);
    assert_eq!(again["secrets"], state["secrets"]);
    assert_eq!(again["quit"], 2);

    // The Secret is lost: the existing service account is found (no duplicate), a new token
    // is stored.
    let mut lost = again.clone();
    lost["secrets"] = json!({});
    sandbox.set_state(&lost);
    let (code, log) = sandbox.run();
    assert_eq!(code, 0, "{log}");
    let state = sandbox.state();
    assert_eq!(state["accounts"].as_array().unwrap().len(), 2, "{state}");
    let ours = state["accounts"].as_array().unwrap().iter().find(|a| a["name"] == "robot1").unwrap().clone();
    assert_eq!(ours["tokens"].as_array().unwrap().len(), 2);
    assert_eq!(state["secrets"][&secret]["token"], ours["tokens"][1]["key"]);

    // Grafana no longer accepts the stored token: a new one replaces it.
    let mut revoked = state.clone();
    for account in revoked["accounts"].as_array_mut().unwrap() {
        account["tokens"] = json!([]);
    }
    sandbox.set_state(&revoked);
    let (code, log) = sandbox.run();
    assert_eq!(code, 0, "{log}");
    let state = sandbox.state();
    let ours = state["accounts"].as_array().unwrap().iter().find(|a| a["name"] == "robot1").unwrap().clone();
    assert_eq!(ours["tokens"].as_array().unwrap().len(), 1);
    assert_eq!(state["secrets"][&secret]["token"], ours["tokens"][0]["key"]);

    // Wrong admin credentials: the Job fails (and still stops the sidecar).
    let mut locked = state.clone();
    locked["admin"] = json!("admin:other");
    locked["secrets"] = json!({});
    sandbox.set_state(&locked);
    let (code, log) = sandbox.run();
    assert_ne!(code, 0, "{log}");
    assert_eq!(sandbox.state()["quit"], 5);
}

/// The workers read the token the Job stores, and only when the Job is rendered.
#[test]
fn workers_read_the_grafana_token_only_when_the_job_runs() {
    let out = tempfile::tempdir().unwrap();
    let output = common::fixture_command().args(["render", "fixtures/demo", "--no-memo", "--out"]).arg(out.path()).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", common::report(&output));
    let deployment = |namespace: &str, server: &str| -> Value {
        let path = out
            .path()
            .join(format!("clusters/demo/components/namespaces/{namespace}/servers/{server}/api-worker/deployment-{server}-api.yaml"));
        serde_saphyr::from_str(&std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))).unwrap()
    };
    let token_ref = |d: &Value| {
        d["spec"]["template"]["spec"]["containers"][0]["env"].as_array().unwrap().iter().find(|e| e["name"] == "GRAFANA_TOKEN").cloned()
    };
    let robot1 = token_ref(&deployment("acme-corp", "robot1")).expect("robot1 runs the Job");
    assert_eq!(robot1["valueFrom"]["secretKeyRef"], json!({"name": "robot1-grafana-token", "key": "token", "optional": true}));
    // robot2 switches the Job off (`jobs.grafanaServiceAccount: false`).
    assert!(token_ref(&deployment("acme-corp", "robot2")).is_none());
}
