//! Command-line arguments (clap only; the doc comments are the help text).

use clap::{Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

pub use super::infra_args::InfraArgs;
pub use super::live_args::{BootstrapArgs, CertArgs, Connection, ProgressFormat, ReconcileArgs};

/// Render the TFRS platform (TFRCluster, TFRTenant, TFRServer) into sealed, GitOps-ready
/// Kubernetes manifests.
#[derive(Debug, Parser)]
#[command(name = "tfrs", version, propagate_version = true)]
pub struct Args {
    /// The command to run.
    #[command(subcommand)]
    pub command: Command,
    /// When to colour output: `auto` colours a terminal unless `NO_COLOR` is set to a non-empty
    /// value; `always` and `never` decide alone.
    #[arg(long, global = true, value_enum, default_value_t = ColorChoice::Auto, value_name = "WHEN")]
    pub color: ColorChoice,
}

/// `--color`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    /// Colour a terminal, unless `NO_COLOR` is set to a non-empty value.
    Auto,
    /// Always colour, even into a pipe or a file, and whatever `NO_COLOR` says.
    Always,
    /// Never colour.
    Never,
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
    /// Render every manifest, with Secrets sealed, into `--out DIR` (`clusters/<cluster>/`).
    ///
    /// Unchanged secrets keep their previous ciphertext, so re-rendering unchanged specs changes
    /// no byte. Exit status: 0 rendered, 1 invalid spec or render problem, 2 usage, I/O or
    /// environment error (for example no master key).
    Render(RenderArgs),
    /// Roll a rendered plan out to a cluster: server-side apply (field manager `tfrs`), each
    /// component as soon as its dependencies are ready, then wait for readiness.
    ///
    /// Takes a rendered directory (one holding `plan.json`, or a `render --out` directory) or
    /// spec INPUTs (rendered in memory). The cluster is found the kubectl way (`KUBECONFIG`, else
    /// `~/.kube/config`). Exit status: 0 every component ready, 1 a component failed or timed
    /// out (named, with its unready objects and their conditions), 2 usage, connection or I/O
    /// error. See docs/reconcile.md.
    Reconcile(ReconcileArgs),
    /// Take a cluster running Kubernetes and Flux or Argo CD to one that reconciles the tree
    /// from Git: sealing key, sealed-secrets controller, image credentials, cluster identity and
    /// the engine's root object, in five phases; a second run changes nothing.
    ///
    /// Exit status: 0 bootstrapped, 1 something did not become ready, 2 refused (identity,
    /// missing prerequisites, each named) or a usage, connection or I/O error. See
    /// docs/bootstrap.md.
    Bootstrap(BootstrapArgs),
    /// The sealing certificate: `tfrs cert fetch` reads the controller's public certificate
    /// from the cluster (what `kubeseal --fetch-cert` does), after the cluster guard.
    Cert(CertArgs),
    /// The central infrastructure of an environment (a `TFRInfra` spec): `render` its compose
    /// stack, `.env.infra` and the manager's matching values, `check` existing files against
    /// their invariants, print the Infisical bootstrap `plan`. See docs/infra.md.
    Infra(InfraArgs),
    /// Draw the component dependency graph (mermaid or Graphviz dot).
    Graph(GraphArgs),
    /// List the rendered commits of a branch with their provenance: the specs' commit (and
    /// whether the inputs had uncommitted changes), the tfrs version and the clusters, read from
    /// the trailers `tfrs commit` writes.
    ///
    /// Exit status: 0 listed, 2 usage, Git or I/O error.
    Log(LogArgs),
    /// Summarise the fleet: each cluster's environments, overlays, tenants and servers, and
    /// what differs between the clusters an object is placed in. Renders nothing.
    ///
    /// Exit status: 0 printed, 1 invalid spec, 2 usage or I/O error.
    Plan(PlanArgs),
    /// Search a repository's history for any secret of the specs (derived or resolved).
    ///
    /// Every commit reachable from `--ref` is searched for each value raw, base64 (any
    /// alignment), percent- and JSON-escaped. Exit status: 0 clean, 1 a leak (named by commit,
    /// path and the secret's logical path, never its value), 2 error.
    Audit(AuditArgs),
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
    /// Print tfrs's version, the commit it was built from and the digest of its component
    /// catalog, and with `--components` the pinned upstream releases it renders.
    ///
    /// The first line is what `tfrs --version` prints.
    Version(VersionArgs),
    /// Print a shell completion script (bash, zsh, fish or PowerShell) on stdout.
    ///
    /// For example `source <(tfrs completions bash)` in `~/.bashrc`, `tfrs completions zsh >
    /// "${fpath[1]}/_tfrs"`, `tfrs completions fish > ~/.config/fish/completions/tfrs.fish`, or
    /// `tfrs completions powershell | Out-String | Invoke-Expression` in a PowerShell profile.
    Completions(CompletionsArgs),
    /// Print the manual page of tfrs (roff) on stdout, or with `--out DIR` write one page per
    /// command into DIR (`tfrs.1`, `tfrs-render.1`, ...).
    ///
    /// Read it with `tfrs man | man -l -`.
    Man(ManArgs),
}

/// `tfrs completions`.
#[derive(Debug, clap::Args)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: Shell,
}

/// A shell `tfrs completions` writes a script for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Shell {
    /// GNU bash (`source` the script).
    Bash,
    /// zsh (a `_tfrs` file on `$fpath`).
    Zsh,
    /// fish (a file in `~/.config/fish/completions/`).
    Fish,
    /// PowerShell (`Invoke-Expression` the script).
    Powershell,
}

/// `tfrs man`.
#[derive(Debug, clap::Args)]
pub struct ManArgs {
    /// Write `tfrs.1` and one `tfrs-<command>.1` per command into this directory (created when
    /// missing) instead of printing `tfrs.1`.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

/// `tfrs version`.
#[derive(Debug, clap::Args)]
pub struct VersionArgs {
    /// Also print the version catalog: every chart, image and API release the render pins.
    #[arg(long)]
    pub components: bool,
    /// `text` (a table) or `json`.
    #[arg(long, value_enum, default_value_t = VersionFormat::Text)]
    pub format: VersionFormat,
}

/// Output of `tfrs version`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum VersionFormat {
    /// Human-readable.
    Text,
    /// One JSON document.
    Json,
}

/// `tfrs commit`.
#[derive(Debug, clap::Args)]
pub struct CommitArgs {
    /// Spec files or directories (searched recursively for `*.yaml` / `*.yml`).
    #[arg(required = true, value_name = "INPUT")]
    pub inputs: Vec<PathBuf>,
    /// The repository: a local path (bare or not) or a URL (cloned into `repos/` of the cache
    /// directory: `$TFRS_CACHE_DIR`, else `$XDG_CACHE_HOME/tfrs`, else `~/.cache/tfrs`; then
    /// pushed back).
    #[arg(long, value_name = "PATH|URL")]
    pub repo: String,
    /// The branch to commit to (created when missing). Default: the repository's default
    /// branch (a URL's remote `HEAD`; a local repository's `HEAD`), else `main`.
    #[arg(long)]
    pub branch: Option<String>,
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
    /// Print only the result line (`committed ...` or `no changes ...`, and `pushed ...`), not
    /// what changed per component.
    #[arg(long, short)]
    pub quiet: bool,
    /// Template every component, ignoring the render memo of the last commit to this branch of
    /// this repository (kept like `render`'s), and keep none.
    #[arg(long)]
    pub no_memo: bool,
    /// How the specs are rendered.
    #[command(flatten)]
    pub settings: RenderSettings,
}

/// `tfrs diff`.
#[derive(Debug, clap::Args)]
pub struct DiffArgs {
    /// Spec files or directories (searched recursively for `*.yaml` / `*.yml`).
    #[arg(required = true, value_name = "INPUT")]
    pub inputs: Vec<PathBuf>,
    /// The repository: a local path (bare or not) or a URL (fetched into `repos/` of the cache
    /// directory: `$TFRS_CACHE_DIR`, else `$XDG_CACHE_HOME/tfrs`, else `~/.cache/tfrs`).
    #[arg(long, value_name = "PATH|URL", required_unless_present = "live")]
    pub repo: Option<String>,
    /// The ref to compare with (a branch, tag or commit; for a URL, a branch). Default: the
    /// repository's default branch, as for `commit`. A branch that does not exist yet is an
    /// empty tree: everything is added.
    #[arg(long = "ref", value_name = "REF")]
    pub reference: Option<String>,
    /// Compare with the live cluster instead of Git: a server-side dry-run apply of every
    /// object against the live one (what applying would change), the objects labelled as ours
    /// that the tree dropped, and readiness. Guarded like `reconcile` (docs/reconcile.md).
    #[arg(long, conflicts_with_all = ["repo", "reference", "parts"])]
    pub live: bool,
    /// With `--live`: the cluster to reach.
    #[command(flatten)]
    pub connection: Connection,
    /// With `--live`: an age identity file to decrypt the tree's SOPS Secrets (the `sops-age`
    /// backend) before the dry run; their values are compared, never shown.
    #[arg(long, value_name = "KEY", requires = "live")]
    pub age_identity: Option<PathBuf>,
    /// Output format: `text` for people (coloured as `--color` says), `markdown` for a
    /// pull-request comment, `json` for tools (see docs/git.md).
    #[arg(long, value_enum, default_value = "text")]
    pub format: DiffFormat,
    /// `text` only: print only the totals line, not each component and object (the markdown and
    /// JSON documents are printed whole).
    #[arg(long, short)]
    pub quiet: bool,
    /// What exits 1: any change (the default), or only a risky one (a volume, storage class or
    /// StatefulSet volume template changed, database instances decreased, a Namespace, CRD,
    /// release or data service removed). Errors always exit 2.
    #[arg(long, value_enum, default_value = "changes", value_name = "WHAT")]
    pub fail_on: FailOn,
    /// `markdown` only: write the report as numbered parts `DIR/part-1.md`, `part-2.md` and so on, each
    /// small enough for one pull-request comment, and print their paths (one per line) instead of
    /// the report. Without it, what does not fit in one comment is left out, and the report says
    /// so.
    #[arg(long, value_name = "DIR")]
    pub parts: Option<PathBuf>,
    /// How the specs are rendered.
    #[command(flatten)]
    pub settings: RenderSettings,
}

/// What makes `tfrs diff` exit 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FailOn {
    /// Any change.
    Changes,
    /// Only a risky change.
    Risky,
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
    /// The output directory. Replaced atomically; in a Git checkout only the rendered clusters'
    /// directories change; refused if it is non-empty, not a checkout and not written by tfrs.
    #[arg(long, short, value_name = "DIR")]
    pub out: PathBuf,
    /// How the specs are rendered.
    #[command(flatten)]
    pub settings: RenderSettings,
    /// Do not write: exit 1 if the output directory differs from what would be rendered, and
    /// name the files that would change and be removed (the first 20 of each).
    #[arg(long)]
    pub check: bool,
    /// Print only the result line: with `--check`, the count of files that would change, not
    /// their names.
    #[arg(long, short)]
    pub quiet: bool,
    /// Remove `clusters/NAME/` from the output directory; repeatable. A cluster the inputs do
    /// not render is otherwise kept as it is: removing one is never a side effect.
    #[arg(long = "remove-cluster", value_name = "NAME")]
    pub remove_clusters: Vec<String>,
    /// Template every component, ignoring the render memo of the last render into `--out`
    /// (kept in `$TFRS_CACHE_DIR`, else `$XDG_CACHE_HOME/tfrs`, else `~/.cache/tfrs`), and
    /// keep none.
    #[arg(long)]
    pub no_memo: bool,
}

/// The flags every rendering command shares (`render`, `commit`, `diff`).
#[derive(Debug, clap::Args)]
pub struct RenderSettings {
    /// Render only this cluster, with the tenants placed in it and their servers; repeatable.
    /// Every input is still validated. The files of other clusters are never touched.
    #[arg(long = "cluster", value_name = "NAME")]
    pub clusters: Vec<String>,
    /// Apply this overlay (a name or a path to a YAML file) after `spec.overlays`; repeatable.
    #[arg(long = "overlay", value_name = "NAME|PATH")]
    pub overlays: Vec<String>,
    /// A directory of templates that replace built-in ones of the same relative path.
    #[arg(long, value_name = "DIR")]
    pub templates: Option<PathBuf>,
    /// File holding the 32-byte master key as 64 hex characters (else `TFRS_MASTER_KEY`).
    #[arg(long, value_name = "FILE")]
    pub master_key_file: Option<PathBuf>,
    /// Accept `fromFile` paths that resolve (through `..` or symlinks) outside the spec file's
    /// directory. Off by default: a spec must not be able to read arbitrary files.
    #[arg(long)]
    pub allow_outside: bool,
}

/// `tfrs audit`.
#[derive(Debug, clap::Args)]
pub struct AuditArgs {
    /// Spec files or directories whose secrets to look for.
    #[arg(required = true, value_name = "INPUT")]
    pub inputs: Vec<PathBuf>,
    /// The repository: a local path or a URL.
    #[arg(long, value_name = "PATH|URL")]
    pub repo: String,
    /// The ref whose history is searched [default: the repository's default branch, as for
    /// `commit`].
    #[arg(long = "ref", value_name = "REF")]
    pub reference: Option<String>,
    /// File holding the master key (else `TFRS_MASTER_KEY`).
    #[arg(long, value_name = "FILE")]
    pub master_key_file: Option<PathBuf>,
    /// Accept `fromFile` paths outside the spec file's directory.
    #[arg(long)]
    pub allow_outside: bool,
    /// Print only the result line (`clean: ...` or the count of leaks), not each leak (text
    /// only).
    #[arg(long, short)]
    pub quiet: bool,
    /// How to print the leaks: `text` for people; `json`, `sarif` (SARIF 2.1.0, for code
    /// scanning) or `github` (Actions annotations) on stdout, for machines. The exit status
    /// does not depend on it.
    #[arg(long, value_enum, default_value = "text", value_name = "FORMAT")]
    pub format: ReportFormat,
}

/// `tfrs graph`.
#[derive(Debug, clap::Args)]
pub struct GraphArgs {
    /// Which specs.
    #[command(flatten)]
    pub specs: SpecSelection,
    /// Output format.
    #[arg(long, value_enum, default_value = "mermaid")]
    pub format: GraphFormat,
}

/// The specs a command that renders nothing reads: its inputs, overlays and the clusters it
/// narrows to.
#[derive(Debug, clap::Args)]
pub struct SpecSelection {
    /// Spec files or directories.
    #[arg(required = true, value_name = "INPUT")]
    pub inputs: Vec<PathBuf>,
    /// Only this cluster; repeatable.
    #[arg(long = "cluster", value_name = "NAME")]
    pub clusters: Vec<String>,
    /// Apply this overlay after `spec.overlays`; repeatable.
    #[arg(long = "overlay", value_name = "NAME|PATH")]
    pub overlays: Vec<String>,
}

/// `tfrs log`.
#[derive(Debug, clap::Args)]
pub struct LogArgs {
    /// The repository: a local path or a URL.
    #[arg(long, value_name = "PATH|URL")]
    pub repo: String,
    /// The branch (default: the repository's default branch).
    #[arg(long)]
    pub branch: Option<String>,
    /// How many commits, newest first.
    #[arg(long, short = 'n', default_value_t = 20, value_name = "N")]
    pub max_count: usize,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    pub format: LogFormat,
}

/// A `tfrs log` format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// For people: one line per commit, then its provenance.
    Text,
    /// One JSON document: `branch` and `commits` (commit, time, author, subject, source,
    /// version, clusters).
    Json,
}

/// `tfrs plan`.
#[derive(Debug, clap::Args)]
pub struct PlanArgs {
    /// Which specs.
    #[command(flatten)]
    pub specs: SpecSelection,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    pub format: PlanFormat,
}

/// A `tfrs plan` format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PlanFormat {
    /// For people.
    Text,
    /// One JSON document: `clusters` and `differences`.
    Json,
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
    /// Also check everything `render` needs from the environment, all at once and without
    /// writing: the master key, `fromEnv` variables, `fromFile` files, the sealing
    /// certificates, the `OPERATOR_*` overrides, the templates. Then a valid result means
    /// `render` succeeds, and the exit status is the one `render` would give (2 for the
    /// environment).
    #[arg(long)]
    pub render_env: bool,
    /// With `--render-env`: a directory of templates that replace built-in ones.
    #[arg(long, value_name = "DIR", requires = "render_env")]
    pub templates: Option<PathBuf>,
    /// With `--render-env`: file holding the master key (else `TFRS_MASTER_KEY`).
    #[arg(long, value_name = "FILE", requires = "render_env")]
    pub master_key_file: Option<PathBuf>,
    /// With `--render-env`: accept `fromFile` paths outside the spec file's directory.
    #[arg(long, requires = "render_env")]
    pub allow_outside: bool,
    /// How to print the findings: `text` for people; `json`, `sarif` (SARIF 2.1.0, for code
    /// scanning) or `github` (Actions annotations) on stdout, for machines. The exit status
    /// does not depend on it.
    #[arg(long, value_enum, default_value = "text", value_name = "FORMAT")]
    pub format: ReportFormat,
}

/// How `validate` and `audit` print their findings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum ReportFormat {
    /// For people: `file:line:col: field: message`, the source line, the help.
    #[default]
    Text,
    /// One JSON document on stdout (see docs/cli.md for its fields).
    Json,
    /// A SARIF 2.1.0 log on stdout, for code scanning (GitHub, GitLab).
    Sarif,
    /// GitHub Actions workflow commands on stdout: one `::error` or `::warning` per finding.
    Github,
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
