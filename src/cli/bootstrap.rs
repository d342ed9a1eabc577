//! `tfrs bootstrap`: render the specs in memory, read the key material, then run the five
//! phases of [`crate::live::bootstrap`] against the cluster, printing each phase and object.

use super::Status;
use super::args::{BootstrapArgs, ProgressFormat};
use crate::live::bootstrap::{self, Event, PHASES, PhaseStatus, Sealing, Settings, checks::Needs, objects::Source};
use crate::reconcile::apply::{Change, Target};
use crate::secrets::sealed::{Certificate, PrivateKey};
use crate::spec::model::{ClusterSpec, SealingBackend};
use crate::spec::{Bundle, Object, Spec};
use anyhow::{Context as _, bail};
use std::io::Write;
use std::str::FromStr as _;
use zeroize::Zeroizing;

/// Runs `tfrs bootstrap`.
pub fn run(args: &BootstrapArgs, stdout: &mut dyn Write) -> anyhow::Result<Status> {
    let Some((spec, bundle)) = super::stages::load(&args.spec.inputs, &args.spec.overlays, super::stages::Effect::Applies)? else {
        return Ok(Status::Error);
    };
    let age = match (&args.age_identity, &args.sealing_key) {
        (Some(path), _) => Some(Zeroizing::new(read(path, "age identity")?)),
        _ => None,
    };
    let age_text = age.as_ref().map(|bytes| String::from_utf8_lossy(bytes).into_owned()).map(Zeroizing::new);
    let rollout = super::reconcile::rendered(
        &spec,
        &bundle,
        args.templates.as_deref(),
        args.master_key_file.as_deref(),
        args.spec.cluster.as_deref(),
        age_text.as_deref().map(String::as_str),
    )?;
    let Some(rollout) = rollout else { return Ok(Status::Error) };
    let cluster = spec.clusters.iter().find(|c| c.name() == rollout.plan.cluster).context("the rendered cluster is not in the specs")?;
    let settings = settings(args, &spec, &bundle, cluster, age)?;
    let runtime =
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().context("cannot start the async runtime")?;
    let format = args.progress;
    let progress = move |event: &Event| print_event(format, event);
    let result = runtime.block_on(async {
        let client = super::kube::client(&args.connection).await?;
        let target = Target::new(client);
        anyhow::Ok(bootstrap::bootstrap(&target, &settings, &rollout, &progress).await)
    })?;
    let name = &settings.cluster;
    match result {
        Ok(report) => {
            let [created, configured, unchanged] = report.changes;
            let line = if report.changed() == 0 {
                format!("cluster `{name}` is bootstrapped already: nothing changed ({unchanged} objects unchanged)")
            } else {
                format!(
                    "bootstrapped cluster `{name}` (Kubernetes {}): {created} created, {configured} configured, {unchanged} unchanged; the engine now applies `clusters/{name}` (follow it with `tfrs reconcile --verify-only`)",
                    report.version
                )
            };
            match format {
                ProgressFormat::Human => writeln!(stdout, "{line}")?,
                ProgressFormat::Json => eprintln!("{line}"),
            }
            Ok(Status::Success)
        }
        Err(error) if error.is_refusal() => Err(anyhow::Error::new(error)),
        Err(error) => {
            eprintln!("error: bootstrap of cluster `{name}` stopped: {error}");
            Ok(Status::Failure)
        }
    }
}

fn read(path: &std::path::Path, what: &str) -> anyhow::Result<Vec<u8>> {
    std::fs::read(path).with_context(|| format!("cannot read the {what} `{}`", path.display()))
}

/// What the spec and the key files say bootstrap must do; refuses key material that does not
/// belong to the spec's certificate or recipients, before any connection.
fn settings(
    args: &BootstrapArgs,
    spec: &Spec,
    bundle: &Bundle,
    cluster: &Object<ClusterSpec>,
    age: Option<Zeroizing<Vec<u8>>>,
) -> anyhow::Result<Settings> {
    let name = cluster.name().to_owned();
    let shared_caches = spec
        .tenants
        .iter()
        .filter(|t| t.spec.cluster == name && t.spec.shared_cache.enabled)
        .map(|t| (t.name().to_owned(), t.spec.shared_cache.storage_class.clone()))
        .collect();
    let gitops = &cluster.spec.gitops;
    Ok(Settings {
        needs: Needs { engine: gitops.engine, shared_caches, ingress: cluster.spec.ingress.kind },
        sealing: sealing(args, bundle, cluster, age)?,
        source: Source {
            url: gitops.repo_url.clone(),
            revision: gitops.revision.clone(),
            source_ref: gitops.source_ref.clone(),
            secret: args.git_secret.clone(),
        },
        cluster: name,
        adopt: args.adopt,
        timeout: args.timeout,
        poll_interval: args.poll_interval,
    })
}

fn sealing(
    args: &BootstrapArgs,
    bundle: &Bundle,
    cluster: &Object<ClusterSpec>,
    age: Option<Zeroizing<Vec<u8>>>,
) -> anyhow::Result<Sealing> {
    let sealing = &cluster.spec.sealing;
    match sealing.backend {
        SealingBackend::SealedSecrets => {
            let Some(key_path) = &args.sealing_key else {
                bail!(
                    "cluster `{}` seals with `sealed-secrets`: pass `--sealing-key FILE`, the private key of `spec.sealing.certFile` (docs/bootstrap.md)",
                    cluster.name()
                )
            };
            let cert_path = crate::pipeline::cert_path(cluster, bundle);
            let pem = read(&cert_path, "certificate")?;
            let now = crate::source::inputs::unix_now();
            let certificate =
                Certificate::from_pem(&String::from_utf8_lossy(&pem), now).with_context(|| format!("`{}`", cert_path.display()))?;
            let key = Zeroizing::new(read(key_path, "sealing key")?);
            let parsed = PrivateKey::from_pem(&String::from_utf8_lossy(&key)).with_context(|| format!("`{}`", key_path.display()))?;
            if !certificate.is_pair_of(&parsed) {
                bail!(
                    "`{}` is not the private key of `{}` (spec.sealing.certFile): the controller could not unseal what tfrs seals",
                    key_path.display(),
                    cert_path.display()
                );
            }
            Ok(Sealing::SealedSecrets {
                namespace: sealing.controller_namespace.clone(),
                fingerprint: certificate.fingerprint(),
                certificate: pem,
                private_key: key,
            })
        }
        SealingBackend::SopsAge => sops_age(cluster, age),
    }
}

/// The age identity, refused unless it is one of the spec's recipients.
fn sops_age(cluster: &Object<ClusterSpec>, age: Option<Zeroizing<Vec<u8>>>) -> anyhow::Result<Sealing> {
    let sealing = &cluster.spec.sealing;
    let Some(identity) = age else {
        bail!(
            "cluster `{}` seals with `sops-age`: pass `--age-identity FILE`, the age identity of one of `spec.sealing.ageRecipients` (docs/bootstrap.md)",
            cluster.name()
        )
    };
    let text = String::from_utf8_lossy(&identity);
    let recipients: Vec<String> = text
        .lines()
        .filter(|line| line.starts_with("AGE-SECRET-KEY-"))
        .filter_map(|line| age::x25519::Identity::from_str(line.trim()).ok())
        .map(|i| i.to_public().to_string())
        .collect();
    if !recipients.iter().any(|r| sealing.age_recipients.contains(r)) {
        bail!(
            "the age identity in `--age-identity` is not one of `spec.sealing.ageRecipients` of cluster `{}`: Flux could not decrypt the Secrets",
            cluster.name()
        );
    }
    drop(text);
    Ok(Sealing::SopsAge { identity })
}

fn change_word(change: Change) -> &'static str {
    match change {
        Change::Created => "created",
        Change::Configured => "configured",
        Change::Unchanged => "unchanged",
    }
}

/// Prints one event: lines on stderr, or one JSON object per line on stdout.
fn print_event(format: ProgressFormat, event: &Event) {
    let total = PHASES.len();
    match (format, event) {
        (ProgressFormat::Human, Event::Phase { index, status, detail }) => {
            let phase = PHASES[*index];
            let head = format!("[{}/{total}] {} ({})", index + 1, phase.step, phase.what);
            match status {
                PhaseStatus::Running => eprintln!("{head} ..."),
                PhaseStatus::Done => eprintln!("{head}: done ({detail})"),
                PhaseStatus::Failed => eprintln!("{head}: failed: {detail}"),
            }
        }
        (ProgressFormat::Human, Event::Note { text, .. }) => eprintln!("      note: {text}"),
        (ProgressFormat::Json, Event::Note { index, text }) => {
            json_line(&serde_json::json!({"event": "note", "phase": index + 1, "text": text}))
        }
        (ProgressFormat::Human, Event::Object { object, change, .. }) => eprintln!("      {} {object}", change_word(*change)),
        (ProgressFormat::Json, Event::Phase { index, status, detail }) => {
            let phase = PHASES[*index];
            let status = match status {
                PhaseStatus::Running => "running",
                PhaseStatus::Done => "done",
                PhaseStatus::Failed => "failed",
            };
            let mut line = serde_json::json!({"event": "phase", "phase": index + 1, "phases": total, "key": phase.key, "step": phase.step, "status": status});
            if !detail.is_empty() {
                line["detail"] = detail.clone().into();
            }
            json_line(&line);
        }
        (ProgressFormat::Json, Event::Object { index, object, change }) => {
            json_line(&serde_json::json!({"event": "object", "phase": index + 1, "object": object, "change": change_word(*change)}));
        }
    }
}

fn json_line(line: &serde_json::Value) {
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{line}");
    let _ = stdout.flush();
}
