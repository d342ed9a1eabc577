//! The output layout, both ways (a leaf module: the render, the tree, the input reader and
//! reconcile all depend on it, it depends on nothing): where each part of a cluster is written, and what a path of a
//! rendered tree belongs to. Every other module builds and reads paths through these functions.
//!
//! ```text
//! clusters/<cluster>/
//!   kustomization.yaml            -> gitops/
//!   plan.json                     components, dependencies, objects (see `tree::plan`)
//!   gitops/                       one Flux Kustomization or Argo CD Application per component
//!   components/<component id>/    the component's objects, `<kind>-<name>.yaml`, and its
//!                                 `kustomization.yaml`
//! ```

use std::collections::BTreeMap;

/// The marker file at the root of every tree `tfrs render` writes (the input reader skips such
/// directories; the writer replaces only directories that have it).
pub const RENDERED_MARKER: &str = ".tfrs-output";

/// The directory holding every cluster.
pub const CLUSTERS: &str = "clusters";
/// The name of every `kustomization.yaml`.
pub const KUSTOMIZATION: &str = "kustomization.yaml";
/// The name of a cluster's plan.
pub const PLAN: &str = "plan.json";

/// A cluster's directory: `clusters/<cluster>`.
#[must_use]
pub fn cluster_dir(cluster: &str) -> String {
    format!("{CLUSTERS}/{cluster}")
}

/// A component's directory relative to its cluster's directory: `components/<id>`.
#[must_use]
pub fn component_path(id: &str) -> String {
    format!("components/{id}")
}

/// A component's directory: `clusters/<cluster>/components/<id>`.
#[must_use]
pub fn component_dir(cluster: &str, id: &str) -> String {
    format!("{}/{}", cluster_dir(cluster), component_path(id))
}

/// A cluster's GitOps entry points: `clusters/<cluster>/gitops`.
#[must_use]
pub fn gitops_dir(cluster: &str) -> String {
    format!("{}/gitops", cluster_dir(cluster))
}

/// A cluster's plan: `clusters/<cluster>/plan.json`.
#[must_use]
pub fn plan_path(cluster: &str) -> String {
    format!("{}/{PLAN}", cluster_dir(cluster))
}

/// The cluster a path of the tree belongs to (`clusters/<cluster>/…`).
#[must_use]
pub fn cluster_of(path: &str) -> Option<&str> {
    let rest = path.strip_prefix(CLUSTERS)?.strip_prefix('/')?;
    let (cluster, tail) = rest.split_once('/')?;
    (!cluster.is_empty() && !tail.is_empty()).then_some(cluster)
}

/// The cluster directories (`clusters/<cluster>`) that `files` fill, in order.
#[must_use]
pub fn cluster_dirs(files: &BTreeMap<String, Vec<u8>>) -> Vec<String> {
    let mut dirs: Vec<String> = files.keys().filter_map(|path| cluster_of(path)).map(cluster_dir).collect();
    dirs.dedup();
    dirs
}

/// What a path belongs to: `(cluster, component)`. The component is its id for files under
/// `components/`, the directory inside the cluster otherwise (`gitops`), `(root)` for the
/// cluster's own files; outside `clusters/`, the cluster is empty and the component is the
/// file's directory.
#[must_use]
pub fn locate(path: &str) -> (String, String) {
    let parts: Vec<&str> = path.split('/').collect();
    if parts.len() >= 3 && parts[0] == CLUSTERS {
        let cluster = parts[1].to_owned();
        let rest = &parts[2..];
        let component = if rest.len() >= 3 && rest[0] == "components" {
            rest[1..rest.len() - 1].join("/")
        } else if rest.len() >= 2 {
            rest[..rest.len() - 1].join("/")
        } else {
            "(root)".to_owned()
        };
        return (cluster, component);
    }
    let directory = path.rsplit_once('/').map_or(".", |(d, _)| d);
    (String::new(), directory.to_owned())
}

/// Whether a path holds a sealed Secret (`sealedsecret-*.yaml` or a SOPS `secret-*.yaml`): the
/// files whose ciphertext a render may reuse.
#[must_use]
pub fn is_sealed_file(path: &str) -> bool {
    path.rsplit('/').next().is_some_and(|file| file.starts_with("sealedsecret-") || file.starts_with("secret-"))
}

/// A `kustomization.yaml` listing `resources` in order.
#[must_use]
pub fn kustomization<S: AsRef<str>>(resources: &[S]) -> String {
    if resources.is_empty() {
        return String::from("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: []\n");
    }
    let mut text = String::from("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n");
    for resource in resources {
        // NB: file names are `<kind>-<name>.yaml` with DNS-1123 names: plain YAML scalars.
        text.push_str(&format!("  - {}\n", resource.as_ref()));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_built_and_read_back() {
        let dir = component_dir("lab", "namespaces/acme/redis");
        assert_eq!(dir, "clusters/lab/components/namespaces/acme/redis");
        assert_eq!(locate(&format!("{dir}/statefulset-redis.yaml")), ("lab".into(), "namespaces/acme/redis".into()));
        assert_eq!(locate(&format!("{}/kustomization.yaml", gitops_dir("lab"))), ("lab".into(), "gitops".into()));
        assert_eq!(locate(&plan_path("lab")), ("lab".into(), "(root)".into()));
        assert_eq!(locate("README.md"), (String::new(), ".".into()));
        assert_eq!(cluster_of(&plan_path("lab")), Some("lab"));
        assert_eq!(cluster_of("clusters/lab"), None);
        let files: BTreeMap<String, Vec<u8>> =
            [(plan_path("a"), vec![]), (format!("{dir}/x.yaml"), vec![]), ("clusters/b/c/plan.json".into(), vec![])].into_iter().collect();
        assert_eq!(cluster_dirs(&files), ["clusters/a", "clusters/b", "clusters/lab"]);
        assert!(is_sealed_file("clusters/a/components/x/sealedsecret-y.yaml"));
        assert!(!is_sealed_file("clusters/a/components/x/configmap-secret-y.yaml"));
    }
}
