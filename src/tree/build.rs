//! Laying out one rendered cluster: each component's objects in its directory with a
//! `kustomization.yaml`, the GitOps entry points, the cluster's `kustomization.yaml` and its
//! plan, and the integrity gate over the whole cluster. The Secrets are left for the seal step
//! (`tree::seal`); their files, names and plan entries are known here. Pure.

use super::plan::{self, Plan};
use crate::layout::{self, kustomization};
use crate::object::{ContentId, ObjectId};
use crate::render::memo::{Entry, Memo};
use crate::render::{Component, RenderedCluster};
use crate::secrets::PlainSecret;
use crate::secrets::seal::Sealer;
use rayon::prelude::*;
use std::collections::BTreeMap;

/// Errors building the tree.
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

impl Error {
    /// Whether the templates made the tree inconsistent (two objects in one file or under one
    /// identity), rather than sealing or serialization failing.
    #[must_use]
    pub fn is_inconsistent(&self) -> bool {
        matches!(self, Error::SameObject(_) | Error::FileClash { .. })
    }
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

/// Every pair of files of a tree that hold one object, from `(object, directory, file)` (`count`
/// of them) in write order (the path is `<directory>/<file>`, or `file` without a directory; it is made only
/// for a clash).
fn same_objects<'a>(objects: impl IntoIterator<Item = (&'a ObjectId, Option<&'a str>, &'a str)>, count: usize) -> Vec<SameObject> {
    let path = |dir: Option<&str>, file: &str| dir.map_or_else(|| file.to_owned(), |dir| format!("{dir}/{file}"));
    // The server's key (group, kind, namespace, name) -> where it was first written.
    type Key<'a> = (&'a str, &'a str, Option<&'a str>, &'a str);
    // NB: sized once (a large cluster has tens of thousands of objects).
    let mut seen: rustc_hash::FxHashMap<Key<'_>, (Option<&str>, &str)> =
        rustc_hash::FxHashMap::with_capacity_and_hasher(count, rustc_hash::FxBuildHasher);
    let mut clashes = Vec::new();
    for (object, dir, file) in objects {
        let key = (object.group(), object.kind.as_str(), object.namespace(), object.name.as_str());
        match seen.get(&key) {
            Some(&(first_dir, first)) => {
                clashes.push(SameObject { object: object.server_key(), first: path(first_dir, first), second: path(dir, file) });
            }
            None => drop(seen.insert(key, (dir, file))),
        }
    }
    clashes
}

/// A Secret waiting to be sealed into `path`.
pub(super) struct Pending {
    /// The file, relative to the output root.
    pub(super) path: String,
    /// The component, for messages.
    pub(super) component: String,
    /// The plaintext (zeroized on drop).
    pub(super) secret: PlainSecret,
}

/// One cluster laid out: its files (all but the sealed Secrets and the kept ones), the files
/// the memo kept as they are (by content id), its plan and its Secrets.
pub(super) struct Laid {
    pub(super) files: Vec<(String, Vec<u8>)>,
    pub(super) kept: Vec<(String, ContentId)>,
    pub(super) plan: Plan,
    pub(super) pending: Vec<Pending>,
    /// The memo entries of the files the memo vouches for here: the sealed files given back
    /// with their namespace, and `plan.json`.
    pub(super) vouched: Vec<(String, Entry)>,
    /// With a memo, the digest of each of the plan's components ([`Plan::component_digests`]).
    pub(super) digests: Option<Vec<[u8; 32]>>,
}

/// Lays out one cluster. `sealer` names the Secrets' files and plan entries; without one, a
/// cluster with Secrets is refused (nothing is ever written in plaintext).
///
/// Components are laid out in parallel; each object's text moves into its file instead of being
/// copied (a large platform would hold its YAML twice).
///
/// # Errors
///
/// A Secret without a sealer, two objects that would share a file (the first in component
/// order), objects anywhere in the cluster (`gitops/` included) that share an identity
/// ([`Error::SameObject`], every pair).
///
/// A memo that renders only some namespaces ([`Memo::only`]) gives a part of the tree: its
/// components and their GitOps entries, without `plan.json` and the `kustomization.yaml` files
/// that list every component (the caller keeps those as they are).
pub(super) fn lay_out(cluster: RenderedCluster, sealer: Option<&Sealer>, memo: Option<&Memo<'_>>) -> Result<Laid, Error> {
    let whole = memo.is_none_or(|memo| memo.only.is_none());
    let RenderedCluster { name, components, gitops, .. } = cluster;
    let laid: Vec<Result<LaidComponent, Error>> =
        components.into_par_iter().map(|component| lay_out_component(&name, component, sealer)).collect();
    let mut files = Vec::new();
    let mut kept = Vec::new();
    let mut components = Vec::with_capacity(laid.len());
    let mut pending = Vec::new();
    let mut vouched = Vec::new();
    for laid in laid {
        let laid = laid?;
        files.extend(laid.files);
        kept.extend(laid.kept);
        pending.extend(laid.pending);
        vouched.extend(laid.vouched);
        components.push(laid.plan);
    }
    let gitops_dir = layout::gitops_dir(&name);
    let (mut gitops_files, gitops_objects) = lay_out_gitops(&gitops_dir, gitops, &mut files, &mut kept);
    // The integrity gate: the whole tree of the cluster is known here, the same for `render`,
    // `commit`, `diff` and `reconcile`.
    let root = layout::cluster_dir(&name);
    let plan = Plan { cluster: name, components };
    // NB: the plan's text (tens of MB for a large cluster) is made beside the check, unless the
    // memo vouches for the file written from an equal plan.
    let (clashes, (plan_entry, digests)) = rayon::join(
        || {
            let component_objects =
                plan.components.iter().flat_map(|c| c.objects.iter().map(|o| (&o.id, Some(root.as_str()), o.file.as_str())));
            let count = plan.components.iter().map(|c| c.objects.len()).sum::<usize>() + gitops_objects.len();
            same_objects(component_objects.chain(gitops_objects.iter().map(|(id, path)| (id, None, path.as_str()))), count)
        },
        || {
            let digests = memo.map(|_| plan.component_digests());
            let entry = whole.then(|| plan_file(&plan, memo.zip(digests.as_deref()), &mut files, &mut kept)).flatten();
            (entry, digests)
        },
    );
    if !clashes.is_empty() {
        return Err(Error::SameObject(clashes));
    }
    if whole {
        gitops_files.sort();
        files.push((format!("{gitops_dir}/{}", layout::KUSTOMIZATION), kustomization(&gitops_files).into_bytes()));
        files.push((format!("{root}/{}", layout::KUSTOMIZATION), kustomization(&["gitops"]).into_bytes()));
    }
    vouched.extend(plan_entry);
    Ok(Laid { files, kept, plan, pending, vouched, digests })
}

/// Lays out the GitOps entry points `gitops` in `gitops_dir` (their files to `files`, or to
/// `kept` when the memo kept them): their file names, and each object with its path.
fn lay_out_gitops(
    gitops_dir: &str,
    gitops: Vec<crate::render::Resource>,
    files: &mut Vec<(String, Vec<u8>)>,
    kept: &mut Vec<(String, ContentId)>,
) -> (Vec<String>, Vec<(ObjectId, String)>) {
    let mut gitops_files: Vec<String> = Vec::with_capacity(gitops.len());
    let mut gitops_objects: Vec<(ObjectId, String)> = Vec::with_capacity(gitops.len());
    for resource in gitops {
        let file = resource.id.file_name();
        let path = format!("{gitops_dir}/{file}");
        gitops_objects.push((resource.id, path.clone()));
        match resource.kept {
            Some(content) => kept.push((path, content)),
            None => files.push((path, resource.text.into_bytes())),
        }
        gitops_files.push(file);
    }
    (gitops_files, gitops_objects)
}

/// Adds `plan.json` of `plan`: to `kept` when the memo vouches for the file written from a plan
/// of the same digest ([`Plan::digest`], made from its components' `digests`), else its text to
/// `files`. With the memo, its entry.
fn plan_file(
    plan: &Plan,
    memo: Option<(&Memo<'_>, &[[u8; 32]])>,
    files: &mut Vec<(String, Vec<u8>)>,
    kept: &mut Vec<(String, ContentId)>,
) -> Option<(String, Entry)> {
    let path = layout::plan_path(&plan.cluster);
    let Some((memo, digests)) = memo else {
        files.push((path, plan.to_text().into_bytes()));
        return None;
    };
    let (job, digest) = (crate::render::memo::plan_job(&plan.cluster), Plan::digest_of(&plan.cluster, digests));
    if let Some((found, content, entry)) = memo.lookup_file(&job, &digest)
        && found == path
    {
        kept.push((path, content));
        return Some((job, entry));
    }
    let text = plan.to_text().into_bytes();
    let id = ObjectId::new(crate::spec::model::API_VERSION, "Plan", None, &plan.cluster);
    let entry = memo.stamper().record_file(&job, &digest, &path, &id, &ContentId::of(&text));
    files.push((path, text));
    Some((job, entry))
}

/// One component laid out.
struct LaidComponent {
    files: Vec<(String, Vec<u8>)>,
    kept: Vec<(String, ContentId)>,
    plan: plan::Component,
    pending: Vec<Pending>,
    vouched: Vec<(String, Entry)>,
}

fn lay_out_component(cluster: &str, mut component: Component, sealer: Option<&Sealer>) -> Result<LaidComponent, Error> {
    let dir = layout::component_dir(cluster, &component.id);
    let path = layout::component_path(&component.id);
    // File name -> the object written there (for clash messages) and its body.
    let mut entries: BTreeMap<String, (String, Body)> = BTreeMap::new();
    let mut objects = Vec::with_capacity(component.objects.len() + component.secrets.len());
    let mut add = |id: ObjectId, bytes: Body| -> Result<String, Error> {
        let file = id.file_name();
        if let Some((first, _)) = entries.get(&file) {
            return Err(Error::FileClash { component: component.id.clone(), file, first: first.clone(), second: id.to_string() });
        }
        entries.insert(file.clone(), (id.to_string(), bytes));
        objects.push(plan::Object { id, file: format!("{path}/{file}") });
        Ok(file)
    };
    for resource in std::mem::take(&mut component.objects) {
        let body = match resource.kept {
            Some(content) => Body::Kept(content),
            None => Body::Bytes(resource.text.into_bytes()),
        };
        add(resource.id, body)?;
    }
    let mut pending = Vec::with_capacity(component.secrets.len());
    for secret in std::mem::take(&mut component.secrets) {
        let Some(sealer) = sealer else {
            return Err(Error::NoSealer {
                component: component.id.clone(),
                namespace: secret.namespace.clone(),
                name: secret.name.clone(),
            });
        };
        let file = add(sealer.target(&secret), Body::Sealed)?;
        pending.push(Pending { path: format!("{dir}/{file}"), component: component.id.clone(), secret });
    }
    // NB: a sealed file given back with its namespace is kept where it is, as it is.
    let mut vouched = Vec::with_capacity(component.sealed.len());
    for kept in std::mem::take(&mut component.sealed) {
        add(kept.id, Body::Kept(kept.content))?;
        vouched.push(kept.entry);
    }
    let names: Vec<&String> = entries.keys().collect();
    let mut files = Vec::with_capacity(entries.len() + 1);
    let mut kept = Vec::new();
    files.push((format!("{dir}/{}", layout::KUSTOMIZATION), kustomization(&names).into_bytes()));
    for (file, (_, body)) in entries {
        match body {
            Body::Bytes(bytes) => files.push((format!("{dir}/{file}"), bytes)),
            Body::Kept(content) => kept.push((format!("{dir}/{file}"), content)),
            Body::Sealed => {}
        }
    }
    let Component { id, depends_on, .. } = component;
    Ok(LaidComponent { files, kept, plan: plan::Component { id, path, depends_on, objects }, pending, vouched })
}

/// What goes into an object's file: its bytes, the bytes already there (kept by the memo), or
/// a Secret's sealed form (written by the seal step).
enum Body {
    Bytes(Vec<u8>),
    Kept(ContentId),
    Sealed,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::object::ContentId;
    use crate::render::memo::{Memo, Table};
    use crate::render::{Options, Resource, render};
    use crate::secrets::MasterKey;
    use crate::secrets::resolve::MapInputs;
    use crate::secrets::sealed::Certificate;
    use crate::spec::{Bundle, load};
    use crate::tree::{Files, Tree};
    use rand::SeedableRng;
    use rand::rngs::StdRng;
    use serde_json::{Value as Json, json};

    const SPEC: &str = "apiVersion: tfrs.turingfocus.cn/v1alpha1\nkind: TFRCluster\nmetadata: {name: lab}\nspec:\n  ingress: {domain: lab.example.com}\n  imageRegistry: {username: {value: u}, password: {generate: {}}}\n  sealing: {certFile: cert.pem}\n";

    /// The tree of `spec` (one cluster) laid out, its Secrets not sealed yet.
    fn laid_out(spec: &str) -> Tree {
        let mut bundle = Bundle::with_builtins();
        bundle.add_spec("lab/spec.yaml", spec);
        let spec = load(&bundle).spec.expect("valid spec");
        let master = MasterKey::from_bytes([7; 32]);
        let rendered = render(&spec, &bundle, &Options::default(), &MapInputs::default(), Some(&master)).expect("renders");
        let certificate =
            Certificate::from_pem(include_str!("../../fixtures/demo/keys/sealed-secrets.pem"), 1_800_000_000).expect("demo cert");
        let sealer = Sealer::SealedSecrets { certificate };
        let mut tree = Tree::new(Some(master.fingerprint_key()));
        tree.add(rendered.clusters[0].clone(), Some(sealer)).expect("lays out");
        tree
    }

    fn tree(seed: u64, previous: &dyn Fn(&str) -> Option<Json>) -> Files {
        let mut tree = laid_out(SPEC);
        tree.seal(previous, &mut StdRng::seed_from_u64(seed)).expect("seals");
        tree.into_files().0
    }

    /// Seals `spec` with a memo of `table` over `files` (the last render's): the files written,
    /// the sealed files kept (not read) and the memo entries to save.
    fn sealed_with_memo(spec: &str, table: Table, files: &Files) -> (Files, crate::tree::Kept, Table) {
        let mut tree = laid_out(spec);
        let memo = Memo::new(zeroize::Zeroizing::new([3; 32]), "build".into(), crate::render::memo::previous(table), files);
        tree.keep_sealed(&memo);
        let previous = |path: &str| crate::manifest::read_object(files.get(path)?);
        tree.seal(&previous, &mut StdRng::seed_from_u64(1)).expect("seals");
        let entries: Table = tree.take_memo_entries().into_iter().collect();
        let (files, kept) = tree.into_files();
        (files, kept, entries)
    }

    #[test]
    fn the_memo_keeps_a_sealed_file_only_while_its_inputs_and_bytes_hold() {
        let (first, kept, table) = sealed_with_memo(SPEC, Table::new(), &Files::new());
        let sealed: Vec<&String> = first.keys().filter(|p| p.contains("/sealedsecret-")).collect();
        assert!(!sealed.is_empty() && kept.is_empty(), "nothing to keep yet");
        assert_eq!(table.len(), sealed.len(), "one entry per sealed file: {table:?}");
        assert!(table.keys().all(|job| job.starts_with("lab/sealed:clusters/lab/")), "{table:?}");

        // The same inputs over the same files: every sealed file kept, by its content id.
        let (again, kept, entries) = sealed_with_memo(SPEC, table.clone(), &first);
        assert!(sealed.iter().all(|p| !again.contains_key(*p)), "kept files are not written");
        for path in &sealed {
            assert_eq!(kept.get(*path), Some(&ContentId::of(&first[*path])), "`{path}` kept as it is");
        }
        assert_eq!(entries, table, "the stamps carry over");

        // A changed value (here the registry user name) is sealed again; the others are kept.
        let changed = SPEC.replace("username: {value: u}", "username: {value: v}");
        let (resealed, kept, _) = sealed_with_memo(&changed, table.clone(), &first);
        let registry: Vec<&&String> = sealed.iter().filter(|p| resealed.contains_key(**p)).collect();
        assert_eq!(registry.len(), 1, "only the registry's Secret: {registry:?}");
        assert_eq!(kept.len(), sealed.len() - 1);
        assert_ne!(resealed[*registry[0]], first[*registry[0]]);

        // A sealed file edited by hand is not vouched for: it is sealed again (over the edit,
        // whose fingerprints still match, as without a memo).
        let mut edited = first.clone();
        let path = sealed[0].clone();
        let text = String::from_utf8(first[&path].clone()).unwrap().replace("kind: SealedSecret", "kind:  SealedSecret");
        edited.insert(path.clone(), text.into_bytes());
        let (again, kept, _) = sealed_with_memo(SPEC, table.clone(), &edited);
        assert!(again.contains_key(&path) && !kept.contains_key(&path), "an edited file is not kept");
        assert_eq!(again[&path], first[&path], "and sealing restores the file");

        // Another memo key (another master key) or build trusts nothing.
        let mut tree = laid_out(SPEC);
        let memo = Memo::new(zeroize::Zeroizing::new([4; 32]), "build".into(), crate::render::memo::previous(table.clone()), &first);
        assert_eq!(tree.keep_sealed(&memo), 0);
        let mut tree = laid_out(SPEC);
        let memo = Memo::new(zeroize::Zeroizing::new([3; 32]), "another build".into(), crate::render::memo::previous(table), &first);
        assert_eq!(tree.keep_sealed(&memo), 0);
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
        let error = Tree::new(None).add(rendered.clusters[0].clone(), None).expect_err("refused");
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
            components: components
                .into_iter()
                .map(|(id, objects)| Component {
                    id: id.into(),
                    depends_on: Vec::new(),
                    depth: 0,
                    objects,
                    secrets: Vec::new(),
                    sealed: Vec::new(),
                    gitops: None,
                    timeout: "10m".into(),
                })
                .collect(),
            gitops,
        }
    }

    fn build_plain(cluster: RenderedCluster) -> Result<Files, Error> {
        let mut tree = Tree::new(None);
        tree.add(cluster, None)?;
        Ok(tree.into_files().0)
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
