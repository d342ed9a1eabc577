//! What `tfrs bootstrap` checks on the live cluster before it writes anything: the GitOps
//! engine's CRDs and namespace, a ReadWriteMany StorageClass for every shared cache, and nodes
//! of the kind the ingress type needs. Each problem is one sentence naming what is missing.

use crate::object::ObjectId;
use crate::reconcile::apply::{Cause, Target};
use crate::render::names::{ARGOCD_NAMESPACE, FLUX_NAMESPACE};
use crate::spec::model::{GitopsEngine, IngressType};
use serde_json::Value;
use tokio::time::Instant;

/// What the tree needs from the cluster.
#[derive(Debug, Clone)]
pub struct Needs {
    /// The GitOps engine.
    pub engine: GitopsEngine,
    /// Each enabled shared cache: the tenant and its StorageClass (empty: the default class).
    pub shared_caches: Vec<(String, String)>,
    /// The ingress type.
    pub ingress: IngressType,
}

/// The CRDs each engine must serve, as its upstream install creates them.
const FLUX_CRDS: &[&str] = &[
    "gitrepositories.source.toolkit.fluxcd.io",
    "helmrepositories.source.toolkit.fluxcd.io",
    "ocirepositories.source.toolkit.fluxcd.io",
    "kustomizations.kustomize.toolkit.fluxcd.io",
    "helmreleases.helm.toolkit.fluxcd.io",
];
const ARGOCD_CRDS: &[&str] = &["applications.argoproj.io", "appprojects.argoproj.io"];

/// Provisioners whose volumes are ReadWriteOnce only, with what they are.
const READ_WRITE_ONCE: &[(&str, &str)] = &[
    ("ebs.csi.aws.com", "Amazon EBS"),
    ("kubernetes.io/aws-ebs", "Amazon EBS"),
    ("pd.csi.storage.gke.io", "a GCE persistent disk"),
    ("kubernetes.io/gce-pd", "a GCE persistent disk"),
    ("disk.csi.azure.com", "Azure Disk"),
    ("kubernetes.io/azure-disk", "Azure Disk"),
    ("com.tencent.cloud.csi.cbs", "Tencent Cloud block storage"),
    ("dobs.csi.digitalocean.com", "DigitalOcean block storage"),
    ("rancher.io/local-path", "local-path-provisioner's node-local volumes"),
    ("openebs.io/local", "OpenEBS node-local volumes"),
    ("rook-ceph.rbd.csi.ceph.com", "Ceph RBD block volumes"),
    ("kubernetes.io/no-provisioner", "statically provisioned local volumes"),
];

/// The annotation that marks the default StorageClass.
const DEFAULT_CLASS: &str = "storageclass.kubernetes.io/is-default-class";

/// Every prerequisite the cluster lacks, one sentence each (empty: none).
///
/// # Errors
///
/// The API server's answer when a read fails.
pub async fn missing(target: &Target, needs: &Needs, deadline: Instant) -> Result<Vec<String>, Cause> {
    let mut out = Vec::new();
    engine(target, needs.engine, deadline, &mut out).await?;
    if !needs.shared_caches.is_empty() {
        let classes = target.list("storage.k8s.io/v1", "StorageClass", deadline).await?;
        for (tenant, class) in &needs.shared_caches {
            out.extend(shared_cache(&classes, tenant, class, needs.ingress));
        }
    }
    let nodes = target.list("v1", "Node", deadline).await?;
    out.extend(ingress(&nodes, needs.ingress));
    Ok(out)
}

async fn engine(target: &Target, engine: GitopsEngine, deadline: Instant, out: &mut Vec<String>) -> Result<(), Cause> {
    let (crds, namespace, name, install) = match engine {
        GitopsEngine::Flux => (FLUX_CRDS, FLUX_NAMESPACE, "Flux", "`flux install` or `flux bootstrap`"),
        GitopsEngine::Argocd => (ARGOCD_CRDS, ARGOCD_NAMESPACE, "Argo CD", "Argo CD's install manifest or Helm chart"),
    };
    let mut absent = Vec::new();
    for crd in crds {
        let reference = ObjectId::new("apiextensions.k8s.io/v1", "CustomResourceDefinition", None, crd);
        if target.get(&reference, deadline).await?.is_none() {
            absent.push(format!("`{crd}`"));
        }
    }
    if !absent.is_empty() {
        out.push(format!("{name} is not installed: CustomResourceDefinition {} missing (install it with {install})", absent.join(", ")));
    }
    let reference = ObjectId::new("v1", "Namespace", None, namespace);
    if target.get(&reference, deadline).await?.is_none() {
        out.push(format!("{name} is not installed: no Namespace `{namespace}` (install it with {install})"));
    }
    Ok(())
}

/// The StorageClass a shared cache gets, and why it cannot serve ReadWriteMany, if it cannot.
fn shared_cache(classes: &[Value], tenant: &str, class: &str, ingress: IngressType) -> Option<String> {
    let name = |c: &Value| c.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("").to_owned();
    let found = if class.is_empty() {
        let default = classes.iter().find(|c| {
            c.pointer(&format!("/metadata/annotations/{}", DEFAULT_CLASS.replace('/', "~1"))).and_then(Value::as_str) == Some("true")
        });
        match default {
            Some(c) => c,
            None => {
                return Some(format!(
                    "tenant `{tenant}`: the shared cache has no `storageClass` and the cluster has no default StorageClass, so its claim is never bound: create a ReadWriteMany class (NFS, CephFS, EFS, Azure Files, Tencent CFS) and name it in `spec.sharedCache.storageClass`"
                ));
            }
        }
    } else {
        match classes.iter().find(|c| name(c) == class) {
            Some(c) => c,
            None => {
                return Some(format!(
                    "tenant `{tenant}`: StorageClass `{class}` (`spec.sharedCache.storageClass`) does not exist, so the shared cache's claim is never bound: create it (a ReadWriteMany class: NFS, CephFS, EFS, Azure Files, Tencent CFS)"
                ));
            }
        }
    };
    let provisioner = found.get("provisioner").and_then(Value::as_str).unwrap_or("");
    // NB: Docker Desktop's `hostpath` class serves every access mode on its single node.
    if ingress == IngressType::DockerDesktop && provisioner == "docker.io/hostpath" {
        return None;
    }
    READ_WRITE_ONCE.iter().find(|(p, _)| *p == provisioner).map(|(_, what)| {
        format!(
            "tenant `{tenant}`: StorageClass `{}` (provisioner `{provisioner}`, {what}) serves ReadWriteOnce only, but the shared cache is mounted ReadWriteMany by every server's workers: name a ReadWriteMany class in `spec.sharedCache.storageClass`",
            name(found)
        )
    })
}

/// Whether the nodes can carry the ingress type.
fn ingress(nodes: &[Value], ingress: IngressType) -> Option<String> {
    match ingress {
        IngressType::Nodeport => None,
        IngressType::TkeClb => {
            let tke =
                nodes.iter().any(|n| n.pointer("/spec/providerID").and_then(Value::as_str).is_some_and(|id| id.starts_with("qcloud://")));
            (!tke).then(|| "ingress type `tke-clb` needs a Tencent Kubernetes Engine cluster (its CLB load balancers), but no node has a `qcloud://` provider ID: use `nodeport` elsewhere".to_owned())
        }
        IngressType::DockerDesktop => {
            let desktop = nodes.iter().any(|n| n.pointer("/metadata/name").and_then(Value::as_str) == Some("docker-desktop"));
            (!desktop).then(|| "ingress type `docker-desktop` needs Docker Desktop's Kubernetes (its node `docker-desktop` and localhost load balancer), but no node is named `docker-desktop`: use `nodeport` elsewhere".to_owned())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn class(name: &str, provisioner: &str, default: bool) -> Value {
        let mut c = json!({"metadata": {"name": name}, "provisioner": provisioner});
        if default {
            c["metadata"]["annotations"] = json!({DEFAULT_CLASS: "true"});
        }
        c
    }

    #[test]
    fn a_shared_cache_needs_an_existing_class_that_is_not_read_write_once() {
        let classes = [class("gp3", "ebs.csi.aws.com", true), class("nfs-client", "k8s-sigs.io/nfs-subdir-external-provisioner", false)];
        assert_eq!(shared_cache(&classes, "acme", "nfs-client", IngressType::Nodeport), None);
        let default = shared_cache(&classes, "acme", "", IngressType::Nodeport).expect("gp3 is RWO");
        assert!(default.contains("StorageClass `gp3` (provisioner `ebs.csi.aws.com`, Amazon EBS) serves ReadWriteOnce only"), "{default}");
        let absent = shared_cache(&classes, "acme", "cephfs", IngressType::Nodeport).expect("absent");
        assert!(absent.starts_with("tenant `acme`: StorageClass `cephfs` (`spec.sharedCache.storageClass`) does not exist"), "{absent}");
        assert!(shared_cache(&[], "acme", "", IngressType::Nodeport).expect("no default").contains("no default StorageClass"));
    }

    #[test]
    fn ingress_types_need_their_nodes() {
        let tke = json!({"metadata": {"name": "10.0.0.1"}, "spec": {"providerID": "qcloud:///800002/ins-abc"}});
        let desktop = json!({"metadata": {"name": "docker-desktop"}, "spec": {}});
        assert_eq!(ingress(std::slice::from_ref(&tke), IngressType::TkeClb), None);
        assert!(ingress(std::slice::from_ref(&desktop), IngressType::TkeClb).is_some());
        assert_eq!(ingress(std::slice::from_ref(&desktop), IngressType::DockerDesktop), None);
        assert!(ingress(&[tke], IngressType::DockerDesktop).is_some());
        assert_eq!(ingress(&[], IngressType::Nodeport), None);
    }
}
