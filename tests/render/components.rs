//! What tenants, servers and billing render into the plan: the names consumers rely on, the
//! dependency edges, and the configuration data.

use super::common::{ESO_CLIENT_ID, ESO_CLIENT_SECRET};
use super::{copy_fixture, read_tree, render, report, root, tfrs, tool, unseal_all};
use std::path::Path;

fn plan(out: &Path, cluster: &str) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(out.join(format!("clusters/{cluster}/plan.json"))).unwrap()).unwrap()
}

/// Every object of the plan as `(component, kind, namespace, name)`.
fn planned(plan: &serde_json::Value) -> Vec<(String, String, String, String)> {
    let mut out = Vec::new();
    for component in plan["components"].as_array().unwrap() {
        for object in component["objects"].as_array().unwrap() {
            out.push((
                component["id"].as_str().unwrap().to_owned(),
                object["kind"].as_str().unwrap().to_owned(),
                object["namespace"].as_str().unwrap_or_default().to_owned(),
                object["name"].as_str().unwrap().to_owned(),
            ));
        }
    }
    out
}

#[test]
fn tenants_get_the_names_consumers_rely_on() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    render("demo", &out);
    let objects = planned(&plan(&out, "demo"));
    let has = |component: &str, kind: &str, namespace: &str, name: &str| {
        objects.iter().any(|(c, k, n, o)| c == component && k == kind && n == namespace && o == name)
    };
    for namespace in ["acme-corp", "personal-support"] {
        let id = |c: &str| format!("namespaces/{namespace}/{c}");
        // The names consumers rely on: `<ns>-pg-credentials`; the CNPG Cluster `<ns>-pg` serves `<ns>-pg-rw`.
        assert!(has(&id("postgresql"), "SealedSecret", namespace, &format!("{namespace}-pg-credentials")), "{namespace}");
        assert!(has(&id("postgresql"), "Cluster", namespace, &format!("{namespace}-pg")), "{namespace}");
        assert!(has(&id("redis"), "Service", namespace, "redis"), "{namespace}");
        assert!(has(&id("rabbitmq"), "RabbitmqCluster", namespace, "rabbitmq"), "{namespace}");
        // The MinIO operator owns the Service `minio` (port 80): we render the Tenant, never
        // the Service.
        assert!(has(&id("minio"), "Tenant", namespace, "minio"), "{namespace}");
        assert!(!objects.iter().any(|(_, k, n, o)| k == "Service" && n == namespace && o == "minio"), "{namespace}");
        assert!(has(&id("namespace"), "SealedSecret", namespace, "cnb-registry-secret"), "{namespace}: pull Secret copy");
        assert!(has(&id("mesh-policy"), "PeerAuthentication", namespace, "default"), "{namespace}");
        assert!(has(&id("mesh-policy"), "AuthorizationPolicy", namespace, "tenant-boundary"), "{namespace}");
    }
    assert!(has("cluster/image-registry", "SealedSecret", "tfr-image-credentials", "cnb-registry-secret"));
    assert!(has("namespaces/acme-corp/timescaledb", "Cluster", "acme-corp", "acme-corp-ts"));
    assert!(has("namespaces/acme-corp/namespace", "NetworkPolicy", "acme-corp", "deny-from-other-namespaces"));
    assert!(
        !objects.iter().any(|(_, k, n, _)| k == "NetworkPolicy" && n == "personal-support"),
        "personal namespaces have no NetworkPolicy"
    );
    // alice and bob share `personal-support`: its middleware is rendered once.
    let shared = objects.iter().filter(|(_, k, n, _)| k == "Cluster" && n == "personal-support").count();
    assert_eq!(shared, 1);
    // Consumers reach MinIO through the operator's Service on port 80 (no TLS).
    let tenant = std::fs::read_to_string(out.join("clusters/demo/components/namespaces/acme-corp/minio/tenant-minio.yaml")).unwrap();
    assert!(tenant.contains("requestAutoCert: false"), "{tenant}");
    let pg =
        std::fs::read_to_string(out.join("clusters/demo/components/namespaces/acme-corp/postgresql/cluster-acme-corp-pg.yaml")).unwrap();
    assert!(pg.contains("database: acme-corp") && pg.contains("owner: app_user") && pg.contains("name: acme-corp-pg-credentials"), "{pg}");
}

#[test]
fn tenant_components_wait_for_what_they_need() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    render("demo", &out);
    let plan = plan(&out, "demo");
    let depends_on = |id: &str| -> Vec<String> {
        let component = plan["components"].as_array().unwrap().iter().find(|c| c["id"] == id).unwrap_or_else(|| panic!("{id}"));
        component["dependsOn"].as_array().unwrap().iter().map(|d| d.as_str().unwrap().to_owned()).collect()
    };
    let ns = |c: &str| format!("namespaces/acme-corp/{c}");
    assert_eq!(depends_on(&ns("postgresql")), ["cluster/cnpg-operator", &ns("namespace")]);
    assert_eq!(depends_on(&ns("timescaledb")), ["cluster/cnpg-operator", &ns("postgresql")]);
    assert_eq!(depends_on(&ns("minio")), ["cluster/minio-operator", &ns("namespace")]);
    assert_eq!(depends_on(&ns("rabbitmq")), ["cluster/rabbitmq-operator", &ns("namespace")]);
    assert_eq!(depends_on(&ns("otel-collector")), [ns("jaeger"), ns("namespace")]);
    assert_eq!(depends_on(&ns("mesh-policy")), ["cluster/istiod", &ns("namespace")]);
    for component in ["redis", "jaeger", "prometheus", "grafana", "vector", "shared-cache", "front", "utils"] {
        assert_eq!(depends_on(&ns(component)), [ns("namespace")], "{component}");
    }
}

#[test]
fn disabled_components_leave_no_dangling_reference() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    render("render-enterprise-minimal", &out);
    let tree = read_tree(&out);
    let components: std::collections::BTreeSet<&str> = tree
        .keys()
        .filter_map(|p| p.strip_prefix("clusters/small/components/namespaces/initech-prod/"))
        .filter_map(|p| p.split('/').next())
        .collect();
    assert_eq!(components.into_iter().collect::<Vec<_>>(), ["grafana", "namespace", "otel-collector", "postgresql"]);
    for (path, content) in &tree {
        for gone in ["jaeger.initech-prod", "prometheus.initech-prod", "redis.initech-prod", "minio.initech-prod", "istio-system"] {
            assert!(!content.contains(gone), "`{path}` refers to disabled `{gone}`");
        }
    }
    let grafana = &tree["clusters/small/components/namespaces/initech-prod/grafana/helmrelease-initech-prod-grafana.yaml"];
    assert!(grafana.contains("datasources: []"), "{grafana}");
}

#[test]
fn config_data_comes_out_byte_identical_and_injected_keys_win() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    render("render-servers", &out);
    let config = |namespace: &str, server: &str| -> serde_json::Value {
        let text = std::fs::read_to_string(
            out.join(format!("clusters/robots/components/namespaces/{namespace}/servers/{server}/config/configmap-{server}-config.yaml")),
        )
        .unwrap();
        tfrs_gitops::spec::yaml::parse(0, &text).unwrap()[0].to_json()["data"].clone()
    };
    let everything = config("umbrella", "everything");
    assert_eq!(everything["TFS_YAML"], "key: value\n- item\n---\n{{ x }} {% y %} # not a comment");
    assert_eq!(everything["TFS_FLAG"], "yes");
    assert_eq!(everything["TFS_EMPTY"], "");
    assert_eq!(everything["TFS_ROBOT__DOC_EXTRACTED_IMAGES_DIR"], "/mnt/cache", "the cache directory wins over configData");
    assert_eq!(everything["TFS_ROBOT__DB_SCHEMA"], "umbrella_main");
    assert!(config("umbrella", "tiny").get("TFS_ROBOT__DB_SCHEMA").is_none(), "enterprise schemas are not defaulted");
    assert_eq!(config("personal-research", "carol-bot")["TFS_ROBOT__DB_SCHEMA"], "carol_bot");
    assert_eq!(config("personal-research", "dave-bot")["TFS_ROBOT__DB_SCHEMA"], "dave_custom");
    // In the containers too: an explicit env entry wins over envFrom.
    for worker in ["api", "robot-worker"] {
        let text = std::fs::read_to_string(out.join(format!(
            "clusters/robots/components/namespaces/umbrella/servers/everything/{}/deployment-everything-{worker}.yaml",
            if worker == "api" { "api-worker" } else { "robot-worker" }
        )))
        .unwrap();
        let deployment = tfrs_gitops::spec::yaml::parse(0, &text).unwrap()[0].to_json();
        let container = &deployment["spec"]["template"]["spec"]["containers"][0];
        let env: Vec<&serde_json::Value> =
            container["env"].as_array().unwrap().iter().filter(|e| e["name"] == "TFS_ROBOT__DOC_EXTRACTED_IMAGES_DIR").collect();
        assert_eq!(env.len(), 1);
        assert_eq!(env[0]["value"], "/mnt/cache");
        assert!(container["volumeMounts"].as_array().unwrap().iter().any(|m| m["mountPath"] == "/mnt/cache"), "{worker}");
        assert!(deployment["spec"]["template"]["metadata"]["annotations"]["checksum/config"].is_string());
    }
}

#[test]
fn server_components_run_config_then_jobs_then_workers() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    render("render-servers", &out);
    let plan = plan(&out, "robots");
    let depends_on = |id: &str| -> Vec<String> {
        let component = plan["components"].as_array().unwrap().iter().find(|c| c["id"] == id).unwrap_or_else(|| panic!("{id}"));
        component["dependsOn"].as_array().unwrap().iter().map(|d| d.as_str().unwrap().to_owned()).collect()
    };
    let sorted = |mut ids: Vec<String>| {
        ids.sort();
        ids
    };
    let s = |c: &str| format!("namespaces/umbrella/servers/everything/{c}");
    let t = |c: &str| format!("namespaces/umbrella/{c}");
    assert_eq!(depends_on(&s("config")), sorted(vec![t("namespace")]));
    assert_eq!(depends_on(&s("db-init")), sorted(vec![s("config"), t("postgresql"), t("timescaledb")]));
    assert_eq!(depends_on(&s("minio-init")), sorted(vec![s("config"), t("minio")]));
    assert_eq!(depends_on(&s("grafana-sa")), sorted(vec![s("config"), t("grafana")]));
    let workers = [s("config"), s("db-init"), s("grafana-sa"), s("minio-init"), t("rabbitmq"), t("redis"), t("shared-cache")];
    assert_eq!(depends_on(&s("api-worker")), sorted(workers.to_vec()));
    assert_eq!(depends_on(&s("robot-worker")), sorted(workers.to_vec()));
    // Jobs switched off: the workers wait for the configuration and for what the jobs would
    // have waited for.
    let tiny = |c: &str| format!("namespaces/umbrella/servers/tiny/{c}");
    let expected = ["grafana", "minio", "postgresql", "rabbitmq", "redis", "shared-cache", "timescaledb"].map(t);
    assert_eq!(depends_on(&tiny("api-worker")), sorted(expected.into_iter().chain([tiny("config")]).collect()));
    // A VirtualService routes the custom host on the cluster Gateway, which now lists it.
    let vs = std::fs::read_to_string(
        out.join("clusters/robots/components/namespaces/umbrella/servers/everything/api-worker/virtualservice-everything.yaml"),
    )
    .unwrap();
    assert!(
        vs.contains("bot.umbrella-corp.example.org")
            && vs.contains("istio-ingress/tfrs-gateway")
            && vs.contains("everything-api.umbrella.svc.cluster.local"),
        "{vs}"
    );
    let gateway = std::fs::read_to_string(out.join("clusters/robots/components/cluster/gateway/gateway-tfrs-gateway.yaml")).unwrap();
    assert!(gateway.contains("bot.umbrella-corp.example.org"), "{gateway}");
}

#[test]
fn invalid_confz_data_stops_the_render_naming_the_toml_line() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let output = tfrs(&["render", "fixtures/err-invalid-confz-toml", "--out", out.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1), "{}", report(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("spec.confzData: invalid TOML (TOML line"), "{stderr}");
    assert!(!out.exists());
}

#[test]
fn billing_renders_the_token_chain_only_where_a_collector_reads_it() {
    let Some(python) = tool("python3", &["-c", "import kubesealpy"]) else { return };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    render("render-billing", &out);
    let objects = planned(&plan(&out, "billed"));
    let has = |component: &str, kind: &str, namespace: &str, name: &str| {
        objects.iter().any(|(c, k, n, o)| c == component && k == kind && n == namespace && o == name)
    };
    assert!(has("cluster/external-secrets", "HelmRelease", "flux-system", "external-secrets"));
    assert!(has("cluster/billing-store", "ClusterSecretStore", "", "tfrs-otlp-infisical"));
    assert!(has("cluster/billing-store", "SealedSecret", "external-secrets", "tfrs-otlp-infisical-auth-source"));
    assert!(has("namespaces/hooli/billing-token", "ExternalSecret", "hooli", "tfrs-otlp-token"));
    assert!(!objects.iter().any(|(_, k, n, _)| k == "ExternalSecret" && n == "quiet"), "no collector, no token");
    let store =
        std::fs::read_to_string(out.join("clusters/billed/components/cluster/billing-store/clustersecretstore-tfrs-otlp-infisical.yaml"))
            .unwrap();
    for expected in [
        "hostAPI: https://secret-staging.example.com",
        "projectSlug: tfrs-staging",
        "environmentSlug: staging",
        "secretsPath: /otlp/billed",
    ] {
        assert!(store.contains(expected), "{expected}: {store}");
    }
    // Edges: ESO -> store -> ExternalSecret -> collector; the store's sealed identity waits for
    // the sealed-secrets controller.
    let plan = plan(&out, "billed");
    let depends_on = |id: &str| -> Vec<String> {
        let component = plan["components"].as_array().unwrap().iter().find(|c| c["id"] == id).unwrap();
        component["dependsOn"].as_array().unwrap().iter().map(|d| d.as_str().unwrap().to_owned()).collect()
    };
    assert_eq!(depends_on("cluster/billing-store"), ["cluster/external-secrets", "cluster/sealed-secrets"]);
    assert!(depends_on("namespaces/hooli/billing-token").contains(&"cluster/billing-store".to_owned()));
    assert!(depends_on("namespaces/hooli/otel-collector").contains(&"namespaces/hooli/billing-token".to_owned()));
    // The collector reads the token from the environment; the config never holds it.
    let collector =
        std::fs::read_to_string(out.join("clusters/billed/components/namespaces/hooli/otel-collector/deployment-otel-collector.yaml"))
            .unwrap();
    assert!(
        collector.contains("name: TFRS_OTLP_TOKEN")
            && collector.contains("name: tfrs-otlp-token")
            && collector.contains("key: PRIMARY_TOKEN"),
        "{collector}"
    );
    let config =
        std::fs::read_to_string(out.join("clusters/billed/components/namespaces/hooli/otel-collector/configmap-otel-collector.yaml"))
            .unwrap();
    assert!(
        config.contains("endpoint: https://otlp.example.com") && config.contains("Authorization: Bearer ${env:TFRS_OTLP_TOKEN}"),
        "{config}"
    );
    // The identity's Secret opens to the values from the environment.
    let opened = unseal_all(&python, &out);
    let auth = &opened["cluster/billing-store/sealedsecret-tfrs-otlp-infisical-auth-source.yaml"];
    assert_eq!(
        (auth["clientId"].as_str(), auth["clientSecret"].as_str(), auth["expiresAt"].as_str()),
        (ESO_CLIENT_ID, ESO_CLIENT_SECRET, "2099-05-19")
    );
    // Billing off: none of it, and no exporter left behind.
    let off = dir.path().join("off");
    render("demo", &off);
    for (path, content) in read_tree(&off) {
        assert!(!path.contains("external-secrets") && !path.contains("billing"), "{path}");
        assert!(!content.contains("otlp_http/billing") && !content.contains("TFRS_OTLP_TOKEN"), "{path}");
    }
}

#[test]
fn a_billing_secret_expiring_soon_is_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let spec_dir = copy_fixture("render-billing", dir.path());
    std::fs::write(spec_dir.join("keys.pem"), std::fs::read(root().join("fixtures/demo/keys/sealed-secrets.pem")).unwrap()).unwrap();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let soon = tfrs_gitops::source::inputs::rfc3339(((now / 86_400 + 10) * 86_400) as i64)[..10].to_owned();
    let text = std::fs::read_to_string(spec_dir.join("spec.yaml"))
        .unwrap()
        .replace("2099-05-19", &soon)
        .replace("../demo/keys/sealed-secrets.pem", "keys.pem");
    std::fs::write(spec_dir.join("spec.yaml"), text).unwrap();
    let output = tfrs(&["validate", spec_dir.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(0), "{}", report(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("spec.billing.infisical.expiresAt: the ESO machine identity's client secret expires in 10 days"), "{stderr}");
}
