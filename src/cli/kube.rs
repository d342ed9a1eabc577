//! What the commands that reach a cluster share: the kube client, found the kubectl way, and the
//! cluster guard in front of every command that acts on a cluster.

use super::args::Connection;
use crate::live::guard::{self, Verdict};
use crate::reconcile::apply::Target;
use anyhow::Context as _;
use std::io::Write as _;
use std::time::Duration;
use tokio::time::Instant;

/// The kube client for `connection`, without kube's own retries (callers retry with their own
/// backoff and deadlines).
///
/// # Errors
///
/// An unreadable kubeconfig, a missing context, no cluster configured.
pub async fn client(connection: &Connection) -> anyhow::Result<kube::Client> {
    let options = kube::config::KubeConfigOptions { context: connection.context.clone(), cluster: None, user: None };
    let mut config = match (&connection.kubeconfig, &connection.context) {
        (Some(path), _) => {
            let file =
                kube::config::Kubeconfig::read_from(path).with_context(|| format!("cannot read the kubeconfig `{}`", path.display()))?;
            kube::Config::from_custom_kubeconfig(file, &options).await.context("cannot use the kubeconfig")?
        }
        (None, Some(_)) => kube::Config::from_kubeconfig(&options).await.context("cannot use the kubeconfig")?,
        (None, None) => kube::Config::infer().await.context("no cluster configured (set `KUBECONFIG`, or pass `--kubeconfig`)")?,
    };
    config.default_retry = false;
    kube::Client::try_from(config).context("cannot build the Kubernetes client")
}

/// Refuses a target that is not cluster `expected` (see [`guard`]). With `adopt`, a missing or
/// copied record is written (and said on stderr).
///
/// # Errors
///
/// The refusal, worded for the user: the command exits 2.
pub async fn guard(target: &Target, expected: &str, adopt: bool) -> anyhow::Result<guard::Identity> {
    let deadline = Instant::now() + Duration::from_secs(60);
    match guard::check(target, expected, adopt, deadline).await {
        Ok(Verdict::Matches(identity)) => Ok(identity),
        Ok(Verdict::Unrecorded(identity)) => {
            guard::record(target, &identity, deadline).await.context("cannot record the cluster identity")?;
            let _ = writeln!(
                std::io::stderr(),
                "recorded this cluster as `{expected}` (ConfigMap `{}/{}`, kube-system UID {})",
                guard::NAMESPACE,
                guard::NAME,
                identity.uid
            );
            Ok(identity)
        }
        Err(refusal) if refusal.is_connection() => Err(anyhow::Error::new(refusal).context("cannot reach the API server")),
        Err(refusal) => Err(anyhow::anyhow!("refusing to act: {refusal}")),
    }
}
