//! The arguments of the commands that reach a cluster (`reconcile`, `bootstrap`, `cert`), and
//! how they reach it.

use clap::ValueEnum;
use std::path::PathBuf;

/// `tfrs reconcile`.
#[derive(Debug, clap::Args)]
pub struct ReconcileArgs {
    /// A rendered directory (holding `plan.json`, or `clusters/<name>/plan.json`), or spec
    /// files and directories to render in memory.
    #[arg(required = true, value_name = "RENDERED_DIR|INPUT")]
    pub inputs: Vec<PathBuf>,
    /// The cluster to roll out when the directory or specs hold several.
    #[arg(long, value_name = "NAME")]
    pub cluster: Option<String>,
    /// The cluster to reach.
    #[command(flatten)]
    pub connection: Connection,
    /// Record this cluster's identity when it has none (or one copied from another cluster
    /// under the same name), instead of refusing it (docs/reconcile.md, "The cluster guard").
    #[arg(long, conflicts_with_all = ["verify_only", "dry_run"])]
    pub adopt: bool,
    /// Requests to the API server in flight at once (every component whose dependencies are
    /// ready runs; those on the longest remaining chain are served first).
    #[arg(long, default_value_t = 16, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub concurrency: u16,
    /// Timeout of each component, like `90s` or `5m` (default: per kind, see docs/reconcile.md;
    /// 5m for a HelmRelease without `spec.timeout`, 10m for Jobs and databases).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub timeout: Option<std::time::Duration>,
    /// The longest pause between two readiness polls (where a kind cannot be watched; with a
    /// watch, how often a waiting component re-checks at least).
    #[arg(long, default_value = "2s", value_name = "DURATION", value_parser = parse_duration)]
    pub poll_interval: std::time::Duration,
    /// Do not write: wait until everything is ready (for clusters where Argo CD or Flux
    /// applies). With `--timeout 0` it checks once.
    #[arg(long, conflicts_with_all = ["dry_run", "prune", "force_conflicts"])]
    pub verify_only: bool,
    /// Server-side dry run of every apply (`dryRun=All`); nothing is persisted or awaited.
    #[arg(long, conflicts_with = "prune")]
    pub dry_run: bool,
    /// Take over fields another field manager owns instead of failing on the conflict.
    #[arg(long)]
    pub force_conflicts: bool,
    /// After a fully ready rollout, delete objects labelled as ours for this cluster that the
    /// plan no longer has.
    #[arg(long)]
    pub prune: bool,
    /// Progress output: `human` (a step list on stderr) or `json` (one event per line on
    /// stdout).
    #[arg(long, value_enum, default_value = "human")]
    pub progress: ProgressFormat,
    /// An age identity file (`AGE-SECRET-KEY-1...` lines) to decrypt SOPS-encrypted Secrets
    /// (the `sops-age` backend) before applying them; without it they are refused.
    #[arg(long, value_name = "KEY")]
    pub age_identity: Option<PathBuf>,
    /// Spec inputs only: apply this overlay after `spec.overlays`; repeatable.
    #[arg(long = "overlay", value_name = "NAME|PATH")]
    pub overlays: Vec<String>,
    /// Spec inputs only: a directory of templates that replace built-in ones.
    #[arg(long, value_name = "DIR")]
    pub templates: Option<PathBuf>,
    /// Spec inputs only: the master key file (else `TFRS_MASTER_KEY`).
    #[arg(long, value_name = "FILE")]
    pub master_key_file: Option<PathBuf>,
}

/// How to reach a cluster: the kubectl way.
#[derive(Debug, Clone, clap::Args)]
pub struct Connection {
    /// The kubeconfig file (else `KUBECONFIG`, else `~/.kube/config`).
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context (else its current context).
    #[arg(long, value_name = "NAME")]
    pub context: Option<String>,
}

/// A progress format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProgressFormat {
    /// Numbered steps with spinners on a terminal, plain lines otherwise.
    Human,
    /// One JSON event per line: `{"step","total","component","status","elapsed_ms"}`.
    Json,
}

fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    crate::reconcile::parse_duration(text)
}

/// The arguments every spec-rendering live command shares.
#[derive(Debug, Clone, clap::Args)]
pub struct SpecInputs {
    /// Spec files and directories.
    #[arg(required = true, value_name = "INPUT")]
    pub inputs: Vec<PathBuf>,
    /// The cluster, when the specs hold several.
    #[arg(long, value_name = "NAME")]
    pub cluster: Option<String>,
    /// Apply this overlay after `spec.overlays`; repeatable.
    #[arg(long = "overlay", value_name = "NAME|PATH")]
    pub overlays: Vec<String>,
}

/// `tfrs bootstrap`.
#[derive(Debug, clap::Args)]
pub struct BootstrapArgs {
    /// The specs.
    #[command(flatten)]
    pub spec: SpecInputs,
    /// The cluster to reach.
    #[command(flatten)]
    pub connection: Connection,
    /// The sealed-secrets backend: the private key (PEM, PKCS#1 or PKCS#8) of
    /// `spec.sealing.certFile`, brought in as the controller's active key.
    #[arg(long, value_name = "FILE")]
    pub sealing_key: Option<PathBuf>,
    /// The sops-age backend: the age identity file whose recipient is in
    /// `spec.sealing.ageRecipients`, stored as Flux's `sops-age` Secret.
    #[arg(long, value_name = "FILE")]
    pub age_identity: Option<PathBuf>,
    /// Flux: the Secret in `flux-system` with the repository's credentials (`flux create secret
    /// git`), for a GitRepository bootstrap creates.
    #[arg(long, value_name = "NAME")]
    pub git_secret: Option<String>,
    /// Record this cluster's identity over one copied from another cluster under the same name.
    #[arg(long)]
    pub adopt: bool,
    /// How long each phase waits for readiness.
    #[arg(long, default_value = "10m", value_name = "DURATION", value_parser = parse_duration)]
    pub timeout: std::time::Duration,
    /// The longest pause between two readiness polls (where a kind cannot be watched; with a
    /// watch, how often a waiting component re-checks at least).
    #[arg(long, default_value = "2s", value_name = "DURATION", value_parser = parse_duration)]
    pub poll_interval: std::time::Duration,
    /// Progress output: `human` (phases and objects on stderr) or `json` (one event per line on
    /// stdout: `{"event":"phase",...}` and `{"event":"object",...}`).
    #[arg(long, value_enum, default_value = "human")]
    pub progress: ProgressFormat,
    /// A directory of templates that replace built-in ones.
    #[arg(long, value_name = "DIR")]
    pub templates: Option<PathBuf>,
    /// The master key file (else `TFRS_MASTER_KEY`).
    #[arg(long, value_name = "FILE")]
    pub master_key_file: Option<PathBuf>,
}

/// `tfrs cert`.
#[derive(Debug, clap::Args)]
pub struct CertArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: CertCommand,
}

/// `tfrs cert` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum CertCommand {
    /// Read the sealed-secrets controller's public certificate from the cluster (through the
    /// API server's service proxy, as `kubeseal --fetch-cert` does) and print it, or write it
    /// to `--out`. The cluster guard runs first.
    ///
    /// Exit status: 0 fetched, 2 refused, unreachable or an I/O error.
    Fetch(CertFetchArgs),
}

/// `tfrs cert fetch`.
#[derive(Debug, clap::Args)]
pub struct CertFetchArgs {
    /// The specs (for the cluster's name and `spec.sealing`).
    #[command(flatten)]
    pub spec: SpecInputs,
    /// The cluster to reach.
    #[command(flatten)]
    pub connection: Connection,
    /// Write the certificate here (atomically) instead of stdout, e.g. the spec's `certFile`.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}
