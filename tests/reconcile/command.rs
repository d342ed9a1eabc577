//! `tfrs reconcile` as a command against the simulator: `--progress json`, exit codes,
//! `--verify-only`, kubeconfig contexts, timeouts, and SOPS-encrypted Secrets.

use super::sim::{Behaviour, Config, Sim};
use super::{common, options, prepare_demo, run, small, tfrs, write_dir};
use serde_json::{Value, json};
use tfrs_gitops::object::ObjectId;
use tfrs_gitops::reconcile::Options;
use tfrs_gitops::reconcile::rollout::{Plan, Rollout};

async fn binary(args: Vec<String>) -> std::process::Output {
    tokio::task::spawn_blocking(move || tfrs().args(&args).output().expect("run tfrs")).await.expect("join")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_progress_json_exit_codes_and_verify_only() {
    let sim = Sim::start(Config::default()).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let plan_dir = dir.path().join("small");
    sim.seed_identity("small");
    write_dir(&small(), &plan_dir);
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(&kubeconfig, sim.kubeconfig()).expect("kubeconfig");
    let base = |extra: &[&str]| {
        let mut args: Vec<String> =
            vec!["reconcile".into(), plan_dir.display().to_string(), "--kubeconfig".into(), kubeconfig.display().to_string()];
        args.extend(["--poll-interval", "50ms"].map(String::from));
        args.extend(extra.iter().map(|s| (*s).to_owned()));
        args
    };

    let output = binary(base(&["--progress", "json"])).await;
    assert_eq!(output.status.code(), Some(0), "{}", common::report(&output));
    let events: Vec<Value> =
        String::from_utf8_lossy(&output.stdout).lines().map(|l| serde_json::from_str(l).expect("a JSON event")).collect();
    assert_eq!(events.len(), 10, "running + ready for 5 components");
    for event in &events {
        assert_eq!(event["total"], 5);
        assert!(event["step"].as_u64().is_some_and(|s| (1..=5).contains(&s)));
        assert!(event["elapsed_ms"].is_u64());
        assert!(matches!(event["status"].as_str(), Some("running" | "ready")));
    }
    assert_eq!(events[0]["component"], "base");
    assert_eq!(events[0]["status"], "running");

    let writes = sim.writes().len();
    let output = binary(base(&["--verify-only"])).await;
    assert_eq!(output.status.code(), Some(0), "{}", common::report(&output));
    assert!(String::from_utf8_lossy(&output.stdout).starts_with("verified cluster `small`: 5 components ready in "));
    assert!(String::from_utf8_lossy(&output.stderr).contains("[5/5] api ... ready"));
    assert_eq!(sim.writes().len(), writes, "verify-only wrote");

    // `--context` picks a context of the kubeconfig the kubectl way (its current one is dead).
    let two = dir.path().join("two-contexts");
    std::fs::write(
        &two,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: dead\n  cluster:\n    server: http://127.0.0.1:9\n- name: sim\n  cluster:\n    server: {url}\nusers:\n- name: sim\n  user:\n    token: sim\ncontexts:\n- name: dead\n  context:\n    cluster: dead\n    user: sim\n- name: sim\n  context:\n    cluster: sim\n    user: sim\ncurrent-context: dead\n",
            url = sim.url
        ),
    )
    .expect("kubeconfig");
    let with_two = |extra: &[&str]| {
        let mut args = base(extra);
        let at = args.iter().position(|a| a == "--kubeconfig").expect("flag") + 1;
        args[at] = two.display().to_string();
        args
    };
    let output = binary(with_two(&["--context", "sim", "--verify-only"])).await;
    assert_eq!(output.status.code(), Some(0), "{}", common::report(&output));
    let output = binary(with_two(&["--context", "nope", "--verify-only"])).await;
    assert_eq!(output.status.code(), Some(2), "{}", common::report(&output));

    sim.behave("Deployment/app/db", Behaviour::Never);
    // A spec change makes the fake controller act again; `db` now never becomes ready.
    let mut changed = small();
    changed[1].2[0]["spec"]["replicas"] = json!(2);
    write_dir(&changed, &plan_dir);
    let output = binary(base(&["--timeout", "1s"])).await;
    assert_eq!(output.status.code(), Some(1), "{}", common::report(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("error: component `db` timed out after 1s: 1 object not ready\n  `Deployment/app/db`: "), "{stderr}");
    assert!(stderr.contains("skipped because `db` failed: `api`"), "{stderr}");

    // Spec inputs are rendered in memory; verify-only against a cluster without them writes
    // nothing and names what is missing. The cluster guard first: this context is `small`.
    let writes = sim.writes().len();
    let verify_demo = || {
        let kubeconfig = kubeconfig.clone();
        move || {
            tfrs()
                .current_dir(common::root())
                .args([
                    "reconcile",
                    "fixtures/demo",
                    "--master-key-file",
                    "fixtures/demo/keys/master.key",
                    "--verify-only",
                    "--timeout",
                    "0",
                ])
                .arg("--kubeconfig")
                .arg(&kubeconfig)
                .output()
                .expect("run tfrs")
        }
    };
    let output = tokio::task::spawn_blocking(verify_demo()).await.expect("join");
    assert_eq!(output.status.code(), Some(2), "{}", common::report(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("this context reaches cluster `small` (ConfigMap `kube-system/tfrs`), but the tree is for cluster `demo`"),
        "{stderr}"
    );
    sim.seed_identity("demo");
    let output = tokio::task::spawn_blocking(verify_demo()).await.expect("join");
    assert_eq!(output.status.code(), Some(1), "{}", common::report(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("error: component `cluster/cert-manager` timed out after 0ms: 2 objects not ready\n  `OCIRepository/flux-system/cert-manager`: not found"), "{stderr}");
    assert_eq!(sim.writes().len(), writes, "verify-only wrote");

    // No API server: exit 2.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = closed.local_addr().expect("address").port();
    drop(closed);
    std::fs::write(&kubeconfig, sim.kubeconfig().replace(&sim.url, &format!("http://127.0.0.1:{port}"))).expect("kubeconfig");
    let output = binary(base(&[])).await;
    assert_eq!(output.status.code(), Some(2), "{}", common::report(&output));
    assert!(String::from_utf8_lossy(&output.stderr).contains("error: cannot reach the API server"), "{}", common::report(&output));

    // Usage: a bad duration.
    let output = binary(base(&["--timeout", "5"])).await;
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("a unit is required"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sops_secrets_are_refused_or_decrypted_with_an_age_identity() {
    let dir = tempfile::tempdir().expect("tempdir");
    let specs = dir.path().join("demo");
    common::copy_dir(&common::root().join("fixtures/demo"), &specs);
    let cluster_spec = std::fs::read_to_string(specs.join("cluster.yaml")).expect("cluster.yaml");
    let sops = cluster_spec.replace(
        "backend: sealed-secrets\n    certFile: keys/sealed-secrets.pem",
        "backend: sops-age\n    ageRecipients: [age1763reswr756hamsur7pj5sq2slkhpr9zenkp94ua0sjallefrqqsgwe89c]",
    );
    assert_ne!(sops, cluster_spec, "the demo's sealing block moved");
    std::fs::write(specs.join("cluster.yaml"), sops).expect("write");
    let out = dir.path().join("out");
    let output = tfrs()
        .arg("render")
        .arg(&specs)
        .arg("--master-key-file")
        .arg(specs.join("keys/master.key"))
        .arg("--out")
        .arg(&out)
        .output()
        .expect("render");
    assert!(output.status.success(), "{}", common::report(&output));
    let cluster = out.join("clusters/demo");
    let plan = Plan::parse(&std::fs::read(cluster.join("plan.json")).expect("plan.json")).expect("plan");
    let read = |f: &str| std::fs::read(cluster.join(f)).ok();

    let refused = Rollout::load(plan.clone(), &read, None).expect_err("SOPS Secrets without an identity");
    assert!(refused.to_string().contains("is SOPS-encrypted and cannot be applied as-is: pass `--age-identity KEY`"), "{refused}");
    let output = tfrs().arg("reconcile").arg(&cluster).arg("--kubeconfig").arg(dir.path().join("none")).output().expect("run");
    assert_eq!(output.status.code(), Some(2), "{}", common::report(&output));
    assert!(String::from_utf8_lossy(&output.stderr).contains("is SOPS-encrypted"), "{}", common::report(&output));

    let identity = std::fs::read_to_string(common::root().join("fixtures/demo/keys/age.txt")).expect("identity");
    let rollout = Rollout::load(plan, &read, Some(&identity)).expect("decrypted");
    let secrets: Vec<&Value> = rollout.objects.iter().flatten().filter(|o| o["kind"] == "Secret").collect();
    assert!(!secrets.is_empty(), "the sops-age demo has Secrets");
    assert!(secrets.iter().all(|s| s.get("sops").is_none() && (s.get("data").is_some() || s.get("stringData").is_some())));
    let sim = Sim::start(Config::default()).await;
    prepare_demo(&sim, &rollout);
    let (outcome, _) = run(&sim, &rollout, &Options { concurrency: 16, ..options() }).await;
    assert!(outcome.is_ready(), "{:?}", outcome.failures());
    let applied = sim.object(&ObjectId::of(secrets[0]).to_string()).expect("the Secret was applied");
    assert!(applied.get("sops").is_none());
}

/// The cluster guard against the simulator: a record copied from another cluster (its kube-system
/// UID differs) is refused, `--adopt` re-records it and goes on, and a missing record is refused
/// until `--adopt` writes it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_guard_refuses_a_copied_or_missing_identity_until_adopted() {
    let sim = Sim::start(Config::default()).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let plan_dir = dir.path().join("small");
    write_dir(&small(), &plan_dir);
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(&kubeconfig, sim.kubeconfig()).expect("kubeconfig");
    let args = |extra: &[&str]| {
        let mut args =
            vec!["reconcile".to_owned(), plan_dir.display().to_string(), "--kubeconfig".into(), kubeconfig.display().to_string()];
        args.extend(["--poll-interval", "50ms"].iter().chain(extra).map(|s| (*s).to_owned()));
        args
    };
    let identity = || sim.object("ConfigMap/kube-system/tfrs").map(|o| o["data"].clone());

    let output = binary(args(&[])).await;
    assert_eq!(output.status.code(), Some(2), "{}", common::report(&output));
    assert!(String::from_utf8_lossy(&output.stderr).contains("pass `--adopt` to record it as `small`"), "{}", common::report(&output));
    assert!(sim.writes().is_empty(), "a refused context was written to");

    sim.seed_identity_with_uid("small", "uid-of-another-cluster");
    let output = binary(args(&["--verify-only"])).await;
    assert_eq!(output.status.code(), Some(2), "{}", common::report(&output));
    assert!(String::from_utf8_lossy(&output.stderr).contains("the record was copied from another cluster"), "{}", common::report(&output));

    let output = binary(args(&["--adopt"])).await;
    assert_eq!(output.status.code(), Some(0), "{}", common::report(&output));
    assert!(String::from_utf8_lossy(&output.stderr).contains("recorded this cluster as `small`"), "{}", common::report(&output));
    assert_eq!(identity(), Some(json!({"cluster": "small", "kubeSystemUID": "uid-seed-kube-system"})));
    let output = binary(args(&["--verify-only"])).await;
    assert_eq!(output.status.code(), Some(0), "{}", common::report(&output));
}
