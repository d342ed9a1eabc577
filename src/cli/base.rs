//! What `tfrs diff` knows of the specs its base was rendered from. `tfrs commit` records the
//! specs' commit, the tfrs version, the clusters and their sealers as trailers of each rendered
//! commit; each cluster's last render is found walking the branch back (clusters committed
//! separately were rendered from different commits of the specs), and the specs at each such
//! commit are read back from their own repository (the one the inputs are in), so that a
//! changed object can be traced to the spec field that changed it.

use crate::git::provenance::{self, SOURCE_COMMIT, SOURCE_DIRTY, VERSION};
use crate::spec::{Bundle, Spec};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

/// The base's specs, as far as they could be read, and the tfrs that rendered it.
pub(crate) struct Base {
    /// Per commit of the specs the base's clusters were rendered from: those clusters and the
    /// specs of theirs (files named `<commit>:<path>`). A branch that does not exist yet is
    /// one group of every cluster with no specs: every spec object is new. A cluster in no
    /// group has no known specs: its causes are unknown.
    pub groups: Vec<(BTreeSet<String>, Spec, Bundle)>,
    /// The base's `Tfrs-Version`s that differ from this tfrs: `old -> new`.
    pub version: Option<String>,
    /// What limits the causes (specs that could not be read; specs read at a commit the base
    /// was rendered from with uncommitted changes), for the report.
    pub notes: Vec<String>,
    /// Per cluster, how the base's Secrets were sealed (backend, identity), from the
    /// `Tfrs-Sealer` trailer of its last render.
    pub sealers: BTreeMap<String, (String, String)>,
}

/// Reads the base of a diff of `clusters` (those rendered): `commit` is the target branch's
/// tip (`None` when the branch does not exist yet).
pub(crate) fn read(commit: Option<&git2::Commit<'_>>, inputs: &[PathBuf], overlays: &[String], clusters: &BTreeSet<String>) -> Base {
    let mut base = Base { groups: Vec::new(), version: None, notes: Vec::new(), sealers: BTreeMap::new() };
    let Some(commit) = commit else {
        base.groups.push((clusters.clone(), Spec::default(), Bundle::default()));
        return base;
    };
    let renders = provenance::last_renders(commit, clusters);
    let now = super::version::line();
    let mut versions = BTreeSet::new();
    // Per source commit (None: not recorded), its clusters and whether any render was dirty.
    let mut sources: BTreeMap<Option<String>, (BTreeSet<String>, bool)> = BTreeMap::new();
    for cluster in clusters {
        let trailers = renders.get(cluster).map_or(&[][..], Vec::as_slice);
        let trailer = |key: &str| trailers.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v.clone());
        versions.extend(trailer(VERSION).filter(|old| *old != now));
        if let Some(sealer) = provenance::sealers(trailers).remove(cluster) {
            base.sealers.insert(cluster.clone(), sealer);
        }
        let source = sources.entry(trailer(SOURCE_COMMIT)).or_default();
        source.0.insert(cluster.clone());
        source.1 |= trailer(SOURCE_DIRTY).as_deref() == Some("true");
    }
    if !versions.is_empty() {
        base.version = Some(format!("{} -> {now}", versions.into_iter().collect::<Vec<_>>().join(", ")));
    }
    for (source, (group, dirty)) in sources {
        let names = group.iter().map(String::as_str).collect::<Vec<_>>().join(", ");
        let Some(source) = source else {
            let tip = &commit.id().to_string()[..12];
            base.notes.push(format!(
                "the last render of {names} on the branch (from {tip} back) does not record the specs' commit (`{SOURCE_COMMIT}`): causes name the spec objects only"
            ));
            continue;
        };
        let short = &source[..12.min(source.len())];
        match specs_at(inputs, overlays, &source) {
            Ok((spec, bundle)) => {
                if dirty {
                    base.notes.push(format!(
                        "{names} was rendered from the specs at {short} with uncommitted changes: causes compare with that commit, so they may name a change already rendered"
                    ));
                }
                // NB: only the clusters rendered from this commit are compared with it.
                let spec = spec.only(&group).into_owned();
                base.groups.push((group, spec, bundle));
            }
            Err(why) => {
                base.notes.push(format!(
                    "cannot read the specs {names} was rendered from (commit {short}): {why}; causes name the spec objects only"
                ));
            }
        }
    }
    base
}

/// The specs of `inputs` as they were at commit `source`, validated by this tfrs.
fn specs_at(inputs: &[PathBuf], overlays: &[String], source: &str) -> Result<(Spec, Bundle), String> {
    let scratch = Scratch::new().map_err(|e| format!("cannot create a scratch directory: {e}"))?;
    let paths = provenance::checkout_inputs(inputs, source, &scratch.0)?;
    let mut bundle = crate::source::read(&paths, overlays).map_err(|e| e.to_string())?;
    let prefix = format!("{}/", scratch.0.display());
    let short = &source[..12.min(source.len())];
    for file in &mut bundle.files {
        if let Some(relative) = file.name.strip_prefix(&prefix) {
            file.name = format!("{short}:{relative}");
        }
    }
    let loaded = crate::pipeline::validate(&bundle);
    let errors = loaded.error_count();
    let spec = loaded.spec.ok_or_else(|| format!("they do not validate with this tfrs ({errors} problems)"))?;
    Ok((spec, bundle))
}

/// A directory removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> std::io::Result<Scratch> {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
        let path = std::env::temp_dir().join(format!("tfrs-base-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&path)?;
        Ok(Scratch(path))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
