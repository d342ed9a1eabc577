//! `tfrs diff --live`: render in memory, pass the cluster guard, compare with the live cluster
//! ([`crate::live::drift`]), then report in the Git diff's formats, with readiness and refused
//! dry runs after it.

use super::args::DiffArgs;
use super::diff_report::Report;
use super::{Colour, Status};
use crate::reconcile::apply::Target;
use crate::tree::cause::Causes;
use crate::tree::diff::diff;
use anyhow::Context as _;
use rand::Rng as _;
use std::io::Write;
use std::time::Duration;
use tokio::time::Instant;

/// Requests in flight at once.
const CONCURRENCY: usize = 16;

/// Runs `tfrs diff --live`. Exit: 0 no drift and everything ready, 1 drift, a refused dry run or
/// an unready component, 2 error.
pub fn run(args: &DiffArgs, colour: Colour, stdout: &mut dyn Write) -> anyhow::Result<Status> {
    let Some((spec, bundle)) = super::stages::load(&args.inputs, &args.settings.overlays, super::stages::Effect::Reads)? else {
        return Ok(Status::Error);
    };
    let settings = &args.settings;
    let ([] | [_]) = settings.clusters.as_slice() else {
        anyhow::bail!("`--live` compares one cluster: pass one `--cluster`");
    };
    let identity = match &args.age_identity {
        Some(path) => Some(zeroize::Zeroizing::new(
            std::fs::read_to_string(path).with_context(|| format!("cannot read age identity `{}`", path.display()))?,
        )),
        None => None,
    };
    let rollout = super::reconcile::rendered(
        &spec,
        &bundle,
        settings.templates.as_deref(),
        settings.master_key_file.as_deref(),
        settings.clusters.first().map(String::as_str),
        identity.as_deref().map(String::as_str),
    )?;
    let Some(rollout) = rollout else { return Ok(Status::Error) };
    let cluster = rollout.plan.cluster.clone();
    let mut key = [0u8; 32];
    crate::source::inputs::system_rng().fill_bytes(&mut key);
    let runtime =
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().context("cannot start the async runtime")?;
    let drift = runtime.block_on(async {
        let client = super::kube::client(&args.connection).await?;
        let target = Target::new(client);
        super::kube::guard(&target, &cluster, false).await?;
        let deadline = Instant::now() + Duration::from_secs(600);
        crate::live::drift::compare(&target, &rollout, &key, CONCURRENCY, deadline).await.context("cannot read the cluster")
    })?;
    let found = diff(&drift.live, &drift.applied);
    let review = crate::tree::review::review(&drift.live, &drift.applied, &found);
    let causes = Causes { entries: vec![Vec::new(); found.entries.len()], spec: Vec::new() };
    let reference = format!("live cluster `{cluster}`");
    let notes = vec![format!(
        "against the live cluster: `added` is missing on the cluster, `removed` is on the cluster only (labelled as ours: `reconcile --prune` deletes it), `changed` is what an apply would change"
    )];
    let report = Report { reference: &reference, found, review, causes, version: None, notes };
    super::diff::write_report(&report, args, None, colour, stdout)?;
    problems(&drift)?;
    let drifted = !report.found.is_empty() || !drift.refused.is_empty() || !drift.unready.is_empty();
    Ok(if drifted { Status::Failure } else { Status::Success })
}

/// The refused dry runs, the fields another manager owns and the unready components, on stderr.
fn problems(drift: &crate::live::drift::Drift) -> std::io::Result<()> {
    let mut stderr = std::io::stderr().lock();
    for refused in &drift.refused {
        writeln!(stderr, "refused: {refused}")?;
    }
    for conflict in &drift.conflicts {
        writeln!(stderr, "owned by another manager: {conflict}")?;
    }
    for failure in &drift.unready {
        writeln!(stderr, "not ready: {failure}")?;
    }
    Ok(())
}
