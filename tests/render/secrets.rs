//! Secrets in a rendered tree: no plaintext is written, sealed and SOPS-encrypted Secrets open to
//! the expected values, and missing or unusable credentials stop the render naming the field.

use super::common::{
    self, ESO_CLIENT_ID, ESO_CLIENT_SECRET, OPENAI_KEY, OUTSIDE_REDIS_PASSWORD, REDIS_PASSWORD, REGISTRY_PASSWORD, RENDER_FIXTURES,
};
use super::{copy_fixture, master_key, read_tree, render, report, root, tfrs, tool, unseal_all};
use std::collections::BTreeMap;
use std::process::Command;

#[test]
fn no_plaintext_secret_is_written() {
    let registry_file = std::fs::read_to_string(root().join("fixtures/demo/secrets/registry-password.txt")).unwrap();
    let master = tfrs_gitops::secrets::MasterKey::from_hex(&master_key()).unwrap();
    let generated =
        master.derive("cluster/laptop/imageRegistry/password", &tfrs_gitops::spec::model::Generate { length: 24, ..Default::default() });
    let tenant_generated = master.derive(
        "cluster/full/namespace/globex/postgresql/password",
        &tfrs_gitops::spec::model::Generate { length: 48, ..Default::default() },
    );
    let secrets = [
        registry_file.trim_end_matches('\n').to_owned(),
        REGISTRY_PASSWORD.to_owned(),
        REDIS_PASSWORD.to_owned(),
        generated.to_string(),
        tenant_generated.to_string(),
        "p@ss/w:rd#%'\"$x".to_owned(),
        OPENAI_KEY.to_owned(),
        "sk-file-anthropic-0042".to_owned(),
        "literal-token-9d2".to_owned(),
        OUTSIDE_REDIS_PASSWORD.to_owned(),
        ESO_CLIENT_ID.to_owned(),
        ESO_CLIENT_SECRET.to_owned(),
    ];
    for fixture in RENDER_FIXTURES {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let output = render(fixture, &out);
        let logs = report(&output);
        for (path, content) in read_tree(&out) {
            for secret in &secrets {
                assert!(!content.contains(secret.as_str()), "{fixture}: plaintext secret in `{path}`");
            }
        }
        for secret in &secrets {
            assert!(!logs.contains(secret.as_str()), "{fixture}: plaintext secret in the output of tfrs");
        }
    }
}

#[test]
fn a_secret_without_sealing_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("spec.yaml");
    std::fs::write(
        &spec,
        "apiVersion: tfrs.turingfocus.cn/v1alpha1\nkind: TFRCluster\nmetadata: {name: x}\nspec:\n  ingress: {domain: x.example.com}\n  imageRegistry: {username: {value: u}, password: {value: p4ssw0rd-literal}}\n",
    )
    .unwrap();
    let out = dir.path().join("out");
    let output = tfrs(&["render", spec.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1), "{}", report(&output));
    assert!(String::from_utf8_lossy(&output.stderr).contains("spec.sealing.certFile"), "{}", report(&output));
    assert!(!out.exists(), "nothing written");
}

/// The plaintext the demo's pull Secret must hold: the registry token of `fromFile`.
fn expected_docker_config(server: &str, user: &str, password: &str) -> serde_json::Value {
    use base64::Engine as _;
    let auth = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
    serde_json::json!({"auths": {server: {"username": user, "password": password, "auth": auth}}})
}

#[test]
fn kubesealpy_opens_every_sealed_secret_of_a_rendered_tree() {
    let Some(python) = tool("python3", &["-c", "import kubesealpy"]) else { return };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    render("demo", &out);
    let opened = unseal_all(&python, &out);
    assert!(!opened.is_empty());
    let token = std::fs::read_to_string(root().join("fixtures/demo/secrets/registry-password.txt")).unwrap();
    let pull = opened.iter().find(|(p, _)| p.ends_with("image-registry/sealedsecret-cnb-registry-secret.yaml")).expect("the pull Secret").1;
    let config: serde_json::Value = serde_json::from_str(&pull[".dockerconfigjson"]).unwrap();
    assert_eq!(config, expected_docker_config("docker.cnb.cool", "cnb", token.trim_end_matches('\n')));
}

#[test]
fn real_sops_decrypts_every_secret_of_a_rendered_tree() {
    let Some(sops) = tool("sops", &["--version"]) else { return };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    render("render-sops-docker-desktop", &out);
    let master = tfrs_gitops::secrets::MasterKey::from_hex(&master_key()).unwrap();
    let password =
        master.derive("cluster/laptop/imageRegistry/password", &tfrs_gitops::spec::model::Generate { length: 24, ..Default::default() });
    let files: Vec<String> = read_tree(&out).keys().filter(|p| p.contains("/secret-")).cloned().collect();
    assert_eq!(files.len(), 2, "{files:?}");
    for file in files {
        let output = Command::new(&sops)
            .args(["--disable-version-check", "--decrypt", "--output-type", "json"])
            .arg(out.join(&file))
            .env("SOPS_AGE_KEY_FILE", root().join("fixtures/demo/keys/age.txt"))
            .env_remove("SOPS_AGE_KEY")
            .output()
            .unwrap();
        assert!(output.status.success(), "{file}: {}", String::from_utf8_lossy(&output.stderr));
        let secret: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
        if file.ends_with("secret-cnb-registry-secret.yaml") {
            let config: serde_json::Value = serde_json::from_str(secret["stringData"][".dockerconfigjson"].as_str().unwrap()).unwrap();
            assert_eq!(config, expected_docker_config("docker.cnb.cool", "dev", &password));
        } else {
            let values = secret["stringData"]["values.yaml"].as_str().unwrap();
            let values: serde_json::Value = serde_json::from_str(values).unwrap();
            assert_eq!(values["imageCredentials"][0]["password"], password.as_str());
            assert_eq!(values["imageCredentials"][0]["name"], "cnb-registry-secret");
        }
    }
}

#[test]
fn tenant_credentials_open_to_the_derived_values() {
    let Some(python) = tool("python3", &["-c", "import kubesealpy"]) else { return };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    render("demo", &out);
    let opened = unseal_all(&python, &out);
    let master = tfrs_gitops::secrets::MasterKey::from_hex(&master_key()).unwrap();
    let derive = |path: &str, generate: tfrs_gitops::spec::model::Generate| master.derive(path, &generate).to_string();
    let default = tfrs_gitops::spec::model::Generate::default;
    let pg = &opened["namespaces/acme-corp/postgresql/sealedsecret-acme-corp-pg-credentials.yaml"];
    assert_eq!(pg["username"], "app_user");
    assert_eq!(pg["password"], derive("cluster/demo/namespace/acme-corp/postgresql/password", default()));
    let ts = &opened["namespaces/acme-corp/timescaledb/sealedsecret-acme-corp-ts-credentials.yaml"];
    let hex = tfrs_gitops::spec::model::Generate { length: 40, charset: tfrs_gitops::spec::model::Charset::Hex, rotation: 1 };
    assert_eq!(ts["password"], derive("cluster/demo/namespace/acme-corp/timescaledb/password", hex));
    let minio = &opened["namespaces/acme-corp/minio/sealedsecret-acme-corp-minio-env.yaml"];
    let base64 = tfrs_gitops::spec::model::Generate { charset: tfrs_gitops::spec::model::Charset::Base64, ..default() };
    let root_password = derive("cluster/demo/namespace/acme-corp/minio/rootPassword", base64);
    assert_eq!(minio["config.env"], format!("export MINIO_ROOT_USER=\"minio-root\"\nexport MINIO_ROOT_PASSWORD=\"{root_password}\"\n"));
    let mq = &opened["namespaces/acme-corp/rabbitmq/sealedsecret-acme-corp-rabbitmq-credentials.yaml"];
    assert_eq!(mq["username"], "app");
    assert_eq!(mq["password"], derive("cluster/demo/namespace/acme-corp/rabbitmq/password", default()));
    let grafana = &opened["namespaces/personal-support/grafana/sealedsecret-personal-support-grafana-admin.yaml"];
    assert_eq!(grafana["admin-password"], derive("cluster/demo/namespace/personal-support/grafana/adminPassword", default()));
    // The pull Secret copies hold the same value as the shared one.
    let copies: Vec<&BTreeMap<String, String>> =
        opened.iter().filter(|(p, _)| p.ends_with("sealedsecret-cnb-registry-secret.yaml")).map(|(_, v)| v).collect();
    assert_eq!(copies.len(), 3, "tfr-image-credentials and both tenant namespaces");
    assert!(copies.iter().all(|c| c[".dockerconfigjson"] == copies[0][".dockerconfigjson"]));
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index] == b'%' {
            out.push(u8::from_str_radix(&text[index + 1..index + 3], 16).unwrap());
            index += 3;
        } else {
            out.push(bytes[index]);
            index += 1;
        }
    }
    String::from_utf8(out).unwrap()
}

#[test]
fn confz_holds_the_same_credentials_as_the_middleware_secrets() {
    let Some(python) = tool("python3", &["-c", "import kubesealpy"]) else { return };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    render("render-servers", &out);
    let opened = unseal_all(&python, &out);
    for (namespace, server) in
        [("umbrella", "everything"), ("umbrella", "tiny"), ("personal-research", "carol-bot"), ("personal-research", "dave-bot")]
    {
        let secret = |component: &str, name: &str| opened[&format!("namespaces/{namespace}/{component}/sealedsecret-{name}.yaml")].clone();
        let confz_text =
            &opened[&format!("namespaces/{namespace}/servers/{server}/config/sealedsecret-{server}-confz.yaml")]["config.toml"];
        let confz: toml::Table = confz_text.parse().unwrap();
        // Enterprise robots connect as the database owner, personal ones as their own role.
        let pg = match namespace {
            "umbrella" => secret("postgresql", "umbrella-pg-credentials"),
            _ => secret("postgresql", &format!("{server}-pg-role")),
        };
        assert_eq!(confz["postgresql"]["password"].as_str(), Some(pg["password"].as_str()), "{server}");
        assert_eq!(confz["postgresql"]["user"].as_str(), Some(pg["username"].as_str()));
        assert_eq!(confz["postgresql"]["dbname"].as_str(), Some(namespace));
        assert_eq!(confz["postgresql"]["host"].as_str(), Some(format!("{namespace}-pg-rw").as_str()));
        let redis = secret("redis", &format!("{namespace}-redis-credentials"));
        if server == "everything" {
            // An outside Redis: its literal password replaces the generated one, named in
            // `confzCredentialOverrides`.
            assert_eq!(confz["redis"]["password"].as_str(), Some(OUTSIDE_REDIS_PASSWORD));
            assert_eq!(confz["redis"]["host"].as_str(), Some("cache.umbrella-corp.example.org"));
        } else {
            assert_eq!(confz["redis"]["password"].as_str(), Some(redis["password"].as_str()));
            assert_eq!(confz["redis"]["host"].as_str(), Some(format!("redis.{namespace}.svc.cluster.local").as_str()));
        }
        let mq = secret("rabbitmq", &format!("{namespace}-rabbitmq-credentials"));
        let url = confz["celery"]["broker_url"].as_str().unwrap();
        let rest = url.strip_prefix("amqp://").unwrap();
        let (userinfo, host) = rest.rsplit_once('@').unwrap();
        let (user, password) = userinfo.split_once(':').unwrap();
        assert_eq!((percent_decode(user), percent_decode(password)), (mq["username"].clone(), mq["password"].clone()), "{url}");
        assert_eq!(host, format!("rabbitmq.{namespace}.svc.cluster.local:5672/"));
        if namespace == "umbrella" {
            let ts = secret("timescaledb", "umbrella-ts-credentials");
            assert_eq!(confz["timescaledb"]["password"].as_str(), Some(ts["password"].as_str()));
            let env = &secret("minio", "umbrella-minio-env")["config.env"];
            let root_password = env.lines().nth(1).unwrap().strip_prefix("export MINIO_ROOT_PASSWORD=\"").unwrap().trim_end_matches('"');
            assert_eq!(confz["cos"]["secret_key"].as_str(), Some(root_password));
            assert_eq!(confz["cos"]["bucket"].as_str(), Some(server), "each server has its own bucket");
        } else {
            assert!(!confz.contains_key("cos") && !confz.contains_key("timescaledb"), "{server}: only enabled middleware");
        }
    }
    // The hostile RabbitMQ password, percent-encoded.
    let everything: toml::Table =
        opened["namespaces/umbrella/servers/everything/config/sealedsecret-everything-confz.yaml"]["config.toml"].parse().unwrap();
    assert_eq!(
        everything["celery"]["broker_url"].as_str(),
        Some("amqp://celery%20user:p%40ss%2Fw%3Ard%23%25%3F%26%3D%2B%20x@rabbitmq.umbrella.svc.cluster.local:5672/")
    );
    // confzData merged over the generated config: tables merge, values replace.
    assert_eq!(everything["postgresql"]["port"].as_integer(), Some(6432));
    assert_eq!(everything["postgresql"]["sslmode"].as_str(), Some("require"));
    assert_eq!(everything["celery"]["broker_pool_limit"].as_integer(), Some(4));
    assert_eq!(everything["robot"]["max_sessions"].as_integer(), Some(50));
    // secretData from the environment, a file, a literal, and derived.
    let secret = &opened["namespaces/umbrella/servers/everything/config/sealedsecret-everything-secret.yaml"];
    assert_eq!(secret["OPENAI_API_KEY"], OPENAI_KEY);
    assert_eq!(secret["ANTHROPIC_API_KEY"], "sk-file-anthropic-0042");
    assert_eq!(secret["STATIC_TOKEN"], "literal-token-9d2");
    let master = tfrs_gitops::secrets::MasterKey::from_hex(&master_key()).unwrap();
    let generate = tfrs_gitops::spec::model::Generate { length: 64, charset: tfrs_gitops::spec::model::Charset::Hex, rotation: 0 };
    assert_eq!(secret["SESSION_SECRET"], master.derive("cluster/robots/server/everything/secretData/SESSION_SECRET", &generate).as_str());
}

#[test]
fn environment_problems_exit_2_and_name_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    // No master key: every generated secret is named, and the exit code is the environment's.
    let output = common::tfrs_command()
        .args(["render", "fixtures/demo", "--out", out.to_str().unwrap()])
        .env_remove("TFRS_MASTER_KEY")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", report(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    // One cause, said once, at every place it affects.
    assert_eq!(stderr.matches("generated secrets need a master key").count(), 1, "{stderr}");
    assert!(stderr.contains("= also at fixtures/demo/tenants.yaml:17:15: spec.postgresql.password"), "{stderr}");
    assert!(!out.exists());
    // A bad `OPERATOR_*` override names the variable.
    let output = common::tfrs_command()
        .args(["render", "fixtures/render-argocd-tke", "--out", out.to_str().unwrap()])
        .env("TFRS_MASTER_KEY", master_key())
        .env("TFRS_TEST_REGISTRY_PASSWORD", REGISTRY_PASSWORD)
        .env("OPERATOR_HELM_REPO_URL", "https://charts.example.com/tfrs")
        .env("OPERATOR_CHART_VERSION", "latest")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", report(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("spec.tfrsOperator.chart: expected an OCI chart reference") && stderr.contains("`OPERATOR_HELM_REPO_URL`"),
        "{stderr}"
    );
    assert!(stderr.contains("spec.tfrsOperator.version: expected a version") && stderr.contains("`OPERATOR_CHART_VERSION`"), "{stderr}");
    // Valid overrides win over the spec.
    let output = common::tfrs_command()
        .args(["render", "fixtures/render-argocd-tke", "--out", out.to_str().unwrap()])
        .env("TFRS_MASTER_KEY", master_key())
        .env("TFRS_TEST_REGISTRY_PASSWORD", REGISTRY_PASSWORD)
        .env("OPERATOR_HELM_REPO_URL", "oci://registry.example.com/charts/tfrs-operator")
        .env("OPERATOR_CHART_VERSION", "0.6.1")
        .env("OPERATOR_IMAGE_TAG", "v0.6.1-hotfix")
        .env("OPERATOR_RELEASE_NAME", "tfrs-op")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", report(&output));
    let app = std::fs::read_to_string(out.join("clusters/prod-sh/components/cluster/tfrs-operator/application-prod-sh-tfrs-op-chart.yaml"))
        .unwrap();
    for expected in [
        "repoURL: oci://registry.example.com/charts/tfrs-operator",
        "targetRevision: \"0.6.1\"",
        "tag: v0.6.1-hotfix",
        "releaseName: tfrs-op",
    ] {
        assert!(app.contains(expected), "{expected}: {app}");
    }
    // The release namespace is rendered, so the sealed pull Secret has somewhere to land.
    assert!(out.join("clusters/prod-sh/components/cluster/tfrs-operator/namespace-tfrs-operator-system.yaml").exists());
    // A non-UTF-8 credential file is an error, never altered.
    let spec_dir = copy_fixture("demo", dir.path());
    std::fs::write(spec_dir.join("secrets/registry-password.txt"), b"token\xff\xfe\n").unwrap();
    let output = tfrs(&["render", spec_dir.to_str().unwrap(), "--out", dir.path().join("out2").to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2), "{}", report(&output));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("spec.imageRegistry.password: the value is not UTF-8 text"),
        "{}",
        report(&output)
    );
    // A missing certificate is located.
    std::fs::remove_file(spec_dir.join("keys/sealed-secrets.pem")).unwrap();
    std::fs::write(spec_dir.join("secrets/registry-password.txt"), b"token\n").unwrap();
    let output = tfrs(&["render", spec_dir.to_str().unwrap(), "--out", dir.path().join("out3").to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2), "{}", report(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("cluster.yaml:") && stderr.contains(": spec.sealing.certFile: cannot read"), "{stderr}");
}

#[test]
fn credentials_the_middleware_would_misread_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("spec.yaml");
    std::fs::write(
        &spec,
        format!(
            "apiVersion: tfrs.turingfocus.cn/v1alpha1\nkind: TFRCluster\nmetadata: {{name: c}}\nspec:\n  ingress: {{domain: c.example.com}}\n  sealing: {{certFile: {}}}\n---\napiVersion: tfrs.turingfocus.cn/v1alpha1\nkind: TFRTenant\nmetadata: {{name: t}}\nspec:\n  cluster: c\n  minio: {{rootUser: {{value: \"mi\\\"nio\"}}}}\n  redis: {{password: {{value: \"two words\"}}}}\n",
            root().join("fixtures/demo/keys/sealed-secrets.pem").display()
        ),
    )
    .unwrap();
    let output = tfrs(&["render", spec.to_str().unwrap(), "--out", dir.path().join("out").to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1), "{}", report(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("spec.minio.rootUser: may not contain") && stderr.contains("spec.redis.password: may not contain whitespace"),
        "{stderr}"
    );
    assert!(!stderr.contains("two words") && !stderr.contains("mi\"nio"), "never the values");
}

#[test]
fn rotating_the_redis_password_rolls_redis() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    render("render-enterprise-full", &out);
    let deployment =
        || std::fs::read_to_string(out.join("clusters/full/components/namespaces/globex/redis/deployment-redis.yaml")).unwrap();
    let before = deployment();
    assert!(before.contains("checksum/credentials:"), "{before}");
    let output = common::tfrs_command()
        .args(["render", "fixtures/render-enterprise-full", "--out", out.to_str().unwrap()])
        .env("TFRS_MASTER_KEY", master_key())
        .env("TFRS_TEST_REGISTRY_PASSWORD", REGISTRY_PASSWORD)
        .env("TFRS_TEST_REDIS_PASSWORD", "a-rotated-redis-password")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", report(&output));
    assert_ne!(before, deployment(), "the pod template changes, so Redis restarts with the new password");
}
