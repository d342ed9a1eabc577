//! The checks of one `TFRCluster`: operators, ingress, GitOps and sealing, the image registry.

use super::{billing, secret_warnings};
use crate::spec::diagnostic::Diagnostic;
use crate::spec::diagnostic::Rule;
use crate::spec::duration;
use crate::spec::load::Object;
use crate::spec::model::{ClusterSpec, GitopsEngine, IngressType, Issuer, SealingBackend};
use std::time::Duration;

pub(super) fn check_cluster(cluster: &Object<ClusterSpec>, out: &mut Vec<Diagnostic>) {
    rabbitmq_operator(cluster, out);
    ingress(cluster, out);
    tfrs_operator(cluster, out);
    gitops_and_sealing(cluster, out);
    image_registry(cluster, out);
    billing::check_billing(cluster, out);
    let registry = &cluster.spec.image_registry;
    let infisical = &cluster.spec.billing.infisical;
    let sources = [
        ("spec.imageRegistry.username", &registry.username),
        ("spec.imageRegistry.password", &registry.password),
        ("spec.billing.infisical.clientId", &infisical.client_id),
        ("spec.billing.infisical.clientSecret", &infisical.client_secret),
    ];
    let sources: Vec<_> = sources.into_iter().filter_map(|(path, source)| Some((path.to_owned(), source.as_ref()?))).collect();
    secret_warnings(cluster, &sources, out);
}

/// The RabbitMQ operators come from upstream's release manifests: a cluster-operator tag.
fn rabbitmq_operator(cluster: &Object<ClusterSpec>, out: &mut Vec<Diagnostic>) {
    let rabbitmq = &cluster.spec.operators.rabbitmq;
    if rabbitmq.enabled && !rabbitmq.version.starts_with("v2.") {
        out.push(
            cluster.error_at(
                "spec.operators.rabbitmq.version",
                format!(
                    "expected a rabbitmq/cluster-operator release tag such as `{}`, found `{}`",
                    crate::catalog::version("rabbitmq-cluster-operator"),
                    rabbitmq.version
                ),
            )
            .with_help("the operators are installed from upstream's release manifests; a Bitnami chart version (4.x) no longer applies: Bitnami's operator images are gone. Leave `version` out for the pinned release"),
        );
    }
}

fn ingress(cluster: &Object<ClusterSpec>, out: &mut Vec<Diagnostic>) {
    let ingress = &cluster.spec.ingress;
    if ingress.domain.is_empty() {
        out.push(
            cluster
                .error_in_parent("spec.ingress.domain", "missing required field")
                .with_help("every server's default host is `<server>.<tenant>.<domain>`"),
        );
    }
    if ingress.tls.issuer == Issuer::Letsencrypt && ingress.tls.email.is_empty() {
        out.push(cluster.error_in_parent("spec.ingress.tls.email", "required when `issuer` is `letsencrypt` (the ACME account e-mail)"));
    }
    let ports = &ingress.node_ports;
    if ingress.kind == IngressType::Nodeport && ports.http == ports.https {
        out.push(cluster.error_at(
            "spec.ingress.nodePorts.https",
            format!("the same node port as `http` ({}): a Service cannot expose one node port twice", ports.http),
        ));
    }
    if !ingress.tke_clb_id.is_empty() && ingress.kind != IngressType::TkeClb {
        out.push(cluster.error_at("spec.ingress.tkeClbId", "only valid with `ingress.type: tke-clb`"));
    }
}

fn tfrs_operator(cluster: &Object<ClusterSpec>, out: &mut Vec<Diagnostic>) {
    if duration::parse(&cluster.spec.tfrs_operator.timeout) == Ok(Duration::ZERO) {
        out.push(
            cluster
                .error_at(
                    "spec.tfrsOperator.timeout",
                    "a zero timeout leaves Helm no time to wait for the release: every install and upgrade would time out",
                )
                .with_help("leave it out for `5m`, or give the time the release needs, e.g. `10m`"),
        );
    }
}

fn gitops_and_sealing(cluster: &Object<ClusterSpec>, out: &mut Vec<Diagnostic>) {
    let spec = &cluster.spec;
    if spec.gitops.engine == GitopsEngine::Argocd && spec.gitops.repo_url.is_empty() {
        out.push(
            cluster
                .error_in_parent("spec.gitops.repoURL", "required with `engine: argocd`")
                .with_help("the Git URL Argo CD reads the rendered tree from"),
        );
    }
    if spec.gitops.engine == GitopsEngine::Argocd && spec.sealing.backend == SealingBackend::SopsAge {
        out.push(
            cluster.error_at("spec.sealing.backend", "Argo CD cannot decrypt `sops-age` Secrets").with_help(
                "use `backend: sealed-secrets` with Argo CD, or `gitops.engine: flux`, whose kustomize-controller decrypts SOPS",
            ),
        );
    }
    match spec.sealing.backend {
        SealingBackend::SealedSecrets if spec.sealing.cert_file.is_empty() => out.push(
            cluster
                .warning_in_parent("spec.sealing.certFile", "not set: `tfrs render` cannot seal Secrets without the controller certificate")
                .with_help("save it with `kubeseal --fetch-cert > keys/<cluster>.pem` and set `certFile: keys/<cluster>.pem`"),
        ),
        SealingBackend::SopsAge if spec.sealing.age_recipients.is_empty() => out.push(
            cluster.error_in_parent("spec.sealing.ageRecipients", "at least one `age1…` recipient is required with `backend: sops-age`"),
        ),
        _ => {}
    }
    for (index, recipient) in spec.sealing.age_recipients.iter().enumerate() {
        if !(recipient.starts_with("age1") && recipient.len() > 10) {
            let path = format!("spec.sealing.ageRecipients[{index}]");
            out.push(cluster.error_at(&path, format!("expected an age recipient (`age1…`), found {recipient:?}")));
        }
    }
}

/// The pull Secret takes both a user and a password, or neither. The error points at the one
/// given and names the one missing.
fn image_registry(cluster: &Object<ClusterSpec>, out: &mut Vec<Diagnostic>) {
    let registry = &cluster.spec.image_registry;
    let (given, missing) = match (&registry.username, &registry.password) {
        (Some(_), None) => ("username", "password"),
        (None, Some(_)) => ("password", "username"),
        _ => return,
    };
    out.push(Diagnostic::error(
        Rule::Consistency,
        cluster.locate(&format!("spec.imageRegistry.{given}")),
        format!("spec.imageRegistry.{missing}"),
        format!("required when `{given}` is set"),
    ));
}
