//! Command-line arguments (clap only; the doc comments are the help text).

use clap::{Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

/// Render the TFRS platform (TFRCluster, TFRTenant, TFRServer) into sealed, GitOps-ready
/// Kubernetes manifests.
#[derive(Debug, Parser)]
#[command(name = "tfrs", version, propagate_version = true)]
pub struct Args {
    /// The command to run.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check specs and report every problem, one `file:line:col: field: message` line each.
    ///
    /// Exit status: 0 valid, 1 invalid, 2 usage or I/O error.
    Validate(ValidateArgs),
    /// Print the JSON Schema of the spec kinds (for editors), or their CRDs with `--crd`.
    Schema(SchemaArgs),
    /// Decrypt a SealedSecret (`--private-key`) or a SOPS file (`--age-identity`) and print the
    /// plaintext Secret.
    ///
    /// For recovery and tests: this prints secret values to stdout by design. Exit status: 0
    /// printed, 2 on any error (wrong key, wrong name or scope, MAC mismatch, unreadable file).
    Unseal(UnsealArgs),
    /// Render every manifest, with Secrets sealed, into `--out DIR` (DESIGN §5 layout).
    ///
    /// Unchanged secrets keep their previous ciphertext, so re-rendering unchanged specs changes
    /// no byte. Exit status: 0 rendered, 1 invalid spec or render problem, 2 usage, I/O or
    /// environment error (for example no master key).
    Render(RenderArgs),
    /// Draw the component dependency graph (mermaid or Graphviz dot).
    Graph(GraphArgs),
    /// Render and commit the tree into a Git repository at `clusters/<cluster>/`, as one commit
    /// built in memory (bare repositories work), only when something changed.
    ///
    /// The branch is updated with a compare-and-swap on the parent that was read; when another
    /// writer moved it, the render is redone on the new tip (a few times, then it fails).
    /// `--push` never forces: a rejected push fetches and starts over. A URL `--repo` is cloned
    /// into a cache and always pushed. Exit status: 0 committed or no changes, 1 invalid spec,
    /// 2 Git, I/O or environment error.
    Commit(CommitArgs),
    /// Render and compare with the tree at a Git ref, object by object; sealed values show as
    /// `<sealed: changed>` / `<sealed: unchanged>`, never ciphertext.
    ///
    /// Exit status: 0 no changes, 1 changes, 2 error (including an invalid spec).
    Diff(DiffArgs),
}

/// `tfrs commit`.
#[derive(Debug, clap::Args)]
pub struct CommitArgs {
    /// Spec files or directories (searched recursively for `*.yaml` / `*.yml`).
    #[arg(required = true, value_name = "INPUT")]
    pub inputs: Vec<PathBuf>,
    /// The repository: a local path (bare or not) or a URL (cloned into
    /// `$XDG_CACHE_HOME/tfrs/repos/`, then pushed back).
    #[arg(long, value_name = "PATH|URL")]
    pub repo: String,
    /// The branch to commit to (created when missing).
    #[arg(long, default_value = "main")]
    pub branch: String,
    /// The commit subject (the body always lists what changed per component).
    #[arg(long, short, value_name = "M")]
    pub message: Option<String>,
    /// `Name <email>`; else git config `user.name`/`user.email`, else `GIT_AUTHOR_NAME` and
    /// `GIT_AUTHOR_EMAIL`.
    #[arg(long, value_name = "NAME <EMAIL>")]
    pub author: Option<String>,
    /// Push the branch to `--remote` (never forced).
    #[arg(long)]
    pub push: bool,
    /// The remote to push to.
    #[arg(long, default_value = "origin", value_name = "NAME")]
    pub remote: String,
    /// Apply this overlay (a name or a path to a YAML file) after `spec.overlays`; repeatable.
    #[arg(long = "overlay", value_name = "NAME|PATH")]
    pub overlays: Vec<String>,
    /// A directory of templates that replace built-in ones of the same relative path.
    #[arg(long, value_name = "DIR")]
    pub templates: Option<PathBuf>,
    /// File holding the 32-byte master key as 64 hex characters (else `TFRS_MASTER_KEY`).
    #[arg(long, value_name = "FILE")]
    pub master_key_file: Option<PathBuf>,
}

/// `tfrs diff`.
#[derive(Debug, clap::Args)]
pub struct DiffArgs {
    /// Spec files or directories (searched recursively for `*.yaml` / `*.yml`).
    #[arg(required = true, value_name = "INPUT")]
    pub inputs: Vec<PathBuf>,
    /// The repository: a local path (bare or not) or a URL (fetched into
    /// `$XDG_CACHE_HOME/tfrs/repos/`).
    #[arg(long, value_name = "PATH|URL")]
    pub repo: String,
    /// The ref to compare with (a branch, tag or commit; for a URL, a branch).
    #[arg(long = "ref", default_value = "main", value_name = "REF")]
    pub reference: String,
    /// Output format: `text` for people (coloured on a terminal unless `NO_COLOR` is set),
    /// `markdown` for a pull-request comment, `json` for tools (see docs/git.md).
    #[arg(long, value_enum, default_value = "text")]
    pub format: DiffFormat,
    /// Apply this overlay (a name or a path to a YAML file) after `spec.overlays`; repeatable.
    #[arg(long = "overlay", value_name = "NAME|PATH")]
    pub overlays: Vec<String>,
    /// A directory of templates that replace built-in ones of the same relative path.
    #[arg(long, value_name = "DIR")]
    pub templates: Option<PathBuf>,
    /// File holding the 32-byte master key as 64 hex characters (else `TFRS_MASTER_KEY`).
    #[arg(long, value_name = "FILE")]
    pub master_key_file: Option<PathBuf>,
}

/// A diff format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DiffFormat {
    /// Per-object unified diffs for a terminal.
    Text,
    /// A summary table per component and collapsed details, for a pull-request comment.
    Markdown,
    /// A stable JSON document for tools.
    Json,
}

/// `tfrs render`.
#[derive(Debug, clap::Args)]
pub struct RenderArgs {
    /// Spec files or directories (searched recursively for `*.yaml` / `*.yml`).
    #[arg(required = true, value_name = "INPUT")]
    pub inputs: Vec<PathBuf>,
    /// The output directory. Replaced atomically; refused if it is non-empty and was not
    /// written by tfrs.
    #[arg(long, short, value_name = "DIR")]
    pub out: PathBuf,
    /// Apply this overlay (a name or a path to a YAML file) after `spec.overlays`; repeatable.
    #[arg(long = "overlay", value_name = "NAME|PATH")]
    pub overlays: Vec<String>,
    /// A directory of templates that replace built-in ones of the same relative path.
    #[arg(long, value_name = "DIR")]
    pub templates: Option<PathBuf>,
    /// File holding the 32-byte master key as 64 hex characters (else `TFRS_MASTER_KEY`).
    #[arg(long, value_name = "FILE")]
    pub master_key_file: Option<PathBuf>,
    /// Do not write: exit 1 if the output directory differs from what would be rendered.
    #[arg(long)]
    pub check: bool,
}

/// `tfrs graph`.
#[derive(Debug, clap::Args)]
pub struct GraphArgs {
    /// Spec files or directories.
    #[arg(required = true, value_name = "INPUT")]
    pub inputs: Vec<PathBuf>,
    /// Apply this overlay after `spec.overlays`; repeatable.
    #[arg(long = "overlay", value_name = "NAME|PATH")]
    pub overlays: Vec<String>,
    /// Output format.
    #[arg(long, value_enum, default_value = "mermaid")]
    pub format: GraphFormat,
}

/// A graph format.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum GraphFormat {
    /// A mermaid `graph TD`.
    Mermaid,
    /// Graphviz dot.
    Dot,
}

/// `tfrs validate`.
#[derive(Debug, clap::Args)]
pub struct ValidateArgs {
    /// Spec files or directories (searched recursively for `*.yaml` / `*.yml`).
    #[arg(required = true, value_name = "INPUT")]
    pub inputs: Vec<PathBuf>,
    /// Apply this overlay (a name or a path to a YAML file) after `spec.overlays`; repeatable.
    #[arg(long = "overlay", value_name = "NAME|PATH")]
    pub overlays: Vec<String>,
    /// Show where the merged value of FIELD (e.g. `spec.postgresql.instances`) came from.
    #[arg(long, value_name = "FIELD")]
    pub explain: Vec<String>,
    /// Print errors only, not warnings.
    #[arg(long, short)]
    pub quiet: bool,
}

/// `tfrs unseal`.
#[derive(Debug, clap::Args)]
#[command(group = clap::ArgGroup::new("key").required(true))]
pub struct UnsealArgs {
    /// A SealedSecret (YAML or JSON, ours or kubeseal's) or a SOPS-encrypted Secret.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// The sealed-secrets controller's RSA private key (PKCS#1 or PKCS#8 PEM, e.g. `tls.key`).
    #[arg(long, value_name = "KEY.pem", group = "key")]
    pub private_key: Option<PathBuf>,
    /// An age identity file (`AGE-SECRET-KEY-1...` lines, as `age-keygen` writes) for SOPS files.
    #[arg(long, value_name = "KEY", group = "key")]
    pub age_identity: Option<PathBuf>,
}

/// `tfrs schema`.
#[derive(Debug, clap::Args)]
pub struct SchemaArgs {
    /// Print CustomResourceDefinitions (apiextensions.k8s.io/v1, YAML) instead of JSON Schema.
    #[arg(long)]
    pub crd: bool,
    /// Only this kind.
    #[arg(long, value_enum)]
    pub kind: Option<KindArg>,
}

/// A spec kind on the command line.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum KindArg {
    /// `TFRCluster`.
    #[value(name = "TFRCluster", alias = "cluster")]
    Cluster,
    /// `TFRTenant`.
    #[value(name = "TFRTenant", alias = "tenant")]
    Tenant,
    /// `TFRServer`.
    #[value(name = "TFRServer", alias = "server")]
    Server,
}
