//! The render memo: a component whose template inputs are those of the last render into the
//! same output directory, and whose files that render wrote are still there byte for byte, is
//! not templated again; its objects are read back from those files.
//!
//! Every templated unit (a component's template, a component's GitOps entry) has a *job key*
//! (`<cluster>/<component id>` or `<cluster>/gitops/<component id>`) and an *inputs digest*:
//! SHA-256 over the template name, its values (the digest of the JSON of the values its
//! server's or namespace's components share, and its own labels), the scope it is checked
//! against and, for values layered over the cluster's shared values, their digest. The digest
//! never leaves the process. A sealed Secret's file is a job of its own
//! (`<cluster>/sealed:<path>`), over its seal inputs ([`crate::secrets::seal::seal_inputs`]).
//! What is kept between runs is a *stamp* per job:
//!
//! `stamp = HMAC-SHA256(memo_key, "tfrs/memo/v2" ‖ lp(build) ‖ lp(job) ‖ inputs ‖
//! for each object: lp(path) ‖ lp(apiVersion) ‖ lp(kind) ‖ lp(namespace) ‖ lp(name) ‖ content id)`
//!
//! with the directory, identity and file of each object it produced; the content id is the Git
//! blob id of the file's bytes ([`ContentId`]). `build` names the tfrs build (its version and
//! executable) and the template set, so a new tfrs or a changed template renders everything
//! again. A stored stamp is reused only when it is recomputed, from the current inputs and the
//! content now at those paths ([`Contents`]), to the same value: a hand-edited or deleted file,
//! a changed value, template or build, or a different master key all miss, and the job is
//! rendered as if there were no memo. The memo holds no value and no plain hash of one (the
//! stamp is keyed by `memo_key`, derived from the master key); without a master key there is
//! no memo.
//!
//! A job given back is not read back: its objects come back *kept* ([`Resource::kept`]), with
//! their identity and content id only, and the tree leaves their files as they are.

use super::Component;
use super::resource::Resource;
use super::stamp::{Outcomes, Read};
use crate::object::{ContentId, ObjectId};
use crate::secrets::bytes::push_lp;
use hmac::{Hmac, KeyInit, Mac};
use serde::Serialize;
use serde_json::Value as Json;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Mutex;
use zeroize::Zeroizing;

/// What is kept of one job between runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The stamp, lowercase hex.
    pub stamp: String,
    /// The directory its objects were written to, relative to the output directory.
    pub dir: String,
    /// The objects the job produced, in order.
    pub objects: Vec<Object>,
}

/// One object of a job: its identity and its file in the job's directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Object {
    /// The object.
    pub id: ObjectId,
    /// The file name in the job's directory.
    pub file: String,
}

/// Every job's entry, by job key.
pub type Table = BTreeMap<String, Entry>;

/// The job of the template of component `id` of cluster `cluster`.
#[must_use]
pub fn component_job(cluster: &str, id: &str) -> String {
    format!("{cluster}/{id}")
}

/// The job of the GitOps entry of component `id` of cluster `cluster`.
#[must_use]
pub fn gitops_job(cluster: &str, id: &str) -> String {
    format!("{cluster}/gitops/{id}")
}

/// The job of the sealed file at `path` (relative to the output root) of cluster `cluster`;
/// `:` keeps it apart from every component's job.
#[must_use]
pub fn sealed_job(cluster: &str, path: &str) -> String {
    format!("{cluster}/sealed:{path}")
}

/// The job of the `plan.json` of cluster `cluster`.
#[must_use]
pub fn plan_job(cluster: &str) -> String {
    format!("{cluster}/plan:json")
}

/// The entries a render did not take, and the namespaces' entries ([`Memo::into_untaken`]).
pub type Untaken = (Vec<(String, Entry)>, Vec<(String, UnitEntry)>);

/// Whether job `job` templates (a component's template or GitOps entry), rather than being a
/// sealed Secret's file or `plan.json`.
#[must_use]
pub fn is_templated(job: &str) -> bool {
    let (_, rest) = job.split_once('/').unwrap_or(("", job));
    !(rest.starts_with("sealed:") || rest == "plan:json")
}

/// The last run's entries as a [`Memo`] looks them up: by job key, each given back at most once
/// (read straight into this form: a large cluster has tens of thousands).
pub type Previous = rustc_hash::FxHashMap<String, Mutex<Option<Entry>>>;

/// `table` as a [`Memo`] looks it up.
#[must_use]
pub fn previous(table: Table) -> Previous {
    table.into_iter().map(|(job, entry)| (job, Mutex::new(Some(entry)))).collect()
}

/// What the files of the last render hold now, by path relative to the output root: the
/// content id of each file still there. The output directory answers from its file records
/// without reading what did not change since; a Git tree answers from its entries.
pub trait Contents: Sync {
    /// The content id of the file at `path`, or `None` when there is none.
    fn content_id(&self, path: &str) -> Option<ContentId>;
}

/// Content ids by path (a Git tree's entries) answer as they are.
impl Contents for BTreeMap<String, ContentId> {
    fn content_id(&self, path: &str) -> Option<ContentId> {
        self.get(path).copied()
    }
}

/// A tree in memory answers by hashing the bytes it holds.
impl Contents for BTreeMap<String, Vec<u8>> {
    fn content_id(&self, path: &str) -> Option<ContentId> {
        self.get(path).map(|bytes| ContentId::of(bytes))
    }
}

/// The memo of one render: the entries of the last run and what its files hold now.
pub struct Memo<'a> {
    stamper: Stamper,
    /// The last run's entries; one given back is taken out (each job is looked up once), so
    /// that it moves into this run's table instead of being copied.
    previous: Previous,
    tree: &'a dyn Contents,
    /// The last run's tenant namespaces (`render::unit`), given back whole or not at all.
    pub(crate) units: PreviousUnits,
    /// Per cluster, the digest of what its namespaces are rendered against besides the spec
    /// (see `render::unit`); a cluster without one has its namespaces rendered one by one.
    pub(crate) frames: HashMap<String, [u8; 32]>,
    /// The only tenant namespaces to render, when the rest of the cluster is left as the last
    /// render laid it out (`render::parts`): those and the cluster's own components are
    /// rendered and laid out, nothing else.
    pub(crate) only: Option<BTreeSet<String>>,
}

impl std::fmt::Debug for Memo<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Memo").field("build", &self.stamper.build).field("entries", &self.previous.len()).finish_non_exhaustive()
    }
}

impl<'a> Memo<'a> {
    /// A memo keyed by `key` (see [`crate::secrets::MasterKey::memo_key`]) for build `build`,
    /// with the entries `previous` recorded by the last run and `tree`, what the output now
    /// holds by relative path.
    #[must_use]
    pub fn new(key: Zeroizing<[u8; 32]>, build: String, previous: Previous, tree: &'a dyn Contents) -> Memo<'a> {
        Memo { stamper: Stamper { key, build }, previous, tree, units: PreviousUnits::default(), frames: HashMap::new(), only: None }
    }

    /// This memo with the last run's tenant namespaces `units` and, per cluster, the digest of
    /// what they are rendered against besides the spec (`frames`, see `render::unit`).
    #[must_use]
    pub fn with_units(mut self, units: PreviousUnits, frames: HashMap<String, [u8; 32]>) -> Memo<'a> {
        self.units = units;
        self.frames = frames;
        self
    }

    /// This memo rendering only the tenant namespaces `namespaces` and the cluster's own
    /// components (see [`Memo::only`]).
    #[must_use]
    pub fn with_only(mut self, namespaces: BTreeSet<String>) -> Memo<'a> {
        self.only = Some(namespaces);
        self
    }

    /// The entries no job of this render took, and the namespaces' entries none took: what a
    /// render of only some namespaces keeps of the rest of the cluster.
    #[must_use]
    pub fn into_untaken(self) -> Untaken {
        fn untaken<V>(slots: rustc_hash::FxHashMap<String, Mutex<Option<V>>>) -> Vec<(String, V)> {
            let value = |slot: Mutex<Option<V>>| slot.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner);
            slots.into_iter().filter_map(|(job, slot)| Some((job, value(slot)?))).collect()
        }
        (untaken(self.previous), untaken(self.units))
    }

    /// What `look` says of the entry of job `job` as the last run left it (none once given
    /// back); the entry stays.
    pub(crate) fn with_entry<R>(&self, job: &str, look: impl FnOnce(&Entry) -> Option<R>) -> Option<R> {
        look(self.previous.get(job)?.lock().unwrap_or_else(std::sync::PoisonError::into_inner).as_ref()?)
    }

    /// Takes the entry of job `job` out (it moves into this run's table).
    pub(crate) fn take(&self, job: &str) -> Option<Entry> {
        self.previous.get(job)?.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take()
    }

    /// What the files of the last render hold now.
    pub(crate) fn contents(&self) -> &dyn Contents {
        self.tree
    }

    /// The objects job `job` produced last time, kept (not read back), when its stamp still
    /// holds for `inputs` and the files now in the tree. An entry is given back once.
    pub(crate) fn lookup(&self, job: &str, inputs: &[u8; 32]) -> Option<(Vec<Resource>, Entry)> {
        let mut slot = self.previous.get(job)?.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let entry = slot.as_ref()?;
        let mut mac = self.mac(job, inputs);
        let mut resources = Vec::with_capacity(entry.objects.len());
        for object in &entry.objects {
            let path = format!("{}/{}", entry.dir, object.file);
            let content = self.tree.content_id(&path)?;
            absorb(&mut mac, &path, object, &content);
            resources.push(Resource { id: object.id.clone(), text: String::new(), kept: Some(content) });
        }
        let stamp = crate::secrets::bytes::to_hex(&mac.finalize().into_bytes());
        if stamp != entry.stamp {
            return None;
        }
        Some((resources, slot.take()?))
    }

    /// The entry of job `job` that rendered `resources` from `inputs`, each written to
    /// `<dir>/<file name>`.
    pub(crate) fn record(&self, job: &str, inputs: &[u8; 32], dir: &str, resources: &[Resource]) -> Entry {
        let mut mac = self.mac(job, inputs);
        let objects: Vec<Object> = resources.iter().map(|r| Object { id: r.id.clone(), file: r.id.file_name() }).collect();
        for (object, resource) in objects.iter().zip(resources) {
            let content = resource.kept.unwrap_or_else(|| ContentId::of(resource.text.as_bytes()));
            absorb(&mut mac, &format!("{dir}/{}", object.file), object, &content);
        }
        Entry { stamp: crate::secrets::bytes::to_hex(&mac.finalize().into_bytes()), dir: dir.to_owned(), objects }
    }

    /// What records stamps of single files after the render (see [`Stamper`]).
    pub(crate) fn stamper(&self) -> Stamper {
        self.stamper.clone()
    }

    /// The file job `job` wrote last time and its content id, when its stamp still holds for
    /// `inputs` and the file now at its path (a job of one file: a sealed Secret's).
    pub(crate) fn lookup_file(&self, job: &str, inputs: &[u8; 32]) -> Option<(String, ContentId, Entry)> {
        let (resources, entry) = self.lookup(job, inputs)?;
        let ([resource], [object]) = (resources.as_slice(), entry.objects.as_slice()) else { return None };
        Some((format!("{}/{}", entry.dir, object.file), resource.kept?, entry))
    }

    fn mac(&self, job: &str, inputs: &[u8; 32]) -> Hmac<Sha256> {
        self.stamper.mac(job, inputs)
    }
}

/// The memo's key and build, which every stamp is made with. On its own ([`Memo::stamper`]), it
/// records the stamps of jobs of one file (sealed Secrets) once they are written; a
/// [`Memo::lookup_file`] of the next run checks them.
#[derive(Clone)]
pub(crate) struct Stamper {
    key: Zeroizing<[u8; 32]>,
    build: String,
}

impl Stamper {
    /// The entry of job `job`, which wrote object `id` with content `content` to `path` from
    /// `inputs`.
    pub(crate) fn record_file(&self, job: &str, inputs: &[u8; 32], path: &str, id: &ObjectId, content: &ContentId) -> Entry {
        let (dir, file) = path.rsplit_once('/').unwrap_or(("", path));
        let object = Object { id: id.clone(), file: file.to_owned() };
        let mut mac = self.mac(job, inputs);
        absorb(&mut mac, path, &object, content);
        Entry { stamp: crate::secrets::bytes::to_hex(&mac.finalize().into_bytes()), dir: dir.to_owned(), objects: vec![object] }
    }

    fn mac(&self, job: &str, inputs: &[u8; 32]) -> Hmac<Sha256> {
        self.mac_of(b"tfrs/memo/v2", job, inputs)
    }

    /// The MAC of a stamp of kind `tag` (`tfrs/memo/v2`, `tfrs/unit/v1`) of job `job` with
    /// inputs `inputs`, started: the tag, the build and the job length-prefixed, the inputs.
    pub(crate) fn mac_of(&self, tag: &[u8], job: &str, inputs: &[u8; 32]) -> Hmac<Sha256> {
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(self.key.as_slice()).expect("HMAC takes any key length");
        let mut head = Vec::with_capacity(64 + self.build.len() + job.len());
        head.extend_from_slice(tag);
        push_lp(&mut head, self.build.as_bytes());
        push_lp(&mut head, job.as_bytes());
        head.extend_from_slice(inputs);
        mac.update(&head);
        mac
    }
}

/// Adds one object of an entry to `mac`: its path, identity and content id.
pub(crate) fn absorb(mac: &mut Hmac<Sha256>, path: &str, object: &Object, content: &ContentId) {
    let id = &object.id;
    for field in [path, &id.api_version, &id.kind, id.namespace().unwrap_or(""), &id.name] {
        // NB: as `push_lp` frames it, straight into the MAC (no buffer per object).
        mac.update(&(field.len() as u64).to_be_bytes());
        mac.update(field.as_bytes());
    }
    mac.update(&content.0);
}

/// The inputs digest of a job (see the module docs): SHA-256 over `parts` (each
/// length-prefixed) and `values` as JSON.
pub(crate) fn inputs_digest(parts: &[&[u8]], values: &(impl Serialize + ?Sized)) -> [u8; 32] {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update((part.len() as u64).to_be_bytes());
        hasher.update(part);
    }
    // NB: serde_json writes maps in insertion order, which the render fixes: equal inputs give
    // equal bytes.
    let mut writer = HashWriter(&mut hasher);
    let _ = serde_json::to_writer(&mut writer, values);
    hasher.finalize().into()
}

/// The digest of a cluster's shared values (see [`inputs_digest`]).
pub(crate) fn values_digest(values: &Json) -> [u8; 32] {
    inputs_digest(&[b"shared"], values)
}

struct HashWriter<'a>(&'a mut Sha256);

impl std::io::Write for HashWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.update(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

// The tenant namespaces' entries: what `render::unit` keeps of a namespace between runs.

/// What is kept of a namespace's render between runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnitEntry {
    /// The stamp, lowercase hex.
    pub stamp: String,
    /// The secret inputs its render read.
    pub reads: BTreeSet<Read>,
    /// Its components, in render order.
    pub components: Vec<UnitComponent>,
}

/// One component of a namespace, as its entry keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnitComponent {
    /// Its id.
    pub id: String,
    /// How long Flux waits for it.
    pub timeout: String,
    /// The memo jobs of its sealed Secrets' files, in order.
    pub sealed: Vec<String>,
}

/// Every namespace's entry, by job key.
pub type UnitTable = BTreeMap<String, UnitEntry>;

/// The last run's namespaces as a [`Memo`] looks them up, each given back at most once.
pub type PreviousUnits = rustc_hash::FxHashMap<String, Mutex<Option<UnitEntry>>>;

/// A sealed Secret's file given back with its namespace: the object, its content id and the
/// memo entry that vouches for it (moved into this run's memo by the tree).
#[derive(Debug, Clone)]
pub struct KeptSealed {
    /// The sealed object (its file is its [`ObjectId::file_name`] in the component).
    pub id: ObjectId,
    /// The content id of its file.
    pub content: ContentId,
    /// Its memo job and entry.
    pub entry: (String, Entry),
}

/// What a render says of one namespace, for its entry to be made once its Secrets are sealed
/// (`render::unit::record`).
#[derive(Clone)]
pub enum UnitOutcome {
    /// Given back whole: its entry, as it was.
    Kept {
        /// The job key.
        job: String,
        /// The entry.
        entry: UnitEntry,
    },
    /// Rendered: what its entry is made from.
    Rendered {
        /// The job key.
        job: String,
        /// Its inputs digest.
        inputs: [u8; 32],
        /// The secret inputs it read and what each gave.
        outcomes: Outcomes,
        /// When it read a `fromFile` file: the digest of which spec file each field of its objects
        /// was written in (`render::unit::files_digest`).
        files: Option<[u8; 32]>,
        /// Its components.
        components: Vec<Shape>,
    },
}

/// Names the namespace only: what its reads gave is never shown.
impl std::fmt::Debug for UnitOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            UnitOutcome::Kept { job, .. } => f.debug_struct("Kept").field("job", job).finish_non_exhaustive(),
            UnitOutcome::Rendered { job, .. } => f.debug_struct("Rendered").field("job", job).finish_non_exhaustive(),
        }
    }
}

/// A rendered component as a namespace's entry takes it.
#[derive(Debug, Clone)]
pub struct Shape {
    /// Its id.
    pub id: String,
    /// How long Flux waits for it.
    pub timeout: String,
    /// What it waits for.
    pub depends_on: Vec<String>,
    /// Its depth in the graph.
    pub depth: usize,
    /// The Secrets it seals, in order: namespace and name.
    pub secrets: Vec<(String, String)>,
}

impl Shape {
    /// The shape of `component`.
    #[must_use]
    pub fn of(component: &Component) -> Shape {
        Shape {
            id: component.id.clone(),
            timeout: component.timeout.clone(),
            depends_on: component.depends_on.clone(),
            depth: component.depth,
            secrets: component.secrets.iter().map(|secret| (secret.namespace.clone(), secret.name.clone())).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn resource(name: &str, text: &str) -> Resource {
        Resource { id: ObjectId::new("v1", "ConfigMap", Some("ns"), name), text: text.into(), kept: None }
    }

    #[test]
    fn a_stamp_holds_only_for_the_same_inputs_bytes_build_and_key() {
        let empty: BTreeMap<String, Vec<u8>> = BTreeMap::new();
        let inputs = inputs_digest(&[b"t.yaml"], &json!({"a": 1}));
        let recorder = Memo::new(Zeroizing::new([1; 32]), "b1".into(), previous(Table::new()), &empty);
        let resources = [resource("one", "kind: ConfigMap\n"), resource("two", "kind: ConfigMap\nx: 1\n")];
        let entry = recorder.record("lab/c", &inputs, "clusters/lab/components/c", &resources);
        let mut tree = BTreeMap::new();
        for (object, resource) in entry.objects.iter().zip(&resources) {
            tree.insert(format!("{}/{}", entry.dir, object.file), resource.text.clone().into_bytes());
        }
        let table: Table = [("lab/c".to_owned(), entry.clone())].into_iter().collect();
        let memo = Memo::new(Zeroizing::new([1; 32]), "b1".into(), previous(table.clone()), &tree);
        let (found, again) = memo.lookup("lab/c", &inputs).expect("a hit");
        let kept: Vec<(ObjectId, Option<ContentId>)> = found.into_iter().map(|r| (r.id, r.kept)).collect();
        let expected: Vec<(ObjectId, Option<ContentId>)> =
            resources.iter().map(|r| (r.id.clone(), Some(ContentId::of(r.text.as_bytes())))).collect();
        assert_eq!(kept, expected, "given back kept, by content id, not read");
        assert_eq!(again, entry);

        assert!(memo.lookup("lab/c", &inputs).is_none(), "an entry is given back once");
        let fresh = || Memo::new(Zeroizing::new([1; 32]), "b1".into(), previous(table.clone()), &tree);
        assert!(fresh().lookup("lab/c", &inputs_digest(&[b"t.yaml"], &json!({"a": 2}))).is_none(), "other values");
        assert!(fresh().lookup("lab/d", &inputs).is_none(), "another job");
        assert!(fresh().lookup("lab/c", &inputs).is_some(), "the same inputs, again");
        assert!(
            Memo::new(Zeroizing::new([1; 32]), "b2".into(), previous(table.clone()), &tree).lookup("lab/c", &inputs).is_none(),
            "another build"
        );
        assert!(
            Memo::new(Zeroizing::new([2; 32]), "b1".into(), previous(table.clone()), &tree).lookup("lab/c", &inputs).is_none(),
            "another key"
        );
        let mut edited = tree.clone();
        edited.insert(format!("{}/{}", entry.dir, entry.objects[1].file), b"kind: ConfigMap\nx: 2\n".to_vec());
        assert!(
            Memo::new(Zeroizing::new([1; 32]), "b1".into(), previous(table.clone()), &edited).lookup("lab/c", &inputs).is_none(),
            "an edited file"
        );
        let mut deleted = tree.clone();
        deleted.remove(&format!("{}/{}", entry.dir, entry.objects[0].file));
        assert!(
            Memo::new(Zeroizing::new([1; 32]), "b1".into(), previous(table), &deleted).lookup("lab/c", &inputs).is_none(),
            "a deleted file"
        );
    }

    #[test]
    fn digests_separate_their_parts() {
        assert_ne!(inputs_digest(&[b"ab", b"c"], &json!(null)), inputs_digest(&[b"a", b"bc"], &json!(null)));
        assert_ne!(inputs_digest(&[b"a"], &json!({"k": "v"})), inputs_digest(&[b"a"], &json!({"k": "w"})));
        assert_eq!(inputs_digest(&[b"a"], &json!({"k": "v"})), inputs_digest(&[b"a"], &json!({"k": "v"})));
    }
}
