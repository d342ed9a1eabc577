//! The unit stamp: a tenant namespace whose inputs are those of the last render into the same
//! place, and whose files are still there byte for byte, is given back whole.
//!
//! The memo ([`super::memo`]) saves the templating of an unchanged component, but each component
//! still has its secrets resolved, its values made and digested before it is looked up: on a
//! platform of thousands of servers where one changed, that is most of a re-render. A
//! namespace of a cluster (its tenants and their servers, a [`Unit`]) is a job of its own,
//! `<cluster>/unit:<namespace>`, whose inputs digest is
//!
//! `inputs = SHA-256("tfrs/unit/v1" ‖ frame ‖ lp(namespace) ‖ for each tenant, then each
//! server: SHA-256(its kind, cluster, metadata and spec as loaded))`
//!
//! `frame` is the digest of what else its components are rendered from, made once per cluster:
//! the cluster object as loaded, the digest of the cluster's shared values, the GitOps engine's
//! namespace, the pull Secret the cluster lends its namespaces, and what the caller adds
//! ([`Memo::frames`]: the operator overrides, the sealing certificate). A namespace's render
//! reads nothing else: its components are made from its own objects and the frame. Its stamp:
//!
//! `stamp = HMAC-SHA256(memo_key, "tfrs/unit/v1" ‖ lp(build) ‖ lp(job) ‖ inputs ‖ reads ‖
//! [files] ‖ for each component: lp(id) ‖ lp(timeout) ‖ lp(depth) ‖ lp(each dependency) ‖ for
//! its template's memo entry, its GitOps entry's, then each of its sealed Secrets': lp(job) ‖
//! lp(entry stamp) ‖ for each object: lp(path) ‖ lp(apiVersion) ‖ lp(kind) ‖ lp(namespace) ‖
//! lp(name) ‖ content id)`
//!
//! `reads` are the secret inputs (environment variables, `fromFile` files) its render read,
//! each with what it gave, as in the cluster stamp ([`super::stamp`]); to check the stamp they
//! are read again. A `fromFile` path is read relative to the spec file its field was written in,
//! so when the namespace read a file, `files` (the digest of which file each field of its
//! objects was written in, [`files_digest`]) is in the stamp too: a field moved to another
//! file, even one with the same text, renders it again. Nothing else of a render depends on
//! where its specs were read from (only messages do), so a namespace that reads no file is
//! given back whatever the spec files are called. The entries are the memo's own, each made from inputs that the namespace's
//! inputs decide, and the content ids are those of the files now (as the memo's
//! [`memo::Contents`] answer). A stamp that holds gives back every component of the namespace
//! with its objects and its sealed Secrets' files kept (by content id, not read) and its
//! entries moved into this run's memo: none of its secrets is resolved and none of its values
//! made. Anything else (no entry, another input, a read that gives something else, an edited
//! or missing file, a component the graph now places elsewhere) renders it as usual.

pub use super::memo::{KeptSealed, PreviousUnits as Previous, Shape, UnitComponent, UnitEntry, UnitOutcome as Outcome, UnitTable as Table};

use super::engine::Frame;
use super::memo::{self, Entry, Memo, Stamper, absorb};
use super::stamp::{Outcomes, Read, absorb_reads, read_again};
use super::tenant::Unit;
use super::{Component, Resource};
use crate::object::{ContentId, ObjectId};
use crate::secrets::PlainSecret;
use crate::secrets::bytes::{lp, push_lp, to_hex};
use crate::secrets::resolve::SecretInputs;
use crate::spec::Object;
use crate::spec::diagnostic::FileTable;
use crate::spec::load::Layer;
use crate::spec::yaml::{Node, Value};
use hmac::{Hmac, Mac};
use serde::Serialize;
use sha2::{Digest, Sha256};
use std::collections::HashMap;

/// The tag of unit digests and stamps.
const TAG: &[u8] = b"tfrs/unit/v1";

/// The job key of namespace `namespace` of cluster `cluster`.
#[must_use]
pub fn job(cluster: &str, namespace: &str) -> String {
    format!("{cluster}/unit:{namespace}")
}

/// The cluster and the namespace of job `job` ([`job`]).
#[must_use]
pub(crate) fn parse_job(job: &str) -> Option<(&str, &str)> {
    job.split_once("/unit:")
}

/// The digest of what a cluster's namespaces are rendered from besides their own objects (see
/// the module docs); `extra` is the caller's part.
pub(crate) fn frame_digest(frame: &Frame<'_>, extra: &[u8; 32]) -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update(TAG);
    hasher.update(extra);
    hasher.update(object_digest("cluster", frame.cluster));
    hasher.update(frame.base_digest);
    hasher.update(lp(frame.engine_namespace.as_bytes()));
    match frame.pull {
        Some(pull) => hasher.update(secret_digest(pull)),
        None => hasher.update([0]),
    }
    hasher.finalize().into()
}

/// The inputs digest of `unit` rendered against a frame of digest `frame`.
pub(crate) fn inputs(frame: &[u8; 32], unit: &Unit<'_>) -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update(TAG);
    hasher.update(frame);
    hasher.update(lp(unit.namespace.as_bytes()));
    for tenant in &unit.tenants {
        hasher.update(object_digest("tenant", tenant));
    }
    for server in &unit.servers {
        hasher.update(object_digest("server", server));
    }
    hasher.finalize().into()
}

/// A spec object's digest: its kind, cluster, metadata and spec as loaded; made once per object
/// (the cluster's stamp takes it too).
pub(crate) fn object_digest<S: Serialize>(kind: &'static str, object: &Object<S>) -> [u8; 32] {
    object
        .digest
        .get_or_make(kind, || memo::inputs_digest(&[kind.as_bytes(), object.cluster.as_bytes()], &(&object.metadata, &object.spec)))
}

/// Whether `reads` read a `fromFile` file.
pub(crate) fn reads_files<'r>(mut reads: impl Iterator<Item = &'r Read>) -> bool {
    reads.any(|read| matches!(read, Read::File(..)))
}

/// The digest of where every field of the objects of `unit` was written: each node of their
/// merged trees with its key and the name of its file, in order, and each of their layers' file
/// and the file that selected it. A `fromFile` path is read relative to the file its field was
/// written in (`Object::locate`), which this decides.
pub(crate) fn files_digest(unit: &Unit<'_>, files: &dyn FileTable) -> [u8; 32] {
    let tenants = unit.tenants.iter().map(|t| (&*t.tree, t.layers.as_slice()));
    files_digest_of(tenants.chain(unit.servers.iter().map(|s| (&*s.tree, s.layers.as_slice()))), files)
}

/// [`files_digest`] of any spec objects: each its merged tree and its layers.
pub(crate) fn files_digest_of<'o>(objects: impl Iterator<Item = (&'o Node, &'o [Layer])>, files: &dyn FileTable) -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update(TAG);
    for (tree, layers) in objects {
        origins(tree, files, &mut hasher);
        hasher.update((layers.len() as u64).to_be_bytes());
        for layer in layers {
            hasher.update(lp(files.name(layer.spec.origin.file).as_bytes()));
            hasher.update(lp(layer.selected_at.map_or("", |origin| files.name(origin.file)).as_bytes()));
        }
    }
    hasher.finalize().into()
}

/// Adds the file name of `node` and, for each entry or item below it, its key and file name.
fn origins(node: &Node, files: &dyn FileTable, hasher: &mut Sha256) {
    hasher.update(lp(files.name(node.origin.file).as_bytes()));
    match &node.value {
        Value::Seq(items) => {
            hasher.update((items.len() as u64).to_be_bytes());
            items.iter().for_each(|item| origins(item, files, hasher));
        }
        Value::Map(entries) => {
            hasher.update((entries.len() as u64).to_be_bytes());
            for (key, value) in entries {
                hasher.update(lp(key.name.as_bytes()));
                hasher.update(lp(files.name(key.origin.file).as_bytes()));
                origins(value, files, hasher);
            }
        }
        _ => {}
    }
}

/// A Secret's digest: its identity, type, labels, annotations, scope and values (the digest is
/// taken into the keyed stamp only, never kept).
fn secret_digest(secret: &PlainSecret) -> [u8; 32] {
    let mut hasher = Sha256::new();
    let scope = format!("{:?}", secret.scope);
    for part in [secret.name.as_bytes(), secret.namespace.as_bytes(), secret.kind.as_bytes(), scope.as_bytes()] {
        hasher.update(lp(part));
    }
    for map in [&secret.labels, &secret.annotations] {
        hasher.update((map.len() as u64).to_be_bytes());
        for (key, value) in map {
            hasher.update(lp(key.as_bytes()));
            hasher.update(lp(value.as_bytes()));
        }
    }
    hasher.update((secret.data.len() as u64).to_be_bytes());
    for (key, value) in &secret.data {
        hasher.update(lp(key.as_bytes()));
        hasher.update(lp(value));
    }
    hasher.finalize().into()
}

/// A namespace's stamp, as it is made.
struct Stamp(Hmac<Sha256>);

impl Stamp {
    fn new(stamper: &Stamper, job: &str, inputs: &[u8; 32], outcomes: &Outcomes, files: Option<&[u8; 32]>) -> Stamp {
        let mut mac = stamper.mac_of(TAG, job, inputs);
        absorb_reads(&mut mac, outcomes);
        if let Some(files) = files {
            mac.update(files);
        }
        Stamp(mac)
    }

    fn component(&mut self, id: &str, timeout: &str, depth: usize, depends_on: &[String]) {
        let mut part = Vec::new();
        push_lp(&mut part, id.as_bytes());
        push_lp(&mut part, timeout.as_bytes());
        push_lp(&mut part, depth.to_string().as_bytes());
        push_lp(&mut part, &(depends_on.len() as u64).to_be_bytes());
        for dependency in depends_on {
            push_lp(&mut part, dependency.as_bytes());
        }
        self.0.update(&part);
    }

    /// Adds entry `entry` of job `job`, each object with the content id `content` gives for its
    /// path; `None` when a file has none.
    fn entry(&mut self, job: &str, entry: &Entry, content: &dyn Fn(&str) -> Option<ContentId>) -> Option<Vec<ContentId>> {
        let mut part = Vec::new();
        push_lp(&mut part, job.as_bytes());
        push_lp(&mut part, entry.stamp.as_bytes());
        self.0.update(&part);
        let mut ids = Vec::with_capacity(entry.objects.len());
        // NB: one path buffer for all the objects (a namespace has hundreds).
        let mut path = String::with_capacity(entry.dir.len() + 64);
        for object in &entry.objects {
            path.clear();
            path.push_str(&entry.dir);
            path.push('/');
            path.push_str(&object.file);
            let id = content(&path)?;
            absorb(&mut self.0, &path, object, &id);
            ids.push(id);
        }
        Some(ids)
    }

    fn finish(self) -> String {
        to_hex(&self.0.finalize().into_bytes())
    }
}

/// A namespace given back: its components, its templates' memo entries and its own entry.
pub(crate) type Given = (Vec<Component>, Vec<(String, Entry)>, UnitEntry);

/// The components of namespace `job` (inputs `inputs`) as the last render left them, when its
/// stamp holds for the frame's graph, what its reads give now (read again through `source`)
/// and the files now: each with its objects, sealed Secrets and GitOps entry kept. Its entries
/// move out of `memo`: the components' templates' into the returned list, the GitOps entries'
/// into their components, the sealed Secrets' into their [`KeptSealed`]. `None` (nothing
/// taken) when anything differs.
pub(crate) fn keep(
    memo: &Memo<'_>,
    frame: &Frame<'_>,
    unit: &Unit<'_>,
    job: &str,
    inputs: &[u8; 32],
    (source, files): (&dyn SecretInputs, &dyn FileTable),
) -> Option<Given> {
    let mut slot = memo.units.get(job)?.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let last = slot.as_ref()?;
    let files = reads_files(last.reads.iter()).then(|| files_digest(unit, files));
    let mut stamp = Stamp::new(&memo.stamper(), job, inputs, &read_again(&last.reads, source), files.as_ref());
    // NB: checked in full before anything is taken.
    let found = last.components.iter().map(|component| checked(memo, frame, component, &mut stamp)).collect::<Option<Vec<_>>>()?;
    if stamp.finish() != last.stamp {
        return None;
    }
    let mut components = Vec::with_capacity(found.len());
    let mut entries = Vec::with_capacity(found.len());
    let kept = |entry: &Entry, ids: Vec<ContentId>| -> Vec<Resource> {
        entry.objects.iter().zip(ids).map(|(o, id)| Resource { id: o.id.clone(), text: String::new(), kept: Some(id) }).collect()
    };
    for (component, depends_on, depth, [(template, objects), (gitops, entrance)], sealed) in found {
        let entry = memo.take(&template)?;
        let resources = kept(&entry, objects);
        entries.push((template, entry));
        let entry = memo.take(&gitops)?;
        let gitops = Some((kept(&entry, entrance), (gitops, entry)));
        let sealed = sealed
            .into_iter()
            .map(|(key, id, content)| Some(KeptSealed { id, content, entry: (key.clone(), memo.take(&key)?) }))
            .collect::<Option<Vec<_>>>()?;
        components.push(Component {
            id: component.id.clone(),
            depends_on,
            depth,
            objects: resources,
            secrets: Vec::new(),
            sealed,
            gitops,
            timeout: component.timeout.clone(),
        });
    }
    Some((components, entries, slot.take()?))
}

/// A component of a namespace's last entry, checked into `stamp`: where the graph places it now,
/// its template's entry and its objects' content ids now, and its sealed Secrets' files.
type Checked<'c> = (&'c UnitComponent, Vec<String>, usize, [(String, Vec<ContentId>); 2], Vec<(String, ObjectId, ContentId)>);

/// Checks `component` of a namespace's last entry into `stamp` (see [`keep`]); `None` when the
/// graph no longer has it, or an entry or file it had is gone.
fn checked<'c>(memo: &Memo<'_>, frame: &Frame<'_>, component: &'c UnitComponent, stamp: &mut Stamp) -> Option<Checked<'c>> {
    let cluster = frame.cluster.name();
    let content = |path: &str| memo.contents().content_id(path);
    if !frame.graph.contains(&component.id) {
        return None;
    }
    let (depends_on, depth) = (frame.graph.dependencies(&component.id), frame.graph.depth(&component.id));
    stamp.component(&component.id, &component.timeout, depth, depends_on);
    let dir = crate::layout::component_dir(cluster, &component.id);
    let template = memo::component_job(cluster, &component.id);
    let objects = memo.with_entry(&template, |entry| if entry.dir == dir { stamp.entry(&template, entry, &content) } else { None })?;
    let (gitops, gitops_dir) = (memo::gitops_job(cluster, &component.id), crate::layout::gitops_dir(cluster));
    let entrance = memo.with_entry(&gitops, |entry| if entry.dir == gitops_dir { stamp.entry(&gitops, entry, &content) } else { None })?;
    let mut sealed = Vec::with_capacity(component.sealed.len());
    for key in &component.sealed {
        let (id, now) = memo.with_entry(key, |entry| {
            let [object] = entry.objects.as_slice() else { return None };
            if entry.dir != dir || object.file != object.id.file_name() {
                return None;
            }
            let [now] = stamp.entry(key, entry, &content)?[..] else { return None };
            Some((object.id.clone(), now))
        })?;
        sealed.push((key.clone(), id, now));
    }
    Some((component, depends_on.to_vec(), depth, [(template, objects), (gitops, entrance)], sealed))
}

/// The entries of the namespaces a render gave `outcomes` for, once its Secrets are sealed:
/// `jobs` is this render's whole memo table (the sealed Secrets' entries in it), `content` the
/// content id of each file of the new tree, and `stamper` the memo's ([`Memo::stamper`]). A kept namespace keeps its entry; a rendered
/// one whose every component has its entries gets a new one; any other gets none (it is
/// rendered as usual next time).
#[must_use]
pub(crate) fn record(
    stamper: &Stamper,
    outcomes: Vec<Outcome>,
    jobs: &memo::Table,
    content: &(dyn Fn(&str) -> Option<ContentId> + Sync),
) -> Table {
    use rayon::prelude::*;
    outcomes
        .into_par_iter()
        .filter_map(|outcome| match outcome {
            Outcome::Kept { job, entry } => Some((job, entry)),
            Outcome::Rendered { job, inputs, outcomes, files, components } => {
                let entry = record_one(stamper, &job, (&inputs, &outcomes, files.as_ref()), &components, jobs, content)?;
                Some((job, entry))
            }
        })
        .collect()
}

fn record_one(
    stamper: &Stamper,
    job: &str,
    (inputs, outcomes, files): (&[u8; 32], &Outcomes, Option<&[u8; 32]>),
    components: &[Shape],
    jobs: &memo::Table,
    content: &dyn Fn(&str) -> Option<ContentId>,
) -> Option<UnitEntry> {
    let (cluster, _) = parse_job(job)?;
    let gitops_dir = crate::layout::gitops_dir(cluster);
    let mut stamp = Stamp::new(stamper, job, inputs, outcomes, files);
    let mut kept = Vec::with_capacity(components.len());
    for shape in components {
        stamp.component(&shape.id, &shape.timeout, shape.depth, &shape.depends_on);
        let dir = crate::layout::component_dir(cluster, &shape.id);
        let template = memo::component_job(cluster, &shape.id);
        let entry = jobs.get(&template).filter(|entry| entry.dir == dir)?;
        stamp.entry(&template, entry, content)?;
        let gitops = memo::gitops_job(cluster, &shape.id);
        let entry = jobs.get(&gitops).filter(|entry| entry.dir == gitops_dir)?;
        stamp.entry(&gitops, entry, content)?;
        // NB: in the order the component lists its Secrets, which is the order of its files.
        let prefix = memo::sealed_job(cluster, &format!("{dir}/"));
        let mut by_name: HashMap<(Option<&str>, &str), (&String, &Entry)> = HashMap::new();
        for (key, entry) in jobs.range(prefix.clone()..).take_while(|(key, _)| key.starts_with(&prefix)) {
            if let (true, [object]) = (entry.dir == dir, entry.objects.as_slice()) {
                by_name.insert((object.id.namespace(), object.id.name.as_str()), (key, entry));
            }
        }
        if by_name.len() != shape.secrets.len() {
            return None;
        }
        let mut sealed = Vec::with_capacity(shape.secrets.len());
        for (namespace, name) in &shape.secrets {
            let (key, entry) = by_name.get(&(Some(namespace.as_str()), name.as_str()))?;
            stamp.entry(key, entry, content)?;
            sealed.push((*key).clone());
        }
        kept.push(UnitComponent { id: shape.id.clone(), timeout: shape.timeout.clone(), sealed });
    }
    Some(UnitEntry { stamp: stamp.finish(), reads: outcomes.keys().cloned().collect(), components: kept })
}
