//! The command line's side of the pipeline: specs loaded and failures reported the same way by
//! every command (the report on stderr; the command picks its exit code).

use super::args::RenderSettings;
use crate::pipeline::{self, Failure, Setup};
use crate::spec::diagnostic::{FileTable, render};
use crate::spec::{Bundle, Spec};
use crate::tree::Tree;
use anyhow::bail;
use std::io::Write;
use std::path::PathBuf;

/// What a command would have done had its specs been valid: the last words of its failure
/// report say that it was not done.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Effect {
    /// It writes files or commits (`render`, `commit`, `cert fetch`).
    Writes,
    /// It changes a cluster (`reconcile`, `bootstrap`).
    Applies,
    /// It only reads and reports (`validate`, `plan`, `graph`, `diff`, `audit`).
    Reads,
}

impl Effect {
    /// The end of a failure report's last line.
    fn undone(self) -> &'static str {
        match self {
            Effect::Writes => "; nothing was written",
            Effect::Applies => "; nothing was applied",
            Effect::Reads => "",
        }
    }
}

/// Reads and validates specs; reports an invalid spec (for a command of `effect`) and returns
/// `None`.
///
/// # Errors
///
/// I/O errors reading inputs.
pub(crate) fn load(inputs: &[PathBuf], overlays: &[String], effect: Effect) -> anyhow::Result<Option<(Spec, Bundle)>> {
    load_kept(inputs, overlays, None, effect)
}

/// [`load`], with parsed pieces of the spec files kept between runs
/// ([`crate::spec::load_kept`]).
///
/// # Errors
///
/// As [`load`].
pub(crate) fn load_kept(
    inputs: &[PathBuf],
    overlays: &[String],
    kept: Option<&dyn crate::spec::yaml::Pieces>,
    effect: Effect,
) -> anyhow::Result<Option<(Spec, Bundle)>> {
    let (bundle, spec) = pipeline::load(inputs, overlays, kept)?;
    match spec {
        Ok(spec) => Ok(Some((spec, bundle))),
        Err(failure) => {
            report(failure, &bundle, effect)?;
            Ok(None)
        }
    }
}

/// The part of `spec` that `--cluster` selects (all of it without the flag).
///
/// # Errors
///
/// A `--cluster` that names no cluster of the inputs (a usage error: nothing is written).
pub(crate) fn select(spec: Spec, bundle: &Bundle, clusters: &[String]) -> anyhow::Result<Spec> {
    if clusters.is_empty() {
        return Ok(spec);
    }
    Ok(crate::spec::select::clusters(&spec, bundle, clusters)?)
}

/// Builds the tree of `spec` with the render settings of the flags (no memo); reports a failure
/// and returns `None` for the command's negative result.
///
/// # Errors
///
/// The environment's failures, after their report.
pub(crate) fn build(spec: &Spec, bundle: &Bundle, settings: &RenderSettings) -> anyhow::Result<Option<Tree>> {
    let setup = Setup::new(settings.templates.as_deref(), settings.master_key_file.as_deref(), settings.allow_outside)?;
    match pipeline::build(spec, bundle, &setup, None) {
        Ok(built) => Ok(Some(built.tree)),
        Err(failure) => report(failure, bundle, Effect::Reads).map(|()| None),
    }
}

/// Reports why the pipeline stopped a command of `effect`. `Ok` for the command's negative
/// result (an invalid spec or template, already reported); `Err` for what exits 2 (the
/// environment, I/O).
///
/// # Errors
///
/// The environment's failures, after their report.
pub(crate) fn report(failure: Failure, files: &dyn FileTable, effect: Effect) -> anyhow::Result<()> {
    let undone = effect.undone();
    let mut stderr = std::io::stderr().lock();
    match failure {
        Failure::Invalid(diagnostics) => {
            stderr.write_all(render(&diagnostics, files).as_bytes())?;
            let errors = diagnostics.iter().filter(|d| d.is_error()).count();
            if errors > 0 {
                writeln!(stderr, "error: {errors} problem{} found{undone}", plural(errors))?;
            }
            Ok(())
        }
        // NB: an environment problem (no master key, an unset variable) exits 2, like any other
        // environment error; the report still names each field.
        Failure::Environment(diagnostics) => {
            stderr.write_all(render(&diagnostics, files).as_bytes())?;
            let count = diagnostics.iter().filter(|d| d.is_error()).count();
            bail!("{count} problem{} with the render environment{undone}", plural(count))
        }
        // NB: the templates' problem, not the environment's: reported like a template problem
        // (exit 1), and nothing is done.
        Failure::Inconsistent { cluster, error } => {
            for line in error.to_string().lines() {
                writeln!(stderr, "error: {line}")?;
            }
            writeln!(stderr, "error: the rendered tree of cluster `{cluster}` is inconsistent{undone}")?;
            Ok(())
        }
        Failure::Other(error) => Err(error),
    }
}

fn plural(count: usize) -> &'static str {
    if count == 1 { "" } else { "s" }
}
