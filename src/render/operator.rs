//! The tfrs-operator component's chart settings: the spec's, or the render-time `OPERATOR_*`
//! overrides, each checked; with Flux, the sealed values Secret carrying `imageCredentials`.

use super::engine::Context;
use super::names;
use super::names::FLUX_NAMESPACE;
use crate::secrets::PlainSecret;
use crate::spec::Object;
use crate::spec::diagnostic::Rule;
use crate::spec::model::{ClusterSpec, GitopsEngine};
use serde::Serialize;
use serde_json::{Value as Json, json};
use std::collections::BTreeMap;
use zeroize::Zeroizing;

/// The `operator` value of `templates/cluster/tfrs-operator.yaml`.
#[derive(Serialize)]
pub(crate) struct OperatorValues {
    chart_name: String,
    release: String,
    namespace: String,
    repo: String,
    version: String,
    timeout: String,
    /// The chart's Helm values.
    values: ChartValues,
    /// Flux `valuesFrom` entries, or null.
    values_from: Option<Vec<ValuesFrom>>,
}

/// The chart's Helm values tfrs sets (written as is).
#[derive(Serialize, Default)]
struct ChartValues {
    #[serde(skip_serializing_if = "Option::is_none")]
    image: Option<ImageTag>,
    #[serde(rename = "imagePullSecrets", skip_serializing_if = "Option::is_none")]
    image_pull_secrets: Option<Vec<NameRef>>,
    #[serde(rename = "imageCredentials", skip_serializing_if = "Option::is_none")]
    image_credentials: Option<Vec<Json>>,
}

#[derive(Serialize)]
struct ImageTag {
    tag: String,
}

#[derive(Serialize)]
struct NameRef {
    name: String,
}

/// A Flux HelmRelease `valuesFrom` entry.
#[derive(Serialize)]
struct ValuesFrom {
    kind: &'static str,
    name: String,
    #[serde(rename = "valuesKey")]
    values_key: &'static str,
}

/// The chart settings after the overrides.
struct Settings {
    repo: String,
    version: String,
    image_tag: String,
    release: String,
}

/// The tfrs-operator chart settings, with the render-time environment overrides, and, when the
/// registry has credentials, the Secret that gives them to the chart.
pub(crate) fn values(
    context: &mut Context<'_>,
    cluster: &Object<ClusterSpec>,
    pull: Option<&PlainSecret>,
) -> (OperatorValues, Option<PlainSecret>) {
    let operator = &cluster.spec.tfrs_operator;
    let Settings { repo, version, image_tag, release } = settings(context, cluster);
    let chart_name = repo.rsplit('/').next().unwrap_or("tfrs-operator").to_owned();
    let mut values = ChartValues::default();
    if !image_tag.is_empty() {
        values.image = Some(ImageTag { tag: image_tag });
    }
    let mut values_from = None;
    let mut secret = None;
    if let Some(pull) = pull {
        match cluster.spec.gitops.engine {
            GitopsEngine::Flux => {
                let (entry, values_secret) = flux_credentials(cluster, pull, &release);
                values_from = Some(vec![entry]);
                secret = Some(values_secret);
            }
            GitopsEngine::Argocd => {
                // NB: Argo CD cannot read Helm values from a Secret; the pull Secret is sealed
                // into the release namespace instead and the chart is told to use it.
                let copy = PlainSecret { namespace: operator.namespace.clone(), ..pull.clone() };
                values.image_pull_secrets = Some(vec![NameRef { name: copy.name.clone() }]);
                values.image_credentials = Some(Vec::new());
                secret = Some(copy);
            }
        }
    }
    let operator_values = OperatorValues {
        chart_name,
        release,
        namespace: operator.namespace.clone(),
        repo,
        version,
        timeout: operator.timeout.clone(),
        values,
        values_from,
    };
    (operator_values, secret)
}

/// Flux: the sealed values Secret `<release>-image-credentials` carrying `imageCredentials`
/// (from the pull Secret), and the `valuesFrom` entry naming it.
fn flux_credentials(cluster: &Object<ClusterSpec>, pull: &PlainSecret, release: &str) -> (ValuesFrom, PlainSecret) {
    let registry = &cluster.spec.image_registry;
    let config: Json = pull.data.get(".dockerconfigjson").and_then(|bytes| serde_json::from_slice(bytes).ok()).unwrap_or(Json::Null);
    let auth = &config["auths"][registry.server.as_str()];
    let credentials = Zeroizing::new(
        json!({"imageCredentials": [{
            "name": registry.secret_name,
            "registry": registry.server,
            "username": auth["username"],
            "password": auth["password"],
        }]})
        .to_string(),
    );
    let name = names::operator_values_secret(release);
    let mut data = BTreeMap::new();
    data.insert("values.yaml".to_owned(), Zeroizing::new(credentials.as_bytes().to_vec()));
    let entry = ValuesFrom { kind: "Secret", name: name.clone(), values_key: "values.yaml" };
    let secret = PlainSecret { name, namespace: FLUX_NAMESPACE.to_owned(), kind: "Opaque".to_owned(), data, ..PlainSecret::default() };
    (entry, secret)
}

/// The chart settings: each from its `OPERATOR_*` variable when that is set, else from the spec;
/// either way it is checked, and a bad value is an error naming where it came from.
fn settings(context: &mut Context<'_>, cluster: &Object<ClusterSpec>) -> Settings {
    let operator = &cluster.spec.tfrs_operator;
    let overrides = context.options.operator_overrides.clone();
    let mut pick = |variable: &str, field: &str, value: &str, check: &dyn Fn(&str) -> Result<(), String>| -> String {
        let (value, from_env) = match overrides.get(variable).filter(|v| !v.is_empty()) {
            Some(value) => (value.clone(), true),
            None => (value.to_owned(), false),
        };
        if let Err(expected) = check(&value) {
            let at = if from_env { format!("`{variable}` (which overrides it)") } else { "the spec".to_owned() };
            let diagnostic = crate::spec::Diagnostic::error(
                Rule::Environment,
                cluster.locate(field),
                field,
                format!("expected {expected}, found an invalid value in {at}"),
            );
            // NB: a bad variable is one cause however many clusters it overrides.
            context.errors.push(if from_env { diagnostic.with_cause(format!("{variable}: {expected}")) } else { diagnostic });
            context.environment |= from_env;
        }
        value
    };
    Settings {
        repo: pick("OPERATOR_HELM_REPO_URL", "spec.tfrsOperator.chart", &operator.chart, &oci),
        version: pick("OPERATOR_CHART_VERSION", "spec.tfrsOperator.version", &operator.version, &|value| {
            crate::spec::schema::check_format("version", value).map_err(str::to_owned)
        }),
        image_tag: pick("OPERATOR_IMAGE_TAG", "spec.tfrsOperator.imageTag", &operator.image_tag, &tag),
        release: pick("OPERATOR_RELEASE_NAME", "spec.tfrsOperator.releaseName", &operator.release_name, &release),
    }
}

/// An OCI chart reference.
fn oci(value: &str) -> Result<(), String> {
    let ok = value.strip_prefix("oci://").is_some_and(|rest| !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_graphic()));
    if ok { Ok(()) } else { Err("an OCI chart reference such as `oci://registry.example.com/charts/tfrs-operator`".to_owned()) }
}

/// An image tag, or empty (the chart's own).
fn tag(value: &str) -> Result<(), String> {
    if value.is_empty() { Ok(()) } else { crate::spec::schema::check_format("image-tag", value).map_err(str::to_owned) }
}

/// A release name: a DNS label.
fn release(value: &str) -> Result<(), String> {
    if crate::spec::schema::is_dns_label(value) {
        Ok(())
    } else {
        Err("a DNS label (lowercase letters, digits and `-`, at most 63)".to_owned())
    }
}
