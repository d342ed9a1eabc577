//! What `tfrs diff` knows of the specs its base was rendered from. `tfrs commit` records the
//! specs' commit and the tfrs version as trailers of each rendered commit; the specs at that
//! commit are read back from their own repository (the one the inputs are in), so that a
//! changed object can be traced to the spec field that changed it.

use crate::git::provenance::{self, SOURCE_COMMIT, SOURCE_DIRTY, VERSION};
use crate::spec::{Bundle, Spec};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// The base's specs, when they could be read, and the tfrs that rendered it.
pub(crate) struct Base {
    /// The specs the base was rendered from and their files (named `<commit>:<path>`); empty
    /// for a branch that does not exist yet.
    pub specs: Option<(Spec, Bundle)>,
    /// The base's `Tfrs-Version`, when it differs from this tfrs: `old -> new`.
    pub version: Option<String>,
    /// What limits the causes (the specs could not be read; they were read at a commit the
    /// base was rendered from with uncommitted changes), for the report.
    pub notes: Vec<String>,
    /// Per cluster, how the base's Secrets were sealed (backend, identity), from its
    /// `Tfrs-Sealer` trailers.
    pub sealers: BTreeMap<String, (String, String)>,
}

/// Reads the base of a diff: `commit` is the target branch's tip (`None` when the branch does
/// not exist yet: every spec object is then new); `clusters`, the clusters selected (none: all).
pub(crate) fn read(commit: Option<&git2::Commit<'_>>, inputs: &[PathBuf], overlays: &[String], clusters: &[String]) -> Base {
    let Some(commit) = commit else {
        return Base { specs: Some((Spec::default(), Bundle::default())), version: None, notes: Vec::new(), sealers: BTreeMap::new() };
    };
    let trailers = provenance::read(commit.message().unwrap_or_default());
    let trailer = |key: &str| trailers.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v.clone());
    let now = super::version::line();
    let version = trailer(VERSION).filter(|old| *old != now).map(|old| format!("{old} -> {now}"));
    let short = &commit.id().to_string()[..12];
    let sealers = provenance::sealers(&trailers);
    let Some(source) = trailer(SOURCE_COMMIT) else {
        let note =
            format!("the base commit {short} does not record the specs' commit (`{SOURCE_COMMIT}`): causes name the spec objects only");
        return Base { specs: None, version, notes: vec![note], sealers };
    };
    match specs_at(inputs, overlays, &source) {
        Ok((mut spec, bundle)) => {
            // NB: with `--cluster`, only the selected clusters were rendered and compared.
            if !clusters.is_empty() {
                spec.clusters.retain(|o| clusters.contains(&o.cluster));
                spec.tenants.retain(|o| clusters.contains(&o.cluster));
                spec.servers.retain(|o| clusters.contains(&o.cluster));
            }
            let mut notes = Vec::new();
            if trailer(SOURCE_DIRTY).as_deref() == Some("true") {
                notes.push(format!(
                    "the base was rendered from the specs at {} with uncommitted changes: causes compare with that commit, so they may name a change already rendered",
                    &source[..12.min(source.len())]
                ));
            }
            Base { specs: Some((spec, bundle)), version, notes, sealers }
        }
        Err(why) => {
            let note = format!(
                "cannot read the specs of the base (commit {}): {why}; causes name the spec objects only",
                &source[..12.min(source.len())]
            );
            Base { specs: None, version, notes: vec![note], sealers }
        }
    }
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
