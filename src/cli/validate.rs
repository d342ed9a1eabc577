//! `tfrs validate`.

use super::Status;
use super::args::ReportFormat as Format;
use super::args::ValidateArgs;
use super::report;
use crate::pipeline::{self, Failure, Setup};
use crate::source;
use crate::spec::diagnostic::{FileTable, Rule, Severity, render};
use crate::spec::yaml::Origin;
use crate::spec::{Bundle, Diagnostic, Spec, explain};
use anyhow::bail;
use serde_json::json;
use std::collections::BTreeSet;
use std::io::Write;

/// Runs `tfrs validate`. In text, the report goes to stderr, the summary and `--explain` to
/// stdout; every other format prints one report on stdout.
pub fn run(args: &ValidateArgs, stdout: &mut dyn Write) -> anyhow::Result<Status> {
    if args.format != Format::Text {
        if !args.explain.is_empty() {
            bail!("`--explain` prints text: run it without `--format {}`", format_name(args.format));
        }
        return machine(args, stdout);
    }
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
    if args.render_env {
        let setup = Setup::new(args.templates.as_deref(), args.master_key_file.as_deref(), args.allow_outside)?;
        if let Err(failure) = pipeline::build_sealed(&spec, &bundle, &setup) {
            // NB: reported as `render` reports it, so the two print the same (but for what
            // render did not do: validate writes nothing either way).
            super::stages::report(failure, &bundle, super::stages::Effect::Reads)?;
            return Ok(Status::Failure);
        }
    }
    explain(args, &spec, &bundle, stdout)?;
    writeln!(stdout, "valid: {}{}", counts(&spec), warning_note(warnings))?;
    Ok(Status::Success)
}

/// `--format json|sarif|github`: every diagnostic of the specs and, with `--render-env`, of
/// the render, in one report on stdout; the exit status is the text report's.
fn machine(args: &ValidateArgs, stdout: &mut dyn Write) -> anyhow::Result<Status> {
    let bundle = source::read(&args.inputs, &args.overlays)?;
    let loaded = crate::pipeline::validate(&bundle);
    let mut diagnostics = loaded.diagnostics;
    let mut status = if loaded.spec.is_some() { Status::Success } else { Status::Failure };
    if let (Some(spec), true) = (&loaded.spec, args.render_env) {
        let setup = Setup::new(args.templates.as_deref(), args.master_key_file.as_deref(), args.allow_outside)?;
        if let Err(failure) = pipeline::build_sealed(spec, &bundle, &setup) {
            let (found, failed) = failure_diagnostics(failure)?;
            diagnostics.extend(found);
            status = failed;
        }
    }
    diagnostics.retain(|d| !(args.quiet && d.severity == Severity::Warning));
    let findings = report::findings(&diagnostics, &bundle);
    let mut summary = serde_json::Map::new();
    summary.insert("command".into(), json!("validate"));
    let result = match status {
        Status::Success => "valid",
        Status::Failure => "invalid",
        Status::Error => "environment",
    };
    summary.insert("result".into(), json!(result));
    if let (Some(spec), Status::Success) = (&loaded.spec, status) {
        summary.insert(
            "objects".into(),
            json!({ "TFRCluster": spec.clusters.len(), "TFRTenant": spec.tenants.len(), "TFRServer": spec.servers.len() }),
        );
    }
    match args.format {
        Format::Json => writeln!(stdout, "{}", serde_json::to_string_pretty(&report::json(summary, &findings))?)?,
        Format::Sarif => {
            let log = report::sarif(&report::spec_rules(), &findings, Some(&std::env::current_dir()?));
            writeln!(stdout, "{}", serde_json::to_string_pretty(&log)?)?;
        }
        Format::Github | Format::Text => {
            stdout.write_all(report::github(&findings).as_bytes())?;
            let errors = findings.iter().filter(|f| f.error).count();
            writeln!(stdout, "{result}: {}, {}", plural(errors, "error"), plural(findings.len() - errors, "warning"))?;
        }
    }
    Ok(status)
}

/// The diagnostics of a failed render and the status it gives (`Other` stays an error).
fn failure_diagnostics(failure: Failure) -> anyhow::Result<(Vec<Diagnostic>, Status)> {
    match failure {
        Failure::Invalid(diagnostics) => Ok((diagnostics, Status::Failure)),
        Failure::Environment(diagnostics) => Ok((diagnostics, Status::Error)),
        Failure::Inconsistent { cluster, error } => {
            let message = format!("the rendered tree of cluster `{cluster}` is inconsistent: {error}");
            Ok((vec![Diagnostic::error(Rule::Template, Origin::default(), "", message)], Status::Failure))
        }
        Failure::Other(error) => Err(error),
    }
}

/// `--explain`: where each named field's merged value came from.
fn explain(args: &ValidateArgs, spec: &Spec, bundle: &Bundle, stdout: &mut dyn Write) -> anyhow::Result<()> {
    for field in &args.explain {
        let explanations = explain::explain(spec, field);
        if explanations.is_empty() {
            writeln!(stdout, "{field}: no object has this field")?;
        }
        for explanation in explanations {
            writeln!(stdout, "{} {field} = {}", explanation.object, explanation.value)?;
            for (index, step) in explanation.steps.iter().enumerate() {
                let wins = if index + 1 == explanation.steps.len() { "  (wins)" } else { "" };
                let at = step.origin.map(|o| format!(" at {}", bundle.place(o))).unwrap_or_default();
                writeln!(stdout, "  {}{at}: {}{wins}", step.label, step.value)?;
            }
        }
    }
    Ok(())
}

/// How many objects the specs hold; in a fleet, where one declaration is placed in several
/// clusters (each placement an object), also how many names.
fn counts(spec: &Spec) -> String {
    let names = |names: Vec<&str>| names.into_iter().collect::<std::collections::BTreeSet<_>>().len();
    let tenants = names(spec.tenants.iter().map(|t| t.name()).collect());
    let servers = names(spec.servers.iter().map(|s| s.name()).collect());
    let placed = if (tenants, servers) == (spec.tenants.len(), spec.servers.len()) {
        String::new()
    } else {
        format!(" (one per cluster each is placed in: {} and {})", plural(tenants, "tenant name"), plural(servers, "server name"))
    };
    format!(
        "{}, {}, {}{placed}",
        plural(spec.clusters.len(), "TFRCluster"),
        plural(spec.tenants.len(), "TFRTenant"),
        plural(spec.servers.len(), "TFRServer")
    )
}

fn format_name(format: Format) -> &'static str {
    match format {
        Format::Text => "text",
        Format::Json => "json",
        Format::Sarif => "sarif",
        Format::Github => "github",
    }
}

fn plural(count: usize, noun: &str) -> String {
    if count == 1 { format!("1 {noun}") } else { format!("{count} {noun}s") }
}

fn warning_note(warnings: usize) -> String {
    if warnings == 0 { String::new() } else { format!(" ({})", plural(warnings, "warning")) }
}
