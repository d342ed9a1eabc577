//! `tfrs reconcile`: read (or render) a plan, connect the kubectl way, roll out, report.

use super::Status;
use super::args::{ProgressFormat, ReconcileArgs};
use crate::layout;
use crate::reconcile::apply::Target;
use crate::reconcile::rollout::Rollout;
use crate::reconcile::{self, ComponentResult, Event, Mode, Options, Outcome, format_duration};
use crate::tree::{Plan, write};
use anyhow::{Context as _, bail};
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::collections::{BTreeMap, HashMap};
use std::io::{IsTerminal, Write};
use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

/// Runs `tfrs reconcile`.
pub fn run(args: &ReconcileArgs, stdout: &mut dyn Write) -> anyhow::Result<Status> {
    let Some(rollout) = load(args)? else {
        return Ok(Status::Error);
    };
    let options = Options {
        concurrency: usize::from(args.concurrency),
        timeout: args.timeout,
        poll_interval: args.poll_interval,
        mode: if args.verify_only {
            Mode::VerifyOnly
        } else if args.dry_run {
            Mode::DryRun
        } else {
            Mode::Apply
        },
        force_conflicts: args.force_conflicts,
        prune: args.prune,
    };
    let runtime =
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().context("cannot start the async runtime")?;
    let printer = Mutex::new(Printer::new(args.progress));
    let outcome = runtime.block_on(async {
        let client = super::kube::client(&args.connection).await?;
        let target = Target::new(client);
        // NB: `--adopt` conflicts with `--dry-run` and `--verify-only`: adopting always writes.
        super::kube::guard(&target, &rollout.plan.cluster, args.adopt).await?;
        let progress = |event: &Event| {
            let mut printer = printer.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            printer.event(event);
        };
        anyhow::Ok(reconcile::reconcile(&target, &rollout, &options, &progress).await?)
    })?;
    let printer = printer.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner);
    printer.finish();
    report(&rollout.plan.cluster, &outcome, options.mode, args.progress, stdout)?;
    if outcome.is_ready() {
        Ok(Status::Success)
    } else if outcome.failures().iter().any(|f| f.is_connection()) {
        Ok(Status::Error)
    } else {
        Ok(Status::Failure)
    }
}

/// Reads the rollout from a rendered directory, or renders spec inputs in memory; `None` after
/// reporting invalid specs.
fn load(args: &ReconcileArgs) -> anyhow::Result<Option<Rollout>> {
    let identity = match &args.age_identity {
        Some(path) => Some(zeroize::Zeroizing::new(
            std::fs::read_to_string(path).with_context(|| format!("cannot read age identity `{}`", path.display()))?,
        )),
        None => None,
    };
    let identity = identity.as_deref().map(String::as_str);
    if let [dir] = args.inputs.as_slice()
        && dir.is_dir()
        && (dir.join("plan.json").is_file() || dir.join("clusters").is_dir())
    {
        write::check_settled(dir)?;
        let cluster_dir = if dir.join("plan.json").is_file() {
            dir.clone()
        } else {
            let names: Vec<String> = std::fs::read_dir(dir.join("clusters"))
                .with_context(|| format!("cannot read `{}`", dir.join("clusters").display()))?
                .filter_map(Result::ok)
                .filter(|e| e.path().join("plan.json").is_file())
                .filter_map(|e| e.file_name().to_str().map(str::to_owned))
                .collect();
            dir.join("clusters").join(pick(&names, args.cluster.as_deref(), dir)?)
        };
        let plan_path = cluster_dir.join("plan.json");
        let bytes = std::fs::read(&plan_path).with_context(|| format!("cannot read `{}`", plan_path.display()))?;
        let plan = Plan::parse(&bytes).context("`plan.json` is not a valid plan").with_context(|| format!("`{}`", plan_path.display()))?;
        if let Some(wanted) = &args.cluster
            && wanted != &plan.cluster
        {
            bail!("`{}` is the plan of cluster `{}`, not `{wanted}`", plan_path.display(), plan.cluster);
        }
        let read = |relative: &str| std::fs::read(cluster_dir.join(relative)).ok();
        let rollout =
            Rollout::load(plan, &read, identity).with_context(|| format!("cannot load the plan in `{}`", cluster_dir.display()))?;
        return Ok(Some(rollout));
    }
    let Some((spec, bundle)) = super::stages::load(&args.inputs, &args.overlays, super::stages::Effect::Applies)? else {
        return Ok(None);
    };
    rendered(&spec, &bundle, args.templates.as_deref(), args.master_key_file.as_deref(), args.cluster.as_deref(), identity)
}

/// Renders `spec` in memory and loads the rollout of cluster `wanted` (or the only one); `None`
/// after reporting a failed render.
pub(super) fn rendered(
    spec: &crate::spec::Spec,
    bundle: &crate::spec::Bundle,
    templates: Option<&Path>,
    master_key_file: Option<&Path>,
    wanted: Option<&str>,
    identity: Option<&str>,
) -> anyhow::Result<Option<Rollout>> {
    // NB: sealing afresh (no previous tree) only changes ciphertext, which the controller
    // unseals to the same Secret.
    let setup = crate::pipeline::Setup::new(templates, master_key_file, false)?;
    let tree = match crate::pipeline::build_sealed(spec, bundle, &setup) {
        Ok(tree) => tree,
        Err(failure) => {
            super::stages::report(failure, bundle, super::stages::Effect::Applies)?;
            return Ok(None);
        }
    };
    let mut names: Vec<String> = tree.clusters().map(str::to_owned).collect();
    names.sort();
    let cluster = pick(&names, wanted, Path::new("the inputs"))?;
    let plan = tree.plans().iter().find(|plan| plan.cluster == cluster).context("the render produced no plan")?.clone();
    let prefix = format!("{}/", layout::cluster_dir(&cluster));
    let files = tree.files();
    let read = |relative: &str| files.get(&format!("{prefix}{relative}")).cloned();
    Ok(Some(Rollout::load(plan, &read, identity).context("cannot load the rendered plan")?))
}

pub(super) fn pick(names: &[String], wanted: Option<&str>, place: &Path) -> anyhow::Result<String> {
    match (wanted, names) {
        (Some(wanted), _) if names.iter().any(|n| n == wanted) => Ok(wanted.to_owned()),
        (Some(wanted), _) => bail!("no cluster `{wanted}` in `{}` (found: {})", place.display(), names.join(", ")),
        (None, [only]) => Ok(only.clone()),
        (None, []) => bail!("no `plan.json` in `{}`", place.display()),
        (None, _) => bail!("`{}` holds several clusters ({}): pick one with `--cluster`", place.display(), names.join(", ")),
    }
}

/// Prints progress events.
enum Printer {
    /// Plain lines on stderr (not a terminal).
    Lines,
    /// Spinners on a terminal.
    Spinners { bars: MultiProgress, running: HashMap<String, ProgressBar> },
    /// JSON lines on stdout.
    Json,
}

impl Printer {
    fn new(format: ProgressFormat) -> Self {
        match format {
            ProgressFormat::Json => Printer::Json,
            ProgressFormat::Human if std::io::stderr().is_terminal() => {
                Printer::Spinners { bars: MultiProgress::with_draw_target(ProgressDrawTarget::stderr()), running: HashMap::new() }
            }
            ProgressFormat::Human => Printer::Lines,
        }
    }

    /// Shows one event in this printer's format.
    fn event(&mut self, event: &Event) {
        let prefix = format!("[{}/{}] {}", event.step, event.total, event.component);
        let closing = closing(event);
        match self {
            Printer::Json => json_line(event),
            Printer::Lines => match (event.status, closing) {
                (reconcile::Status::Running, _) => eprintln!("{prefix} ... running"),
                (_, Some(text)) => eprintln!("{prefix} ... {text}"),
                _ => {}
            },
            Printer::Spinners { bars, running } => spinner(bars, running, event, prefix, closing),
        }
    }

    /// Stops any spinner still running; finished steps stay on the screen.
    fn finish(self) {
        if let Printer::Spinners { running, .. } = self {
            for bar in running.into_values() {
                bar.abandon();
            }
        }
    }
}

/// What a component's last event says (ready, failed or skipped, and when); `None` before.
fn closing(event: &Event) -> Option<String> {
    let elapsed = format_duration(event.elapsed);
    match event.status {
        reconcile::Status::Ready => {
            Some(if event.detail.is_empty() { format!("ready ({elapsed})") } else { format!("ready ({elapsed}; {})", event.detail) })
        }
        reconcile::Status::Failed => Some(format!("failed ({elapsed})")),
        reconcile::Status::Skipped => Some(format!("skipped: {}", event.detail)),
        _ => None,
    }
}

/// `--progress json`: one JSON line on stdout per event, except the waiting ones.
fn json_line(event: &Event) {
    if event.status == reconcile::Status::Waiting {
        return;
    }
    let mut line = serde_json::json!({
        "step": event.step,
        "total": event.total,
        "component": event.component,
        "status": event.status.as_str(),
        "elapsed_ms": u64::try_from(event.elapsed.as_millis()).unwrap_or(u64::MAX),
    });
    if !event.detail.is_empty() {
        line["detail"] = event.detail.clone().into();
    }
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{line}");
    let _ = stdout.flush();
}

/// On a terminal: a spinner per running component, showing what it waits for, finished with
/// its closing words.
fn spinner(bars: &MultiProgress, running: &mut HashMap<String, ProgressBar>, event: &Event, prefix: String, closing: Option<String>) {
    match (event.status, closing) {
        (reconcile::Status::Running, _) => {
            let bar = bars.add(ProgressBar::new_spinner());
            bar.set_style(
                ProgressStyle::with_template("{spinner} {prefix} {wide_msg}").unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            bar.set_prefix(prefix);
            bar.set_message("applying");
            bar.enable_steady_tick(Duration::from_millis(120));
            running.insert(event.component.clone(), bar);
        }
        (reconcile::Status::Waiting, _) => {
            if let Some(bar) = running.get(&event.component) {
                bar.set_message(format!("waiting: {}", event.detail));
            }
        }
        (_, Some(text)) => match running.remove(&event.component) {
            Some(bar) => bar.finish_with_message(text),
            None => {
                let _ = bars.println(format!("{prefix} ... {text}"));
            }
        },
        _ => {}
    }
}

/// The closing report: failures on stderr, the summary on stdout (human) or stderr (json).
fn report(cluster: &str, outcome: &Outcome, mode: Mode, format: ProgressFormat, stdout: &mut dyn Write) -> anyhow::Result<()> {
    let mut stderr = std::io::stderr().lock();
    let mut skipped: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    let mut ready = 0;
    for (id, result) in &outcome.components {
        match result {
            Some(ComponentResult::Ready { .. }) => ready += 1,
            Some(ComponentResult::Failed(failure)) => writeln!(stderr, "error: {failure}")?,
            Some(ComponentResult::Skipped { dependency }) => skipped.entry(dependency.as_str()).or_default().push(id),
            None => {}
        }
    }
    for (dependency, ids) in &skipped {
        writeln!(stderr, "skipped because `{dependency}` failed: {}", ids.iter().map(|i| format!("`{i}`")).collect::<Vec<_>>().join(", "))?;
    }
    for pruned in &outcome.pruned {
        writeln!(stderr, "pruned `{pruned}`")?;
    }
    for failure in &outcome.prune_failures {
        writeln!(stderr, "error: prune: {failure}")?;
    }
    let total = outcome.components.len();
    let verb = match mode {
        Mode::Apply => "reconciled",
        Mode::DryRun => "dry-ran",
        Mode::VerifyOnly => "verified",
    };
    let line = if outcome.is_ready() {
        format!("{verb} cluster `{cluster}`: {total} components ready in {}", format_duration(outcome.elapsed))
    } else {
        format!(
            "cluster `{cluster}`: {ready} of {total} components ready, {} failed, {} skipped ({})",
            outcome.failures().len(),
            skipped.values().map(Vec::len).sum::<usize>(),
            format_duration(outcome.elapsed)
        )
    };
    match format {
        ProgressFormat::Human => writeln!(stdout, "{line}")?,
        ProgressFormat::Json => writeln!(stderr, "{line}")?,
    }
    Ok(())
}
