//! `tfrs cert fetch`: the sealed-secrets controller's public certificate, read through the API
//! server's service proxy as `kubeseal --fetch-cert` does, after the cluster guard.

use super::Status;
use super::args::CertArgs;
use super::live_args::{CertCommand, CertFetchArgs};
use crate::reconcile::apply::Target;
use crate::secrets::sealed::Certificate;
use crate::spec::model::SealingBackend;
use anyhow::{Context as _, bail};
use std::io::Write;
use std::path::Path;

/// The port name of the controller's Service (the chart's `service.ports` entry `http`), which
/// serves `/v1/cert.pem`.
const PORT: &str = "http";

/// Runs `tfrs cert`.
pub fn run(args: &CertArgs, stdout: &mut dyn Write) -> anyhow::Result<Status> {
    match &args.command {
        CertCommand::Fetch(fetch) => run_fetch(fetch, stdout),
    }
}

/// The service proxy path of the controller's certificate.
#[must_use]
pub fn proxy_path(namespace: &str, controller: &str) -> String {
    format!("/api/v1/namespaces/{namespace}/services/http:{controller}:{PORT}/proxy/v1/cert.pem")
}

fn run_fetch(args: &CertFetchArgs, stdout: &mut dyn Write) -> anyhow::Result<Status> {
    let Some((spec, _bundle)) = super::stages::load(&args.spec.inputs, &args.spec.overlays, super::stages::Effect::Writes)? else {
        return Ok(Status::Error);
    };
    let names: Vec<String> = spec.clusters.iter().map(|c| c.name().to_owned()).collect();
    let name = super::reconcile::pick(&names, args.spec.cluster.as_deref(), Path::new("the inputs"))?;
    let cluster = spec.clusters.iter().find(|c| c.name() == name).context("the cluster is not in the specs")?;
    let sealing = &cluster.spec.sealing;
    if sealing.backend != SealingBackend::SealedSecrets {
        bail!("cluster `{name}` seals with `sops-age`: it has no sealed-secrets certificate");
    }
    let path = proxy_path(&sealing.controller_namespace, &sealing.controller_name);
    let runtime =
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().context("cannot start the async runtime")?;
    let pem = runtime.block_on(async {
        let client = super::kube::client(&args.connection).await?;
        super::kube::guard(&Target::new(client.clone()), &name, false).await?;
        let request = http::Request::get(&path).body(Vec::new()).context("cannot build the request")?;
        client.request_text(request).await.with_context(|| {
            format!(
                "cannot read the certificate of controller `{}/{}` through the API server (`{path}`): is the controller running?",
                sealing.controller_namespace, sealing.controller_name
            )
        })
    })?;
    let certificate = Certificate::from_pem(&pem, crate::source::inputs::unix_now()).with_context(|| {
        format!(
            "controller `{}/{}` answered something that is not a usable certificate",
            sealing.controller_namespace, sealing.controller_name
        )
    })?;
    if let Some(warning) = certificate.expiry_warning(crate::source::inputs::unix_now()) {
        eprintln!("warning: {warning}");
    }
    match &args.out {
        Some(out) => {
            write_atomically(out, pem.as_bytes()).with_context(|| format!("cannot write `{}`", out.display()))?;
            eprintln!("wrote the certificate of cluster `{name}` (SHA-256 {}) to `{}`", certificate.fingerprint(), out.display());
        }
        None => stdout.write_all(pem.as_bytes())?,
    }
    Ok(Status::Success)
}

/// Writes `bytes` to a partial file beside `path`, then renames it over `path`: a reader sees
/// the old certificate or the new one, never half of one.
fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut partial = path.as_os_str().to_owned();
    partial.push(".tfrs-partial");
    let partial = std::path::PathBuf::from(partial);
    std::fs::write(&partial, bytes)?;
    std::fs::rename(&partial, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&partial);
    })
}
