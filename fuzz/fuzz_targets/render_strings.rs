//! A small platform whose free-text fields (configData values, the ACME e-mail, the TKE load
//! balancer id, the Argo CD repo URL) are fuzzed: rendering returns objects or diagnostics, never
//! panics, and every configData value comes out as the same string.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tfrs_gitops::render::{Options, render};
use tfrs_gitops::secrets::MasterKey;
use tfrs_gitops::secrets::resolve::MapInputs;
use tfrs_gitops::spec::{Bundle, load};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let quoted = serde_json::to_string(text).unwrap_or_default();
    let spec = format!(
        "apiVersion: tfrs.turingfocus.cn/v1alpha1\nkind: TFRCluster\nmetadata: {{name: fz}}\nspec:\n  gitops: {{engine: argocd, repoURL: {quoted}}}\n  ingress: {{type: tke-clb, domain: fz.example.com, tkeClbId: {quoted}, tls: {{issuer: letsencrypt, email: {quoted}}}}}\n---\napiVersion: tfrs.turingfocus.cn/v1alpha1\nkind: TFRTenant\nmetadata: {{name: t}}\nspec: {{cluster: fz, type: enterprise, redis: {{enabled: false}}, minio: {{enabled: false}}, rabbitmq: {{enabled: false}}, postgresql: {{enabled: false}}, grafana: {{enabled: false}}}}\n---\napiVersion: tfrs.turingfocus.cn/v1alpha1\nkind: TFRServer\nmetadata: {{name: bot}}\nspec:\n  tenant: t\n  image: {{repository: r.example.com/bot, tag: v1}}\n  configData: {{FUZZ: {quoted}}}\n"
    );
    let mut bundle = Bundle::with_builtins();
    bundle.add_spec("fuzz/spec.yaml", spec);
    let Some(spec) = load(&bundle).spec else { return };
    let master = MasterKey::from_bytes([3; 32]);
    let Ok(rendered) = render(&spec, &bundle, &Options::default(), &MapInputs::default(), Some(&master)) else { return };
    for cluster in &rendered.clusters {
        for component in &cluster.components {
            for object in &component.objects {
                if object.id.kind == "ConfigMap" && object.id.name == "bot-config" {
                    assert_eq!(object.body()["data"]["FUZZ"].as_str(), Some(text), "configData round trip");
                }
            }
        }
    }
});
