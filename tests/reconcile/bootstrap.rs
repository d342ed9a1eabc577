//! `tfrs bootstrap` against a real kube-apiserver: refused on a cluster without Flux (nothing
//! written), then the demo's five phases with the status helper of `real.rs` acting as the
//! controllers, my own decryption of the live SealedSecret with the key bootstrap brought in,
//! an idempotent re-run, and a refusal once the identity names another cluster.

use super::real::{api_for, controllers};
use super::{apiserver, common};
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use serde_json::{Value, json};
use std::path::Path;
use std::process::{Command, Output};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use tfrs_gitops::object::ObjectId;
use tfrs_gitops::reconcile::rollout::Rollout;

fn objects_of(rollout: &Rollout, ids: &[&str]) -> Vec<ObjectId> {
    rollout
        .plan
        .components
        .iter()
        .zip(&rollout.objects)
        .filter(|(c, _)| ids.contains(&c.id.as_str()))
        .flat_map(|(_, objects)| objects.iter().map(ObjectId::of))
        .collect()
}

async fn apply(client: &kube::Client, object: Value) {
    let reference = ObjectId::of(&object);
    let api = api_for(client, &reference).await.expect("an API");
    api.patch(&reference.name, &PatchParams::apply("e2e-setup"), &Patch::Apply(&object)).await.expect("setup apply");
}

/// Bootstraps the demo against a fresh apiserver.
pub fn demo(apiserver_binary: &Path, etcd: &Path, upstream: &Path, tfrs: &Path) {
    let crds = apiserver::pinned_crds(upstream);
    let dir = tempfile::tempdir().expect("tempdir");
    let rollout = super::demo_rollout(&dir.path().join("out"));
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    runtime.block_on(async {
        let server = apiserver::Server::start(apiserver_binary, etcd).await;
        let client = server.client().await;
        let kubeconfig = server.kubeconfig.clone();
        let run = |extra: &'static [&'static str]| {
            let (tfrs, kubeconfig) = (tfrs.to_path_buf(), kubeconfig.clone());
            tokio::task::spawn_blocking(move || -> Output {
                Command::new(tfrs)
                    .current_dir(common::root())
                    .args(["bootstrap", "fixtures/demo", "--master-key-file", "fixtures/demo/keys/master.key"])
                    .args(["--sealing-key", "fixtures/demo/keys/sealed-secrets.key", "--git-secret", "gitops-ssh"])
                    .arg("--kubeconfig")
                    .arg(&kubeconfig)
                    .args(["--poll-interval", "300ms", "--timeout", "2m"])
                    .args(extra)
                    .output()
                    .expect("run tfrs")
            })
        };
        let identity = ObjectId::new("v1", "ConfigMap", Some("kube-system"), "tfrs");
        let configmaps = api_for(&client, &identity).await.expect("configmaps");

        // No Flux and no `nfs-client` class: refused with both named, nothing written.
        let output = run(&[]).await.expect("join");
        assert_eq!(output.status.code(), Some(2), "{}", common::report(&output));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("Flux is not installed: CustomResourceDefinition `gitrepositories.source.toolkit.fluxcd.io`"), "{stderr}");
        assert!(stderr.contains("tenant `acme`: StorageClass `nfs-client` (`spec.sharedCache.storageClass`) does not exist"), "{stderr}");
        assert!(configmaps.get_opt("tfrs").await.expect("get").is_none(), "a refused bootstrap recorded the identity");

        // What `flux install` and an NFS provisioner leave behind.
        apiserver::register_crds(&client, &crds).await;
        apply(&client, json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "flux-system"}})).await;
        apply(&client, json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "nfs-client"}, "provisioner": "k8s-sigs.io/nfs-subdir-external-provisioner"})).await;

        let mut references = objects_of(&rollout, &["cluster/sealed-secrets", "cluster/image-registry"]);
        references.push(ObjectId::new("kustomize.toolkit.fluxcd.io/v1", "Kustomization", Some("flux-system"), "tfrs-demo"));
        let stop = Arc::new(AtomicBool::new(false));
        let helper = tokio::spawn(controllers(client.clone(), references, stop.clone()));
        let output = run(&["--progress", "json"]).await.expect("join");
        assert_eq!(output.status.code(), Some(0), "{}", common::report(&output));
        let events: Vec<Value> =
            String::from_utf8_lossy(&output.stdout).lines().map(|l| serde_json::from_str(l).expect("a JSON event")).collect();
        let done: Vec<&str> = events.iter().filter(|e| e["event"] == "phase" && e["status"] == "done").filter_map(|e| e["step"].as_str()).collect();
        assert_eq!(done, ["检查集群连通性", "部署 Operator", "创建租户镜像凭证", "创建 TFRCluster CR", "验证 TFRCluster"], "{events:?}");
        let created: Vec<&str> =
            events.iter().filter(|e| e["event"] == "object" && e["change"] == "created").filter_map(|e| e["object"].as_str()).collect();
        for expected in [
            "HelmRelease/flux-system/sealed-secrets-controller",
            "SealedSecret/tfr-image-credentials/cnb-registry-secret",
            "ConfigMap/kube-system/tfrs",
            "GitRepository/flux-system/flux-system",
            "Kustomization/flux-system/tfrs-demo",
        ] {
            assert!(created.contains(&expected), "`{expected}` not created: {created:?}");
        }
        let key = created.iter().find(|o| o.starts_with("Secret/kube-system/sealed-secrets-key-tfrs-")).expect("the sealing key Secret");
        assert!(!String::from_utf8_lossy(&output.stdout).contains("PRIVATE KEY"), "the key leaked into the output");

        // My own decryption: the live SealedSecret opens with the key material bootstrap brought in.
        let secrets = api_for(&client, &ObjectId::new("v1", "Secret", Some("kube-system"), "x")).await.expect("secrets");
        let secret = serde_json::to_value(secrets.get(key.rsplit('/').next().expect("name")).await.expect("key Secret")).expect("json");
        assert_eq!(secret["type"], "kubernetes.io/tls");
        assert_eq!(secret["metadata"]["labels"]["sealedsecrets.bitnami.com/sealed-secrets-key"], "active");
        let pem = base64_decode(secret["data"]["tls.key"].as_str().expect("tls.key"));
        let private_key = tfrs_gitops::secrets::sealed::PrivateKey::from_pem(&String::from_utf8_lossy(&pem)).expect("a private key");
        let reference = ObjectId::new("bitnami.com/v1alpha1", "SealedSecret", Some("tfr-image-credentials"), "cnb-registry-secret");
        let sealed = api_for(&client, &reference).await.expect("sealedsecrets").get("cnb-registry-secret").await.expect("SealedSecret");
        let opened = tfrs_gitops::secrets::sealed::unseal(&private_key, &serde_json::to_value(sealed).expect("json")).expect("unseal");
        let password = std::fs::read_to_string(common::root().join("fixtures/demo/secrets/registry-password.txt")).expect("password");
        let config = String::from_utf8_lossy(&opened.data[".dockerconfigjson"]).into_owned();
        assert!(config.contains(&base64_encode(format!("cnb:{}", password.trim_end()).as_bytes())), "the pull Secret holds the registry credentials");

        // A second run changes nothing, and says so.
        let output = run(&[]).await.expect("join");
        assert_eq!(output.status.code(), Some(0), "{}", common::report(&output));
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(stdout.starts_with("cluster `demo` is bootstrapped already: nothing changed ("), "{}", common::report(&output));
        stop.store(true, Ordering::Relaxed);
        helper.await.expect("helper");

        cert_fetch(&client, tfrs, &kubeconfig, dir.path()).await;

        // The identity now names another cluster: refused before any write, both named.
        let mut record = serde_json::to_value(configmaps.get("tfrs").await.expect("identity")).expect("json");
        record["data"]["cluster"] = json!("prod");
        let _ = configmaps.patch("tfrs", &PatchParams::default(), &Patch::Merge(&json!({"data": record["data"]}))).await.expect("edit");
        let output = run(&[]).await.expect("join");
        assert_eq!(output.status.code(), Some(2), "{}", common::report(&output));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("this context reaches cluster `prod`"), "{stderr}");
        assert!(stderr.contains("the tree is for cluster `demo`"), "{stderr}");
        let _: Api<DynamicObject> = configmaps;
    });
}

fn base64_decode(text: &str) -> Vec<u8> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.decode(text).expect("base64")
}

fn base64_encode(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// `tfrs cert fetch` through the API server's service proxy: a Service like the chart's (one
/// port named `http`) whose endpoint is a small HTTP server in this test, on this machine's
/// non-loopback address (the API server refuses to proxy to loopback).
async fn cert_fetch(client: &kube::Client, tfrs: &Path, kubeconfig: &Path, dir: &Path) {
    let Some(address) = std::net::UdpSocket::bind("0.0.0.0:0")
        .and_then(|socket| socket.connect("192.0.2.254:9").map(|()| socket))
        .and_then(|socket| socket.local_addr())
        .ok()
        .map(|a| a.ip())
        .filter(|ip| !ip.is_loopback() && ip.is_ipv4())
    else {
        apiserver::skip("`tfrs cert fetch`: this machine has no non-loopback IPv4 address for an endpoint");
        return;
    };
    let pem = std::fs::read(common::root().join("fixtures/demo/keys/sealed-secrets.pem")).expect("certificate");
    let listener = std::net::TcpListener::bind((address, 0)).expect("listen");
    let port = listener.local_addr().expect("address").port();
    let served = pem.clone();
    std::thread::spawn(move || {
        use std::io::{Read as _, Write as _};
        for stream in listener.incoming().take(1) {
            let mut stream = stream.expect("accept");
            let mut request = [0u8; 4096];
            let read = stream.read(&mut request).expect("read");
            let head = String::from_utf8_lossy(&request[..read]).into_owned();
            let body: &[u8] = if head.starts_with("GET /v1/cert.pem ") { &served } else { b"not found" };
            let status = if head.starts_with("GET /v1/cert.pem ") { "200 OK" } else { "404 Not Found" };
            let _ = write!(
                stream,
                "HTTP/1.1 {status}\r\nContent-Type: application/x-pem-file\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(body);
        }
    });
    apply(
        client,
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "sealed-secrets-controller", "namespace": "kube-system"},
        "spec": {"ports": [{"name": "http", "port": 8080, "targetPort": port}]}}),
    )
    .await;
    // NB: the API server proxies only to EndpointSlice endpoints that are a Pod's IP.
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "sealed-secrets-controller-0", "namespace": "kube-system"},
        "spec": {"containers": [{"name": "controller", "image": "docker.io/bitnami/sealed-secrets-controller:0.38.4"}]}});
    apply(client, pod.clone()).await;
    let pods = api_for(client, &ObjectId::of(&pod)).await.expect("pods");
    let ip = address.to_string();
    let status = json!({"status": {"podIP": ip, "podIPs": [{"ip": ip}]}});
    pods.patch_status("sealed-secrets-controller-0", &PatchParams::default(), &Patch::Merge(&status)).await.expect("pod status");
    apply(client, json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": "sealed-secrets-controller-x", "namespace": "kube-system", "labels": {"kubernetes.io/service-name": "sealed-secrets-controller"}},
        "addressType": "IPv4",
        "endpoints": [{"addresses": [ip], "conditions": {"ready": true}, "targetRef": {"kind": "Pod", "namespace": "kube-system", "name": "sealed-secrets-controller-0"}}],
        "ports": [{"name": "http", "port": port, "protocol": "TCP"}]}))
    .await;
    // NB: the API server reads EndpointSlices from its informer: give it a moment.
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    let out = dir.join("fetched.pem");
    let (tfrs, kubeconfig, target) = (tfrs.to_path_buf(), kubeconfig.to_path_buf(), out.clone());
    let output = tokio::task::spawn_blocking(move || {
        Command::new(tfrs)
            .current_dir(common::root())
            .args(["cert", "fetch", "fixtures/demo", "--kubeconfig"])
            .arg(&kubeconfig)
            .arg("--out")
            .arg(&target)
            .output()
            .expect("run tfrs")
    })
    .await
    .expect("join");
    assert_eq!(output.status.code(), Some(0), "{}", common::report(&output));
    assert_eq!(std::fs::read(&out).expect("the fetched certificate"), pem, "the fetched certificate is the served one");
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("wrote the certificate of cluster `demo` (SHA-256 "),
        "{}",
        common::report(&output)
    );
}

/// Renders `fixture` (with `env`) into `out` and loads the rollout of its one cluster.
fn fixture_rollout(fixture: &str, out: &Path, env: &[(&str, &str)]) -> Rollout {
    let output = Command::new(env!("CARGO_BIN_EXE_tfrs"))
        .current_dir(common::root())
        .args(["render", fixture, "--master-key-file", "fixtures/demo/keys/master.key", "--out"])
        .arg(out)
        .envs(env.iter().copied())
        .output()
        .expect("render");
    assert!(output.status.success(), "{}", common::report(&output));
    let plans: Vec<_> = std::fs::read_dir(out.join("clusters")).expect("clusters").map(|e| e.expect("entry").path()).collect();
    let [cluster] = plans.as_slice() else { panic!("one cluster in {fixture}") };
    let plan = tfrs_gitops::reconcile::rollout::Plan::parse(&std::fs::read(cluster.join("plan.json")).expect("plan.json")).expect("plan");
    Rollout::load(
        plan,
        &|f| std::fs::read(cluster.join(f)).ok(),
        Some(&std::fs::read_to_string(common::root().join("fixtures/demo/keys/age.txt")).expect("age")),
    )
    .expect("rollout")
}

fn bootstrap_command(tfrs: &Path, kubeconfig: &Path, args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut command = Command::new(tfrs);
    command.current_dir(common::root()).arg("bootstrap").args(args).args(["--master-key-file", "fixtures/demo/keys/master.key"]);
    command.arg("--kubeconfig").arg(kubeconfig).args(["--poll-interval", "300ms", "--timeout", "2m"]).envs(env.iter().copied());
    command
}

async fn output(mut command: Command) -> Output {
    tokio::task::spawn_blocking(move || command.output().expect("run tfrs")).await.expect("join")
}

/// The other engine and the other backend: a Flux laptop with SOPS and age on Docker Desktop
/// (an existing `flux-system` GitRepository is kept), then, on the same API server with the
/// identity removed, an Argo CD cluster on TKE (refused until a `qcloud://` node exists).
pub fn other_engines(apiserver_binary: &Path, etcd: &Path, upstream: &Path, tfrs: &Path) {
    let crds = apiserver::pinned_crds(upstream);
    let dir = tempfile::tempdir().expect("tempdir");
    let env = [("TFRS_TEST_REGISTRY_PASSWORD", "registry-password-for-tests")];
    let laptop = fixture_rollout("fixtures/render-sops-docker-desktop", &dir.path().join("laptop"), &[]);
    let prod = fixture_rollout("fixtures/render-argocd-tke", &dir.path().join("prod"), &env);
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    runtime.block_on(async {
        let server = apiserver::Server::start(apiserver_binary, etcd).await;
        let client = server.client().await;
        let kubeconfig = server.kubeconfig.clone();
        apiserver::register_crds(&client, &crds).await;
        for namespace in ["flux-system", "argocd"] {
            apply(&client, json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})).await;
        }
        apply(&client, json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "docker-desktop"}})).await;
        apply(&client, json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "hostpath", "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}}, "provisioner": "docker.io/hostpath"})).await;
        // What `flux bootstrap` made: kept as it is.
        let source = json!({"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository", "metadata": {"name": "flux-system", "namespace": "flux-system"},
            "spec": {"interval": "1m", "url": "ssh://git@git.example.com/laptop.git", "ref": {"branch": "main"}}});
        apply(&client, source).await;

        let mut references = objects_of(&laptop, &["cluster/sealed-secrets", "cluster/image-registry"]);
        references.extend(objects_of(&prod, &["cluster/sealed-secrets", "cluster/image-registry"]));
        references.push(ObjectId::new("kustomize.toolkit.fluxcd.io/v1", "Kustomization", Some("flux-system"), "tfrs-laptop"));
        references.push(ObjectId::new("argoproj.io/v1alpha1", "Application", Some("argocd"), "tfrs-prod-sh"));
        let stop = Arc::new(AtomicBool::new(false));
        let helper = tokio::spawn(controllers(client.clone(), references, stop.clone()));

        let laptop_args = ["fixtures/render-sops-docker-desktop", "--age-identity", "fixtures/demo/keys/age.txt"];
        let done = output(bootstrap_command(tfrs, &kubeconfig, &laptop_args, &[])).await;
        assert_eq!(done.status.code(), Some(0), "{}", common::report(&done));
        let stderr = String::from_utf8_lossy(&done.stderr);
        assert!(stderr.contains("created Secret/flux-system/sops-age"), "{stderr}");
        assert!(!stderr.contains("GitRepository/"), "the existing GitRepository was touched: {stderr}");
        let secrets = api_for(&client, &ObjectId::new("v1", "Secret", Some("flux-system"), "sops-age")).await.expect("secrets");
        let stored = serde_json::to_value(secrets.get("sops-age").await.expect("sops-age")).expect("json");
        let identity = std::fs::read(common::root().join("fixtures/demo/keys/age.txt")).expect("age");
        assert_eq!(base64_decode(stored["data"]["age.agekey"].as_str().expect("age.agekey")), identity);
        let again = output(bootstrap_command(tfrs, &kubeconfig, &laptop_args, &[])).await;
        assert!(String::from_utf8_lossy(&again.stdout).starts_with("cluster `laptop` is bootstrapped already: nothing changed"), "{}", common::report(&again));

        // `diff --live` of a SOPS tree decrypts with the identity: the pull Secret bootstrap
        // applied is no drift; the components nobody applied yet are `added`.
        let mut diff = Command::new(tfrs);
        diff.current_dir(common::root()).args(["diff", "fixtures/render-sops-docker-desktop", "--live", "--format", "json"]);
        diff.args(["--age-identity", "fixtures/demo/keys/age.txt", "--master-key-file", "fixtures/demo/keys/master.key", "--kubeconfig"]).arg(&kubeconfig);
        let drift = output(diff).await;
        assert_eq!(drift.status.code(), Some(1), "{}", common::report(&drift));
        let report: Value = serde_json::from_slice(&drift.stdout).expect("a JSON report");
        let objects = report["objects"].as_array().expect("objects");
        assert!(objects.iter().all(|o| o["component"] != "cluster/image-registry"), "the applied pull Secret drifted: {report}");
        assert!(objects.iter().any(|o| o["change"] == "added"), "{report}");

        // Another cluster on this API server: only after its identity is gone (a test shortcut).
        let identity = api_for(&client, &ObjectId::new("v1", "ConfigMap", Some("kube-system"), "tfrs")).await.expect("configmaps");
        identity.delete("tfrs", &Default::default()).await.expect("delete the identity");
        let prod_args = ["fixtures/render-argocd-tke", "--sealing-key", "fixtures/demo/keys/sealed-secrets.key"];
        let refused = output(bootstrap_command(tfrs, &kubeconfig, &prod_args, &env)).await;
        assert_eq!(refused.status.code(), Some(2), "{}", common::report(&refused));
        assert!(String::from_utf8_lossy(&refused.stderr).contains("ingress type `tke-clb` needs a Tencent Kubernetes Engine cluster"), "{}", common::report(&refused));
        apply(&client, json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "10.0.0.7"}, "spec": {"providerID": "qcloud:///800002/ins-0abc1234"}})).await;
        let cfs = json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "cfs"}, "provisioner": "com.tencent.cloud.csi.cfs"});
        apply(&client, cfs).await;
        let done = output(bootstrap_command(tfrs, &kubeconfig, &prod_args, &env)).await;
        assert_eq!(done.status.code(), Some(0), "{}", common::report(&done));
        let stderr = String::from_utf8_lossy(&done.stderr);
        for expected in ["created ConfigMap/argocd/argocd-cm", "created Application/argocd/tfrs-prod-sh", "created Application/argocd/prod-sh-sealed-secrets-controller-chart"] {
            assert!(stderr.contains(expected), "`{expected}`: {stderr}");
        }
        let configmaps = api_for(&client, &ObjectId::new("v1", "ConfigMap", Some("argocd"), "argocd-cm")).await.expect("configmaps");
        let health = serde_json::to_value(configmaps.get("argocd-cm").await.expect("argocd-cm")).expect("json");
        assert!(health["data"]["resource.customizations.health.argoproj.io_Application"].as_str().is_some_and(|lua| lua.contains("obj.status.health")));
        stop.store(true, Ordering::Relaxed);
        helper.await.expect("helper");
    });
}
