//! The output tree: GitOps entry points, sealed Secrets, `kustomization.yaml`
//! files and `plan.json`, as bytes by path. Pure: the previous tree and the RNG come in.

use super::check::Scope;
use super::cluster::{ARGOCD_NAMESPACE, FLUX_NAMESPACE};
use super::{Component, Context, RenderedCluster, Resource, labels};
use crate::secrets::PlainSecret;
use crate::secrets::fingerprint::FingerprintKey;
use crate::secrets::seal::{Sealer, seal};
use crate::spec::Object;
use crate::spec::model::{ClusterSpec, GitopsEngine};
use rand::rngs::StdRng;
use rand::{CryptoRng, SeedableRng};
use rayon::prelude::*;
use serde_json::{Value as Json, json};
use std::collections::{BTreeMap, BTreeSet};

/// Errors assembling the tree.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A Secret could not be sealed.
    #[error("`Secret/{namespace}/{name}` in component `{component}`: sealing failed")]
    Seal {
        /// The component.
        component: String,
        /// Secret namespace.
        namespace: String,
        /// Secret name.
        name: String,
        /// Why.
        #[source]
        source: crate::secrets::seal::Error,
    },
    /// An object could not be serialized.
    #[error("`{0}`: cannot write as YAML")]
    Yaml(String, #[source] serde_saphyr::ser::Error),
    /// A Secret to write, but no way to seal it.
    #[error("`Secret/{namespace}/{name}` in component `{component}`: no sealing configured; refusing to write a plaintext Secret")]
    NoSealer {
        /// The component.
        component: String,
        /// Secret namespace.
        namespace: String,
        /// Secret name.
        name: String,
    },
    /// Two objects of one component map to the same file.
    #[error("component `{component}`: `{first}` and `{second}` would both be written to `{file}`")]
    FileClash {
        /// The component.
        component: String,
        /// The file.
        file: String,
        /// One object.
        first: String,
        /// The other.
        second: String,
    },
    /// Objects of one cluster's tree (its components and `gitops/`) that share an identity:
    /// API group, kind, namespace and name. The apiserver holds one object per identity
    /// whatever its version, so the second would overwrite the first.
    #[error("{}", same_object_text(.0))]
    SameObject(Vec<SameObject>),
}

/// Two files of one tree that hold the same object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SameObject {
    /// The identity, `group/Kind/namespace/name` (`Kind/…` in the core group).
    pub object: String,
    /// The file written first (in component order, `gitops/` last), relative to the output root.
    pub first: String,
    /// The other file.
    pub second: String,
}

fn same_object_text(clashes: &[SameObject]) -> String {
    let lines: Vec<String> = clashes
        .iter()
        .map(|c| {
            format!(
                "`{}` is written twice: `{}` and `{}` (one object per API group, kind, namespace and name)",
                c.object, c.first, c.second
            )
        })
        .collect();
    lines.join("\n")
}

/// The identity of an object on the apiserver: API group (the part of `apiVersion` before
/// `/`, empty for the core group; the version does not count), kind, namespace, name.
fn identity(api_version: &str, kind: &str, namespace: Option<&str>, name: &str) -> String {
    let group = api_version.rsplit_once('/').map_or("", |(group, _)| group);
    let namespace = namespace.map(|n| format!("{n}/")).unwrap_or_default();
    if group.is_empty() { format!("{kind}/{namespace}{name}") } else { format!("{group}/{kind}/{namespace}{name}") }
}

/// Every pair of files of a tree that hold one object, from `(identity, file)` in write order.
fn same_objects(objects: impl IntoIterator<Item = (String, String)>) -> Vec<SameObject> {
    let mut seen: BTreeMap<String, String> = BTreeMap::new();
    let mut clashes = Vec::new();
    for (object, file) in objects {
        match seen.get(&object) {
            Some(first) => clashes.push(SameObject { object, first: first.clone(), second: file }),
            None => {
                seen.insert(object, file);
            }
        }
    }
    clashes
}

/// Path of a cluster's directory inside the output directory.
#[must_use]
pub fn cluster_dir(cluster: &str) -> String {
    format!("clusters/{cluster}")
}

/// The name of a component's GitOps object: `<cluster>-<component path with dashes>`, unique
/// across clusters that share one Argo CD.
#[must_use]
pub fn gitops_name(cluster: &str, component: &Component) -> String {
    let tail = component
        .id
        .strip_prefix("cluster/")
        .unwrap_or(&component.id)
        .replace("namespaces/", "")
        .replace("/servers/", "/")
        .replace('/', "-");
    format!("{cluster}-{tail}")
}

/// Renders the GitOps entry points of a cluster: one Flux Kustomization or Argo CD Application
/// per component.
///
/// The shared values (which grow with the platform: one route and one host per server) are
/// converted to a template value once and merged lazily under each component's own values, so
/// a component costs the same however large the platform is; components render in parallel.
pub(crate) fn gitops_objects(
    context: &mut Context<'_>,
    cluster: &Object<ClusterSpec>,
    components: &[Component],
    values: &Json,
    values_digest: &[u8; 32],
) -> Option<Vec<Resource>> {
    let name = cluster.name();
    let (template, namespace) = match cluster.spec.gitops.engine {
        GitopsEngine::Flux => ("gitops/flux.yaml", FLUX_NAMESPACE),
        GitopsEngine::Argocd => ("gitops/argocd.yaml", ARGOCD_NAMESPACE),
    };
    let scope = Scope {
        component: "gitops".to_owned(),
        cluster: name.to_owned(),
        namespaces: std::iter::once(namespace.to_owned()).collect(),
        cluster_kinds: BTreeSet::new(),
    };
    let origin = cluster.locate("spec.gitops");
    let names: BTreeMap<&str, String> = components.iter().map(|c| (c.id.as_str(), gitops_name(name, c))).collect();
    let base = minijinja::Value::from(minijinja::value::Serde(values));
    let labels = labels(name, "gitops");
    let (env, memo) = (context.env, context.memo);
    let dir = format!("{}/gitops", cluster_dir(name));
    let done: Vec<super::Done> = components
        .par_iter()
        .map(|component| {
            let own = json!({
                "labels": labels,
                "component": {
                    "id": component.id,
                    "name": names[component.id.as_str()],
                    "path": format!("./{}/components/{}", cluster_dir(name), component.id),
                    "depends_on": component.depends_on.iter().map(|d| names.get(d.as_str()).cloned().unwrap_or_default()).collect::<Vec<_>>(),
                    "depth": component.depth,
                    "timeout": component.timeout,
                    // A component of PersistentVolumeClaims only is not waited for: with a
                    // `WaitForFirstConsumer` class its claims stay Pending until a consumer
                    // is scheduled, and the consumers wait for this component.
                    "wait": !component.objects.iter().all(|o| o.kind == "PersistentVolumeClaim"),
                },
            });
            let key = format!("{name}/gitops/{}", component.id);
            super::render_unit(env, memo, key, &dir, template, &own, Some((&base, values_digest)), &scope, origin)
        })
        .collect();
    let mut out = Vec::new();
    let mut failed = false;
    for done in done {
        match context.finish(done) {
            Some(objects) => out.extend(objects),
            None => failed = true,
        }
    }
    if cluster.spec.gitops.engine == GitopsEngine::Argocd {
        out.push(argocd_health_check(name));
    }
    (!failed).then_some(out)
}

/// Argo CD's health check for `argoproj.io/Application`, which Argo CD does not ship: without
/// it an app of apps is Healthy as soon as its children exist, and sync waves do not wait for
/// a child to be healthy. It is one key of `argocd-cm`, applied server-side so that only that
/// key (and our labels) is ours; Argo CD never prunes or deletes the ConfigMap for us.
fn argocd_health_check(cluster: &str) -> Resource {
    const LUA: &str = "health = {status = \"Progressing\", message = \"\"}\n\
        if obj.status ~= nil and obj.status.health ~= nil then\n\
        \x20 health.status = obj.status.health.status\n\
        \x20 if obj.status.health.message ~= nil then health.message = obj.status.health.message end\n\
        end\n\
        return health\n";
    let mut labels = labels(cluster, "gitops");
    labels["app.kubernetes.io/part-of"] = json!("argocd");
    labels["app.kubernetes.io/name"] = json!("argocd-cm");
    let body = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "argocd-cm",
            "namespace": ARGOCD_NAMESPACE,
            "labels": labels,
            "annotations": {
                "argocd.argoproj.io/sync-wave": "-1",
                "argocd.argoproj.io/sync-options": "ServerSideApply=true,Prune=false,Delete=false",
            },
        },
        "data": {"resource.customizations.health.argoproj.io_Application": LUA},
    });
    Resource::from_json(&body).ok().flatten().expect("a fixed ConfigMap is an object")
}

/// Everything the tree needs besides the rendered cluster.
pub struct SealOptions<'a> {
    /// How Secrets are sealed; `None` when the cluster has no sealing configured (then any
    /// Secret is an error: nothing is ever written in plaintext).
    pub sealer: Option<&'a Sealer>,
    /// Key for the fingerprints that allow reuse; `None` reseals everything.
    pub fingerprint_key: Option<&'a FingerprintKey>,
}

/// Builds the files of one cluster, sealing its Secrets. `previous` returns the object
/// previously written at a path (relative to the output directory), for zero-diff reuse.
///
/// Components are serialized and their Secrets sealed in parallel. `previous` is asked and
/// `rng` is drawn from in component order first (one 32-byte seed per Secret, for an RNG of
/// its own), so a seeded `rng` still gives the same bytes.
///
/// # Errors
///
/// A Secret that cannot be sealed, an object that cannot be serialized, two objects that
/// would share a file (the first in component order), objects anywhere in the tree (`gitops/`
/// included) that share an identity ([`Error::SameObject`], every pair).
pub fn build<R: CryptoRng + ?Sized>(
    cluster: RenderedCluster,
    options: &SealOptions<'_>,
    previous: &dyn Fn(&str) -> Option<Json>,
    rng: &mut R,
) -> Result<BTreeMap<String, Vec<u8>>, Error> {
    let root = cluster_dir(&cluster.name);
    // Sequential: `previous` may read a Git tree (not shareable across threads) and the seeds
    // come from one stream, in order.
    let inputs: Vec<Vec<SealInput>> = cluster
        .components
        .iter()
        .map(|component| {
            let Some(sealer) = options.sealer else { return Vec::new() };
            let dir = format!("{root}/components/{}", component.id);
            component
                .secrets
                .iter()
                .map(|secret| {
                    let file = sealed_file_name(sealer, secret);
                    let old = previous(&format!("{dir}/{file}"));
                    let mut seed = [0u8; 32];
                    rng.fill_bytes(&mut seed);
                    SealInput { file, old, seed }
                })
                .collect()
        })
        .collect();
    // NB: the cluster is consumed: each object's text moves into its file instead of being
    // copied (a large platform would hold its YAML twice).
    let RenderedCluster { name: cluster_name, components, gitops, .. } = cluster;
    let built: Vec<Result<BuiltComponent, Error>> = components
        .into_par_iter()
        .zip(inputs.into_par_iter())
        .map(|(component, inputs)| build_component(component, options, inputs))
        .collect();
    let mut files = BTreeMap::new();
    let mut plan = Vec::with_capacity(built.len());
    for built in built {
        let built = built?;
        let component = &built.component;
        let dir = format!("{root}/components/{}", component.id);
        let names: Vec<&String> = built.entries.keys().collect();
        files.insert(format!("{dir}/kustomization.yaml"), kustomization(&names).into_bytes());
        for (file, (_, bytes)) in built.entries {
            files.insert(format!("{dir}/{file}"), bytes);
        }
        plan.push(PlanComponent {
            path: format!("components/{}", component.id),
            id: built.component.id,
            depends_on: built.component.depends_on,
            objects: built.plan_objects,
        });
    }
    let mut gitops_files = Vec::new();
    let mut gitops_objects = Vec::with_capacity(gitops.len());
    for resource in gitops {
        let file = resource.file_name();
        let path = format!("{root}/gitops/{file}");
        gitops_objects.push((identity(&resource.api_version, &resource.kind, resource.namespace.as_deref(), &resource.name), path.clone()));
        files.insert(path, resource.text.into_bytes());
        gitops_files.push(file);
    }
    // The integrity gate: the whole tree of the cluster is known here, the same for `render`,
    // `commit`, `diff` and `reconcile`.
    let component_objects = plan.iter().flat_map(|component| {
        component.objects.iter().map(|o| (identity(&o.api_version, &o.kind, o.namespace.as_deref(), &o.name), format!("{root}/{}", o.file)))
    });
    let clashes = same_objects(component_objects.chain(gitops_objects));
    if !clashes.is_empty() {
        return Err(Error::SameObject(clashes));
    }
    gitops_files.sort();
    let gitops_refs: Vec<&String> = gitops_files.iter().collect();
    files.insert(format!("{root}/gitops/kustomization.yaml"), kustomization(&gitops_refs).into_bytes());
    files.insert(format!("{root}/kustomization.yaml"), kustomization(&[&"gitops".to_owned()]).into_bytes());
    // NB: written from borrowed structs, not a `serde_json::Value`: for a large platform the
    // value was the largest thing in memory.
    let plan = Plan { cluster: &cluster_name, components: plan };
    let mut plan_text = serde_json::to_string_pretty(&plan).unwrap_or_default();
    plan_text.push('\n');
    files.insert(format!("{root}/plan.json"), plan_text.into_bytes());
    Ok(files)
}

/// What one Secret is sealed with: its file, the object previously written there, the seed of
/// its RNG.
struct SealInput {
    file: String,
    old: Option<Json>,
    seed: [u8; 32],
}

/// One component's files (by file name, with the object id for clash messages) and plan
/// entries.
struct BuiltComponent {
    component: Component,
    entries: BTreeMap<String, (String, Vec<u8>)>,
    plan_objects: Vec<PlanObject>,
}

/// `plan.json`: every component's directory, dependencies and objects.
#[derive(serde::Serialize)]
struct Plan<'a> {
    cluster: &'a str,
    components: Vec<PlanComponent>,
}

#[derive(serde::Serialize)]
struct PlanComponent {
    id: String,
    path: String,
    #[serde(rename = "dependsOn")]
    depends_on: Vec<String>,
    objects: Vec<PlanObject>,
}

#[derive(serde::Serialize)]
struct PlanObject {
    #[serde(rename = "apiVersion")]
    api_version: String,
    kind: String,
    namespace: Option<String>,
    name: String,
    file: String,
}

fn sealed_file_name(sealer: &Sealer, secret: &PlainSecret) -> String {
    let target = Resource {
        api_version: String::new(),
        kind: sealed_kind(sealer).to_owned(),
        namespace: Some(secret.namespace.clone()),
        name: secret.name.clone(),
        text: String::new(),
    };
    target.file_name()
}

/// Serializes one component's objects and seals its Secrets (`inputs`, one per Secret, when a
/// sealer is configured).
fn build_component(mut component: Component, options: &SealOptions<'_>, inputs: Vec<SealInput>) -> Result<BuiltComponent, Error> {
    let mut entries: BTreeMap<String, (String, Vec<u8>)> = BTreeMap::new();
    let mut plan_objects = Vec::with_capacity(component.objects.len() + component.secrets.len());
    let objects = std::mem::take(&mut component.objects);
    // NB: the plaintext is dropped (and zeroized) here, once sealed.
    let secrets = std::mem::take(&mut component.secrets);
    let mut add = |resource: &Resource, file: String, bytes: Vec<u8>| -> Result<(), Error> {
        if let Some((first, _)) = entries.get(&file) {
            return Err(Error::FileClash { component: component.id.clone(), file, first: first.clone(), second: resource.id() });
        }
        plan_objects.push(plan_object(resource, format!("components/{}/{file}", component.id)));
        entries.insert(file, (resource.id(), bytes));
        Ok(())
    };
    for mut resource in objects {
        let text = std::mem::take(&mut resource.text);
        add(&resource, resource.file_name(), text.into_bytes())?;
    }
    let mut inputs = inputs.into_iter();
    for secret in &secrets {
        let (Some(sealer), Some(SealInput { file, old, seed })) = (options.sealer, inputs.next()) else {
            return Err(Error::NoSealer {
                component: component.id.clone(),
                namespace: secret.namespace.clone(),
                name: secret.name.clone(),
            });
        };
        let mut rng = StdRng::from_seed(seed);
        let body = seal(secret, old.as_ref(), sealer, options.fingerprint_key, &mut rng).map_err(|source| Error::Seal {
            component: component.id.clone(),
            namespace: secret.namespace.clone(),
            name: secret.name.clone(),
            source,
        })?;
        let id = || format!("Secret/{}/{}", secret.namespace, secret.name);
        let Some(resource) = Resource::from_json(&body).map_err(|e| Error::Yaml(id(), e))? else { continue };
        let bytes = resource.text.as_bytes().to_vec();
        add(&resource, file, bytes)?;
    }
    Ok(BuiltComponent { component, entries, plan_objects })
}

fn sealed_kind(sealer: &Sealer) -> &'static str {
    match sealer {
        Sealer::SealedSecrets { .. } => "SealedSecret",
        Sealer::SopsAge { .. } => "Secret",
    }
}

fn plan_object(resource: &Resource, file: String) -> PlanObject {
    PlanObject {
        api_version: resource.api_version.clone(),
        kind: resource.kind.clone(),
        namespace: resource.namespace.clone(),
        name: resource.name.clone(),
        file,
    }
}

/// A `kustomization.yaml` listing `resources` in order.
fn kustomization(resources: &[&String]) -> String {
    let mut text = String::from("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n");
    for resource in resources {
        // NB: file names are `<kind>-<name>.yaml` with DNS-1123 names: plain YAML scalars.
        text.push_str(&format!("  - {resource}\n"));
    }
    if resources.is_empty() {
        text = String::from("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: []\n");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::{Options, render};
    use crate::secrets::MasterKey;
    use crate::secrets::resolve::MapInputs;
    use crate::secrets::sealed::Certificate;
    use crate::spec::{Bundle, load};
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    const SPEC: &str = "apiVersion: tfrs.turingfocus.cn/v1alpha1\nkind: TFRCluster\nmetadata: {name: lab}\nspec:\n  ingress: {domain: lab.example.com}\n  imageRegistry: {username: {value: u}, password: {generate: {}}}\n  sealing: {certFile: cert.pem}\n";

    fn tree(seed: u64, previous: &dyn Fn(&str) -> Option<Json>) -> BTreeMap<String, Vec<u8>> {
        let mut bundle = Bundle::with_builtins();
        bundle.add_spec("lab/spec.yaml", SPEC);
        let spec = load(&bundle).spec.expect("valid spec");
        let master = MasterKey::from_bytes([7; 32]);
        let rendered = render(&spec, &bundle, &Options::default(), &MapInputs::default(), Some(&master)).expect("renders");
        let certificate =
            Certificate::from_pem(include_str!("../../fixtures/demo/keys/sealed-secrets.pem"), 1_800_000_000).expect("demo cert");
        let sealer = Sealer::SealedSecrets { certificate };
        let key = master.fingerprint_key();
        let options = SealOptions { sealer: Some(&sealer), fingerprint_key: Some(&key) };
        build(rendered.clusters[0].clone(), &options, previous, &mut StdRng::seed_from_u64(seed)).expect("builds")
    }

    #[test]
    fn same_inputs_and_seed_give_the_same_bytes() {
        assert_eq!(tree(1, &|_| None), tree(1, &|_| None));
        assert_ne!(tree(1, &|_| None), tree(2, &|_| None), "the seed reaches the sealer");
    }

    #[test]
    fn the_previous_tree_keeps_its_ciphertext() {
        let first = tree(1, &|_| None);
        let previous = |path: &str| crate::manifest::read_object(first.get(path)?);
        assert_eq!(first, tree(2, &previous), "a different RNG, yet no byte changes");
        let plan: Json = serde_json::from_slice(&first["clusters/lab/plan.json"]).unwrap();
        let registry = plan["components"].as_array().unwrap().iter().find(|c| c["id"] == "cluster/image-registry").unwrap();
        assert!(registry["objects"].as_array().unwrap().iter().any(|o| o["kind"] == "SealedSecret"));
    }

    #[test]
    fn secrets_without_a_sealer_are_refused() {
        let mut bundle = Bundle::with_builtins();
        bundle.add_spec("lab/spec.yaml", SPEC);
        let spec = load(&bundle).spec.expect("valid spec");
        let master = MasterKey::from_bytes([7; 32]);
        let rendered = render(&spec, &bundle, &Options::default(), &MapInputs::default(), Some(&master)).expect("renders");
        let options = SealOptions { sealer: None, fingerprint_key: None };
        let error = build(rendered.clusters[0].clone(), &options, &|_| None, &mut StdRng::seed_from_u64(1)).unwrap_err();
        assert!(error.to_string().contains("refusing to write a plaintext Secret"), "{error}");
    }

    fn object(api_version: &str, kind: &str, namespace: Option<&str>, name: &str) -> Resource {
        let mut body = json!({"apiVersion": api_version, "kind": kind, "metadata": {"name": name}});
        if let Some(namespace) = namespace {
            body["metadata"]["namespace"] = json!(namespace);
        }
        Resource::from_json(&body).unwrap().unwrap()
    }

    fn cluster_of(components: Vec<(&str, Vec<Resource>)>, gitops: Vec<Resource>) -> RenderedCluster {
        RenderedCluster {
            name: "c".into(),
            engine: GitopsEngine::Flux,
            backend: crate::spec::model::SealingBackend::SealedSecrets,
            components: components
                .into_iter()
                .map(|(id, objects)| Component {
                    id: id.into(),
                    name: format!("c-{id}"),
                    depends_on: Vec::new(),
                    depth: 0,
                    objects,
                    secrets: Vec::new(),
                    timeout: "10m".into(),
                })
                .collect(),
            graph: crate::render::Graph::default(),
            gitops,
        }
    }

    fn build_plain(cluster: RenderedCluster) -> Result<BTreeMap<String, Vec<u8>>, Error> {
        build(cluster, &SealOptions { sealer: None, fingerprint_key: None }, &|_| None, &mut StdRng::seed_from_u64(1))
    }

    #[test]
    fn two_files_holding_one_object_are_refused_naming_both() {
        // One API group at two versions is one object on the apiserver.
        let cluster = cluster_of(
            vec![
                ("a", vec![object("apps/v1", "Deployment", Some("x"), "y"), object("v1", "ConfigMap", Some("x"), "y")]),
                ("b", vec![object("apps/v1beta1", "Deployment", Some("x"), "y")]),
            ],
            Vec::new(),
        );
        let Err(Error::SameObject(clashes)) = build_plain(cluster) else { panic!("a clash must be refused") };
        assert_eq!(
            clashes,
            [SameObject {
                object: "apps/Deployment/x/y".into(),
                first: "clusters/c/components/a/deployment-y.yaml".into(),
                second: "clusters/c/components/b/deployment-y.yaml".into(),
            }]
        );
        // `gitops/` is part of the tree; the core group has no name.
        let cluster = cluster_of(
            vec![("a", vec![object("v1", "ConfigMap", Some("flux-system"), "c-a")])],
            vec![object("v1", "ConfigMap", Some("flux-system"), "c-a")],
        );
        let error = build_plain(cluster).unwrap_err().to_string();
        assert!(error.contains("`ConfigMap/flux-system/c-a`"), "{error}");
        assert!(error.contains("`clusters/c/components/a/configmap-c-a.yaml` and `clusters/c/gitops/configmap-c-a.yaml`"), "{error}");
    }

    #[test]
    fn objects_that_differ_in_group_kind_namespace_or_name_are_distinct() {
        let cluster = cluster_of(
            vec![
                ("a", vec![object("apps/v1", "Deployment", Some("x"), "y"), object("v1", "Namespace", None, "y")]),
                ("b", vec![object("example.com/v1", "Deployment", Some("x"), "y"), object("apps/v1", "StatefulSet", Some("x"), "y")]),
                ("c", vec![object("apps/v1", "Deployment", Some("z"), "y"), object("apps/v1", "Deployment", Some("x"), "w")]),
            ],
            vec![object("v1", "ConfigMap", Some("x"), "y")],
        );
        let files = build_plain(cluster).expect("no two objects share an identity");
        assert!(files.contains_key("clusters/c/gitops/configmap-y.yaml"));
    }

    #[test]
    fn a_missing_master_key_names_the_field() {
        let mut bundle = Bundle::with_builtins();
        bundle.add_spec("lab/spec.yaml", SPEC);
        let spec = load(&bundle).spec.expect("valid spec");
        let problems = render(&spec, &bundle, &Options::default(), &MapInputs::default(), None).unwrap_err();
        assert!(problems.environment, "a missing master key is the environment's problem");
        let errors = problems.diagnostics;
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].path, "spec.imageRegistry.password");
        assert!(errors[0].message.contains("TFRS_MASTER_KEY"), "{}", errors[0].message);
    }
}
