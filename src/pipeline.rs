//! The pipeline every command shares: `spec -> render (pure) -> tree (laid out) -> seal`, with
//! what it needs from the outside world read once into a [`Setup`].
//!
//! [`load`] reads and validates the specs; [`build`] renders them and lays out the tree, with
//! the Secrets still in memory; the caller seals the tree ([`crate::tree::Tree::seal`]) against
//! whatever previous tree it has (the output directory, a Git ref, the branch it commits to, or
//! none), then writes, commits, diffs or rolls it out. Nothing here prints: failures come back
//! as [`Failure`], for the command line to report.

mod stamp;

use crate::render::{self, Memo, Options, Templates, memo};
use crate::secrets::MasterKey;
use crate::secrets::seal::Sealer;
use crate::secrets::sealed::Certificate;
use crate::source::{self, inputs};
use crate::spec::diagnostic::Rule;
use crate::spec::diagnostic::{FileTable, Severity, said_once};
use crate::spec::model::SealingBackend;
use crate::spec::{Bundle, Diagnostic, Loaded, Object, Spec};
use crate::tree::{self, Tree};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The render-time environment variables that override the tfrs-operator chart (`docs/render.md`).
const OPERATOR_VARIABLES: [&str; 4] = ["OPERATOR_HELM_REPO_URL", "OPERATOR_CHART_VERSION", "OPERATOR_IMAGE_TAG", "OPERATOR_RELEASE_NAME"];

/// Why the pipeline stopped. Every variant says what was found; nothing was written.
#[derive(Debug)]
pub enum Failure {
    /// The specs, the templates or the rendered objects are invalid (the command's negative
    /// result).
    Invalid(Vec<Diagnostic>),
    /// The environment lacks something the render needs: a master key, a variable, a file, a
    /// readable and current sealing certificate. Each cause once; spec problems found on the way
    /// (a cluster that needs a certificate and names none) are among them.
    Environment(Vec<Diagnostic>),
    /// The rendered tree of a cluster is inconsistent (two objects in one file or under one
    /// identity): the templates' problem.
    Inconsistent {
        /// The cluster.
        cluster: String,
        /// What clashed.
        error: Box<tree::Error>,
    },
    /// Anything else (a Secret that cannot be sealed, an unreadable input).
    Other(anyhow::Error),
}

impl From<anyhow::Error> for Failure {
    fn from(error: anyhow::Error) -> Self {
        Failure::Other(error)
    }
}

/// Everything a render needs besides the specs, read once from the flags and the environment.
pub struct Setup {
    options: Options,
    master: Option<MasterKey>,
    inputs: inputs::OsInputs,
    now: i64,
}

impl Setup {
    /// Reads the templates (built-ins, overridden by `templates`), the master key (`master_key`,
    /// else `TFRS_MASTER_KEY`), the operator overrides from the environment and the clock.
    ///
    /// # Errors
    ///
    /// Unreadable templates or master key.
    pub fn new(templates: Option<&Path>, master_key: Option<&Path>, allow_outside: bool) -> anyhow::Result<Setup> {
        let mut options = Options { templates: read_templates(templates)?, operator_overrides: BTreeMap::new() };
        for name in OPERATOR_VARIABLES {
            if let Ok(value) = std::env::var(name) {
                options.operator_overrides.insert(name.to_owned(), value);
            }
        }
        Ok(Setup { options, master: inputs::master_key(master_key)?, inputs: inputs::OsInputs { allow_outside }, now: inputs::unix_now() })
    }

    /// A memo over `tree` (what the files of the last render into the same place hold now) and
    /// the `table` that render recorded; `None` without a master key (the memo is keyed by it).
    #[must_use]
    pub fn memo<'a>(&self, table: memo::Previous, tree: &'a dyn memo::Contents) -> Option<Memo<'a>> {
        Some(Memo::new(self.memo_key()?, self.memo_build(), table, tree))
    }
}

fn read_templates(dir: Option<&Path>) -> anyhow::Result<Templates> {
    use anyhow::Context as _;
    let mut templates = Templates::builtin();
    let Some(dir) = dir else { return Ok(templates) };
    let files = tree::write::read_tree(dir).with_context(|| format!("cannot read templates from `{}`", dir.display()))?;
    if files.is_empty() {
        anyhow::bail!("no templates under `{}`", dir.display());
    }
    for (name, bytes) in files {
        let text = String::from_utf8(bytes).with_context(|| format!("template `{name}` is not UTF-8"))?;
        templates.set(name, text);
    }
    Ok(templates)
}

/// Validates the specs of `bundle`, with the checks that need today's date (billing expiry).
#[must_use]
pub fn validate(bundle: &Bundle) -> Loaded {
    validate_kept(bundle, None)
}

/// [`validate`], with parsed pieces of the spec files kept between runs (see
/// [`crate::spec::load_kept`]).
fn validate_kept(bundle: &Bundle, kept: Option<&dyn crate::spec::yaml::Pieces>) -> Loaded {
    let mut loaded = crate::spec::load_kept(bundle, kept);
    if let Some(spec) = &loaded.spec {
        let found = crate::spec::check::clock_checks(spec, inputs::unix_now());
        if found.iter().any(Diagnostic::is_error) {
            loaded.spec = None;
        }
        loaded.diagnostics.extend(found);
        loaded.diagnostics.sort_by_key(|d| d.origin);
    }
    loaded
}

/// Reads `inputs` and `overlays` and validates them: the spec, or every error found. `kept`
/// holds the spec files' pieces parsed before, when the caller keeps them between runs (see
/// [`crate::spec::load_kept`]).
///
/// # Errors
///
/// I/O errors reading inputs ([`Failure::Other`]); an invalid spec ([`Failure::Invalid`]). The
/// bundle is returned either way, for reports.
pub fn load(
    inputs: &[PathBuf],
    overlays: &[String],
    kept: Option<&dyn crate::spec::yaml::Pieces>,
) -> anyhow::Result<(Bundle, Result<Spec, Failure>)> {
    let bundle = source::read(inputs, overlays)?;
    let loaded = validate_kept(&bundle, kept);
    let spec =
        loaded.spec.ok_or_else(|| Failure::Invalid(loaded.diagnostics.into_iter().filter(|d| d.severity == Severity::Error).collect()));
    Ok((bundle, spec))
}

/// What [`build`] gives: the tree (Secrets not yet sealed), the memo to keep for the next render
/// and how many templated units the last one gave back.
pub struct Built {
    /// The tree.
    pub tree: Tree,
    /// Every templated unit's memo entry.
    pub memo: memo::Table,
    /// How many units the memo gave back.
    pub reused: usize,
    /// What each tenant namespace's memo entry is made from (see [`render::unit::record`]).
    pub units: Vec<render::unit::Outcome>,
}

/// Renders `spec` and lays out its tree; `memo` is the last render's memo, if any.
///
/// # Errors
///
/// See [`Failure`]. Every problem of the environment is reported at once: each cluster's
/// certificate is read even when the render already found an unset variable or no master key.
pub fn build(spec: &Spec, bundle: &Bundle, setup: &Setup, memo: Option<&Memo<'_>>) -> Result<Built, Failure> {
    build_from(spec, bundle, setup, memo, &setup.inputs)
}

/// [`build`], and the secret inputs it read with what each gave (for the cluster stamp,
/// `crate::render::stamp`).
///
/// # Errors
///
/// As [`build`].
pub fn build_recording(
    spec: &Spec,
    bundle: &Bundle,
    setup: &Setup,
    memo: Option<&Memo<'_>>,
) -> (Result<Built, Failure>, render::stamp::Outcomes) {
    let recording = render::stamp::Recording::new(&setup.inputs);
    let built = build_from(spec, bundle, setup, memo, &recording);
    (built, recording.into_outcomes())
}

fn build_from(
    spec: &Spec,
    bundle: &Bundle,
    setup: &Setup,
    memo: Option<&Memo<'_>>,
    inputs: &dyn crate::secrets::resolve::SecretInputs,
) -> Result<Built, Failure> {
    let mut environment = Vec::new();
    let rendered = match render::render_with_memo(spec, bundle, &setup.options, inputs, setup.master.as_ref(), memo) {
        Ok(rendered) => Some(rendered),
        Err(problems) if problems.environment => {
            environment = problems.diagnostics;
            None
        }
        Err(problems) => return Err(Failure::Invalid(said_once(problems.diagnostics))),
    };
    let mut invalid = Vec::new();
    let mut sealers = BTreeMap::new();
    for object in &spec.clusters {
        // NB: unknown when the render failed; then only a named certificate is checked.
        let needs_sealing = rendered.as_ref().map(|rendered| {
            let seals = |c: &render::Component| !c.secrets.is_empty() || !c.sealed.is_empty();
            rendered.clusters.iter().filter(|c| c.name == object.name()).any(|c| c.components.iter().any(seals))
        });
        match sealer(object, bundle, needs_sealing, setup.now) {
            Ok(sealer) => drop(sealers.insert(object.name(), sealer)),
            Err(SealerProblem::Environment(diagnostic)) => environment.push(*diagnostic),
            Err(SealerProblem::Spec(diagnostic)) => invalid.push(*diagnostic),
        }
    }
    let rendered = match rendered {
        Some(rendered) if environment.is_empty() && invalid.is_empty() => rendered,
        _ if environment.is_empty() => return Err(Failure::Invalid(invalid)),
        _ => {
            environment.extend(invalid);
            environment.sort_by_key(|d| d.origin);
            return Err(Failure::Environment(said_once(environment)));
        }
    };
    let mut tree = Tree::new(setup.master.as_ref().map(MasterKey::fingerprint_key));
    for cluster in rendered.clusters {
        let Some(sealer) = sealers.remove(cluster.name.as_str()) else { continue };
        let name = cluster.name.clone();
        tree.add_with_memo(cluster, sealer, memo).map_err(|error| {
            if error.is_inconsistent() {
                Failure::Inconsistent { cluster: name, error: Box::new(error) }
            } else {
                Failure::Other(error.into())
            }
        })?;
    }
    Ok(Built { tree, memo: rendered.memo, reused: rendered.reused, units: rendered.units })
}

/// Why a cluster has no sealer: the spec's problem, or the environment's (its certificate).
enum SealerProblem {
    Spec(Box<Diagnostic>),
    Environment(Box<Diagnostic>),
}

/// How a cluster's Secrets are sealed, from `spec.sealing`: its certificate read (relative to
/// the spec file) and checked against the clock, or its age recipients. `needs_sealing` is
/// whether the cluster has Secrets, when known.
fn sealer(
    cluster: &Object<crate::spec::model::ClusterSpec>,
    bundle: &Bundle,
    needs_sealing: Option<bool>,
    now: i64,
) -> Result<Option<Sealer>, SealerProblem> {
    let sealing = &cluster.spec.sealing;
    const FIELD: &str = "spec.sealing.certFile";
    let origin = cluster.locate(FIELD);
    match sealing.backend {
        SealingBackend::SopsAge => {
            Ok(Some(Sealer::SopsAge { recipients: sealing.age_recipients.clone(), lastmodified: inputs::rfc3339(now) }))
        }
        SealingBackend::SealedSecrets if sealing.cert_file.is_empty() => {
            if needs_sealing != Some(true) {
                return Ok(None);
            }
            Err(SealerProblem::Spec(Box::new(
                Diagnostic::error(
                    Rule::Environment,
                    origin,
                    FIELD,
                    "a controller certificate is required to seal Secrets with `sealed-secrets`",
                )
                .with_help("fetch it with `kubeseal --fetch-cert > cert.pem` and set `spec.sealing.certFile: cert.pem`"),
            )))
        }
        SealingBackend::SealedSecrets => {
            let path = cert_path(cluster, bundle);
            let pem = std::fs::read_to_string(&path).map_err(|error| {
                SealerProblem::Environment(Box::new(
                    Diagnostic::error(Rule::Environment, origin, FIELD, format!("cannot read `{}`: {error}", path.display()))
                        .with_help("fetch it with `kubeseal --fetch-cert > cert.pem`; the path is relative to the spec file")
                        .with_cause(format!("certificate {}", path.display())),
                ))
            })?;
            match Certificate::from_pem(&pem, now) {
                Ok(certificate) => {
                    if let Some(warning) = certificate.expiry_warning(now) {
                        // NB: a warning, not a problem: sealing with it still works today.
                        warn_once(format!("warning: `{}` ({FIELD} of cluster `{}`): {warning}", path.display(), cluster.name()));
                    }
                    Ok(Some(Sealer::SealedSecrets { certificate }))
                }
                Err(error) => Err(SealerProblem::Environment(Box::new(
                    Diagnostic::error(Rule::Environment, origin, FIELD, format!("`{}`: {error}", path.display()))
                        .with_cause(format!("certificate {}", path.display())),
                ))),
            }
        }
    }
}

/// Prints `warning` on standard error unless this run printed it already (a cluster rendered in
/// part and then whole reads its certificate twice).
fn warn_once(warning: String) {
    static SAID: std::sync::Mutex<std::collections::BTreeSet<String>> = std::sync::Mutex::new(std::collections::BTreeSet::new());
    if SAID.lock().unwrap_or_else(std::sync::PoisonError::into_inner).insert(warning.clone()) {
        eprintln!("{warning}");
    }
}

/// `spec.sealing.certFile` of `cluster`, relative to its spec file's directory.
#[must_use]
pub fn cert_path(cluster: &Object<crate::spec::model::ClusterSpec>, bundle: &Bundle) -> std::path::PathBuf {
    let spec_file = bundle.name(cluster.locate("spec.sealing.certFile").file);
    Path::new(spec_file).parent().unwrap_or(Path::new("")).join(&cluster.spec.sealing.cert_file)
}

/// [`build`] and seal afresh (no previous tree): for commands that roll the tree out or look
/// at it without keeping its ciphertext.
///
/// # Errors
///
/// As [`build`]; a Secret that cannot be sealed.
pub fn build_sealed(spec: &Spec, bundle: &Bundle, setup: &Setup) -> Result<Tree, Failure> {
    let mut tree = build(spec, bundle, setup, None)?.tree;
    tree.seal(&|_| None, &mut inputs::system_rng()).map_err(|e| Failure::Other(e.into()))?;
    Ok(tree)
}
