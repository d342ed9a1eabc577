//! `tfrs render`: load -> render (pure) -> seal -> check -> write.

use super::Status;
use super::args::RenderArgs;
use super::{inputs, memo_cache, output};
use crate::render::memo;
use crate::render::tree::{self, SealOptions, build};
use crate::render::{Memo, Options, Templates, render_with_memo};
use crate::secrets::MasterKey;
use crate::secrets::seal::Sealer;
use crate::secrets::sealed::Certificate;
use crate::source;
use crate::spec::diagnostic::{FileTable, Severity};
use crate::spec::model::SealingBackend;
use crate::spec::{Bundle, Diagnostic, Spec, load as load_spec};
use anyhow::{Context as _, bail};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The render-time environment variables that override the tfrs-operator chart (`docs/render.md`).
const OPERATOR_VARIABLES: [&str; 4] = ["OPERATOR_HELM_REPO_URL", "OPERATOR_CHART_VERSION", "OPERATOR_IMAGE_TAG", "OPERATOR_RELEASE_NAME"];

/// Loads specs and adds the checks that need today's date (billing expiry), with the clock read
/// here at the edge.
pub(crate) fn load_with_clock(bundle: &Bundle) -> crate::spec::Loaded {
    let mut loaded = load_spec(bundle);
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

/// Reads and validates specs; prints the report of an invalid spec and returns `None`.
///
/// # Errors
///
/// I/O errors reading inputs.
pub fn load(inputs: &[PathBuf], overlays: &[String]) -> anyhow::Result<Option<(Spec, Bundle)>> {
    let bundle = source::read(inputs, overlays)?;
    let loaded = load_with_clock(&bundle);
    let errors: Vec<Diagnostic> = loaded.diagnostics.iter().filter(|d| d.severity == Severity::Error).cloned().collect();
    match loaded.spec {
        Some(spec) => Ok(Some((spec, bundle))),
        None => {
            report(&errors, &bundle)?;
            Ok(None)
        }
    }
}

fn report(diagnostics: &[Diagnostic], files: &dyn FileTable) -> anyhow::Result<()> {
    let mut stderr = std::io::stderr().lock();
    stderr.write_all(crate::spec::diagnostic::render(diagnostics, files).as_bytes())?;
    let errors = diagnostics.iter().filter(|d| d.is_error()).count();
    if errors > 0 {
        writeln!(stderr, "error: {errors} problem{} found; nothing was written", if errors == 1 { "" } else { "s" })?;
    }
    Ok(())
}

fn templates(dir: Option<&Path>) -> anyhow::Result<Templates> {
    let mut templates = Templates::builtin();
    let Some(dir) = dir else { return Ok(templates) };
    let files = output::read_tree(dir).with_context(|| format!("cannot read templates from `{}`", dir.display()))?;
    if files.is_empty() {
        bail!("no templates under `{}`", dir.display());
    }
    for (name, bytes) in files {
        let text = String::from_utf8(bytes).with_context(|| format!("template `{name}` is not UTF-8"))?;
        templates.set(name, text);
    }
    Ok(templates)
}

/// Renders, seals and assembles the whole tree in memory, as files by path relative to the
/// output root (`clusters/<cluster>/…`). `previous` returns the object previously written at
/// such a path (from the output directory, or a Git tree), for zero-diff sealing.
///
/// # Errors
///
/// Environment problems (certificate, master key). Spec and render problems are reported and
/// give `Ok(None)`.
pub fn render_tree(
    spec: &Spec,
    bundle: &Bundle,
    templates_dir: Option<&Path>,
    master_key_file: Option<&Path>,
    previous: &dyn Fn(&str) -> Option<serde_json::Value>,
) -> anyhow::Result<Option<BTreeMap<String, Vec<u8>>>> {
    render_tree_with(spec, bundle, templates_dir, master_key_file, false, previous)
}

/// [`render_tree`], optionally accepting `fromFile` paths outside the spec directories.
///
/// # Errors
///
/// As [`render_tree`].
pub fn render_tree_with(
    spec: &Spec,
    bundle: &Bundle,
    templates_dir: Option<&Path>,
    master_key_file: Option<&Path>,
    allow_outside: bool,
    previous: &dyn Fn(&str) -> Option<serde_json::Value>,
) -> anyhow::Result<Option<BTreeMap<String, Vec<u8>>>> {
    Ok(render_tree_memo(spec, bundle, templates_dir, master_key_file, allow_outside, previous, None)?.map(|tree| tree.files))
}

/// [`render_tree_with`], reusing what the memo `last` (the table the last render recorded and
/// the tree it wrote) still holds; returns the files and the memo to keep for the next render
/// (with how many templated units it gave back).
///
/// # Errors
///
/// As [`render_tree`].
pub fn render_tree_memo(
    spec: &Spec,
    bundle: &Bundle,
    templates_dir: Option<&Path>,
    master_key_file: Option<&Path>,
    allow_outside: bool,
    previous: &dyn Fn(&str) -> Option<serde_json::Value>,
    last: Option<(memo::Table, &BTreeMap<String, Vec<u8>>)>,
) -> anyhow::Result<Option<RenderedTree>> {
    let master = inputs::master_key(master_key_file)?;
    let mut options = Options { templates: templates(templates_dir)?, operator_overrides: BTreeMap::new() };
    for name in OPERATOR_VARIABLES {
        if let Ok(value) = std::env::var(name) {
            options.operator_overrides.insert(name.to_owned(), value);
        }
    }
    let secret_inputs = inputs::OsInputs { allow_outside };
    let memo = match (&master, last) {
        (Some(master), Some((table, tree))) => {
            Some(Memo::new(master.memo_key(), format!("{} {}", memo_cache::build_id(), options.templates.digest()), table, tree))
        }
        _ => None,
    };
    let rendered = match render_with_memo(spec, bundle, &options, &secret_inputs, master.as_ref(), memo.as_ref()) {
        Ok(rendered) => rendered,
        Err(problems) if problems.environment => {
            // NB: an environment problem (no master key, an unset variable) exits 2, like any
            // other environment error; the report still names each field.
            let mut stderr = std::io::stderr().lock();
            stderr.write_all(crate::spec::diagnostic::render(&problems.diagnostics, bundle).as_bytes())?;
            let count = problems.diagnostics.len();
            bail!("{count} problem{} with the render environment; nothing was written", if count == 1 { "" } else { "s" });
        }
        Err(problems) => {
            report(&problems.diagnostics, bundle)?;
            return Ok(None);
        }
    };
    let now = inputs::unix_now();
    let fingerprint_key = master.as_ref().map(MasterKey::fingerprint_key);
    let mut files = BTreeMap::new();
    let mut rng = inputs::system_rng();
    for cluster in rendered.clusters {
        let Some(object) = spec.clusters.iter().find(|c| c.name() == cluster.name) else { continue };
        let needs_sealing = cluster.components.iter().any(|c| !c.secrets.is_empty());
        let sealing = &object.spec.sealing;
        let sealer = match sealing.backend {
            SealingBackend::SealedSecrets => {
                let origin = object.locate("spec.sealing.certFile");
                if sealing.cert_file.is_empty() {
                    if needs_sealing {
                        let diagnostic = Diagnostic::error(
                            origin,
                            "spec.sealing.certFile",
                            "a controller certificate is required to seal Secrets with `sealed-secrets`",
                        )
                        .with_help("fetch it with `kubeseal --fetch-cert > cert.pem` and set `spec.sealing.certFile: cert.pem`");
                        report(&[diagnostic], bundle)?;
                        return Ok(None);
                    }
                    None
                } else {
                    let spec_file = bundle.name(origin.file);
                    let path = Path::new(spec_file).parent().unwrap_or(Path::new("")).join(&sealing.cert_file);
                    let pem = match std::fs::read_to_string(&path) {
                        Ok(pem) => pem,
                        Err(error) => {
                            let diagnostic =
                                Diagnostic::error(origin, "spec.sealing.certFile", format!("cannot read `{}`: {error}", path.display()))
                                    .with_help("fetch it with `kubeseal --fetch-cert > cert.pem`; the path is relative to the spec file");
                            std::io::stderr().lock().write_all(crate::spec::diagnostic::render(&[diagnostic], bundle).as_bytes())?;
                            bail!("the sealing certificate cannot be read; nothing was written");
                        }
                    };
                    match Certificate::from_pem(&pem, now) {
                        Ok(certificate) => Some(Sealer::SealedSecrets { certificate }),
                        Err(error) => {
                            let diagnostic = Diagnostic::error(origin, "spec.sealing.certFile", format!("`{}`: {error}", path.display()));
                            report(&[diagnostic], bundle)?;
                            return Ok(None);
                        }
                    }
                }
            }
            SealingBackend::SopsAge => {
                Some(Sealer::SopsAge { recipients: sealing.age_recipients.clone(), lastmodified: inputs::rfc3339(now) })
            }
        };
        let built = build(cluster, &SealOptions { sealer: sealer.as_ref(), fingerprint_key: fingerprint_key.as_ref() }, previous, &mut rng);
        match built {
            Ok(built) => files.extend(built),
            // NB: the templates' problem, not the environment's: reported like a template
            // problem (exit 1), and nothing is written.
            Err(error @ (tree::Error::SameObject(_) | tree::Error::FileClash { .. })) => {
                let mut stderr = std::io::stderr().lock();
                for line in error.to_string().lines() {
                    writeln!(stderr, "error: {line}")?;
                }
                writeln!(stderr, "error: the rendered tree of cluster `{}` is inconsistent; nothing was written", object.name())?;
                return Ok(None);
            }
            Err(error) => return Err(error.into()),
        }
    }
    Ok(Some(RenderedTree { files, memo: rendered.memo, reused: rendered.reused }))
}

/// A rendered tree, the memo it leaves for the next render and how much of the last one it
/// used.
pub struct RenderedTree {
    /// The files, by path relative to the output directory.
    pub files: BTreeMap<String, Vec<u8>>,
    /// Every templated unit's memo entry.
    pub memo: memo::Table,
    /// How many units the last render's memo gave back.
    pub reused: usize,
}

/// Runs `tfrs render`.
pub fn run(args: &RenderArgs, stdout: &mut dyn Write) -> anyhow::Result<Status> {
    let out = output::resolve(&args.out)?;
    if !args.check {
        // NB: `--check` writes nothing, so it may compare against any directory, e.g. a Git
        // checkout of the committed tree.
        output::recover(&out)?;
        output::check_writable(&out)?;
    }
    let Some((spec, bundle)) = load(&args.inputs, &args.settings.overlays)? else {
        return Ok(Status::Failure);
    };
    // The current tree is read once: for the sealing reuse, the change count and the write
    // (unchanged files are linked, not written).
    let mut old = output::read_tree(&out)?;
    if args.check {
        // Only the rendered part of a checkout counts (not `.git/`, a README, other files).
        old.retain(|path, _| path.starts_with("clusters/"));
    }
    // NB: the files sealing may reuse (Secrets are sealed into `sealedsecret-*` or `secret-*`)
    // are parsed up front, in parallel; any other path asked for is parsed when asked.
    let sealed: std::collections::HashMap<&str, serde_json::Value> = {
        use rayon::prelude::*;
        let is_sealed = |path: &str| path.rsplit('/').next().is_some_and(|f| f.starts_with("sealedsecret-") || f.starts_with("secret-"));
        let candidates: Vec<(&String, &Vec<u8>)> = old.iter().filter(|(path, _)| is_sealed(path)).collect();
        candidates.into_par_iter().filter_map(|(path, bytes)| Some((path.as_str(), crate::manifest::read_object(bytes)?))).collect()
    };
    let previous = |relative: &str| match sealed.get(relative) {
        Some(object) => Some(object.clone()),
        None => old.get(relative).and_then(|bytes| crate::manifest::read_object(bytes)),
    };
    // The memo of the last render into this directory (none with `--no-memo`, or when it
    // cannot be read: then every component is templated).
    let memo_file = (!args.no_memo).then(|| memo_cache::path(&out)).flatten();
    let last = memo_file.as_deref().map(|file| (memo_cache::load(file), &old));
    let Some(RenderedTree { files, memo: table, reused }) = render_tree_memo(
        &spec,
        &bundle,
        args.settings.templates.as_deref(),
        args.settings.master_key_file.as_deref(),
        args.settings.allow_outside,
        &previous,
        last,
    )?
    else {
        return Ok(Status::Failure);
    };
    let changes = output::Changes::new(&files, &old);
    let (changed, removed) = (changes.changed.len(), changes.removed.len());
    let cluster_of = |path: &str| path.strip_prefix("clusters/").and_then(|rest| rest.split('/').next()).map(str::to_owned);
    let rendered: std::collections::BTreeSet<String> = files.keys().filter_map(|p| cluster_of(p)).collect();
    let dropped: std::collections::BTreeSet<String> = old.keys().filter_map(|p| cluster_of(p)).filter(|c| !rendered.contains(c)).collect();
    for cluster in &dropped {
        let verb = if args.check { "would remove" } else { "removing" };
        eprintln!(
            "warning: {verb} `clusters/{cluster}/`: cluster `{cluster}` is not in the inputs (render every cluster into one directory, or each into its own)"
        );
    }
    if args.check {
        if changed == 0 && removed == 0 {
            writeln!(stdout, "up to date: {} files in `{}`", files.len(), args.out.display())?;
            return Ok(Status::Success);
        }
        writeln!(stdout, "out of date: {changed} files would change and {removed} would be removed in `{}`", args.out.display())?;
        return Ok(Status::Failure);
    }
    // NB: a tree that already holds exactly these files is left as it is (nothing to swap).
    if changed > 0 || removed > 0 || !out.join(output::MARKER).exists() {
        output::write(&out, &changes)?;
    }
    if let Some(file) = memo_file.as_ref().filter(|_| !args.check) {
        // NB: only after the tree is in place, and a memo that cannot be saved costs the next
        // render time, never correctness: the stamps are checked against the files.
        if let Err(error) = memo_cache::save(file, &table) {
            eprintln!("warning: the render memo was not saved to `{}`: {error}", file.display());
        }
    }
    let objects = files.keys().filter(|p| p.ends_with(".yaml") && !p.ends_with("kustomization.yaml")).count();
    // How much of the templating the memo saved (not shown without a memo).
    let memo_note = if table.is_empty() { String::new() } else { format!("; {reused} of {} templated units reused", table.len()) };
    writeln!(
        stdout,
        "rendered {} cluster{} into `{}`: {objects} objects in {} files ({changed} changed, {removed} removed{memo_note})",
        spec.clusters.len(),
        if spec.clusters.len() == 1 { "" } else { "s" },
        args.out.display(),
        files.len()
    )?;
    // NB: the process ends next; freeing tens of thousands of buffers one by one would take a
    // tenth of a large re-render.
    std::mem::forget(sealed);
    std::mem::forget((table, files, old, spec, bundle));
    Ok(Status::Success)
}
