//! `tfrs validate`.

use super::Status;
use super::args::ValidateArgs;
use crate::source;
use crate::spec::diagnostic::{FileTable, Severity, render};
use crate::spec::explain;
use std::collections::BTreeSet;
use std::io::Write;

/// Runs `tfrs validate`: the report goes to stderr, the summary and `--explain` to stdout.
pub fn run(args: &ValidateArgs, stdout: &mut dyn Write) -> anyhow::Result<Status> {
    let bundle = source::read(&args.inputs, &args.overlays)?;
    let loaded = crate::pipeline::validate(&bundle);
    let shown: Vec<_> = loaded.diagnostics.iter().filter(|d| !(args.quiet && d.severity == Severity::Warning)).cloned().collect();
    let report = render(&shown, &bundle);
    let errors = loaded.error_count();
    let warnings = loaded.diagnostics.len() - errors;
    let files: BTreeSet<&str> = loaded.diagnostics.iter().filter(|d| d.is_error()).map(|d| bundle.name(d.origin.file)).collect();
    let mut stderr = std::io::stderr().lock();
    stderr.write_all(report.as_bytes())?;
    let Some(spec) = loaded.spec else {
        writeln!(stderr, "error: {} in {}{}", plural(errors, "error"), plural(files.len(), "file"), warning_note(warnings))?;
        return Ok(Status::Failure);
    };
    if args.render_env && !render_env(args, &spec, &bundle)? {
        return Ok(Status::Failure);
    }
    for field in &args.explain {
        let explanations = explain::explain(&spec, field);
        if explanations.is_empty() {
            writeln!(stdout, "{field}: no object has this field")?;
        }
        for explanation in explanations {
            writeln!(stdout, "{} {field} = {}", explanation.object, explanation.value)?;
            for (index, step) in explanation.steps.iter().enumerate() {
                let wins = if index + 1 == explanation.steps.len() { "  (wins)" } else { "" };
                let at = step.origin.map(|o| format!(" at {}:{}:{}", bundle.name(o.file), o.line, o.column)).unwrap_or_default();
                writeln!(stdout, "  {}{at}: {}{wins}", step.label, step.value)?;
            }
        }
    }
    writeln!(
        stdout,
        "valid: {}, {}, {}{}",
        plural(spec.clusters.len(), "TFRCluster"),
        plural(spec.tenants.len(), "TFRTenant"),
        plural(spec.servers.len(), "TFRServer"),
        warning_note(warnings)
    )?;
    Ok(Status::Success)
}

/// `--render-env`: renders and seals in memory, as `render` would, and reports its failure the
/// way `render` does. `false` for an invalid render (exit 1); an error for the environment.
fn render_env(args: &ValidateArgs, spec: &crate::spec::Spec, bundle: &crate::spec::Bundle) -> anyhow::Result<bool> {
    use crate::pipeline::{self, Setup};
    let setup = Setup::new(args.templates.as_deref(), args.master_key_file.as_deref(), args.allow_outside)?;
    match pipeline::build_sealed(spec, bundle, &setup) {
        Ok(_) => Ok(true),
        Err(failure) => super::stages::report(failure, bundle).map(|()| false),
    }
}

fn plural(count: usize, noun: &str) -> String {
    if count == 1 { format!("1 {noun}") } else { format!("{count} {noun}s") }
}

fn warning_note(warnings: usize) -> String {
    if warnings == 0 { String::new() } else { format!(" ({})", plural(warnings, "warning")) }
}
